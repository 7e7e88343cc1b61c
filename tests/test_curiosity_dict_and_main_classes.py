"""Two RLlib 2.60 behaviours: RLlib's intrinsic-curiosity example classes on Dict observations
(the curiosity piece and the ICM take the nested observations, as RLlib's tree-mapped learner
batch holds them), and classes a script defines in `__main__` inside Tune checkpoints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer import PPOConfig  # noqa: E402
from trainer.algorithms.algorithm import Algorithm  # noqa: E402
from trainer.checkpoints import CheckpointError  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.apis import ValueFunctionAPI  # noqa: E402
from trainer.core.multi_rl_module import MultiRLModuleSpec  # noqa: E402
from trainer.core.rl_module import RLModule, RLModuleSpec  # noqa: E402
from trainer.env.episode import SingleAgentEpisode  # noqa: E402
from trainer.examples.learners.classes.intrinsic_curiosity_learners import (  # noqa: E402
    ICM_MODULE_ID,
    IntrinsicCuriosityModelConnector,
    PPOTorchLearnerWithCuriosity,
)
from trainer.examples.rl_modules.classes.intrinsic_curiosity_model_rlm import (  # noqa: E402
    IntrinsicCuriosityModel,
)
from trainer.torch_rl.rl_module import TorchRLModule  # noqa: E402
from trainer.torch_rl.self_supervised import ModulesById  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

DICT_SPACE = gym.spaces.Dict(
    {
        "pos": gym.spaces.Box(0.0, 1.0, (1,), np.float32),
        "goal": gym.spaces.Box(0.0, 1.0, (2,), np.float64),
    }
)


class DictCorridor(gym.Env):
    """Walk right to the end of a corridor; Dict observations."""

    def __init__(self, config=None):
        self.length = 5
        self.observation_space = DICT_SPACE
        self.action_space = gym.spaces.Discrete(2)

    def _obs(self):
        return {
            "pos": np.array([self.pos / self.length], np.float32),
            "goal": np.array([1.0, 0.5], np.float64),
        }

    def reset(self, *, seed=None, options=None):
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        self.t += 1
        done = self.pos >= self.length
        return self._obs(), float(done), done, self.t >= 15, {}


def _flat(obs):
    return torch.cat([obs[key].float() for key in sorted(obs)], dim=-1)


class DictPolicy(TorchRLModule, ValueFunctionAPI):
    """A policy on the Dict observations (their leaves concatenated)."""

    def setup(self):
        size = sum(int(np.prod(s.shape)) for s in self.observation_space.spaces.values())
        self.pi = torch.nn.Linear(size, self.action_space.n)
        self.vf = torch.nn.Linear(size, 1)

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(_flat(batch[Columns.OBS]))}

    def compute_values(self, batch, embeddings=None):
        return self.vf(_flat(batch[Columns.OBS])).squeeze(-1)


class DictICM(IntrinsicCuriosityModel):
    """RLlib's ICM on Dict observations: built for their concatenated leaves, which its
    forward pass concatenates."""

    def setup(self):
        size = sum(int(np.prod(s.shape)) for s in self.observation_space.spaces.values())
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        super().setup()

    def _forward_train(self, batch, **kwargs):
        assert isinstance(batch[Columns.OBS], dict) and isinstance(batch[Columns.NEXT_OBS], dict)
        batch = dict(batch)
        batch[Columns.OBS] = _flat(batch[Columns.OBS])
        batch[Columns.NEXT_OBS] = _flat(batch[Columns.NEXT_OBS])
        return super()._forward_train(batch, **kwargs)


class TreeFeatureICM(IntrinsicCuriosityModel):
    """RLlib's ICM with a feature net that takes the Dict observations itself: the base
    forward pass concatenates observations and next observations leaf by leaf."""

    def setup(self):
        size = sum(int(np.prod(s.shape)) for s in self.observation_space.spaces.values())
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        super().setup()
        net = self._feature_net
        self._feature_net = _TreeNet(net)


class _TreeNet(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, obs):
        return self.net(_flat(obs))


def _dict_icm(cls=DictICM):
    return cls(
        observation_space=DICT_SPACE,
        action_space=gym.spaces.Discrete(2),
        model_config={"feature_dim": 8, "feature_net_hiddens": (16,)},
    )


def _dict_episodes(rng, lengths=(3, 4)):
    episodes = []
    for length in lengths:
        episode = SingleAgentEpisode()
        episode.add_env_reset(DICT_SPACE.sample())
        for _ in range(length):
            episode.add_env_step(DICT_SPACE.sample(), int(rng.integers(2)), 1.0)
        episodes.append(episode)
    return episodes


@pytest.mark.parametrize("icm_class", [DictICM, TreeFeatureICM])
def test_the_curiosity_piece_takes_dict_observations(icm_class):
    torch.manual_seed(0)
    DICT_SPACE.seed(0)
    icm = _dict_icm(icm_class)
    episodes = _dict_episodes(np.random.default_rng(0))
    piece = IntrinsicCuriosityModelConnector(intrinsic_reward_coeff=0.5)
    piece(rl_module=ModulesById({ICM_MODULE_ID: icm}), batch={}, episodes=episodes)
    for episode in episodes:
        observations = episode.get_observations()
        if isinstance(observations, list):
            observations = {
                key: np.stack([row[key] for row in observations]) for key in DICT_SPACE.spaces
            }
        obs = {key: torch.as_tensor(value).float() for key, value in observations.items()}
        with torch.no_grad():
            surprise = icm.forward_train(
                {
                    Columns.OBS: {key: value[:-1] for key, value in obs.items()},
                    Columns.NEXT_OBS: {key: value[1:] for key, value in obs.items()},
                    Columns.ACTIONS: torch.as_tensor(np.asarray(episode.get_actions())),
                }
            )[Columns.INTRINSIC_REWARDS].numpy()
        assert (surprise > 0).all()
        np.testing.assert_allclose(episode.get_rewards(), 1.0 + 0.5 * surprise, rtol=1e-5)


def test_ppo_with_curiosity_trains_on_dict_observations():
    config = (
        PPOConfig()
        .environment(DictCorridor)
        .env_runners(num_env_runners=0)
        .training(
            learner_class=PPOTorchLearnerWithCuriosity,
            learner_config_dict={"intrinsic_reward_coeff": 0.05, "forward_loss_weight": 0.2},
            train_batch_size=120,
            minibatch_size=40,
            num_epochs=2,
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "default_policy": RLModuleSpec(module_class=DictPolicy),
                    ICM_MODULE_ID: RLModuleSpec(
                        module_class=DictICM,
                        learner_only=True,
                        model_config={"feature_dim": 8, "feature_net_hiddens": (16,)},
                    ),
                }
            )
        )
        .debugging(seed=1)
    )
    algo = config.build_algo()
    try:
        first = algo.train()["learners"][ICM_MODULE_ID]["forward_loss"]
        second = algo.train()["learners"][ICM_MODULE_ID]["forward_loss"]
    finally:
        algo.stop()
    assert np.isfinite(first) and np.isfinite(second)


# -- classes a script defines (`__main__`) in checkpoints ----------------------------------------
class ScriptModule(TorchRLModule, ValueFunctionAPI):
    """A module class as a Ray worker (a Tune trial's actor) holds a script's own: `__module__`
    is "__main__" (cloudpickle sent it by value), but the worker's `__main__` is Ray's."""

    def setup(self):
        self.pi = torch.nn.Linear(4, self.action_space.n)
        self.vf = torch.nn.Linear(4, 1)

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_values(self, batch, embeddings=None):
        return self.vf(batch[Columns.OBS]).squeeze(-1)


ScriptModule.__module__ = "__main__"


def _script_module():
    return ScriptModule(
        observation_space=gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
        action_space=gym.spaces.Discrete(2),
        model_config={},
    )


def test_a_scripts_module_class_sent_to_a_worker_is_saved_by_its_place_in_the_script(
    tmp_path, monkeypatch
):
    assert getattr(sys.modules["__main__"], "ScriptModule", None) is not ScriptModule
    module = _script_module()
    path = module.save_to_path(tmp_path / "module")
    metadata = json.loads((Path(path) / "metadata.json").read_text())
    assert metadata["module_class"] == "__main__:ScriptModule"
    # Where the script is not running, nothing names the class: refused, saying so.
    with pytest.raises(CheckpointError, match="the script that saved"):
        RLModule.from_checkpoint(path)
    # The same script running again (its `__main__` holds the class) rebuilds it.
    monkeypatch.setattr(sys.modules["__main__"], "ScriptModule", ScriptModule, raising=False)
    again = RLModule.from_checkpoint(path)
    assert type(again) is ScriptModule
    for key, value in module.get_state().items():
        np.testing.assert_array_equal(again.get_state()[key], value)


def test_an_algorithm_with_a_scripts_module_class_saves_and_loads_from_a_tune_checkpoint(
    tmp_path, monkeypatch
):
    from ray.train import Checkpoint

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=100, minibatch_size=50, num_epochs=1)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ScriptModule))
    )
    algo = config.build_algo()
    try:
        algo.train()
        path = algo.save_to_path(str(tmp_path / "checkpoint"))
        weights = algo.get_module().get_state()
    finally:
        algo.stop()
    monkeypatch.setattr(sys.modules["__main__"], "ScriptModule", ScriptModule, raising=False)
    # RLlib's `Algorithm.from_checkpoint(result.checkpoint)`: a Tune `Checkpoint`.
    restored = Algorithm.from_checkpoint(Checkpoint.from_directory(path))
    try:
        assert restored.iteration == 1 and type(restored.get_module()) is ScriptModule
        for key, value in weights.items():
            np.testing.assert_array_equal(restored.get_module().get_state()[key], value)
    finally:
        restored.stop()


TUNE_SCRIPT = """
import os
import sys

import gymnasium as gym
import numpy as np
from torch import nn

from ray import tune
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core import Columns
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec
from ray.rllib.core.rl_module.torch import TorchRLModule


class MyEnv(gym.Env):
    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(2, self.t / 10, np.float32), float(action), False, self.t >= 10, {}


class MyModule(TorchRLModule, ValueFunctionAPI):
    def setup(self):
        self.pi = nn.Linear(2, 2)
        self.vf = nn.Linear(2, 1)

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    def compute_values(self, batch, embeddings=None):
        return self.vf(batch[Columns.OBS]).squeeze(-1)


class MyCallbacks(RLlibCallback):
    def on_train_result(self, *, algorithm, result, **kwargs):
        result["my_callback_ran"] = 1


config = (
    PPOConfig()
    .environment(MyEnv)
    .env_runners(num_env_runners=0)
    .callbacks(MyCallbacks)
    .training(train_batch_size_per_learner=100, minibatch_size=50, num_epochs=1)
    .rl_module(rl_module_spec=RLModuleSpec(module_class=MyModule))
)

if __name__ == "__main__":
    results = tune.Tuner(
        "PPO",
        param_space=config,
        run_config=tune.RunConfig(
            storage_path=sys.argv[1],
            stop={"training_iteration": 2},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
            verbose=0,
        ),
    ).fit()
    result = results[0]
    print("errors", results.num_errors, "checkpoint", result.checkpoint is not None)
    print("callback", result.metrics.get("my_callback_ran"))
    algo = Algorithm.from_checkpoint(result.checkpoint)
    print("restored", type(algo.get_module()).__name__, algo.iteration)
    algo.stop()
    module = RLModule.from_checkpoint(
        os.path.join(result.checkpoint.path, "learner_group", "learner", "rl_module",
                     "default_policy")
    )
    print("module", type(module).__name__)
"""


@pytest.mark.slow
@pytest.mark.ray
def test_a_tune_run_checkpoints_the_scripts_own_classes_and_the_script_restores_them(tmp_path):
    """RLlib's Tune trials save a script's `__main__` module, callbacks and env classes (RLlib
    pickles them by value); the script then restores `result.checkpoint`."""
    pytest.importorskip("ray.tune")
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(TUNE_SCRIPT))
    completed = subprocess.run(
        [sys.executable, "-m", "trainer", "run", str(script), str(tmp_path / "results")],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = completed.stdout
    assert completed.returncode == 0, (out + completed.stderr)[-4000:]
    assert "errors 0 checkpoint True" in out
    assert "callback 1" in out
    assert "restored MyModule 2" in out
    assert "module MyModule" in out
