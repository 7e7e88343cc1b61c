"""The `offline_data()` section: where recorded data is read from (`input_`, for the offline
algorithms) and where EnvRunners record what they sample (`output`), in RLlib 2.60's formats,
read and written with pyarrow (`trainer.offline`) instead of Ray Data."""

from __future__ import annotations

import os
import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of
from trainer.errors import ConfigError
from trainer.offline.files import READ_METHODS
from trainer.util.checks import int_at_least, is_bool, is_dict, one_of, optional

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: RLlib's `input_` for "sample from the env".
SAMPLER = "sampler"


def _check_input(v: Any) -> str | None:
    if isinstance(v, (str, os.PathLike)) and str(v):
        return None
    if isinstance(v, (list, tuple)) and v and all(isinstance(p, (str, os.PathLike)) for p in v):
        return None
    return (
        f"{SAMPLER!r} (sample from the env), or a path, glob or folder of recorded data (a "
        "str), or a non-empty list of them"
    )


def _check_output(v: Any) -> str | None:
    if v is None or (isinstance(v, (str, os.PathLike)) and str(v)):
        return None
    return "None (record nothing) or a folder to record the sampled steps into"


def _check_schema(v: Any) -> str | None:
    if isinstance(v, dict) and all(isinstance(k, str) and isinstance(c, str) for k, c in v.items()):
        return None
    return "a dict of RLlib column name (obs, actions, ...) -> the data's column name"


def _check_columns(v: Any) -> str | None:
    if isinstance(v, (list, tuple)) and all(isinstance(c, str) for c in v):
        return None
    return "a list of column names"


def _check_class(v: Any) -> str | None:
    if v is None or isinstance(v, type):
        return None
    return "None or a class (RLlib's OfflineData or OfflinePreLearner, or a subclass)"


#: The settings of `offline_data()`, as `name: (default, check, doc)`.
OFFLINE_DATA_SETTINGS: dict[str, Setting] = settings_of(
    "offline_data",
    {
        "input_": (
            SAMPLER,
            _check_input,
            "where the offline algorithms' data is: paths, globs or folders of parquet (or "
            "JSON) files, local:// taken off; 'sampler': the env",
        ),
        "input_read_method": (
            "read_parquet",
            one_of(*READ_METHODS, "read_binary_files"),
            "read_parquet (.parquet files) or read_json (.json/.jsonl lines); "
            "read_binary_files (a row of bytes per file) for a prelearner_class",
        ),
        "input_read_method_kwargs": (
            {},
            is_dict,
            "Ray Data's read options (override_num_blocks, ...): kept; files are read with "
            "pyarrow, one row group at a time",
        ),
        "input_read_schema": (
            {},
            _check_schema,
            "RLlib column name -> the data's column name, for tables that name them otherwise",
        ),
        "input_read_episodes": (
            False,
            is_bool,
            "the data holds RLlib's serialized episodes (column 'item'), not one row per step",
        ),
        "input_read_batch_size": (
            None,
            optional(int_at_least(1)),
            "rows per prelearner call with prelearner_class or offline_data_class (None: "
            "train_batch_size_per_learner); the fast reader reads row groups",
        ),
        "input_compress_columns": (
            ["obs", "new_obs"],
            _check_columns,
            "the columns RLlib would unpack (its packed values are refused here: they are pickles)",
        ),
        "ignore_final_observation": (
            False,
            is_bool,
            "take new_obs as zeros (a table without it)",
        ),
        "dataset_num_iters_per_learner": (
            None,
            optional(int_at_least(1)),
            "updates per training step (None: one pass over the dataset's rows)",
        ),
        "offline_data_class": (
            None,
            _check_class,
            "RLlib's OfflineData subclass that reads input_ (its data: a Dataset of raw "
            "rows); None: the fast reader, or RLlib's OfflineData with prelearner_class",
        ),
        "prelearner_class": (
            None,
            _check_class,
            "RLlib's OfflinePreLearner subclass that makes episodes of the raw rows "
            "(_map_to_episodes) and hands on their steps as the train batch",
        ),
        "output": (
            None,
            _check_output,
            "record the training EnvRunners' samples under this folder (RLlib's layout)",
        ),
        "output_write_episodes": (
            True,
            is_bool,
            "record whole episodes (column 'item'; needs batch_mode='complete_episodes'), "
            "else one row per env step",
        ),
        "output_max_rows_per_file": (
            None,
            optional(int_at_least(1)),
            "rows per file (None: a file per sample)",
        ),
        "output_write_remaining_data": (
            False,
            is_bool,
            "write the rows short of a file at stop()",
        ),
        "output_compress_columns": (
            ["obs", "new_obs"],
            _check_columns,
            "RLlib's columns to compress: written uncompressed here (as RLlib without lz4)",
        ),
        "output_write_method": (
            "write_parquet",
            one_of("write_parquet"),
            "write_parquet (the one format written here)",
        ),
    },
)


class OfflineDataSection(ConfigBase):
    """RLlib's offline-data settings (`offline_data()`)."""

    input_: Any
    input_read_method: str
    input_read_method_kwargs: dict
    input_read_schema: dict
    input_read_episodes: bool
    input_read_batch_size: int | None
    input_compress_columns: list
    ignore_final_observation: bool
    dataset_num_iters_per_learner: int | None
    offline_data_class: type | None
    prelearner_class: type | None
    output: Any
    output_write_episodes: bool
    output_max_rows_per_file: int | None
    output_write_remaining_data: bool
    output_compress_columns: list
    output_write_method: str

    def offline_data(
        self,
        *,
        input_: Any = NotProvided,
        input_read_method: str = NotProvided,
        input_read_method_kwargs: dict = NotProvided,
        input_read_schema: dict = NotProvided,
        input_read_episodes: bool = NotProvided,
        input_read_batch_size: int | None = NotProvided,
        input_compress_columns: list = NotProvided,
        ignore_final_observation: bool = NotProvided,
        dataset_num_iters_per_learner: int | None = NotProvided,
        offline_data_class: type | None = NotProvided,
        prelearner_class: type | None = NotProvided,
        output: Any = NotProvided,
        output_write_episodes: bool = NotProvided,
        output_max_rows_per_file: int | None = NotProvided,
        output_write_remaining_data: bool = NotProvided,
        output_compress_columns: list = NotProvided,
        output_write_method: str = NotProvided,
        **unknown: Any,
    ) -> Self:
        """Where recorded data is read from and where EnvRunners record their samples.
        `input_`: paths, globs or folders of parquet (or JSON) files in RLlib 2.60's formats,
        read by the offline algorithms (BC, MARWIL, CQL, IQL) with pyarrow, streamed a row
        group at a time; `output`: a folder the training EnvRunners' samples are recorded into, as RLlib's
        `OfflineSingleAgentEnvRunner` writes them. Ray Data's own options are taken and have no
        effect (a warning at build)."""
        values = {
            "input_": input_,
            "input_read_method": input_read_method,
            "input_read_method_kwargs": input_read_method_kwargs,
            "input_read_schema": input_read_schema,
            "input_read_episodes": input_read_episodes,
            "input_read_batch_size": input_read_batch_size,
            "input_compress_columns": input_compress_columns,
            "ignore_final_observation": ignore_final_observation,
            "dataset_num_iters_per_learner": dataset_num_iters_per_learner,
            "offline_data_class": offline_data_class,
            "prelearner_class": prelearner_class,
            "output": output,
            "output_write_episodes": output_write_episodes,
            "output_max_rows_per_file": output_max_rows_per_file,
            "output_write_remaining_data": output_write_remaining_data,
            "output_compress_columns": output_compress_columns,
            "output_write_method": output_write_method,
        }
        self._reject_unknown("offline_data", unknown, values, values)
        return self._set("offline_data", values)

    #: Whether the algorithm learns from `input_` (the offline algorithms set it).
    _LEARNS_OFFLINE = False

    def _validate_offline_data(self, name: str) -> None:
        """`input_` for an algorithm that learns from it; `output` single-agent, and whole
        episodes when episodes are recorded (RLlib's checks)."""
        config: Any = self
        pipeline = self.offline_data_class is not None or self.prelearner_class is not None
        if self.input_read_method not in READ_METHODS and not pipeline:
            raise ConfigError(
                f"{name}.offline_data(input_read_method={self.input_read_method!r}): rows of "
                "raw bytes become train batches through an OfflinePreLearner: give "
                "prelearner_class (or offline_data_class), or read_parquet/read_json data"
            )
        if self.is_offline and not self._LEARNS_OFFLINE:
            raise ConfigError(
                f"{name}.offline_data(input_={self.input_!r}): {name} learns from what its "
                "EnvRunners sample; recorded data is read by the offline algorithms (BC, "
                "MARWIL, CQL, IQL). Leave input_ at 'sampler'"
            )
        if config.offline_evaluation_interval and not self._LEARNS_OFFLINE:
            raise ConfigError(
                f"{name}.evaluation(offline_evaluation_interval="
                f"{config.offline_evaluation_interval!r}): offline evaluation computes an "
                "offline algorithm's loss on recorded data (BC, MARWIL, CQL, IQL); evaluate "
                f"{name[: -len('Config')]} on its env with evaluation_interval"
            )
        if self.output is None:
            return
        if config.is_multi_agent:
            raise ConfigError(
                f"{name}.offline_data(output={self.output!r}): multi-agent recording is not "
                "supported (nor in RLlib 2.60); record a single-agent run"
            )
        if self.output_write_episodes and config.batch_mode != "complete_episodes":
            raise ConfigError(
                f"{name}.offline_data(output={self.output!r}, output_write_episodes=True): "
                "when recording episodes only complete episodes are recorded: set "
                "env_runners(batch_mode='complete_episodes'), or record one row per env step "
                "with offline_data(output_write_episodes=False) (RLlib's check)"
            )

    def _require_recorded_data(self, name: str) -> None:
        """An offline algorithm's check at `validate()`: one agent. The recorded data and the
        spaces are required when it is built (`require_buildable_offline`): RLlib's
        `validate()` passes without them (its own IQL and MARWIL config tests validate such
        configs)."""
        config: Any = self
        if config.is_multi_agent:
            raise ConfigError(
                f"{name}: multi-agent offline learning is not supported (nor by RLlib 2.60's "
                "offline reader)"
            )

    def require_buildable_offline(self) -> None:
        """An offline algorithm's checks when it is built: recorded data to learn from and,
        without an env, the spaces to build its networks for."""
        config: Any = self
        name = type(self).__name__
        algorithm = name[: -len("Config")] if name.endswith("Config") else name
        if not self.is_offline:
            raise ConfigError(
                f"{name}: {algorithm} learns from recorded data: give it with "
                "offline_data(input_=<parquet files, a glob or a folder>); any algorithm "
                "records one with offline_data(output=<folder>)"
            )
        if config.env is None and (config.observation_space is None or config.action_space is None):
            raise ConfigError(
                f"{name}: without an env, {algorithm}'s networks are built for the spaces "
                "given with environment(observation_space=..., action_space=...): give both "
                "(or an env with environment(env))"
            )

    @property
    def is_offline(self) -> bool:
        """Whether the algorithm learns from recorded data (`input_` is not 'sampler')."""
        return self.input_ != SAMPLER

    @property
    def is_online(self) -> bool:
        """Whether samples come from envs (an offline algorithm's config says otherwise)."""
        return not self.is_offline
