"""Recurrent default torch modules (`use_lstm=True`) over the spaces RLlib 2.60 trains them on:
Tuple and Dict action spaces (the learner's actions come as sequences of flat rows
`(B, T, columns)`, which `TorchMultiDistribution.logp` splits along their last axis), and image
observations, where RLlib's catalog makes its CNN the LSTM's tokenizer (the CNN runs on each
frame, the LSTM reads its flattened features, then the heads). The layouts and parameter counts
below are those RLlib 2.60's `DefaultPPOTorchRLModule` / `PPOCatalog` build for the same spaces
and model config (measured with the ray 2.60 package)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

import trainer  # noqa: F401 - registers localrl/TinyCatch-v0
from trainer import PPOConfig
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.compat.rllib_utils import Columns
from trainer.core.models import DefaultModelConfig
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack
from trainer.torch_rl.cnn_encoder import CNNEncoder
from trainer.torch_rl.distributions import action_dist_cls_for

BOX2 = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
TUPLE_ACTIONS = gym.spaces.Tuple((gym.spaces.Discrete(3), BOX2))
DICT_ACTIONS = gym.spaces.Dict(
    {
        "move": gym.spaces.Box(-1.0, 1.0, (2, 2), np.float32),
        "pick": gym.spaces.Discrete(2),
        "tools": gym.spaces.MultiDiscrete([2, 3]),
    }
)


def shapes(module: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    return {key: tuple(value.shape) for key, value in module.state_dict().items()}


def initial_state(module: DefaultPPOTorchRLModule, batch: int = 1) -> Any:
    def batched(tree: Any) -> Any:
        if isinstance(tree, dict):
            return {key: batched(value) for key, value in tree.items()}
        return tree.unsqueeze(0).expand(batch, *tree.shape).contiguous()

    return batched(module.get_initial_state())


# -- Tuple / Dict actions ------------------------------------------------------------------------


def action_rows(actions: Any) -> torch.Tensor:
    """Nested actions `(B, T, ...)` as the learner's flat rows `(B, T, columns)`: the leaves in
    dm-tree's order (dict keys sorted), a Discrete leaf one column."""

    def leaves(tree: Any) -> list[torch.Tensor]:
        if isinstance(tree, dict):
            return [leaf for key in sorted(tree) for leaf in leaves(tree[key])]
        if isinstance(tree, tuple):
            return [leaf for item in tree for leaf in leaves(item)]
        return [tree]

    return torch.cat(
        [
            (leaf.unsqueeze(-1) if leaf.dim() == 2 else leaf.flatten(2)).float()
            for leaf in leaves(actions)
        ],
        dim=-1,
    )


@pytest.mark.parametrize("space", [TUPLE_ACTIONS, DICT_ACTIONS], ids=["tuple", "dict"])
def test_multi_distribution_logp_of_action_sequences_is_the_per_step_logp(space):
    """Rows `(B, T, columns)`: each step's log-likelihood, as of the same rows `(B * T, ...)`."""
    torch.manual_seed(0)
    dist_cls = action_dist_cls_for(space)
    inputs = torch.randn(3, 4, dist_cls.required_input_dim(space))
    dist = dist_cls.from_logits(inputs)
    actions = dist.sample()
    flat_dist = dist_cls.from_logits(inputs.reshape(12, -1))
    rows = action_rows(actions)
    assert rows.shape[:2] == (3, 4)
    per_step = flat_dist.logp(rows.reshape(12, -1)).reshape(3, 4)
    sequences = dist.logp(rows)
    assert sequences.shape == (3, 4)
    torch.testing.assert_close(sequences, per_step)
    # The nested actions give the same.
    torch.testing.assert_close(dist.logp(actions), sequences)
    with pytest.raises(ValueError, match="last dimension"):
        dist.logp(rows[..., :-1])


def test_recurrent_module_for_tuple_actions_has_rllibs_layout():
    """RLlib 2.60 (obs Box(3,), Tuple(Discrete(3), Box(2,)), this model config): one shared
    encoder (a tokenizer, then the LSTM), a pi head of 3 + 2 * 2 outputs; 8 840 parameters."""
    module = DefaultPPOTorchRLModule(
        observation_space=gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        action_space=TUPLE_ACTIONS,
        model_config={
            "use_lstm": True,
            "lstm_cell_size": 32,
            "fcnet_hiddens": [32],
            "vf_share_layers": True,
        },
    )
    assert shapes(module) == {
        "encoder.encoder.tokenizer.net.mlp.0.weight": (32, 3),
        "encoder.encoder.tokenizer.net.mlp.0.bias": (32,),
        "encoder.encoder.lstm.weight_ih_l0": (128, 32),
        "encoder.encoder.lstm.weight_hh_l0": (128, 32),
        "encoder.encoder.lstm.bias_ih_l0": (128,),
        "encoder.encoder.lstm.bias_hh_l0": (128,),
        "pi.net.mlp.0.weight": (7, 32),
        "pi.net.mlp.0.bias": (7,),
        "vf.net.mlp.0.weight": (1, 32),
        "vf.net.mlp.0.bias": (1,),
    }
    assert sum(p.numel() for p in module.parameters()) == 8840


class _RememberEnv(gym.Env):
    """The first observation's sign says which discrete choice pays; composite actions."""

    def __init__(self, config: dict | None = None):
        config = config or {}
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = config.get("action_space", TUPLE_ACTIONS)
        self._rng = np.random.default_rng(0)

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._t, self._bit = 0, int(self._rng.integers(2))
        return np.array([2.0 * self._bit - 1.0, 0.0, 0.0], np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._t += 1
        choice = action[0] if isinstance(action, tuple) else action["pick"]
        reward = float(int(choice) == self._bit)
        return np.zeros(3, np.float32), reward, self._t >= 6, False, {}


class _TwoRememberers(MultiAgentEnv):
    def __init__(self, config: dict | None = None):
        super().__init__()
        self.agents = self.possible_agents = ["a0", "a1"]
        self._envs = {agent: _RememberEnv(config) for agent in self.agents}
        self.observation_spaces = {a: env.observation_space for a, env in self._envs.items()}
        self.action_spaces = {a: env.action_space for a, env in self._envs.items()}

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        return {
            agent: env.reset(seed=None if seed is None else seed + i)[0]
            for i, (agent, env) in enumerate(self._envs.items())
        }, {}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminateds, truncateds = {}, {}, {}, {}
        for agent, action in actions.items():
            obs[agent], rewards[agent], terminateds[agent], truncateds[agent], _ = self._envs[
                agent
            ].step(action)
        terminateds["__all__"] = all(terminateds.values())
        truncateds["__all__"] = False
        return obs, rewards, terminateds, truncateds, {}


def _weights(module: torch.nn.Module) -> dict[str, np.ndarray]:
    return {key: value.detach().numpy().copy() for key, value in module.state_dict().items()}


@pytest.mark.parametrize(
    "multi_agent, space",
    [(False, TUPLE_ACTIONS), (True, DICT_ACTIONS)],
    ids=["single-agent-tuple", "multi-agent-dict"],
)
def test_ppo_trains_composite_actions_with_an_lstm(multi_agent, space):
    config = (
        PPOConfig()
        .environment(
            _TwoRememberers if multi_agent else _RememberEnv, env_config={"action_space": space}
        )
        .framework("torch")
        .env_runners(num_env_runners=0, rollout_fragment_length=48)
        .training(train_batch_size=48, minibatch_size=24, num_epochs=1)
        .rl_module(model_config={"use_lstm": True, "lstm_cell_size": 8, "fcnet_hiddens": [8]})
        .debugging(seed=1)
    )
    module_ids = ["p0", "p1"] if multi_agent else ["default_policy"]
    if multi_agent:
        config = config.multi_agent(
            policies=set(module_ids),
            policy_mapping_fn=lambda agent_id, *args, **kwargs: f"p{agent_id[-1]}",
        )
    algo = config.build()
    try:
        before = {mid: _weights(algo.get_module(mid)) for mid in module_ids}
        result = algo.train()
        for mid in module_ids:
            module = algo.get_module(mid)
            assert module.is_stateful() and module.action_space == space
            after = _weights(module)
            assert any(not np.array_equal(after[k], before[mid][k]) for k in after)
            learner = result["learners"][mid]
            assert np.isfinite(learner["total_loss"]), learner
    finally:
        algo.stop()


# -- images ----------------------------------------------------------------------------------------


def atari_like(dim: int) -> gym.Env:
    """Atari-wrapped frames of the localrl Atari-like game: `(dim, dim, 1)` floats in [-1, 1]."""
    return wrap_atari_for_new_api_stack(gym.make("localrl/TinyCatch-v0"), dim=dim, framestack=None)


def test_lstm_over_images_tokenizes_each_frame_with_rllibs_cnn():
    """RLlib 2.60 for 10x10x3 images, `use_lstm` and its defaults otherwise: the 10-pixel
    preset CNN ([16, 5, 2], [32, 5, 2]: 3x3x32 features) as the tokenizer of the one shared
    LSTM of 256 units; 574 437 parameters."""
    module = DefaultPPOTorchRLModule(
        observation_space=gym.spaces.Box(0.0, 1.0, (10, 10, 3), np.float32),
        action_space=gym.spaces.Discrete(4),
        model_config={"use_lstm": True},
    )
    assert isinstance(module.encoder.encoder.tokenizer, CNNEncoder)
    assert shapes(module) == {
        "encoder.encoder.tokenizer.net.0.cnn.1.weight": (16, 3, 5, 5),
        "encoder.encoder.tokenizer.net.0.cnn.1.bias": (16,),
        "encoder.encoder.tokenizer.net.0.cnn.4.weight": (32, 16, 5, 5),
        "encoder.encoder.tokenizer.net.0.cnn.4.bias": (32,),
        "encoder.encoder.lstm.weight_ih_l0": (1024, 288),
        "encoder.encoder.lstm.weight_hh_l0": (1024, 256),
        "encoder.encoder.lstm.bias_ih_l0": (1024,),
        "encoder.encoder.lstm.bias_hh_l0": (1024,),
        "pi.net.mlp.0.weight": (4, 256),
        "pi.net.mlp.0.bias": (4,),
        "vf.net.mlp.0.weight": (1, 256),
        "vf.net.mlp.0.bias": (1,),
    }
    assert sum(p.numel() for p in module.parameters()) == 574437


def test_lstm_over_images_with_conv_filters_and_separate_critic_counts_as_rllib():
    """RLlib 2.60, uint8 42x42x4 frames, Tuple actions, `conv_filters` given and
    `vf_share_layers=False`: a CNN and an LSTM per encoder; 257 631 parameters."""
    module = DefaultPPOTorchRLModule(
        observation_space=gym.spaces.Box(0, 255, (42, 42, 4), np.uint8),
        action_space=gym.spaces.Tuple((gym.spaces.Discrete(2), BOX2)),
        model_config={
            "use_lstm": True,
            "lstm_cell_size": 32,
            "fcnet_hiddens": [32],
            "conv_filters": [[4, 3, 2], [8, 3, 2]],
            "vf_share_layers": False,
        },
    )
    for name in ("actor_encoder", "critic_encoder"):
        encoder = getattr(module.encoder, name)
        assert isinstance(encoder.tokenizer, CNNEncoder)
        assert encoder.lstm.input_size == 11 * 11 * 8  # 42 -> 21 -> 11
    assert sum(p.numel() for p in module.parameters()) == 257631


@pytest.mark.parametrize(
    "dim, model_config",
    [
        (64, {}),  # RLlib's defaults: its 64-pixel preset CNN, an LSTM of 256 units
        (42, {"conv_filters": [[16, 4, 2], [32, 4, 2], [64, 11, 1, "valid"]]}),
    ],
    ids=["64-preset", "42-conv_filters"],
)
def test_atari_frames_roll_out_and_train_through_the_cnn_and_lstm(dim, model_config):
    """As RLlib's PPO module test does with Atari frames and `use_lstm`: exploration and
    inference steps of one frame with the state in, then `forward_train` over the ten steps
    as one sequence from the initial state, a loss of the action log-likelihoods and values,
    and a gradient for every parameter."""
    torch.manual_seed(0)
    env = atari_like(dim)
    module = DefaultPPOTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config=DefaultModelConfig(use_lstm=True, **model_config),
    )
    num_actions = int(env.action_space.n)
    cell = module.encoder.encoder.cell_size
    dist_cls = module.get_exploration_action_dist_cls()
    obs, _ = env.reset(seed=0)
    state = initial_state(module)
    frames, actions, rewards = [], [], []
    for step in range(10):
        batch = {Columns.OBS: torch.as_tensor(obs)[None, None], Columns.STATE_IN: state}
        forward = module.forward_exploration if step % 2 else module.forward_inference
        out = forward(batch)
        assert out[Columns.ACTION_DIST_INPUTS].shape == (1, 1, num_actions)
        assert {key: tuple(v.shape) for key, v in out[Columns.STATE_OUT].items()} == {
            "h": (1, 1, cell),
            "c": (1, 1, cell),
        }
        state = out[Columns.STATE_OUT]
        action = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS]).sample()
        frames.append(obs)
        actions.append(int(action[0, 0]))
        obs, reward, terminated, truncated, _ = env.step(actions[-1])
        rewards.append(reward)
        if terminated or truncated:
            obs, _ = env.reset()
    train_batch = {
        Columns.OBS: torch.as_tensor(np.stack(frames))[None],
        Columns.ACTIONS: torch.as_tensor(actions)[None],
        Columns.REWARDS: torch.as_tensor(rewards, dtype=torch.float32)[None],
        Columns.STATE_IN: initial_state(module),
    }
    module.train()
    out = module.forward_train(train_batch)
    assert out[Columns.ACTION_DIST_INPUTS].shape == (1, 10, num_actions)
    values = module.compute_values(train_batch, out[Columns.EMBEDDINGS])
    assert values.shape == (1, 10)
    logp = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS]).logp(train_batch[Columns.ACTIONS])
    advantages = train_batch[Columns.REWARDS] - values
    loss = -(logp * advantages.detach()).mean() + (advantages**2).mean()
    loss.backward()
    assert all(p.grad is not None for p in module.parameters())


def test_lstm_over_images_refuses_what_it_cannot_read():
    """A size without RLlib's preset needs `conv_filters`; observations that are no sequences
    of the module's images are refused naming the shape expected."""
    with pytest.raises(ValueError, match="conv_filters"):
        DefaultPPOTorchRLModule(
            observation_space=gym.spaces.Box(0.0, 1.0, (32, 32, 3), np.float32),
            action_space=gym.spaces.Discrete(2),
            model_config={"use_lstm": True},
        )
    module = DefaultPPOTorchRLModule(
        observation_space=gym.spaces.Box(0.0, 1.0, (10, 10, 3), np.float32),
        action_space=gym.spaces.Discrete(2),
        model_config={"use_lstm": True, "lstm_cell_size": 8},
    )
    with pytest.raises(ValueError, match=r"\(B, T, 10, 10, 3\)"):
        module.forward_inference(
            {Columns.OBS: torch.zeros(1, 1, 8, 10, 3), Columns.STATE_IN: initial_state(module)}
        )


class _FlashEnv(gym.Env):
    """10x10x1 uint8 frames: only the first frame shows which action pays (memory needed)."""

    observation_space = gym.spaces.Box(0, 255, (10, 10, 1), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: Any = None):
        self._rng = np.random.default_rng(0)

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._t, self._bit = 0, int(self._rng.integers(2))
        return np.full((10, 10, 1), 255 * self._bit, np.uint8), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._t += 1
        frame = np.zeros((10, 10, 1), np.uint8)
        return frame, float(int(action) == self._bit), self._t >= 5, False, {}


@pytest.mark.parametrize(
    "extra", [{}, {"lstm_use_prev_action": True, "lstm_use_prev_reward": True}]
)
def test_ppo_with_use_lstm_trains_on_images(extra):
    config = (
        PPOConfig()
        .environment(_FlashEnv)
        .framework("torch")
        .env_runners(num_env_runners=0, rollout_fragment_length=40)
        .training(train_batch_size=40, minibatch_size=20, num_epochs=1)
        .rl_module(model_config={"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 5, **extra})
        .debugging(seed=2)
    )
    algo = config.build()
    try:
        module = algo.get_module()
        encoder = module.encoder.actor_encoder
        assert isinstance(encoder.tokenizer, CNNEncoder)
        # The 10-pixel preset's 3x3x32 features, then the previous action and reward.
        assert encoder.lstm.input_size == 288 + (3 if extra else 0)
        before = _weights(module)
        for _ in range(2):
            result = algo.train()
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
        after = _weights(module)
        assert any(not np.array_equal(after[k], before[k]) for k in after)
        action, state_out, _ = algo.compute_single_action(
            np.zeros((10, 10, 1), np.uint8),
            state=None,
            prev_action=0 if extra else None,
            prev_reward=0.0 if extra else None,
        )
        assert algo.get_module().action_space.contains(int(action))
        assert set(state_out) == {"actor", "critic"}
    finally:
        algo.stop()
