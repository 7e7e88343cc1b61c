"""Offline data (`offline_data()`): recording what EnvRunners sample in RLlib's two formats,
reading datasets (schemas, globs, folders, JSON lines, streaming), the refusals, and the
offline algorithms (BC, MARWIL): gradients against finite differences, learning CartPole from
recorded expert data, exact checkpoint resume."""

from __future__ import annotations

import glob
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainer import Algorithm, BCConfig, MARWILConfig, PPOConfig
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.marwil.marwil_learner import MARWILLearner
from trainer.core.models import SpaceInfo
from trainer.errors import NotSupported
from trainer.offline.codec import episode_columns, unpack_episode
from trainer.offline.reading import MIN_POOL_ROWS, DatasetSchemaError, OfflineData
from trainer.offline.recording import OfflineRecorder


def _files(folder: Path) -> list[str]:
    return sorted(glob.glob(str(folder / "**" / "*.parquet"), recursive=True))


# -- recording ---------------------------------------------------------------------------------
def test_column_recording_writes_rllibs_rows_in_files_of_the_asked_size(tmp_path):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(train_batch_size=500, minibatch_size=100, num_epochs=1)
        .offline_data(
            output=str(tmp_path / "data"), output_write_episodes=False, output_max_rows_per_file=200
        )
    )
    algo = config.build()
    try:
        algo.train()
    finally:
        algo.stop()
    files = _files(tmp_path / "data")
    # 500 steps sampled by runner 1: two files of 200 rows (the rest is not written, as RLlib
    # without output_write_remaining_data).
    assert [Path(f).parent.name for f in files] == ["run-000001-00001", "run-000001-00002"]
    assert all(Path(f).parent.parent.name == "cartpole-v1" for f in files)
    table = pa.concat_tables([pq.read_table(f) for f in files])
    assert table.num_rows == 400
    for name in (
        "eps_id",
        "obs",
        "actions",
        "rewards",
        "new_obs",
        "terminateds",
        "truncateds",
        "action_logp",
        "action_dist_inputs",
    ):
        assert name in table.column_names, name
    rows = table.to_pydict()
    # Within an episode each row's new_obs is the next row's obs; only its last row ends it.
    for i in range(len(rows["obs"]) - 1):
        if rows["eps_id"][i] == rows["eps_id"][i + 1]:
            np.testing.assert_array_equal(rows["new_obs"][i], rows["obs"][i + 1])
            assert not rows["terminateds"][i]


def test_episode_recording_writes_whole_episodes_as_msgpack_items(tmp_path):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, batch_mode="complete_episodes")
        .training(train_batch_size=300, minibatch_size=100, num_epochs=1)
        .offline_data(
            output=str(tmp_path / "data"),
            output_write_remaining_data=True,
            output_max_rows_per_file=1000,
        )
    )
    algo = config.build()
    try:
        result = algo.train()
    finally:
        algo.stop()
    files = _files(tmp_path / "data")
    assert len(files) == 1  # the remainder, written at stop()
    items = pq.read_table(files[0]).column("item").to_pylist()
    assert len(items) == result["env_runners"]["num_episodes"]
    returns = []
    for item in items:
        episode = episode_columns(unpack_episode(item))
        assert episode["terminated"] or episode["truncated"]
        assert len(episode["obs"]) == len(episode["actions"]) + 1
        returns.append(sum(episode["rewards"]))
    assert np.mean(returns) == pytest.approx(result["env_runners"]["episode_return_mean"])


class FakeEpisode:
    """A done CartPole episode of `steps` steps, with `action_logp` when `logp` is given."""

    id_, is_terminated, is_truncated, t_started = "e", True, False, 0

    def __init__(self, steps: int, logp: float | None = None):
        self.steps = steps
        self.extra_model_outputs = {} if logp is None else {"action_logp": [logp] * steps}

    def __len__(self):
        return self.steps

    def get_observations(self):
        return [np.full(4, i, np.float32) for i in range(self.steps + 1)]

    def get_actions(self):
        return [1] * self.steps

    def get_rewards(self):
        return [1.0] * self.steps

    def get_extra_model_outputs(self, key):
        return self.extra_model_outputs[key]


def test_an_extra_output_some_episodes_lack_stays_out_of_their_files(tmp_path):
    """Each column of a file holds the values of its rows: an episode without `action_logp`
    held beside one with it leaves the column out of their file; the next file, of episodes
    that all have it, holds it."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .offline_data(
            output=str(tmp_path / "data"), output_write_episodes=False, output_max_rows_per_file=2
        )
    )
    recorder = OfflineRecorder(config)
    # Held: the first without action_logp, the second's two rows with it: the first file (the
    # first's row and the second's first row) leaves it out, as does the second (the second's
    # last row and a one-step episode); the third, of one episode, holds it.
    recorder.record(1, [FakeEpisode(1), FakeEpisode(2, logp=-0.5)])
    recorder.record(1, [FakeEpisode(1, logp=-0.6)])
    recorder.record(1, [FakeEpisode(2, logp=-0.7)])
    first, second, third = (pq.read_table(f) for f in _files(tmp_path / "data"))
    assert "action_logp" not in first.column_names and first.num_rows == 2
    assert "action_logp" not in second.column_names and second.num_rows == 2
    assert third.column("action_logp").to_pylist() == [-0.7, -0.7]


def test_files_of_finished_and_unfinished_chunks_share_one_schema(tmp_path):
    """The EnvRunners give `weights_seq_no` to finished chunks only: recorded, it made a file
    of unfinished chunks lack a column its neighbours had, and readers that concatenate the
    files failed (pyarrow: "Schema at index 1 was different")."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .offline_data(
            output=str(tmp_path / "data"), output_write_episodes=False, output_max_rows_per_file=2
        )
    )
    recorder = OfflineRecorder(config)
    finished = FakeEpisode(2, logp=-0.5)
    finished.extra_model_outputs["weights_seq_no"] = [3, 3]
    recorder.record(1, [finished])
    recorder.record(1, [FakeEpisode(2, logp=-0.6)])  # an unfinished chunk: no seq no
    tables = [pq.read_table(f) for f in _files(tmp_path / "data")]
    assert len(tables) == 2
    assert tables[0].schema == tables[1].schema
    assert pa.concat_tables(tables).num_rows == 4


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .offline_data(output=str(tmp_path / "data"), output_write_episodes=False)
    )
    recorder = OfflineRecorder(config)

    def broken_write(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken_write)
    with pytest.raises(OSError, match="disk full"):
        recorder.record(1, [FakeEpisode(1)])
    assert _files(tmp_path / "data") == []
    monkeypatch.undo()
    recorder.record(1, [FakeEpisode(1)])
    assert len(_files(tmp_path / "data")) == 1


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (
            lambda: PPOConfig().environment("CartPole-v1").offline_data(output="x").validate(),
            "only complete episodes are recorded",
        ),
        (
            lambda: PPOConfig().environment("CartPole-v1").offline_data(input_="data").validate(),
            "PPOConfig learns from what its EnvRunners sample",
        ),
        # (Checked when built: RLlib's validate() passes without input_.)
        (lambda: BCConfig().environment("CartPole-v1").build(), "BC learns from recorded data"),
        (
            lambda: (
                BCConfig()
                .environment("CartPole-v1")
                .offline_data(input_="d")
                .training(beta=0.5)
                .validate()
            ),
            "`beta` parameter must be 0.0",
        ),
        (
            lambda: (
                MARWILConfig()
                .environment("CartPole-v1")
                .offline_data(input_="d")
                .training(beta=1.5)
                .validate()
            ),
            "`beta` must be within 0.0 and 1.0",
        ),
        (lambda: PPOConfig().offline_data(input_=3), "input_ must be 'sampler'"),
        (lambda: PPOConfig().offline_data(input_read_method="read_csv"), "input_read_method"),
    ],
)
def test_bad_offline_settings_are_refused_with_the_setting_named(call, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace("`", "`")):
        call()


def test_input_read_sample_batches_is_refused_as_unsupported():
    with pytest.raises(NotSupported, match="SampleBatch"):
        PPOConfig().offline_data(input_read_sample_batches=True)


# -- reading -----------------------------------------------------------------------------------
def _expert_table(steps: int, seed: int = 0) -> pa.Table:
    """CartPole played by a hand-written controller (push towards where the pole falls):
    RLlib's column layout, one row per env step."""
    env = gym.make("CartPole-v1")
    rows: dict[str, list] = {
        key: []
        for key in ("eps_id", "obs", "actions", "rewards", "new_obs", "terminateds", "truncateds")
    }
    obs, _ = env.reset(seed=seed)
    episode = 0
    for _ in range(steps):
        action = int(obs[2] + 0.5 * obs[3] > 0)
        new_obs, reward, terminated, truncated, _ = env.step(action)
        for key, value in (
            ("eps_id", str(episode)),
            ("obs", obs.tolist()),
            ("actions", action),
            ("rewards", reward),
            ("new_obs", new_obs.tolist()),
            ("terminateds", terminated),
            ("truncateds", truncated),
        ):
            rows[key].append(value)
        obs = new_obs
        if terminated or truncated:
            episode += 1
            obs, _ = env.reset()
    return pa.table(rows)


def _offline(input_, **settings):
    config = PPOConfig().environment("CartPole-v1").offline_data(input_=input_, **settings)
    env = gym.make("CartPole-v1")
    return OfflineData(config, env.observation_space, env.action_space, seed=0)


def test_a_dataset_streams_by_row_group_through_a_bounded_pool(tmp_path):
    table = _expert_table(3000)
    for i in range(3):
        pq.write_table(
            table.slice(i * 1000, 1000), tmp_path / f"part-{i}.parquet", row_group_size=100
        )
    data = _offline(str(tmp_path))
    assert sum(pq.ParquetFile(f).num_row_groups for f in data.files) == 30
    seen = []
    for _ in range(MIN_POOL_ROWS // 100 + 20):
        batch = data.sample(100)
        assert len(batch["obs"]) == 100 and batch["obs"].shape == (100, 4)
        assert batch["actions"].dtype == np.int64
        # Never more in memory than the pool's size and one row group.
        assert len(data._pool["obs"]) <= MIN_POOL_ROWS + 100
        seen.append(batch["obs"])
    assert data.epochs >= 2 and data.rows_read >= 3 * 3000
    # Every recorded row was handed out.
    handed = np.unique(np.concatenate(seen), axis=0)
    assert len(handed) == len(
        np.unique(np.asarray(table.column("obs").to_pylist(), np.float32), axis=0)
    )


def test_paths_globs_local_scheme_and_json_lines(tmp_path):
    table = _expert_table(200)
    pq.write_table(table, tmp_path / "a.parquet")
    pq.write_table(table, tmp_path / "b.parquet")
    assert len(_offline(f"local://{tmp_path}/*.parquet").files) == 2
    assert len(_offline([str(tmp_path / "a.parquet")]).files) == 1
    with open(tmp_path / "c.jsonl", "w") as out:
        import json

        for row in table.to_pylist():
            out.write(json.dumps(row) + "\n")
    data = _offline(str(tmp_path / "c.jsonl"), input_read_method="read_json")
    assert data.sample(50)["new_obs"].shape == (50, 4)
    with pytest.raises(FileNotFoundError, match=r"no \.parquet files there"):
        _offline(str(tmp_path / "missing"))
    with pytest.raises(NotSupported, match="only local files"):
        _offline("s3://bucket/data")


def test_a_table_of_other_names_reads_through_input_read_schema(tmp_path):
    table = _expert_table(100).rename_columns(
        ["episode_id", "o_t", "a_t", "r_t", "o_tp1", "d_t", "truncateds"]
    )
    pq.write_table(table, tmp_path / "x.parquet")
    with pytest.raises(
        DatasetSchemaError,
        match=r"x\.parquet \(row group 0\): no column 'obs'; the table has "
        r"'episode_id', 'o_t'.*input_read_schema=\{'obs': '<column>'\}",
    ):
        _offline(str(tmp_path)).sample(10)
    data = _offline(
        str(tmp_path),
        input_read_schema={
            "obs": "o_t",
            "actions": "a_t",
            "rewards": "r_t",
            "new_obs": "o_tp1",
            "terminateds": "d_t",
            "eps_id": "episode_id",
        },
    )
    batch = data.sample(100)
    assert batch["terminateds"].sum() == np.asarray(table.column("d_t")).sum()


def test_rllibs_packed_columns_and_wrong_shapes_are_refused_by_name(tmp_path):
    table = _expert_table(20)
    packed = table.set_column(1, "obs", pa.array(["BCJNGGhA..."] * 20))
    pq.write_table(packed, tmp_path / "p.parquet")
    with pytest.raises(DatasetSchemaError, match="column 'obs' .*RLlib's packed values"):
        _offline(str(tmp_path)).sample(5)
    (tmp_path / "p.parquet").unlink()
    wrong = table.set_column(1, "obs", pa.array([[1.0, 2.0]] * 20))
    pq.write_table(wrong, tmp_path / "w.parquet")
    with pytest.raises(DatasetSchemaError, match="column 'obs' .* holds 2 values a row"):
        _offline(str(tmp_path)).sample(5)


# -- the offline algorithms --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env_id", "beta", "logstd"),
    [("CartPole-v1", 1.0, 0.0), ("Pendulum-v1", 0.7, 0.5), ("Pendulum-v1", 0.0, 0.0)],
)
def test_marwil_gradients_match_finite_differences(env_id, beta, logstd):
    """The policy parameters' gradient is the policy loss's (the weights w held, as RLlib
    detaches them); the value parameters' is vf_coeff times the value loss's (the targets
    held)."""
    env = gym.make(env_id)
    config = (
        MARWILConfig()
        .environment(env_id)
        .training(
            beta=beta,
            bc_logstd_coeff=logstd,
            vf_coeff=0.6,
            gamma=0.9,
            moving_average_sqd_adv_norm_update_rate=0.3,
        )
        # Separate policy and value networks: the weights w depend on V(s) and no gradient
        # flows through them, which finite differences through a shared encoder would see.
        .rl_module(
            model_config={
                "fcnet_hiddens": [5, 4],
                "fcnet_activation": "tanh",
                "vf_share_layers": False,
            }
        )
        .debugging(seed=0)
    )
    module = config.build_module(
        SpaceInfo.from_spaces(env.observation_space, env.action_space), seed=0
    )
    for _, net in module._named_nets():
        if net is not None:
            net.params[:] = [p.astype(np.float64) for p in net.params]
    module.__dict__.pop("_gradients", None)
    learner = MARWILLearner(config, module)
    rng = np.random.default_rng(3)
    n = 7
    batch = {
        "obs": rng.standard_normal((n,) + env.observation_space.shape),
        "new_obs": rng.standard_normal((n,) + env.observation_space.shape),
        "actions": (
            rng.integers(0, 2, n) if env_id == "CartPole-v1" else rng.uniform(-1, 1, (n, 1))
        ),
        "rewards": rng.standard_normal(n),
        "terminateds": rng.random(n) < 0.3,
    }
    # The first call freezes the weights the targets come from: the perturbations below leave
    # them as they are (checked at the end).
    targets = learner.value_targets(batch)
    start = learner.moving_average_sqd_adv_norm

    def losses() -> dict:
        learner.moving_average_sqd_adv_norm = start
        return learner.loss_and_grads(batch)

    weights_stats = losses()
    grads = [g.copy() for g in module.gradient_buffer()[1]]
    assert math.isfinite(weights_stats["total_loss"])
    # The weights w of the analytic gradient, held for the finite differences of the policy.
    names = module.parameter_names()
    eps = 1e-6
    for name, param, grad in zip(names, module.parameters(), grads, strict=True):
        flat, flat_grad = param.reshape(-1), grad.reshape(-1)
        for j in range(0, flat.size, max(1, flat.size // 4)):
            saved = flat[j]
            values = []
            for delta in (eps, -eps):
                flat[j] = saved + delta
                stats = losses()
                if name.startswith("vf"):
                    values.append(0.6 * stats.get("vf_loss", 0.0))
                else:
                    values.append(stats["policy_loss"])
            flat[j] = saved
            numeric = (values[0] - values[1]) / (2 * eps)
            assert flat_grad[j] == pytest.approx(numeric, rel=1e-4, abs=1e-7), (name, j)
    for param in module.parameters():
        param += 0.1
    np.testing.assert_array_equal(learner.value_targets(batch), targets)


def _offline_config(data: Path, config_class: type = BCConfig) -> BCConfig:
    return (
        config_class()
        .environment("CartPole-v1")
        .offline_data(input_=f"local://{data}", dataset_num_iters_per_learner=10)
        .training(train_batch_size_per_learner=256, lr=3e-3)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        # Evaluated on the local EnvRunner (evaluation runner processes: the launcher tests'
        # script below).
        .evaluation(
            evaluation_interval=6,
            evaluation_num_env_runners=0,
            evaluation_duration=5,
            evaluation_config={"explore": False},
        )
        .debugging(seed=0)
    )


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_bc_and_marwil_learn_cartpole_from_recorded_expert_steps(tmp_path, framework):
    pq.write_table(_expert_table(6000), tmp_path / "expert.parquet", row_group_size=1000)
    for config in (_offline_config(tmp_path), _offline_config(tmp_path, MARWILConfig)):
        config.framework(framework)
        algo = config.build()
        try:
            for _ in range(12):
                result = algo.train()
        finally:
            algo.stop()
        learner = result["learners"]["default_policy"]
        assert result["num_env_steps_sampled_lifetime"] == 12 * 256
        assert result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"] == (
            12 * 10 * 256
        )
        assert learner["default_optimizer_learning_rate"] == 3e-3
        if config.beta:
            assert {"vf_loss", "vf_explained_variance", "moving_avg_sqd_adv_norm"} <= set(learner)
        assert result["evaluation"]["env_runners"]["episode_return_mean"] >= 150, type(config)


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_a_marwil_checkpoint_restores_weights_optimizer_moving_average_and_targets(
    tmp_path, framework
):
    """The value targets come from the module's weights at the first update for the whole
    run (RLlib 2.60's OfflinePreLearner maps the dataset once, with the learner's weights
    when reading began); a checkpoint keeps them, so a restored run goes on with the same
    targets."""
    pq.write_table(_expert_table(1000), tmp_path / "expert.parquet")
    config = (
        _offline_config(tmp_path, MARWILConfig)
        .framework(framework)
        .evaluation(evaluation_interval=None, evaluation_num_env_runners=0)
        .training(moving_average_sqd_adv_norm_update_rate=0.1)
    )
    first = config.build()
    try:
        initial = first.learner.get_state()
        assert "value_targets_weights" not in initial
        for _ in range(2):
            first.train()
        path = first.save_to_path(str(tmp_path / "ckpt"))
        resumed = Algorithm.from_checkpoint(path)
        expected = first.learner.get_state()
        rng = np.random.default_rng(0)
        batch = {
            "new_obs": rng.standard_normal((5, 4)).astype(np.float32),
            "rewards": np.ones(5, np.float32),
            "terminateds": np.array([False, True, False, False, False]),
        }
        if framework == "torch":
            import torch

            batch = {key: torch.as_tensor(value) for key, value in batch.items()}
        targets = np.asarray(first.learner.value_targets(batch))
    finally:
        first.stop()
    try:
        assert type(resumed).__name__ == "MARWIL"
        state = resumed.learner.get_state()
        assert state["moving_average_sqd_adv_norm"] == expected["moving_average_sqd_adv_norm"]
        assert expected["moving_average_sqd_adv_norm"] != 100.0
        for name, weights in expected["module"].items():
            np.testing.assert_array_equal(state["module"][name], weights, err_msg=name)
            # The targets' weights: the module's before its first update, kept as it trains.
            np.testing.assert_array_equal(
                state["value_targets_weights"][name], initial["module"][name], err_msg=name
            )
            assert not np.array_equal(weights, initial["module"][name]), name
        assert math.isfinite(resumed.train()["learners"]["default_policy"]["total_loss"])
        np.testing.assert_array_equal(np.asarray(resumed.learner.value_targets(batch)), targets)
    finally:
        resumed.stop()


@pytest.mark.parametrize("fmt", ["columns", "episodes"])
def test_the_record_command_records_a_checkpoints_policy(tmp_path, fmt, capsys):
    """`python -m trainer record CHECKPOINT --output DIR`: whole episodes of the checkpoint's
    policy as RLlib's offline data, which BC then reads."""
    from trainer.cli import main

    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=400, minibatch_size=100, num_epochs=1)
        .build()
    )
    try:
        algo.train()
        checkpoint = algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    status = main(
        [
            "record",
            str(checkpoint),
            "--output",
            str(tmp_path / "data"),
            "--env-steps",
            "300",
            "--format",
            fmt,
            "--rows-per-file",
            "100",
        ]
    )
    assert status == 0
    out = capsys.readouterr().out
    assert "env steps of" in out and f"files, {fmt})" in out
    files = _files(tmp_path / "data")
    assert files and all("/cartpole-v1/run-000000-" in f for f in files)
    table = pa.concat_tables([pq.read_table(f) for f in files])
    if fmt == "columns":
        assert table.num_rows >= 300 and table.column("terminateds").to_pylist()[-1] in (
            True,
            False,
        )
    config = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(tmp_path / "data"), input_read_episodes=fmt == "episodes")
        .training(train_batch_size_per_learner=64)
    )
    bc = config.build()
    try:
        assert math.isfinite(bc.train()["learners"]["default_policy"]["policy_loss"])
    finally:
        bc.stop()


#: An RLlib script in the style of RLlib's tuned offline examples (its own settings): BC or
#: MARWIL on recorded CartPole data, evaluated on the env, stopped at a return as `--as-test`.
RLLIB_OFFLINE_SCRIPT = """
from pathlib import Path

from ray.rllib.algorithms.{module} import {config}
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN, EVALUATION_RESULTS
from ray.rllib.utils.test_utils import (
    add_rllib_example_script_args,
    run_rllib_example_script_experiment,
)

parser = add_rllib_example_script_args()
args = parser.parse_args()
data_path = "local://" / Path(__file__).parent / "data"
config = (
    {config}()
    .environment("CartPole-v1")
    .offline_data(
        input_=[data_path.as_posix()],
        map_batches_kwargs={{"concurrency": 2, "num_cpus": 1}},
        iter_batches_kwargs={{"prefetch_batches": 1}},
        dataset_num_iters_per_learner=10,
    )
    .training(train_batch_size_per_learner=256, lr=3e-3)
    .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32]))
    .evaluation(
        evaluation_interval=3,
        evaluation_num_env_runners=1,
        evaluation_duration=5,
        evaluation_parallel_to_training=True,
        evaluation_config={{"explore": False}},
    )
)
stop = {{f"{{EVALUATION_RESULTS}}/{{ENV_RUNNER_RESULTS}}/{{EPISODE_RETURN_MEAN}}": 150.0,
        "training_iteration": 60}}
if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args, stop=stop)
"""


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.parametrize(("module", "config"), [("bc", "BCConfig"), ("marwil", "MARWILConfig")])
def test_an_rllib_offline_script_runs_unmodified_through_the_launcher(tmp_path, module, config):
    from test_launcher import run_script

    (tmp_path / "data").mkdir()
    pq.write_table(_expert_table(6000), tmp_path / "data" / "expert.parquet", row_group_size=500)
    ran = run_script(
        tmp_path,
        RLLIB_OFFLINE_SCRIPT.format(module=module, config=config),
        "--as-test",
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    assert "of 150.0 reached" in ran.stdout, ran.stdout[-2000:]


@pytest.mark.parametrize("evaluation_runners", [0, 2])
def test_the_evaluation_runners_record_their_episodes_too(tmp_path, evaluation_runners):
    """As RLlib's (its evaluation runners are recording runners too): each evaluation's
    episodes, one row each (`output_write_episodes`), the rest written at stop; in folders of
    their own beside the training runners' (no file takes another's name)."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(batch_mode="complete_episodes")
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .offline_data(
            output=str(tmp_path / "data"),
            output_max_rows_per_file=4,
            output_write_remaining_data=True,
        )
        .evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=evaluation_runners,
            evaluation_duration=3,
            evaluation_duration_unit="episodes",
        )
    )
    algo = config.build()
    try:
        algo.train()  # (one evaluation)
        for _ in range(2):
            algo.evaluate()
    finally:
        algo.stop()
    files = _files(tmp_path / "data")
    evaluation = [f for f in files if Path(f).parent.name.startswith("evaluation-run-")]
    training = [f for f in files if Path(f).parent.name.startswith("run-")]
    assert evaluation and training and len(evaluation) + len(training) == len(files)
    rows = pa.concat_tables([pq.read_table(f) for f in evaluation])
    assert rows.num_rows == 9  # 3 evaluations of 3 episodes, one row per episode
    indices = {int(Path(f).parent.name.split("-")[2]) for f in evaluation}
    assert indices == ({0} if evaluation_runners == 0 else {1, 2})
    for item in rows.column("item").to_pylist():
        episode = episode_columns(unpack_episode(item))
        assert episode["terminated"] or episode["truncated"]


@pytest.mark.cli
def test_an_rllib_script_counts_the_recorded_rows_with_ray_data(tmp_path):
    """RLlib's recording example reads its data back with `ray.data.read_parquet(...)`: served
    over pyarrow (rows, columns, batches); Ray Data's other calls are refused when used."""
    from test_launcher import run_script

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size=300, minibatch_size=100, num_epochs=1)
        .offline_data(
            output=str(tmp_path / "data"), output_write_episodes=False, output_max_rows_per_file=100
        )
    )
    algo = config.build()
    try:
        algo.train()
    finally:
        algo.stop()
    table = pa.concat_tables([pq.read_table(f) for f in _files(tmp_path / "data")])
    ran = run_script(
        tmp_path,
        f"""
        import ray
        from ray.rllib.core.columns import Columns

        ds = ray.data.read_parquet("local://{tmp_path / "data"}")
        print("rows", ds.count(), len(ds.take_all()))
        print("obs", ds.take_batch(4)[Columns.OBS].shape, Columns.REWARDS in ds.columns())
        try:
            ds.streaming_split(2)
        except ImportError as error:
            print("refused:", error)
        """,
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    assert f"rows {table.num_rows} {table.num_rows}" in ran.stdout
    assert "obs (4, 4) True" in ran.stdout
    assert (
        "refused: ray.data.Dataset.streaming_split is not available in localrl: it needs Ray Data"
        in (ran.stdout)
    )


# -- offline evaluation ------------------------------------------------------------------------
def _mark_offline_evaluation(*, evaluation_metrics, **kwargs):
    evaluation_metrics["marked_by"] = "on_evaluate_offline_end"


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_offline_evaluation_reports_the_loss_on_recorded_data_and_changes_nothing(
    tmp_path, framework
):
    """RLlib's eval_loss offline evaluation: the learner's loss on the evaluation's own
    batches (here another dataset, through evaluation_config), under RLlib's keys, every
    offline_evaluation_interval iterations; the learner (weights, moving average) is left as
    it was."""
    (tmp_path / "train").mkdir()
    (tmp_path / "held_out").mkdir()
    pq.write_table(_expert_table(2000), tmp_path / "train" / "steps.parquet")
    pq.write_table(_expert_table(1000, seed=7), tmp_path / "held_out" / "steps.parquet")
    config = (
        _offline_config(tmp_path / "train", MARWILConfig)
        .framework(framework)
        .evaluation(
            evaluation_interval=None,
            evaluation_num_env_runners=0,
            offline_evaluation_interval=2,
            num_offline_eval_runners=2,
            offline_eval_batch_size_per_runner=100,
            dataset_num_iters_per_offline_eval_runner=3,
            evaluation_config={"input_": str(tmp_path / "held_out")},
        )
        .callbacks(on_evaluate_offline_end=_mark_offline_evaluation)
    )
    algo = config.build()
    try:
        first = algo.train()
        assert "evaluation" not in first
        second = algo.train()
        state = algo.learner.get_state()
        extra = algo.evaluate_offline()
        after = algo.learner.get_state()
        third, fourth = algo.train(), algo.train()
    finally:
        algo.stop()
    assert "evaluation" not in third
    runners = second["evaluation"]["offline_eval_runners"]
    module, every = runners["default_policy"], runners["__all_modules__"]
    assert {"total_eval_loss", "policy_loss", "vf_loss"} <= set(module)
    assert module["num_module_steps_sampled"] == 2 * 3 * 100
    assert module["module_sample_batch_size_mean"] == 100
    assert every["dataset_num_iters_evaluated"] == 6
    assert second["evaluation"]["num_healthy_offline_eval_runners"] == 2
    assert second["evaluation"]["marked_by"] == "on_evaluate_offline_end"
    later = fourth["evaluation"]["offline_eval_runners"]
    # The lifetime counts add up over rounds (evaluate_offline() included).
    assert later["__all_modules__"]["num_env_steps_sampled_lifetime"] == 3 * 600
    assert math.isfinite(extra["offline_eval_runners"]["default_policy"]["total_eval_loss"])
    # Training lowers the held-out loss; evaluation itself changes nothing.
    assert later["default_policy"]["total_eval_loss"] < module["total_eval_loss"]
    assert state["moving_average_sqd_adv_norm"] == after["moving_average_sqd_adv_norm"]
    for name, weights in state["module"].items():
        np.testing.assert_array_equal(after["module"][name], weights, err_msg=name)


def test_offline_evaluation_is_for_the_offline_algorithms():
    config = PPOConfig().environment("CartPole-v1").evaluation(offline_evaluation_interval=1)
    with pytest.raises(ConfigError, match="offline_evaluation_interval"):
        config.validate()
    with pytest.raises(ConfigError, match="eval_loss"):
        BCConfig().evaluation(offline_evaluation_type="is")


@pytest.mark.slow
def test_ppo_warm_starts_from_a_bc_module_checkpoint(tmp_path):
    """RLlib's offline-to-online path: BC learns CartPole from expert steps, its module's
    checkpoint seeds PPO through `RLModuleSpec(load_state_path=...)`, and PPO starts from the
    cloned policy (same weights, an evaluation return far above a fresh module's)."""
    import os

    from trainer import RLModuleSpec

    pq.write_table(_expert_table(6000), tmp_path / "expert.parquet", row_group_size=1000)
    bc = _offline_config(tmp_path).framework("torch").evaluation(evaluation_interval=None)
    # BC's default module shares one encoder (RLlib's DefaultModelConfig); PPO's default has
    # two, so the PPO that loads BC's weights names BC's.
    model = {"fcnet_hiddens": [32], "vf_share_layers": True}
    algo = bc.build()
    try:
        for _ in range(12):
            algo.train()
        checkpoint = algo.save_to_path(str(tmp_path / "bc"))
        bc_weights = {k: v.copy() for k, v in algo.get_module().get_state().items()}
    finally:
        algo.stop()
    module_path = os.path.join(
        checkpoint, "learner_group", "learner", "rl_module", "default_policy"
    )
    assert os.path.isdir(module_path)

    def ppo(spec: RLModuleSpec | None) -> Algorithm:
        # Never trained: the local EnvRunner evaluates, greedily (evaluate() without
        # evaluation runners samples there, with its settings).
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .framework("torch")
            .env_runners(num_env_runners=0, explore=False)
            .rl_module(model_config=model)
            .evaluation(evaluation_duration=5)
            .debugging(seed=0)
        )
        if spec is not None:
            config.rl_module(rl_module_spec=spec)
        return config.build()

    warm = ppo(RLModuleSpec(model_config=model, load_state_path=module_path))
    fresh = ppo(None)
    try:
        for name, weights in warm.get_module().get_state().items():
            np.testing.assert_array_equal(np.asarray(weights), bc_weights[name], err_msg=name)
        warm_return = warm.evaluate()["env_runners"]["episode_return_mean"]
        fresh_return = fresh.evaluate()["env_runners"]["episode_return_mean"]
    finally:
        warm.stop()
        fresh.stop()
    assert warm_return >= 150 > fresh_return
