"""SAC's default numpy module (`SACModule`): RLlib 2.60's `DefaultSACRLModule` layout in numpy.

    [obs] -> pi_encoder -> pi -> action_dist_inputs     ([mean, log_std] for Box actions, a
                                                          squashed Gaussian; logits for Discrete)
    Box actions:      [obs, action] -> qf_encoder -> qf -> Q(s, a)
                      qf_encoder: obs -> MLP (fcnet_*), action -> MLP (fcnet_hiddens[:-1] to the
                      latent size), both activated, concatenated (actions first, RLlib's sorted
                      stream names) into E; then fusion layers (fusionnet_*), each after the first
                      fed [h, E], and an output layer fed [h, E], activated, to the latent size
    Discrete actions: [obs] -> qf_encoder (MLP, fcnet_*) -> qf -> Q(s, .)
    twin_q: a second critic, qf_twin_encoder -> qf_twin, alike.

The parameters live in one flat vector in that order: the policy's first, then the critics', so
each optimizer (policy, critic, twin critic) steps a contiguous slice of it, and the target
critics (the learner's copy of this module) follow the critics' slice.

EnvRunners call `dist_inputs` and act with `dist`: `SquashedGaussian` (tanh of a Gaussian draw;
`explore=False` acts with tanh(mean), the squashed distribution's mode) or `Categorical`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from trainer.capabilities import ACTION_SPACES
from trainer.core.apis import QNetAPI
from trainer.core.blas import BlasThreads
from trainer.core.distributions import NumpyCategorical, NumpyDeterministic, NumpyDistribution
from trainer.core.models import (
    FlatParameterModule,
    SpaceInfo,
    activated,
    activated_train,
    check_model_config,
    encoder_mlp,
    head_mlp,
    layer_initializers,
    refuse_torch_only_keys,
)
from trainer.core.nn import (
    MLP,
    Categorical,
    activate_for_backward,
    activate_layer,
    backprop_activation,
    orthogonal,
)
from trainer.errors import UnsupportedValue

#: RLlib's clamp of the squashed Gaussian's log-std (`MIN_LOG_NN_OUTPUT`, `MAX_LOG_NN_OUTPUT`).
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
#: RLlib's margin inside [-1, 1] before an action is unsquashed (`SMALL_NUMBER`).
SQUASH_EPS = 1e-6
_LOG_2PI = math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)
#: Activations after which the default orthogonal weights take gain sqrt(2).
_RELU_LIKE = ("relu", "elu", "swish", "silu")
#: The fusion layers' initialisation (a QR per layer) runs on one BLAS thread, as `MLP`'s does
#: (`trainer.core.nn`): numpy's default pool on a busy 2-core machine took about 1.4 s per
#: (768, 256) QR instead of 20 ms, a minute to build Pendulum's SAC module.
_INIT_THREADS = BlasThreads()


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)) without overflow."""
    return np.logaddexp(0.0, x).astype(x.dtype, copy=False)


class SquashedGaussian:
    """Box actions in [-1, 1]: tanh of a Gaussian draw, inputs `[mean, log_std]` with the
    log-std clamped to [-5, 2] (RLlib's `TorchSquashedGaussian` over [-1, 1]; the EnvRunner maps
    [-1, 1] onto the bounds with `normalize_actions`)."""

    @staticmethod
    def num_inputs(n: int) -> int:
        return 2 * n

    @staticmethod
    def split(inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mean, clamped log-std)."""
        n = inputs.shape[-1] // 2
        return inputs[..., :n], np.minimum(np.maximum(inputs[..., n:], LOG_STD_MIN), LOG_STD_MAX)

    @staticmethod
    def squashed_logp(unsquashed: np.ndarray, mean: np.ndarray, log_std: np.ndarray) -> np.ndarray:
        """log pi(tanh(u)) = log N(u; mean, std) - sum log(1 - tanh(u)^2), the Jacobian term
        written as 2 (log 2 - u - softplus(-2u)) (RLlib's, stable for large |u|)."""
        z = (unsquashed - mean) * np.exp(-log_std)
        gaussian = -0.5 * z * z - log_std - 0.5 * _LOG_2PI
        jacobian = 2.0 * (_LOG_2 - unsquashed - softplus(-2.0 * unsquashed))
        return np.add.reduce(gaussian - jacobian, axis=-1)

    @classmethod
    def act(
        cls, inputs: np.ndarray, rng: np.random.Generator, explore: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        mean, log_std = cls.split(inputs)
        if explore:
            unsquashed = mean + np.exp(log_std) * rng.standard_normal(mean.shape)
        else:
            unsquashed = mean
        unsquashed = unsquashed.astype(np.float32, copy=False)
        actions = np.clip(np.tanh(unsquashed), -1.0, 1.0)
        return actions, cls.squashed_logp(unsquashed, mean, log_std).astype(np.float32)

    @staticmethod
    def logp_and_grads(
        mean: np.ndarray, log_std: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """log pi(a|s) of given actions (kept just inside [-1, 1], as `logp`) and its
        derivatives with respect to the mean, z / std, and to the (clamped) log-std,
        z^2 - 1, where z = (atanh(a) - mean) / std."""
        inside = np.clip(actions, -1.0 + SQUASH_EPS, 1.0 - SQUASH_EPS)
        unsquashed = np.arctanh(inside)
        std = np.exp(log_std)
        z = (unsquashed - mean) / std
        jacobian = 2.0 * (_LOG_2 - unsquashed - softplus(-2.0 * unsquashed))
        logp = np.add.reduce(-0.5 * z * z - log_std - 0.5 * _LOG_2PI - jacobian, axis=-1)
        return logp, z / std, z * z - 1.0

    @classmethod
    def logp(cls, inputs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Exact for interior actions (RLlib's: the action is clipped just inside [-1, 1] and
        unsquashed)."""
        mean, log_std = cls.split(inputs)
        inside = np.clip(np.asarray(actions, dtype=np.float32), -1.0 + SQUASH_EPS, 1.0 - SQUASH_EPS)
        return cls.squashed_logp(np.arctanh(inside), mean, log_std)


class NumpySquashedGaussian(NumpyDistribution):
    """RLlib's `TorchSquashedGaussian` (over [low, high], default [-1, 1]) in numpy; from_logits
    takes `[mean, log_std]`. It has no entropy or KL, as RLlib's has not."""

    def __init__(self, loc: Any, scale: Any, low: float = -1.0, high: float = 1.0):
        self.loc = np.asarray(loc, dtype=np.float32)
        self.scale = np.asarray(scale, dtype=np.float32)
        self.low, self.high = float(low), float(high)

    @classmethod
    def from_logits(
        cls, logits: Any, low: float = -1.0, high: float = 1.0, **kwargs: Any
    ) -> NumpySquashedGaussian:
        mean, log_std = SquashedGaussian.split(np.asarray(logits, dtype=np.float32))
        return cls(mean, np.exp(log_std), low, high)

    @staticmethod
    def required_input_dim(space: Any, **kwargs: Any) -> int:
        return int(np.prod(space.shape, dtype=np.int64)) * 2

    def _squash(self, unsquashed: np.ndarray) -> np.ndarray:
        unit = (np.tanh(unsquashed) + 1.0) / 2.0
        return np.clip(unit * (self.high - self.low) + self.low, self.low, self.high)

    def sample(
        self,
        *,
        sample_shape: Any = None,
        rng: np.random.Generator | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        shape = tuple(sample_shape) if sample_shape is not None else ()
        rng = rng if rng is not None else np.random.default_rng()
        noise = rng.standard_normal(shape + self.loc.shape).astype(np.float32)
        return self._squash(self.loc + self.scale * noise).astype(np.float32)

    def logp(self, value: Any, **kwargs: Any) -> np.ndarray:
        unit = (np.asarray(value, dtype=np.float32) - self.low) / (self.high - self.low)
        inside = np.clip(unit * 2.0 - 1.0, -1.0 + SQUASH_EPS, 1.0 - SQUASH_EPS)
        return SquashedGaussian.squashed_logp(np.arctanh(inside), self.loc, np.log(self.scale))

    def entropy(self, **kwargs: Any) -> np.ndarray:
        raise ValueError("the squashed Gaussian has no closed-form entropy (RLlib's has none)")

    def kl(self, other: Any, **kwargs: Any) -> np.ndarray:
        raise ValueError("the squashed Gaussian has no closed-form KL (RLlib's has none)")

    def to_deterministic(self) -> NumpyDeterministic:
        return NumpyDeterministic(self._squash(self.loc).astype(np.float32))


class SkipFusion:
    """RLlib's multi-stream fusion layers: `h = act(E W0 + b0)`, then for each further layer
    and the output layer `h = act([h, E] Wi + bi)`; without hidden layers the output layer
    reads E alone. Parameters `[W0, b0, ..., W_out, b_out]`, each W `(in, out)`, the `[h, E]`
    rows in that order (torch's `cat([out, embeds])`)."""

    def __init__(
        self,
        embed_dim: int,
        hiddens: list[int],
        output_dim: int,
        activation: str,
        rng: np.random.Generator,
        initializers: tuple[Any, ...],
    ):
        self.embed_dim = embed_dim
        self.activation = activation
        self.sizes = [*hiddens, output_dim]
        self.params: list[np.ndarray] = []
        kernel_init, bias_init = initializers
        gain = math.sqrt(2.0) if activation in _RELU_LIKE else 1.0
        previous = 0
        with _INIT_THREADS():
            for i, n_out in enumerate(self.sizes):
                n_in = embed_dim if i == 0 else previous + embed_dim
                if kernel_init is not None:
                    weight = np.ascontiguousarray(kernel_init(rng, (n_out, n_in)).T)
                else:
                    weight = orthogonal(rng, n_in, n_out, gain)
                bias = bias_init(rng, (n_out,)) if bias_init is not None else np.zeros(n_out)
                self.params += [weight.astype(np.float32), np.asarray(bias, dtype=np.float32)]
                previous = n_out

    @property
    def num_layers(self) -> int:
        return len(self.params) // 2

    def _inputs(self, i: int, h: np.ndarray | None, embeds: np.ndarray) -> np.ndarray:
        return embeds if i == 0 or h is None else np.concatenate([h, embeds], axis=1)

    def forward(self, embeds: np.ndarray) -> np.ndarray:
        h: np.ndarray | None = None
        for i in range(self.num_layers):
            x = self._inputs(i, h, embeds)
            h = activate_layer(self.activation, x @ self.params[2 * i] + self.params[2 * i + 1])
        assert h is not None
        return h

    def forward_train(self, embeds: np.ndarray) -> tuple[np.ndarray, list]:
        cache = []
        h: np.ndarray | None = None
        for i in range(self.num_layers):
            x = self._inputs(i, h, embeds)
            pre = x @ self.params[2 * i]
            pre += self.params[2 * i + 1]
            out, kept = activate_for_backward(self.activation, pre)
            cache.append((x, kept, out))
            h = out
        assert h is not None
        return h, cache

    def backward(
        self, cache: list, d_out: np.ndarray, grads: list[np.ndarray] | None
    ) -> np.ndarray:
        """Parameter gradients into `grads` (None: none computed), returns dLoss/dE."""
        d = d_out
        d_embeds = np.zeros((len(d_out), self.embed_dim), dtype=d_out.dtype)
        for i in range(self.num_layers - 1, -1, -1):
            x, pre, out = cache[i]
            d = backprop_activation(self.activation, d, pre, out)
            if grads is not None:
                np.matmul(x.T, d, out=grads[2 * i])
                np.add.reduce(d, axis=0, out=grads[2 * i + 1])
            d_x = d @ self.params[2 * i].T
            if i == 0:
                d_embeds += d_x
            else:
                hidden = d_x.shape[1] - self.embed_dim
                d_embeds += d_x[:, hidden:]
                d = d_x[:, :hidden]
        return d_embeds


def mlp_input_backward(mlp: MLP, cache: list, d_out: np.ndarray) -> np.ndarray:
    """dLoss/dinput of `mlp.forward_train`'s pass, without parameter gradients."""
    d = d_out
    last = mlp.num_layers - 1
    for i in range(last, -1, -1):
        _, pre, out = cache[i]
        if i != last:
            d = backprop_activation(mlp.activations[i], d, pre, out)
        d = d @ mlp.params[2 * i].T
    return d


def mlp_backward(
    mlp: MLP, cache: list, d_out: np.ndarray, grads: list[np.ndarray] | None, input_grad: bool
) -> np.ndarray | None:
    """`MLP.backward` with or without parameter gradients (`grads` None: none)."""
    if grads is None:
        return mlp_input_backward(mlp, cache, d_out) if input_grad else None
    _, d_in = mlp.backward(cache, d_out, grads, input_grad=input_grad)
    return d_in


def encoder_backward(
    mlp: MLP, cache: tuple, d_out: np.ndarray, grads: list[np.ndarray] | None, input_grad: bool
) -> np.ndarray | None:
    """The backward pass of an activated encoder (`activated_train`)."""
    inner, pre, out = cache
    d = backprop_activation(mlp.activation, d_out, pre, out)
    return mlp_backward(mlp, inner, d, grads, input_grad)


class Critic:
    """One Q network of an `SACModule`: its nets (registered in the module by name) and the
    forward and backward passes over them. `outputs`: the head's outputs for Box actions (1:
    SAC's Q(s, a), squeezed to shape (B,); TQC's critics output their quantiles, (B, n))."""

    def __init__(self, nets: dict[str, Any], continuous: bool, outputs: int = 1):
        self.nets = nets
        self.continuous = continuous
        self.squeeze = outputs == 1

    def _out(self, q: np.ndarray) -> np.ndarray:
        return q[:, 0] if self.squeeze else q

    def forward(self, obs: np.ndarray, actions: np.ndarray | None) -> np.ndarray:
        """Q(s, a) of shape (B,) for Box actions (or (B, outputs)); Q(s, .) of shape (B, n)
        for Discrete."""
        nets = self.nets
        if not self.continuous:
            return nets["head"].forward(activated(nets["obs"], obs))
        assert actions is not None, "Q(s, a) of Box actions needs the actions"
        embeds = np.concatenate(
            [activated(nets["actions"], actions), activated(nets["obs"], obs)], axis=1
        )
        return self._out(nets["head"].forward(nets["fusion"].forward(embeds)))

    def forward_train(self, obs: np.ndarray, actions: np.ndarray | None) -> tuple[np.ndarray, Any]:
        nets = self.nets
        if not self.continuous:
            features, obs_cache = activated_train(nets["obs"], obs)
            q, head_cache = nets["head"].forward_train(features)
            return q, (obs_cache, head_cache)
        assert actions is not None, "Q(s, a) of Box actions needs the actions"
        action_features, action_cache = activated_train(nets["actions"], actions)
        obs_features, obs_cache = activated_train(nets["obs"], obs)
        embeds = np.concatenate([action_features, obs_features], axis=1)
        latent, fusion_cache = nets["fusion"].forward_train(embeds)
        q, head_cache = nets["head"].forward_train(latent)
        return self._out(q), (action_cache, obs_cache, fusion_cache, head_cache)

    def backward(
        self, cache: Any, d_q: np.ndarray, grads: dict[str, list] | None, action_grad: bool
    ) -> np.ndarray | None:
        """Parameter gradients into `grads` (by net name; None: none), and with `action_grad`
        dLoss/d action (Box actions)."""
        nets = self.nets

        def net_grads(name: str) -> list | None:
            return grads[name] if grads is not None else None

        if not self.continuous:
            obs_cache, head_cache = cache
            d_features = mlp_backward(nets["head"], head_cache, d_q, net_grads("head"), True)
            assert d_features is not None
            if grads is not None:
                encoder_backward(nets["obs"], obs_cache, d_features, grads["obs"], False)
            return None
        action_cache, obs_cache, fusion_cache, head_cache = cache
        d_head = d_q[:, None] if self.squeeze else d_q
        d_latent = mlp_backward(nets["head"], head_cache, d_head, net_grads("head"), True)
        assert d_latent is not None
        d_embeds = nets["fusion"].backward(fusion_cache, d_latent, net_grads("fusion"))
        n_action = nets["actions"].sizes[-1]
        if grads is not None:
            encoder_backward(
                nets["obs"], obs_cache, d_embeds[:, n_action:].copy(), grads["obs"], False
            )
        if grads is None and not action_grad:
            return None
        return encoder_backward(
            nets["actions"],
            action_cache,
            d_embeds[:, :n_action].copy(),
            net_grads("actions"),
            action_grad,
        )


class SACModule(FlatParameterModule, QNetAPI):
    """See the module docstring. `twin_q` (RLlib's model config key, from SAC's `twin_q`)."""

    #: The function that describes this module's networks for the policy export
    #: (`trainer.export.description.DESCRIBER_ATTRIBUTE`).
    export_describer = "trainer.algorithms.sac.export:describe_numpy"

    def __init__(
        self,
        spaces: SpaceInfo,
        model_config: dict,
        *,
        twin_q: bool = True,
        seed: int | None = None,
        inference_only: bool = False,
    ):
        """`inference_only`: the policy alone (an EnvRunner's module, RLlib's inference-only
        SAC module): no critics, and its weights are the policy's."""
        spaces.require_flat_obs(type(self).__name__)
        self.spaces = spaces
        self.model_config = check_model_config(model_config, numpy=True)
        refuse_torch_only_keys(self.model_config, f"{type(self).__name__} model_config")
        config = self.model_config
        hiddens = config["fcnet_hiddens"]
        if not hiddens:
            raise ValueError(
                f"{type(self).__name__}: model_config['fcnet_hiddens']=[] leaves SAC's encoders "
                "without a latent size (RLlib's SAC builds its Q encoder to fcnet_hiddens[-1]); "
                "give at least one layer"
            )
        if spaces.action_layout is not None:
            raise UnsupportedValue(
                f"{type(self).__name__}: action space {spaces.action_space()} is not supported: "
                "SAC's Q networks take Box or Discrete actions (as RLlib's SAC); PPO, APPO, "
                "IMPALA and BC take Tuple, Dict and MultiDiscrete ones",
                ACTION_SPACES,
            )
        self.twin_q = bool(twin_q)
        self.continuous = spaces.action_discrete_n is None
        self.dist: Any = SquashedGaussian if self.continuous else Categorical
        n_actions = spaces.action_discrete_n or spaces.action_dim
        rng = np.random.default_rng(seed)
        latent = hiddens[-1]
        self.pi_encoder = encoder_mlp(spaces.obs_dim, config, rng)
        self.pi = head_mlp(latent, self.dist.num_inputs(n_actions), config, rng)
        self._nets: list[tuple[str, Any]] = [("pi_encoder", self.pi_encoder), ("pi", self.pi)]
        self.inference_only = bool(inference_only)
        self.critics: list[Critic] = []
        #: Each critic's (encoder, head) names, in `critics`' order.
        self.critic_names: list[tuple[str, str]] = []
        if not self.inference_only:
            for encoder_name, head_name in self._critic_layout():
                self.critics.append(self._critic(encoder_name, head_name, n_actions, rng))
                self.critic_names.append((encoder_name, head_name))
            self._nets += self._more_networks(rng)
        self._flatten_parameters()
        #: Where the critics' parameters start in `flat_params` (the policy's come first).
        self.critic_offset = sum(p.size for p in self.pi_encoder.params + self.pi.params)

    def _critic_layout(self) -> list[tuple[str, str]]:
        """Each critic's (encoder, head) names: "qf_encoder", "qf" and with twin_q
        "qf_twin_encoder", "qf_twin" (RLlib's)."""
        names = [("qf_encoder", "qf")]
        if self.twin_q:
            names.append(("qf_twin_encoder", "qf_twin"))
        return names

    #: The outputs of a critic's head for Box actions (SAC's: Q(s, a)).
    critic_outputs = 1

    def _critic_head_config(self) -> dict:
        """The model config a Box-action critic's head is built with (SAC's: the module's)."""
        return self.model_config

    def _more_networks(self, rng: np.random.Generator) -> list[tuple[str, Any]]:
        """A subclass's networks beyond the policy and the critics, by name (their parameters
        come last in `flat_params`); none here."""
        return []

    def _critic(
        self, encoder_name: str, head_name: str, n_actions: int, rng: np.random.Generator
    ) -> Critic:
        """A Q network's nets, registered as `{encoder_name}[.stream]` and `{head_name}`."""
        config, spaces = self.model_config, self.spaces
        latent = config["fcnet_hiddens"][-1]
        nets: dict[str, Any] = {}
        if self.continuous:
            action_config = {**config, "fcnet_hiddens": [*config["fcnet_hiddens"][:-1], latent]}
            action_config.update(
                {"fcnet_kernel_initializer": None, "fcnet_kernel_initializer_kwargs": None}
            )
            action_config.update(
                {"fcnet_bias_initializer": None, "fcnet_bias_initializer_kwargs": None}
            )
            nets["actions"] = encoder_mlp(n_actions, action_config, rng)
            nets["obs"] = encoder_mlp(spaces.obs_dim, config, rng)
            nets["fusion"] = SkipFusion(
                2 * latent,
                config["fusionnet_hiddens"],
                latent,
                config["fusionnet_activation"],
                rng,
                layer_initializers(config, "fusionnet"),
            )
            nets["head"] = head_mlp(latent, self.critic_outputs, self._critic_head_config(), rng)
            self._nets += [
                (f"{encoder_name}.actions", nets["actions"]),
                (f"{encoder_name}.obs", nets["obs"]),
                (f"{encoder_name}.fusion", nets["fusion"]),
            ]
        else:
            nets["obs"] = encoder_mlp(spaces.obs_dim, config, rng)
            nets["head"] = head_mlp(latent, n_actions, config, rng)
            self._nets.append((encoder_name, nets["obs"]))
        self._nets.append((head_name, nets["head"]))
        return Critic(nets, self.continuous, self.critic_outputs)

    @classmethod
    def from_rl_module_spec(cls, spec: Any, seed: int | None = None) -> SACModule:
        model_config = spec._get_model_config()
        module = cls(
            SpaceInfo.from_spaces(spec.observation_space, spec.action_space),
            model_config,
            **cls._settings_from(model_config),
            seed=seed,
            inference_only=bool(getattr(spec, "inference_only", False)),
        )
        module._remember_spaces(spec.observation_space, spec.action_space)
        return module

    @classmethod
    def _settings_from(cls, model_config: dict) -> dict[str, Any]:
        """The algorithm's keys of a spec's model config (taken out of it), as this class's
        keyword arguments: SAC's `twin_q`. CQL's `num_actions` (which its config adds to the
        model config for RLlib's torch module) is taken out too: CQL's numpy loss reads it
        from the config."""
        model_config.pop("num_actions", None)
        return {"twin_q": bool(model_config.pop("twin_q", True))}

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        args, kwargs = super().get_ctor_args_and_kwargs()
        kwargs["model_config"] = {**kwargs["model_config"], "twin_q": self.twin_q}
        kwargs["inference_only"] = self.inference_only
        return args, kwargs

    def policy_parameter_names(self) -> list[str]:
        """The names of the policy's parameters: the weights an EnvRunner samples with."""
        return [name for name in self.parameter_names() if name.startswith("pi")]

    def _named_nets(self) -> list[tuple[str, Any]]:
        return list(self._nets)

    def get_inference_action_dist_cls(self) -> type:
        return NumpySquashedGaussian if self.continuous else NumpyCategorical

    # -- inference ---------------------------------------------------------------------------
    def dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        """The policy's outputs for preprocessed observations."""
        return self.pi.forward(activated(self.pi_encoder, obs))

    def q_values(self, obs: np.ndarray, actions: np.ndarray | None = None) -> np.ndarray:
        """min over the critics of Q(s, a) (Box actions) or Q(s, .) (Discrete)."""
        values = [critic.forward(obs, actions) for critic in self.critics]
        return values[0] if len(values) == 1 else np.minimum(values[0], values[1])

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        """RLlib's `QNetAPI`: min over the critics of Q(obs, actions) under `"qf_preds"`."""
        obs = self.spaces.preprocess(batch["obs"])
        actions = batch.get("actions")
        if self.continuous:
            actions = np.asarray(actions, dtype=np.float32).reshape(len(obs), -1)
        return {"qf_preds": self.q_values(obs, actions)}

    # -- training ----------------------------------------------------------------------------
    def policy_forward_train(self, obs: np.ndarray) -> tuple[np.ndarray, tuple]:
        features, encoder_cache = activated_train(self.pi_encoder, obs)
        out, head_cache = self.pi.forward_train(features)
        return out, (encoder_cache, head_cache)

    def policy_backward(self, cache: tuple, d_dist_inputs: np.ndarray) -> None:
        """The policy's parameter gradients into the gradient buffer's policy views."""
        encoder_cache, head_cache = cache
        grads = self._gradient_views()[2]
        d_features = mlp_backward(self.pi, head_cache, d_dist_inputs, grads["pi"], True)
        assert d_features is not None
        encoder_backward(self.pi_encoder, encoder_cache, d_features, grads["pi_encoder"], False)

    def critic_grads(self, index: int) -> dict[str, list]:
        """The gradient buffer's views of critic `index`'s nets, by `Critic.nets` key."""
        by_net = self._gradient_views()[2]
        encoder, head = self.critic_names[index]
        if self.continuous:
            return {
                "actions": by_net[f"{encoder}.actions"],
                "obs": by_net[f"{encoder}.obs"],
                "fusion": by_net[f"{encoder}.fusion"],
                "head": by_net[head],
            }
        return {"obs": by_net[encoder], "head": by_net[head]}
