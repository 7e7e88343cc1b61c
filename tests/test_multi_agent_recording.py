"""What a seeded MultiAgentEnvRunner records, pinned: for envs of every shape (agents that drop
out, act in turns, join late, leave early, different spaces, steps with no agent), the digest of
its episodes (state for state, ids and clock readings left out), its metrics and the episodes
its callbacks see. The digests were recorded from the runner as it is; a change to how the
runner records (its per-agent columns, the episode objects it fills from them) must keep them."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import numpy as np
import pytest
from helpers import assert_same_objects
from test_multi_agent_episode_fast_path import ENVS, _without_run_specific
from test_multi_agent_episode_list import TwoSpaces

from trainer import PPOConfig
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.runners.multi_agent_columns import AgentColumns
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner


class SeededTwoSpaces(TwoSpaces):
    """`TwoSpaces` whose spaces are seeded at the first reset only (later resets go on
    drawing from them)."""

    def reset(self, *, seed=None, options=None):  # type: ignore[no-untyped-def]
        if seed is not None:
            for space in self.observation_spaces.values():
                space.seed(seed)
        self.t = 0
        return self._obs(), {}


class LateInfos(MultiAgentCartPole):
    """MultiAgentCartPole whose agent 0 gets an info every third step of an episode, the
    others none (the env's infos are `{}` at the other steps)."""

    def reset(self, *, seed=None, options=None):  # type: ignore[no-untyped-def]
        self.steps = 0
        return super().reset(seed=seed, options=options)

    def step(self, action_dict):  # type: ignore[no-untyped-def]
        self.steps += 1
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        infos = {0: {"step": self.steps}} if self.steps % 3 == 0 and 0 in obs else {}
        return obs, rewards, terminateds, truncateds, infos


CASES: dict[str, tuple[Any, dict]] = {
    **{name: (env, env_config) for name, (env, env_config, _) in ENVS.items()},
    # Recorded with the env's default of 10000 possible agents (the fast-path test lowers it).
    "agents join and leave": (ENVS["agents join and leave"][0], {}),
    "different spaces": (SeededTwoSpaces, {}),
    "infos from the third step": (LateInfos, {"num_agents": 3}),
}

#: The digests of `_recorded(name, callbacks)`, recorded from the runner.
RECORDED: dict[tuple[str, str], str] = {
    ("agents drop out", "none"): "78df9eb5168b7701249991ba5cf2213e524849a33cfe0524cd8c2db1697df164",
    ("agents drop out", "end"): "95dd322bdf7f9fbb9a20f6722dd4bf2ebed3d5f00c55e49ee0235dfc17b9f3ec",
    ("agents drop out", "step"): "c463aaf1d8ec46da0444c9b3aac2dfdcd80f41418f8f35ea382336cfa05bbc0d",
    (
        "all agents done, no __all__",
        "none",
    ): "239be84491f10fbbe253cb1fc0dc71bf6210dc57c017b23f33347bd7588a31f4",
    (
        "all agents done, no __all__",
        "end",
    ): "e33581ce1ea400249fb7579f025a3fa6c209891775a6da2f52b003d4e7fda27a",
    (
        "all agents done, no __all__",
        "step",
    ): "84a478c5b561ec25fe980bd4268e8a4565c53ab486085d6f89ca355cb854d18e",
    ("simultaneous", "none"): "3f94b32f98f8d6df09a5a643d68d4bdf402051b775eff57389046ddd75ef232a",
    ("simultaneous", "end"): "f48766460b438f0e133452c3c7974f3710c21f85546e7637ab1e536c6fa16be4",
    ("simultaneous", "step"): "32d88e7599b8ee4abc5dc63136ce01894652701e6579b5896308af5cc4bf1111",
    (
        "all end together",
        "none",
    ): "9c04a36a748639638f9d30d1719fdc8b3902f6930e1a3af8ded7750aa0789c95",
    ("all end together", "end"): "7711df73f1f6ecb38b1b14a7279e422a02aa2626e45fcf95577a5a87b4e5c24f",
    (
        "all end together",
        "step",
    ): "32dc842c45676e485157756860e8cdabcb7a13e5ee66ec089d7e9656b3593803",
    (
        "agents join and leave",
        "none",
    ): "5fa2bb22c62896f06d3c40df451ed75f0016b2edb0a785c2fee25b107ea75b72",
    (
        "agents join and leave",
        "end",
    ): "453348f6647507f86ce49de2e800f2bcfbdac9a3dfa1bd54bfdb4e9db048e8cf",
    (
        "agents join and leave",
        "step",
    ): "b4dba41ad26d41ebd0758f7c6c0be0b75535983b7e7de3c1c277ed987bc3891c",
    ("agents in turns", "none"): "85f3b85f7e3a76a693f6d2040fb3a0bacc00e1ec517b65f26d2416bf317adc75",
    ("agents in turns", "end"): "2ab62eadec42ee3cf0cad7dd1b97c138fcef0cb661b8d7c251b052a6f0332b37",
    ("agents in turns", "step"): "621b35a6432b0fd009ba47e9b6b0020f9fb1fa72fae10d561f05807c4d5ac8f6",
    ("round robin", "none"): "f230daaaba51b20136622940b3049f4a344d9f0db3f6b3cec74dfd69e6721d73",
    ("round robin", "end"): "229f9a857124ab714a53cb2c2f702b7a2087e93586b3771319a691e9f92cf058",
    ("round robin", "step"): "78ab56b72e3e5b476642e0e2175a3bdf24d71886b686212ea59ddb72925422d1",
    (
        "one agent ends early",
        "none",
    ): "d5ed42386a7495643feeda1e1cbb227ff95a4e38cd2df4ca2d4c9f76389ad25d",
    (
        "one agent ends early",
        "end",
    ): "3c2fd6df69097c112cd1a9c5206b6582587f0f42f3b77a4f4b061686f344e546",
    (
        "one agent ends early",
        "step",
    ): "6e1417abf86640bff8eae297547bb1188ea4b4e0d6a60522a6654eb0e01e33f3",
    (
        "steps with no agent",
        "none",
    ): "94f8c213952b2e803741a968ac7e845226ffc710926dd46cd17a93961862c2fc",
    (
        "steps with no agent",
        "end",
    ): "ef3f1470647240617f69545303a38dd3a423a1e1b6138979b5ad688745a28b5e",
    (
        "steps with no agent",
        "step",
    ): "89f9f6d5309bf015662ffb234ccb05509d812fc8d662c8d9fe960b5a4d610d1c",
    (
        "different spaces",
        "none",
    ): "6f87911bf56c92bf0ebb93ce4e9cbb438726117a577443f01b8b5a73e28e90ca",
    ("different spaces", "end"): "00df7b42c3ec44ffb23658dbbbfa6656d5af8ad6a471f4d54a73cd52ced1f06b",
    (
        "different spaces",
        "step",
    ): "2f91d2f823b665bc10407f7b88de68e1f36047e80d3c1aa217f9aa458621e111",
    (
        "infos from the third step",
        "none",
    ): "c704b3f80cde942c0ba063c486e57d76d63d69997085db2c41f281358207a310",
    (
        "infos from the third step",
        "end",
    ): "3cdfd283455ca4b929778eb76e5e19452d67d56c05d4dd11a0b015893d583360",
    (
        "infos from the third step",
        "step",
    ): "b1b43895dff12860079800eaa81b6104e5ad8bf4f61032c39c2c547eab632b1b",
}

CALLBACKS = ("none", "end", "step")


def _canonical(value: Any, out: list[str]) -> None:
    """`value` written out exactly: types, dtypes, shapes, float bits, key order."""
    if isinstance(value, dict):
        out.append(f"{type(value).__name__}{{")
        for key, item in value.items():
            _canonical(key, out)
            out.append(":")
            _canonical(item, out)
            out.append(",")
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append(f"{type(value).__name__}[")
        for item in value:
            _canonical(item, out)
            out.append(",")
        out.append("]")
    elif isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        digest = hashlib.sha256(data.tobytes() if data.dtype != object else repr(data).encode())
        out.append(f"nd({data.dtype.str},{data.shape},{digest.hexdigest()})")
    elif isinstance(value, float | np.floating):
        out.append(f"{type(value).__name__}({float(value).hex()})")
    else:
        out.append(f"{type(value).__name__}({value!r})")


def _digest(value: Any) -> str:
    out: list[str] = []
    _canonical(value, out)
    return hashlib.sha256("".join(out).encode()).hexdigest()


def _drawn(state: Any, rng: np.random.Generator) -> Any:
    """`state` with every float array drawn anew from `rng` (same shapes and dtypes)."""
    if isinstance(state, dict):
        return {key: _drawn(value, rng) for key, value in state.items()}
    if isinstance(state, np.ndarray) and state.dtype.kind == "f":
        return rng.normal(0.0, 0.5, state.shape).astype(state.dtype)
    return state


def _one_policy(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    return "p0"


def _own_policy(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    return str(agent_id)


def _recorded(name: str, callbacks: str) -> list:
    """A seeded runner's episodes and metrics over three requests (two cut chunks of steps,
    then whole episodes) and what its callbacks saw: `callbacks` "none", "end" (callbacks that
    see episodes when they are created and end: the runner records them from its columns) or
    "step" (with an `on_episode_step` callback: the runner records each step into the
    episode object)."""
    env, env_config = CASES[name]
    events: list = []

    def on_episode_created(*, episode, env_index, **kwargs):
        events.append(["created", env_index, len(episode), sorted(map(str, episode.agent_ids))])

    def on_episode_step(*, episode, env_index, **kwargs):
        events.append(["step", env_index, episode.env_t, sorted(map(str, episode.agent_ids))])

    def on_episode_end(*, episode, env_index, prev_episode_chunks, **kwargs):
        events.append(["end", env_index, len(prev_episode_chunks), episode.get_state()])

    def on_sample_end(*, samples, **kwargs):
        events.append(["sample_end", len(samples)])

    random.seed(0)  # TicTacToe draws its first player from Python's `random`
    config = (
        PPOConfig()
        .environment(env, env_config=env_config)
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(
            policies={"small", "large"} if env is SeededTwoSpaces else {"p0"},
            policy_mapping_fn=_own_policy if env is SeededTwoSpaces else _one_policy,
        )
        # (The digests were recorded with separate policy and value networks.)
        .rl_module(model_config={"fcnet_hiddens": [8], "vf_share_layers": False})
        .debugging(seed=3)
    )
    if callbacks != "none":
        config.callbacks(
            on_episode_created=on_episode_created,
            on_episode_end=on_episode_end,
            on_sample_end=on_sample_end,
            **({"on_episode_step": on_episode_step} if callbacks == "step" else {}),
        )
    runner = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    try:
        # (A runner's own weights are not seeded: the learner's come with the first sync.)
        rng = np.random.default_rng(0)
        runner.module.set_state(_drawn(runner.module.get_state(), rng))
        states: list = []
        for request in ({"num_timesteps": 90}, {"num_timesteps": 50}, {"num_episodes": 2}):
            states += [episode.get_state() for episode in runner.sample(**request)]
            metrics = runner.get_metrics()
            metrics.pop("episode_duration_sec_mean", None)
            states.append({k: v for k, v in metrics.items() if "throughput" not in k})
        return _without_run_specific([states, events])
    finally:
        runner.stop()


@pytest.mark.slow
@pytest.mark.parametrize("callbacks", CALLBACKS)
@pytest.mark.parametrize("name", list(CASES))
def test_the_runner_records_what_it_recorded(name, callbacks):
    assert _digest(_recorded(name, callbacks)) == RECORDED[name, callbacks]


def test_the_digest_tells_values_apart():
    assert _digest([1.0]) != _digest([1])
    assert _digest({"a": np.zeros(2, np.float32)}) != _digest({"a": np.zeros(2, np.float64)})
    assert _digest({"a": 1, "b": 2}) != _digest({"b": 2, "a": 1})


if __name__ == "__main__":  # prints the digests to record (as the test module sees them)
    import test_multi_agent_recording as recording

    for case in CASES:
        for callbacks in CALLBACKS:
            digest = recording._digest(recording._recorded(case, callbacks))
            print(f"    ({case!r}, {callbacks!r}): {digest!r},")


def _recorded_by_columns_and_by_steps() -> tuple[MultiAgentEpisode, AgentColumns, dict]:
    """One MultiAgentCartPole episode (3 agents, fixed actions, until it ends), recorded into
    `AgentColumns` and filled, and the state of the same steps recorded step by step."""
    env = MultiAgentCartPole({"num_agents": 3})
    spaces = {
        "observation_space": dict(env.observation_spaces),
        "action_space": dict(env.action_spaces),
    }
    by_columns, by_steps = MultiAgentEpisode(**spaces), MultiAgentEpisode(**spaces)
    obs, infos = env.reset(seed=0)
    columns = AgentColumns(by_columns, obs, infos)
    by_steps.add_env_reset(observations=obs, infos=infos)
    ended, done = False, set()
    while not ended:
        acting = [agent_id for agent_id in obs if agent_id not in done]
        actions = {agent_id: int(agent_id) % 2 for agent_id in acting}
        logps = {agent_id: -0.5 for agent_id in acting}
        dist_inputs = {agent_id: np.full(2, float(agent_id), np.float32) for agent_id in acting}
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        done |= {agent_id for agent_id in obs if terminateds.get(agent_id)}
        step = (obs, actions, rewards, infos, terminateds, truncateds, logps, dist_inputs)
        ended = columns.record(*step)
        assert ended is not None, "a plain step"
        by_steps.add_sampled_env_step(*step)
    columns.fill(by_columns)
    return by_columns, columns, _without_run_specific(by_steps.get_state())


def test_an_episode_takes_its_columns_as_they_are():
    """The agents' buffers are the columns' lists (no copy), and the episode is the one the
    step-by-step recording makes."""
    episode, columns, by_steps = _recorded_by_columns_and_by_steps()
    assert episode.is_done and len(episode.agent_episodes) == 3
    for agent_id, agent in episode.agent_episodes.items():
        assert agent.observations.data is columns.observations[agent_id]
        assert agent.actions.data is columns.actions[agent_id]
        assert agent.rewards.data is columns.rewards[agent_id]
        assert agent.infos.data is columns.infos[agent_id]
        for key, column in (
            ("action_logp", columns.action_logp),
            ("action_dist_inputs", columns.action_dist_inputs),
        ):
            assert agent.extra_model_outputs[key].data is column[agent_id]
    assert_same_objects(_without_run_specific(episode.get_state()), by_steps)


def _continued_by_columns_and_by_steps(
    lookback: int,
) -> tuple[MultiAgentEpisode, AgentColumns | None, dict]:
    """A MultiAgentCartPole episode (3 agents, fixed actions) recorded step by step for 5
    steps and cut (`lookback` steps of lookback), then its next steps until it ends recorded
    into the successor by `AgentColumns.continuing` and, in a copy of the successor, step by
    step; returns the first successor, its columns and the state of the second."""
    env = MultiAgentCartPole({"num_agents": 3})
    episode = MultiAgentEpisode(
        observation_space=dict(env.observation_spaces), action_space=dict(env.action_spaces)
    )
    obs, infos = env.reset(seed=1)
    episode.add_env_reset(observations=obs, infos=infos)
    ended, done, t = False, set(), 0

    def step(t: int) -> tuple:
        acting = [agent_id for agent_id in obs if agent_id not in done]
        actions = {agent_id: (int(agent_id) + t) % 2 for agent_id in acting}
        logps = {agent_id: -0.25 * t for agent_id in acting}
        dist_inputs = {agent_id: np.full(2, float(t), np.float32) for agent_id in acting}
        result = env.step(actions)
        return (result[0], actions, result[1], result[4], result[2], result[3], logps,
                dist_inputs)  # fmt: skip

    for t in range(5):
        sampled = step(t)
        obs = sampled[0]
        done |= {agent_id for agent_id in obs if sampled[4].get(agent_id)}
        episode.add_sampled_env_step(*sampled)
    assert not episode.is_done
    by_columns = episode.cut(len_lookback_buffer=lookback)
    by_steps = episode.cut(len_lookback_buffer=lookback)
    columns = AgentColumns.continuing(
        by_columns, [agent_id for agent_id in obs if agent_id not in done]
    )
    while not ended:
        t += 1
        sampled = step(t)
        obs = sampled[0]
        done |= {agent_id for agent_id in obs if sampled[4].get(agent_id)}
        assert columns is not None
        ended = columns.record(*sampled)
        assert ended is not None, "a plain step"
        by_steps.add_sampled_env_step(*sampled)
    assert columns is not None
    columns.fill(by_columns)
    return by_columns, columns, _without_run_specific(by_steps.get_state())


@pytest.mark.parametrize("lookback", [0, 2])
def test_a_continued_chunk_records_by_column_as_step_by_step(lookback):
    """A chunk continued from an earlier sample() call takes its steps by column: its agents'
    buffers grow by the columns' lists, and the chunk is the one step-by-step recording
    makes (lookback, time mappings, done agents, model outputs)."""
    chunk, columns, by_steps = _continued_by_columns_and_by_steps(lookback)
    assert chunk.is_done and columns.continues
    for agent_id, agent in chunk.agent_episodes.items():
        steps = len(columns.actions[agent_id])
        assert steps and agent.observations.data[-steps:] == columns.observations[agent_id]
    assert_same_objects(_without_run_specific(chunk.get_state()), by_steps)


def test_a_chunk_with_a_hanging_action_continues_step_by_step():
    """A chunk whose agent's action hangs (turn-based envs) is not the columns' to record."""
    episode = MultiAgentEpisode()
    episode.add_env_reset(observations={"a": 0, "b": 1})
    # "a" acts and gets no next observation: its action hangs.
    episode.add_env_step(
        observations={"b": 2}, actions={"a": 0, "b": 1}, rewards={"a": 0.0, "b": 1.0}
    )
    successor = episode.cut()
    assert AgentColumns.continuing(successor, ["b"]) is None
    assert AgentColumns.continuing(MultiAgentEpisode(), []) is None
