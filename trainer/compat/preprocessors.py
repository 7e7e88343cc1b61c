"""RLlib's observation preprocessors (`ray.rllib.models.preprocessors`): the old API stack's way
to turn an observation into a flat float vector, which RLlib's new-stack tests and scripts still
call to flatten observations before a module sees them.

    cls = get_preprocessor(space)        # the class for the space
    prep = cls(space)                    # (options: RLlib's old model config; image keys only)
    prep.shape, prep.size                # the output's shape and number of elements
    prep.observation_space               # a Box(-1, 1, shape) (NoPreprocessor: the space itself)
    prep.transform(obs)                  # one observation, preprocessed

The classes are RLlib's, with its semantics: `OneHotPreprocessor` (Discrete, MultiDiscrete: one-hot
float32), `TupleFlatteningPreprocessor` / `DictFlatteningPreprocessor` (each part preprocessed,
then concatenated; a dict's keys in sorted order), `RepeatedValuesPreprocessor` (RLlib's
`Repeated` space: the length, then the padded items), `GenericPixelPreprocessor` (Atari-sized
frames, (210, 160, 3): cropped, resized to `dim`, scaled), `AtariRamPreprocessor` ((128,)
observations, centred and scaled), `MultiBinaryPreprocessor` (with
`get_preprocessor(..., include_multi_binary=True)`: float32) and `NoPreprocessor` (anything else:
the observation as it is). `transform` checks every 100th observation against the space, as
RLlib's does, and raises ValueError for one outside it.

The image resize is `trainer.util.images.resize`: OpenCV's INTER_AREA, as RLlib's, where OpenCV
is installed; without it, numpy's area averaging, whose frames may differ from RLlib's in the
last unit of a pixel.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.util.images import resize

#: The observation shapes RLlib takes for Atari frames and Atari RAM.
ATARI_OBS_SHAPE = (210, 160, 3)
ATARI_RAM_OBS_SHAPE = (128,)

#: Observations are checked against the space once every this many `transform` calls.
OBS_VALIDATION_INTERVAL = 100

#: The options a preprocessor reads when given none: RLlib's old model config defaults for
#: images (`ray.rllib.models.catalog.MODEL_DEFAULTS`: `dim`, `grayscale`, `zero_mean`).
PREPROCESSOR_OPTIONS: dict[str, Any] = {"dim": 84, "grayscale": False, "zero_mean": True}

logger = logging.getLogger(__name__)


def _is_repeated(space: Any) -> bool:
    """Whether `space` is RLlib's `Repeated` (a list of up to `max_len` items of
    `child_space`), this project's or RLlib's."""
    return (
        isinstance(space, gym.Space)
        and type(space).__name__ == "Repeated"
        and hasattr(space, "child_space")
        and hasattr(space, "max_len")
    )


def _legacy_patch_shapes(space: gym.Space) -> Any:
    """RLlib's helper for old gym versions' spaces without a shape (gymnasium's all have one):
    returns `space.shape`."""
    if not hasattr(space, "shape"):
        if isinstance(space, gym.spaces.Discrete):
            space.shape = ()  # type: ignore[misc]
        elif isinstance(space, gym.spaces.Tuple):
            space.shape = tuple(_legacy_patch_shapes(s) for s in space.spaces)  # type: ignore[misc]
    return space.shape


def _match_dtypes(element: Any, sampled: Any) -> Any:
    """`element` with its leaves cast to the dtypes of `sampled` (a sample of the space), as
    RLlib's `convert_element_to_space_type`: arrays to the sample's dtype, a Python number to a
    0-d array for a 0-d sample, a float that is an integer to an int for an int sample."""
    if isinstance(sampled, dict) and isinstance(element, dict):
        return {key: _match_dtypes(element[key], sampled[key]) for key in element}
    if isinstance(sampled, tuple) and isinstance(element, (tuple, list)):
        return tuple(_match_dtypes(e, s) for e, s in zip(element, sampled, strict=False))
    if isinstance(sampled, np.ndarray):
        if not isinstance(element, np.ndarray):
            if not isinstance(element, (float, int)):
                raise ValueError(f"`elem` ({element}) must be np.array, float or int!")
            if sampled.shape != ():
                raise ValueError(
                    f"Element should be of type np.ndarray but is instead of type {type(element)}"
                )
            return np.array(element, dtype=sampled.dtype)
        if sampled.dtype != element.dtype:
            return element.astype(sampled.dtype)
        return element
    if isinstance(sampled, (int, np.integer)):
        if isinstance(element, float) and element.is_integer():
            return int(element)
        if isinstance(element, np.floating):
            return np.int64(element)
    return element


class Preprocessor:
    """RLlib's base preprocessor: `shape` (of the output), `size` (its number of elements),
    `observation_space` (a float32 `Box(-1, 1, shape)`, with `original_space` the given space
    for the flattening classes), `transform(observation)` and `write(observation, array,
    offset)` (the transformed observation into `array[offset:offset + size]`)."""

    def __init__(self, obs_space: gym.Space, options: dict | None = None) -> None:
        _legacy_patch_shapes(obs_space)
        self._obs_space = obs_space
        self._options = dict(PREPROCESSOR_OPTIONS) if not options else options
        self.shape = self._init_shape(obs_space, self._options)
        self._size = int(np.prod(self.shape))
        self._i = 0
        self._obs_for_type_matching = self._obs_space.sample()

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        """The shape after preprocessing."""
        raise NotImplementedError

    def transform(self, observation: Any) -> np.ndarray:
        """The preprocessed observation."""
        raise NotImplementedError

    def write(self, observation: Any, array: np.ndarray, offset: int) -> None:
        """Writes the preprocessed observation into `array[offset:offset + size]`."""
        array[offset : offset + self._size] = self.transform(observation)

    def check_shape(self, observation: Any) -> None:
        """Every `OBS_VALIDATION_INTERVAL`-th call: a ValueError if `observation` (its dtypes
        matched to the space's) lies outside the space."""
        if self._i % OBS_VALIDATION_INTERVAL == 0:
            if type(observation) is list and isinstance(self._obs_space, gym.spaces.Box):
                observation = np.array(observation).astype(np.float32)
            if not self._obs_space.contains(observation):
                observation = _match_dtypes(observation, self._obs_for_type_matching)
            try:
                if not self._obs_space.contains(observation):
                    dtype = (
                        observation.dtype if isinstance(self._obs_space, gym.spaces.Box) else None
                    )
                    raise ValueError(
                        f"Observation ({observation} dtype={dtype}) outside given space "
                        f"({self._obs_space})!"
                    )
            except AttributeError as error:
                raise ValueError(
                    "Observation for a Box/MultiBinary/MultiDiscrete space should be an "
                    "np.array, not a Python list.",
                    observation,
                ) from error
        self._i += 1

    @property
    def size(self) -> int:
        return self._size

    @property
    def observation_space(self) -> gym.Space:
        obs_space = gym.spaces.Box(-1.0, 1.0, self.shape, dtype=np.float32)
        # As RLlib: the flattening preprocessors keep the space they flatten.
        if isinstance(
            self,
            (
                DictFlatteningPreprocessor,
                OneHotPreprocessor,
                RepeatedValuesPreprocessor,
                TupleFlatteningPreprocessor,
                AtariRamPreprocessor,
                GenericPixelPreprocessor,
            ),
        ):
            obs_space.original_space = self._obs_space  # type: ignore[attr-defined]
        return obs_space


class GenericPixelPreprocessor(Preprocessor):
    """Atari-sized frames (210, 160, 3): 25 rows cropped at the top and the bottom, resized to
    `dim` x `dim` (through 84 x 84 first for a smaller `dim`), averaged to one channel with
    `grayscale`, then scaled to [-1, 1] (`zero_mean`) or [0, 1]."""

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        self._grayscale: Any = options.get("grayscale")
        self._zero_mean: Any = options.get("zero_mean")
        self._dim: Any = options.get("dim")
        return (self._dim, self._dim, 1) if self._grayscale else (self._dim, self._dim, 3)

    def transform(self, observation: Any) -> np.ndarray:
        self.check_shape(observation)
        scaled = observation[25:-25, :, :]
        if self._dim < 84:
            scaled = resize(scaled, height=84, width=84)
        scaled = resize(scaled, height=self._dim, width=self._dim)
        if self._grayscale:
            scaled = scaled.mean(2).astype(np.float32)
            scaled = np.reshape(scaled, [self._dim, self._dim, 1])
        # RLlib's arithmetic as is (on uint8 frames numpy computes `scaled - 128` in uint8).
        if self._zero_mean:
            scaled = (scaled - 128) / 128
        else:
            scaled = scaled * (1.0 / 255.0)
        return scaled


class AtariRamPreprocessor(Preprocessor):
    """Atari RAM (128 bytes): float32, centred on 128 and scaled by 1/128."""

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        return (128,)

    def transform(self, observation: Any) -> np.ndarray:
        self.check_shape(observation)
        return (observation.astype("float32") - 128) / 128


class OneHotPreprocessor(Preprocessor):
    """Discrete and MultiDiscrete observations one-hot encoded (float32; a MultiDiscrete's
    parts one after the other)."""

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        if isinstance(obs_space, gym.spaces.Discrete):
            return (int(self._obs_space.n),)  # type: ignore[attr-defined]
        return (int(np.sum(self._obs_space.nvec)),)  # type: ignore[attr-defined]

    def transform(self, observation: Any) -> np.ndarray:
        self.check_shape(observation)
        return np.asarray(gym.spaces.utils.flatten(self._obs_space, observation)).astype(np.float32)

    def write(self, observation: Any, array: np.ndarray, offset: int) -> None:
        array[offset : offset + self.size] = self.transform(observation)


class NoPreprocessor(Preprocessor):
    """The observation as it is; its `observation_space` is the given space."""

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        return self._obs_space.shape

    def transform(self, observation: Any) -> np.ndarray:
        self.check_shape(observation)
        return observation

    def write(self, observation: Any, array: np.ndarray, offset: int) -> None:
        array[offset : offset + self._size] = np.asarray(observation).ravel()

    @property
    def observation_space(self) -> gym.Space:
        return self._obs_space


class MultiBinaryPreprocessor(Preprocessor):
    """A MultiBinary observation as float32, its shape kept (`get_preprocessor(space,
    include_multi_binary=True)`); its space a `Box(0, 1)`."""

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        return self._obs_space.shape

    def transform(self, observation: Any) -> np.ndarray:
        self.check_shape(observation)
        return observation.astype(np.float32)

    def write(self, observation: Any, array: np.ndarray, offset: int) -> None:
        array[offset : offset + self._size] = np.asarray(observation).ravel()

    @property
    def observation_space(self) -> gym.Space:
        obs_space = gym.spaces.Box(0.0, 1.0, self.shape, dtype=np.float32)
        obs_space.original_space = self._obs_space  # type: ignore[attr-defined]
        return obs_space


def _sub_preprocessors(spaces: Any, options: dict) -> tuple[list[Preprocessor | None], int]:
    """A preprocessor for each space, and their total size."""
    size, preprocessors = 0, []
    for space in spaces:
        logger.debug(f"Creating sub-preprocessor for {space}")
        preprocessor_class = get_preprocessor(space)
        if preprocessor_class is not None:
            preprocessor = preprocessor_class(space, options)
            size += preprocessor.size
        else:
            preprocessor = None
            size += int(np.prod(space.shape))
        preprocessors.append(preprocessor)
    return preprocessors, size


class TupleFlatteningPreprocessor(Preprocessor):
    """A Tuple observation: each part preprocessed, then all concatenated (float32)."""

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        assert isinstance(self._obs_space, gym.spaces.Tuple)
        self.preprocessors, size = _sub_preprocessors(self._obs_space.spaces, self._options)
        return (size,)

    def transform(self, observation: Any) -> np.ndarray:
        self.check_shape(observation)
        array = np.zeros(self.shape, dtype=np.float32)
        self.write(observation, array, 0)
        return array

    def write(self, observation: Any, array: np.ndarray, offset: int) -> None:
        assert len(observation) == len(self.preprocessors), observation
        for o, p in zip(observation, self.preprocessors, strict=True):
            assert p is not None
            p.write(o, array, offset)
            offset += p.size


class DictFlatteningPreprocessor(Preprocessor):
    """A Dict observation: each value preprocessed (the keys in sorted order, as gymnasium's
    Dict holds them), then all concatenated (float32)."""

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        assert isinstance(self._obs_space, gym.spaces.Dict)
        self.preprocessors, size = _sub_preprocessors(
            self._obs_space.spaces.values(), self._options
        )
        return (size,)

    def transform(self, observation: Any) -> np.ndarray:
        self.check_shape(observation)
        array = np.zeros(self.shape, dtype=np.float32)
        self.write(observation, array, 0)
        return array

    def write(self, observation: Any, array: np.ndarray, offset: int) -> None:
        if not isinstance(observation, OrderedDict):
            observation = OrderedDict(sorted(observation.items()))
        assert len(observation) == len(self.preprocessors), (
            len(observation),
            len(self.preprocessors),
        )
        for o, p in zip(observation.values(), self.preprocessors, strict=True):
            assert p is not None
            p.write(o, array, offset)
            offset += p.size


class RepeatedValuesPreprocessor(Preprocessor):
    """RLlib's `Repeated` space (a list of up to `max_len` items): the list's length, then each
    item preprocessed, zero-padded to `max_len` items."""

    def _init_shape(self, obs_space: gym.Space, options: dict) -> Any:
        assert _is_repeated(self._obs_space)
        child_space = obs_space.child_space  # type: ignore[attr-defined]
        self.child_preprocessor = get_preprocessor(child_space)(child_space, self._options)
        # The first slot holds the list's length.
        return (1 + self.child_preprocessor.size * obs_space.max_len,)  # type: ignore[attr-defined]

    def transform(self, observation: Any) -> np.ndarray:
        array = np.zeros(self.shape)
        if isinstance(observation, list):
            for elem in observation:
                self.child_preprocessor.check_shape(elem)
        self.write(observation, array, 0)
        return array

    def write(self, observation: Any, array: np.ndarray, offset: int) -> None:
        if not isinstance(observation, (list, np.ndarray)):
            raise ValueError(f"Input for {self} must be list type, got {observation}")
        max_len = self._obs_space.max_len  # type: ignore[attr-defined]
        if len(observation) > max_len:
            raise ValueError(f"Input {observation} exceeds max len of space {max_len}")
        array[offset] = len(observation)
        for i, elem in enumerate(observation):
            offset_i = offset + 1 + i * self.child_preprocessor.size
            self.child_preprocessor.write(elem, array, offset_i)


def get_preprocessor(space: gym.Space, include_multi_binary: bool = False) -> type:
    """The preprocessor class for `space` (RLlib's choice, in its order): one-hot for Discrete
    and MultiDiscrete, pixels for Atari frames (210, 160, 3), Atari RAM for (128,), flattening
    for Tuple and Dict, `RepeatedValuesPreprocessor` for `Repeated`, `MultiBinaryPreprocessor`
    for MultiBinary with `include_multi_binary`, else `NoPreprocessor`."""
    _legacy_patch_shapes(space)
    obs_shape = space.shape
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return OneHotPreprocessor
    if obs_shape == ATARI_OBS_SHAPE:
        return GenericPixelPreprocessor
    if obs_shape == ATARI_RAM_OBS_SHAPE:
        return AtariRamPreprocessor
    if isinstance(space, gym.spaces.Tuple):
        return TupleFlatteningPreprocessor
    if isinstance(space, gym.spaces.Dict):
        return DictFlatteningPreprocessor
    if _is_repeated(space):
        return RepeatedValuesPreprocessor
    if isinstance(space, gym.spaces.MultiBinary) and include_multi_binary:
        return MultiBinaryPreprocessor
    return NoPreprocessor


__all__ = [
    "ATARI_OBS_SHAPE",
    "ATARI_RAM_OBS_SHAPE",
    "OBS_VALIDATION_INTERVAL",
    "AtariRamPreprocessor",
    "DictFlatteningPreprocessor",
    "GenericPixelPreprocessor",
    "MultiBinaryPreprocessor",
    "NoPreprocessor",
    "OneHotPreprocessor",
    "Preprocessor",
    "RepeatedValuesPreprocessor",
    "TupleFlatteningPreprocessor",
    "get_preprocessor",
]
