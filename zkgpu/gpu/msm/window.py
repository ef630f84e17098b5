"""The window size of the Pippenger MSM (:mod:`zkgpu.gpu.msm.pippenger`): signed c-bit digits, the size rule, and the
rule for sparse scalars.

Window size rule (:func:`window_bits`): ``c`` minimises the model cost ``ceil(256/c) * (n + 3 * 2^(c-1))``
-- one mixed addition per (point, window) plus about three additions' worth per bucket for the running-sum
reduction -- over ``4 <= c <= 20``. For example 2^16 -> 13, 2^20 -> 16, 2^24 -> 20.

Sparse scalars (:func:`sparse_window_bits`): Filecoin's PoRep assignments are mostly 0 and 1 (about 45%
each). A zero scalar has no nonzero digit and a one has a single digit 1 in window 0, so only the other
scalars ("significant", > 1) add a point in every window, while each window still pays its 2^(c-1)
buckets' reduction. The rule then sizes the window for the significant count instead of n. Measured on the
H200 (mid-session sweep of 2026-12-01, c = 13..22, CUB sort; recorded by scripts/msm_sort_compare.py):
PoRep-like scalars were fastest at c = 13 (2^20, 2^22) and 16 (2^24) against the n rule's 16, 16 and 20
(1.7x slower at 2^24), while uniform scalars were fastest at the n rule's c.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda

__all__ = ["num_windows", "window_bits", "signed_digits", "significant_count", "sparse_window_bits"]

_MIN_C, _MAX_C = 4, 20


def num_windows(c: int) -> int:
    """Signed c-bit windows for 255-bit scalars: ``ceil(256 / c)`` (the top carry is then 0).

    Raises:
        ValueError: c not an int >= 1.
    """
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
        raise ValueError(f"window size c must be an int >= 1, got {c!r}")
    return -(-256 // c)


def window_bits(n: int) -> int:
    """The window size c for an n-point MSM (see the module docstring for the cost model).

    Raises:
        ValueError: n not an int >= 0.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"window_bits: n (points) must be an int >= 0, got {n!r}")
    best_c, best = _MIN_C, None
    for c in range(_MIN_C, _MAX_C + 1):
        cost = num_windows(c) * (max(n, 1) + 3 * (1 << (c - 1)))
        if best is None or cost < best:
            best_c, best = c, cost
    return best_c


def significant_count(scalars: Any) -> int:
    """The number of scalars > 1 among ``scalars (n, 4)`` uint64 (canonical little-endian limbs), NumPy
    or CuPy. On the GPU this reads one count back: a host synchronisation, counted as ``msm.window``
    (:func:`zkgpu.core.cuda.count_sync`).

    Raises:
        ValueError: not a 2-D array with 4 uint64 columns (the shape and dtype named).
    """
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
    """The window size for ``scalars (n, 4)`` uint64 from their significant count (:func:`significant_count`,
    one read-back on the GPU): ``window_bits(max(significant, 1))``. For uniform scalars that is
    ``window_bits(n)``.

    Raises:
        ValueError: as :func:`significant_count`.
    """
    return window_bits(max(significant_count(scalars), 1))


def signed_digits(k: int, c: int) -> list[int]:
    """Reference signed-digit recoding of one scalar ``0 <= k < 2^255`` (the kernel's rule).

    Returns ``num_windows(c)`` digits in ``[-2^(c-1), 2^(c-1)]`` with
    ``k == sum(d * 2^(c*w))``.

    Raises:
        ValueError: c not an int >= 1, or k outside ``[0, 2^255)``.
    """
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
