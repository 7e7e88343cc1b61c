"""Dict / Tuple observations sample in the rollout loop what the per-step loop samples.

Observations that fit no column (the env's, or an env-to-module pipeline's output) go into
the episode objects only: every episode has its object, which gets each step as it is taken,
and the pipeline runs over the objects as the per-step loop runs it
(`ColumnRecorder._step_objects`). The per-step loop (`tests/step_loop_reference.py`) is
the reference; both must give the same episodes, metrics and module inputs.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")

from tests.step_loop_reference import sample_both_ways
from tests.test_columnar_sampling import _columns, _metric  # noqa: E402
from tests.test_torch_dict_obs import ConcatLeavesModule  # noqa: E402
from trainer.algorithms.ppo.ppo import PPOConfig  # noqa: E402
from trainer.connectors.env_to_module import PrevActionsPrevRewards  # noqa: E402
from trainer.core.rl_module import RLModuleSpec  # noqa: E402


class _DictEnv(gym.Env):
    """Dict observations of two Box leaves, episodes of varied lengths, seeded."""

    observation_space = gym.spaces.Dict(
        {"position": gym.spaces.Box(-1, 1, (3,), np.float32), "speed": gym.spaces.Box(-1, 1, (2,))}
    )
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = self.length = 0

    def _observation(self):
        return {
            "position": self.np_random.uniform(-1, 1, 3).astype(np.float32),
            "speed": self.np_random.uniform(-1, 1, 2).astype(np.float32),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.length = 0, int(self.np_random.integers(3, 12))
        return self._observation(), {}

    def step(self, action):
        self.t += 1
        return self._observation(), 0.1 * self.t + 0.01 * action, self.t == self.length, False, {}


def _leaves(prefix: str, tree) -> dict:
    """A nested value's leaves by their path."""
    if isinstance(tree, dict):
        return {k: v for key in tree for k, v in _leaves(f"{prefix}/{key}", tree[key]).items()}
    if isinstance(tree, (tuple, list)) and tree and not isinstance(tree[0], dict):
        return {
            k: v for n, item in enumerate(tree) for k, v in _leaves(f"{prefix}/{n}", item).items()
        }
    return {prefix: tree}


def _assert_same_episodes(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        cx, cy = _columns(x), _columns(y)
        assert cx.keys() == cy.keys()
        cx.update(_leaves("obs", cx.pop("observations")))
        cy.update(_leaves("obs", cy.pop("observations")))
        assert cx.keys() == cy.keys()
        for key in cx:
            if isinstance(cx[key], np.ndarray):
                assert cx[key].dtype == cy[key].dtype, key
                np.testing.assert_array_equal(cx[key], cy[key], err_msg=key)
            else:
                assert cx[key] == cy[key], key


def _sample(config, columnar, calls, **sample_kwargs):
    return sample_both_ways(
        config,
        columnar,
        calls,
        read=lambda runner: _leaves("module_obs", runner._module_obs),
        **sample_kwargs,
    )


CONFIGS = {
    # The env's observations are a Dict.
    "dict_env": lambda: (
        PPOConfig()
        .environment(_DictEnv)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ConcatLeavesModule))
    ),
    # The pipeline's output is a Dict.
    "dict_pipeline": lambda: (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(env_to_module_connector=lambda env, spaces, device: PrevActionsPrevRewards())
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ConcatLeavesModule))
    ),
}
MODES = {
    "timesteps": ({}, {"num_timesteps": 37}),
    "num_episodes": ({}, {"num_episodes": 5}),
    "complete_episodes": ({"batch_mode": "complete_episodes"}, {}),
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_nested_observations_sample_in_the_rollout_loop(case, mode):
    settings, sample_kwargs = MODES[mode]
    config = (
        CONFIGS[case]()
        .env_runners(
            num_env_runners=0, num_envs_per_env_runner=3, rollout_fragment_length=10, **settings
        )
        .training(train_batch_size=30, minibatch_size=10)
        .debugging(seed=5)
    )
    slow, slow_metrics, slow_inputs = _sample(config, False, 3, **sample_kwargs)
    fast, fast_metrics, fast_inputs = _sample(config, True, 3, **sample_kwargs)
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    for key in ("episode_return_mean", "num_env_steps_sampled_lifetime"):
        assert _metric(slow_metrics, key) == _metric(fast_metrics, key), key
    assert slow_inputs.keys() == fast_inputs.keys()
    for key in slow_inputs:
        np.testing.assert_array_equal(slow_inputs[key], fast_inputs[key], err_msg=key)
    assert isinstance(fast[0][0].get_observations(0), dict)
