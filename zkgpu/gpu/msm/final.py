"""The last step of the GPU MSM: Horner over the window sums, to affine, out of Montgomery form.

Variants (``kernels/msm_final.cuh``): :data:`FINAL` "warp" (a group operation's independent Fq products on different
lanes) or "serial"; :data:`INVERSE` "binary" (Hankerson-Menezes-Vanstone alg. 2.22) or "fermat". :func:`window_threads`
sets the window reduction's threads before it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from zkgpu.arith.curve import LIMBS

__all__ = ["FINAL", "INVERSE", "VARIANTS", "INVERSES", "REDUCE_THREADS", "MIN_RANGE", "configure", "finish",
           "window_threads"]

VARIANTS = ("warp", "serial")
INVERSES = ("binary", "fermat")
FINAL = "warp"
"""``"warp"`` (msm_final_warp, one warp) or ``"serial"`` (msm_final, one thread)."""
INVERSE = "binary"
"""The warp variant's inversion: ``"binary"`` (binary extended Euclid) or ``"fermat"`` (x^(q-2))."""

REDUCE_THREADS = 1 << 16
"""The window reduction's threads at most (:func:`window_threads`); 2^16 is about one wave on the H200."""
MIN_RANGE = 16
"""The fewest buckets per window_reduce thread (when the thread budget allows fewer): below it the offset
product (~20 group operations) outweighs the thread's 2 additions per bucket."""

Kernel = Callable[[str], Any]  # msm.cu's kernel by name (zkgpu.gpu.msm.pippenger._k)


def window_threads(nwin: int, m: int) -> int:
    """Threads per window T: the largest power of 2 with ``nwin T <= REDUCE_THREADS`` and ``m / T >= MIN_RANGE`` (or 1)."""
    t = 1
    while nwin * t * 2 <= REDUCE_THREADS and m // (t * 2) >= MIN_RANGE:
        t *= 2
    return t


def configure(*, final: str | None = None, inverse: str | None = None, reduce_threads: int | None = None) -> None:
    """Set :data:`FINAL`, :data:`INVERSE`, :data:`REDUCE_THREADS` (None keeps). Raises ValueError: bad name or count."""
    global FINAL, INVERSE, REDUCE_THREADS
    if reduce_threads is not None:
        if isinstance(reduce_threads, bool) or not isinstance(reduce_threads, (int, np.integer)) or reduce_threads < 1:
            raise ValueError(f"zkgpu.gpu.msm.final: reduce_threads must be an int >= 1, got {reduce_threads!r}")
        REDUCE_THREADS = int(reduce_threads)
    if final is not None:
        _check(final, VARIANTS, "final")
        FINAL = final
    if inverse is not None:
        _check(inverse, INVERSES, "inverse")
        INVERSE = inverse


def _check(value: object, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"zkgpu.gpu.msm.final: {what} must be one of {', '.join(allowed)}, got {value!r}")


def settings() -> dict[str, str]:
    """``{"final": FINAL, "inverse": INVERSE}`` (checked), for a benchmark's records."""
    _check(FINAL, VARIANTS, "final")
    _check(INVERSE, INVERSES, "inverse")
    return {"final": FINAL, "inverse": INVERSE if FINAL == "warp" else "fermat"}


def finish(cp: Any, k: Kernel, sums: Any, nwin: int, c: int, *, limbs: int = LIMBS) -> Any:
    """``sum_w 2^(c w) sums[w]`` as canonical affine ``(1, limbs)`` uint64 CuPy from ``(nwin, 48)`` (G2 96) XYZZ sums.
    Queues one kernel; no host sync."""
    s = settings()
    out = cp.empty((1, limbs), dtype=cp.uint64)
    if s["final"] == "serial":
        k("msm_final")((1,), (1,), (sums, np.uint32(nwin), np.uint32(c), out.view(cp.uint32)))
    else:
        k("msm_final_warp")((1,), (32,), (sums, np.uint32(nwin), np.uint32(c), np.uint32(s["inverse"] == "binary"),
                                         out.view(cp.uint32)))
    return out
