"""prep_msm three ways: ``cpu`` (numpy), ``cpu_parallel`` (numba threads over chunks) and ``gpu`` (``kernels/prep.cu``).

prep_msm is supraseal's split (``groth16_cuda.cu``, ``split_vectors``) into an exactly-one bitmap, dropped zeros and the
compacted significant scalars; every variant returns :class:`~zkgpu.gpu.msm.pippenger.PrepMsm`. ``sel`` splits
``src[sel]`` without gathering it."""

from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from zkgpu.arith.field import FR, not_canonical, to_ints
from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.gpu.msm.pippenger import PrepMsm
from zkgpu.gpu.msm.pippenger import prep_msm as prep_msm_reference

__all__ = [
    "PREPS",
    "CHUNK",
    "configure",
    "default_threads",
    "numba_available",
    "prep_msm",
    "prep_msm_parallel",
    "prep_msm_device",
    "warm_up",
]

PREPS = ("cpu", "cpu_parallel", "gpu")
"""The prep_msm variants (``PipelineConfig.prep``)."""

CHUNK = 1 << 16
"""Scalars per task of ``cpu_parallel`` (a multiple of 64): 2 MiB of scalars, small enough that 2^20
scalars give 16 tasks, large enough that a task's overhead (~10 µs) is < 1% of its work."""

_R = tuple(np.uint64((FR.modulus >> (64 * i)) & ((1 << 64) - 1)) for i in range(4))


_THREADS: int | None = None  # set by configure(); None: min(8, CPUs)


def configure(*, threads: int | None = None) -> None:
    """Default threads of ``cpu_parallel`` (None: min(8, CPUs)). Raises ValueError: not an int >= 1."""
    global _THREADS
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1):
        raise ValueError(f"prep threads must be an int >= 1, got {threads!r}")
    _THREADS = None if threads is None else int(threads)


def default_threads() -> int:
    """Threads of ``cpu_parallel`` when not given: the count given to :func:`configure`, else min(8, CPUs)."""
    return _THREADS if _THREADS is not None else max(1, min(8, os.cpu_count() or 1))


def numba_available() -> bool:
    """True when numba imports (``cpu_parallel`` works)."""
    return optional.numba() is not None


# --------------------------------------------------------------------------- input checks


def _check_layout(scalars: Any, name: str = "scalars") -> None:
    """check_array's type and shape checks without the value scan (the variants scan themselves)."""
    if _cuda.is_device_array(scalars) or isinstance(scalars, np.ndarray):
        dtype, shape = scalars.dtype, scalars.shape
    else:
        raise TypeError(f"{name}: expected a numpy uint64 array of shape (n, 4), got {type(scalars).__name__}")
    if dtype != np.uint64:
        raise TypeError(f"{name}: expected dtype uint64 (shape (n, 4)), got {dtype}")
    if len(shape) != 2 or shape[1] != FR.limbs:
        raise ValueError(f"{name}: expected shape (n, {FR.limbs}) for {FR.name}, got {tuple(shape)}")


def _raise_bad(row: np.ndarray, bad: int, name: str) -> None:
    """Raise the reference's ValueError (:func:`zkgpu.arith.field.not_canonical`) for element ``bad``,
    whose limbs are ``row`` ((1, 4) or (4,) uint64)."""
    raise not_canonical(FR, name, bad, to_ints(FR, np.ascontiguousarray(row, dtype=np.uint64).reshape(1, 4))[0])


def _check_sel(sel: np.ndarray | None, rows: int) -> np.ndarray | None:
    if sel is None:
        return None
    kind = np.asarray(sel).dtype.kind
    if kind not in "iu" and not (kind == "O" and np.asarray(sel).size == 0):
        raise TypeError(f"sel must be integer row indices, got dtype {np.asarray(sel).dtype} (a float index would be truncated)")
    s = np.ascontiguousarray(sel, dtype=np.int64)
    if s.ndim != 1:
        raise ValueError(f"sel must be a 1-d array of row indices, got shape {s.shape}")
    if s.size and (int(s.min()) < 0 or int(s.max()) >= rows):
        raise ValueError(f"sel has a row index outside [0, {rows}): min {int(s.min())}, max {int(s.max())}")
    return s


# --------------------------------------------------------------------------- cpu (reference)


def _prep_cpu(src: np.ndarray, sel: np.ndarray | None) -> PrepMsm:
    return prep_msm_reference(src if sel is None else src[sel])


# --------------------------------------------------------------------------- cpu_parallel (numba)


@functools.lru_cache(maxsize=1)
def _nb() -> tuple[Any, Any]:
    """The two numba passes, compiled on first use (cached on disk by numba)."""
    numba = optional.numba()
    if numba is None:
        raise RuntimeError("prep='cpu_parallel' needs numba: pip install 'zkgpu[cpu-parallel]' (or use prep='cpu')")
    r0, r1, r2, r3 = _R
    zero, one = np.uint64(0), np.uint64(1)

    @numba.njit(nogil=True, cache=True)
    def row_at(head, src, sel, use_sel, j):  # element j: src[j], or row sel[j] of [head; src]
        if not use_sel:
            return src[j]
        p = sel[j]
        k = head.shape[0]
        return head[p] if p < k else src[p - k]

    @numba.njit(nogil=True, cache=True)
    def count(head, src, sel, use_sel, lo, hi, out):  # out[0] ones, out[1] significant, out[2] first bad or -1
        ones = 0
        sig = 0
        bad = -1
        for j in range(lo, hi):
            row = row_at(head, src, sel, use_sel, j)
            x0, x1, x2, x3 = row[0], row[1], row[2], row[3]
            if x1 == zero and x2 == zero and x3 == zero and x0 <= one:
                if x0 == one:
                    ones += 1
            else:
                sig += 1
            if bad < 0:
                ge = False
                if x3 != r3:
                    ge = x3 > r3
                elif x2 != r2:
                    ge = x2 > r2
                elif x1 != r1:
                    ge = x1 > r1
                else:
                    ge = x0 >= r0
                if ge:
                    bad = j
        out[0] = ones
        out[1] = sig
        out[2] = bad

    @numba.njit(nogil=True, cache=True)
    def fill(head, src, sel, use_sel, lo, hi, off, bitmap, sig_idx, sig_sc):
        o = off
        word = zero
        for j in range(lo, hi):
            row = row_at(head, src, sel, use_sel, j)
            x0, x1, x2, x3 = row[0], row[1], row[2], row[3]
            if x1 == zero and x2 == zero and x3 == zero and x0 <= one:
                if x0 == one:
                    word |= one << np.uint64(j & 63)
            else:
                sig_idx[o] = j
                sig_sc[o, 0] = x0
                sig_sc[o, 1] = x1
                sig_sc[o, 2] = x2
                sig_sc[o, 3] = x3
                o += 1
            if (j & 63) == 63 or j == hi - 1:
                bitmap[j >> 6] = word
                word = zero

    return count, fill


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    with _POOLS_LOCK:
        p = _POOLS.get(threads)
        if p is None:
            p = _POOLS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"prep{threads}")
        return p


def prep_msm_parallel(
    src: np.ndarray, *, sel: np.ndarray | None = None, head: np.ndarray | None = None, threads: int | None = None,
    chunk: int = CHUNK, name: str = "scalars",
) -> PrepMsm:
    """``cpu_parallel`` prep_msm of ``src`` ((rows, 4) uint64) or of ``[head; src][sel]``. ``threads``: pool size (1:
    inline); ``chunk``: scalars per task, a multiple of 64. Raises TypeError/ValueError: as the reference, or bad
    chunk/threads/sel. RuntimeError: numba missing."""
    _check_layout(src, name)
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 64 or chunk % 64:
        raise ValueError(f"chunk must be a positive multiple of 64, got {chunk!r}")
    threads = default_threads() if threads is None else threads
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    count, fill = _nb()
    src = np.ascontiguousarray(src)
    if head is not None and sel is None:
        raise ValueError("head needs sel (the rows of [head; src] to split)")
    hd = np.zeros((0, 4), dtype=np.uint64) if head is None else np.ascontiguousarray(head)
    if head is not None:
        _check_layout(hd, "head")
    s = _check_sel(sel, hd.shape[0] + src.shape[0])
    n = src.shape[0] if s is None else s.shape[0]
    use_sel = s is not None
    s_arr = s if use_sel else np.zeros(1, dtype=np.int64)
    bounds = [(lo, min(n, lo + chunk)) for lo in range(0, n, chunk)]
    stats = np.zeros((len(bounds), 3), dtype=np.int64)

    def run(fn, items):
        if threads == 1 or len(items) <= 1:
            for it in items:
                fn(*it)
        else:
            list(_pool(threads).map(lambda it: fn(*it), items))

    run(lambda i, lo, hi: count(hd, src, s_arr, use_sel, lo, hi, stats[i]), [(i, lo, hi) for i, (lo, hi) in enumerate(bounds)])
    bads = stats[:, 2][stats[:, 2] >= 0]
    if bads.size:
        b = int(bads.min())
        p, k = (b, 0) if s is None else (int(s[b]), hd.shape[0])
        _raise_bad(hd[p] if p < k else src[p - k], b, name)
    sig_counts = stats[:, 1]
    offs = np.concatenate([[0], np.cumsum(sig_counts)[:-1]]).astype(np.int64) if len(bounds) else np.zeros(0, np.int64)
    m = int(sig_counts.sum())
    words = -(-n // 64)
    bitmap = np.zeros(words, dtype=np.uint64)
    sig_idx = np.empty(m, dtype=np.int64)
    sig_sc = np.empty((m, 4), dtype=np.uint64)
    run(lambda lo, hi, off: fill(hd, src, s_arr, use_sel, lo, hi, off, bitmap, sig_idx, sig_sc),
        [(lo, hi, int(off)) for (lo, hi), off in zip(bounds, offs, strict=True)])
    ones = int(stats[:, 0].sum())
    return PrepMsm(n=n, bitmap=bitmap, ones=ones, zeros=n - ones - m, sig_scalars=sig_sc, sig_indices=sig_idx)


# --------------------------------------------------------------------------- gpu


_BLOCK = 256


def prep_msm_device(
    src: Any, *, sel: Any = None, offset: int = 0, n: int | None = None, stream: Any = None, name: str = "scalars"
) -> PrepMsm:
    """``gpu`` prep_msm of device scalars ``src[sel[j]]`` or ``src[offset + j]``; returns after the stream's work (2
    syncs). Raises RuntimeError: no GPU. TypeError/ValueError: as the reference, or offset/n/sel out of range."""
    cp = _cuda.cupy()
    _check_layout(src, name)
    stream = stream if stream is not None else cp.cuda.get_current_stream()
    with stream:
        d = cp.ascontiguousarray(cp.asarray(src))
        rows = d.shape[0]
        use_sel = sel is not None
        if use_sel:
            s_d = cp.ascontiguousarray(cp.asarray(sel, dtype=cp.int64))
            if s_d.ndim != 1:
                raise ValueError(f"sel must be a 1-d array of row indices, got shape {s_d.shape}")
            n = s_d.shape[0] if n is None else n
            if not 0 <= n <= s_d.shape[0]:
                raise ValueError(f"n must be in [0, len(sel)={s_d.shape[0]}], got {n}")
            if n and (int(s_d[:n].min()) < 0 or int(s_d[:n].max()) >= rows):
                raise ValueError(f"sel has a row index outside [0, {rows})")
        else:
            s_d = cp.zeros(1, dtype=cp.int64)
            if not 0 <= offset <= rows:
                raise ValueError(f"offset must be in [0, {rows}], got {offset}")
            n = rows - offset if n is None else n
            if not 0 <= n <= rows - offset:
                raise ValueError(f"n must be in [0, {rows - offset}] for offset {offset}, got {n}")
        words = -(-n // 64)
        bitmap = cp.zeros(words, dtype=cp.uint64)
        if n == 0:
            return PrepMsm(n=0, bitmap=bitmap, ones=0, zeros=0, sig_scalars=cp.empty((0, 4), dtype=cp.uint64),
                           sig_indices=cp.empty(0, dtype=cp.int64))
        sig = cp.empty(n, dtype=cp.uint8)
        stat = cp.array([0, 0, np.iinfo(np.uint64).max], dtype=cp.uint64)  # ones, significant, first bad
        args = (d, s_d, np.int32(use_sel), np.uint64(offset), np.uint64(n))
        _cuda.launch_1d(_cuda.get_kernel("prep", "prep_classify"), n, (*args, bitmap, sig, stat[0:2], stat[2:3]),
                        block=_BLOCK, stream=stream)
        pos = cp.cumsum(sig, dtype=cp.int64)
        ones, m, bad = (int(v) for v in stat.get(stream=stream))  # the one mid-way sync: m sizes the outputs
        if bad != np.iinfo(np.uint64).max:
            row = int(s_d[bad]) if use_sel else offset + bad
            _raise_bad(d[row].get(), bad, name)
        sig_idx = cp.empty(m, dtype=cp.int64)
        sig_sc = cp.empty((m, 4), dtype=cp.uint64)
        if m:
            _cuda.launch_1d(_cuda.get_kernel("prep", "prep_compact"), n, (*args, sig, pos, sig_idx, sig_sc), block=_BLOCK, stream=stream)
        stream.synchronize()
    return PrepMsm(n=n, bitmap=bitmap, ones=ones, zeros=n - ones - m, sig_scalars=sig_sc, sig_indices=sig_idx)


# --------------------------------------------------------------------------- one entry point


def prep_msm(scalars: Any, prep: str = "cpu", *, sel: Any = None, threads: int | None = None, chunk: int = CHUNK) -> PrepMsm:
    """prep_msm of ``scalars`` (or ``scalars[sel]``) by variant ``prep`` (:data:`PREPS`), on the host. Raises
    ValueError: unknown prep or bad chunk; as the variant. TypeError: ``sel`` not integers."""
    if prep not in PREPS:
        raise ValueError(f"prep must be one of {PREPS}, got {prep!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 64 or chunk % 64:
        raise ValueError(f"chunk must be a positive multiple of 64, got {chunk!r}")  # for every variant, not only cpu_parallel
    if prep == "gpu":
        return prep_msm_device(scalars, sel=sel).to_host()
    _check_layout(scalars)
    if prep == "cpu_parallel":
        return prep_msm_parallel(scalars, sel=sel, threads=threads, chunk=chunk)
    return _prep_cpu(scalars, _check_sel(sel, scalars.shape[0]))


def warm_up(prep: str) -> None:
    """Compile what ``prep`` needs (numba passes, NVRTC kernels) outside any timed region."""
    if prep not in PREPS:
        raise ValueError(f"prep must be one of {PREPS}, got {prep!r}")
    tiny = np.zeros((65, 4), dtype=np.uint64)
    tiny[1, 0] = 1
    tiny[2, 0] = 2
    if prep == "cpu_parallel":
        prep_msm_parallel(tiny, threads=1, chunk=64)
        prep_msm_parallel(tiny, sel=np.arange(3), head=tiny[:1], threads=1, chunk=64)
    elif prep == "gpu":
        prep_msm_device(tiny)
        prep_msm_device(tiny, sel=np.arange(3))
