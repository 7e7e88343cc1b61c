"""The sampling loop's faster paths give what the general paths give.

Each fast path (issue 20) is checked against the code it stands in for: FastSyncVectorEnv against
gymnasium's SyncVectorEnv, the two-logit action draw against the general row-by-row draw and the
array path, MetricsLogger.log_values against repeated log_value calls; the episode metrics logged
at the end of sample() against the episodes sample() returned, and the worker's frozen startup
objects through a real worker process.
"""

from __future__ import annotations

import gc
import os

import gymnasium as gym
import numpy as np
import pytest

from trainer import PPOConfig
from trainer.core import nn
from trainer.env.vector_env import FastSyncVectorEnv
from trainer.metrics import MetricsLogger


class _VariedEnv(gym.Env):
    """An env whose steps return what real envs return besides floats and Python bools: int and
    numpy rewards, numpy bools, infos on some steps, episodes of varied lengths (so autoresets
    land on different steps in different sub-envs)."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)

    def __init__(self, action_space: gym.Space, length: int):
        self.action_space = action_space
        self.length = length
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 3).astype(np.float32), {"reset": True}

    def step(self, action):
        self.t += 1
        observation = np.full(3, self.t, dtype=np.float32) + np.asarray(action, np.float32).sum()
        reward = (self.t, np.float32(0.5 * self.t), np.float64(2.0), 1.5)[self.t % 4]
        infos = {"t": self.t, "nested": {"x": 1.0}} if self.t % 3 == 0 else {}
        return (
            observation,
            reward,
            np.bool_(self.t == self.length),
            self.t == self.length + 5,
            infos,
        )


@pytest.mark.parametrize(
    "action_space", [gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (2,), np.float32)]
)
def test_fast_vector_env_steps_like_gymnasiums(action_space):
    def make(index):
        return lambda: _VariedEnv(action_space, length=4 + index)

    mode = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}
    ours = FastSyncVectorEnv([make(i) for i in range(4)], **mode)
    theirs = gym.vector.SyncVectorEnv([make(i) for i in range(4)], **mode)
    assert ours._fast
    for a, b in zip(ours.reset(seed=7), theirs.reset(seed=7), strict=True):
        _assert_same(a, b)
    actions = np.stack([action_space.sample() for _ in range(4)])
    for _ in range(30):
        for a, b in zip(ours.step(actions), theirs.step(actions), strict=True):
            _assert_same(a, b)
    assert np.array_equal(ours._autoreset_envs, theirs._autoreset_envs)


def _assert_same(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _assert_same(a[key], b[key])
    else:
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b), (a, b)


def test_fast_vector_env_raises_gymnasiums_error_for_a_wrongly_shaped_observation():
    class Wrong(_VariedEnv):
        def step(self, action):
            observation, *rest = super().step(action)
            return (np.zeros(4, np.float32), *rest)

    env = FastSyncVectorEnv(
        [lambda: Wrong(gym.spaces.Discrete(2), 5)] * 2,
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
    )
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(np.zeros(2, np.int64))


def test_two_logit_draws_match_the_general_draw_bit_for_bit():
    rng = np.random.default_rng(3)
    for trial in range(3000):
        logits = (
            rng.standard_normal((int(rng.integers(1, 9)), 2)) * rng.choice([1e-3, 1.0, 40.0])
        ).astype(np.float32)
        if trial % 5 == 0:
            logits[:, 1] = logits[:, 0]  # ties
        rows = logits.tolist()
        for uniforms in (
            np.random.default_rng(trial).random(len(rows)).tolist(),
            [None] * len(rows),
        ):
            assert nn._draws_from_two(rows, uniforms) == nn._draws(rows, uniforms)


def test_two_action_array_draws_match_the_general_array_path_bit_for_bit():
    """`Categorical.act` for 64 sub-envs of two actions: the same actions, log-probs and dtypes
    as the general array path, from the same uniforms, ties, extremes and NaNs included."""
    rng = np.random.default_rng(7)
    for trial in range(2000):
        dtype = np.float32 if trial % 3 else np.float64
        logits = (rng.standard_normal((64, 2)) * rng.choice([1e-3, 1.0, 40.0, 1e4])).astype(dtype)
        if trial % 5 == 0:
            logits[::3, 1] = logits[::3, 0]  # ties
        if trial % 97 == 0:
            logits[0] = np.nan
        two = nn.Categorical.act(logits, np.random.default_rng(trial), True)
        general = nn._act_rows(logits, np.random.default_rng(trial), True)
        for got, want in zip(two, general, strict=True):
            assert got.dtype == want.dtype
            assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


def test_small_categorical_draws_agree_with_the_array_path():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((16, 2)).astype(np.float32)
    small_actions, small_logp = nn._act_small(logits, np.random.default_rng(1), True)
    logp_all = nn.log_softmax(logits)
    cdf = np.cumsum(np.exp(logp_all), axis=-1)
    uniforms = np.random.default_rng(1).random((16, 1))
    array_actions = np.minimum((cdf < uniforms).sum(axis=-1), 1)
    # The same uniforms: equal actions unless a uniform lies within rounding of a CDF step.
    far = np.abs(uniforms[:, 0] - cdf[:, 0]) > 1e-5
    assert np.array_equal(small_actions[far], array_actions[far])
    np.testing.assert_allclose(small_logp, logp_all[np.arange(16), small_actions], rtol=1e-5)
    greedy, _ = nn._act_small(logits, rng, False)
    assert np.array_equal(greedy, logits.argmax(axis=1))


@pytest.mark.parametrize(
    "settings",
    [{"window": 3}, {"reduce": "min", "window": 3}, {"reduce": "max"}, {"reduce": "sum"}, {}],
)
def test_log_values_is_log_value_for_each_value(settings):
    one_by_one, together = MetricsLogger(root=True), MetricsLogger(root=True)
    for batch in ([4.0, 1.0, 7.5, 2.0], [3, 9], [np.float32(0.5)]):
        for value in batch:
            one_by_one.log_value("x", value, **settings)
        together.log_values("x", batch, **settings)
        assert one_by_one.peek("x") == together.peek("x")
    assert one_by_one.reduce() == together.reduce()


@pytest.mark.slow
def test_episode_metrics_logged_at_the_end_of_sample_match_the_returned_episodes():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
        .debugging(seed=1)
    )
    config.metrics_num_episodes_for_smoothing = 1000
    algo = config.build()
    try:
        runner = algo.env_runner_group.local_env_runner
        episodes = runner.sample(num_episodes=12)
        metrics = runner.get_metrics()
        returns = [ep.get_return() for ep in episodes]
        lengths = [len(ep) for ep in episodes]
        assert metrics["num_episodes"].peek() == 12
        assert metrics["episode_return_mean"].peek() == pytest.approx(np.mean(returns))
        assert metrics["episode_return_max"].peek() == max(returns)
        assert metrics["episode_len_min"].peek() == min(lengths)
        assert not runner._ended_episodes  # nothing left waiting for the next sample
    finally:
        algo.stop()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["processes", pytest.param("ray", marks=pytest.mark.ray)])
def test_runners_in_processes_of_their_own_freeze_their_startup_objects(backend, request):
    if backend == "ray":  # on the session's Ray (tests/conftest.py), not one started by build()
        shared_ray = request.getfixturevalue("ray_session")
        shared_ray.start()
    before = gc.get_freeze_count()
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1, backend=backend)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)  # one short iteration
        .debugging(seed=0)
        .build()
    )
    try:
        frozen = algo.env_runner_group.foreach_env_runner(
            lambda runner: gc.get_freeze_count(), local_env_runner=False
        )
        assert frozen[0] > 1000  # modules, env and networks: out of the collector's scans
        algo.train()  # and sampling works on
    finally:
        algo.stop()
    assert gc.get_freeze_count() == before  # the training process's collector is untouched
    if backend == "ray":
        assert not shared_ray.leftovers()


def test_a_runner_server_in_the_training_process_leaves_its_collector_alone():
    from trainer.runners import protocol
    from trainer.runners.worker import RunnerServer

    algo = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0).build()
    before = gc.get_freeze_count()
    try:
        # A server on a thread of this process (main_pid None), or in Ray's local mode (actors
        # in the driver: main_pid is this process).
        for main_pid in (None, os.getpid()):
            server = RunnerServer(1, main_pid=main_pid)
            init = algo.env_runner_group._init_request(1, recreated=False)
            assert server.answer(init).error is None
            server.answer(protocol.stop())
    finally:
        algo.stop()
    assert gc.get_freeze_count() == before


def test_fast_vector_env_refuses_array_rewards_as_gymnasium_does():
    class ArrayReward(_VariedEnv):
        def step(self, action):
            observation, _, *rest = super().step(action)
            return (observation, np.array([1.0]), *rest)

    for cls in (FastSyncVectorEnv, gym.vector.SyncVectorEnv):
        env = cls(
            [lambda: ArrayReward(gym.spaces.Discrete(2), 5)] * 2,
            autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
        )
        env.reset(seed=0)
        with pytest.raises(ValueError, match="sequence"):
            env.step(np.zeros(2, np.int64))


def test_a_runner_server_in_the_training_process_leaves_its_warnings_to_be_logged():
    """A RunnerServer in the training process (a thread; Ray's local mode) does not switch
    that process's deprecation warnings to a worker's collect-and-send mode (they would
    never be logged); one in its own process does."""
    from trainer.runners.worker import RunnerServer
    from trainer.util import deprecation

    for main_pid in (None, os.getpid()):
        RunnerServer(1, main_pid=main_pid)
        assert not deprecation._collect_only
    try:
        RunnerServer(1, main_pid=os.getpid() + 1)  # as in a worker process
        assert deprecation._collect_only
    finally:
        deprecation._collect_only = False
