"""RLlib's serialized episodes: `SingleAgentEpisode.get_state()` packed with msgpack, numpy
values in msgpack-numpy's layout (a map `{b"nd": True, b"type": dtype, b"kind": b"",
b"shape": shape, b"data": raw bytes}` for an array, `{b"nd": False, b"type", b"data"}` for a
numpy scalar), one episode per row of the column `item` (RLlib's `OfflineSingleAgentEnvRunner`
with `output_write_episodes=True`). Unpacking builds plain data and arrays only: no code runs.

`episode_state` writes RLlib's state layout (each column an `InfiniteLookbackBuffer` state:
`data`, `lookback`, `finalized`, `space`); `episode_columns` reads one back into the columns of
its steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.offline.files import import_extra
from trainer.util.msgpack_numpy import from_map, is_numpy_map, to_map


def _msgpack() -> Any:
    return import_extra("msgpack")


def _encode(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        return to_map(value)
    raise TypeError(f"cannot pack a {type(value).__name__} into a recorded episode")


def _decode(value: dict) -> Any:
    return from_map(value) if is_numpy_map(value) else value


def pack_episode(state: dict) -> bytes:
    """msgpack bytes of an episode state (RLlib's `msgpack.packb(state,
    default=msgpack_numpy.encode)`)."""
    return _msgpack().packb(state, default=_encode, use_bin_type=True)


def unpack_episode(data: bytes) -> dict:
    """The episode state in `data` (RLlib's `msgpack.unpackb(data,
    object_hook=msgpack_numpy.decode)`)."""
    return _msgpack().unpackb(data, object_hook=_decode, raw=False, strict_map_key=False)


def _buffer(data: Any) -> dict:
    return {"data": data, "lookback": 0, "finalized": False, "space": None}


def episode_state(
    episode_id: str,
    observations: list,
    actions: list,
    rewards: list,
    extra_model_outputs: dict[str, list],
    *,
    terminated: bool,
    truncated: bool,
    t_started: int,
) -> dict:
    """RLlib 2.60's `SingleAgentEpisode.get_state()` of a done episode (not finalized, as its
    recorder writes them; no spaces, no infos)."""
    steps = len(actions)
    return {
        "id_": episode_id,
        "agent_id": None,
        "module_id": None,
        "multi_agent_episode_id": None,
        "observations": _buffer([np.asarray(o) for o in observations]),
        "actions": _buffer([a if np.isscalar(a) else np.asarray(a) for a in actions]),
        "rewards": _buffer([float(r) for r in rewards]),
        "infos": _buffer([None] * (steps + 1)),
        "extra_model_outputs": (
            {
                key: _buffer([np.asarray(v) for v in values])
                for key, values in extra_model_outputs.items()
            }
            if extra_model_outputs
            else None
        ),
        "is_terminated": bool(terminated),
        "is_truncated": bool(truncated),
        "t_started": int(t_started),
        "t": int(t_started) + steps,
        "_observation_space": None,
        "_action_space": None,
        "_start_time": None,
        "_last_step_time": None,
        "custom_data": {},
    }


class EpisodeFormatError(ValueError):
    """A row of an episode table is not an RLlib episode state."""


def _column(state: dict, key: str) -> list:
    buffer = state.get(key)
    if not isinstance(buffer, dict) or "data" not in buffer:
        raise EpisodeFormatError(
            f"the episode has no {key!r} column (an InfiniteLookbackBuffer state)"
        )
    lookback = int(buffer.get("lookback") or 0)
    return list(buffer["data"])[lookback:]


def episode_columns(state: dict) -> dict[str, Any]:
    """The steps of a done episode state: `obs` (T+1 entries), `actions`, `rewards` (T each),
    the extra model outputs by name (T each), `terminated`, `truncated` and `id`."""
    if not isinstance(state, dict):
        raise EpisodeFormatError(f"a row holds a {type(state).__name__}, not an episode state")
    observations = _column(state, "observations")
    actions = _column(state, "actions")
    rewards = _column(state, "rewards")
    if len(observations) != len(actions) + 1 or len(rewards) != len(actions):
        raise EpisodeFormatError(
            f"the episode has {len(observations)} observations, {len(actions)} actions and "
            f"{len(rewards)} rewards (an episode of T steps has T + 1, T and T)"
        )
    extras = {
        key: _column(state["extra_model_outputs"], key)
        for key in (state.get("extra_model_outputs") or {})
    }
    return {
        "id": str(state.get("id_")),
        "obs": observations,
        "actions": actions,
        "rewards": rewards,
        "extra": extras,
        "terminated": bool(state.get("is_terminated")),
        "truncated": bool(state.get("is_truncated")),
    }
