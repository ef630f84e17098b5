"""The last step of the GPU MSM: Horner over the window sums, to affine, out of Montgomery form (and the
window reduction's thread split before it, :func:`window_threads`).

:func:`finish` launches it for :func:`zkgpu.gpu.msm.pippenger.msm_device`, :func:`zkgpu.gpu.msm.pippenger.batch_add_device` and
:mod:`zkgpu.gpu.msm.precomp` (``(nwin, 48)`` uint32 XYZZ window sums in, ``(1, 12)`` uint64 canonical affine out,
on the current stream, no host sync). The step is one dependency chain: ``c`` doublings per window (the top
window's sum is doubled ``c * (nwin - 1)`` times in a row), one addition per window and one inversion, so a
single GPU thread runs it latency-bound, about 1.4 us per 12-limb Fq product on the H200: a fixed ~4.8 ms
per MSM at every size in session 3's phase breakdowns (``phase:final``), 22% of a 2^22 PoRep-like MSM.

Variants (:data:`FINAL`, :data:`INVERSE`, set by :func:`configure`; ``zkgpu/kernels/msm_final.cuh``):

- ``FINAL = "warp"`` (``msm_final_warp``): one warp; the independent Fq products of each group operation on
  different lanes (one instruction stream, so a level of independent products costs one product's
  latency): a doubling (EFD dbl-2008-s, 9 products in 3 levels) costs 3 product latencies, an addition
  (add-2008-s, 14 products in 4 levels) 4. ``"serial"`` (``msm_final``): one thread, every product in turn.
- ``INVERSE = "binary"``: the one inversion by the binary extended Euclidean algorithm (Hankerson, Menezes,
  Vanstone, *Guide to Elliptic Curve Cryptography*, algorithm 2.22: shifts and subtractions of 12-limb
  integers); ``"fermat"``: ``x^(q-2)``, 380 squarings in a row (the serial kernel's, always).

Model (products in the chain, at c = 20, 13 windows): serial 13 * (20 * 9 + 14) + ~570 (Fermat) ~ 3100;
warp 13 * (20 * 3 + 4) ~ 830, plus ~570 with Fermat or the binary algorithm's ~1100 short steps. The
measurements (``zkgpu bench msm`` phase rows, ``scripts/msm_final_compare.py``) are in notes/msm-kernels.md.
"""

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
"""The window reduction's threads at most (``window_reduce``: each thread a range of buckets, then a 32-bit
``mul_u32`` by its offset, ~20 group operations): :func:`window_threads`. 2^16 is about one wave of resident
threads on the H200 (132 SMs x 384); measured against 2^17 and 2^15 in notes/msm-kernels.md."""
MIN_RANGE = 16
"""The fewest buckets per window_reduce thread (when the thread budget allows fewer): below it the offset
product (~20 group operations) outweighs the thread's 2 additions per bucket."""

Kernel = Callable[[str], Any]  # msm.cu's kernel by name (zkgpu.gpu.msm.pippenger._k)


def window_threads(nwin: int, m: int) -> int:
    """T, the window reduction's threads per window: the largest power of 2 with ``nwin * T <=``
    :data:`REDUCE_THREADS` and ``m / T >=`` :data:`MIN_RANGE` (or T = 1), each thread then summing ``m / T``
    buckets. On the H200 (scripts/msm_variants_compare.py, notes/msm-kernels.md): c = 16 (16 windows of 2^15
    buckets) T = 2048 took 2.2 ms against 3.0 (T = 4096) and 3.7 (T = 8192); c = 20 (13 windows of 2^19)
    T = 4096 took 12.9 ms against 13.6 (8192) and 17.6 (2048)."""
    t = 1
    while nwin * t * 2 <= REDUCE_THREADS and m // (t * 2) >= MIN_RANGE:
        t *= 2
    return t


def configure(*, final: str | None = None, inverse: str | None = None, reduce_threads: int | None = None) -> None:
    """Set :data:`FINAL`, :data:`INVERSE` and :data:`REDUCE_THREADS` (None keeps the current value).

    Raises:
        ValueError: a name not in :data:`VARIANTS` / :data:`INVERSES`, or reduce_threads not an int >= 1
            (names the value).
    """
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
    """``sum_w 2^(c*w) sums[w]`` as canonical affine ``(1, limbs)`` uint64 (CuPy; the identity all zero), from
    ``sums (nwin, 48)`` uint32 XYZZ window sums in Montgomery form (G2: ``(nwin, 96)`` with ``limbs=24`` and
    ``k`` the G2 build's kernels); ``c = 0`` with ``nwin = 1``: just the point to affine. Queues one kernel
    (one thread or one warp, :data:`FINAL`); no host sync."""
    s = settings()
    out = cp.empty((1, limbs), dtype=cp.uint64)
    if s["final"] == "serial":
        k("msm_final")((1,), (1,), (sums, np.uint32(nwin), np.uint32(c), out.view(cp.uint32)))
    else:
        k("msm_final_warp")((1,), (32,), (sums, np.uint32(nwin), np.uint32(c), np.uint32(s["inverse"] == "binary"),
                                         out.view(cp.uint32)))
    return out
