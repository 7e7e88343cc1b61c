"""`TorchModuleView`: a torch RLModule as the EnvRunners and the Algorithm use a module.

The samplers and the Algorithm speak numpy to a module: a batch of preprocessed observations in,
action-distribution inputs out (`dist_inputs`), actions drawn by the config's exploration from a
distribution class with `act(inputs, rng, explore)` / `logp(inputs, actions)` (`dist`), weights
as `{name: array}` (`get_weights` / `check_weights` / `set_weights`), values for the learner's
advantages (`values`). The view answers those questions for a `TorchRLModule`:

    numpy obs --torch.from_numpy--> rl_module.forward_exploration({"obs": tensor})
              <--.numpy()---------- {"action_dist_inputs": tensor}

The default modules whose forward pass is a known structure (PPO's MLP actor, DQN's MLP
Q-network) compute `dist_inputs` in numpy on copies of their weights, taken again when the
weights change (`trainer.torch_rl.numpy_inference`): the EnvRunners' per-step batches of a few rows cost
torch's dispatch far more than their arithmetic. Every other module runs its own forward.

RLlib's own distributions (TorchCategorical, TorchDiagGaussian) are drawn from by their numpy
twins with the runner's seeded numpy generator (the same draws as the numpy modules make), and
so are the classes a module names numpy twins for (`numpy_action_dists`: the default SAC
module's squashed Gaussian acts as the numpy SACModule's); any other TorchDistribution class
is drawn from in torch (`TorchDistributionActions`).

A stateful (recurrent) module (`rl_module.is_stateful()`, e.g. `use_lstm`) is called with a time
axis of one step: `dist_inputs_and_state(obs, state, explore)` feeds `{"obs": (B, 1, ...),
"state_in": state}` and returns the inputs `(B, ...)` and `Columns.STATE_OUT`, numpy both; the
EnvRunner carries the state per sub-env (`initial_state()` at an episode's start).

The weights the EnvRunners receive are the module's inference-only state
(`get_state(inference_only=True)`): a module with `InferenceOnlyAPI` sends no value-function
weights to the samplers, as in RLlib.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trainer.compat.rllib_utils import Columns
from trainer.core.action_layout import ActionLayout, MultiActionDistribution
from trainer.core.apis import QNetAPI
from trainer.core.extra_outputs import extra_outputs
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo, env_actions
from trainer.core.nn import Categorical, DiagGaussian
from trainer.core.obs_tree import tree_len, tree_map
from trainer.core.rl_module import RLModule
from trainer.torch_rl.learner import TorchThreads
from trainer.torch_rl.numpy_inference import (
    NUMPY_FORWARD_CLASS,
    NumpyInference,
    has_hooks,
    numpy_inference,
    numpy_recurrent_inference,
)
from trainer.torch_rl.rl_module import TorchRLModule, to_numpy, to_tensor


class TorchDistributionActions:
    """A TorchDistribution class as the samplers' exploration uses a distribution class:
    `act(inputs, rng, explore)` -> (actions, log-probs) and `logp(inputs, actions)`, numpy in
    and out. Draws come from torch's generator (`rng` is not used: a torch distribution samples
    with torch's)."""

    def __init__(self, dist_class: Any, layout: ActionLayout | None = None):
        self.dist_class = dist_class
        #: A composite action space's layout: nested samples go out as its flat rows.
        self.layout = layout

    def act(self, inputs: np.ndarray, rng: Any, explore: bool) -> tuple[np.ndarray, np.ndarray]:
        with torch.no_grad():
            dist = self.dist_class.from_logits(torch.from_numpy(np.asarray(inputs)))
            if not explore:
                dist = dist.to_deterministic()
            actions = dist.sample()
            logp = dist.logp(actions) if explore else torch.zeros(len(inputs))
        if self.layout is not None and not isinstance(actions, torch.Tensor):
            return self.layout.flatten(to_numpy(actions)), logp.numpy().astype(np.float32)
        return actions.numpy(), logp.numpy().astype(np.float32)

    def logp(self, inputs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            dist = self.dist_class.from_logits(torch.from_numpy(np.asarray(inputs)))
            return dist.logp(torch.as_tensor(actions)).numpy().astype(np.float32)


#: The class attribute by which a module names the numpy distributions its EnvRunners act
#: with, by its TorchDistribution class (`{TorchSquashedGaussian: SquashedGaussian, ...}` on
#: the default SAC module, whose numpy twins live with the algorithm, above this layer).
NUMPY_ACTION_DISTS = "numpy_action_dists"


def sampling_distribution(
    dist_class: Any, twins: dict[type, Any] | None = None, layout: ActionLayout | None = None
) -> Any:
    """The distribution class the samplers draw with for a module's TorchDistribution class:
    the module's own numpy twin of it (`twins`, its `numpy_action_dists`), the numpy twin of
    RLlib's Categorical and DiagGaussian, of its multi-categorical and multi-distribution
    (over the composite action space's flat rows, `layout`), else the class itself in
    torch."""
    from trainer.torch_rl.distributions import (
        TorchCategorical,
        TorchDiagGaussian,
        is_catalog_multi_distribution,
    )

    if twins and dist_class in twins:
        return twins[dist_class]
    if dist_class is TorchCategorical:
        return Categorical
    if dist_class is TorchDiagGaussian:
        return DiagGaussian
    if layout is not None and is_catalog_multi_distribution(dist_class):
        return MultiActionDistribution(layout)
    return TorchDistributionActions(dist_class, layout)


class TorchModuleView:
    """A `TorchRLModule` (`rl_module`) with the numpy interface of the default numpy modules
    (see the module docstring). `spaces`: what the samplers preprocess observations and map
    actions with."""

    framework = "torch"
    inference_only = False
    learner_only = False

    def __init__(self, rl_module: TorchRLModule, spaces: SpaceInfo):
        self.rl_module = rl_module
        if rl_module.inference_only:
            # An EnvRunner's copy never trains: in eval mode once, not switched at every step.
            rl_module.eval()
        #: Forward passes run on one torch thread unless the user sized the pools: a sampler
        #: in the Algorithm's process (num_env_runners=0) runs batches of a few rows, which
        #: torch's pool of two threads made a thousand times slower on a busy machine (4 ms
        #: for a tanh over 256 numbers, 2 us on one thread), as the learner's updates.
        self._threads = TorchThreads()
        # A torch module reads observations in the env's shape (images for its convolutions):
        # the learner's batches (`spaces.preprocess`) keep it, and rows the EnvRunners
        # flattened get it back here (`module_observations`, a view, no copy).
        self.spaces = spaces.keeping_obs_shape()
        shape = self.spaces.obs_shape
        self._row_shape: tuple[int, ...] | None = (
            shape if shape is not None and len(shape) > 1 else None
        )
        #: The actions (and their log-likelihoods) of the last `dist_inputs` call, when the
        #: module's forward pass drew them itself (RLlib's modules may return
        #: `Columns.ACTIONS` and `Columns.ACTION_LOGP`; an autoregressive module must): the
        #: EnvRunner then takes them instead of drawing from the distribution inputs.
        self.module_acted: tuple[np.ndarray, np.ndarray] | None = None
        #: The outputs of the last `dist_inputs` / `dist_inputs_and_state` call besides the
        #: action draw's and the state (a user's "my_value"; `trainer.core.extra_outputs`),
        #: which the EnvRunners record per step as RLlib's extra model outputs; None when the
        #: module returned none (the default modules).
        self.module_extras: dict[str, np.ndarray] | None = None
        twins = getattr(rl_module, NUMPY_ACTION_DISTS, None)
        layout = self.spaces.action_layout
        self.dist = sampling_distribution(
            rl_module.get_exploration_action_dist_cls(), twins, layout
        )
        self.inference_dist = sampling_distribution(
            rl_module.get_inference_action_dist_cls(), twins, layout
        )
        #: Every state entry's shape (the whole module, value function included).
        self._state_shapes = {key: value.shape for key, value in rl_module.get_state().items()}
        self._initial_state: dict[str, Any] | None = None
        #: Whether the module is recurrent (asked once: the EnvRunners' step branches on it).
        self.stateful = bool(rl_module.is_stateful())
        model_config = rl_module.model_config if isinstance(rl_module.model_config, dict) else {}
        #: The extra inputs a recurrent default module asks for (RLlib's prev-action/-reward).
        self.needs_prev_actions = self.stateful and bool(
            model_config.get("lstm_use_prev_action")
            or getattr(rl_module, "uses_prev_actions", False)
        )
        self.needs_prev_rewards = self.stateful and bool(model_config.get("lstm_use_prev_reward"))
        #: Whether the module's acting forward draws from torch's generator itself (a module's
        #: `draws_in_forward`, DreamerV3's latent states): the EnvRunners then seed each
        #: forward from their own generator (`dist_inputs_and_state(seed=...)`).
        self.draws_in_forward = bool(getattr(rl_module, "draws_in_forward", False))
        #: The numpy forward pass of a default module (None: the module's own, in torch).
        self._numpy: NumpyInference | None = numpy_inference(rl_module)
        #: A recurrent default module's step in numpy, built at the first step
        #: (`dist_inputs_and_state`), unless `_torch_steps`: the module's own forward.
        self._numpy_step: NumpyInference | None = None
        self._torch_steps = not self.stateful

    def __getattr__(self, name: str) -> Any:
        """What the view does not define is the torch module's own (a user's module's parts and
        methods: `algo.get_module().encoder`), as RLlib's `get_module()` gives the module."""
        if name.startswith("__") or "rl_module" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["rl_module"], name)

    #: The id of the view's module, as a learner's `module` answers RLlib's MultiRLModule
    #: calls (`keys()`, `items()`, ...); its learner sets it.
    module_id: Any = DEFAULT_MODULE_ID

    def __getitem__(self, module_id: Any) -> TorchRLModule:
        """`learner.module[module_id]` (RLlib's learners hold a MultiRLModule): the torch
        module itself, this view's one module."""
        return self.rl_module

    def keys(self) -> list[Any]:
        """RLlib's `MultiRLModule.keys()` on a learner's module: this view's one module id."""
        return [self.module_id]

    def items(self) -> list[tuple[Any, TorchRLModule]]:
        return [(self.module_id, self.rl_module)]

    def __contains__(self, module_id: Any) -> bool:
        return module_id == self.module_id

    @property
    def observation_space(self) -> Any:
        return self.rl_module.observation_space

    @property
    def action_space(self) -> Any:
        return self.rl_module.action_space

    @property
    def model_config(self) -> Any:
        return self.rl_module.model_config

    # -- sampling ------------------------------------------------------------------------------
    def module_observations(self, obs: Any) -> Any:
        """A batch of preprocessed observations in the module's shape: rows of a multi-dim
        Box (as the numpy path flattens them) reshaped to `(B, *obs_shape)`; a nested batch
        (Dict / Tuple observations) as it is."""
        if self._row_shape is not None and type(obs) is np.ndarray and obs.ndim == 2:
            return obs.reshape(len(obs), *self._row_shape)
        return obs

    def dist_inputs(self, obs: np.ndarray, explore: bool = True) -> np.ndarray:
        """The module's action-distribution inputs for a batch of observations
        (`forward_exploration`, or `forward_inference` without `explore`; in numpy for a
        default module of a known structure, whose two are the same)."""
        self.module_acted = self.module_extras = None
        numpy_forward = self._numpy
        if numpy_forward is not None and numpy_forward.accepts(obs):
            if not numpy_forward.current():  # a parameter was written or moved since
                numpy_forward = self._numpy = numpy_inference(self.rl_module)
            if numpy_forward is not None:
                return numpy_forward(obs)
        obs = self.module_observations(obs)
        out = (
            self.forward_exploration({Columns.OBS: obs})
            if explore
            else self.forward_inference({Columns.OBS: obs})
        )
        self.module_acted = self._own_actions(out)
        phase = "exploration" if explore else "inference"
        self.module_extras = extra_outputs(
            out, tree_len(obs), f"{type(self.rl_module).__name__}.forward_{phase}()"
        )
        inputs = out.get(Columns.ACTION_DIST_INPUTS)
        if inputs is None and isinstance(self.rl_module, QNetAPI):
            # A Q-network that returns actions only (as RLlib's DQN modules do, drawing their
            # own epsilon-greedy): the config's exploration acts on its Q-values instead.
            inputs = self.q_values(obs)
        if inputs is None:
            raise ValueError(
                f"{type(self.rl_module).__name__}.forward_{phase}() returned {sorted(out)}: "
                f"the EnvRunners need {Columns.ACTION_DIST_INPUTS!r} (the inputs of the "
                "module's action distribution class)"
            )
        return np.asarray(inputs, dtype=np.float32)

    def _own_actions(self, out: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
        """The actions a module's forward pass drew itself (RLlib's `Columns.ACTIONS`, e.g. an
        autoregressive module's) and their log-likelihoods, as the samplers record them (a
        composite action as flat rows); None when it left acting to its distribution."""
        actions = out.get(Columns.ACTIONS)
        if actions is None or Columns.ACTION_LOGP not in out:
            return None
        layout = self.spaces.action_layout
        if layout is not None:
            rows = layout.flatten(actions)
        else:
            rows = np.asarray(actions)
        return rows, np.asarray(out[Columns.ACTION_LOGP], dtype=np.float32).reshape(len(rows))

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        """A Q-network's (`QNetAPI`) Q-values `(B, num_actions)` for a batch of observations,
        as the numpy QModule's `q_values`."""
        if not isinstance(self.rl_module, QNetAPI):
            raise TypeError(
                f"{type(self.rl_module).__name__} has no Q-values: it does not implement QNetAPI"
            )
        was_training = self.rl_module.training
        self.rl_module.eval()
        try:
            with torch.no_grad(), self._threads():
                batch = to_tensor({Columns.OBS: self.module_observations(obs)}, self._device())
                out = self.rl_module.compute_q_values(batch)
        finally:
            if was_training:
                self.rl_module.train()
        return np.asarray(to_numpy(out["qf_preds"]), dtype=np.float32)

    def initial_state(self) -> dict[str, Any]:
        """The module's initial recurrent state (`get_initial_state()`) as numpy arrays (asked
        once: the EnvRunners read it at every step; the arrays are never written to)."""
        if self._initial_state is None:
            self._initial_state = to_numpy(self.rl_module.get_initial_state())
        return self._initial_state

    def dist_inputs_and_state(
        self,
        obs: np.ndarray,
        state: dict[str, Any],
        explore: bool = True,
        *,
        prev_actions: np.ndarray | None = None,
        prev_rewards: np.ndarray | None = None,
        seed: int | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """One step of a recurrent module for a batch of `B` sub-envs: `obs` `(B, ...)`,
        `state` the carried states batched (each leaf `(B, ...)`); returns the distribution
        inputs `(B, ...)` and the state out (each leaf `(B, ...)`), numpy. The module sees a
        time axis of one (`(B, 1, ...)`), as RLlib's EnvRunner feeds it. `seed`: the forward
        draws from torch's generator seeded with it (torch's global generator is left as it
        was), for a module that draws in its forward (`draws_in_forward`)."""
        if prev_actions is None and prev_rewards is None and seed is None:
            numpy_step = self._numpy_recurrent()
            if numpy_step is not None and numpy_step.accepts(obs):
                self.module_acted = self.module_extras = None  # (the default module's: none)
                return numpy_step.step(obs, state)
        batch: dict[str, Any] = {
            Columns.OBS: tree_map(lambda leaf: leaf[:, None], self.module_observations(obs)),
            Columns.STATE_IN: state,
        }
        if prev_actions is not None:
            batch["prev_actions"] = prev_actions[:, None]
        if prev_rewards is not None:
            batch["prev_rewards"] = prev_rewards[:, None]
        if seed is None:
            out = self.forward_exploration(batch) if explore else self.forward_inference(batch)
        else:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                out = self.forward_exploration(batch) if explore else self.forward_inference(batch)
        inputs = out.get(Columns.ACTION_DIST_INPUTS)
        state_out = out.get(Columns.STATE_OUT)
        phase = "exploration" if explore else "inference"
        self.module_extras = extra_outputs(
            out,
            tree_len(obs),
            f"{type(self.rl_module).__name__}.forward_{phase}()",
            time_axis=True,
        )
        if inputs is None or state_out is None:
            raise ValueError(
                f"{type(self.rl_module).__name__}.forward_{phase}() returned {sorted(out)}: "
                f"a stateful module must return {Columns.ACTION_DIST_INPUTS!r} and "
                f"{Columns.STATE_OUT!r}"
            )
        inputs = np.asarray(inputs, dtype=np.float32)
        return inputs.reshape(tree_len(obs), *inputs.shape[2:]), state_out

    def _numpy_recurrent(self) -> NumpyInference | None:
        """The recurrent default module's numpy step, built now if it was not yet or the
        module's parameters were written or moved since (None: the module's own forward)."""
        if self._torch_steps:
            return None
        numpy_step = self._numpy_step
        if numpy_step is None or not numpy_step.current():
            if has_hooks(self.rl_module):  # (torch's forward for now, not for good: see below)
                return None
            numpy_step = self._numpy_step = numpy_recurrent_inference(self.rl_module)
            # (A structure the numpy step does not compute stays in torch; a forward hook
            # only while it is registered, checked at each new set of weights.)
            self._torch_steps = numpy_step is None
        return numpy_step

    def values(self, obs: Any) -> np.ndarray:
        """The value function's predictions (`compute_values`) for a batch of observations."""
        obs = self.module_observations(obs)
        with torch.no_grad(), self._threads():
            values = self.rl_module.compute_values({Columns.OBS: to_tensor(obs, self._device())})
        return np.asarray(to_numpy(values), dtype=np.float32).reshape(tree_len(obs))

    def _device(self) -> Any:
        """Where the module's parameters are (the learner's may be on a GPU)."""
        parameter = next(iter(self.rl_module.parameters()), None)
        return None if parameter is None or parameter.device.type == "cpu" else parameter.device

    def forward_inference(self, batch: dict[str, Any]) -> dict[str, Any]:
        """`rl_module.forward_inference` on a numpy batch, its outputs as numpy."""
        with torch.no_grad(), self._threads():
            return to_numpy(self.rl_module.forward_inference(to_tensor(batch, self._device())))

    def forward_exploration(self, batch: dict[str, Any]) -> dict[str, Any]:
        """`rl_module.forward_exploration` on a numpy batch, its outputs as numpy."""
        with torch.no_grad(), self._threads():
            return to_numpy(self.rl_module.forward_exploration(to_tensor(batch, self._device())))

    def to_env_actions(self, actions: np.ndarray, *, normalize: bool, clip: bool) -> np.ndarray:
        return env_actions(self.spaces, actions, normalize=normalize, clip=clip)

    # -- weights -------------------------------------------------------------------------------
    def get_weights(self) -> dict[str, np.ndarray]:
        """The weights the EnvRunners sample with: the inference-only state."""
        tensors = self._default_inference_tensors()
        if tensors is None:
            return self.rl_module.get_state(inference_only=True)
        # Copies (a CPU tensor's numpy() shares its memory), C-contiguous.
        return {key: tensor.detach().cpu().numpy().copy() for key, tensor in tensors.items()}

    def _default_inference_tensors(self) -> dict[str, torch.Tensor] | None:
        """A default module's (one whose class names a numpy forward, with `get_state` its
        own) inference-only state tensors by key, found once: its layers are fixed, and a
        DQN learner sends them every few env steps (the module walk was 0.3 ms of each
        sync). None for any other module."""
        cached = self.__dict__.get("_inference_tensors")
        if cached is not None:
            return cached or None
        module = self.rl_module
        tensors: dict[str, torch.Tensor] = {}
        if (
            type(module).__dict__.get(NUMPY_FORWARD_CLASS) is not None
            and type(module).get_state is TorchRLModule.get_state
        ):
            state = module.state_dict(keep_vars=True)
            tensors = {key: state[key] for key in module._inference_state_keys(state)}
        self._inference_tensors = tensors
        return tensors or None

    def check_weights(self, weights: Any, where: str = "weights") -> None:
        """The module's `check_weights`: at least the inference-only state's arrays, nothing
        the module lacks, each of its shape and kind, finite."""
        self.rl_module.check_weights(weights, where)

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        tensors = self._default_tensors()
        if tensors is None or weights.keys() != tensors.keys():
            self.check_weights(weights)
            with self._threads():  # the copies into the parameters, as the forward passes
                self.rl_module.set_state(weights)
        else:
            # A default module (numpy forward): the arrays copied into its tensors directly,
            # one walk of the module for the check instead of three and load_state_dict's
            # (about 1 ms of a DQN training step's weight sync, which runs every few steps).
            self.rl_module.check_weights(weights, own=tensors)
            with torch.no_grad(), self._threads():
                for key, value in weights.items():
                    tensors[key].copy_(torch.as_tensor(value))
        self._refresh_numpy()

    def _default_tensors(self) -> dict[str, torch.Tensor] | None:
        """The module's parameters and buffers by state key when it is a default module whose
        forward runs in numpy (plain layers: `load_state_dict` only copies into them), with
        `set_state` its own; None otherwise."""
        if self._numpy is None or type(self.rl_module).set_state is not TorchRLModule.set_state:
            return None
        cached = self.__dict__.get("_state_tensors")
        if cached is None:  # found once: a default module's layers are fixed
            cached = self._state_tensors = self.rl_module.state_dict(keep_vars=True)
        return cached

    def parameter_names(self) -> list[str]:
        """Every state entry's name (the whole module, value function included)."""
        return list(self._state_shapes)

    def parameters(self) -> list[np.ndarray]:
        state = self.rl_module.get_state()
        return [state[name] for name in self._state_shapes]

    def get_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.rl_module.get_state(*args, **kwargs)

    def set_state(self, state: dict[str, Any]) -> None:
        self.rl_module.set_state(state)
        self._refresh_numpy()

    def _refresh_numpy(self) -> None:
        """The numpy forward pass brought to the module as it is now: its weights copied again
        in place, or, after any other change (a parameter moved; a forward hook registered,
        which sends the module back to torch), built again."""
        numpy_forward = self._numpy
        if numpy_forward is not None and not has_hooks(self.rl_module) and numpy_forward.refresh():
            return
        self._numpy = numpy_inference(self.rl_module)


def build_torch_module(
    module_class: type,
    spaces: SpaceInfo,
    model_config: dict,
    *,
    observation_space: Any = None,
    action_space: Any = None,
    inference_only: bool = False,
    seed: int | None = None,
    catalog_class: type | None = None,
) -> TorchModuleView:
    """A view of a new `module_class` module for `spaces` (or the spaces given), its weights
    initialised from `seed` (torch's global generator is left as it was); `catalog_class`:
    the spec's (PPOCatalog on the default module, which becomes `module.catalog`)."""
    kwargs = {
        "observation_space": observation_space or spaces.keeping_obs_shape().observation_space(),
        "action_space": action_space or spaces.action_space(),
        "inference_only": inference_only,
        "model_config": dict(model_config),
    }
    if catalog_class is not None:
        kwargs["catalog_class"] = catalog_class
    module = _seeded_module(module_class, kwargs, seed)
    if not isinstance(module, TorchRLModule):
        raise TypeError(f"{module_class.__qualname__} is not a TorchRLModule")
    return TorchModuleView(module, spaces)


def build_torch_module_from_spec(
    spec: Any, *, seed: int | None = None, inference_only: bool | None = None
) -> TorchModuleView:
    """A view of the `TorchRLModule` an `RLModuleSpec` describes (its class, spaces, model
    config and catalog class; `inference_only` overrides the spec's), its weights initialised
    from `seed` (torch's global generator is left as it was): a multi-agent algorithm's
    module, as its learner trains it."""
    kwargs = {
        "observation_space": spec.observation_space,
        "action_space": spec.action_space,
        "inference_only": spec.inference_only if inference_only is None else inference_only,
        "learner_only": spec.learner_only,
        "model_config": spec._get_model_config(),
        "catalog_class": spec.catalog_class,
    }
    return torch_view(_seeded_module(spec.module_class, kwargs, seed))


#: The method by which a default module's class (that class itself, not a subclass) takes
#: the initial weights of the numpy module with the same networks for a seed.
START_AS_NUMPY_MODULE = "start_as_numpy_module"


def _seeded_module(module_class: type, kwargs: dict[str, Any], seed: int | None) -> Any:
    """`module_class(**kwargs)`, its weights initialised from `seed` (None: torch's global
    generator as it is) without moving torch's global generator. A default module that has
    a numpy counterpart (`start_as_numpy_module`, defined on its own class) starts, with a
    seed, from that numpy module's weights for the seed: a seeded run starts from the same
    weights on either framework."""
    if seed is None:
        return module_class(**kwargs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = module_class(**kwargs)
    start = module_class.__dict__.get(START_AS_NUMPY_MODULE)
    if start is not None and not module.inference_only:
        start(module, seed)
    return module


def joint_dist_inputs(
    container: Any, views: dict[Any, TorchModuleView], obs: dict[Any, Any], explore: bool
) -> dict[Any, tuple[np.ndarray, dict[str, np.ndarray] | None]]:
    """One forward pass of a MultiRLModule whose class runs its modules together (RLlib's
    shared encoder before each policy): `obs` (preprocessed observations by module id) in as
    `{module_id: {"obs": tensor}}` to the container's `forward_exploration` (or
    `forward_inference` without `explore`), each module's action-distribution inputs out as
    numpy, with its other outputs (`extra_outputs`; None for none). `views`: each module's
    view (its observation shape, its thread policy)."""
    batch = {
        module_id: {Columns.OBS: to_tensor(views[module_id].module_observations(module_obs))}
        for module_id, module_obs in obs.items()
    }
    threads = next(iter(views.values()))._threads
    with torch.no_grad(), threads():
        out = (
            container.forward_exploration(batch) if explore else container.forward_inference(batch)
        )
    inputs = {}
    phase = "exploration" if explore else "inference"
    for module_id in obs:
        module_out = out.get(module_id) if isinstance(out, dict) else None
        if not isinstance(module_out, dict) or Columns.ACTION_DIST_INPUTS not in module_out:
            raise ValueError(
                f"{type(container).__name__}.forward_{phase}() returned "
                f"{sorted(map(str, out)) if isinstance(out, dict) else type(out).__name__} for "
                f"the batch of modules {sorted(map(str, obs))}: the EnvRunners need "
                f"{{module_id: {{{Columns.ACTION_DIST_INPUTS!r}: ...}}}} for each of them"
            )
        module_out = to_numpy(module_out)
        whose = f"{type(container).__name__}.forward_{phase}()[{module_id!r}]"
        inputs[module_id] = (
            np.asarray(module_out[Columns.ACTION_DIST_INPUTS], dtype=np.float32),
            extra_outputs(module_out, tree_len(obs[module_id]), whose),
        )
    return inputs


def torch_view(module: TorchRLModule) -> TorchModuleView:
    """`module` (a TorchRLModule) seen as the EnvRunners and learners use a module, the spaces
    read from the module's own."""
    if not isinstance(module, TorchRLModule):
        raise TypeError(f"{type(module).__qualname__} is not a TorchRLModule")
    spaces = SpaceInfo.from_spaces(module.observation_space, module.action_space, nested_obs=True)
    return TorchModuleView(module, spaces)


# An EnvRunner's `module` is an RLModule in RLlib (user code checks `isinstance(runner.module,
# RLModule)`, RLlib's EnvRunnerGroup test among them): the view answers RLModule's API, the
# rest from its torch module.
RLModule.register(TorchModuleView)
