"""Columnar sampling records what the per-step loop records.

The EnvRunner samples by column (`EnvRunner._sample_columnar`, `trainer.runners.step_columns`)
whenever nothing reads an episode between steps; the per-step loop of
`tests/step_loop_reference.py` (`use_step_loop`) records each step into episode objects.
Both draw the same actions from the same seeded generators, so the same config sampled both
ways must give the same episodes, value for value and dtype for dtype (all but the random
episode ids), the same metrics, and the same callback events, across calls (chunks
continuing) and through a worker process's pickle.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

from tests.step_loop_reference import use_step_loop
from trainer import PPOConfig
from trainer.env.episode import SingleAgentEpisode
from trainer.env.episode_list import EpisodeList


class _InfoEnv(gym.Env):
    """Episodes of varied lengths, infos at the reset and on some steps, float rewards that
    do not add up exactly (so a return summed in another order would differ)."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = 0
        self.length = 5

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.length = int(self.np_random.integers(3, 12))
        return self.np_random.uniform(-1, 1, 3).astype(np.float32), {"start": self.length}

    def step(self, action):
        self.t += 1
        observation = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        infos = {"t": self.t} if self.t % 3 == 0 else {}
        return observation, 0.1 * self.t + 0.01 * action, self.t == self.length, False, infos


def _config(env, num_envs, mode="sync", callbacks=None):
    return (
        PPOConfig()
        .environment(env)
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=num_envs,
            rollout_fragment_length=10,
            gym_env_vectorize_mode=mode,
        )
        .training(train_batch_size=10 * num_envs, minibatch_size=10)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .callbacks(**(callbacks or {}))
        .debugging(seed=3)
    )


def _columns(ep: SingleAgentEpisode) -> dict:
    return {
        "observations": ep.get_observations(),
        "actions": ep.get_actions(),
        "rewards": ep.get_rewards(),
        "infos": ep.get_infos(),
        **{f"extra:{k}": ep.get_extra_model_outputs(k) for k in ep.extra_model_outputs},
        "t": (ep.t_started, ep.t, ep.env_index, ep.is_terminated, ep.is_truncated),
        "custom_data": dict(ep.custom_data),
        "return": ep.get_return(),
        "numpy": ep.is_numpy,
    }


def _assert_same_episodes(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        cx, cy = _columns(x), _columns(y)
        assert cx.keys() == cy.keys()
        for key in cx:
            if isinstance(cx[key], np.ndarray):
                assert cx[key].dtype == cy[key].dtype, key
                np.testing.assert_array_equal(cx[key], cy[key], err_msg=key)
            else:
                assert cx[key] == cy[key], key


def _sample_both_ways(config, calls, *, through_pickle=False, **sample_kwargs):
    """The episodes and metrics of `calls` sample() calls, per-step loop and by column."""
    results = []
    for columnar in (False, True):
        algo = config.build()
        runner = algo.env_runner_group.local_env_runner
        if not columnar:
            use_step_loop(runner)
        used = []
        runner._sample_columnar = _counting(runner._sample_columnar, used)
        episodes = []
        for _ in range(calls):
            got = runner.sample(**sample_kwargs)
            if through_pickle:
                got = pickle.loads(pickle.dumps(got, protocol=5))
            episodes.append(got)
        metrics = runner.get_metrics()
        results.append((episodes, metrics, len(used)))
        algo.stop()
    return results


def _counting(method, used):
    def counted(*args, **kwargs):
        used.append(1)
        return method(*args, **kwargs)

    return counted


def _metric(metrics, key):
    return metrics[key].peek()


@pytest.mark.parametrize(
    ("env", "num_envs", "mode"),
    [
        (_InfoEnv, 1, "sync"),
        (_InfoEnv, 4, "sync"),
        (_InfoEnv, 3, "async"),
        ("CartPole-v1", 16, "vector_entry_point"),
    ],
)
def test_columnar_sampling_records_what_the_per_step_loop_records(env, num_envs, mode):
    ended = []
    callbacks = {"on_episode_end": lambda episode, **kw: ended.append(len(episode))}
    (slow, slow_metrics, slow_used), (fast, fast_metrics, fast_used) = _sample_both_ways(
        _config(env, num_envs, mode, callbacks), calls=4, num_timesteps=37
    )
    assert slow_used == 0 and fast_used == 4
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    # The chunks of one episode keep its id across calls, in both loops alike.
    for calls in (slow, fast):
        ids = [[ep.id_ for ep in call if not ep.is_done] for call in calls]
        continued = [[ep.id_ for ep in call if ep.t_started > 0] for call in calls[1:]]
        assert all(set(c) <= set(i) for c, i in zip(continued, ids, strict=False))
    half = len(ended) // 2
    assert ended[:half] == ended[half:]  # each loop fired on_episode_end for the same lengths
    for key in ("episode_return_mean", "episode_len_mean", "num_env_steps_sampled_lifetime"):
        assert _metric(slow_metrics, key) == _metric(fast_metrics, key), key


def test_episode_events_and_custom_data_are_the_same_by_column():
    events = {False: [], True: []}
    state = {"columnar": False}

    def created(episode, env_index, **kw):
        events[state["columnar"]].append(("created", env_index))
        episode.custom_data["created"] = True

    def started(episode, env_index, **kw):
        events[state["columnar"]].append(("start", env_index, len(episode.get_observations())))

    def ended(episode, env_index, prev_episode_chunks, **kw):
        events[state["columnar"]].append(
            ("end", env_index, len(episode), len(prev_episode_chunks), episode.custom_data)
        )

    config = _config(
        _InfoEnv,
        3,
        callbacks={
            "on_episode_created": created,
            "on_episode_start": started,
            "on_episode_end": ended,
        },
    )
    episodes = {}
    for columnar in (False, True):
        state["columnar"] = columnar
        algo = config.build()
        runner = algo.env_runner_group.local_env_runner
        if not columnar:
            use_step_loop(runner)
        episodes[columnar] = [runner.sample(num_timesteps=20) for _ in range(3)]
        algo.stop()
    assert events[False] == events[True]
    assert any(event[0] == "end" and event[3] > 0 for event in events[True])  # spanned calls
    for slow_call, fast_call in zip(episodes[False], episodes[True], strict=True):
        _assert_same_episodes(slow_call, fast_call)


def test_episodes_by_column_pickle_as_columns_and_arrive_the_same():
    config = _config("CartPole-v1", 8, "vector_entry_point")
    (slow, _, _), (fast, _, _) = _sample_both_ways(
        config, calls=2, through_pickle=True, num_timesteps=200
    )
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    algo = config.build()
    episodes = algo.env_runner_group.local_env_runner.sample(num_timesteps=200)
    assert isinstance(episodes, EpisodeList) and episodes._pack_by_column() is not None
    # The columns go once: the pickle holds no per-episode arrays.
    rebuilt, args = episodes.__reduce__()
    assert rebuilt.__name__ == "_unpack_by_column"
    # A callback (or anyone) replacing a column sends the general layout, with the change.
    episodes[0].set_rewards(new_data=np.full(len(episodes[0]), 7.0))
    episodes[1].rewards.data = episodes[1].rewards.data * 2.0
    assert episodes._pack_by_column() is None
    arrived = pickle.loads(pickle.dumps(episodes))
    assert arrived[0].get_rewards().tolist() == [7.0] * len(episodes[0])
    np.testing.assert_array_equal(arrived[1].get_rewards(), episodes[1].get_rewards())
    algo.stop()


def test_a_shallow_copy_of_a_sample_keeps_its_episodes():
    algo = _config("CartPole-v1", 8, "vector_entry_point").build()
    episodes = algo.env_runner_group.local_env_runner.sample(num_timesteps=200)
    copied = copy.copy(episodes)
    assert type(copied) is EpisodeList
    assert all(a is b for a, b in zip(copied, episodes, strict=True))
    assert copied._pack_by_column() is not None  # still pickles by column
    algo.stop()


def test_step_callbacks_in_async_mode_read_each_step():
    def per_step(episode, **kw):
        episode.custom_data["steps"] = episode.custom_data.get("steps", 0) + 1

    algo = _config(_InfoEnv, 2, "async", callbacks={"on_episode_step": per_step}).build()
    runner = algo.env_runner_group.local_env_runner
    used = []
    runner._sample_columnar = _counting(runner._sample_columnar, used)
    episodes = runner.sample(num_timesteps=30)
    assert used
    assert all(ep.custom_data["steps"] >= len(ep) for ep in episodes)
    algo.stop()


def test_empty_infos_are_made_when_first_read():
    algo = _config("CartPole-v1", 4, "vector_entry_point").build()
    episodes = algo.env_runner_group.local_env_runner.sample(num_timesteps=100)
    done = [ep for ep in episodes if ep.is_done]
    assert done and all(type(ep._infos) is int for ep in done)
    infos = done[0].get_infos()
    assert infos == [{}] * (len(done[0]) + 1)
    assert len({id(info) for info in infos}) == len(infos)  # one dict each, not one shared
    infos[0]["mine"] = 1
    assert done[0].get_infos(0) == {"mine": 1}  # made once, then kept
    algo.stop()


def test_episode_ids_are_unique_and_a_forked_child_reads_its_own():
    import os

    from trainer.env.episode import new_episode_id, new_episode_ids

    ids = {new_episode_id() for _ in range(3000)} | set(new_episode_ids(700))
    assert len(ids) == 3700 and all(len(i) == 32 for i in ids)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's unread ids were dropped at the fork
        os.write(write, "".join(new_episode_ids(4)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 128).decode()
    parent = "".join(new_episode_ids(4))
    os.close(read)
    os.close(write)
    assert child != parent


class _FailingOnceVectorEnv(gym.vector.VectorEnv):
    """A vector env (gym_env_vectorize_mode="vector_entry_point") whose sub-envs' episodes
    last 4 steps (observation = the step's t); the first instance made raises at its 6th
    step (`fails_at`), the ones made after it never do."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}
    made = 0
    fails_at = 6

    def __init__(self, config):
        self.num_envs = config["num_envs"]
        self.single_observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
        self.single_action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        type(self).made += 1
        self.fails_at = type(self).fails_at if type(self).made == 1 else None
        self.steps = 0
        self._t = np.zeros(self.num_envs, np.int64)
        self._autoreset = np.zeros(self.num_envs, bool)

    def reset(self, *, seed=None, options=None):
        self._t[:] = 0
        self._autoreset[:] = False
        return self._t[:, None].astype(np.float32), {}

    def step(self, actions):
        self.steps += 1
        if self.steps == self.fails_at:
            raise RuntimeError("the vector env broke")
        self._t = np.where(self._autoreset, 0, self._t + 1)
        terminated = (self._t >= 4) & ~self._autoreset
        self._autoreset = terminated
        rewards = np.where(self._t == 0, 0.0, 1.0)
        return self._t[:, None].astype(np.float32), rewards, terminated, ~terminated & False, {}


def test_a_vector_env_recreated_mid_call_starts_every_episode_afresh():
    _FailingOnceVectorEnv.made = 0
    config = (
        _config(_FailingOnceVectorEnv, 3, "vector_entry_point")
        .env_runners(rollout_fragment_length=10)
        .fault_tolerance(restart_failed_sub_environments=True)
    )
    algo = config.build()
    runner = algo.env_runner_group.local_env_runner
    episodes = runner.sample(num_timesteps=30) + runner.sample(num_timesteps=30)
    assert _FailingOnceVectorEnv.made == 2
    for ep in episodes:
        # Each chunk's observations count up one per step from where it started: no
        # episode runs across the re-creation.
        observations = ep.get_observations()[:, 0].tolist()
        assert observations == list(range(int(observations[0]), int(observations[0]) + len(ep) + 1))
        assert len(ep.get_infos()) == len(ep) + 1
        assert ep.get_return() == len(ep)
    assert any(ep.is_done for ep in episodes)
    algo.stop()


def test_only_the_steps_this_call_recorded_are_lost_when_the_vector_env_is_recreated(
    monkeypatch,
):
    # The first call returns 2 steps of each of the 3 episodes (chunks, which continue in
    # the next call); the next records their 3rd step, and the vector env raises at its 4th:
    # 3 steps are lost, not the 9 of the episodes so far.
    monkeypatch.setattr(_FailingOnceVectorEnv, "made", 0)
    monkeypatch.setattr(_FailingOnceVectorEnv, "fails_at", 4)
    config = (
        _config(_FailingOnceVectorEnv, 3, "vector_entry_point")
        .env_runners(rollout_fragment_length=2)
        .fault_tolerance(restart_failed_sub_environments=True)
    )
    with config.build() as algo:
        runner = algo.env_runner_group.local_env_runner
        chunks = runner.sample(num_timesteps=6)
        assert [len(ep) for ep in chunks] == [2, 2, 2] and not any(ep.is_done for ep in chunks)
        episodes = runner.sample(num_timesteps=6)
        assert _FailingOnceVectorEnv.made == 2
        assert {ep.id_ for ep in episodes}.isdisjoint(ep.id_ for ep in chunks)
        metrics = runner.get_metrics()
    assert metrics["num_env_steps_lost_lifetime"] == 3
    assert metrics["num_sub_environment_restarts_lifetime"] == 3
