"""`InfiniteLookbackBuffer`: one column of an episode (observations, actions, rewards, infos, or
one extra model output) with RLlib's indexing rules.

`data` holds everything; its first `lookback` items are the *lookback buffer*: history from
earlier chunks of the episode, readable but not part of this chunk (`len()` leaves it out).

Indexing (`get`, `set`, `[]`), for a buffer with `data=[4, 5, 6, 7, 8, 9]` and `lookback=3`:
- `0`, `1`, ... count from the first item after the lookback buffer: `get(0) == 7`.
- Negative indices count from the end, and may reach into the lookback buffer: `get(-1) == 9`,
  `get(-4) == 6`. With `neg_index_as_lookback=True` they count back from index 0 instead:
  `get(-1, neg_index_as_lookback=True) == 6`, `get(slice(-2, 1), ...) == [5, 6, 7]`.
- A list of indices gives a list (a batch, once numpy'ized); a slice gives a list (an array).
- `fill=value` stands in for what lies outside `data` (shaped like the buffer's `space` when one
  is set) instead of raising `IndexError` or returning less, by RLlib's rules for slices: both
  bounds left of `data` (or both right of it) give only fill, as many items as the bounds are
  apart (`get(slice(-10, -12), fill=0)` gives two); otherwise the side the start lies past is
  filled, else the side the stop lies past (one side only). Negative steps walk down.
- `one_hot_discrete=True` turns the `Discrete` / `MultiDiscrete` parts (per `space`) into
  one-hot vectors.

Until `finalize()` the data is a Python list (cheap appends while sampling); afterwards a numpy
array, or a dict/tuple of arrays for `Dict`/`Tuple` spaces (`finalized` is then True).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.core.spaces import (
    batch,
    first_leaf,
    get_base_struct_from_space,
    get_dummy_batch_for_space,
    map_structure,
    one_hot,
    one_hot_multidiscrete,
    space_from_dict,
    space_to_dict,
)

Indices = int | slice | list[int] | None


class InfiniteLookbackBuffer:
    __slots__ = ("data", "lookback", "finalized", "_space", "space_struct")

    #: A list of items while recording; after `finalize()` an array, or a dict/tuple of arrays
    #: for `Dict`/`Tuple` spaces. `finalized` says which: a flag a type checker cannot follow,
    #: so the data is typed Any and each method branches on `finalized`.
    data: Any
    finalized: bool
    lookback: int

    def __init__(
        self,
        data: list | np.ndarray | dict | tuple | None = None,
        lookback: int = 0,
        space: gym.Space | None = None,
    ):
        self.data = data if data is not None else []
        self.finalized = not isinstance(self.data, list)
        self.lookback = min(int(lookback), self.len_incl_lookback())
        self.space = space

    @classmethod
    def of_list(cls, items: list) -> InfiniteLookbackBuffer:
        """A recording buffer around `items` (no lookback, no space), made without checks: the
        EnvRunner makes several per episode."""
        return cls._unchecked(items, finalized=False)

    @classmethod
    def of_array(cls, array: np.ndarray) -> InfiniteLookbackBuffer:
        """A finalized buffer around `array` (no lookback, no space), made without checks (for
        episodes rebuilt from a packed `EpisodeList`)."""
        return cls._unchecked(array, finalized=True)

    @classmethod
    def _unchecked(cls, data: list | np.ndarray, *, finalized: bool) -> InfiniteLookbackBuffer:
        buffer = cls.__new__(cls)
        buffer.data = data
        buffer.finalized = finalized
        buffer.lookback = 0
        buffer._space = buffer.space_struct = None
        return buffer

    @property
    def space(self) -> gym.Space | None:
        return self._space

    @space.setter
    def space(self, value: gym.Space | None) -> None:
        self._space = value
        self.space_struct = get_base_struct_from_space(value)

    # -- size --------------------------------------------------------------------------------
    def __len__(self) -> int:
        """The number of items after the lookback buffer."""
        # Inlined `len_incl_lookback`: episodes validate their columns' lengths every step.
        n = (len(first_leaf(self.data)) if self.finalized else len(self.data)) - self.lookback
        return n if n > 0 else 0

    def len_incl_lookback(self) -> int:
        if self.finalized:
            return len(first_leaf(self.data))
        return len(self.data)

    # -- adding and removing -----------------------------------------------------------------
    def append(self, item: Any) -> None:
        if self.finalized:
            self.data = map_structure(lambda d, i: np.concatenate([d, [i]]), self.data, item)
        else:
            self.data.append(item)

    def extend(self, items: Any) -> None:
        if self.finalized:
            items = batch(list(items)) if isinstance(items, list) else items
            self.data = map_structure(lambda d, i: np.concatenate([d, i]), self.data, items)
        else:
            self.data.extend(split_rows(items))

    def concat(self, other: InfiniteLookbackBuffer) -> None:
        """Appends `other`'s items (without its lookback buffer)."""
        self.extend(other.get())

    def pop(self, index: int = -1) -> None:
        """Removes the item at `index` (an index into `data`); returns nothing, as RLlib's."""
        if self.finalized:
            self.data = map_structure(lambda d: np.delete(d, index, axis=0), self.data)
        else:
            self.data.pop(index)

    def finalize(self) -> None:
        """Turns the data list into a numpy array (a struct of arrays for structured items)."""
        if not self.finalized:
            self.data = batch(self.data)
            self.finalized = True

    # -- reading -----------------------------------------------------------------------------
    def get(
        self,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
        neg_indices_left_of_zero: bool | None = None,
        _ignore_last_ts: bool = False,
        _add_last_ts_value: Any = None,
    ) -> Any:
        """The item(s) at `indices` (all items after the lookback buffer when None); see the
        module docstring for the rules. (`neg_indices_left_of_zero` is RLlib's older name of
        `neg_index_as_lookback`.)

        RLlib's two private options, which `MultiAgentEpisode` reads its columns with: the
        last item left out (`_ignore_last_ts`), and `_add_last_ts_value` read as if it were
        appended (an agent's action still waiting for its next observation). As in RLlib, the
        added value is not part of `indices=None` (all items)."""
        if neg_indices_left_of_zero is not None:
            neg_index_as_lookback = neg_indices_left_of_zero
        if _ignore_last_ts or (_add_last_ts_value is not None and indices is not None):
            view = self._with_last_item(_ignore_last_ts, _add_last_ts_value)
            return view.get(
                indices,
                neg_index_as_lookback=neg_index_as_lookback,
                fill=fill,
                one_hot_discrete=one_hot_discrete,
            )
        if indices is None:
            return self._get_slice(slice(None), False, None, one_hot_discrete)
        if isinstance(indices, slice):
            return self._get_slice(indices, neg_index_as_lookback, fill, one_hot_discrete)
        if isinstance(indices, (list, tuple)):
            items = [
                self._get_int(int(i), neg_index_as_lookback, fill, one_hot_discrete)
                for i in indices
            ]
            return batch(items) if self.finalized and items else items
        return self._get_int(_as_index(indices), neg_index_as_lookback, fill, one_hot_discrete)

    def _with_last_item(self, drop_last: bool, add_last: Any) -> InfiniteLookbackBuffer:
        """A buffer sharing this one's lookback and space whose data has its last item left
        out (`drop_last`) and/or `add_last` appended (when not None); this one is unchanged."""
        data = self.data
        if drop_last:
            data = self._take(data, slice(0, -1))
        if add_last is not None:
            if self.finalized:
                data = map_structure(
                    lambda d, v: np.concatenate([d, np.asarray(v, dtype=d.dtype)[None]]),
                    data,
                    add_last,
                )
            else:
                data = [*data, add_last]
        view = InfiniteLookbackBuffer._unchecked(data, finalized=self.finalized)
        view.lookback = self.lookback
        view._space, view.space_struct = self._space, self.space_struct
        return view

    def __getitem__(self, item: Indices) -> Any:
        return self.get(item)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The items after the lookback buffer as an array (`np.asarray(episode.rewards)`)."""
        array = np.asarray(self.get())
        return array if dtype is None else array.astype(dtype)

    def _position(self, index: int, neg_index_as_lookback: bool) -> int | None:
        """`index` as a position in `data` (negative: from the end, Python style), or None when
        it lies outside the data."""
        if index >= 0 or neg_index_as_lookback:
            position = self.lookback + index
            if position < 0:
                return None  # left of the lookback buffer
        else:
            position = index
        size = self.len_incl_lookback()
        return position if -size <= position < size else None

    def _get_int(
        self, index: int, neg_index_as_lookback: bool, fill: Any, one_hot_discrete: bool = False
    ) -> Any:
        position = self._position(index, neg_index_as_lookback)
        if position is None:
            if fill is None:
                raise IndexError(
                    f"index {index} is out of range for a buffer of {len(self)} "
                    f"items after a lookback buffer of {self.lookback} "
                    f"(neg_index_as_lookback={neg_index_as_lookback})"
                )
            return self._fill_item(fill, one_hot_discrete)
        if self.finalized:
            item = map_structure(lambda d: d[position], self.data)
        else:
            item = self.data[position]
        return self._one_hot(item) if one_hot_discrete else item

    def _resolve_slice(self, slice_: slice, neg_index_as_lookback: bool) -> tuple[slice, int, int]:
        """`slice_` as a slice of `data`, and how many fill items go left and right of it.

        RLlib's rules: start and stop become positions in `data` (None: the first item after
        the lookback buffer / the end). When both lie left of `data`, or both right of it, the
        result is only fill, as many items as they are apart (in whichever order). Otherwise
        the part left of `data` is filled when the start lies there, else the part right of
        it when the stop lies there (one side only). A negative step walks from the start
        down to the stop; a stop left of `data` then means "down to the first item"."""
        size = self.len_incl_lookback()
        start, stop, step = slice_.start, slice_.stop, slice_.step or 1
        if start is None:
            start = self.lookback
        elif start < 0 and not neg_index_as_lookback:
            start = size + start
        else:
            start = self.lookback + start
        if stop is None:
            stop = size
        elif stop < 0 and not neg_index_as_lookback:
            stop = size + stop
        else:
            stop = self.lookback + stop
        fill_left = fill_right = 0
        if start < 0 and stop < 0:
            fill_left, start, stop = abs(start - stop), 0, 0
        elif start >= size and stop >= size:
            fill_right, start, stop = abs(start - stop), size, size
        elif start < 0:
            fill_left, start = -start, 0
        elif stop >= size:
            fill_right, stop = stop - size, size
        elif stop < 0:
            # Only a negative step reaches here with items to take (start >= 0 > stop).
            if start >= size:
                fill_left, start = start - size + 1, size - 1
            # -(size + 1) as a stop: past the first item for a negative step (so it is
            # included), and an empty range for a positive one.
            fill_right, stop = -stop - 1, -(size + 1)
        return slice(start, stop, step), fill_left, fill_right

    def _get_slice(
        self, slice_: slice, neg_index_as_lookback: bool, fill: Any, one_hot_discrete: bool = False
    ) -> Any:
        target, fill_left, fill_right = self._resolve_slice(slice_, neg_index_as_lookback)
        taken = self._take(self.data, target)
        # One-hot what the slice spans (RLlib's count: a span past the data's end one-hots an
        # empty selection, an empty span returns it as it is).
        step = target.step
        has_items = (target.stop - target.start + step - (1 if step > 0 else -1)) // step > 0
        if one_hot_discrete and has_items:
            taken = self._one_hot_rows(taken)
        if fill is None or not (fill_left or fill_right):
            return taken
        if self.finalized:
            parts = []
            if fill_left:
                parts.append(self._fill_batch(fill, fill_left, one_hot_discrete, taken))
            if has_items:
                parts.append(taken)
            if fill_right:
                parts.append(self._fill_batch(fill, fill_right, one_hot_discrete, taken))
            return map_structure(lambda *arrays: np.concatenate(arrays), *parts)
        item = self._fill_item(fill, one_hot_discrete)
        return [item] * fill_left + (taken if has_items else []) + [item] * fill_right

    def _take(self, data: Any, slice_: slice) -> Any:
        if self.finalized:
            return map_structure(lambda d: d[slice_], data)
        return data[slice_]

    def _fill_item(self, fill: Any, one_hot_discrete: bool) -> Any:
        if self.space is None:
            return fill
        return get_dummy_batch_for_space(
            self.space, 0, fill_value=fill, one_hot_discrete=one_hot_discrete
        )

    def _fill_batch(self, fill: Any, size: int, one_hot_discrete: bool, like: Any) -> Any:
        if self.space is None:
            return map_structure(
                lambda d: np.full((size,) + np.shape(d)[1:], fill, dtype=np.asarray(d).dtype), like
            )
        return get_dummy_batch_for_space(
            self.space, size, fill_value=fill, one_hot_discrete=one_hot_discrete
        )

    # -- one-hot -----------------------------------------------------------------------------
    def _one_hot(self, data: Any) -> Any:
        if self.space_struct is None:
            raise ValueError(
                "one_hot_discrete=True needs the buffer's space (the episode's "
                "observation_space / action_space), and none was given"
            )
        return map_structure(_one_hot_leaf, data, self.space_struct)

    def _one_hot_rows(self, rows: Any) -> Any:
        if self.finalized:
            return self._one_hot(rows)
        return [self._one_hot(row) for row in rows]

    # -- writing -----------------------------------------------------------------------------
    def set(
        self,
        new_data: Any,
        *,
        at_indices: Indices = None,
        neg_index_as_lookback: bool = False,
        neg_indices_left_of_zero: bool | None = None,
    ) -> None:
        """Overwrites the item(s) at `at_indices` (all items after the lookback buffer when
        None) with `new_data` (one item, or as many as the indices select). The length of the
        buffer never changes: a size mismatch raises `IndexError`."""
        if neg_indices_left_of_zero is not None:
            neg_index_as_lookback = neg_indices_left_of_zero
        if at_indices is None:
            at_indices = slice(0, None)
        if isinstance(at_indices, slice):
            target, _, _ = self._resolve_slice(at_indices, neg_index_as_lookback)
            selected = len(range(*target.indices(self.len_incl_lookback())))
            if selected != _length(new_data):
                raise IndexError(
                    f"set(at_indices={at_indices}): the slice selects {selected} items, "
                    f"new_data has {_length(new_data)}; setting never changes a buffer's length"
                )
            if self.finalized:
                map_structure(lambda d, n: d.__setitem__(target, n), self.data, new_data)
            else:
                self.data[target] = split_rows(new_data)
        elif isinstance(at_indices, (list, tuple)):
            if len(at_indices) != _length(new_data):
                raise IndexError(
                    f"set(at_indices={at_indices}): {len(at_indices)} indices, "
                    f"new_data has {_length(new_data)} items"
                )
            for i, index in enumerate(at_indices):
                self._set_int(_item(new_data, i), int(index), neg_index_as_lookback)
        else:
            self._set_int(new_data, _as_index(at_indices), neg_index_as_lookback)

    def __setitem__(self, key: Indices, value: Any) -> None:
        self.set(value, at_indices=key)

    def _set_int(self, value: Any, index: int, neg_index_as_lookback: bool) -> None:
        position = self._position(index, neg_index_as_lookback)
        if position is None:
            raise IndexError(
                f"set(): index {index} is out of range for a buffer of {len(self)} "
                f"items after a lookback buffer of {self.lookback} "
                f"(neg_index_as_lookback={neg_index_as_lookback})"
            )
        if self.finalized:
            map_structure(lambda d, v: d.__setitem__(position, v), self.data, value)
        else:
            self.data[position] = value

    # -- comparison, copies, state ------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InfiniteLookbackBuffer):
            return NotImplemented
        return (
            self.lookback == other.lookback
            and self.finalized == other.finalized
            and self.space == other.space
            and structs_equal(self.data, other.data)
        )

    # Mutable, so unhashable (as list is); object's __hash__ is a method, hence the ignore.
    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> InfiniteLookbackBuffer:
        """A new buffer: this one's data followed by `other`'s items (a buffer without its
        lookback, or a list), or with a number added to every numeric item."""
        if self.finalized:
            raise RuntimeError("cannot `+` to a finalized InfiniteLookbackBuffer")
        if isinstance(other, (int, float, complex)):
            data = [d + other if isinstance(d, (int, float, complex)) else d for d in self.data]
        elif isinstance(other, InfiniteLookbackBuffer):
            data = self.data + list(other.get())
        else:
            data = self.data + list(other)
        return InfiniteLookbackBuffer(data, self.lookback, self.space)

    def __repr__(self) -> str:
        head = self._take(self.data, slice(0, self.lookback))
        tail = self._take(self.data, slice(self.lookback, None))
        return f"InfiniteLookbackBuffer({head} <- lookback({self.lookback}) | {tail})"

    def get_state(self) -> dict:
        return {
            "data": self.data,
            "lookback": self.lookback,
            "finalized": self.finalized,
            "space": space_to_dict(self.space),
        }

    @staticmethod
    def from_state(state: dict) -> InfiniteLookbackBuffer:
        data = state["data"]
        if not state["finalized"]:
            data = list(data)
        return InfiniteLookbackBuffer(data, state["lookback"], space_from_dict(state["space"]))


def _one_hot_leaf(value: Any, space: Any) -> Any:
    if isinstance(space, gym.spaces.Discrete):
        return one_hot(value, depth=int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        return one_hot_multidiscrete(value, depths=space.nvec)
    return value


def _as_index(index: Any) -> int:
    if isinstance(index, (int, np.integer)):
        return int(index)
    raise TypeError(f"indices must be an int, a list of ints, a slice or None; got {index!r}")


def split_rows(data: Any) -> list:
    """New items for a list buffer: a list as is, an array (or struct of arrays) split into
    its rows."""
    if isinstance(data, list):
        return data
    if isinstance(data, (dict, tuple)):
        size = len(first_leaf(data))
        return [map_structure(lambda d, i=i: d[i], data) for i in range(size)]
    return list(data)


def _length(data: Any) -> int:
    if isinstance(data, (dict, tuple)):
        return len(first_leaf(data))
    try:
        return len(data)
    except TypeError:
        return 1


def _item(data: Any, i: int) -> Any:
    if isinstance(data, (dict, tuple)):
        return map_structure(lambda d: d[i], data)
    return data[i]


def structs_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(structs_equal(a[k], b[k]) for k in a)
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(structs_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
