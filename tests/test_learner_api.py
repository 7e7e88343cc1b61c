"""RLlib's Learner API as its own unit tests drive it: `AlgorithmConfig.learner_class` (the given
class, else `get_default_learner_class()`), `build_learner` / `build_learner_group`, the generic
learner calls on RLlib's testing learner (`BaseTestingAlgorithmConfig`, `BCTorchLearner`):
gradients by parameter reference, clipping, optimizers, `update(batch=...)` with RLlib's result
keys and minibatch cycling, modules added and removed, learner checkpoints; and, against Ray
2.60 itself, the same weights after the same update."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from helpers import run_rllib_script, small_ppo, written_once

from trainer import AlgorithmConfig, PPOConfig
from trainer.algorithms.appo import APPOConfig
from trainer.algorithms.appo.appo_learner import APPOLearner
from trainer.algorithms.bc import BCConfig
from trainer.algorithms.cql import CQLConfig
from trainer.algorithms.cql.cql_learner import CQLLearner
from trainer.algorithms.dqn import DQNConfig
from trainer.algorithms.dqn.dqn_learner import DQNLearner
from trainer.algorithms.impala import IMPALAConfig
from trainer.algorithms.impala.impala_learner import IMPALALearner
from trainer.algorithms.iql import IQLConfig
from trainer.algorithms.iql.iql_learner import IQLLearner
from trainer.algorithms.learner_group import LearnerGroup
from trainer.algorithms.marwil import MARWILConfig
from trainer.algorithms.marwil.marwil_learner import MARWILLearner
from trainer.algorithms.multi_agent_learner import MultiAgentLearner
from trainer.algorithms.ppo.ppo_learner import PPOLearner
from trainer.algorithms.sac import SACConfig
from trainer.algorithms.sac.sac_learner import SACLearner
from trainer.checkpoints import CheckpointError
from trainer.core.learner import DEFAULT_OPTIMIZER, Learner
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.errors import ConfigError, FrozenConfigError, NotSupported, UnsupportedCall
from trainer.metrics import (
    ALL_MODULES,
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    WEIGHTS_SEQ_NO,
)

torch = pytest.importorskip("torch")

from trainer.core.multi_rl_module import MultiRLModule  # noqa: E402
from trainer.core.testing.testing_learner import BaseTestingAlgorithmConfig  # noqa: E402
from trainer.core.testing.torch.bc_learner import BCTorchLearner  # noqa: E402

ENV = gym.make("CartPole-v1")

# The numpy and torch learner class of each algorithm's config.
NUMPY_AND_TORCH = [
    (PPOConfig, PPOLearner, "trainer.algorithms.ppo.torch_learner.PPOTorchLearner"),
    (DQNConfig, DQNLearner, "trainer.algorithms.dqn.torch_learner.DQNTorchLearner"),
    (SACConfig, SACLearner, "trainer.algorithms.sac.torch_learner.SACTorchLearner"),
    (CQLConfig, CQLLearner, "trainer.algorithms.cql.torch_learner.CQLTorchLearner"),
    (MARWILConfig, MARWILLearner, "trainer.algorithms.marwil.torch_learner.MARWILTorchLearner"),
    (BCConfig, MARWILLearner, "trainer.algorithms.marwil.torch_learner.MARWILTorchLearner"),
    (IQLConfig, IQLLearner, "trainer.algorithms.iql.torch_learner.IQLTorchLearner"),
    (IMPALAConfig, IMPALALearner, "trainer.algorithms.impala.torch_learner.IMPALATorchLearner"),
    (APPOConfig, APPOLearner, "trainer.algorithms.appo.torch_learner.APPOTorchLearner"),
]


def _class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# -- learner_class and get_default_learner_class ------------------------------------------------
@pytest.mark.parametrize(
    ("config_class", "numpy_class", "torch_class"),
    NUMPY_AND_TORCH,
    ids=[c[0].__name__ for c in NUMPY_AND_TORCH],
)
def test_learner_class_is_the_algorithms_default_learner(config_class, numpy_class, torch_class):
    config = config_class()
    assert config.get_default_learner_class() is numpy_class
    assert config.learner_class is numpy_class
    assert config["learner_class"] is numpy_class
    torch_config = config_class().framework("torch")
    assert _class_path(torch_config.learner_class) == torch_class
    # The setting itself stays the value given: None.
    assert config.to_dict()["learner_class"] is None
    assert torch_config.to_dict()["learner_class"] is None


def test_the_base_config_answers_for_its_algorithm():
    assert AlgorithmConfig().learner_class is PPOLearner  # the default algorithm's
    from trainer.algorithms.dqn import DQN

    assert AlgorithmConfig(algo_class=DQN).learner_class is DQNLearner


def test_a_given_learner_class_is_kept_copied_and_round_trips():
    from trainer.algorithms.ppo.torch_learner import PPOTorchLearner

    class MyLearner(PPOTorchLearner):
        pass

    config = PPOConfig().training(learner_class=MyLearner)
    assert config.learner_class is MyLearner and config.uses_torch
    assert config.to_dict()["learner_class"] is MyLearner
    assert PPOConfig.from_dict(config.to_dict()).learner_class is MyLearner
    assert config.copy().learner_class is MyLearner
    config.learner_class = None  # back to the default (the config is then numpy's again)
    assert config.learner_class is PPOLearner and not config.uses_torch
    with pytest.raises(ConfigError, match="learner_class must be None or a subclass"):
        config.training(learner_class=PPOLearner)  # the numpy learners take no subclass
    with pytest.raises(ConfigError, match="learner_class"):
        config.learner_class = 5
    config.freeze()
    with pytest.raises(FrozenConfigError):
        config.learner_class = MyLearner


# -- build_learner / build_learner_group ------------------------------------------------------
def test_build_learner_gives_the_learner_the_algorithm_builds():
    config = PPOConfig().rl_module(model_config={"fcnet_hiddens": [8]})
    learner = config.build_learner(env=ENV)
    assert type(learner) is PPOLearner
    assert learner.config is not config  # RLlib's learner works on its own copy
    assert learner.module.spaces.obs_dim == 4 and learner.module.spaces.action_discrete_n == 2
    # Without env or spaces: the config's env is made (and closed) for its spaces.
    assert type(config.environment("CartPole-v1").build_learner()) is PPOLearner
    spaces = {DEFAULT_MODULE_ID: (ENV.observation_space, ENV.action_space)}
    torch_learner = PPOConfig().framework("torch").build_learner(spaces=spaces)
    assert type(torch_learner).__name__ == "PPOTorchLearner"
    multi = (
        DQNConfig()
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: "p0")
        .build_learner(spaces={"p0": spaces[DEFAULT_MODULE_ID], "p1": spaces[DEFAULT_MODULE_ID]})
    )
    assert isinstance(multi, MultiAgentLearner) and sorted(multi.learners) == ["p0", "p1"]
    with pytest.raises(ConfigError, match="no spaces to build the module for"):
        PPOConfig().build_learner()


def test_a_learner_group_saves_and_restores_its_learner(tmp_path):
    """RLlib's test_ppo_learner `test_save_to_path_and_restore_from_path`, on numpy PPO."""
    config = PPOConfig().training(model={"fcnet_hiddens": [10, 10]}).debugging(seed=1)
    config.validate = lambda: None  # (no env: build_learner_group takes the env's spaces)
    group1 = config.build_learner_group(env=ENV)
    group2 = config.build_learner_group(env=ENV)
    assert isinstance(group1, LearnerGroup) and group1.is_local
    weights = group1.get_weights()[DEFAULT_MODULE_ID]
    group1.set_weights({DEFAULT_MODULE_ID: {k: v + 1.0 for k, v in weights.items()}})
    group1.save_to_path(tmp_path)
    assert sorted(os.listdir(tmp_path / "learner")) == [
        "learner.msgpack",
        "metadata.json",
        "rl_module",
    ]
    group2.restore_from_path(tmp_path)
    s1, s2 = group1.get_state(), group2.get_state()  # (RLlib's layout)
    m1 = s1["learner"]["rl_module"][DEFAULT_MODULE_ID]
    for key, value in m1.items():
        np.testing.assert_array_equal(value, s2["learner"]["rl_module"][DEFAULT_MODULE_ID][key])
    # A learner of another network does not fit: refused, nothing changed.
    other = PPOConfig().training(model={"fcnet_hiddens": [3]}).build_learner_group(env=ENV)
    before = other.get_weights()
    with pytest.raises(CheckpointError, match="does not fit this learner"):
        other.restore_from_path(tmp_path)
    np.testing.assert_array_equal(
        next(iter(other.get_weights()[DEFAULT_MODULE_ID].values())),
        next(iter(before[DEFAULT_MODULE_ID].values())),
    )


# -- RLlib's testing learner --------------------------------------------------------------------
def _testing_learner(**training) -> BCTorchLearner:
    return BaseTestingAlgorithmConfig().training(**training).build_learner(env=ENV)


def test_the_testing_config_is_torch_and_builds_rllibs_learner():
    config = BaseTestingAlgorithmConfig()
    assert config.framework_str == "torch" and config.learner_class is BCTorchLearner
    learner = _testing_learner()
    assert isinstance(learner.module, MultiRLModule)
    assert list(learner.module.keys()) == [DEFAULT_MODULE_ID]
    # RLlib's spec: one hidden layer of 32 (the spec's model_config over the config's).
    assert learner.module[DEFAULT_MODULE_ID].policy[0].out_features == 32
    assert config.get_rl_module_spec(env=ENV).model_config["fcnet_hiddens"] == [32]
    with pytest.raises(NotSupported, match="framework"):
        BaseTestingAlgorithmConfig().framework("numpy").get_default_learner_class()


def test_compute_gradients_of_the_summed_parameters_are_ones():
    learner = _testing_learner()
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    gradients = learner.compute_gradients(
        {ALL_MODULES: sum(param.sum() for param in params)}, gradient_tape=None
    )
    assert set(gradients) == {learner.get_param_ref(p) for p in params}
    for grad in gradients.values():
        np.testing.assert_array_equal(grad.numpy(), np.ones(grad.shape))


@pytest.mark.parametrize("clip_by", ["value", "norm", "global_norm"])
def test_postprocess_gradients_clips_by_the_config(clip_by):
    clip = {"value": 0.75, "norm": 1.0, "global_norm": 5.0}[clip_by]
    learner = _testing_learner(grad_clip=clip, grad_clip_by=clip_by)
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    raw = {learner.get_param_ref(p): p.detach().numpy() + 1.0 for p in params}
    processed = learner.postprocess_gradients(
        {ref: torch.as_tensor(grad.copy()) for ref, grad in raw.items()}
    )
    global_norm = np.sqrt(sum(np.sum(g**2) for g in raw.values()))
    assert global_norm > clip  # (the clip applies)
    for ref, grad in raw.items():
        if clip_by == "value":
            expected = np.clip(grad, -clip, clip)
        elif clip_by == "norm":
            norm = np.linalg.norm(grad)
            expected = grad * (clip / norm) if norm > clip else grad
        else:
            expected = grad * (clip / (global_norm + 1e-6))
        np.testing.assert_allclose(processed[ref].numpy(), expected, rtol=1e-5, atol=1e-6)


def test_apply_gradients_takes_adam_steps_of_the_learning_rate():
    learner = _testing_learner(lr=0.0003)
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    expected = [p.detach().numpy() - 100 * 0.0003 for p in params]
    for _ in range(100):
        learner.apply_gradients({learner.get_param_ref(p): torch.ones_like(p) for p in params})
    for param, want in zip(params, expected, strict=True):
        np.testing.assert_allclose(param.detach().numpy(), want, atol=1e-5)


def test_optimizers_by_module_and_name():
    learner = _testing_learner(lr=0.01)
    optimizer = learner.get_optimizer(DEFAULT_MODULE_ID, DEFAULT_OPTIMIZER)
    assert learner.get_optimizers_for_module(DEFAULT_MODULE_ID) == [(DEFAULT_OPTIMIZER, optimizer)]
    assert learner._module_optimizers == {
        DEFAULT_MODULE_ID: [f"{DEFAULT_MODULE_ID}_{DEFAULT_OPTIMIZER}"]
    }
    assert optimizer.param_groups[0]["lr"] == 0.01
    with pytest.raises(KeyError, match="Optimizer not found"):
        learner.get_optimizer(DEFAULT_MODULE_ID, "other")
    with pytest.raises(ValueError, match="torch.optim.Optimizer"):
        learner._check_registered_optimizer("adam", [])
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    with pytest.raises(ValueError, match="list"):
        learner._check_registered_optimizer(torch.optim.SGD(params, lr=0.1), tuple(params))
    with pytest.raises(ValueError, match="not a parameter"):
        learner._check_registered_optimizer(
            torch.optim.SGD(params, lr=0.1), [torch.nn.Parameter(torch.zeros(2))]
        )
    state = learner._get_optimizer_state()
    learner._set_optimizer_state(state)
    assert learner._get_optimizer_state().keys() == state.keys()


def _bc_batch(rows: dict[str, int], seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        module_id: {
            "obs": rng.normal(size=(n, 4)).astype(np.float32),
            "actions": rng.integers(0, 2, n),
        }
        for module_id, n in rows.items()
    }


def test_update_reports_rllibs_keys_and_cycles_minibatches():
    """RLlib's MiniBatchCyclicIterator: 40 and 10 rows, minibatches of 16, 2 epochs: 5 of them
    (the 40 rows' second epoch ends in the 5th), each with 16 rows of both modules."""
    learner = _testing_learner(lr=0.01)
    learner.add_module(
        module_id="m2", module_spec=BaseTestingAlgorithmConfig().get_rl_module_spec(env=ENV)
    )
    batch = _bc_batch({DEFAULT_MODULE_ID: 40, "m2": 10})
    for seq_no in (1, 2):
        results = learner.update(batch=batch, minibatch_size=16, num_epochs=2)
        for module_id in (DEFAULT_MODULE_ID, "m2"):
            own = results[module_id]
            assert own[WEIGHTS_SEQ_NO] == seq_no
            assert own[MODULE_TRAIN_BATCH_SIZE_MEAN] == 16
            assert own[NUM_MODULE_STEPS_TRAINED] == own[NUM_MODULE_STEPS_TRAINED_LIFETIME] == 80
            assert np.isfinite(own[learner.TOTAL_LOSS_KEY])
            assert "mean_weight" in own  # the testing learner's hook
        totals = results[ALL_MODULES]
        assert totals[NUM_MODULE_STEPS_TRAINED] == totals[NUM_MODULE_STEPS_TRAINED_LIFETIME] == 160
        # RLlib counts each minibatch as the whole batch's env steps (50 rows here).
        assert totals[NUM_ENV_STEPS_TRAINED] == totals[NUM_ENV_STEPS_TRAINED_LIFETIME] == 250
    # One pass without minibatches: the batch as it is.
    single = learner.update(batch={DEFAULT_MODULE_ID: batch[DEFAULT_MODULE_ID]})
    assert single[DEFAULT_MODULE_ID][NUM_MODULE_STEPS_TRAINED] == 40
    assert NUM_MODULE_STEPS_TRAINED not in single["m2"]  # (only the hook's mean weight)
    with pytest.raises(ValueError, match="not in this Learner"):
        learner.update(batch=_bc_batch({"unknown": 4}))
    with pytest.raises(UnsupportedCall, match="learner connectors"):
        learner.update(episodes=[])


def test_add_and_remove_modules_with_their_optimizers():
    """RLlib's `test_add_remove_module`: only the added module is left, and it trains."""
    config = BaseTestingAlgorithmConfig().training(lr=0.0003)
    learner = config.build_learner(env=ENV)
    spec = config.get_default_rl_module_spec()
    spec.observation_space, spec.action_space = ENV.observation_space, ENV.action_space
    learner.add_module(module_id="test", module_spec=spec)
    learner.remove_module(DEFAULT_MODULE_ID)
    assert set(learner.module.keys()) == {"test"}
    assert list(learner._module_optimizers) == ["test"]
    params = learner.get_parameters(learner.module["test"])
    expected = [p.detach().numpy() - 10 * 0.0003 for p in params]
    for _ in range(10):
        gradients = learner.compute_gradients({ALL_MODULES: sum(p.sum() for p in params)})
        learner.apply_gradients(gradients)
    for param, want in zip(params, expected, strict=True):
        np.testing.assert_allclose(param.detach().numpy(), want, atol=1e-6)
    with pytest.raises(ValueError, match="holds that module already"):
        learner.add_module(module_id="test", module_spec=spec)
    # A learner of one module (an algorithm's) adds none: the algorithm does.
    single = PPOConfig().framework("torch").build_learner(env=ENV)
    with pytest.raises(UnsupportedCall, match="algo.add_module"):
        single.add_module(module_id="x", module_spec=spec)


def _same_learner_state(a, b) -> None:
    from trainer.testing import check

    check(a.module.get_state(), b.module.get_state())
    check(a._get_optimizer_state(), b._get_optimizer_state())
    assert a._module_optimizers == b._module_optimizers


def test_learner_checkpoints_save_restore_and_rebuild(tmp_path):
    """RLlib's `test_save_to_path_and_restore_from_path`, after a few updates too."""
    config = BaseTestingAlgorithmConfig()
    learner1 = config.build_learner(env=ENV)
    learner1.update(batch=_bc_batch({DEFAULT_MODULE_ID: 20}))
    learner1.save_to_path(tmp_path / "a")
    learner2 = config.build_learner(env=ENV)
    learner2.restore_from_path(tmp_path / "a")
    _same_learner_state(learner1, learner2)
    spec = config.get_rl_module_spec(env=ENV)
    learner1.add_module(module_id="test", module_spec=spec)
    learner1.save_to_path(tmp_path / "b")
    learner3 = Learner.from_checkpoint(tmp_path / "b")
    assert type(learner3) is BCTorchLearner
    _same_learner_state(learner1, learner3)
    learner1.remove_module(module_id=DEFAULT_MODULE_ID)
    learner1.save_to_path(tmp_path / "c")
    _same_learner_state(learner1, Learner.from_checkpoint(tmp_path / "c"))
    # The numpy learners save and rebuild the same way.
    numpy_learner = PPOConfig().training(model={"fcnet_hiddens": [6]}).build_learner(env=ENV)
    numpy_learner.save_to_path(tmp_path / "d")
    rebuilt = PPOLearner.from_checkpoint(tmp_path / "d")
    np.testing.assert_array_equal(rebuilt.module.flat_params, numpy_learner.module.flat_params)
    with pytest.raises(CheckpointError, match="not a"):
        BCTorchLearner.from_checkpoint(tmp_path / "d")


# -- the numpy learners' optimizers -------------------------------------------------------------
def test_a_numpy_learners_optimizer_reads_and_sets_its_rate_as_torchs():
    config = IMPALAConfig().training(lr=[[0, 0.05], [100, 0.01]])
    learner = config.build_learner(env=ENV)
    optimizer = learner.get_optimizer()
    assert optimizer is learner.optimizer
    assert learner.get_optimizers_for_module(DEFAULT_MODULE_ID) == [(DEFAULT_OPTIMIZER, optimizer)]
    assert optimizer.param_groups[0]["lr"] == 0.05
    learner.apply_lr_schedule(50)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.03)
    optimizer.param_groups[0]["lr"] = 0.2
    assert learner.optimizer.lr == 0.2
    with pytest.raises(KeyError, match="Optimizer not found"):
        learner.get_optimizer(DEFAULT_MODULE_ID, "critic")


# -- RLlib's paths through the launcher --------------------------------------------------------
def test_rllibs_testing_learner_paths_are_served(hook):
    from ray.rllib.core.learner.learner import Learner as RLlibLearner
    from ray.rllib.core.learner.learner_group import LearnerGroup as RLlibLearnerGroup
    from ray.rllib.core.testing.testing_learner import BaseTestingAlgorithmConfig as Config
    from ray.rllib.core.testing.torch.bc_learner import BCTorchLearner as RLlibBC

    assert Config is BaseTestingAlgorithmConfig and RLlibBC is BCTorchLearner
    assert RLlibLearner is Learner and RLlibLearnerGroup is LearnerGroup
    assert RLlibLearner.TOTAL_LOSS_KEY == "total_loss"


def test_what_needs_rllibs_data_or_cluster_is_refused_by_name(hook):
    from ray.cluster_utils import Cluster
    from ray.rllib.utils.test_utils import get_cartpole_dataset_reader

    with pytest.raises(UnsupportedCall, match="large.json") as raised:
        get_cartpole_dataset_reader(batch_size=512)
    assert raised.value.capability == "offline data"
    with pytest.raises(NotSupported, match="cluster internals"):
        Cluster(initialize_head=True)


# -- against RLlib 2.60 --------------------------------------------------------------------------
RLLIB_SCRIPT = r"""
import pickle, sys
import gymnasium as gym
import numpy as np
from ray.rllib.core.testing.testing_learner import BaseTestingAlgorithmConfig
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator

batches, out = pickle.load(open(sys.argv[1], "rb")), sys.argv[2]
env = gym.make("CartPole-v1")
config = BaseTestingAlgorithmConfig().training(lr=0.01, grad_clip=0.5, grad_clip_by="global_norm")
learner = config.build_learner(env=env)
learner.add_module(module_id="m2", module_spec=config.get_rl_module_spec(env=env))
state = lambda: {m: {k: v.detach().numpy().copy() for k, v in learner.module[m].state_dict().items()}
                 for m in ("default_policy", "m2")}
init = state()
batch = MultiAgentBatch({m: SampleBatch(b) for m, b in batches.items()},
                        sum(len(b["actions"]) for b in batches.values()))
results = learner.update(batch=learner._convert_batch_type(batch), minibatch_size=16, num_epochs=2)
peek = lambda x: {k: peek(v) for k, v in x.items()} if isinstance(x, dict) else float(x.peek())
# The cycling itself: which rows each minibatch takes (IMPALA's cut is the same iterator's).
cycles = {}
for rows, size, epochs in ((120, 50, 1), (100, 50, 1), (30, 50, 2), (7, 3, 4)):
    index = MultiAgentBatch({"a": SampleBatch({"i": np.arange(rows)}),
                             "b": SampleBatch({"i": np.arange(rows // 2 + 1)})}, rows)
    iterator = MiniBatchCyclicIterator(index, num_epochs=epochs, minibatch_size=size,
                                       shuffle_batch_per_epoch=False)
    cycles[(rows, size, epochs)] = [{m: b["i"].tolist() for m, b in mb.policy_batches.items()}
                                    for mb in iterator]
pickle.dump({"init": init, "after": state(), "results": peek(results), "cycles": cycles},
            open(out, "wb"))
print("saved")
"""


@pytest.fixture(scope="module")
def rllib_update(tmp_path_factory):
    pytest.importorskip("ray.rllib", reason="needs Ray 2.60 with RLlib's imports (the test extra)")
    batches = _bc_batch({DEFAULT_MODULE_ID: 40, "m2": 10}, seed=3)

    def write(folder: Path) -> None:
        with open(folder / "batches.pkl", "wb") as file:
            pickle.dump(batches, file)
        inputs, outputs = str(folder / "batches.pkl"), str(folder / "out.pkl")
        run_rllib_script(RLLIB_SCRIPT, inputs, outputs, timeout=240)

    folder = written_once(tmp_path_factory, "rllib_learner", write)
    with open(folder / "out.pkl", "rb") as file:
        return batches, pickle.load(file)  # noqa: S301 - the test's own file


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_update_with_minibatches_gives_rllibs_weights_and_counts(rllib_update):
    batches, rllib = rllib_update
    config = BaseTestingAlgorithmConfig().training(
        lr=0.01, grad_clip=0.5, grad_clip_by="global_norm"
    )
    learner = config.build_learner(env=ENV)
    learner.add_module(module_id="m2", module_spec=config.get_rl_module_spec(env=ENV))
    for module_id, weights in rllib["init"].items():
        learner.module[module_id].load_state_dict(
            {k: torch.as_tensor(v) for k, v in weights.items()}
        )
    results = learner.update(batch=batches, minibatch_size=16, num_epochs=2)
    for module_id, weights in rllib["after"].items():
        for key, value in learner.module[module_id].state_dict().items():
            np.testing.assert_allclose(value.numpy(), weights[key], rtol=1e-5, atol=1e-6)
    for module_id in (DEFAULT_MODULE_ID, "m2", ALL_MODULES):
        for key, value in rllib["results"][module_id].items():
            if key in results[module_id]:
                assert results[module_id][key] == pytest.approx(value, rel=1e-5), (module_id, key)
    assert {key for key in rllib["results"][DEFAULT_MODULE_ID] if "trainable" not in key} <= set(
        results[DEFAULT_MODULE_ID]
    )


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_minibatch_cycling_takes_rllibs_rows(rllib_update):
    """The generic learner's minibatches and IMPALA's step ranges take the rows RLlib's
    MiniBatchCyclicIterator takes, minibatch by minibatch."""
    from trainer.algorithms.impala.impala_learner import cyclic_step_ranges, num_minibatches
    from trainer.torch_rl.minibatches import TensorBatches, cyclic_minibatches

    _, rllib = rllib_update
    for (rows, size, epochs), expected in rllib["cycles"].items():
        sizes = {"a": rows, "b": rows // 2 + 1}
        batch = TensorBatches({m: {"i": torch.arange(n)} for m, n in sizes.items()}, rows)
        got = [
            {m: columns["i"].tolist() for m, columns in minibatch.items()}
            for minibatch in cyclic_minibatches(batch, num_epochs=epochs, minibatch_size=size)
        ]
        assert got == expected, (rows, size, epochs)
        count = num_minibatches(sizes.values(), epochs, size)
        assert count == len(expected)
        for module_id, n in sizes.items():
            ranges = cyclic_step_ranges(n, size, count)
            taken = [[i for start, stop in r for i in range(start, stop)] for r in ranges]
            assert taken == [minibatch[module_id] for minibatch in expected]


def test_foreach_learner_takes_rllibs_actor_options_and_passes_only_kwargs():
    """RLlib's `LearnerGroup.foreach_learner(func, *, healthy_only, remote_actor_ids,
    timeout_seconds, return_obj_refs, mark_healthy, **kwargs)` calls `func(learner,
    **kwargs)`: its options are the group's (RLlib's league-based self-play callback passes
    `timeout_seconds=0.0`); object refs, which only Ray actors give, are refused."""
    algo = small_ppo(train_batch_size=64, minibatch_size=32).build()
    try:
        group = algo.learner_group
        seen = group.foreach_learner(
            lambda learner, scale: (type(learner).__name__, scale),
            timeout_seconds=0.0,
            healthy_only=True,
            mark_healthy=False,
            remote_actor_ids=None,
            scale=2,
        )
        # RLlib's RemoteCallResults: one CallResult per learner.
        assert len(seen) == 1 and [(r.actor_id, r.ok, r.get()) for r in seen] == [
            (0, True, ("PPOLearner", 2))
        ]
        assert seen.values() == [("PPOLearner", 2)]
        with pytest.raises(NotSupported, match="return_obj_refs=True"):
            group.foreach_learner(lambda learner: None, return_obj_refs=True)
    finally:
        algo.stop()
