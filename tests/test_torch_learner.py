"""The torch learners (`trainer.torch_rl.learner.TorchLearner`,
`trainer.algorithms.ppo.torch_learner.PPOTorchLearner`) on episodes played in real CartPole.

The module under training is defined here (a TorchRLModule with ValueFunctionAPI and a small
categorical distribution with RLlib's TorchDistribution API), so these tests hold the learner to
the module contract alone, not to the default torch modules.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from trainer import SingleAgentEpisode  # noqa: E402
from trainer.algorithms.ppo.ppo import PPOConfig  # noqa: E402
from trainer.algorithms.ppo.ppo_learner import PPOLearner  # noqa: E402
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner  # noqa: E402
from trainer.checkpoints.codec import pack, unpack  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.apis import ValueFunctionAPI  # noqa: E402
from trainer.core.models import SpaceInfo  # noqa: E402
from trainer.errors import NonFiniteUpdateError, StateError  # noqa: E402
from trainer.torch_rl.learner import GLOBAL_NORM_KEY, clip_gradients  # noqa: E402
from trainer.torch_rl.rl_module import TorchRLModule  # noqa: E402


# -- the module under training --------------------------------------------------------------------
class SmallCategorical:
    """A categorical distribution with RLlib's TorchDistribution API (what the learner uses)."""

    def __init__(self, logits: torch.Tensor):
        self.logits = logits
        self.log_probs = torch.log_softmax(logits, dim=-1)

    @classmethod
    def from_logits(cls, logits: torch.Tensor) -> SmallCategorical:
        return cls(logits)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs) -> int:
        return int(space.n)

    def sample(self) -> torch.Tensor:
        return torch.multinomial(self.log_probs.exp(), 1).squeeze(-1)

    def logp(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        return -(self.log_probs.exp() * self.log_probs).sum(-1)

    def kl(self, other: SmallCategorical) -> torch.Tensor:
        return (self.log_probs.exp() * (self.log_probs - other.log_probs)).sum(-1)

    def to_deterministic(self) -> SmallCategorical:
        return self


class SmallDiagGaussian:
    """A diagonal Gaussian with RLlib's TorchDistribution API: inputs are means then log
    standard deviations."""

    def __init__(self, inputs: torch.Tensor):
        self.mean, self.log_std = torch.chunk(inputs, 2, dim=-1)

    @classmethod
    def from_logits(cls, inputs: torch.Tensor) -> SmallDiagGaussian:
        return cls(inputs)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs) -> int:
        return 2 * int(np.prod(space.shape))

    def sample(self) -> torch.Tensor:
        return self.mean + self.log_std.exp() * torch.randn_like(self.mean)

    def logp(self, actions: torch.Tensor) -> torch.Tensor:
        z = (actions - self.mean) / self.log_std.exp()
        return (-0.5 * z**2 - self.log_std - 0.5 * np.log(2 * np.pi)).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (self.log_std + 0.5 * np.log(2 * np.pi * np.e)).sum(-1)

    def kl(self, other: SmallDiagGaussian) -> torch.Tensor:
        var, other_var = (2 * self.log_std).exp(), (2 * other.log_std).exp()
        return (
            other.log_std
            - self.log_std
            + (var + (self.mean - other.mean) ** 2) / (2 * other_var)
            - 0.5
        ).sum(-1)

    def to_deterministic(self) -> SmallDiagGaussian:
        return self


class SmallPPOModule(TorchRLModule, ValueFunctionAPI):
    """Policy and value networks over a shared encoder (its output goes out as embeddings)."""

    def setup(self) -> None:
        # The width of the EnvRunners' preprocessed observations (one-hot for Discrete).
        obs_dim = SpaceInfo.from_spaces(self.observation_space, self.action_space).obs_dim
        self.encoder = nn.Sequential(nn.Linear(obs_dim, 16), nn.Tanh())
        self.vf = nn.Linear(16, 1)
        self.dist_class = (
            SmallCategorical
            if isinstance(self.action_space, gym.spaces.Discrete)
            else SmallDiagGaussian
        )
        self.pi = nn.Linear(16, self.dist_class.required_input_dim(self.action_space))

    # The distribution classes of the contract (not the default torch distributions).
    def get_inference_action_dist_cls(self) -> type:
        return self.dist_class

    def get_exploration_action_dist_cls(self) -> type:
        return self.dist_class

    def get_train_action_dist_cls(self) -> type:
        return self.dist_class

    def _forward(self, batch: dict) -> dict:
        return {Columns.ACTION_DIST_INPUTS: self.pi(self.encoder(batch[Columns.OBS]))}

    def _forward_train(self, batch: dict) -> dict:
        embeddings = self.encoder(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: self.pi(embeddings), Columns.EMBEDDINGS: embeddings}

    def compute_values(self, batch: dict, embeddings=None) -> torch.Tensor:
        if embeddings is None:
            embeddings = self.encoder(batch[Columns.OBS])
        return self.vf(embeddings).squeeze(-1)


ENV = gym.make("CartPole-v1")


def make_module(seed: int = 0) -> SmallPPOModule:
    torch.manual_seed(seed)
    return SmallPPOModule(observation_space=ENV.observation_space, action_space=ENV.action_space)


def make_config(**training) -> PPOConfig:
    settings = {"num_epochs": 3, "minibatch_size": 32, "lr": 1e-3}
    settings.update(training)
    return PPOConfig().environment("CartPole-v1").debugging(seed=7).training(**settings)


def make_learner(seed: int = 0, **training) -> PPOTorchLearner:
    return PPOTorchLearner(make_config(**training), make_module(seed))


def cartpole_episodes(
    module: SmallPPOModule, num_steps: int, seed: int, env_name: str = "CartPole-v1"
) -> list:
    """Episodes played in `env_name` by `module`'s sampled actions (on observations
    preprocessed as the EnvRunners do), with the action logp and the distribution inputs the
    learner needs; the last one is cut (not terminated)."""
    env = gym.make(env_name)
    spaces = SpaceInfo.from_spaces(env.observation_space, env.action_space)
    generator = torch.Generator().manual_seed(seed)
    obs, _ = env.reset(seed=seed)
    episodes, episode = [], SingleAgentEpisode()
    episode.add_env_reset(obs)
    for _ in range(num_steps):
        with torch.no_grad():
            model_input = torch.from_numpy(spaces.preprocess(np.asarray([obs])))
            logits = module.forward_exploration({Columns.OBS: model_input})[
                Columns.ACTION_DIST_INPUTS
            ][0]
        if isinstance(env.action_space, gym.spaces.Discrete):
            log_probs = torch.log_softmax(logits, -1)
            action = int(torch.multinomial(log_probs.exp(), 1, generator=generator))
            logp = float(log_probs[action])
        else:
            dist = SmallDiagGaussian(logits)
            action = (dist.mean + dist.log_std.exp() * torch.randn(1, generator=generator)).numpy()
            logp = float(dist.logp(torch.from_numpy(action)))
        obs, reward, terminated, truncated, _ = env.step(action)
        episode.add_env_step(
            obs,
            action,
            float(reward),
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs={
                "action_logp": logp,
                "action_dist_inputs": logits.numpy(),
            },
        )
        if terminated or truncated:
            episodes.append(episode.to_numpy())
            obs, _ = env.reset()
            episode = SingleAgentEpisode()
            episode.add_env_reset(obs)
    if len(episode) > 0:
        episodes.append(episode.to_numpy())
    return episodes


def weights(learner: PPOTorchLearner) -> dict[str, np.ndarray]:
    """A copy of the module's weights (its get_state arrays may share the parameters' memory)."""
    return {key: np.array(value) for key, value in learner.module.get_state().items()}


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def fixed_batch(learner: PPOTorchLearner, episodes: list) -> dict[str, np.ndarray]:
    from trainer.algorithms.ppo.ppo_learner import standardize_advantages

    batch = learner.build_train_batch(episodes)
    standardize_advantages(batch)
    return batch


# -- the loss ---------------------------------------------------------------------------------
def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_loss_terms_match_a_hand_computation_on_a_tiny_batch():
    config = make_config(
        clip_param=0.2, vf_clip_param=0.5, vf_loss_coeff=0.7, entropy_coeff=0.05, kl_coeff=0.3
    )
    learner = PPOTorchLearner(config, make_module(1))
    episodes = cartpole_episodes(make_module(2), 6, seed=3)  # a different behaviour policy
    batch = {k: v[:6] for k, v in learner.build_train_batch(episodes).items()}
    # Advantages and targets chosen so that both clip sides and the value clip are active.
    batch["advantages"] = np.array([1.5, -2.0, 0.3, -0.1, 2.5, -1.0], np.float32)
    batch["value_targets"] = np.array([0.0, 3.0, -2.0, 0.1, 1.0, 5.0], np.float32)
    batch["action_logp"] = batch["action_logp"] + np.array(
        [0.4, -0.4, 0.0, 0.3, -0.5, 0.2], np.float32
    )

    tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
    fwd_out = learner.module.forward_train(tensors)
    total = learner.compute_loss_for_module(
        module_id="default_policy", config=config, batch=tensors, fwd_out=fwd_out
    )
    stats = {k: float(v.detach()) for k, v in learner.loss_stats.items()}

    # By hand, in numpy, from the module's outputs.
    with torch.no_grad():
        logits = fwd_out[Columns.ACTION_DIST_INPUTS].numpy()
        values = learner.module.compute_values(tensors).numpy()
    logp_all = _log_softmax(logits.astype(np.float64))
    old_logp_all = _log_softmax(batch["action_dist_inputs"].astype(np.float64))
    actions = batch["actions"].astype(int)
    logp = logp_all[np.arange(6), actions]
    ratio = np.exp(logp - batch["action_logp"])
    adv = batch["advantages"]
    surrogate = np.minimum(adv * ratio, adv * np.clip(ratio, 0.8, 1.2))
    assert (np.clip(ratio, 0.8, 1.2) != ratio).any()  # the clip is exercised
    vf = (values - batch["value_targets"]) ** 2
    vf_clipped = np.minimum(vf, 0.5)
    assert (vf > 0.5).any() and (vf < 0.5).any()
    entropy = -(np.exp(logp_all) * logp_all).sum(-1)
    kl = (np.exp(old_logp_all) * (old_logp_all - logp_all)).sum(-1)
    targets = batch["value_targets"].astype(np.float64)
    explained = max(-1.0, 1 - np.var(targets - values, ddof=1) / (np.var(targets, ddof=1) + 1e-6))
    expected_total = np.mean(-surrogate + 0.7 * vf_clipped - 0.05 * entropy) + 0.3 * np.mean(kl)

    assert float(total.detach()) == pytest.approx(expected_total, rel=1e-5, abs=1e-6)
    assert stats["policy_loss"] == pytest.approx(-surrogate.mean(), rel=1e-5, abs=1e-6)
    assert stats["vf_loss"] == pytest.approx(vf_clipped.mean(), rel=1e-5)
    assert stats["vf_loss_unclipped"] == pytest.approx(vf.mean(), rel=1e-5)
    assert stats["entropy"] == pytest.approx(entropy.mean(), rel=1e-5)
    assert stats["mean_kl_loss"] == pytest.approx(kl.mean(), rel=1e-4, abs=1e-7)
    assert stats["vf_explained_var"] == pytest.approx(explained, rel=1e-4, abs=1e-6)


def test_a_loss_mask_averages_over_the_masked_in_rows_only():
    learner = make_learner(entropy_coeff=0.01)
    batch = fixed_batch(learner, cartpole_episodes(make_module(2), 40, seed=3))
    mask = np.zeros(40, bool)
    mask[::3] = True

    def loss_and_stats(rows: dict) -> tuple[float, dict]:
        tensors = {k: torch.from_numpy(v) for k, v in rows.items()}
        total = learner.compute_loss_for_module(
            module_id="default_policy",
            config=learner.config,
            batch=tensors,
            fwd_out=learner.rl_module.forward_train(tensors),
        )
        return float(total.detach()), {k: float(v.detach()) for k, v in learner.loss_stats.items()}

    masked_total, masked = loss_and_stats({**batch, Columns.LOSS_MASK: mask})
    subset_total, subset = loss_and_stats({k: v[mask] for k, v in batch.items()})
    assert masked_total == pytest.approx(subset_total, rel=1e-5)
    for key in ("policy_loss", "vf_loss", "vf_loss_unclipped", "entropy", "mean_kl_loss"):
        assert masked[key] == pytest.approx(subset[key], rel=1e-5, abs=1e-7), key


def test_loss_without_kl_term_and_without_critic():
    config = make_config(use_kl_loss=False, use_critic=False, entropy_coeff=0.0)
    learner = PPOTorchLearner(config, make_module(1))
    batch = fixed_batch(learner, cartpole_episodes(make_module(1), 40, seed=0))
    tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
    fwd_out = learner.module.forward_train(tensors)
    total = learner.compute_loss_for_module(
        module_id="default_policy", config=config, batch=tensors, fwd_out=fwd_out
    )
    assert float(learner.loss_stats["mean_kl_loss"]) == 0.0
    assert float(learner.loss_stats["vf_loss"]) == 0.0
    # Only the surrogate is left, and the value head gets no gradient.
    policy_loss = float(learner.loss_stats["policy_loss"].detach())
    assert float(total.detach()) == pytest.approx(policy_loss, rel=1e-6)
    total.backward()
    assert learner.module.vf.weight.grad is None
    # Without a critic, GAE runs on zero values: the targets are the advantages.
    raw = learner.build_train_batch(cartpole_episodes(make_module(1), 40, seed=0))
    np.testing.assert_array_equal(raw["value_targets"], raw["advantages"])


class NoEmbeddingsModule(SmallPPOModule):
    """_forward_train without Columns.EMBEDDINGS: compute_values gets embeddings=None."""

    def _forward_train(self, batch: dict) -> dict:
        return {Columns.ACTION_DIST_INPUTS: self.pi(self.encoder(batch[Columns.OBS]))}


def test_a_module_without_embeddings_gets_the_same_update():
    with_embeddings = make_learner()
    torch.manual_seed(0)
    module = NoEmbeddingsModule(
        observation_space=ENV.observation_space, action_space=ENV.action_space
    )
    without = PPOTorchLearner(make_config(), module)
    assert same_weights(weights(with_embeddings), weights(without))
    episodes = cartpole_episodes(module, 100, seed=12)
    a, b = with_embeddings.update(episodes), without.update(episodes)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), key


class ModuleView:
    """What the Algorithm holds for a torch module (as TorchModuleView): the TorchRLModule
    under `rl_module` and the samplers' `spaces`."""

    def __init__(self, rl_module: TorchRLModule):
        self.rl_module = rl_module
        self.spaces = SpaceInfo.from_spaces(rl_module.observation_space, rl_module.action_space)


def test_a_view_of_the_module_is_kept_and_its_torch_module_trained():
    plain = make_learner()
    view = ModuleView(make_module(0))
    viewed = PPOTorchLearner(make_config(), view)
    assert viewed.module is view and viewed.rl_module is view.rl_module
    assert viewed.spaces is view.spaces
    episodes = cartpole_episodes(view.rl_module, 100, seed=13)
    assert plain.update(episodes) == viewed.update(episodes)
    assert same_weights(
        weights(plain), {k: np.array(v) for k, v in view.rl_module.get_state().items()}
    )
    assert viewed.get_state()["module"].keys() == view.rl_module.state_dict().keys()


def test_discrete_observations_reach_the_module_one_hot_as_the_samplers_give_them():
    env = gym.make("FrozenLake-v1")
    torch.manual_seed(0)
    module = SmallPPOModule(observation_space=env.observation_space, action_space=env.action_space)
    config = make_config().environment("FrozenLake-v1")
    learner = PPOTorchLearner(config, module)
    episodes = cartpole_episodes(module, 120, seed=14, env_name="FrozenLake-v1")
    batch = learner.build_train_batch(episodes)
    assert batch["obs"].shape == (120, 16) and batch["obs"].dtype == np.float32
    np.testing.assert_array_equal(batch["obs"].sum(1), np.ones(120, np.float32))
    before = weights(learner)
    results = learner.update(episodes)
    assert np.isfinite(results["total_loss"]) and not same_weights(before, weights(learner))


def test_continuous_actions_train_on_pendulum():
    env = gym.make("Pendulum-v1")
    torch.manual_seed(0)
    module = SmallPPOModule(observation_space=env.observation_space, action_space=env.action_space)
    learner = PPOTorchLearner(make_config(lr=3e-3).environment("Pendulum-v1"), module)
    episodes = cartpole_episodes(module, 150, seed=15, env_name="Pendulum-v1")
    batch = fixed_batch(learner, episodes)
    assert batch["actions"].shape == (150, 1) and batch["action_dist_inputs"].shape == (150, 2)
    # The behaviour policy is the module itself: the first ratio is 1, the KL 0.
    first = learner.update_from_batch(batch)
    assert first["mean_kl_loss"] == pytest.approx(0.0, abs=1e-6)
    losses = [learner.update_from_batch(batch)["total_loss"] for _ in range(40)]
    assert losses[-1] < first["total_loss"]
    results = learner.update(episodes)
    assert all(np.isfinite(v) for v in results.values())


# -- updates --------------------------------------------------------------------------------
def test_update_changes_weights_and_reports_the_numpy_learners_keys():
    learner = make_learner()
    episodes = cartpole_episodes(learner.module, 200, seed=0)
    before = weights(learner)
    results = learner.update(episodes, num_env_steps_sampled_lifetime=200)
    after = weights(learner)
    assert not same_weights(before, after)
    assert all(np.isfinite(v).all() for v in after.values())

    numpy_learner = PPOLearner(
        make_config(), SpaceInfo.from_spaces(ENV.observation_space, ENV.action_space)
    )
    numpy_results = numpy_learner.update(episodes, num_env_steps_sampled_lifetime=200)
    assert set(results) == set(numpy_results)
    assert all(isinstance(v, float) for v in results.values() if not isinstance(v, int))
    assert results["num_env_steps_trained"] == 200 == numpy_results["num_env_steps_trained"]
    assert results["curr_lr"] == pytest.approx(1e-3)
    # float32 values, as RLlib's coefficient tensor reports them
    assert results["curr_kl_coeff"] in [float(np.float32(0.2 * f)) for f in (0.5, 1.0, 1.5)]


def test_repeated_updates_on_a_fixed_batch_lower_the_loss():
    learner = make_learner(lr=3e-3)
    batch = fixed_batch(learner, cartpole_episodes(learner.module, 128, seed=1))
    losses = [learner.update_from_batch(batch)["total_loss"] for _ in range(60)]
    assert losses[-1] < losses[0] - 0.1, losses[::10]
    assert np.mean(losses[-10:]) < np.mean(losses[:10])


@pytest.mark.slow
def test_the_learner_learns_cartpole():
    """Sample with the module, update, repeat: CartPole's episodes grow from ~20 steps."""
    config = make_config(num_epochs=6, minibatch_size=128, lr=3e-3, vf_loss_coeff=0.01)
    learner = PPOTorchLearner(config, make_module(0))
    lengths = []
    for iteration in range(8):
        episodes = cartpole_episodes(learner.rl_module, 1000, seed=iteration)
        lengths.append(np.mean([len(e) for e in episodes if e.is_terminated or e.is_truncated]))
        learner.update(episodes, num_env_steps_sampled_lifetime=1000 * (iteration + 1))
    assert lengths[0] < 40 and max(lengths[-4:]) >= 120, lengths


class NumpyModuleMirror(SmallPPOModule):
    """The numpy default module's networks in torch (separate pi and vf MLPs, tanh), so that
    the numpy learner's weights can be copied in."""

    def setup(self) -> None:
        hidden = self.model_config["hidden"]
        self.pi = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 2))
        self.vf = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.dist_class = SmallCategorical

    def _forward(self, batch: dict) -> dict:
        return {Columns.ACTION_DIST_INPUTS: self.pi(batch[Columns.OBS])}

    _forward_train = _forward

    def compute_values(self, batch: dict, embeddings=None) -> torch.Tensor:
        return self.vf(batch[Columns.OBS]).squeeze(-1)

    @staticmethod
    def key(numpy_name: str) -> str:
        """The state key of a numpy module's parameter ("pi.1.weight" -> "pi.2.weight": the
        Sequential counts its activations)."""
        head, layer, kind = numpy_name.split(".")
        return f"{head}.{int(layer) * 2}.{kind}"


def test_the_torch_and_the_numpy_learner_take_the_same_steps():
    """Both learners on the same networks, episodes and seed: RLlib's loss, clipping, Adam and
    KL adaptation agree to float32 rounding, over several updates."""
    config = make_config(
        num_epochs=4, minibatch_size=64, grad_clip=0.5, entropy_coeff=0.01
    ).rl_module(model_config={"fcnet_hiddens": [8], "vf_share_layers": False})
    spaces = SpaceInfo.from_spaces(ENV.observation_space, ENV.action_space)
    numpy_learner = PPOLearner(config, spaces)
    mirror = NumpyModuleMirror(
        observation_space=ENV.observation_space,
        action_space=ENV.action_space,
        model_config={"hidden": 8},
    )
    names = numpy_learner.module.parameter_names()

    def numpy_weights() -> dict[str, np.ndarray]:
        return {
            NumpyModuleMirror.key(name): value.T if name.endswith("weight") else value
            for name, value in zip(names, numpy_learner.module.parameters(), strict=True)
        }

    mirror.set_state({key: value.copy() for key, value in numpy_weights().items()})
    torch_learner = PPOTorchLearner(config, mirror)
    episodes = cartpole_episodes(mirror, 300, seed=0)
    for _ in range(3):
        expected = numpy_learner.update(episodes)
        results = torch_learner.update(episodes)
        assert results.keys() == expected.keys()
        for key, value in expected.items():
            assert results[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
        ours = weights(torch_learner)
        for key, value in numpy_weights().items():
            np.testing.assert_allclose(ours[key], value, rtol=0, atol=1e-6)
    assert results["gradients_default_optimizer_global_norm"] > 0.5  # the clip was active


def test_same_seed_same_update_and_minibatches_as_drawn_by_the_numpy_learner():
    first, second = make_learner(), make_learner()
    episodes = cartpole_episodes(first.module, 150, seed=4)
    a = first.update(episodes)
    b = second.update(episodes)
    assert a == b and same_weights(weights(first), weights(second))
    # The shuffler is the numpy learner's (same seed stream, same draws).
    numpy_learner = PPOLearner(
        make_config(), SpaceInfo.from_spaces(ENV.observation_space, ENV.action_space)
    )
    numpy_learner.update(episodes)
    assert first.rng.bit_generator.state == numpy_learner.rng.bit_generator.state


# -- gradient clipping ----------------------------------------------------------------------
def _raw_gradients(learner: PPOTorchLearner, batch: dict) -> dict[str, torch.Tensor]:
    tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
    fwd_out = learner.module.forward_train(tensors)
    grads = learner.compute_gradients(learner.compute_losses(fwd_out=fwd_out, batch=tensors))
    return {name: grad.clone() for name, grad in grads.items()}


@pytest.mark.parametrize("mode", ["value", "norm", "global_norm"])
def test_grad_clip_by_each_mode_reaches_the_step(mode):
    limit = 0.05
    learner = make_learner(grad_clip=limit, grad_clip_by=mode)
    batch = fixed_batch(learner, cartpole_episodes(learner.module, 64, seed=2))
    raw = _raw_gradients(learner, batch)
    raw_norm = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in raw.values()])))
    assert raw_norm > limit * 3  # the clip has something to do

    stats = learner.update_from_batch(batch)
    # apply_gradients leaves the clipped gradients on the parameters.
    applied = {name: p.grad.clone() for name, p in learner.named_params.items()}
    assert stats[GLOBAL_NORM_KEY] == pytest.approx(raw_norm, rel=1e-5)
    if mode == "value":
        for name, grad in raw.items():
            torch.testing.assert_close(applied[name], grad.clamp(-limit, limit))
        assert max(float(g.abs().max()) for g in applied.values()) == pytest.approx(limit)
    elif mode == "norm":
        for name, grad in raw.items():
            norm = float(grad.norm())
            expected = grad * (limit / norm) if norm > limit else grad
            torch.testing.assert_close(applied[name], expected)
            assert float(applied[name].norm()) <= limit * (1 + 1e-5)
    else:
        for name, grad in raw.items():
            torch.testing.assert_close(applied[name], grad * (limit / (raw_norm + 1e-6)))
        total = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in applied.values()])))
        assert total == pytest.approx(limit, rel=1e-4)


def test_clip_gradients_leaves_small_gradients_and_rejects_an_unknown_mode():
    small = {"a": torch.tensor([0.01, -0.02]), "b": torch.tensor([[0.005]])}
    for mode in ("value", "norm", "global_norm"):
        grads = {k: v.clone() for k, v in small.items()}
        clip_gradients(grads, grad_clip=1.0, grad_clip_by=mode)
        for key in small:
            torch.testing.assert_close(grads[key], small[key])
    with pytest.raises(ValueError, match="grad_clip_by='abs'"):
        clip_gradients(dict(small), grad_clip=1.0, grad_clip_by="abs")


def test_without_grad_clip_the_raw_gradient_is_applied():
    learner = make_learner(grad_clip=None)
    batch = fixed_batch(learner, cartpole_episodes(learner.module, 64, seed=2))
    raw = _raw_gradients(learner, batch)
    learner.update_from_batch(batch)
    for name, grad in raw.items():
        torch.testing.assert_close(learner.named_params[name].grad, grad)


# -- non-finite updates -------------------------------------------------------------------
@pytest.mark.parametrize("column", ["advantages", "obs"])
def test_a_non_finite_loss_raises_before_the_weights_change(column):
    learner = make_learner()
    episodes = cartpole_episodes(learner.module, 64, seed=5)
    learner.update(episodes)  # the optimizer has state to keep
    batch = fixed_batch(learner, episodes)
    batch[column] = batch[column].copy()
    batch[column][3] = np.nan if column == "advantages" else np.inf
    before = copy.deepcopy(learner.get_state())
    with pytest.raises(NonFiniteUpdateError, match="PPO learner"):
        learner.update_from_batch(batch)
    after = learner.get_state()
    assert same_weights(before["module"], after["module"])
    for name, entries in before["optimizer"]["default_optimizer"]["param_state"].items():
        for key, value in entries.items():
            np.testing.assert_array_equal(
                after["optimizer"]["default_optimizer"]["param_state"][name][key], value
            )


def test_non_finite_observations_in_episodes_stop_the_update():
    learner = make_learner()
    episodes = cartpole_episodes(learner.module, 64, seed=5)
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.array([np.nan, 0, 0, 0], np.float32))
    episode.add_env_step(
        np.zeros(4, np.float32),
        0,
        1.0,
        extra_model_outputs={
            "action_logp": -0.7,
            "action_dist_inputs": np.zeros(2, np.float32),
        },
    )
    before = weights(learner)
    with pytest.raises(NonFiniteUpdateError):
        learner.update(episodes + [episode.to_numpy()])
    assert same_weights(before, weights(learner))


# -- state -----------------------------------------------------------------------------------
def _plain_only(value, where="state"):
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str), f"{where}: key {key!r}"
            _plain_only(item, f"{where}[{key!r}]")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _plain_only(item, f"{where}[{i}]")
    elif isinstance(value, np.ndarray):
        assert value.dtype.kind in "biuf", where
    else:
        assert value is None or type(value) in (str, int, float, bool), (where, type(value))


def test_state_is_plain_data_and_round_trips_bit_identically():
    original = make_learner()
    episodes = cartpole_episodes(original.module, 160, seed=6)
    original.update(episodes, num_env_steps_sampled_lifetime=160)
    state = original.get_state()
    _plain_only(state)
    assert set(state) == {"module", "optimizer", "kl_coeff", "rng"}
    assert set(state["optimizer"]["default_optimizer"]["param_state"]) == set(original.named_params)
    assert set(state["optimizer"]["default_optimizer"]["param_state"]["pi.weight"]) == {
        "exp_avg",
        "exp_avg_sq",
        "step",
    }

    # Through msgpack (the checkpoint format), into a learner built from other weights.
    restored = make_learner(seed=99)
    assert not same_weights(weights(restored), weights(original))
    restored.set_state(unpack(pack(state)))
    assert same_weights(weights(restored), weights(original))

    more = cartpole_episodes(make_module(3), 120, seed=8)
    a = original.update(more, num_env_steps_sampled_lifetime=280)
    b = restored.update(more, num_env_steps_sampled_lifetime=280)
    assert same_weights(weights(original), weights(restored))
    assert a == b
    assert restored.kl_coeff == original.kl_coeff


def test_state_of_a_learner_that_has_not_stepped_round_trips():
    fresh = make_learner()
    state = fresh.get_state()
    assert state["optimizer"]["default_optimizer"]["param_state"] == {}
    other = make_learner(seed=5)
    other.update(cartpole_episodes(other.module, 64, seed=1))
    other.set_state(unpack(pack(state)))  # the stepped learner forgets its optimizer state
    episodes = cartpole_episodes(make_module(4), 96, seed=2)
    assert fresh.update(episodes) == other.update(episodes)
    assert same_weights(weights(fresh), weights(other))


class MomentumSGDLearner(PPOTorchLearner):
    """A learner whose optimizer is not Adam (RLlib's configure_optimizers_for_module hook)."""

    def configure_optimizers_for_module(self, module_id, config):
        params = self.get_parameters(self.rl_module)
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.SGD(params, lr=0.01, momentum=0.9),
            params=params,
        )


def test_another_optimizer_from_the_hook_keeps_its_state_by_parameter_name():
    original = MomentumSGDLearner(make_config(), make_module(0))
    episodes = cartpole_episodes(original.module, 96, seed=3)
    original.update(episodes)
    state = original.get_state()
    _plain_only(state)
    assert set(state["optimizer"]["default_optimizer"]["param_state"]["pi.weight"]) == {
        "momentum_buffer"
    }
    restored = MomentumSGDLearner(make_config(), make_module(1))
    restored.set_state(unpack(pack(state)))
    assert original.update(episodes) == restored.update(episodes)
    assert same_weights(weights(original), weights(restored))
    bad = copy.deepcopy(state)
    bad["optimizer"]["default_optimizer"]["param_state"]["pi.weight"]["momentum_buffer"] = np.zeros(
        3, np.float32
    )
    with pytest.raises(StateError, match="momentum_buffer"):
        restored.check_state(bad)


def test_get_state_is_a_snapshot():
    learner = make_learner()
    episodes = cartpole_episodes(learner.module, 64, seed=6)
    learner.update(episodes)
    state = learner.get_state()
    kept = copy.deepcopy(state)
    learner.update(episodes)
    for name, entries in kept["optimizer"]["default_optimizer"]["param_state"].items():
        for key, value in entries.items():
            np.testing.assert_array_equal(
                state["optimizer"]["default_optimizer"]["param_state"][name][key], value
            )
    assert same_weights(state["module"], kept["module"])


def _damaged_states(state: dict):
    """(what is damaged, state) pairs, each one fault."""

    def damaged(edit):
        copy_ = copy.deepcopy(state)
        edit(copy_)
        return copy_

    yield "missing key", damaged(lambda s: s.pop("rng"))
    yield "missing module weight", damaged(lambda s: s["module"].pop("vf.bias"))
    yield "unknown module weight", damaged(lambda s: s["module"].update(extra=np.zeros(2)))
    yield (
        "module weight shape",
        damaged(lambda s: s["module"].update({"pi.weight": np.zeros((3, 16), np.float32)})),
    )
    yield "module weight type", damaged(lambda s: s["module"].update({"pi.weight": [[0.0]]}))
    yield (
        "module weight NaN",
        damaged(lambda s: s["module"]["vf.weight"].__setitem__((0, 0), np.nan)),
    )
    yield (
        "moment shape",
        damaged(
            lambda s: s["optimizer"]["default_optimizer"]["param_state"]["pi.weight"].update(
                exp_avg=np.zeros(3)
            )
        ),
    )
    yield (
        "negative second moment",
        damaged(
            lambda s: s["optimizer"]["default_optimizer"]["param_state"]["pi.bias"][
                "exp_avg_sq"
            ].__setitem__(0, -1.0)
        ),
    )
    yield (
        "step type",
        damaged(
            lambda s: s["optimizer"]["default_optimizer"]["param_state"]["pi.bias"].update(
                step="12"
            )
        ),
    )
    yield (
        "missing moment",
        damaged(
            lambda s: s["optimizer"]["default_optimizer"]["param_state"]["vf.bias"].pop("exp_avg")
        ),
    )
    yield (
        "unknown optimizer entry",
        damaged(
            lambda s: s["optimizer"]["default_optimizer"]["param_state"]["vf.bias"].update(
                momentum_buffer=np.zeros(1)
            )
        ),
    )
    yield (
        "unknown parameter",
        damaged(
            lambda s: s["optimizer"]["default_optimizer"]["param_state"].update({"head.weight": {}})
        ),
    )
    yield "lr type", damaged(lambda s: s["optimizer"]["default_optimizer"].update(lr=["fast"]))
    yield "lr count", damaged(lambda s: s["optimizer"]["default_optimizer"].update(lr=[1e-3, 1]))
    yield "unknown optimizer", damaged(lambda s: s["optimizer"].update(other={}))
    yield "kl_coeff negative", damaged(lambda s: s.update(kl_coeff=-0.1))
    yield "kl_coeff type", damaged(lambda s: s.update(kl_coeff=None))
    yield "rng", damaged(lambda s: s.update(rng={"bit_generator": "Nope", "state": {}}))
    yield "not a map", []


def test_check_state_rejects_a_damaged_state_and_changes_nothing():
    learner = make_learner()
    episodes = cartpole_episodes(learner.module, 96, seed=9)
    learner.update(episodes)
    state = learner.get_state()
    learner.check_state(state)  # the intact one fits
    reference = pack(learner.get_state())
    for what, bad in _damaged_states(state):
        with pytest.raises(StateError):
            learner.check_state(bad)
            pytest.fail(f"check_state took a state with a damaged {what}")
        with pytest.raises(StateError):
            learner.set_state(bad)
        assert pack(learner.get_state()) == reference, what


# -- learning rate and threads ---------------------------------------------------------------
def test_the_lr_schedule_reaches_the_optimizer():
    learner = make_learner(lr=[[0, 1e-3], [1000, 1e-4]], num_epochs=1, minibatch_size=512)
    episodes = cartpole_episodes(learner.module, 100, seed=10)
    before = weights(learner)
    results = learner.update(episodes, num_env_steps_sampled_lifetime=500)
    assert results["curr_lr"] == pytest.approx(5.5e-4)
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(5.5e-4)
    # Adam's first step moves each weight by about lr (|m_hat / sqrt(v_hat)| = 1).
    largest = max(float(np.abs(weights(learner)[k] - before[k]).max()) for k in before)
    assert largest == pytest.approx(5.5e-4, rel=1e-3)
    results = learner.update(episodes, num_env_steps_sampled_lifetime=5000)
    assert results["curr_lr"] == pytest.approx(1e-4)
    # A constant rate is the config's.
    assert make_learner(lr=2e-4).update(episodes)["curr_lr"] == pytest.approx(2e-4)


def test_an_update_runs_on_one_torch_thread_unless_the_user_sized_the_pools(monkeypatch):
    seen = []
    original = PPOTorchLearner.compute_loss_for_module

    def recording(self, **kwargs):
        seen.append(torch.get_num_threads())
        return original(self, **kwargs)

    monkeypatch.setattr(PPOTorchLearner, "compute_loss_for_module", recording)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    outside = torch.get_num_threads()
    learner = make_learner(num_epochs=1)
    episodes = cartpole_episodes(learner.module, 64, seed=11)
    learner.update(episodes)
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == outside

    seen.clear()
    torch.set_num_threads(2)
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        make_learner(num_epochs=1).update(episodes)
        assert seen and set(seen) == {2}
    finally:
        torch.set_num_threads(outside)


# -- construction ---------------------------------------------------------------------------
def test_an_optimizer_over_other_tensors_is_refused():
    class ForeignOptimizerLearner(PPOTorchLearner):
        def configure_optimizers_for_module(self, module_id, config):
            foreign = [nn.Parameter(torch.zeros(3))]
            self.register_optimizer(
                module_id=module_id, optimizer=torch.optim.Adam(foreign), params=foreign
            )

    with pytest.raises(ValueError, match="not a parameter of the module"):
        ForeignOptimizerLearner(make_config(), make_module(0))

    class ReturnedOptimizerLearner(PPOTorchLearner):
        def configure_optimizers_for_module(self, module_id, config):
            return torch.optim.Adam(self.get_parameters(self.rl_module))

    with pytest.raises(TypeError, match="register_optimizer"):
        ReturnedOptimizerLearner(make_config(), make_module(0))


def test_the_learner_refuses_modules_it_cannot_train():
    inference_only = SmallPPOModule(
        observation_space=ENV.observation_space, action_space=ENV.action_space, inference_only=True
    )
    with pytest.raises(ValueError, match="inference-only"):
        PPOTorchLearner(make_config(), inference_only)

    class PolicyOnly(TorchRLModule):
        def setup(self):
            self.pi = nn.Linear(4, 2)

    with pytest.raises(TypeError, match="ValueFunctionAPI"):
        PPOTorchLearner(
            make_config(),
            PolicyOnly(observation_space=ENV.observation_space, action_space=ENV.action_space),
        )


def test_the_kl_coefficient_is_float32_as_rllibs_tensor():
    """RLlib keeps the adaptive KL coefficient as a float32 tensor: a coefficient set to 0.01
    reports 0.009999999776 before any adaptation (RLlib's own test_kl_coeff_changes reads
    that), here on the numpy and the torch learner alike, and its adaptations stay float32."""
    episodes = cartpole_episodes(make_module(0), 100, seed=0)
    numpy_learner = PPOLearner(
        make_config(kl_coeff=0.01, kl_target=1e9),  # always below half the target: x0.5
        SpaceInfo.from_spaces(ENV.observation_space, ENV.action_space),
    )
    torch_learner = make_learner(kl_coeff=0.01, kl_target=1e-12)  # always above: x1.5
    numpy_coeff = numpy_learner.update(episodes)["curr_kl_coeff"]
    torch_coeff = torch_learner.update(episodes)["curr_kl_coeff"]
    assert numpy_coeff != 0.01 and numpy_coeff == float(np.float32(0.01 * 0.5))
    assert torch_coeff == float(np.float32(np.float32(0.01) * np.float32(1.5)))
