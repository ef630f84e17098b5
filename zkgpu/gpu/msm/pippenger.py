"""G1 and G2 multi-scalar multiplication (Pippenger, XYZZ buckets), G1 batch addition and prep_msm.

Host layouts: points ``(n, 12)`` (G2 ``(n, 24)``) uint64 (:mod:`zkgpu.arith.curve`), scalars ``(n, 4)`` canonical Fr.
GPU (``kernels/msm.cu``): signed c-bit window digits; one 64-bit key per (window, point); CUB radix sort of the bucket
bits (:mod:`~zkgpu.gpu.msm.devsort`); balanced bucket accumulation (:mod:`~zkgpu.gpu.msm.reduce`); running-sum window
reduction; Horner (:mod:`~zkgpu.gpu.msm.final`). Arrays are sized for the worst case, so the host need not wait inside
an MSM. Without a GPU: arkworks. Sources: Pippenger 1976; sppark ``msm/pippenger.cuh``; cuzk/supraseal ``msm``."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from typing import Any

import numpy as np

from zkgpu.arith.curve import LIMBS, check_points, g1_sum
from zkgpu.arith.field import FR, check_array, not_canonical
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.fr_device import DeferredCheck
from zkgpu.gpu.msm import devsort
from zkgpu.gpu.msm import final as msm_final
from zkgpu.gpu.msm import reduce as msm_reduce
from zkgpu.gpu.msm.group import G1, Group
from zkgpu.gpu.msm.group import group as _group
from zkgpu.gpu.msm.group import msm_cpu as _msm_cpu_group
from zkgpu.gpu.msm.reduce import HEAVY_BLOCK
from zkgpu.gpu.msm.window import num_windows, signed_digits, significant_count, sparse_window_bits, window_bits

__all__ = [
    "CHUNK",
    "LEVEL0",
    "INLINE_MUL",
    "CUBIN",
    "configure",
    "window_bits",
    "num_windows",
    "signed_digits",
    "significant_count",
    "sparse_window_bits",
    "msm",
    "msm_cpu",
    "msm_device",
    "prepare_points",
    "DeferredCheck",
    "Phases",
    "settings",
    "batch_add",
    "batch_add_cpu",
    "batch_add_device",
    "PrepMsm",
    "prep_msm",
]

CHUNK = 64
"""Sorted (bucket, point) entries per GPU thread in the bucket accumulation."""
LEVEL0 = "balanced"
"""Level 0: "balanced" (CHUNK sorted entries per thread, no host sync) or "runs" (chunks cut on the host, 3 syncs)."""
INLINE_MUL = False
"""True compiles msm.cu with the Fq products inlined into the group operations (ZK_G1_INLINE_MUL=1: faster
kernels, about a minute of NVRTC compile instead of seconds)."""
CUBIN: str | None = None
"""A cubin of the current msm.cu prebuilt by nvcc, loaded instead of NVRTC compilation (G1 only)."""
_SUM_FANIN = 8  # tree-sum fan-in: short serial chains (the reduction tail is latency-bound)
_SENTINEL_KEY = _cuda.header_defines("msm.cu", "MSM_SENTINEL")[0] << 32  # the sort key of a dropped entry (sorted last)
_FR_OPS_KERNELS = ("fr_first_unreduced",)  # kernels of fr_ops.cu that the MSM launches through _k




# --------------------------------------------------------------------------- validation


def _check_shape(arr: Any, cols: int, name: str) -> None:
    if not (isinstance(arr, np.ndarray) or _cuda.is_device_array(arr)):
        raise TypeError(f"{name}: expected a numpy or CuPy uint64 array of shape (n, {cols}), got {type(arr).__name__}")
    if arr.ndim != 2 or arr.shape[1] != cols:
        raise ValueError(f"{name}: expected shape (n, {cols}), got {tuple(arr.shape)}")
    if arr.dtype != np.uint64:
        raise TypeError(f"{name}: expected dtype uint64, got {arr.dtype}")


# --------------------------------------------------------------------------- GPU plumbing


def configure(
    *, chunk: int | None = None, level0: str | None = None, inline_mul: bool | None = None, cubin: str | None = None
) -> None:
    """Set :data:`CHUNK`, :data:`LEVEL0`, :data:`INLINE_MUL`, :data:`CUBIN`; None keeps (``cubin=""``: compile). Raises
    ValueError: chunk < 1, level0 not "balanced"/"runs", inline_mul not bool, or no such cubin."""
    global CHUNK, LEVEL0, INLINE_MUL, CUBIN
    if chunk is not None:
        _check_chunk(chunk)
        CHUNK = int(chunk)
    if level0 is not None:
        _check_level0(level0)
        LEVEL0 = level0
    if inline_mul is not None:
        if not isinstance(inline_mul, bool):
            raise ValueError(f"zkgpu.gpu.msm.pippenger.configure: inline_mul must be True or False, got {inline_mul!r}")
        INLINE_MUL = inline_mul
    if cubin is not None:
        if cubin and not os.path.isfile(cubin):
            raise ValueError(f"zkgpu.gpu.msm.pippenger.configure: cubin {cubin!r} is not a file")
        CUBIN = cubin or None


def _check_chunk(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"zkgpu.gpu.msm.pippenger: chunk (entries per thread) must be a positive integer, got {value!r}")


def _check_level0(value: object) -> None:
    if value not in ("balanced", "runs"):
        raise ValueError(f"zkgpu.gpu.msm.pippenger: level0 must be 'balanced' or 'runs', got {value!r}")


def _defines() -> tuple[tuple[str, str], ...]:
    """The ``-D`` build options of msm.cu: ZK_G1_INLINE_MUL=1 with :data:`INLINE_MUL`."""
    return (("ZK_G1_INLINE_MUL", "1"),) if INLINE_MUL else ()


@functools.lru_cache(maxsize=4)
def _prebuilt(path: str) -> Any:
    return _cuda.cupy().RawModule(path=path)


def _k(name: str, group: str = "g1") -> Any:
    """A kernel of msm.cu built for ``group`` (G1: from :data:`CUBIN` when set), or of fr_ops.cu for the Fr
    check it shares with the NTT (fr_first_unreduced)."""
    if name in _FR_OPS_KERNELS:
        return _cuda.get_kernel("fr_ops", name)
    if CUBIN and group == "g1":
        return _prebuilt(CUBIN).get_function(name)
    return _cuda.get_kernel("msm", name, _defines() + _group(group).defines)


def _kernels(g: Group) -> msm_final.Kernel:
    """msm.cu's kernels of group ``g`` by name (what :mod:`~zkgpu.gpu.msm.reduce` and :mod:`~zkgpu.gpu.msm.final`
    launch)."""
    return lambda name: _k(name, g.name)


def kernel(name: str, group: str = "g1") -> Any:
    """msm.cu's compiled kernel ``name`` for ``group``, built as configured. Raises RuntimeError without a GPU."""
    return _k(name) if group == "g1" else _k(name, group)


def settings() -> dict[str, Any]:
    """``{"chunk", "level0", "inline_mul", "cubin"}`` in force. Raises ValueError: bad chunk or level0."""
    return dict(chunk=_chunk_size(), level0=_level0_mode(), inline_mul=bool(_defines()),
                cubin=CUBIN or "")


def _u32(x: int) -> np.uint32:
    return np.uint32(x)


def _u64(x: int) -> np.uint64:
    return np.uint64(x)


def _prepare_points_dev(pts: Any, g: Group = G1, check: bool = True) -> Any:
    """Validate (< q, on curve) and convert to Montgomery form; returns ``(n, g.affine_words)`` uint32.
    ``check=False``: the same kernel, its verdict not read back (no host sync; the caller vouches for the points)."""
    cp = _cuda.cupy()
    n = pts.shape[0]
    pts = cp.ascontiguousarray(pts)
    mont = cp.empty((n, g.affine_words), dtype=cp.uint32)
    bad = cp.full(1, n, dtype=cp.uint64)
    _cuda.launch_1d(_kernels(g)(g.prepare), n, (pts.view(cp.uint32), mont, _u64(n), bad))
    if not check:
        return mont
    b = int(_cuda.read_back(bad, "msm.points_check")[0])
    if b < n:
        raise ValueError(f"points[{b}] is not a valid {g.name.upper()} point (coordinate >= q or not on {g.curve})")
    return mont


def prepare_points(points: Any, *, group: str = "g1") -> Any:
    """Check points once and convert to Montgomery form for ``mont=`` of :func:`msm_device` / :func:`batch_add_device`.

    Args:
        points: device ``(n, 12)`` (G2: ``(n, 24)``) uint64. group: "g1" or "g2".
    Returns:
        CuPy ``(n, 24)`` (G2 ``(n, 48)``) uint32. One host sync.
    Raises:
        TypeError/ValueError: bad dtype or shape, or an invalid point (first bad index)."""
    g = _group(group)
    _check_shape(points, g.limbs, "points")
    if points.shape[0] == 0:
        return _cuda.cupy().empty((0, g.affine_words), dtype=np.uint32)
    return _prepare_points_dev(points, g)


def _check_scalars_dev(sc: Any, deferred: DeferredCheck | None = None) -> Any:
    cp = _cuda.cupy()
    n = sc.shape[0]
    sc = cp.ascontiguousarray(sc)
    bad = cp.full(1, n, dtype=cp.uint64)
    _cuda.launch_1d(_k("fr_first_unreduced"), n, (sc.view(cp.uint32), _u64(n), bad))
    if deferred is not None:  # read after the stream's work (DeferredCheck.raise_if_bad); sc stays alive there
        deferred.add("scalars", sc.view(cp.uint32).reshape(-1), bad)
        return sc
    b = int(_cuda.read_back(bad, "msm.scalars_check")[0])
    if b < n:
        raise not_canonical(FR, "scalars", b, int.from_bytes(cp.asnumpy(sc[b]).astype("<u8").tobytes(), "little"))
    return sc


def _chunk_size() -> int:
    """Entries per GPU thread in the bucket accumulation, :data:`CHUNK` (checked)."""
    _check_chunk(CHUNK)
    return int(CHUNK)


def _level0_mode() -> str:
    """:data:`LEVEL0` (checked)."""
    _check_level0(LEVEL0)
    return LEVEL0


def _chunks(cp: Any, keys: Any, chunk: int = CHUNK) -> tuple[Any, Any, int, int]:
    """Runs of equal sorted uint32 ``keys`` cut into chunks of <= chunk: ``(cstart, cend, K chunks, R runs)``."""
    E = keys.shape[0]
    change = cp.empty(E, dtype=cp.bool_)
    change[0] = True
    cp.not_equal(keys[1:], keys[:-1], out=change[1:])
    starts = cp.flatnonzero(change)  # its size is read back
    _cuda.count_sync("msm.runs")
    R = int(starts.shape[0])
    ends = cp.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = E
    per_run = (ends - starts + (chunk - 1)) // chunk
    cum = cp.cumsum(per_run)
    _cuda.count_sync("msm.chunks")
    K = int(cum[-1])  # read back
    if K == R:
        return starts.astype(cp.uint64), ends.astype(cp.uint64), K, R
    cidx = cp.arange(K, dtype=cum.dtype)
    run = cp.searchsorted(cum, cidx, side="right")
    cstart = starts[run] + (cidx - (cum[run] - per_run[run])) * chunk
    cend = cp.minimum(cstart + chunk, ends[run])
    return cstart.astype(cp.uint64), cend.astype(cp.uint64), K, R


def _level0_runs(cp: Any, keys: Any, e: Any, mont: Any, chunk: int, g: Group = G1) -> msm_reduce.Partials | None:
    """Level 0 in "runs" mode, chunks cut on the host (three host syncs); None when no digit is nonzero."""
    E = int(_cuda.read_back(e, "msm.sorted_count")[0])
    if E == 0:
        return None
    keys = keys[:E]
    hi = (keys >> np.uint64(32)).astype(cp.uint32)
    cstart, cend, K, _ = _chunks(cp, hi, chunk)
    del hi
    out = msm_reduce.Partials.empty(cp, K, count=cp.full(1, K, dtype=cp.uint64), words=g.xyzz_words)
    _cuda.launch_1d(_kernels(g)("seg_accum_affine"), K, (keys, cstart, cend, _u64(K), mont, out.keys, out.pts), block=HEAVY_BLOCK)
    return out


def _tree_sum(cp: Any, parts: Any, groups: int, per_group: int, g: Group = G1) -> Any:
    """Sum each of ``groups`` consecutive runs of ``per_group`` XYZZ points (per_group a power of 2)."""
    while per_group > 1:
        k = min(per_group, _SUM_FANIN)
        count = groups * per_group
        out = cp.empty((count // k, g.xyzz_words), dtype=cp.uint32)
        _cuda.launch_1d(_kernels(g)("xyzz_sum_ranges"), count // k, (parts, _u64(count), _u32(k), out), block=HEAVY_BLOCK)
        parts, per_group = out, per_group // k
    return parts


def _finish(cp: Any, sums: Any, nwin: int, c: int, g: Group = G1) -> Any:
    """Horner over the window sums, to affine (:func:`zkgpu.gpu.msm.final.finish`)."""
    return msm_final.finish(cp, _kernels(g), sums, nwin, c, limbs=g.limbs)


def _top_window_buckets(c: int, nwin: int, m: int) -> int:
    """The buckets of the top window that a scalar < 2^255 can reach: its digit is at most
    ``2^(255 - c*(nwin-1))`` (at most 2^(c-1), since c * nwin >= 256), so window_reduce stops there."""
    return min(m, 1 << (255 - c * (nwin - 1)))


class Phases:
    """Optional CUDA-event marks between an MSM's phases; :meth:`result` gives ms per phase."""

    def __init__(self, enabled: bool):
        self.marks: list[tuple[str, Any]] = []
        self.enabled = enabled

    def mark(self, name: str) -> None:
        if self.enabled:
            ev = _cuda.cupy().cuda.Event()
            ev.record()
            self.marks.append((name, ev))

    def result(self) -> dict[str, float]:
        """Phase name -> ms from the previous mark (syncs on the last mark); empty when disabled."""
        if not self.marks:
            return {}
        cp = _cuda.cupy()
        self.marks[-1][1].synchronize()
        return {
            name: float(cp.cuda.get_elapsed_time(prev_ev, ev))
            for (_, prev_ev), (name, ev) in itertools.pairwise(self.marks)
        }


def msm_device(pts: Any, sc: Any, c: int | str | None = None, phases: Phases | None = None, *,
               mont: Any = None, deferred: DeferredCheck | None = None, group: str = "g1", check: bool = True) -> Any:
    """The GPU Pippenger of :func:`msm` on CuPy ``pts``, ``sc`` (values checked, shapes not); CuPy ``(1, 12)`` (G2 24).
    ``c``: window bits (default :func:`window_bits`; "sparse": by the count of scalars > 1, one sync). ``mont``:
    prepared points (``pts`` ignored). ``deferred``: queue the scalar check. ``check=False``: no checks. With ``mont``
    and ``deferred`` (or ``check=False``) the call only queues kernels. Raises ValueError: a point or scalar out of
    range, ``sc``/``mont`` lengths differ, or bad ``c``."""
    if not (c is None or c == "sparse" or (isinstance(c, (int, np.integer)) and not isinstance(c, bool) and 2 <= c <= 24)):
        raise ValueError(f"msm_device: window c must be an int in [2, 24], 'sparse' or None, got {c!r}")
    g = _group(group)
    k = _kernels(g)
    cp = _cuda.cupy()
    ph = phases or Phases(False)
    n = (pts if mont is None else mont).shape[0]
    if sc.shape[0] != n:
        raise ValueError(f"scalars: expected {n} rows (one per point), got {sc.shape[0]}")
    if n == 0:
        return cp.zeros((1, g.limbs), dtype=cp.uint64)
    ph.mark("start")
    if mont is None:
        mont = _prepare_points_dev(pts, g, check)
    sc = _check_scalars_dev(sc, deferred) if check else cp.ascontiguousarray(sc)
    ph.mark("validate+to_mont")
    live = n  # the scalars with a digit in every window (the significant ones for c="sparse")
    if c == "sparse":
        live = max(significant_count(sc), 1)  # one read-back (msm.window), as sparse_window_bits
        c = window_bits(live)
    c = int(c or window_bits(n))
    nwin, m = num_windows(c), 1 << (c - 1)
    keys = cp.empty(nwin * n, dtype=cp.uint64)
    _cuda.launch_1d(k("msm_digits"), n, (sc.view(cp.uint32), mont, _u64(n), np.int32(c), np.int32(nwin), keys))
    ph.mark("digits")
    bits = (nwin * m).bit_length()  # buckets < nwin*m <= 2^bits - 1: a sentinel's field (all ones) sorts last
    keys = devsort.sort_keys(keys, begin_bit=32, end_bit=32 + bits, overwrite=True)  # bucket bits only, no host sync
    e = msm_reduce.valid_count(cp, k, keys)
    ph.mark("sort")
    buckets = cp.zeros((nwin * m, g.xyzz_words), dtype=cp.uint32)
    plan = msm_reduce.plan(n, nwin, m, _chunk_size(), entries_per_key=live / m)
    if _level0_mode() == "runs":
        parts = _level0_runs(cp, keys, e, mont, plan.chunk, g)
    else:
        parts = msm_reduce.level0(cp, k, keys, e, mont, plan, words=g.xyzz_words)
    del keys
    ph.mark("bucket_accumulate")
    if parts is not None:
        msm_reduce.to_buckets(cp, k, parts, plan, buckets)
    ph.mark("bucket_partials")
    # running-sum reduction: T threads per window, each a range of R buckets
    T = msm_final.window_threads(nwin, m)
    R = m // T
    parts = cp.empty((nwin * T, g.xyzz_words), dtype=cp.uint32)
    _cuda.launch_1d(k("window_reduce"), nwin * T, (buckets, _u32(nwin), _u32(m), _u32(T), _u32(R),
                                                   _u32(_top_window_buckets(c, nwin, m)), parts), block=HEAVY_BLOCK)
    sums = _tree_sum(cp, parts, nwin, T, g)
    ph.mark("window_reduce")
    out = _finish(cp, sums, nwin, c, g)
    ph.mark("final")
    return out


# --------------------------------------------------------------------------- public API


def msm(points: Any, scalars: Any, *, window: int | None = None, group: str = "g1", check: bool = True,
        out: Any = None) -> Any:
    """``sum_i scalars[i] * points[i]`` on BLS12-381 G1 (or G2): ``(1, 12)`` (G2 ``(1, 24)``) uint64.

    Args:
        points: ``(n, 12)`` (G2 ``(n, 24)``) uint64 affine, numpy or CuPy. scalars: ``(n, 4)`` canonical Fr.
        window: c in 2..24 (GPU only). group: "g1" or "g2".
        check: False trusts device inputs (no value checks, no read-back). out: array to write the result into.
    Returns:
        CuPy when both inputs are CuPy, else numpy; the identity for n = 0.
    Raises:
        TypeError/ValueError: bad dtype, shape or n, a scalar >= r or invalid point (first bad index), bad group or out.
    """
    g = _group(group)
    dev = _cuda.is_device_array(points) and _cuda.is_device_array(scalars)
    _check_shape(points, g.limbs, "points")
    _check_shape(scalars, FR.limbs, "scalars")
    n = points.shape[0]
    if scalars.shape[0] != n:
        raise ValueError(f"scalars: expected {n} rows (one per point), got {scalars.shape[0]}")
    if window is not None and not 2 <= int(window) <= 24:
        raise ValueError(f"window must be in 2..24, got {window}")
    if out is not None:
        _check_shape(out, g.limbs, "out")
        if out.shape[0] != 1 or _cuda.is_device_array(out) != dev:
            raise ValueError(f"out: expected a (1, {g.limbs}) uint64 {'CuPy' if dev else 'numpy'} array, got shape "
                             f"{tuple(out.shape)} ({type(out).__name__})")
    if dev:
        res = msm_device(points, scalars, window, group=g.name, check=check)
    elif _cuda.gpu_available():
        cp = _cuda.cupy()
        pts = points if _cuda.is_device_array(points) else cp.asarray(np.ascontiguousarray(points))
        sc = scalars if _cuda.is_device_array(scalars) else cp.asarray(np.ascontiguousarray(scalars))
        res = cp.asnumpy(msm_device(pts, sc, window, group=g.name))
    else:
        res = msm_cpu(points, scalars, group=g.name)
    if out is None:
        return res
    out[...] = res
    return out


def msm_cpu(points: np.ndarray, scalars: np.ndarray, *, group: str = "g1") -> np.ndarray:
    """CPU reference: validates, then py-arkworks-bls12381 ``G1Point`` (``group="g2"``: ``G2Point``)
    ``.multiexp_unchecked`` (:func:`zkgpu.gpu.msm.group.msm_cpu`)."""
    return _msm_cpu_group(points, scalars, _group(group))


def _bitmap_host(bitmap: Any, n: int) -> np.ndarray:
    bm = np.ascontiguousarray(bitmap)
    if bm.dtype != np.uint64 or bm.ndim != 1:
        raise TypeError(f"bitmap: expected a 1-D uint64 array, got dtype {bm.dtype}, shape {bm.shape}")
    if bm.shape[0] < -(-n // 64):
        raise ValueError(f"bitmap: {bm.shape[0]} words cannot cover {n} points (need {-(-n // 64)})")
    return bm


def batch_add(points: Any, bitmap: Any) -> Any:
    """Sum of the ``(n, 12)`` points whose ``bitmap`` bit is set (bit i%64 of word i//64), cuzk's ``batch_add``. Returns
    ``(1, 12)`` uint64, CuPy when both inputs are CuPy (identity when nothing is selected)."""
    _check_shape(points, LIMBS, "points")
    n = points.shape[0]
    dev = _cuda.is_device_array(points) and _cuda.is_device_array(bitmap)
    if not dev and not _cuda.is_device_array(bitmap):
        bitmap = _bitmap_host(bitmap, n)
    elif bitmap.dtype != np.uint64 or bitmap.ndim != 1 or bitmap.shape[0] < -(-n // 64):
        raise ValueError(f"bitmap: expected >= {-(-n // 64)} uint64 words, got dtype {bitmap.dtype}, shape {bitmap.shape}")
    if not _cuda.gpu_available():
        return batch_add_cpu(points, bitmap)
    cp = _cuda.cupy()
    pts = points if _cuda.is_device_array(points) else cp.asarray(np.ascontiguousarray(points))
    bm = bitmap if _cuda.is_device_array(bitmap) else cp.asarray(bitmap)
    out = batch_add_device(pts, bm)
    return out if dev else cp.asnumpy(out)


def batch_add_device(pts: Any, bm: Any, *, mont: Any = None) -> Any:
    """GPU :func:`batch_add` on CuPy inputs, bitmap unchecked; ``mont``: prepared points (no sync). Raises ValueError."""
    cp = _cuda.cupy()
    n = (pts if mont is None else mont).shape[0]
    if n == 0:
        return cp.zeros((1, LIMBS), dtype=cp.uint64)
    if mont is None:
        mont = _prepare_points_dev(pts)
    per = 64
    nparts = -(-n // per)
    groups = 1
    padded = 1
    while padded < nparts:
        padded *= 2
    parts = cp.zeros((padded, 48), dtype=cp.uint32)  # zero rows = identity padding
    _cuda.launch_1d(_k("batch_add_ranges"), nparts, (mont, _u64(n), cp.ascontiguousarray(bm), _u32(per), parts), block=HEAVY_BLOCK)
    sums = _tree_sum(cp, parts, groups, padded)
    return _finish(cp, sums, 1, 0)


def batch_add_cpu(points: np.ndarray, bitmap: np.ndarray) -> np.ndarray:
    """CPU reference for :func:`batch_add` (arkworks additions)."""
    pts = check_points(np.asarray(points))
    n = pts.shape[0]
    bits = np.unpackbits(_bitmap_host(bitmap, n).astype("<u8").view(np.uint8), bitorder="little")[:n]
    return g1_sum(pts[np.flatnonzero(bits)], checked=False)


@dataclasses.dataclass(frozen=True)
class PrepMsm:
    """supraseal's prep_msm split of n scalars (numpy or CuPy arrays). ``bitmap`` ``(ceil(n/64),)`` uint64 (scalar ==
    1), ``ones``, ``zeros``, ``sig_scalars`` ``(m, 4)`` (neither 0 nor 1, in order), ``sig_indices`` ``(m,)`` int64."""

    n: int
    bitmap: Any
    ones: int
    zeros: int
    sig_scalars: Any
    sig_indices: Any

    @property
    def significant(self) -> int:
        """Number of significant scalars (m)."""
        return int(self.sig_indices.shape[0])

    @property
    def on_device(self) -> bool:
        """True when the arrays are CuPy arrays."""
        return _cuda.is_device_array(self.sig_indices)

    def to_host(self) -> PrepMsm:
        """The same split with numpy arrays (self when it is already on the host)."""
        if not self.on_device:
            return self
        return PrepMsm(n=self.n, bitmap=self.bitmap.get(), ones=self.ones, zeros=self.zeros,
                       sig_scalars=self.sig_scalars.get(), sig_indices=self.sig_indices.get())


def prep_msm(scalars: np.ndarray) -> PrepMsm:
    """Split canonical Fr ``(n, 4)`` into ones (bitmap), zeros and significant (numpy; supraseal ``groth16_cuda.cu``).
    Raises TypeError/ValueError: as :func:`zkgpu.arith.field.check_array`."""
    sc = check_array(FR, scalars, name="scalars")
    n = sc.shape[0]
    high_zero = ~np.any(sc[:, 1:] != 0, axis=1)
    is_zero = high_zero & (sc[:, 0] == 0)
    is_one = high_zero & (sc[:, 0] == 1)
    sig = ~(is_zero | is_one)
    packed = np.packbits(is_one, bitorder="little")
    words = -(-n // 64)
    buf = np.zeros(words * 8, dtype=np.uint8)
    buf[: packed.size] = packed
    idx = np.flatnonzero(sig).astype(np.int64)
    return PrepMsm(
        n=n,
        bitmap=buf.view("<u8").astype(np.uint64),
        ones=int(is_one.sum()),
        zeros=int(is_zero.sum()),
        sig_scalars=np.ascontiguousarray(sc[idx]),
        sig_indices=idx,
    )
