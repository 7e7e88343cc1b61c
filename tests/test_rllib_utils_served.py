"""RLlib's utils served by the launcher: `TaskPool` (ray.rllib.utils.actors), the space
serialization (ray.rllib.utils.serialization, FlexDict, Repeated), the space helpers
(ray.rllib.utils.spaces.space_utils), the old stack's filters and RunningStat
(ray.rllib.utils.filter), the main process's resource bundle (ray.rllib.algorithms.utils), and
the config's errors in RLlib's types and words (multi_agent(), overrides(), config[key] = ...)."""

from __future__ import annotations

import base64
import io
import sys
import types
import zlib

import gymnasium as gym
import numpy as np
import pytest

from trainer import AlgorithmConfig, PPOConfig
from trainer.algorithms.ppo import PPO
from trainer.compat import filters, resources, serialization, space_utils
from trainer.compat.task_pool import TaskPool
from trainer.core.policy_spec import PolicySpec
from trainer.core.spaces import Simplex, get_base_struct_from_space
from trainer.errors import ConfigError, UnknownSettingError


# -- TaskPool -----------------------------------------------------------------------------------
@pytest.fixture
def ray_wait(monkeypatch):
    """A `ray` module whose `wait` says which refs are ready (set `.ready`)."""
    fake = types.SimpleNamespace(ready=[])

    def wait(refs, num_returns=1, timeout=None):
        ready = [r for r in refs if r in fake.ready]
        return ready, [r for r in refs if r not in ready]

    fake.wait = wait
    monkeypatch.setitem(sys.modules, "ray", fake)
    return fake


def test_task_pool_yields_finished_calls_with_their_workers_up_to_the_limit(ray_wait):
    pool = TaskPool()
    for ref in range(5):
        pool.add(f"worker{ref}", ref)
    ray_wait.ready = [1, 3, 4]
    assert list(pool.completed_prefetch(max_yield=2)) == [("worker1", 1), ("worker3", 3)]
    assert pool.count == 2
    assert list(pool.completed_prefetch()) == [("worker4", 4)]  # queued from the last call


def test_task_pool_keeps_queued_calls_when_the_caller_stops_and_forgets_failed_workers(
    ray_wait,
):
    pool = TaskPool()
    for ref in range(4):
        pool.add(f"w{ref}", [ref, ref + 10])  # a call with two refs: keyed by the first
    ray_wait.ready = [0, 1, 2]
    for _ in pool.completed_prefetch():
        break  # the caller stops after the first
    pool.reset_workers(["w2", "w3"])  # w1 failed
    assert list(pool.completed_prefetch()) == [("w2", [2, 12])]
    assert pool.count == 1


# -- serialization ------------------------------------------------------------------------------
def _round_trip(space: gym.Space) -> gym.Space:
    data = serialization.gym_space_to_dict(space)
    restored = serialization.gym_space_from_dict(data)
    assert restored is not None
    return restored


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Box(-1.0, 2.0, (3, 2), np.float32),
        gym.spaces.Discrete(5, start=2),
        gym.spaces.MultiDiscrete([3, 4, 5]),
        gym.spaces.MultiBinary(4),
        gym.spaces.Text(min_length=2, max_length=9, charset="xyz"),
        gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (2,)))),
        gym.spaces.Dict({"b": gym.spaces.Discrete(3), "a": gym.spaces.Box(0, 1, (1,))}),
        Simplex((2, 3), concentration=np.array([1.0, 2.0, 3.0])),
    ],
    ids=lambda s: type(s).__name__,
)
def test_spaces_round_trip_through_rllibs_dict_format(space):
    assert _round_trip(space) == space


def test_box_bounds_are_written_as_rllib_writes_them():
    data = serialization.gym_space_to_dict(gym.spaces.Box(-1.0, 1.0, (2,), np.float32))
    assert data is not None and data["space"] == "box" and data["dtype"] == "<f4"
    raw = zlib.decompress(base64.b64decode(data["low"]))  # base64(zlib(.npy))
    np.testing.assert_array_equal(np.load(io.BytesIO(raw)), [-1.0, -1.0])


def test_repeated_flex_dict_and_original_space_round_trip():
    repeated = _round_trip(space_utils.Repeated(gym.spaces.Box(-1, 1, (1, 4)), max_len=8))
    assert isinstance(repeated, space_utils.Repeated) and repeated.max_len == 8
    flex = space_utils.FlexDict({})
    flex["box"] = gym.spaces.Box(-1, 1, (2,))
    flex["tuple"] = gym.spaces.Tuple((gym.spaces.Discrete(2),))
    restored = _round_trip(flex)
    assert isinstance(restored, space_utils.FlexDict)
    assert isinstance(restored["tuple"], gym.spaces.Tuple)
    box = gym.spaces.Box(0.0, 1.0, (3,))
    box.original_space = gym.spaces.Dict({"x": gym.spaces.Box(0.0, 1.0, (3,))})  # type: ignore[attr-defined]
    back = serialization.space_from_dict(serialization.space_to_dict(box))
    assert isinstance(back.original_space["x"], gym.spaces.Box)  # type: ignore[union-attr]


def test_unknown_space_kinds_are_refused_naming_them():
    with pytest.raises(ValueError, match="unknown space type 'graph'"):
        serialization.gym_space_from_dict({"space": "graph"})
    with pytest.raises(ValueError, match="unknown space type Sequence"):
        serialization.gym_space_to_dict(gym.spaces.Sequence(gym.spaces.Discrete(2)))


def test_numpy_values_become_python_primitives_and_types_import_paths():
    converted = serialization.convert_numpy_to_python_primitives(
        {"a": np.int64(3), "b": (np.float32(0.5), np.array([1, 2])), "c": [np.bool_(True)]}
    )
    assert converted == {"a": 3, "b": (0.5, [1, 2]), "c": [True]}
    assert type(converted["a"]) is int and type(converted["c"][0]) is bool
    path = serialization.serialize_type(PPOConfig)
    assert serialization.deserialize_type(path) is PPOConfig
    assert serialization.deserialize_type("no.such.Thing") == "no.such.Thing"
    with pytest.raises(ValueError, match="no.such.Thing"):
        serialization.deserialize_type("no.such.Thing", error=True)


# -- space helpers ------------------------------------------------------------------------------
def test_batch_and_unbatch_structs():
    items = [{"a": (1, 2.0), "b": np.array([i, i])} for i in range(3)]
    batched = space_utils.batch(items)
    np.testing.assert_array_equal(batched["b"], [[0, 0], [1, 1], [2, 2]])
    unbatched = space_utils.unbatch(batched)
    assert len(unbatched) == 3 and unbatched[2]["a"] == (1, 2.0)
    np.testing.assert_array_equal(unbatched[1]["b"], [1, 1])
    joined = space_utils.batch(
        [np.array([0]), np.array([1, 2])], individual_items_already_have_batch_dim=True
    )
    np.testing.assert_array_equal(joined, [0, 1, 2])
    with pytest.raises(ValueError, match="no items"):
        space_utils.batch([])


def test_unsquash_and_normalize_actions():
    struct = get_base_struct_from_space(
        gym.spaces.Dict(
            {
                "f": gym.spaces.Box(2.0, 6.0, (2,), np.float32),
                "i": gym.spaces.Box(3, 8, (1,), np.int32),
                "d": gym.spaces.Discrete(3),
            }
        )
    )
    action = {"f": np.array([-1.0, 0.5]), "i": np.array([2]), "d": 1}
    unsquashed = space_utils.unsquash_action(action, struct)
    np.testing.assert_allclose(unsquashed["f"], [2.0, 5.0])
    np.testing.assert_array_equal(unsquashed["i"], [5])
    assert unsquashed["d"] == 1
    np.testing.assert_allclose(space_utils.normalize_action(unsquashed, struct)["f"], [-1, 0.5])


def test_convert_element_to_space_type_matches_the_samples_dtypes():
    space = gym.spaces.Dict(
        {
            "box": gym.spaces.Box(-1, 1, (2,)),
            "discrete": gym.spaces.Discrete(3),
            "tuple": gym.spaces.Tuple((gym.spaces.MultiDiscrete([2, 2]), gym.spaces.Discrete(2))),
        }
    )
    element = {
        "box": np.zeros(2, np.float64),
        "discrete": 2.0,
        "tuple": (np.array([1, 0], np.int32), 1.0),
    }
    converted = space_utils.convert_element_to_space_type(element, space.sample())
    assert space.contains(converted)


# -- filters ------------------------------------------------------------------------------------
class _NoArray:
    def __array__(self, dtype=None, copy=None):
        raise TypeError("no")


def test_no_filter_passes_values_and_names_one_it_cannot_convert():
    x = np.ones(2)
    assert filters.NoFilter()(x) is x
    np.testing.assert_array_equal(filters.NoFilter()([1, 2]), [1, 2])
    with pytest.raises(ValueError, match="Failed to convert to array:"):
        filters.NoFilter()(_NoArray())


def test_running_stats_merge_as_if_pushed_together_and_round_trip_their_state():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(20, 3))
    whole, first, second = (filters.RunningStat((3,)) for _ in range(3))
    for v in values:
        whole.push(v)
    for v in values[:12]:
        first.push(v)
    for v in values[12:]:
        second.push(v)
    first.update(second)
    assert first.n == 20
    np.testing.assert_allclose(first.mean, whole.mean)
    np.testing.assert_allclose(first.std, whole.std, rtol=1e-5)
    np.testing.assert_allclose(first.std, values.std(axis=0, ddof=1), rtol=1e-5)
    back = filters.RunningStat.from_state(first.to_state())
    np.testing.assert_array_equal(back.mean_array, first.mean_array)
    connector = filters.RunningStat.from_state({"n": 2, "mean": [1.0], "m2": [2.0]})
    assert connector.n == 2 and connector.sum_sq_diff_array.tolist() == [2.0]
    with pytest.raises(ValueError, match=r"unexpected input shape \(2,\), expected \(3,\)"):
        whole.push(np.zeros(2))


def test_mean_std_filter_normalizes_and_syncs():
    f = filters.MeanStdFilter((2,), clip=None)
    for x in ([1.0, 10.0], [3.0, 30.0]):
        out = f(np.array(x))
    np.testing.assert_allclose(out, [2**-0.5, 2**-0.5], rtol=1e-4)
    other = filters.MeanStdFilter((2,))
    other.sync(f)
    assert other.running_stats.n == 2 and other.clip is None
    g = filters.get_filter("ConcurrentMeanStdFilter", (2,))
    g(np.array([5.0, 5.0]))
    f.apply_changes(g, with_buffer=True)
    assert f.running_stats.n == 3 and f.buffer.n == 1
    with pytest.raises(ValueError, match="unknown observation_filter 'Bogus'"):
        filters.get_filter("Bogus", (2,))


# -- resources ----------------------------------------------------------------------------------
def test_main_process_bundle_is_rllibs():
    config = AlgorithmConfig().learners(
        num_learners=0, num_cpus_per_learner=4, num_gpus_per_learner=1
    )
    assert resources.main_process_bundle(config) == {"CPU": 4, "GPU": 1}
    config = (
        AlgorithmConfig()
        .resources(custom_resources_for_main_process={"my_resource": 1})
        .learners(num_learners=1)
    )
    assert resources.main_process_bundle(config) == {"CPU": 1, "GPU": 0, "my_resource": 1}


def test_default_resource_request_holds_the_main_process_custom_resources():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .resources(custom_resources_for_main_process={"my_resource": 2})
        .env_runners(num_env_runners=0)
    )
    assert PPO.default_resource_request(config).bundles[0]["my_resource"] == 2


# -- config errors in RLlib's types and words ---------------------------------------------------
def test_unknown_builder_keyword_is_a_type_error_in_pythons_words_too():
    with pytest.raises(UnknownSettingError) as raised:
        PPOConfig().multi_agent(policies={"p0"}, wrong_key=1)
    assert isinstance(raised.value, TypeError)
    assert "got an unknown setting wrong_key=1" in str(raised.value)
    assert "got an unexpected keyword argument 'wrong_key'" in str(raised.value)


def test_unknown_override_is_a_key_error_in_rllibs_words():
    with pytest.raises(KeyError, match="Invalid property name invdli for config class PPOConfig"):
        PPOConfig.overrides(invdli=42.0)
    with pytest.raises(ConfigError, match=r"Did you mean"):
        PPOConfig.overrides(lrr=0.1)


def test_bad_policy_ids_and_count_steps_by_in_rllibs_words():
    with pytest.raises(ValueError, match="PolicyID `1` not valid!"):
        PPOConfig().multi_agent(policies={1, "good"})
    with pytest.raises(
        ValueError, match=r"config\.multi_agent\(count_steps_by=\.\.\) must be one of"
    ):
        PPOConfig().multi_agent(count_steps_by="episodes")


def test_item_assignment_sets_a_setting_and_refuses_multiagent():
    config = PPOConfig().multi_agent(policies={"p1": PolicySpec()})
    config["lr"] = 0.01
    assert config.lr == 0.01
    with pytest.raises(AttributeError, match="Cannot set `multiagent` key in an AlgorithmConfig!"):
        config["multiagent"] = {"policies": {"p1"}}
    with pytest.raises(ConfigError, match="lr must be a number >= 0"):
        config["lr"] = -1


# -- the launcher serves them -------------------------------------------------------------------
def test_the_launcher_serves_rllibs_utils(hook):
    from ray.rllib.algorithms.utils import _get_main_process_bundle
    from ray.rllib.utils.actors import TaskPool as RLlibTaskPool
    from ray.rllib.utils.filter import MeanStdFilter, NoFilter, RunningStat
    from ray.rllib.utils.serialization import gym_space_from_dict, gym_space_to_dict
    from ray.rllib.utils.spaces.flexdict import FlexDict
    from ray.rllib.utils.spaces.space_utils import batch, get_base_struct_from_space, unbatch

    assert RLlibTaskPool is TaskPool
    assert (NoFilter, MeanStdFilter, RunningStat) == (
        filters.NoFilter,
        filters.MeanStdFilter,
        filters.RunningStat,
    )
    assert (gym_space_to_dict, gym_space_from_dict) == (
        serialization.gym_space_to_dict,
        serialization.gym_space_from_dict,
    )
    assert FlexDict is space_utils.FlexDict and _get_main_process_bundle is not None
    assert batch is space_utils.batch and unbatch is space_utils.unbatch
    assert get_base_struct_from_space is not None
