"""The env families of RLlib's examples, on their real packages: MuJoCo (gymnasium's
HalfCheetah), DeepMind Control (`DMCEnv`), PettingZoo's SISL waterworld and OpenSpiel
(`OpenSpielEnv`, its games captured exactly in checkpoints). A missing family is refused at
`environment()` with the extra that installs it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from trainer.algorithms.ppo import PPOConfig
from trainer.algorithms.sac import SACConfig
from trainer.core.multi_rl_module import MultiRLModuleSpec
from trainer.core.rl_module import RLModuleSpec
from trainer.env.envs import register_env
from trainer.examples.rl_modules.classes.random_rlm import RandomRLModule


def _weights(algo, module_id=None):
    module = algo.get_module(module_id) if module_id else algo.get_module()
    return {k: np.array(v) for k, v in module.get_state().items()}


def _moved(before: dict, after: dict) -> bool:
    return any(not np.array_equal(before[k], after[k]) for k in before)


@pytest.mark.slow
def test_sac_trains_on_mujoco_halfcheetah():
    config = (
        SACConfig()
        .environment("HalfCheetah-v5")
        .env_runners(num_env_runners=0, rollout_fragment_length=50)
        .training(
            num_steps_sampled_before_learning_starts=100,
            train_batch_size=32,
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": 1000},
        )
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        before = _weights(algo)
        for _ in range(3):
            result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 300
        assert _moved(before, _weights(algo))
    finally:
        algo.stop()


def test_a_missing_family_is_refused_at_environment_with_its_extra():
    code = (
        "import sys; sys.modules['mujoco'] = None\n"
        "from trainer.algorithms.ppo import PPOConfig\n"
        "from trainer.errors import ConfigError\n"
        "try:\n"
        "    PPOConfig().environment('HalfCheetah-v5')\n"
        "except ConfigError as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HalfCheetah-v5" in out.stdout and "pip install -e '.[mujoco]'" in out.stdout, (
        out.stdout + out.stderr
    )


@pytest.mark.slow
def test_dm_control_tasks_train_and_render_without_a_display():
    from trainer.env.wrappers.dm_control_wrapper import ActionClip, DMCEnv

    # From pixels in a fresh interpreter without a display: DMCEnv picks EGL before
    # dm_control chooses its renderer (which it does once per process, at its first import).
    code = (
        "import os, numpy as np\n"
        "os.environ.pop('DISPLAY', None); os.environ.pop('MUJOCO_GL', None)\n"
        "from trainer.env.wrappers.dm_control_wrapper import DMCEnv\n"
        "env = DMCEnv('cartpole', 'swingup', from_pixels=True, height=32, width=32)\n"
        "obs, _ = env.reset(seed=0)\n"
        "print(obs.shape, obs.dtype, obs.min() >= -0.5, obs.max() <= 0.5, obs.std() > 0)\n"
        "try:\n"
        "    env.step(np.array([2.0], np.float32))\n"
        "except ValueError as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "(3, 32, 32) float32 True True True" in out.stdout, out.stdout + out.stderr[-2000:]
    assert "outside the action space" in out.stdout

    register_env("dmc_cartpole", lambda cfg: ActionClip(DMCEnv("cartpole", "swingup")))
    config = (
        PPOConfig()
        .environment("dmc_cartpole")
        .env_runners(num_env_runners=1, rollout_fragment_length=100)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        before = _weights(algo)
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] == 200
        assert _moved(before, _weights(algo))
    finally:
        algo.stop()


def test_ppo_trains_on_pettingzoo_waterworld():
    from pettingzoo.sisl import waterworld_v4

    from trainer.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    register_env("waterworld", lambda cfg: ParallelPettingZooEnv(waterworld_v4.parallel_env()))
    config = (
        PPOConfig()
        .environment("waterworld")
        .multi_agent(policies={"p"}, policy_mapping_fn=lambda aid, *a, **k: "p")
        .env_runners(num_env_runners=1, rollout_fragment_length=100)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        before = _weights(algo, "p")
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 200
        assert _moved(before, _weights(algo, "p"))
    finally:
        algo.stop()


def test_open_spiel_games_step_penalize_illegal_moves_and_restore_exactly():
    import pyspiel

    from trainer.env.wrappers.open_spiel import OpenSpielEnv
    from trainer.runners.multi_agent_runner_state import (
        capture_multi_agent_env_state,
        restore_multi_agent_env_state,
    )

    env = OpenSpielEnv(pyspiel.load_game("connect_four"))
    obs, _ = env.reset(seed=0)
    assert list(obs) == [0] and obs[0].shape == (126,)
    for _ in range(6):  # fills column 0
        obs, rewards, *_ = env.step({next(iter(obs)): 0})
    player = next(iter(obs))
    obs, rewards, *_ = env.step({player: 0})  # column 0 is full: a random legal move instead
    assert rewards[player] == pytest.approx(-0.1)

    for game in ("connect_four", "markov_soccer"):  # sequential; simultaneous, with chance
        env = OpenSpielEnv(pyspiel.load_game(game))
        obs, _ = env.reset(seed=1)
        for _ in range(4):
            obs, *_ = env.step({aid: 1 for aid in obs})
        captured, why = capture_multi_agent_env_state(env)
        assert why is None
        twin = OpenSpielEnv(pyspiel.load_game(game))
        twin.reset(seed=7)
        assert restore_multi_agent_env_state(twin, captured) is None
        assert str(twin.state) == str(env.state)
        mine, theirs = env.step({aid: 2 for aid in obs}), twin.step({aid: 2 for aid in obs})
        assert mine[1] == theirs[1]
        for aid in mine[0]:
            np.testing.assert_array_equal(mine[0][aid], theirs[0][aid])


def _main_against_random(config: PPOConfig, policy_mapping_fn) -> PPOConfig:
    """`config` with a trained module "main" and RLlib's RandomRLModule "random" (untrained,
    without weights), mapped by `policy_mapping_fn`."""
    return config.multi_agent(
        policies={"main", "random"},
        policy_mapping_fn=policy_mapping_fn,
        policies_to_train=["main"],
    ).rl_module(
        rl_module_spec=MultiRLModuleSpec(
            rl_module_specs={
                "main": RLModuleSpec(),
                "random": RLModuleSpec(module_class=RandomRLModule),
            }
        )
    )


@pytest.mark.slow
def test_self_play_on_connect_four_grows_the_league():
    """RLlib's SelfPlayCallback on OpenSpiel's connect_four: a frozen copy of "main" joins once
    it beats the random module (a low threshold, to see it happen in a few iterations)."""
    import pyspiel

    from trainer.env.wrappers.open_spiel import OpenSpielEnv
    from trainer.examples.multi_agent.utils import SelfPlayCallback

    register_env("connect_four", lambda _: OpenSpielEnv(pyspiel.load_game("connect_four")))
    config = (
        _main_against_random(
            PPOConfig()
            .environment("connect_four")
            .callbacks(lambda: SelfPlayCallback(win_rate_threshold=0.6))
            .env_runners(num_env_runners=1),
            lambda aid, episode, **kw: "main" if hash(episode.id_) % 2 == aid else "random",
        )
        .training(train_batch_size=2000, minibatch_size=250, num_epochs=10)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        sizes = [algo.train()["league_size"]]
        while sizes[-1] == 2 and len(sizes) < 40:
            sizes.append(algo.train()["league_size"])
        assert sizes[0] == 2 and sizes[-1] == 3, sizes
        frozen, main = _weights(algo, "main_v1"), _weights(algo, "main")
        assert frozen.keys() == main.keys()
        algo.train()  # main trains on; its frozen copy stays as it was
        assert _moved(main, _weights(algo, "main"))
        assert not _moved(frozen, _weights(algo, "main_v1"))
    finally:
        algo.stop()


def test_learner_group_takes_a_whole_multi_module_state_with_weightless_modules():
    """RLlib's league callback sets the EnvRunner's whole MultiRLModule state on the learners:
    a module without weights (RandomRLModule, which no learner trains) is passed over; an
    unknown module with weights is still refused."""
    import pyspiel

    from trainer.env.wrappers.open_spiel import OpenSpielEnv

    register_env(
        "connect_four_for_weights", lambda _: OpenSpielEnv(pyspiel.load_game("connect_four"))
    )
    config = _main_against_random(
        PPOConfig().environment("connect_four_for_weights").env_runners(num_env_runners=0),
        lambda aid, episode, **kw: "main" if aid == 0 else "random",
    )
    algo = config.build()
    try:
        state = algo.env_runner.module.get_state()
        assert state["random"] == {}
        state["main"] = {k: np.zeros_like(v) for k, v in state["main"].items()}
        algo.learner_group.set_weights(state)
        assert all(not v.any() for v in _weights(algo, "main").values())
        with pytest.raises(KeyError, match="no trained module 'elsewhere'"):
            algo.learner_group.set_weights({"elsewhere": state["main"]})
    finally:
        algo.stop()
