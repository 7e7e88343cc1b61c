"""The config as a dict and back, the edge where RLlib's names come in (`update_from_dict`:
one pass over the keys, `rllib_names`), dict-like access, copies and freezing."""

from __future__ import annotations

import copy
import sys
import warnings
from collections.abc import Callable, ItemsView, KeysView, ValuesView
from typing import TYPE_CHECKING, Any

from trainer.algorithms.config.base import ConfigBase
from trainer.algorithms.config.framework import is_torch_module_class
from trainer.algorithms.config.rllib_names import current_names
from trainer.checkpoints.config_data import encode
from trainer.compat.old_api import CLUSTER_ONLY_KEYS
from trainer.compat.rllib_settings import IgnoredSettingWarning
from trainer.errors import ConfigError, ConfigKeyAssignmentError

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


class StateSection(ConfigBase):
    """The config as a dict, and back."""

    if TYPE_CHECKING:  # what this section reads of the others
        callbacks_class: Any
        callbacks_on: dict[str, list[Callable]]
        in_evaluation: bool

        def _has_multi_rl_module_spec(self) -> bool: ...

        def environment(self, *args: Any, **kwargs: Any) -> Self: ...

        def rl_module(self, *args: Any, **kwargs: Any) -> Self: ...

        def multi_agent(self, *args: Any, **kwargs: Any) -> Self: ...

        def api_stack(self, *args: Any, **kwargs: Any) -> Self: ...

        def evaluation(self, *args: Any, **kwargs: Any) -> Self: ...

        def training(self, *args: Any, **kwargs: Any) -> Self: ...

        def callbacks(self, *args: Any, **kwargs: Any) -> Self: ...

        def _set_model(self, *args: Any, **kwargs: Any) -> None: ...

    # -- RLlib's dict-like and state accessors --------------------------------------------------
    def keys(self) -> KeysView[str]:
        """The setting names (`to_dict().keys()`, as RLlib's)."""
        return self.to_dict().keys()

    def values(self) -> ValuesView[Any]:
        return self.to_dict().values()

    def items(self) -> ItemsView[str, Any]:
        return self.to_dict().items()

    def pop(self, key: str, default: Any = None) -> Any:
        """RLlib's `pop`: reads the setting (the config is not changed), or `default`."""
        return self.get(key, default)

    def get_state(self) -> dict[str, Any]:
        """The config as a dict with its class under "class" (`from_state` rebuilds it)."""
        return {**self.to_dict(), "class": type(self)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ConfigBase:
        """The config `get_state()` described (of the class it names: an `AlgorithmConfig`,
        which imports this section)."""
        if not isinstance(state, dict):
            raise ConfigError(
                f"{cls.__name__}.from_state({state!r}): give the dict get_state() returned"
            )
        state = dict(state)
        config_cls = state.pop("class", cls)
        return config_cls.from_dict(state)

    def serialize(self) -> dict[str, Any]:
        """The settings as plain JSON data (code as "module:name" strings), as `params.json`
        holds them."""
        unstored: list[str] = []  # values no JSON can hold are left out
        return encode(self.to_dict(), "config", unstored)

    def copy(self, copy_frozen: bool | None = None) -> Self:
        """A deep copy (callbacks and env creators shared). Unfrozen unless `copy_frozen`."""
        clone = object.__new__(type(self))
        object.__setattr__(clone, "_frozen", False)
        for name, value in self.__dict__.items():
            if name == "_frozen":
                continue
            if name in ("callbacks_class", "env", "env_task_fn", "algo_class"):
                object.__setattr__(clone, name, value)
            elif name == "callbacks_on":
                object.__setattr__(clone, name, {k: list(v) for k, v in value.items()})
            else:
                object.__setattr__(clone, name, copy.deepcopy(value))
        if copy_frozen:
            clone.freeze()
        return clone

    def freeze(self) -> Self:
        """Makes the config read-only (a built Algorithm's config is frozen)."""
        object.__setattr__(self, "_frozen", True)
        return self

    @property
    def is_frozen(self) -> bool:
        return self._frozen

    def to_dict(self) -> dict[str, Any]:
        """Every setting by name (callbacks included: `callbacks_class` and `callbacks_on`)."""
        result = {name: copy.copy(self._given_value(name)) for name in self._settings()}
        result["callbacks_class"] = self.callbacks_class
        result["callbacks_on"] = {k: list(v) for k, v in self.callbacks_on.items()}
        result["in_evaluation"] = self.in_evaluation
        # RLlib's key of the per-learner batch (its private attribute, which Tune's
        # param_space reads back): the train batch, one learner here.
        result["_train_batch_size_per_learner"] = result["train_batch_size"]
        # RLlib's settings without an effect here, but for the old stack's cluster keys, which
        # from_dict drops (with a warning) and no config needs.
        result.update(
            {
                name: copy.copy(getattr(self, name))
                for name in self._rllib_method_of()
                if name not in CLUSTER_ONLY_KEYS
            }
        )
        # A torch module's class is not in "model": its spec is kept too (a checkpoint's
        # config must rebuild that module, not the default one).
        spec = self.__dict__.get("_rl_module_spec")
        if self._has_multi_rl_module_spec() or is_torch_module_class(
            getattr(spec, "module_class", None)
        ):
            result["rl_module_spec"] = copy.deepcopy(spec)
        return result

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any]) -> Self:
        """A config of this class from a dict of setting names (as `to_dict` writes them)."""
        config = cls()
        config.update_from_dict(config_dict)
        return config

    def update_from_dict(self, config_dict: dict[str, Any]) -> Self:
        """Sets each setting named in `config_dict`. RLlib's older key names (`num_workers`,
        `num_sgd_iter`, `sgd_minibatch_size`, ...) are accepted with one warning each; the keys
        RLlib's `to_dict()` writes (`lambda`, `framework`, `callbacks`) without."""
        if not isinstance(config_dict, dict):
            raise ConfigError(
                f"{type(self).__name__}.from_dict({config_dict!r}): give a dict of setting "
                f"names to values, not a {type(config_dict).__name__}"
            )
        config_dict = current_names(config_dict)
        if "rl_module_spec" in config_dict:
            config_dict = dict(config_dict)
            self.rl_module(rl_module_spec=config_dict.pop("rl_module_spec"))
        multi_agent_names = ("policies", "policy_mapping_fn", "policies_to_train", "count_steps_by")
        if "multiagent" in config_dict or any(k in config_dict for k in multi_agent_names):
            config_dict = dict(config_dict)
            # RLlib's older nested "multiagent" dict, then the top-level keys (which win).
            nested = config_dict.pop("multiagent", None) or {}
            if not isinstance(nested, dict):
                raise ConfigError(
                    f"{type(self).__name__}.from_dict(multiagent={nested!r}): RLlib's older "
                    "multiagent key holds a dict of multi_agent() settings"
                )
            multi_agent = dict(nested)
            multi_agent.update(
                {k: config_dict.pop(k) for k in multi_agent_names if k in config_dict}
            )
            self.multi_agent(**multi_agent)
        if "algorithm_config_overrides_per_module" in config_dict:
            config_dict = dict(config_dict)
            overrides = config_dict.pop("algorithm_config_overrides_per_module")
            self._set("from_dict", {"algorithm_config_overrides_per_module": {}})
            self.rl_module(algorithm_config_overrides_per_module=overrides)
        settings = self._settings()
        rllib_names = self._rllib_method_of()
        extra = {"callbacks_class", "callbacks_on", "in_evaluation", "callbacks"}
        self._take_rllib_settings(
            "from_dict", {k: v for k, v in config_dict.items() if k in rllib_names}
        )
        unknown = {
            k: v
            for k, v in config_dict.items()
            if k not in settings and k not in extra and k not in rllib_names
        }
        self._reject_unknown("from_dict", unknown, list(settings) + sorted(extra))
        values = {k: v for k, v in config_dict.items() if k in settings}
        if "model" in values:
            self._set_model("from_dict", "model", values.pop("model"))
        if "env" in values and values["env"] is not None:
            self.environment(values.pop("env"))
        if "env_config" in values:  # merged into the current one, as environment() does
            self.environment(env_config=values.pop("env_config"))
        # Updated, not replaced, as their builders do (RLlib's from_dict calls them).
        if "evaluation_config" in values:
            self.evaluation(evaluation_config=values.pop("evaluation_config"))
        if "learner_config_dict" in values:
            self.training(learner_config_dict=values.pop("learner_config_dict"))
        stack = {
            k: values.pop(k)
            for k in ("enable_rl_module_and_learner", "enable_env_runner_and_connector_v2")
            if k in values
        }
        if stack:
            self.api_stack(**stack)  # the old stack's False: one warning, the new stack runs
        self._set("from_dict", values)
        if "callbacks_class" in config_dict or "callbacks" in config_dict:
            self.callbacks(config_dict.get("callbacks_class", config_dict.get("callbacks")))
        if "callbacks_on" in config_dict:
            self.callbacks(**config_dict["callbacks_on"])
        if "in_evaluation" in config_dict:
            self.in_evaluation = bool(config_dict["in_evaluation"])
        return self

    @classmethod
    def overrides(cls, **kwargs: Any) -> dict[str, Any]:
        """A dict of settings to override elsewhere (for example `evaluation_config`); the names
        and values are checked here."""
        settings = cls._settings()
        rllib_names = cls._rllib_method_of()
        probe = cls()
        kwargs = dict(kwargs)
        # RLlib takes any attribute name, a builder method's too (`overrides(exploration=
        # False)`): applying it shadows the method and changes nothing. So here: a warning,
        # and the name is dropped.
        for name in [k for k in kwargs if k not in settings and k not in rllib_names]:
            if not name.startswith("_") and callable(getattr(probe, name, None)):
                kwargs.pop(name)
                warnings.warn(
                    f"{cls.__name__}.overrides({name}=...): {name} is a builder method, not "
                    "a setting; it has no effect (as in RLlib). For greedy actions, use "
                    "explore=False",
                    IgnoredSettingWarning,
                    stacklevel=2,
                )
        probe._take_rllib_settings(
            "overrides", {k: v for k, v in kwargs.items() if k in rllib_names}
        )
        unknown = {k: v for k, v in kwargs.items() if k not in settings and k not in rllib_names}
        probe._reject_unknown("overrides", unknown, settings)
        probe._set("overrides", {k: v for k, v in kwargs.items() if k in settings})
        return dict(kwargs)

    def __getitem__(self, key: str) -> Any:
        if (
            key in self._settings()
            or key in self._rllib_method_of()
            or key in ("callbacks_class", "callbacks_on", "in_evaluation")
        ):
            return getattr(self, key)
        raise KeyError(f"{type(self).__name__} has no setting {key!r}")

    def __setitem__(self, key: str, value: Any) -> None:
        """RLlib's dict-style write, `config[key] = value`: sets the setting as
        `update_from_dict({key: value})` does (checked; RLlib's older names taken).
        "multiagent" is refused as RLlib refuses it: its settings are `multi_agent()`'s."""
        if key == "multiagent":
            raise ConfigKeyAssignmentError(
                f"{type(self).__name__}[{key!r}] = {value!r}: Cannot set `multiagent` key in an "
                "AlgorithmConfig! Set the multi-agent settings with config.multi_agent("
                "policies=..., policy_mapping_fn=..., policies_to_train=...)"
            )
        self.update_from_dict({key: value})

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: str) -> bool:
        return key in self._settings() or key in self._rllib_method_of()
