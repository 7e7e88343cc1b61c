"""Where a MultiAgentEnvRunner's sampling stands, as plain data, so a checkpoint continues its
episodes exactly (the multi-agent counterpart of `trainer.runners.runner_state`).

A MultiAgentEnv usually holds other envs (`make_multi_agent`'s copies, a PettingZoo env's
parts), sets of agent ids and maps keyed by agent id, none of which
`trainer.env.env_state.capture_env_state` takes (it reads one gymnasium env's wrapper chain).
`capture_multi_agent_env_state` walks the MultiAgentEnv's own attributes instead: a gymnasium
env inside it is captured by `capture_env_state`; sets, tuples and maps with keys of any kind
are tagged so they come back as they were; everything else is the same data
`capture_env_state` takes; an object that says how to capture itself (`capture_state()`,
`restore_state(data)`) is captured that way. Structure (spaces, callables, classes, modules),
maps of only spaces and the attributes a class names in `_NOT_STATE` are rebuilt by the env's
constructor and skipped. What cannot be captured makes the
capture return None and a reason: that sub-env's episode restarts on restore, with a warning.

The runner's "sampling" state (`SAMPLING_KEYS`) holds, per sub-env, the captured env, the
observations of the agents to act next and which of them are done, the running episode and
its chunks returned so far; plus whether the next sample starts new episodes and the env seed
still to use.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym

from trainer.env.env_state import (
    _RENDER_ATTRIBUTES,
    _from_data,
    _is_structure,
    _NotData,
    _to_data,
    capture_env_state,
    restore_env_state,
)
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.util.state_checks import StateError, require_int, require_map

_TAG = "__multi_agent_env_value__"

#: The keys of a MultiAgentEnvRunner state's "sampling" part.
SAMPLING_KEYS = (
    "needs_reset",
    "env_seed",
    "sub_envs",
    "uncaptured",
    "observations",
    "done_agents",
    "episodes",
    "prev_chunks",
)


class _NotRestorable(Exception):
    pass


def _is_space_structure(value: Any) -> bool:
    """A space, or a container holding only spaces (`observation_spaces` and the like)."""
    if isinstance(value, gym.Space):
        return True
    if isinstance(value, dict):
        return bool(value) and all(_is_space_structure(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_is_space_structure(v) for v in value)
    return False


def _capture(value: Any) -> Any:
    if callable(getattr(type(value), "capture_state", None)) and not isinstance(value, gym.Env):
        return {_TAG: "own", "state": _capture(value.capture_state())}
    if isinstance(value, gym.Env):
        if isinstance(value.unwrapped, MultiAgentEnv):
            captured, why = capture_multi_agent_env_state(value)
            if captured is None:
                raise _NotData(str(why))
            return {_TAG: "multi_agent_env", "state": captured}
        layers, reason = capture_env_state(value)
        if layers is None:
            raise _NotData(str(reason))
        return {_TAG: "env", "layers": layers}
    if isinstance(value, (set, frozenset)):
        return {
            _TAG: "frozenset" if isinstance(value, frozenset) else "set",
            "items": [_capture(item) for item in value],
        }
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _capture(item) for key, item in value.items()}
        return {_TAG: "dict", "items": [[_capture(k), _capture(v)] for k, v in value.items()]}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {_TAG: "tuple", "items": [_capture(item) for item in value]}
    if isinstance(value, list):
        return [_capture(item) for item in value]
    return _to_data(value)


def _restore(data: Any, current: Any) -> Any:
    if isinstance(data, dict) and _TAG in data:
        tag = data[_TAG]
        if tag == "own":
            if not callable(getattr(current, "restore_state", None)):
                raise _NotRestorable("an object it held is no longer there")
            current.restore_state(_restore(data["state"], None))
            return current
        if tag in ("env", "multi_agent_env"):
            if not isinstance(current, gym.Env):
                raise _NotRestorable("an env it held is no longer there")
            reason = (
                restore_env_state(current, data["layers"])
                if tag == "env"
                else restore_multi_agent_env_state(current, data["state"])
            )
            if reason is not None:
                raise _NotRestorable(reason)
            return current
        if tag in ("set", "frozenset"):
            items = (_restore(item, None) for item in data["items"])
            return frozenset(items) if tag == "frozenset" else set(items)
        if tag == "dict":
            old = current if isinstance(current, dict) else {}
            pairs = [(_restore(k, None), v) for k, v in data["items"]]
            return {key: _restore(v, old.get(key)) for key, v in pairs}
        if tag == "tuple":
            return tuple(_restore(item, None) for item in data["items"])
    if isinstance(data, dict) and "__env_value__" not in data:
        held = current if isinstance(current, dict) else {}
        return {key: _restore(item, held.get(key)) for key, item in data.items()}
    if isinstance(data, list):
        known = current if isinstance(current, list) and len(current) == len(data) else None
        return [_restore(item, None if known is None else known[i]) for i, item in enumerate(data)]
    return _from_data(data, current)


def capture_multi_agent_env_state(env: Any) -> tuple[dict | None, str | None]:
    """({"class": name, "attributes": {...}}, None), or (None, why not). An env that says
    how to capture itself (`capture_state()` returning plain data, `restore_state(data)`:
    OpenSpielEnv replays its game's moves) is captured that way."""
    if callable(getattr(type(env), "capture_state", None)):
        return {"class": type(env).__qualname__, "own": _to_data(env.capture_state())}, None
    attributes = {}
    rebuilt = getattr(type(env), "_NOT_STATE", ())
    for name, value in vars(env).items():
        if name in _RENDER_ATTRIBUTES or name in rebuilt or _is_space_structure(value):
            continue
        if _is_structure(value) and not isinstance(value, gym.Env):
            continue
        try:
            attributes[name] = _capture(value)
        except _NotData as error:
            return None, f"{type(env).__name__}.{name} holds {error}"
    return {"class": type(env).__qualname__, "attributes": attributes}, None


def restore_multi_agent_env_state(env: Any, captured: dict) -> str | None:
    """Puts the captured attributes back into `env` (the same class, freshly built); returns
    why not when that fails. The envs it holds are restored in place."""
    if type(env).__qualname__ != captured.get("class"):
        return f"its class changed (now {type(env).__qualname__}, captured {captured.get('class')})"
    if "own" in captured:
        try:
            env.restore_state(_from_data(captured["own"], None))
        except Exception as error:  # noqa: BLE001 - the env's own restore: said, never raised
            return f"{type(env).__name__}.restore_state raised {type(error).__name__}: {error}"
        return None
    own = vars(env)
    try:
        restored = {
            name: _restore(data, own.get(name)) for name, data in captured["attributes"].items()
        }
    except _NotRestorable as error:
        return str(error)
    own.update(restored)
    return None


def check_sampling_state(state: Any, where: str) -> None:
    """Raises `StateError` unless `state` is a MultiAgentEnvRunner state's "sampling" part
    whose episodes rebuild."""
    require_map(state, where, SAMPLING_KEYS)
    if not isinstance(state["needs_reset"], bool):
        raise StateError(f"{where}['needs_reset']", "expected true or false")
    if state["env_seed"] is not None:
        require_int(state["env_seed"], f"{where}['env_seed']", minimum=None)
    for key in ("sub_envs", "observations", "done_agents", "episodes", "prev_chunks"):
        if not isinstance(state[key], list):
            raise StateError(
                f"{where}[{key!r}]", f"expected a list, got {type(state[key]).__name__}"
            )
    require_map(state["uncaptured"], f"{where}['uncaptured']")
    episodes = [(f"{where}['episodes'][{i}]", e) for i, e in enumerate(state["episodes"])]
    for i, chunks in enumerate(state["prev_chunks"]):
        if not isinstance(chunks, list):
            raise StateError(f"{where}['prev_chunks'][{i}]", "expected a list of episodes")
        episodes += [(f"{where}['prev_chunks'][{i}][{j}]", c) for j, c in enumerate(chunks)]
    for place, episode_state in episodes:
        if episode_state is None:
            continue
        try:
            MultiAgentEpisode.from_state(episode_state)
        except Exception as error:  # from_state raises KeyError, TypeError, ValueError...
            raise StateError(
                place, f"not a multi-agent episode state ({type(error).__name__}: {error})"
            ) from None


def resumed_episode(state: dict, mapping_fn: Any) -> MultiAgentEpisode:
    """An episode from a runner state, mapping its new agents with `mapping_fn` (the config's;
    a lambda is not stored) and timing from now (the saved clock readings are another
    process's)."""
    episode = MultiAgentEpisode.from_state(state)
    episode.agent_to_module_mapping_fn = mapping_fn
    if episode.is_reset:
        episode._start_time = episode._last_step_time = time.perf_counter()
    return episode
