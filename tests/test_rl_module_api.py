"""RLlib's RLModule API on numpy: a user's `RLModule` subclass (constructor, `setup`, the
forward methods, state, checkpoints), `RLModuleSpec.build()`, the default numpy modules
answering the same questions, and RLlib's example heuristic modules (`RandomRLModule`,
`AlwaysSameHeuristicRLM`, `BeatLastHeuristicRLM`) on real observations."""

from __future__ import annotations

import abc
import json
import os
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from trainer import PPOConfig
from trainer.algorithms.dqn.q_module import QModule
from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.sac.sac_module import SACModule
from trainer.compat.rllib_utils import DEFAULT_MODULE_ID, Columns
from trainer.core.multi_rl_module import MultiRLModule
from trainer.core.rl_module import RLModule, RLModuleSpec
from trainer.core.spaces import batch
from trainer.errors import CheckpointError
from trainer.examples.envs.classes.cartpole_with_dict_observation_space import (
    CartPoleWithDictObservationSpace,
)
from trainer.examples.rl_modules.classes import (
    AlwaysSameHeuristicRLM,
    BeatLastHeuristicRLM,
    RandomRLModule,
    StatefulRandomRLModule,
)


class CountingModule(RLModule):
    """Records which passes ran; `_forward` answers every phase not overridden."""

    def setup(self) -> None:
        self.setup_calls = getattr(self, "setup_calls", 0) + 1
        self.scale = np.full(2, float((self.model_config or {}).get("scale", 1.0)))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {"phase": "generic", Columns.ACTIONS: np.zeros(len(batch[Columns.OBS]), int)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {"phase": "train", "kwargs": kwargs}

    def get_state(self, components=None, *, not_components=None, inference_only=False, **kw):
        return {"scale": self.scale.copy(), "note": "plain data"}

    def set_state(self, state: dict[str, Any]) -> None:
        self.scale[...] = state["scale"]


class RecurrentModule(RLModule):
    def get_initial_state(self) -> dict[str, np.ndarray]:
        return {"h": np.zeros(3)}


def _cartpole_observations(n: int, seed: int = 0) -> np.ndarray:
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    rows = [obs]
    while len(rows) < n:
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        rows.append(env.reset()[0] if terminated or truncated else obs)
    return np.stack(rows)


def _spaces() -> tuple[gym.Space, gym.Space]:
    env = gym.make("CartPole-v1")
    return env.observation_space, env.action_space


# -- a user's RLModule ---------------------------------------------------------------------------
def test_constructor_keywords_setup_once_and_forward_routing():
    obs_space, act_space = _spaces()
    module = CountingModule(
        observation_space=obs_space,
        action_space=act_space,
        inference_only=False,
        learner_only=True,
        model_config={"scale": 2.0},
    )
    assert (module.observation_space, module.action_space) == (obs_space, act_space)
    assert module.learner_only and not module.inference_only
    assert module.model_config == {"scale": 2.0} and module.setup_calls == 1
    batch = {Columns.OBS: _cartpole_observations(5)}
    assert module.forward_inference(batch)["phase"] == "generic"
    assert module.forward_exploration(batch)[Columns.ACTIONS].shape == (5,)
    assert module.forward_train(batch, t=3) == {"phase": "train", "kwargs": {"t": 3}}
    assert module.unwrapped() is module and module.framework is None
    assert not module.is_stateful() and module.get_initial_state() == {}
    assert RecurrentModule(observation_space=obs_space, action_space=act_space).is_stateful()


def test_inference_only_module_refuses_forward_train_and_old_config_is_refused():
    obs_space, act_space = _spaces()
    module = CountingModule(
        observation_space=obs_space, action_space=act_space, inference_only=True
    )
    with pytest.raises(RuntimeError, match="forward_train\\(\\) on an inference_only module"):
        module.forward_train({Columns.OBS: _cartpole_observations(2)})
    with pytest.raises(ValueError, match=r"config=\.\.\.\) \(RLlib's removed RLModuleConfig\)"):
        CountingModule({"observation_space": obs_space})
    with pytest.raises(
        ValueError, match="catalog_class=dict is not supported: only DQNCatalog / PPOCatalog"
    ):
        CountingModule(observation_space=obs_space, catalog_class=dict)


def test_spec_builds_user_module_and_round_trips_through_from_module():
    obs_space, act_space = _spaces()
    spec = RLModuleSpec(
        module_class=CountingModule,
        observation_space=obs_space,
        action_space=act_space,
        model_config={"scale": 3.0},
    )
    module = spec.build()
    assert isinstance(module, CountingModule) and module.scale.tolist() == [3.0, 3.0]
    again = RLModuleSpec.from_module(module)
    assert again.module_class is CountingModule and again.model_config == {"scale": 3.0}
    assert again.as_multi_rl_module_spec()[DEFAULT_MODULE_ID] is again
    with pytest.raises(ValueError, match="module_class is not set"):
        RLModuleSpec(observation_space=obs_space).build()
    with pytest.raises(ValueError, match="observation_space is not set"):
        RLModuleSpec(module_class=CountingModule).build()


def test_user_module_save_restore_and_from_checkpoint(tmp_path):
    obs_space, act_space = _spaces()
    module = CountingModule(
        observation_space=obs_space, action_space=act_space, model_config={"scale": 1.5}
    )
    module.scale[:] = [4.0, 5.0]
    path = module.save_to_path(tmp_path / "module")
    assert sorted(os.listdir(path)) == ["metadata.json", "module_state.msgpack"]
    metadata = json.loads((tmp_path / "module" / "metadata.json").read_text())
    assert metadata["kind"] == "rl_module"
    assert metadata["module_class"] == f"{CountingModule.__module__}:CountingModule"
    restored = CountingModule.from_checkpoint(path)
    assert restored is not module and restored.scale.tolist() == [4.0, 5.0]
    assert restored.observation_space == obs_space and restored.model_config == {"scale": 1.5}
    fresh = CountingModule(observation_space=obs_space, action_space=act_space)
    fresh.restore_from_path(path)
    assert fresh.scale.tolist() == [4.0, 5.0]
    # The stored class must be the one asked for.
    with pytest.raises(CheckpointError, match="not a RecurrentModule"):
        RecurrentModule.from_checkpoint(path)


def test_module_checkpoints_refuse_what_they_cannot_store(tmp_path):
    obs_space, act_space = _spaces()

    class LocalModule(RLModule):  # no import path: a checkpoint could not rebuild it
        pass

    with pytest.raises(CheckpointError, match="cannot be named by an import path"):
        LocalModule(observation_space=obs_space, action_space=act_space).save_to_path(
            tmp_path / "local"
        )
    module = CountingModule(observation_space=obs_space, action_space=act_space)
    with pytest.raises(CheckpointError, match="state cannot be stored"):
        module.save_to_path(tmp_path / "bad", state={"scale": object()})
    with pytest.raises(ValueError, match="filesystem=...\\) is not supported"):
        module.save_to_path(tmp_path / "x", filesystem=object())
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="refusing to replace"):
        module.save_to_path(tmp_path / "other")


# -- the default numpy modules -------------------------------------------------------------------
def test_default_modules_build_from_spec_and_answer_the_api(tmp_path):
    obs_space, act_space = _spaces()
    obs = _cartpole_observations(6)
    policy = RLModuleSpec(
        module_class=PolicyModule,
        observation_space=obs_space,
        action_space=act_space,
        model_config={"fcnet_hiddens": [16]},
    ).build()
    assert isinstance(policy, PolicyModule) and policy.observation_space == obs_space
    out = policy.forward_inference({Columns.OBS: obs})
    np.testing.assert_array_equal(out[Columns.ACTION_DIST_INPUTS], policy.dist_inputs(obs))
    state = policy.get_state()
    assert set(state) == set(policy.get_weights()) and not policy.is_stateful()
    assert not policy.inference_only and not policy.learner_only
    restored = PolicyModule.from_checkpoint(policy.save_to_path(tmp_path / "policy"))
    np.testing.assert_array_equal(
        restored.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS],
        out[Columns.ACTION_DIST_INPUTS],
    )
    q = RLModuleSpec(
        module_class=QModule,
        observation_space=obs_space,
        action_space=act_space,
        model_config={"fcnet_hiddens": [8], "dueling": False},
    ).build()
    assert q.dueling is False and q.q is not None
    q_again = QModule.from_checkpoint(q.save_to_path(tmp_path / "q"))
    assert q_again.dueling is False
    np.testing.assert_array_equal(q_again.dist_inputs(obs), q.dist_inputs(obs))
    multi = policy.as_multi_rl_module()
    assert multi[DEFAULT_MODULE_ID] is policy  # the same instance, with its weights


def test_default_modules_are_rl_modules_and_subclass_checks_stay_exact():
    """RLlib's `isinstance(algo.env_runner.module, RLModule)`: the default numpy modules count as
    RLModules, but not as any subclass of it; RLModule is an ABC, as RLlib's."""
    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
    algo = config.build()
    try:
        assert isinstance(algo.env_runner.module, PolicyModule)
        assert isinstance(algo.env_runner.module, RLModule)
    finally:
        algo.stop()
    for cls in (PolicyModule, QModule, SACModule):
        assert issubclass(cls, RLModule)
        assert not issubclass(cls, MultiRLModule) and not issubclass(cls, CountingModule)
    assert not isinstance(object(), RLModule) and not issubclass(int, RLModule)
    assert isinstance(RLModule, abc.ABCMeta)

    class Mixin(abc.ABC):
        @abc.abstractmethod
        def extra(self) -> int: ...

    class WithAbstractMixin(RLModule, Mixin):
        def extra(self) -> int:
            return 1

    assert WithAbstractMixin().extra() == 1


# -- RLlib's example heuristic modules -----------------------------------------------------------
def test_random_module_acts_in_its_action_space_on_real_observations():
    obs_space, act_space = _spaces()
    module = RandomRLModule(observation_space=obs_space, action_space=act_space)
    actions = module.forward_exploration({Columns.OBS: _cartpole_observations(7)})[Columns.ACTIONS]
    assert actions.shape == (7,) and all(act_space.contains(int(a)) for a in actions)
    with pytest.raises(NotImplementedError, match="Should not be trained"):
        module.forward_train({Columns.OBS: _cartpole_observations(2)})
    # Dict observations: the batch size is the first leaf's length.
    env = CartPoleWithDictObservationSpace({})
    rows = [env.reset(seed=1)[0]] + [env.step(0)[0] for _ in range(3)]
    dict_batch = batch(rows)  # a nested dict of arrays with a batch axis
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    boxed = RandomRLModule(observation_space=env.observation_space, action_space=box)
    out = boxed.forward_inference({Columns.OBS: dict_batch})[Columns.ACTIONS]
    assert out.shape == (4, 2) and np.all(np.abs(out) <= 1.0)


def test_stateful_random_module_returns_its_state():
    obs_space, act_space = _spaces()
    module = StatefulRandomRLModule(observation_space=obs_space, action_space=act_space)
    assert module.is_stateful() and module.get_initial_state()["state"].shape == (1, 1)
    out = module.forward_inference({Columns.OBS: _cartpole_observations(3)})
    assert out[Columns.STATE_OUT]["state"].shape == (3, 1)


def _rock_paper_scissors_observations(moves: list[int]) -> list[int]:
    """What RLlib's RockPaperScissors env shows a player: 3 after reset, then the opponent's
    previous move (0 rock, 1 paper, 2 scissors)."""
    return [3] + moves[:-1]


def test_beat_last_heuristic_beats_the_previous_move():
    space = gym.spaces.Discrete(4)
    module = BeatLastHeuristicRLM(observation_space=space, action_space=gym.spaces.Discrete(3))
    opponent = [0, 1, 2, 2, 0, 1]
    observations = np.array(_rock_paper_scissors_observations(opponent))
    actions = module.forward_inference({Columns.OBS: observations})[Columns.ACTIONS]
    beats = {0: 1, 1: 2, 2: 0}
    assert actions[0] in (0, 1, 2)  # a random first move
    assert actions[1:].tolist() == [beats[m] for m in opponent[:-1]]
    np.testing.assert_array_equal(
        module.forward_exploration({Columns.OBS: observations[1:]})[Columns.ACTIONS],
        actions[1:],
    )
    with pytest.raises(NotImplementedError, match="not trainable"):
        module.forward_train({Columns.OBS: observations})


def test_always_same_heuristic_repeats_its_first_move_per_episode():
    space = gym.spaces.Discrete(4)
    module = AlwaysSameHeuristicRLM(observation_space=space, action_space=gym.spaces.Discrete(3))
    np.random.seed(3)
    firsts = []
    for _episode in range(6):  # two sub-envs (batch rows), each resetting every 4 steps
        moves = []
        for t in range(4):
            obs = np.array([3, 3]) if t == 0 else np.random.randint(0, 3, size=2)
            moves.append(module.forward_exploration({Columns.OBS: obs})[Columns.ACTIONS])
        moves = np.stack(moves)
        assert (moves == moves[0]).all() and set(moves[0].tolist()) <= {0, 1, 2}
        firsts.append(tuple(moves[0]))
    assert len(set(firsts)) > 1  # each episode draws its move anew
    with pytest.raises(NotImplementedError, match="not trainable"):
        module.forward_train({Columns.OBS: np.array([3])})


def test_heuristics_mixed_with_a_default_module_in_a_multi_rl_module(tmp_path):
    space = gym.spaces.Discrete(4)
    actions = gym.spaces.Discrete(3)
    multi = MultiRLModule(
        rl_module_specs={
            "learned": RLModuleSpec(
                module_class=PolicyModule,
                observation_space=space,
                action_space=actions,
                model_config={"fcnet_hiddens": [8]},
            ),
            "beat_last": RLModuleSpec(
                module_class=BeatLastHeuristicRLM, observation_space=space, action_space=actions
            ),
        }
    )
    out = multi.forward_inference(
        {"learned": {Columns.OBS: np.array([0, 3])}, "beat_last": {Columns.OBS: np.array([2])}}
    )
    assert out["learned"][Columns.ACTION_DIST_INPUTS].shape == (2, 3)
    assert out["beat_last"][Columns.ACTIONS].tolist() == [0]
    restored = MultiRLModule.from_checkpoint(multi.save_to_path(tmp_path / "multi"))
    assert isinstance(restored["beat_last"], BeatLastHeuristicRLM)
    np.testing.assert_array_equal(
        restored["learned"].get_state()["pi.0.weight"], multi["learned"].get_state()["pi.0.weight"]
    )


def test_rllib_import_paths_give_the_numpy_classes():
    from trainer import launcher

    launcher.install()
    try:
        from ray.rllib.core.rl_module import MultiRLModuleSpec as RLlibMultiSpec
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule as RLlibMulti
        from ray.rllib.core.rl_module.rl_module import RLModule as RLlibModule
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec as RLlibSpec
        from ray.rllib.examples.rl_modules.classes.random_rlm import RandomRLModule as Random
        from ray.rllib.examples.rl_modules.classes.rock_paper_scissors_heuristic_rlm import (
            BeatLastHeuristicRLM as BeatLast,
        )
    finally:
        launcher.uninstall()
    from trainer.core.multi_rl_module import MultiRLModuleSpec

    assert (RLlibModule, RLlibSpec, RLlibMulti) == (RLModule, RLModuleSpec, MultiRLModule)
    assert RLlibMultiSpec is MultiRLModuleSpec
    assert (Random, BeatLast) == (RandomRLModule, BeatLastHeuristicRLM)


def test_restore_one_module_of_n_from_a_multi_rl_module_checkpoint(tmp_path):
    from trainer.core.multi_rl_module import MultiRLModuleSpec

    obs_space, act_space = _spaces()

    def spec() -> MultiRLModuleSpec:
        one = RLModuleSpec(
            module_class=PolicyModule,
            observation_space=obs_space,
            action_space=act_space,
            model_config={"fcnet_hiddens": [8]},
        )
        return MultiRLModuleSpec(rl_module_specs={"p0": one, "p1": one})

    saved = spec().build()
    path = saved.save_to_path(tmp_path / "multi")
    assert sorted(os.listdir(path)) == ["metadata.json", "p0", "p1"]
    # RLlib's MultiRLModuleSpec(load_state_path=, modules_to_load=): only p0 is loaded.
    partial = spec()
    partial.load_state_path, partial.modules_to_load = path, {"p0"}
    loaded = partial.build()
    partial.load_states(loaded)
    weights = saved.get_state()
    after = loaded.get_state()
    np.testing.assert_array_equal(after["p0"]["pi.0.weight"], weights["p0"]["pi.0.weight"])
    assert not np.array_equal(after["p1"]["pi.0.weight"], weights["p1"]["pi.0.weight"])
    # restore_from_path(component=...) restores one module; get_state selects by component.
    loaded.restore_from_path(path, component="rl_module/p1")
    np.testing.assert_array_equal(
        loaded.get_state(components="p1")["p1"]["pi.0.weight"], weights["p1"]["pi.0.weight"]
    )
    assert set(loaded.get_state(not_components=["p0"])) == {"p1"}
    with pytest.raises(CheckpointError, match="has no module 'p7'"):
        loaded.restore_from_path(path, component="p7")
    with pytest.raises(CheckpointError, match="holds a MultiRLModule"):
        loaded["p0"].restore_from_path(path)
    with pytest.raises(CheckpointError, match="not a MultiRLModule"):
        MultiRLModule.from_checkpoint(os.path.join(path, "p0"))


@pytest.mark.parametrize("framework", ["numpy", "torch"])
@pytest.mark.parametrize("env", ["CartPole-v1", "Pendulum-v1"])
def test_numpy_and_torch_modules_answer_the_same_questions(framework, env):
    """RLlib's RLModule API on the default module of either framework: the algorithm APIs,
    the action distribution classes (RLlib's Distribution interface) and the forward passes."""
    from trainer.core.apis import ValueFunctionAPI
    from trainer.core.distributions import Distribution

    algo = (
        PPOConfig()
        .environment(env)
        .framework(framework)
        .env_runners(num_env_runners=0)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .build()
    )
    try:
        module = algo.learner_module()  # (its value function: get_module() is inference-only)
        assert module.framework == (None if framework == "numpy" else "torch")
        assert isinstance(module, ValueFunctionAPI)
        assert not module.is_stateful() and module.get_initial_state() == {}
        obs = np.stack([module.observation_space.sample() for _ in range(5)]).astype(np.float32)
        batch = {"obs": obs}
        if framework == "torch":
            import torch

            batch = {"obs": torch.from_numpy(obs)}
        out = module.forward_inference(batch)
        values = module.compute_values(batch)
        assert tuple(values.shape) == (5,)
        for get_cls in (
            module.get_inference_action_dist_cls,
            module.get_exploration_action_dist_cls,
            module.get_train_action_dist_cls,
        ):
            dist_cls = get_cls()
            assert issubclass(dist_cls, Distribution)
            assert (
                dist_cls.required_input_dim(module.action_space)
                == out["action_dist_inputs"].shape[-1]
            )
            dist = dist_cls.from_logits(out["action_dist_inputs"])
            actions = dist.sample()
            assert tuple(dist.logp(actions).shape) == (5,)
            assert tuple(dist.entropy().shape) == (5,)
            assert np.allclose(np.asarray(dist.kl(dist)), 0.0, atol=1e-6)
            greedy = dist.to_deterministic().sample()
            assert tuple(greedy.shape) == tuple(actions.shape)
    finally:
        algo.stop()
