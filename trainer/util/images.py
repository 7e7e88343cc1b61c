"""Image helpers of RLlib's `ray.rllib.utils.images`: `resize` (OpenCV's INTER_AREA) and
`rgb2gray` (OpenCV's COLOR_RGB2GRAY).

They call OpenCV, as RLlib's do, where it is installed (`opencv-python-headless`, in the
`atari` extra): an Atari frame's grayscale and resize take about 45 us there against 150 us
in numpy, twice per env step. Without it they compute the same in numpy (`numpy_resize`,
`numpy_rgb2gray`: area averaging and OpenCV 4's fixed-point luma weights), whose 8-bit
results may differ from OpenCV's by one level in a few pixels of a thousand (a rounding at an
exact half; OpenCV 5 rounds its luma otherwise).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

#: OpenCV's fixed-point luma weights for 8-bit images (R, G, B), scaled by 2**14: they sum to
#: 2**14, so white stays 255.
_GRAY_WEIGHTS_Q14 = (4899, 9617, 1868)
#: The same weights as fractions (ITU-R BT.601: 0.299, 0.587, 0.114), for float images.
_GRAY_WEIGHTS = np.array([0.299, 0.587, 0.114])


@functools.lru_cache(maxsize=64)
def _area_weights(size_in: int, size_out: int) -> np.ndarray:
    """(size_out, size_in) weights: each output pixel averages the input pixels it covers, in
    proportion to the overlap (OpenCV's INTER_AREA when shrinking). Cached (frames of one size
    are resized over and over), so read-only."""
    scale = size_in / size_out
    edges = np.arange(size_out + 1) * scale
    starts, ends = edges[:-1, None], edges[1:, None]
    pixels = np.arange(size_in)[None, :]
    overlap = np.clip(np.minimum(ends, pixels + 1) - np.maximum(starts, pixels), 0.0, None)
    weights = overlap / overlap.sum(axis=1, keepdims=True)
    weights.setflags(write=False)
    return weights


@functools.lru_cache(maxsize=64)
def _area_weights32(size_in: int, size_out: int) -> np.ndarray:
    """`_area_weights` in float32 (cached, read-only)."""
    weights = _area_weights(size_in, size_out).astype(np.float32)
    weights.setflags(write=False)
    return weights


@functools.lru_cache(maxsize=1)
def _opencv() -> Any:
    """OpenCV's `cv2` module, or None where it is not installed."""
    try:
        import cv2
    except ImportError:
        return None
    return cv2


#: The dtypes OpenCV's resize and color conversion take (others go to numpy).
_OPENCV_DTYPES = (np.uint8, np.float32)


def resize(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """`img` (H, W) or (H, W, C) scaled to (height, width) by area averaging, in its own dtype
    (RLlib's `ray.rllib.utils.images.resize`: OpenCV's INTER_AREA; numpy without OpenCV)."""
    img = np.asarray(img)
    if img.ndim not in (2, 3):
        raise ValueError(f"resize: img of shape {img.shape}: expected (H, W) or (H, W, C)")
    cv2 = _opencv()
    if cv2 is not None and img.dtype in _OPENCV_DTYPES and img.size:
        scaled = cv2.resize(img, (int(width), int(height)), interpolation=cv2.INTER_AREA)
        # (OpenCV drops a last axis of one channel.)
        return scaled.reshape((int(height), int(width)) + img.shape[2:])
    return numpy_resize(img, height, width)


def numpy_resize(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """`resize` in numpy: area averaging (OpenCV's INTER_AREA when shrinking)."""
    img = np.asarray(img)
    if img.ndim not in (2, 3):
        raise ValueError(f"resize: img of shape {img.shape}: expected (H, W) or (H, W, C)")
    # Bytes in float32 (twice as fast as float64 for an Atari frame, 210x160 to 84x84: 53 us
    # against 108; a pixel may round the other way at an exact half), else float64.
    weights = _area_weights32 if img.dtype == np.uint8 else _area_weights
    rows = weights(img.shape[0], int(height))
    columns = weights(img.shape[1], int(width))
    in_height, in_width = img.shape[:2]
    # Rows first on the (H, W * C) matrix, then the columns of each row batch: two products.
    scaled = (rows @ img.reshape(in_height, -1).astype(rows.dtype)).reshape(
        (int(height), in_width) + img.shape[2:]
    )
    # (h, W) @ (W, w); or (w, W) @ (h, W, C), broadcast over the h rows: (h, w, C).
    scaled = scaled @ columns.T if img.ndim == 2 else np.matmul(columns, scaled)
    if np.issubdtype(img.dtype, np.integer):
        # Weighted averages stay within the input's range: rounding is all that is left.
        scaled = np.rint(scaled)
    return scaled.astype(img.dtype)


def rgb2gray(img: np.ndarray) -> np.ndarray:
    """An (H, W, 3) RGB image as (H, W) luma in its own dtype (RLlib's
    `ray.rllib.utils.images.rgb2gray`: OpenCV's COLOR_RGB2GRAY; numpy without OpenCV)."""
    img = np.asarray(img)
    if img.ndim != 3 or img.shape[-1] != 3:
        raise ValueError(f"rgb2gray: img of shape {img.shape}: expected (height, width, 3)")
    cv2 = _opencv()
    if cv2 is not None and img.dtype in _OPENCV_DTYPES and img.size:
        return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    return numpy_rgb2gray(img)


def numpy_rgb2gray(img: np.ndarray) -> np.ndarray:
    """`rgb2gray` in numpy: 0.299 R + 0.587 G + 0.114 B, 8-bit images rounded with OpenCV 4's
    fixed-point weights."""
    img = np.asarray(img)
    if img.ndim != 3 or img.shape[-1] != 3:
        raise ValueError(f"rgb2gray: img of shape {img.shape}: expected (height, width, 3)")
    if img.dtype == np.uint8:
        # OpenCV's 8-bit path: integer weights, add half, shift (round half up).
        red, green, blue = (img[..., i].astype(np.int32) for i in range(3))
        weight_r, weight_g, weight_b = _GRAY_WEIGHTS_Q14
        luma = (red * weight_r + green * weight_g + blue * weight_b + (1 << 13)) >> 14
        return luma.astype(np.uint8)
    return (img.astype(np.float64) @ _GRAY_WEIGHTS).astype(img.dtype)
