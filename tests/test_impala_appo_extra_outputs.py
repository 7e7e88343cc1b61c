"""A user RLModule's extra outputs reach IMPALA's and APPO's torch losses, as RLlib 2.60's
learner pipeline (`AddColumnsFromEpisodesToTrainBatch`) adds every extra model output the
episodes recorded as a column of the train batch: a custom `compute_loss_for_module` reads
`batch["my_value"]`, laid out as the batch's observations (one row per observation; the
steps' rows, `is_step`, carry the steps' outputs; a recurrent module's rows zero-padded into
its sequences, `row_mask`). Through the public API, sampled in the Algorithm's process and in
an EnvRunner process, with minibatches (`take_steps`) and without."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tests.test_extra_model_outputs import ExtraValuePPOModule, ScratchModule, my_value
from trainer import APPOConfig, IMPALAConfig, RLModuleSpec
from trainer.algorithms.appo.torch_learner import APPOTorchLearner
from trainer.algorithms.impala.torch_learner import IS_STEP, ROW_MASK, IMPALATorchLearner
from trainer.compat.rllib_utils import Columns

#: Per loss call of either recording learner: (algorithm, "my_value"'s shape, "my_pair"'s
#: shape or None, the batch's observations' shape).
SEEN: list[tuple[str, tuple, tuple | None, tuple]] = []


def check_extra_columns(batch: dict[str, Any], algorithm: str) -> None:
    """The extra columns, row by row, against the batch's observations: equal on every step
    row; a chunk's bootstrap row repeats its last step's output (RLlib's
    `AddOneTsToEpisodesAndTruncate`)."""
    obs = batch[Columns.OBS]
    mask = batch.get(ROW_MASK)
    rows = (lambda x: x[mask]) if mask is not None else (lambda x: x)
    is_step = batch[IS_STEP]
    value = rows(batch["my_value"])
    assert len(value) == len(is_step)
    torch.testing.assert_close(value[is_step], my_value(rows(obs))[is_step])
    # Every row repeats the last step before it or is a step (a bootstrap row is never first).
    last_step = torch.cumsum(is_step.long(), 0) - 1
    torch.testing.assert_close(value, value[is_step][last_step])
    pair = batch.get("my_pair")
    if pair is not None:
        torch.testing.assert_close(rows(pair)[is_step], (rows(obs) * 3.0)[is_step][:, :2])
    for skipped in (Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS, Columns.STATE_OUT):
        assert skipped not in batch
    SEEN.append(
        (
            algorithm,
            tuple(batch["my_value"].shape),
            None if pair is None else tuple(pair.shape),
            tuple(obs.shape),
        )
    )


class RecordingIMPALALearner(IMPALATorchLearner):
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):  # type: ignore[no-untyped-def]
        check_extra_columns(batch, "IMPALA")
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


class RecordingAPPOLearner(APPOTorchLearner):
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):  # type: ignore[no-untyped-def]
        check_extra_columns(batch, "APPO")
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


LEARNERS = {IMPALAConfig: RecordingIMPALALearner, APPOConfig: RecordingAPPOLearner}


def small_config(
    config_class: type,
    num_env_runners: int,
    module_class: type,
    fragment: int = 25,
    **model_config: Any,
) -> Any:
    return (
        config_class()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=fragment)
        .training(train_batch_size=50, learner_class=LEARNERS[config_class])
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=module_class, model_config={"fcnet_hiddens": [8], **model_config}
            )
        )
        # (each iteration waits for a learner update: the learner runs in a thread of its own,
        # whose first update may come after many short iterations on a loaded machine)
        .reporting(
            min_time_s_per_iteration=0,
            min_sample_timesteps_per_iteration=50,
            min_train_timesteps_per_iteration=1,
        )
        .debugging(seed=3)
    )


def train_until_the_loss_ran(config: Any, calls: int = 1) -> list[tuple]:
    """Trains (at most 30 iterations, each with a learner update) until the loss ran `calls`
    times; what the loss saw."""
    SEEN.clear()
    algo = config.build()
    try:
        for _ in range(30):
            algo.train()
            if len(SEEN) >= calls:
                break
    finally:
        algo.stop()
    assert len(SEEN) >= calls, "the loss never ran"
    return list(SEEN)


@pytest.mark.parametrize("num_env_runners", [0, 1])
@pytest.mark.parametrize(
    ("config_class", "module_class"),
    [(IMPALAConfig, ScratchModule), (APPOConfig, ExtraValuePPOModule)],
    ids=["IMPALA-scratch", "APPO-ppo-module"],
)
def test_a_modules_extra_outputs_reach_the_impala_and_appo_losses(
    config_class: type, module_class: type, num_env_runners: int
) -> None:
    seen = train_until_the_loss_ran(small_config(config_class, num_env_runners, module_class))
    for algorithm, value_shape, pair_shape, obs_shape in seen:
        assert algorithm == config_class.__name__[:-6]
        assert value_shape == obs_shape[:1]  # one per observation row
        assert pair_shape == ((obs_shape[0], 2) if module_class is ScratchModule else None)


LSTM = {"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 10}


@pytest.mark.parametrize("recurrent", [False, True], ids=["feedforward", "recurrent"])
@pytest.mark.parametrize("config_class", [IMPALAConfig, APPOConfig])
def test_extra_outputs_survive_minibatches_that_cut_the_chunks(
    config_class: type, recurrent: bool
) -> None:
    """The learner's update in minibatches of 7 steps (`take_steps`; RLlib's
    `Learner.update(episodes=..., minibatch_size=...)`), which cut the sampled chunks: each
    minibatch's column holds its own steps' outputs, aligned with its observations (a
    recurrent module's in the sequences of its pieces of chunks), and the bootstrap row
    after a cut piece repeats the piece's last step's output."""
    # (ScratchModule has no state: a recurrent one is the default module, with "my_value")
    module_class, model_config = (ExtraValuePPOModule, LSTM) if recurrent else (ScratchModule, {})
    algo = small_config(config_class, 0, module_class, **model_config).build()
    try:
        episodes = algo.env_runner.sample(num_timesteps=40)
        steps = sum(len(episode) for episode in episodes)
        chunk_ends = set(np.cumsum([len(episode) for episode in episodes]).tolist())
        assert set(range(7, steps, 7)) - chunk_ends, "no minibatch cuts a chunk"
        SEEN.clear()
        algo.learner.update(episodes, minibatch_size=7, num_minibatches=4)
    finally:
        algo.stop()
    assert len(SEEN) == 4
    for _, value_shape, _, obs_shape in SEEN:
        assert value_shape == obs_shape[: 2 if recurrent else 1]


@pytest.mark.parametrize("config_class", [IMPALAConfig, APPOConfig])
def test_a_recurrent_modules_extra_outputs_pad_into_sequences(config_class: type) -> None:
    """A recurrent module's extra column is `(sequences, max_seq_len)`, as its observations,
    its real rows (`row_mask`) the batch's rows in order."""
    config = small_config(config_class, 0, ExtraValuePPOModule, fragment=10, **LSTM)
    seen = train_until_the_loss_ran(config)
    for _, value_shape, _, obs_shape in seen:
        assert len(value_shape) == 2 and value_shape == obs_shape[:2] and value_shape[1] == 10


# -- RLlib's column batch: `update(batch=...)` -------------------------------------------------
def column_batch(rows: int, seed: int = 0) -> dict[str, Any]:
    """An APPO column batch (RLlib's `update(batch=...)`) of CartPole rows, with a user
    module's "my_value" column and columns that are not extra outputs."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1.0, 1.0, size=(rows, 4)).astype(np.float32)
    return {
        Columns.OBS: obs,
        Columns.ACTIONS: rng.integers(2, size=rows).astype(np.float32),
        Columns.REWARDS: np.ones(rows, dtype=np.float32),
        Columns.TERMINATEDS: np.array([0] * (rows - 1) + [1], dtype=np.float32),
        Columns.ACTION_LOGP: np.full(rows, np.log(0.5), dtype=np.float32),
        Columns.LOSS_MASK: np.array([True] * (rows // 2 - 1) + [False] + [True] * (rows // 2)),
        "my_value": my_value(obs),
        Columns.INFOS: [{}] * rows,  # (objects: no extra output)
        Columns.EPS_ID: np.array([f"ep{i // 5}" for i in range(rows)]),  # (strings: neither)
        Columns.STATE_IN: {"h": np.zeros((rows, 2), dtype=np.float32)},  # (nested: neither)
        "ragged": [[0.0] * (i % 3) for i in range(rows)],  # (no array: neither)
    }


def test_a_column_batchs_other_columns_are_its_extra_outputs() -> None:
    """`trajectory_batch_from_columns` (APPO's `update(batch=...)`): every numeric column of
    one row per batch row that it does not read itself is an extra output, its steps' rows
    (not the bootstrap row `loss_mask` leaves out); objects, strings, nested and ragged
    columns are not."""
    from trainer.algorithms.appo.appo_learner import trajectory_batch_from_columns

    columns = column_batch(10)
    batch = trajectory_batch_from_columns(columns, 10, lambda obs: obs, discrete_actions=True)
    assert set(batch.extra_model_outputs) == {"my_value"}
    steps = columns[Columns.LOSS_MASK]
    np.testing.assert_array_equal(
        batch.extra_model_outputs["my_value"], my_value(columns["obs"])[steps]
    )
    assert len(batch.extra_model_outputs["my_value"]) == batch.num_steps


def test_appos_update_on_a_column_batch_gives_the_loss_its_extra_columns() -> None:
    """A user's APPO loss reads `batch["my_value"]` from the column batch given to
    `LearnerGroup.update(batch=...)` (RLlib's loss gets the whole batch), laid out as the
    observations (`check_extra_columns`: each step's row its own value, the bootstrap rows
    repeating the step before)."""
    import gymnasium as gym

    from trainer.compat.sample_batch import SampleBatch

    rows = 10
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(rollout_fragment_length=rows)
        .training(learner_class=RecordingAPPOLearner, model={"fcnet_hiddens": [8]})
    )
    learner_group = config.build_learner_group(env=gym.make("CartPole-v1"))
    columns = column_batch(rows)
    del columns["ragged"]  # (a SampleBatch, RLlib's as this one, stacks each column)
    SEEN.clear()
    (results,) = learner_group.update(batch=SampleBatch(columns).as_multi_agent())
    assert np.isfinite(results["total_loss"])
    assert [(algorithm, value_shape) for algorithm, value_shape, _, _ in SEEN] == [
        ("APPO", (rows + 1,))  # the rows and the last step's bootstrap row
    ]
