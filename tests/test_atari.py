"""Atari through ALE (`ale-py`, the `atari` extra; its ROMs ship in the wheel): RLlib's env ids
with or without the "ale_py:" prefix, RLlib's Atari wrappers on a real game, a PPO update on
its frames, and the one-line error naming the extra where ale-py is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

from trainer import PPOConfig, register_env
from trainer.connectors.env_to_module import FrameStackingEnvToModule
from trainer.connectors.learner import FrameStackingLearner
from trainer.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

ale_py = pytest.importorskip("ale_py", reason="needs ale-py (the atari extra)")


def _pong(env_config) -> gym.Env:
    return wrap_atari_for_new_api_stack(
        gym.make("ale_py:ALE/Pong-v5", **env_config), dim=64, framestack=4
    )


def test_ale_ids_with_or_without_the_prefix_name_the_same_game():
    for env in ("ale_py:ALE/Pong-v5", "ALE/Pong-v5"):
        config = PPOConfig().environment(env)
        config.validate()
    assert PPOConfig().environment("ALE/Breakout-v5").env == "ALE/Breakout-v5"


@pytest.mark.slow
def test_ppo_trains_on_pong_frames_through_rllibs_wrapper():
    pytest.importorskip("torch")
    register_env("pong64", _pong)
    algo = (
        PPOConfig()
        .environment("pong64")
        .framework("torch")
        .env_runners(num_env_runners=1)
        .training(train_batch_size=256, minibatch_size=128, num_epochs=1)
        .debugging(seed=0)
        .build()
    )
    try:
        spaces = algo.env_runner_group.get_spaces()
        obs_space = spaces["default_policy"][0]
        # RLlib's wrapper: grayscale 64x64 frames, 4 stacked, scaled to [-1, 1]
        assert obs_space.shape == (64, 64, 4) and obs_space.dtype == np.float32
        assert obs_space.low.min() == -1.0 and obs_space.high.max() == 1.0
        before = algo.get_weights()
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 256
        after = algo.get_weights()
        assert any(not np.array_equal(before[k], after[k]) for k in before)
    finally:
        algo.stop()


def test_a_missing_ale_py_is_named_with_the_extra_that_installs_it():
    # A fresh interpreter in which ale_py cannot be imported (as on a machine without it).
    code = textwrap.dedent(
        """
        import sys
        sys.modules["ale_py"] = None
        from trainer import PPOConfig
        for env in ("ale_py:ALE/Pong-v5", "ALE/Pong-v5"):
            try:
                PPOConfig().environment(env)
            except Exception as error:
                print(type(error).__name__, error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2, done.stdout + done.stderr
    for line in lines:
        assert line.startswith("ConfigError")
        assert "gymnasium imports 'ale_py' to make this env, and it is not installed" in line
        assert "pip install -e '.[atari]' (or pip install ale-py)" in line


def test_uint8_frames_travel_as_bytes_and_compute_what_normalized_floats_do():
    """`normalize=False` keeps Pong's frames uint8 from the env through the episodes to the
    learner's batch; the default torch module scales them as NormalizedImageEnv does, so its
    outputs on the bytes equal its outputs on the normalized floats."""
    torch = pytest.importorskip("torch")
    register_env(
        "pong64_bytes",
        lambda cfg: wrap_atari_for_new_api_stack(
            gym.make("ale_py:ALE/Pong-v5", **cfg), dim=64, framestack=4, normalize=False
        ),
    )
    algo = (
        PPOConfig()
        .environment("pong64_bytes")
        .framework("torch")
        .env_runners(num_env_runners=1, rollout_fragment_length=64)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=0)
        .build()
    )
    try:
        obs_space = algo.env_runner_group.get_spaces()["default_policy"][0]
        assert obs_space.dtype == np.uint8 and obs_space.shape == (64, 64, 4)
        episodes, _ = algo.env_runner_group.sample(min_env_steps=64)
        frames = np.concatenate([np.asarray(e.get_observations()) for e in episodes])
        assert frames.dtype == np.uint8 and frames.max() > 0
        module = algo.get_module()
        with torch.no_grad():
            on_bytes = module.forward_inference({"obs": torch.from_numpy(frames[:8])})
            floats = torch.from_numpy(frames[:8].astype(np.float32) / 128.0 - 1.0)
            on_floats = module.forward_inference({"obs": floats})
        torch.testing.assert_close(
            on_bytes["action_dist_inputs"], on_floats["action_dist_inputs"], rtol=0, atol=1e-6
        )
        # The EnvRunner acted on the same inputs: its recorded distribution inputs are the
        # learner's module's on the bytes (the weights are the same until the first update).
        first = episodes[0]
        recorded = np.asarray(first.get_extra_model_outputs("action_dist_inputs"))
        with torch.no_grad():
            obs = torch.from_numpy(np.asarray(first.get_observations())[:-1])
            learner_side = module.forward_inference({"obs": obs})["action_dist_inputs"]
        np.testing.assert_allclose(recorded, learner_side.numpy(), atol=1e-5)
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 64
    finally:
        algo.stop()


def test_rllibs_atari_pipeline_keeps_each_frame_once_and_the_learner_stacks_them():
    """RLlib's atari_ppo.py pipeline: the wrapper stacks no frames, `FrameStackingEnvToModule`
    stacks 4 for the module and `FrameStackingLearner` 4 in the learner. The episodes hold
    each 64x64 byte frame once (a chunk that continues an episode looks back at the 3 frames
    before it); the learner's piece stacks what the module saw: the distribution inputs the
    EnvRunner recorded are the module's on the stacked frames."""
    torch = pytest.importorskip("torch")
    register_env(
        "pong64_frames",
        lambda cfg: wrap_atari_for_new_api_stack(
            gym.make("ale_py:ALE/Pong-v5", **cfg), dim=64, framestack=None, normalize=False
        ),
    )
    algo = (
        PPOConfig()
        .environment("pong64_frames")
        .framework("torch")
        .env_runners(
            num_env_runners=1,
            rollout_fragment_length=64,
            env_to_module_connector=lambda env, spaces=None, device=None: FrameStackingEnvToModule(
                num_frames=4
            ),
        )
        .training(
            learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=4),
            train_batch_size=64,
            minibatch_size=32,
            num_epochs=1,
        )
        .debugging(seed=0)
        .build()
    )
    try:
        obs_space = algo.env_runner_group.get_spaces()["default_policy"][0]
        assert obs_space.dtype == np.uint8 and obs_space.shape == (64, 64, 4)
        (first,), _ = algo.env_runner_group.sample(min_env_steps=64)
        (chunk,), _ = algo.env_runner_group.sample(min_env_steps=64)
        assert chunk.id_ == first.id_ and chunk.t_started == len(first) == 64
        frames = np.asarray(chunk.get_observations())
        assert frames.dtype == np.uint8 and frames.shape == (65, 64, 64, 1)
        assert chunk.observations.lookback == 3
        np.testing.assert_array_equal(
            chunk.get_observations(slice(-3, 0), neg_index_as_lookback=True),
            np.asarray(first.get_observations())[-4:-1],
        )
        module = algo.get_module()
        FrameStackingLearner(num_frames=4)(rl_module=module, batch={}, episodes=[chunk])
        stacked = np.asarray(chunk.get_observations())
        assert stacked.dtype == np.uint8 and stacked.shape == (65, 64, 64, 4)
        recorded = np.asarray(chunk.get_extra_model_outputs("action_dist_inputs"))
        with torch.no_grad():
            learner_side = module.forward_inference({"obs": torch.from_numpy(stacked[:-1])})
        np.testing.assert_allclose(recorded, learner_side["action_dist_inputs"].numpy(), atol=1e-5)
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 64
    finally:
        algo.stop()
