"""Pippenger window sizes: signed c-bit digits and the rule :func:`window_bits`, minimising ``ceil(256/c) (n + 3
2^(c-1))`` over 4..20; for sparse scalars (mostly 0 and 1) :func:`sparse_window_bits` applies it to the count of scalars
> 1."""

from __future__ import annotations

from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda

__all__ = ["num_windows", "window_bits", "signed_digits", "significant_count", "sparse_window_bits"]

_MIN_C, _MAX_C = 4, 20


def num_windows(c: int) -> int:
    """``ceil(256 / c)`` signed c-bit windows for 255-bit scalars. Raises ValueError: c not an int >= 1."""
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
        raise ValueError(f"window size c must be an int >= 1, got {c!r}")
    return -(-256 // c)


def window_bits(n: int) -> int:
    """The window c for an n-point MSM (module docstring). Raises ValueError: n not an int >= 0."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"window_bits: n (points) must be an int >= 0, got {n!r}")
    best_c, best = _MIN_C, None
    for c in range(_MIN_C, _MAX_C + 1):
        cost = num_windows(c) * (max(n, 1) + 3 * (1 << (c - 1)))
        if best is None or cost < best:
            best_c, best = c, cost
    return best_c


def significant_count(scalars: Any) -> int:
    """The count of scalars > 1 in ``(n, 4)`` uint64 (NumPy or CuPy; one counted sync ``msm.window``). Raises ValueError."""
    shape, dtype = getattr(scalars, "shape", None), getattr(scalars, "dtype", None)
    if shape is None or len(shape) != 2 or shape[1] != 4 or dtype != np.uint64:
        raise ValueError(f"significant_count: scalars must be (n, 4) uint64, got shape {shape} dtype {dtype}")
    if shape[0] == 0:
        return 0
    device = _cuda.is_device_array(scalars)
    xp = _cuda.cupy() if device else np
    count = xp.count_nonzero((scalars[:, 0] > 1) | (scalars[:, 1:] != 0).any(axis=1))
    return int(_cuda.read_back(count.reshape(1), "msm.window")[0]) if device else int(count)


def sparse_window_bits(scalars: Any) -> int:
    """``window_bits(max(significant_count(scalars), 1))``. Raises ValueError: as :func:`significant_count`."""
    return window_bits(max(significant_count(scalars), 1))


def signed_digits(k: int, c: int) -> list[int]:
    """Signed c-bit digits of ``0 <= k < 2^255`` in ``[-2^(c-1), 2^(c-1)]``, ``k == sum(d 2^(c w))``. Raises ValueError."""
    nw = num_windows(c)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < (1 << 255):
        raise ValueError(f"signed_digits: k must be an int in [0, 2^255), got {k!r}")
    k = int(k)
    half, carry, out = 1 << (c - 1), 0, []
    for w in range(nw):
        v = ((k >> (w * c)) & ((1 << c) - 1)) + carry
        if v > half:
            out.append(v - (1 << c))
            carry = 1
        else:
            out.append(v)
            carry = 0
    if carry:
        raise ValueError("scalar too large for the window count")
    return out
