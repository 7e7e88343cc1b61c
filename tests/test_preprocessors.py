"""RLlib's old-stack observation preprocessors (`ray.rllib.models.preprocessors`), which RLlib's
new-stack tests still flatten observations with: the class `get_preprocessor` picks for each
space, its `shape`, `size`, `observation_space` and `transform` outputs are RLlib's (compared with
RLlib 2.60 itself), an observation outside the space is refused, and the launcher serves the
module under RLlib's path (and `Catalog.get_preprocessor` with it)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from trainer.compat import preprocessors as ours
from trainer.core.catalog import Catalog
from trainer.examples.envs.classes.simple_rpg import Repeated

SPACES = {
    "discrete": gym.spaces.Discrete(5),
    "multi_discrete": gym.spaces.MultiDiscrete([2, 3]),
    "box": gym.spaces.Box(-2.0, 2.0, (3,), np.float32),
    "box_2d": gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32),
    "atari_ram": gym.spaces.Box(0, 255, (128,), np.uint8),
    "tuple": gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (2,)))),
    "dict": gym.spaces.Dict(
        {
            "b": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
            "a": gym.spaces.MultiDiscrete([2, 2]),
            "c": gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3))),
        }
    ),
    "multi_binary": gym.spaces.MultiBinary(4),
}


@pytest.mark.parametrize("name", sorted(SPACES))
def test_each_space_gets_rllibs_class_shape_and_space(name):
    space = SPACES[name]
    expected = {
        "discrete": ("OneHotPreprocessor", (5,)),
        "multi_discrete": ("OneHotPreprocessor", (5,)),
        "box": ("NoPreprocessor", (3,)),
        "box_2d": ("NoPreprocessor", (2, 3)),
        "atari_ram": ("AtariRamPreprocessor", (128,)),
        "tuple": ("TupleFlatteningPreprocessor", (5,)),
        "dict": ("DictFlatteningPreprocessor", (11,)),
        "multi_binary": ("NoPreprocessor", (4,)),
    }[name]
    preprocessor = ours.get_preprocessor(space)(space)
    assert (type(preprocessor).__name__, tuple(preprocessor.shape)) == expected
    assert preprocessor.size == int(np.prod(expected[1]))
    if name.startswith("box") or name == "multi_binary":
        assert preprocessor.observation_space is space
    else:
        assert preprocessor.observation_space == gym.spaces.Box(-1.0, 1.0, expected[1], np.float32)
        assert preprocessor.observation_space.original_space is space


def test_flattening_one_hot_encodes_and_concatenates_in_sorted_key_order():
    space = SPACES["dict"]
    observation = {
        "b": np.array([0.5, -0.25], np.float32),
        "a": np.array([1, 0]),
        "c": (1, 2),
    }
    out = ours.get_preprocessor(space)(space).transform(observation)
    assert out.dtype == np.float32
    #                    a: [0 1][1 0]   b: 0.5 -0.25   c: [0 1][0 0 1]
    np.testing.assert_array_equal(out, [0, 1, 1, 0, 0.5, -0.25, 0, 1, 0, 0, 1])
    multi_binary = ours.get_preprocessor(SPACES["multi_binary"], include_multi_binary=True)
    assert multi_binary is ours.MultiBinaryPreprocessor
    prep = multi_binary(SPACES["multi_binary"])
    assert prep.transform(np.array([1, 0, 1, 1], np.int8)).dtype == np.float32
    assert prep.observation_space == gym.spaces.Box(0.0, 1.0, (4,), np.float32)


def test_repeated_and_pixel_observations():
    space = Repeated(gym.spaces.Discrete(3), max_len=2)
    prep = ours.get_preprocessor(space)(space)
    assert isinstance(prep, ours.RepeatedValuesPreprocessor) and prep.shape == (7,)
    np.testing.assert_array_equal(prep.transform([2]), [1, 0, 0, 1, 0, 0, 0])
    pixels = gym.spaces.Box(0, 255, ours.ATARI_OBS_SHAPE, np.uint8)
    prep = ours.get_preprocessor(pixels)(pixels, {"dim": 42, "grayscale": True, "zero_mean": False})
    out = prep.transform(np.full(ours.ATARI_OBS_SHAPE, 51, np.uint8))
    assert isinstance(prep, ours.GenericPixelPreprocessor) and out.shape == (42, 42, 1)
    np.testing.assert_allclose(out, 0.2)


def test_an_observation_outside_the_space_is_refused():
    space = SPACES["box"]
    prep = ours.get_preprocessor(space)(space)
    with pytest.raises(ValueError, match="outside given space"):
        prep.transform(np.array([3.0, 0.0, 0.0], np.float32))
    # Only every 100th observation is checked (RLlib's interval): after a good one, the next
    # 99 pass unchecked.
    prep.transform(np.zeros(3, np.float32))
    np.testing.assert_array_equal(prep.transform(np.array([3.0, 0.0, 0.0], np.float32))[0], 3.0)


def test_the_catalog_hands_out_the_preprocessor():
    prep = Catalog.get_preprocessor(SPACES["discrete"])
    assert isinstance(prep, ours.OneHotPreprocessor) and prep.shape == (5,)


@pytest.mark.ray
@pytest.mark.parametrize("name", sorted(SPACES))
def test_transform_and_spaces_are_rllibs(name):
    from ray.rllib.models import preprocessors as rllib

    space = SPACES[name]
    for include_multi_binary in (False, True):
        theirs = rllib.get_preprocessor(space, include_multi_binary)(space)
        mine = ours.get_preprocessor(space, include_multi_binary)(space)
        assert type(mine).__name__ == type(theirs).__name__
        assert tuple(mine.shape) == tuple(theirs.shape) and mine.size == theirs.size
        assert mine.observation_space == theirs.observation_space
        assert hasattr(mine.observation_space, "original_space") == hasattr(
            theirs.observation_space, "original_space"
        )
        space.seed(0)
        for _ in range(5):
            observation = space.sample()
            expected, got = theirs.transform(observation), mine.transform(observation)
            assert np.asarray(got).dtype == np.asarray(expected).dtype
            np.testing.assert_array_equal(got, expected)


def test_the_launcher_serves_rllibs_module(hook):
    from ray.rllib.core.models.catalog import Catalog as RLlibCatalog
    from ray.rllib.models.preprocessors import OneHotPreprocessor, get_preprocessor

    assert get_preprocessor is ours.get_preprocessor
    assert isinstance(RLlibCatalog.get_preprocessor(SPACES["discrete"]), OneHotPreprocessor)
