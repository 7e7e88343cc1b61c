"""RLlib's offline data pipeline: `offline_data(offline_data_class=..., prelearner_class=...)`
with `OfflineData`/`OfflinePreLearner` subclasses, over Ray Data's local readers
(`trainer.compat.ray_data`), driven as RLlib scripts drive them."""

from __future__ import annotations

import io
from pathlib import Path

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_launcher import needs_installed_ray, run_script
from test_offline import _expert_table

from trainer.algorithms.bc import BCConfig
from trainer.algorithms.offline_pipeline import OfflineData, OfflinePreLearner, transitions_of
from trainer.compat import ray_data
from trainer.compat.rllib_utils import flatten_dict, unflatten_dict
from trainer.env.episode import SingleAgentEpisode
from trainer.errors import ConfigError, NotSupported, RLlibNotAvailable

Image = pytest.importorskip("PIL.Image", reason="the images are written with pillow (test extra)")

SIDE = 16


def _write_images(folder: Path, count: int, seed: int = 0) -> None:
    """`count` JPEG images, SIDE x SIDE x 3: dark ones (pixels < 80) and bright ones (> 170)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for index in range(count):
        low, high = (0, 80) if index % 2 else (170, 256)
        pixels = rng.integers(low, high, (SIDE, SIDE, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"{index:03d}.jpg")


def _decode(row: dict) -> dict:
    return {"array": np.array(Image.open(io.BytesIO(row["bytes"])))}


# -- Ray Data's local readers ----------------------------------------------------------------------
class _Scale:
    """A callable class for map_batches: built once per pass with its constructor kwargs."""

    built = 0

    def __init__(self, factor: float):
        type(self).built += 1
        self.factor = factor

    def __call__(self, batch: dict) -> dict:
        return {"mean": batch["array"].reshape(len(batch["array"]), -1).mean(axis=1) * self.factor}


def test_binary_files_are_read_mapped_and_batched_lazily(tmp_path):
    _write_images(tmp_path / "images", 5)
    (tmp_path / "images" / ".hidden").write_bytes(b"not an image")
    ds = ray_data.read_binary_files(f"local://{tmp_path / 'images'}", include_paths=True)
    assert ds.count() == 5 and ds.columns() == ["bytes", "path"]
    first = ds.take_batch(2)
    assert first["bytes"].dtype == object and isinstance(first["bytes"][0], bytes)
    assert first["path"][0].endswith("000.jpg")

    images = ds.map(_decode)
    assert images.take_batch(3)["array"].shape == (3, SIDE, SIDE, 3)
    _Scale.built = 0
    means = images.map_batches(
        _Scale, fn_constructor_kwargs={"factor": 2.0}, batch_size=2, concurrency=2
    )
    batches = list(means.iter_batches(batch_size=3))
    assert [len(b["mean"]) for b in batches] == [3, 2] and _Scale.built == 1
    assert batches[0]["mean"][0] > 2 * 170 and batches[0]["mean"][1] < 2 * 80
    assert [len(b["mean"]) for b in means.iter_batches(batch_size=3, drop_last=True)] == [3]
    held = means.materialize()
    assert _Scale.built == 3 and held.count() == 5 and _Scale.built == 3  # no more reads
    collated = list(held.iter_batches(batch_size=5, _collate_fn=lambda b: sorted(b)))
    assert collated == [["mean"]]

    with pytest.raises(RLlibNotAvailable, match="copy the data from its store first"):
        ray_data.read_binary_files("s3://anonymous@bucket/images/")
    with pytest.raises(RLlibNotAvailable, match=r"read_binary_files\(partitioning=\.\.\.\)"):
        ray_data.read_binary_files(str(tmp_path / "images"), partitioning=None)
    with pytest.raises(RLlibNotAvailable, match=r"map_batches\(num_rows_per_block=\.\.\.\)"):
        images.map_batches(_Scale, num_rows_per_block=3)
    with pytest.raises(FileNotFoundError, match="no files there"):
        ray_data.read_binary_files(str(tmp_path / "nothing"))


def test_flatten_dict_round_trips_rllibs_module_keys():
    nested = {"p0": {"obs": np.zeros(2), "extra": {"a": 1}}, "p1": {"actions": [3, 4]}}
    flat = flatten_dict(nested)
    assert sorted(flat) == ["p0/extra/a", "p0/obs", "p1/actions/0", "p1/actions/1"]
    assert unflatten_dict({"p0/obs": 1, "p0/new_obs": 2}) == {"p0": {"obs": 1, "new_obs": 2}}
    assert flatten_dict({}) == {}


# -- the prelearner -------------------------------------------------------------------------------
def test_episodes_become_rllibs_train_columns():
    episode = SingleAgentEpisode(
        observations=[np.zeros(2), np.ones(2), 2 * np.ones(2)],
        actions=[0, 1],
        rewards=[0.5, 1.5],
        extra_model_outputs={"action_logp": [-0.1, -0.2]},
        terminated=True,
        len_lookback_buffer=0,
    )
    columns = transitions_of([episode, episode])
    assert columns["obs"].shape == (4, 2) and columns["new_obs"][1].tolist() == [2.0, 2.0]
    assert columns["terminateds"].tolist() == [False, True, False, True]
    assert columns["truncateds"].tolist() == [False] * 4
    assert columns["action_logp"].tolist() == [-0.1, -0.2, -0.1, -0.2]


def test_the_default_prelearner_makes_the_recorded_steps_a_batch(tmp_path):
    """RLlib's default `OfflinePreLearner` on recorded columns: one step a row, the recorded
    values as they are, keys flattened by module id (as RLlib's BC gets them)."""
    table = _expert_table(50)
    pq.write_table(table, tmp_path / "steps.parquet")
    config = BCConfig().environment("CartPole-v1").offline_data(input_=str(tmp_path))
    spaces = (gym.spaces.Box(-np.inf, np.inf, (4,)), gym.spaces.Discrete(2))
    data = OfflineData(config)
    raw = data.data.take_batch(10)
    prelearner = OfflinePreLearner(
        config=config,
        spaces=spaces,
        module_spec=config.get_rl_module_spec(spaces={"default_policy": spaces}),
    )
    out = prelearner(raw)
    assert sorted(out) == [
        f"default_policy/{key}"
        for key in ("actions", "new_obs", "obs", "rewards", "terminateds", "truncateds")
    ]
    rows = table.slice(0, 10).to_pydict()
    np.testing.assert_allclose(out["default_policy/obs"], np.asarray(rows["obs"]), rtol=1e-6)
    np.testing.assert_allclose(
        out["default_policy/new_obs"], np.asarray(rows["new_obs"]), rtol=1e-6
    )
    assert out["default_policy/actions"].tolist() == rows["actions"]
    assert out["default_policy/terminateds"].tolist() == rows["terminateds"]
    # RLlib's refusal of multi-agent rows keeps its type, and says what it needs
    with pytest.raises(NotImplementedError) as refused:
        prelearner._map_to_episodes(raw, is_multi_agent=True)
    assert isinstance(refused.value, NotSupported) and refused.value.capability == "multi-agent"


# -- training through the pipeline ------------------------------------------------------------
class _ImageData(OfflineData):
    """RLlib's pattern: read the files' bytes and decode them, the prelearner does the rest."""

    def __init__(self, config):
        super().__init__(config)
        self.data = ray_data.read_binary_files(self.path).map(_decode)


class _LabelledImages(OfflinePreLearner):
    """One-step episodes of the images, labelled: action 1 for a bright image, 0 for a dark."""

    def _map_to_episodes(self, batch, to_numpy=False, **kwargs):
        episodes = []
        for obs in batch["array"]:
            episodes.append(
                SingleAgentEpisode(
                    observations=[obs, obs],
                    actions=[int(obs.mean() > 127)],
                    rewards=[1.0],
                    terminated=True,
                    len_lookback_buffer=0,
                )
            )
        return {"episodes": episodes}


class _ImageEnv(gym.Env):
    observation_space = gym.spaces.Box(0, 255, (SIDE, SIDE, 3), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        super().__init__()

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, True, False, {}


def test_bc_learns_from_images_through_its_own_offline_data_and_prelearner(tmp_path):
    """BC with RLlib's customization points: an `OfflineData` subclass reads JPEG files as
    arrays, an `OfflinePreLearner` subclass labels them; BC learns the labels (bright -> 1)."""
    _write_images(tmp_path / "images", 24)
    config = (
        BCConfig()
        .environment(_ImageEnv)
        .offline_data(
            input_=[str(tmp_path / "images")],
            input_read_method="read_binary_files",
            offline_data_class=_ImageData,
            prelearner_class=_LabelledImages,
            dataset_num_iters_per_learner=3,
        )
        .training(train_batch_size_per_learner=8, lr=3e-3)
        .rl_module(
            model_config={
                "conv_filters": [[8, [4, 4], 4], [16, [4, 4], 4]],
                "head_fcnet_hiddens": [16],
            }
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        assert isinstance(algo.offline_data, _ImageData)
        for _ in range(15):
            result = algo.train()
        module = algo.get_module()
        _write_images(tmp_path / "held_out", 10, seed=1)
        held_out = (
            ray_data.read_binary_files(str(tmp_path / "held_out")).map(_decode).take_batch(10)
        )
        logits = module.forward_inference({"obs": held_out["array"]})["action_dist_inputs"]
    finally:
        algo.stop()
    trained = result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"]
    assert trained == 15 * 3 * 8  # 24 images: three batches of 8 a pass
    labels = (held_out["array"].reshape(10, -1).mean(axis=1) > 127).astype(int)
    assert (np.asarray(logits).argmax(axis=1) == labels).all()


def test_pipeline_settings_are_checked_at_the_call():
    with pytest.raises(ConfigError, match=r"prelearner_class=3.*None or a class"):
        BCConfig().offline_data(prelearner_class=3)
    config = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_="/data", input_read_method="read_binary_files")
    )
    with pytest.raises(ConfigError, match="give prelearner_class"):
        config.validate()


@needs_installed_ray
def test_rllibs_image_example_classes_run_on_local_images(tmp_path):
    """RLlib's own `ImageOfflineData` and `ImageOfflinePreLearner` (the installed wheel's
    files, unmodified) on local JPEGs: the data reads as RLlib's does, and the prelearner's
    call fails as RLlib 2.60's does (its `_map_to_episodes` is a staticmethod that the base
    class calls with the batch first); the same class with that fixed makes RLlib's batch."""
    pytest.importorskip("torch")
    _write_images(tmp_path / "images", 3)
    ran = run_script(
        tmp_path,
        f"""
        import gymnasium as gym, numpy as np
        from ray.rllib.algorithms.bc import BCConfig
        from ray.rllib.algorithms.bc.bc_catalog import BCCatalog
        from ray.rllib.algorithms.bc.torch.default_bc_torch_rl_module import (
            DefaultBCTorchRLModule,
        )
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
        from ray.rllib.core.rl_module.rl_module import DefaultModelConfig, RLModuleSpec
        from ray.rllib.examples.offline_rl.classes.image_offline_data import ImageOfflineData
        from ray.rllib.examples.offline_rl.classes.image_offline_prelearner import (
            ImageOfflinePreLearner,
        )

        space = gym.spaces.Box(0, 255, ({SIDE}, {SIDE}, 3), np.float32)
        config = BCConfig().environment(
            action_space=gym.spaces.Discrete(2), observation_space=space
        ).offline_data(input_=[{str(tmp_path / "images")!r}], prelearner_class=ImageOfflinePreLearner)
        spec = MultiRLModuleSpec(rl_module_specs={{"default_policy": RLModuleSpec(
            model_config=DefaultModelConfig(conv_filters=[[16, 4, 2], [32, 4, 2]]),
            module_class=DefaultBCTorchRLModule, catalog_class=BCCatalog,
            action_space=gym.spaces.Discrete(2), observation_space=space,
        )}})
        batch = ImageOfflineData(config).data.take_batch(3)
        print("batch", batch["array"].shape)
        spaces = (config.observation_space, config.action_space)
        try:
            ImageOfflinePreLearner(config=config, learner=None, spaces=spaces, module_spec=spec)(batch)
        except TypeError as error:
            print("TypeError:", error)

        class Fixed(ImageOfflinePreLearner):
            def _map_to_episodes(self, batch, to_numpy=False, **kwargs):
                return ImageOfflinePreLearner._map_to_episodes(
                    False, batch, observation_space=space, action_space=spaces[1]
                )

        out = Fixed(config=config, learner=None, spaces=spaces, module_spec=spec)(batch)
        print("out", sorted(out), out["default_policy/obs"].shape)
        """,
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    assert f"batch (3, {SIDE}, {SIDE}, 3)" in ran.stdout
    assert "_map_to_episodes() missing 1 required positional argument: 'batch'" in ran.stdout
    columns = ["actions", "new_obs", "obs", "rewards", "terminateds", "truncateds"]
    assert f"out {[f'default_policy/{c}' for c in columns]} (3, {SIDE}, {SIDE}, 3)" in ran.stdout


def test_the_default_pipeline_trains_cql_on_columns_and_bc_on_recorded_episodes(tmp_path):
    """RLlib's `OfflinePreLearner` as `prelearner_class`: CQL on a column table (continuous
    actions, next observations), BC on RLlib's serialized episodes (`input_read_episodes`)."""
    from trainer.algorithms.cql import CQLConfig
    from trainer.algorithms.ppo import PPOConfig

    env = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=0)
    rows: dict[str, list] = {k: [] for k in ("obs", "actions", "rewards", "new_obs", "terminateds")}
    for _ in range(300):
        action = env.action_space.sample()
        new_obs, reward, terminated, truncated, _ = env.step(action)
        for key, value in zip(
            rows, (obs.tolist(), action.tolist(), reward, new_obs.tolist(), terminated), strict=True
        ):
            rows[key].append(value)
        obs = env.reset()[0] if terminated or truncated else new_obs
    pq.write_table(pa.table(rows), tmp_path / "pendulum.parquet")
    cql = (
        CQLConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=str(tmp_path / "pendulum.parquet"), prelearner_class=OfflinePreLearner)
        .training(train_batch_size_per_learner=64)
        .build()
    )
    try:
        result = cql.train()
    finally:
        cql.stop()
    assert np.isfinite(result["learners"]["default_policy"]["cql_loss"])

    recorder = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(batch_mode="complete_episodes")
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .offline_data(output=str(tmp_path / "episodes"))
        .build()
    )
    try:
        recorder.train()
    finally:
        recorder.stop()
    bc = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(
            input_=str(tmp_path / "episodes"),
            input_read_episodes=True,
            prelearner_class=OfflinePreLearner,
            input_read_batch_size=2,
        )
        .training(train_batch_size_per_learner=32)
        .build()
    )
    try:
        result = bc.train()
    finally:
        bc.stop()
    assert result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"] == 32
    assert np.isfinite(result["learners"]["default_policy"]["policy_loss"])
