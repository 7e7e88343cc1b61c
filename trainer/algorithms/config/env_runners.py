"""The `env_runners()` section: the EnvRunners, their sub-envs, what one `sample()` call returns,
the env-to-module connector and the backend that runs them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import gymnasium as gym

from trainer.algorithms.config.base import ConfigBase, NotProvided, is_str
from trainer.algorithms.settings import Setting, settings_of
from trainer.connectors import MeanStdFilter
from trainer.connectors.connector_v2 import ConnectorPipelineV2, build_pipeline, call_factory
from trainer.env.vectorize import check_vectorize_mode as _vectorize_mode_problem
from trainer.errors import ConfigError
from trainer.runners import ray_runner
from trainer.runners.env_runner import EnvRunner
from trainer.runners.ray_runner import RAY_INSTALL_HINT, RAY_STAND_IN_HINT
from trainer.util.checks import (
    auto_or_int_at_least,
    int_at_least,
    is_bool,
    one_of,
    optional,
    seconds_above,
    signature_refusing,
)

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def _check_backend(v: Any) -> str | None:
    if v == "processes":
        return None
    if v == "ray":
        # Looked up on the module at each check: tests (and the launcher) replace them there.
        if ray_runner.ray_is_stand_in():
            return f'"processes", or "ray" with the installed Ray: {RAY_STAND_IN_HINT}'
        return (
            None
            if ray_runner.ray_installed()
            else f'"processes", or "ray" once Ray is installed: {RAY_INSTALL_HINT}'
        )
    return '"processes" or "ray"'


def _is_env_runner_class(v: Any) -> str | None:
    if v is None or (isinstance(v, type) and issubclass(v, EnvRunner)):
        return None
    return "None or a subclass of trainer.EnvRunner"


def _factory_check(arguments: tuple[str, str]) -> Callable[[Any], str | None]:
    """The check of a connector factory setting: None, or a callable taking one of the two
    argument lists (`(env)` and RLlib's longer one), by their names."""
    short, long = arguments
    allowed = f"None or a callable ({short}) or ({long}) -> connector piece or pieces"
    counts = (short.count(",") + 1, long.count(",") + 1)

    def check(v: Any) -> str | None:
        if v is None:
            return None
        if not callable(v):
            return allowed
        refused = signature_refusing(v, counts[0]) and signature_refusing(v, counts[1])
        return None if refused is None else f"{allowed}; this one's signature is {refused}"

    return check


#: `call_factory` passes (env, spaces, device) when the factory takes three, else (env).
_is_connector_factory = _factory_check(("env", "env, spaces, device"))
#: `call_module_to_env_factory` passes (env, spaces) when it takes two, else (env).
_is_module_to_env_factory = _factory_check(("env", "env, spaces"))


#: Less than the memory of its own an EnvRunner worker process takes (Python with numpy and
#: gymnasium imported, before any env): `validate()` refuses counts no machine holds.
WORKER_PROCESS_MIN_BYTES = 10 * 2**20

#: The settings of `env_runners()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
ENV_RUNNERS_SETTINGS: dict[str, Setting] = settings_of(
    "env_runners",
    {
        "num_env_runners": (
            0,
            int_at_least(0),
            "EnvRunner worker processes (0: sample in the main process)",
        ),
        "num_envs_per_env_runner": (
            1,
            int_at_least(1),
            "sub-envs in each EnvRunner's vector env",
        ),
        "gym_env_vectorize_mode": (
            "sync",
            _vectorize_mode_problem,
            '"sync": sub-envs step in the EnvRunner; "async": each in a child process; '
            '"vector_entry_point": one numpy-vectorized env (trainer.env.vectorize)',
        ),
        "rollout_fragment_length": (
            200,
            auto_or_int_at_least(1),
            'env steps per sub-env per sample() call; "auto" splits train_batch_size evenly',
        ),
        "batch_mode": (
            "truncate_episodes",
            one_of("truncate_episodes", "complete_episodes"),
            '"truncate_episodes": episodes may be cut between sample() '
            'calls; "complete_episodes": each call returns whole episodes',
        ),
        "sample_timeout_s": (
            60.0,
            seconds_above(0),
            "a runner that does not answer a sample() within this is killed (a timeout failure)",
        ),
        "explore": (
            True,
            is_bool,
            "EnvRunners explore (True) or act greedily (False); "
            "compute_single_action(explore=) overrides it per call",
        ),
        "env_runner_cls": (
            None,
            _is_env_runner_class,
            "an EnvRunner subclass to run instead, in every worker and as the local runner",
        ),
        "create_env_on_local_worker": (
            False,
            is_bool,
            "with num_env_runners > 0, the local runner (algo.env_runner) gets envs too",
        ),
        "validate_env_runners_after_construction": (
            True,
            is_bool,
            "build() fails when an EnvRunner does not start (False: fault_tolerance() handles it)",
        ),
        "env_to_module_connector": (
            None,
            _is_connector_factory,
            "(env) -> an env-to-module connector piece, a list of "
            "pieces or a pipeline, called in every EnvRunner",
        ),
        "module_to_env_connector": (
            None,
            _is_module_to_env_factory,
            "(env, spaces) -> module-to-env connector pieces (or a list, or a pipeline) run on "
            "the modules' outputs before the actions are drawn, in every EnvRunner",
        ),
        "observation_filter": (
            "NoFilter",
            one_of("NoFilter", "MeanStdFilter"),
            '"MeanStdFilter": RLlib\'s older spelling of a MeanStdFilter connector piece',
        ),
        "backend": (
            "processes",
            _check_backend,
            '"processes": EnvRunners are worker processes of this machine; '
            '"ray": Ray actors on the cluster (not an RLlib setting)',
        ),
        "ray_address": (
            None,
            optional(is_str),
            'with backend="ray": the cluster to join when ray.init() was not '
            "called (else RAY_ADDRESS, else a local Ray instance)",
        ),
    },
)


class EnvRunnersSection(ConfigBase):
    """How samples are collected (`env_runners()`)."""

    if TYPE_CHECKING:  # what this section reads of the others
        observation_space: gym.Space | None
        action_space: gym.Space | None
        train_batch_size: int
        evaluation_num_env_runners: int
        in_evaluation: bool

        def exploration(self, *args: Any, **kwargs: Any) -> Self: ...

    num_env_runners: int
    num_envs_per_env_runner: int
    gym_env_vectorize_mode: str
    rollout_fragment_length: int | Literal["auto"]
    batch_mode: str
    sample_timeout_s: float
    explore: bool
    env_runner_cls: type[EnvRunner] | None
    create_env_on_local_worker: bool
    validate_env_runners_after_construction: bool
    env_to_module_connector: Callable[..., Any] | None
    module_to_env_connector: Callable[..., Any] | None
    observation_filter: str
    backend: str
    ray_address: str | None

    def env_runners(
        self,
        *,
        num_env_runners: int = NotProvided,
        num_envs_per_env_runner: int = NotProvided,
        gym_env_vectorize_mode: Any = NotProvided,
        rollout_fragment_length: int | str = NotProvided,
        batch_mode: str = NotProvided,
        sample_timeout_s: float = NotProvided,
        explore: bool = NotProvided,
        exploration_config: dict = NotProvided,
        env_runner_cls: type | None = NotProvided,
        create_env_on_local_worker: bool = NotProvided,
        validate_env_runners_after_construction: bool = NotProvided,
        env_to_module_connector: Callable | None = NotProvided,
        module_to_env_connector: Callable | None = NotProvided,
        observation_filter: str = NotProvided,
        backend: str = NotProvided,
        ray_address: str | None = NotProvided,
        **unknown: Any,
    ) -> Self:
        """How samples are collected: the EnvRunners, their sub-envs, and what one `sample()`
        call returns. RLlib's older names (`num_rollout_workers`, `num_envs_per_worker`, ...)
        are accepted."""
        values = {
            "num_env_runners": num_env_runners,
            "num_envs_per_env_runner": num_envs_per_env_runner,
            "gym_env_vectorize_mode": gym_env_vectorize_mode,
            "rollout_fragment_length": rollout_fragment_length,
            "batch_mode": batch_mode,
            "sample_timeout_s": sample_timeout_s,
            "explore": explore,
            "env_runner_cls": env_runner_cls,
            "create_env_on_local_worker": create_env_on_local_worker,
            "validate_env_runners_after_construction": validate_env_runners_after_construction,
            "env_to_module_connector": env_to_module_connector,
            "module_to_env_connector": module_to_env_connector,
            "observation_filter": observation_filter,
            "backend": backend,
            "ray_address": ray_address,
        }
        if exploration_config is not NotProvided:
            self.exploration(exploration_config=exploration_config)
        self._reject_unknown("env_runners", unknown, values, values)
        return self._set("env_runners", values)

    def env_to_module_factory(self) -> Callable | None:
        """The callable that builds each EnvRunner's env-to-module connector, if any."""
        if self.env_to_module_connector is not None:
            return self.env_to_module_connector
        if self.observation_filter == "MeanStdFilter":
            return lambda env: MeanStdFilter()
        return None

    def build_env_to_module_connector(
        self, env: Any = None, spaces: Any = None, device: Any = None
    ) -> Any:
        """The env-to-module pipeline an EnvRunner builds for `env` (a vector env or an env):
        the configured connector pieces (`env_to_module_connector`, or `observation_filter`)
        with their input spaces set to the env's; an empty pipeline when none is configured.
        `device` is torch's and has no meaning here."""
        if env is None:
            raise ConfigError(
                f"{type(self).__name__}.build_env_to_module_connector(env=None): "
                "give the env (the pipeline's input spaces are its spaces)"
            )
        obs_space = self.observation_space or getattr(
            env, "single_observation_space", env.observation_space
        )
        act_space = self.action_space or getattr(env, "single_action_space", env.action_space)
        factory = self.env_to_module_factory()
        pieces = (
            ConnectorPipelineV2(connectors=[])
            if factory is None
            else call_factory(factory, env, (obs_space, act_space))
        )
        return build_pipeline(pieces, obs_space, act_space)

    def validate_train_batch_size_vs_rollout_fragment_length(self) -> None:
        """RLlib's check: with a fixed `rollout_fragment_length`, whole rounds of sampling
        (runners x sub-envs x fragment) must come within 10% of `train_batch_size`."""
        if self.rollout_fragment_length == "auto" or self.in_evaluation:
            return
        per_round = (
            max(self.num_env_runners, 1)
            * self.num_envs_per_env_runner
            * self.rollout_fragment_length
        )
        rounds = max(1, -(-self.train_batch_size // per_round))
        if per_round * rounds - self.train_batch_size > 0.1 * self.train_batch_size:
            suggested = self.train_batch_size // (
                self.num_envs_per_env_runner * max(self.num_env_runners, 1)
            )
            raise ConfigError(
                f"{type(self).__name__}: train_batch_size={self.train_batch_size} (or a value "
                f"10% off of it) cannot be reached in whole sampling rounds of "
                f"{per_round} env steps (num_env_runners={self.num_env_runners} x "
                f"num_envs_per_env_runner={self.num_envs_per_env_runner} x "
                f"rollout_fragment_length={self.rollout_fragment_length}); set "
                f'rollout_fragment_length to "auto" or to {suggested}'
            )

    def _check_worker_processes_fit(self, name: str) -> None:
        """Refuses more EnvRunner worker processes than this machine's memory could hold even
        at their smallest, before any starts (a typo such as num_env_runners=100000 would
        otherwise start processes until the machine runs out of memory)."""
        if self.backend != "processes":
            return  # Ray places its actors on the cluster
        workers = self.num_env_runners + self.evaluation_num_env_runners
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):  # no sysconf (Windows)
            return
        if workers * WORKER_PROCESS_MIN_BYTES > memory:
            raise ConfigError(
                f"{name}: num_env_runners={self.num_env_runners} and "
                f"evaluation_num_env_runners={self.evaluation_num_env_runners} ask for "
                f"{workers} worker processes on this machine, which need at least "
                f"{workers * WORKER_PROCESS_MIN_BYTES / 2**30:.0f} GiB of memory "
                f"({WORKER_PROCESS_MIN_BYTES // 2**20} MiB each); it has "
                f"{memory / 2**30:.0f} GiB. Use at most "
                f'{memory // WORKER_PROCESS_MIN_BYTES} (or backend="ray" for a cluster)'
            )

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        """Steps per sub-env per `sample()` call. "auto" splits `train_batch_size` over runners
        and sub-envs, giving the remainder to the lowest-indexed runners (as RLlib does)."""
        if self.rollout_fragment_length != "auto":
            return self.rollout_fragment_length
        runners = self.num_env_runners or 1
        per_runner_env = self.train_batch_size / (self.num_envs_per_env_runner * runners)
        length = int(per_runner_env)
        if length != per_runner_env:
            remainder = self.train_batch_size - length * self.num_envs_per_env_runner * runners
            if (max(worker_index, 1) - 1) * self.num_envs_per_env_runner < remainder:
                length += 1
        return max(length, 1)

    def _validate_env_runners(self, name: str) -> None:
        """The worker processes fit this machine, and one env-to-module connector is given."""
        self._check_worker_processes_fit(name)
        if self.env_to_module_connector is not None and self.observation_filter != "NoFilter":
            raise ConfigError(
                f"{name}: env_to_module_connector and observation_filter="
                f"{self.observation_filter!r} are both given; add the MeanStdFilter piece to the "
                "connector's list instead"
            )
