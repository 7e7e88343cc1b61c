"""Dict (and Tuple) observations with torch modules: the EnvRunners keep them nested, the PPO
torch learner batches them leaf by leaf, a TorchRLModule gets `batch["obs"]` as a dict of
batched tensors (as in RLlib); the numpy modules refuse them with a clear error. Includes RLlib's
action-masking module (`trainer.examples.rl_modules.classes.action_masking_rlm`) on its
`ActionMaskEnv`, in process and in one small PPO run with worker processes and evaluation."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from trainer import SingleAgentEpisode  # noqa: E402
from trainer.algorithms.ppo.module import PolicyModule  # noqa: E402
from trainer.algorithms.ppo.ppo import PPOConfig  # noqa: E402
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner  # noqa: E402
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.connectors.env_to_module import PrevActionsPrevRewards  # noqa: E402
from trainer.core.apis import ValueFunctionAPI  # noqa: E402
from trainer.core.models import SpaceInfo  # noqa: E402
from trainer.core.obs_tree import (  # noqa: E402
    batch_from_state,
    flatten_column,
    nest_column,
    set_row,
    tree_concat,
)
from trainer.core.rl_module import RLModuleSpec  # noqa: E402
from trainer.examples.envs.classes.action_mask_env import ActionMaskEnv  # noqa: E402
from trainer.examples.rl_modules.classes.action_masking_rlm import (  # noqa: E402
    FLOAT_MIN,
    ActionMaskingTorchRLModule,
)
from trainer.torch_rl.rl_module import TorchRLModule  # noqa: E402
from trainer.torch_rl.runner_view import TorchModuleView  # noqa: E402

#: Enough actions that the env's random mask (each entry 0 or 1) never rules out all of them.
NUM_ACTIONS = 20
ENV_CONFIG = {
    "action_space": gym.spaces.Discrete(NUM_ACTIONS),
    "observation_space": gym.spaces.Box(-1.0, 1.0, (5,)),
}
MASK_SPACE = ActionMaskEnv(ENV_CONFIG).observation_space


def make_config(**training) -> PPOConfig:
    settings = {"num_epochs": 2, "minibatch_size": 16, "lr": 1e-3}
    settings.update(training)
    return PPOConfig().environment(ActionMaskEnv, env_config=ENV_CONFIG).training(**settings)


def masking_module(inference_only: bool = False) -> ActionMaskingTorchRLModule:
    torch.manual_seed(0)
    return ActionMaskingTorchRLModule(
        observation_space=MASK_SPACE,
        action_space=ENV_CONFIG["action_space"],
        inference_only=inference_only,
        model_config={"fcnet_hiddens": [16], "head_fcnet_hiddens": [16]},
    )


def masked_episodes(module_view: TorchModuleView, num_steps: int, seed: int) -> list:
    """Episodes of `ActionMaskEnv` played with the view's exploration inputs (actions drawn
    from the masked logits, so the env's check that every action is allowed holds)."""
    np.random.seed(seed)
    rng = np.random.default_rng(seed)
    env = ActionMaskEnv({**ENV_CONFIG, "max_episode_len": 7})
    env.action_space.seed(seed)
    episodes: list[SingleAgentEpisode] = []
    episode = SingleAgentEpisode()
    obs, info = env.reset(seed=seed)
    episode.add_env_reset(obs, info)
    for _ in range(num_steps):
        batch = module_view.spaces.preprocess(
            {key: np.asarray(value)[None] for key, value in obs.items()}
        )
        inputs = module_view.dist_inputs(batch, explore=True)
        actions, logp = module_view.dist.act(inputs, rng, True)
        action = int(actions[0])
        obs, reward, terminated, truncated, info = env.step(action)
        episode.add_env_step(
            obs,
            action,
            float(reward),
            info,
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs={
                Columns.ACTION_LOGP: float(logp[0]),
                Columns.ACTION_DIST_INPUTS: inputs[0],
            },
        )
        if terminated or truncated:
            episodes.append(episode.to_numpy())
            episode = SingleAgentEpisode()
            obs, info = env.reset()
            episode.add_env_reset(obs, info)
    if len(episode) > 0:
        episodes.append(episode.to_numpy())
    return episodes


# -- spaces and batches -----------------------------------------------------------------------
def test_space_info_keeps_dict_observations_nested_for_torch_modules():
    space = gym.spaces.Dict(
        {"pos": gym.spaces.Box(-1, 1, (2,), np.float64), "id": gym.spaces.Discrete(3)}
    )
    spaces = SpaceInfo.from_spaces(space, gym.spaces.Discrete(2), nested_obs=True)
    assert spaces.observation_space() is space and spaces.obs_dim == 5
    batch = spaces.preprocess({"pos": np.zeros((4, 2)), "id": np.array([0, 2, 1, 0])})
    assert batch["pos"].dtype == np.float32 and batch["pos"].shape == (4, 2)
    assert batch["id"].dtype.kind == "i" and batch["id"].tolist() == [0, 2, 1, 0]
    # The Box hot path is untouched: a float32 batch of rows comes back as it is.
    box = SpaceInfo.from_spaces(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2))
    rows = np.ones((4, 3), np.float32)
    assert box.preprocess(rows) is rows


def test_numpy_modules_refuse_dict_observations_naming_the_ways_out():
    with pytest.raises(ValueError, match="FlattenObservations.*framework\\('torch'\\)"):
        SpaceInfo.from_spaces(MASK_SPACE, gym.spaces.Discrete(NUM_ACTIONS))
    nested = SpaceInfo.from_spaces(MASK_SPACE, gym.spaces.Discrete(NUM_ACTIONS), nested_obs=True)
    with pytest.raises(ValueError, match="PolicyModule: observation space Dict"):
        PolicyModule(nested, {})
    with pytest.raises(ValueError, match="default encoders take"):
        DefaultPPOTorchRLModule(observation_space=MASK_SPACE, action_space=gym.spaces.Discrete(2))


def test_nested_columns_flatten_for_minibatches_and_nest_back():
    column = {"a": np.arange(6).reshape(3, 2), "b": (np.zeros(3), np.ones((3, 1)))}
    flat = flatten_column("obs", column)
    assert sorted(flat) == ["obs/a", "obs/b/0", "obs/b/1"]
    rows = {key: value[[2, 0]] for key, value in flat.items()}
    nested = nest_column("obs", column, rows)
    assert nested["a"].tolist() == [[4, 5], [0, 1]] and isinstance(nested["b"], tuple)
    # Rows of an episode not yet numpy'ized are batched before concatenation.
    joined = tree_concat([[{"x": np.zeros(2)}, {"x": np.ones(2)}], {"x": np.full((1, 2), 2.0)}])
    assert joined["x"][:, 0].tolist() == [0.0, 1.0, 2.0]
    # A checkpoint's plain data (tuples stored as lists) rebuilt as the space nests it.
    space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (2,))))
    restored = batch_from_state([[1, 0], [[0.5, 0.5], [0.0, 1.0]]], space)
    assert isinstance(restored, tuple) and restored[1].shape == (2, 2)
    set_row(restored, 1, (1, np.array([0.25, 0.75])))
    assert restored[0].tolist() == [1, 1] and restored[1][1].tolist() == [0.25, 0.75]


# -- RLlib's action-masking module ------------------------------------------------------------
def test_action_masking_module_masks_exploration_and_inference_logits():
    module = masking_module(inference_only=True)
    assert module.observation_space is MASK_SPACE
    assert module.observation_space_with_mask["observations"].shape == (5,)
    view = TorchModuleView(
        module, SpaceInfo.from_spaces(MASK_SPACE, module.action_space, nested_obs=True)
    )
    mask = np.zeros((2, NUM_ACTIONS), np.float32)
    mask[0, [0, 3, 5]] = mask[1, 4] = 1.0
    batch = view.spaces.preprocess(
        {"action_mask": mask, "observations": np.zeros((2, 5), np.float64)}
    )
    for explore in (True, False):
        inputs = view.dist_inputs(batch, explore=explore)
        assert inputs.shape == (2, NUM_ACTIONS)
        assert np.all(inputs[mask == 0] < FLOAT_MIN / 2) and np.all(inputs[mask == 1] > -1e3)
    actions, _ = view.dist.act(view.dist_inputs(batch), np.random.default_rng(0), True)
    assert mask[np.arange(2), actions].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="'obs' has no 'action_mask'"):
        masking_module().forward_inference({Columns.OBS: {"observations": torch.zeros(1, 5)}})
    with pytest.raises(ValueError, match="requires a gymnasium Dict observation space"):
        ActionMaskingTorchRLModule(
            observation_space=gym.spaces.Box(-1, 1, (5,)), action_space=gym.spaces.Discrete(2)
        )


def test_torch_learner_trains_on_dict_observations_with_the_mask_column():
    module = masking_module()
    spaces = SpaceInfo.from_spaces(MASK_SPACE, module.action_space, nested_obs=True)
    episodes = masked_episodes(TorchModuleView(module, spaces), 80, seed=3)
    learner = PPOTorchLearner(make_config(), module)
    batch = learner.build_train_batch(episodes)
    # compute_values split the dict observation, as RLlib's GAE connector leaves the batch.
    num_steps = sum(len(ep) for ep in episodes)
    assert batch[Columns.OBS].shape == (num_steps, 5)
    expected_masks = np.concatenate([ep.get_observations()["action_mask"][:-1] for ep in episodes])
    assert np.array_equal(batch["action_mask"], expected_masks)
    before = {k: v.copy() for k, v in module.get_state().items()}
    results = learner.update(episodes)
    assert results["num_env_steps_trained"] == num_steps
    assert all(np.isfinite(float(results[key])) for key in ("total_loss", "entropy", "vf_loss"))
    assert any(not np.array_equal(before[k], v) for k, v in module.get_state().items())


class DictReadingModule(DefaultPPOTorchRLModule):
    """A user's module that reads the dict observation itself in every forward pass (its
    networks are built for the "observations" sub-space): the learner must hand it the
    nested observations in every minibatch."""

    seen_train_obs: list = []

    def __init__(self, *, observation_space, **kwargs):
        self.dict_space = observation_space
        super().__init__(observation_space=observation_space["observations"], **kwargs)

    def _plain(self, batch):
        obs = batch[Columns.OBS]
        assert isinstance(obs, dict) and isinstance(obs["observations"], torch.Tensor)
        return {**batch, Columns.OBS: obs["observations"]}

    def _forward(self, batch, **kwargs):
        return super()._forward(self._plain(batch), **kwargs)

    def _forward_train(self, batch, **kwargs):
        self.seen_train_obs.append(batch[Columns.OBS])
        return super()._forward_train(self._plain(batch), **kwargs)

    def compute_values(self, batch, embeddings=None):
        return super().compute_values(self._plain(batch), embeddings)


def test_torch_learner_hands_nested_minibatches_to_a_dict_reading_module():
    torch.manual_seed(1)
    module = DictReadingModule(
        observation_space=MASK_SPACE,
        action_space=ENV_CONFIG["action_space"],
        model_config={"fcnet_hiddens": [8], "head_fcnet_hiddens": [8]},
    )
    spaces = SpaceInfo.from_spaces(MASK_SPACE, module.action_space, nested_obs=True)
    view = TorchModuleView(module, spaces)
    # Played by the masking module (this one does not mask: the env would refuse its actions).
    episodes = masked_episodes(TorchModuleView(masking_module(True), spaces), 48, seed=5)
    module.seen_train_obs.clear()
    results = PPOTorchLearner(make_config(num_epochs=1), view).update(episodes)
    assert np.isfinite(float(results["total_loss"]))
    # Three minibatches of 16 rows, each a dict of tensors with both leaves.
    assert len(module.seen_train_obs) == 3
    for obs in module.seen_train_obs:
        assert obs["action_mask"].shape == (16, NUM_ACTIONS)
        assert obs["observations"].shape == (16, 5)


class ConcatLeavesModule(TorchRLModule, ValueFunctionAPI):
    """A module over any Dict observation of Box leaves: the leaves concatenated (by key)."""

    def setup(self):
        self.body = nn.Sequential(
            nn.Linear(gym.spaces.flatdim(self.observation_space), 16), nn.Tanh()
        )
        self.pi = nn.Linear(16, self.action_space.n)
        self.vf = nn.Linear(16, 1)

    def _features(self, batch):
        obs = batch[Columns.OBS]
        return self.body(torch.cat([obs[key].flatten(1).float() for key in sorted(obs)], -1))

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self.pi(self._features(batch))}

    def compute_values(self, batch, embeddings=None):
        return self.vf(self._features(batch)).squeeze(-1)


def test_a_connector_s_dict_output_reaches_a_torch_module_nested():
    """RLlib's PrevActionsPrevRewards makes Dict observations; a torch module reads them."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=2,
            env_to_module_connector=lambda env, spaces, device: PrevActionsPrevRewards(),
        )
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ConcatLeavesModule))
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=2)
    )
    algo = config.build()
    try:
        result = algo.train()
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
        space = algo.get_module().observation_space
        assert isinstance(space, gym.spaces.Dict) and "prev_n_actions" in space.spaces
    finally:
        algo.stop()


# -- end to end: worker processes, evaluation in parallel ------------------------------------
@pytest.mark.slow
def test_ppo_trains_the_action_masking_module_with_parallel_evaluation():
    config = (
        make_config(train_batch_size=128, minibatch_size=64, num_epochs=1)
        .environment(env_config={**ENV_CONFIG, "action_space": gym.spaces.Discrete(100)})
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule,
                model_config={"head_fcnet_hiddens": [16], "fcnet_hiddens": [16]},
            )
        )
        .env_runners(num_env_runners=1, num_envs_per_env_runner=2)
        .evaluation(
            evaluation_num_env_runners=1,
            evaluation_interval=1,
            evaluation_parallel_to_training=True,
            evaluation_duration=2,
        )
        .debugging(seed=11)
    )
    algo = config.build()
    try:
        result = algo.train()
        # Any action the mask rules out would have made the env raise (and the run fail).
        assert result["env_runners"]["num_env_steps_sampled"] >= 128
        assert result["evaluation"]["env_runners"]["num_episodes"] >= 2
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
        obs, _ = ActionMaskEnv({**ENV_CONFIG, "action_space": gym.spaces.Discrete(100)}).reset()
        action = algo.compute_single_action(obs, explore=False)
        assert obs["action_mask"][action] == 1.0
    finally:
        algo.stop()
