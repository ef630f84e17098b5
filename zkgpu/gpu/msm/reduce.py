"""The GPU MSM's bucket accumulation without host synchronisation: worst-case sizes, a fixed number of rounds.

Steps: :func:`valid_count` (E, found on the device); :func:`level0` (each thread takes ``L`` sorted entries, one XYZZ
partial per run of equal key); :func:`to_buckets` (short runs summed first, then rounds cutting each key's partials into
chunks of at most R, then ``scatter_buckets``). Every array is sized by :func:`plan` and every kernel reads its live
count from the device. Bound: a key with x entries leaves at most ``g(x) = ceil((x - 1) / L) + 1`` partials after level
0, and a round divides a key's partials by R (``ceil(x / R)``), so r rounds with ``ceil(g(n) / R^r) <= R + 1`` suffice
for any scalars. Sizes: level 0 writes at most ``min(N, ceil(N / L) + D - 1)`` partials (N = nwin n entries, D = nwin
2^(c-1) keys); a round over K writes at most ``min(K, floor(K / L) + D)``. Source: sorted-bucket accumulation of sppark
``msm/pippenger.cuh`` and supraseal ``msm``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from zkgpu.core import cuda as _cuda

__all__ = ["HEAVY_BLOCK", "ROUND_STARTS", "SHORT_FIRST", "ROUND_CHUNK", "SHORT_ROUND_CHUNK", "configure", "short_first", "Plan", "Round", "Partials", "partials_bound", "plan", "valid_count", "level0",
           "to_buckets"]

HEAVY_BLOCK = 128  # ~150 registers per thread: 3 blocks of 128 fit an SM, 1 block of 256
XYZZ_WORDS = 48  # uint32 words of one XYZZ point (g1.cuh xyzz_t; G2: 96, g2.cuh)

Kernel = Callable[[str], Any]  # msm.cu's kernel by name (zkgpu.gpu.msm.pippenger._k: NVRTC build, cubin or emulation)


ROUND_STARTS = "table"
"""How a round's thread finds its chunk: ``"table"`` (one load) or ``"search"`` (binary search in the prefix sum)."""
ROUND_STARTS_MODES = ("table", "search")


SHORT_FIRST: bool | str = True
"""True: keys with at most ``round_chunk + 1`` partials go to their buckets before the rounds; False: the rounds
carry every partial; ``"auto"``: :func:`short_first` decides per MSM."""
ROUND_CHUNK = 0
"""The rounds' partials per thread; 0: :data:`SHORT_ROUND_CHUNK` with short runs first, else ``max(chunk, 2)``."""
SHORT_ROUND_CHUNK = 16
"""The rounds' chunk with short runs first (ROUND_CHUNK = 0): 16 measured faster than 64 on PoRep-like scalars
(notes/msm-kernels.md)."""


def configure(*, round_starts: str | None = None, short_first: bool | None = None,
              round_chunk: int | None = None) -> None:
    """Set :data:`ROUND_STARTS`, :data:`SHORT_FIRST`, :data:`ROUND_CHUNK` (None keeps). Raises ValueError: bad value."""
    global ROUND_STARTS, SHORT_FIRST, ROUND_CHUNK
    if round_starts is not None:
        _check_round_starts(round_starts)
        ROUND_STARTS = round_starts
    if short_first is not None:
        if not (isinstance(short_first, bool) or short_first == "auto"):
            raise ValueError(f"zkgpu.gpu.msm.reduce: short_first must be True, False or 'auto', got {short_first!r}")
        SHORT_FIRST = short_first
    if round_chunk is not None:
        _check_round_chunk(round_chunk)
        ROUND_CHUNK = int(round_chunk)


def short_first(entries_per_key: float, chunk: int) -> bool:
    """Whether short runs go first (:data:`SHORT_FIRST`; "auto": when ``entries_per_key < chunk``)."""
    if SHORT_FIRST == "auto":
        return entries_per_key < chunk
    return bool(SHORT_FIRST)


def _check_round_chunk(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or (value != 0 and value < 2):
        raise ValueError(f"zkgpu.gpu.msm.reduce: round_chunk must be 0 (the level-0 chunk) or an int >= 2, got {value!r}")


def _check_round_starts(value: object) -> None:
    if value not in ROUND_STARTS_MODES:
        raise ValueError(f"zkgpu.gpu.msm.reduce: round_starts must be 'table' or 'search', got {value!r}")


def _round_starts() -> str:
    _check_round_starts(ROUND_STARTS)
    return ROUND_STARTS


def partials_bound(x: int, chunk: int) -> int:
    """Most partials one key of ``x`` sorted entries leaves: ``ceil((x - 1) / chunk) + 1`` (0 for x = 0). Raises ValueError."""
    if x < 0 or chunk < 1:
        raise ValueError(f"partials_bound: need x >= 0 and chunk >= 1, got x={x}, chunk={chunk}")
    return 0 if x == 0 else -(-(x - 1) // chunk) + 1


@dataclasses.dataclass(frozen=True)
class Round:
    """One round: at most ``k_in`` partials in, ``k_out`` out, ``run_bound`` partials per key after it."""

    k_in: int
    k_out: int
    run_bound: int


@dataclasses.dataclass(frozen=True)
class Plan:
    """Host-side sizes of one MSM's bucket accumulation (counts; see the module docstring's bound)."""

    entries: int
    keys: int
    chunk: int
    round_chunk: int
    short_first: bool
    max_bucket: int
    threads0: int
    partials0: int
    run_bound0: int
    rounds: tuple[Round, ...]
    final_bound: int

    def rounds_from(self, k0: int) -> tuple[Round, ...]:
        """The rounds (sizes) when level 0 leaves at most ``k0`` partials (``partials0``, or the exact
        count of the "runs" level 0); their number depends only on n and the chunk."""
        out, k, run = [], k0, self.run_bound0
        while run > self.round_chunk + 1:
            k_out = min(k, k // self.round_chunk + self.keys)
            run = -(-run // self.round_chunk)
            out.append(Round(k_in=k, k_out=k_out, run_bound=run))
            k = k_out
        return tuple(out)


def plan(n: int, nwin: int, buckets_per_window: int, chunk: int, round_chunk: int | None = None, *,
         entries_per_key: float | None = None) -> Plan:
    """Sizes and fixed round count for n points, ``nwin`` windows of ``buckets_per_window``, ``chunk`` per thread.
    ``round_chunk`` None: :data:`ROUND_CHUNK`; ``entries_per_key`` for :func:`short_first` (None: uniform). Raises
    ValueError: a count < 1, or round_chunk neither 0 nor >= 2."""
    for name, v in (("n", n), ("nwin", nwin), ("buckets_per_window", buckets_per_window), ("chunk", chunk)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"msm_reduce.plan: {name} must be an int >= 1, got {v!r}")
    n, chunk = int(n), int(chunk)
    entries, keys = int(nwin) * n, int(nwin) * int(buckets_per_window)
    threads0 = -(-entries // chunk)
    partials0 = min(entries, threads0 + keys - 1)
    sf = short_first(n / int(buckets_per_window) if entries_per_key is None else entries_per_key, chunk)
    rc = ROUND_CHUNK if round_chunk is None else round_chunk
    _check_round_chunk(rc)
    rc = int(rc) or (SHORT_ROUND_CHUNK if sf else max(chunk, 2))
    p = Plan(entries=entries, keys=keys, chunk=chunk, round_chunk=rc, short_first=sf, max_bucket=n, threads0=threads0,
             partials0=partials0, run_bound0=partials_bound(n, chunk), rounds=(), final_bound=0)
    rounds = p.rounds_from(partials0)
    return dataclasses.replace(p, rounds=rounds, final_bound=rounds[-1].run_bound if rounds else p.run_bound0)


@dataclasses.dataclass
class Partials:
    """(bucket key, XYZZ partial) pairs sorted by key on the device: ``keys (cap,)`` uint32, ``pts
    (cap, 48)`` uint32 (G2: ``(cap, 96)``), ``count`` a ``(1,)`` uint64 device array holding how many are live."""

    keys: Any
    pts: Any
    count: Any

    @classmethod
    def empty(cls, cp: Any, cap: int, count: Any = None, words: int = XYZZ_WORDS) -> Partials:
        """Room for ``cap`` pairs of XYZZ points of ``words`` uint32 each; ``count`` the live-count array (a
        new one when None)."""
        return cls(cp.empty(cap, dtype=cp.uint32), cp.empty((cap, words), dtype=cp.uint32),
                   cp.empty(1, dtype=cp.uint64) if count is None else count)

    @property
    def cap(self) -> int:
        return int(self.keys.shape[0])


def valid_count(cp: Any, k: Kernel, keys: Any) -> Any:
    """The number of non-sentinel keys of the sorted uint64 ``keys`` as a ``(1,)`` uint64 device array
    (``msm_valid_count``, one thread's binary search); nothing read back."""
    e = cp.empty(1, dtype=cp.uint64)
    k("msm_valid_count")((1,), (1,), (keys, np.uint64(keys.shape[0]), e))
    return e


def _offsets(cp: Any, k: Kernel, count_kernel: str, keys: Any, count: Any, chunk: int, threads: int) -> Any:
    """``(threads + 1,)`` uint64: the exclusive prefix sum of the counts that ``count_kernel`` writes, one
    per thread (partials of a level-0 thread, chunks at a run's first partial), the total last."""
    counts = cp.empty(max(threads, 1), dtype=cp.uint32)
    _cuda.launch_1d(k(count_kernel), threads, (keys, count, np.uint32(chunk), np.uint64(threads), counts))
    offs = cp.empty(threads + 1, dtype=cp.uint64)
    offs[:1] = 0
    offs[1:] = cp.cumsum(counts[:threads], dtype=cp.uint64)
    return offs


def level0(cp: Any, k: Kernel, keys: Any, e: Any, mont: Any, p: Plan, *, words: int = XYZZ_WORDS) -> Partials:
    """Balanced level 0 over sorted ``keys (N,)`` with ``e`` valid, points ``mont``: at most ``p.partials0`` partials."""
    offs = _offsets(cp, k, "seg_count_sorted64", keys, e, p.chunk, p.threads0)
    out = Partials.empty(cp, p.partials0, count=offs[p.threads0:], words=words)
    _cuda.launch_1d(
        k("seg_accum_affine_balanced"), p.threads0,
        (keys, e, np.uint32(p.chunk), np.uint64(p.threads0), offs, mont, out.keys, out.pts), block=HEAVY_BLOCK,
    )
    return out


def to_buckets(cp: Any, k: Kernel, parts: Partials, p: Plan, buckets: Any) -> None:
    """Sum each key's sorted partials into ``buckets (D, words)`` (zero-filled); kernels only, no sync."""
    if p.short_first:
        parts = _short_runs_first(cp, k, parts, p, buckets)
    rounds = p.rounds_from(parts.cap)
    words = int(buckets.shape[1])
    spare = Partials.empty(cp, rounds[0].k_out, words=words) if rounds else None
    table = _round_starts() == "table"
    starts = cp.empty(max(rounds[0].k_out, 1), dtype=cp.uint64) if rounds and table else None
    lr = np.uint32(p.round_chunk)
    for r in rounds:
        offs = _offsets(cp, k, "run_chunk_count", parts.keys, parts.count, p.round_chunk, r.k_in)
        dst = spare if spare is not None and spare.cap >= r.k_out else Partials.empty(cp, r.k_out, words=words)
        dst = Partials(dst.keys[: r.k_out], dst.pts[: r.k_out], offs[r.k_in:])
        head = (parts.keys, parts.count, lr, np.uint64(r.k_in), offs, np.uint64(r.k_out))
        if starts is not None:
            _cuda.launch_1d(k("round_chunk_starts"), r.k_in, (offs, lr, np.uint64(r.k_in), starts))
            _cuda.launch_1d(k("seg_accum_xyzz_from"), r.k_out, (*head, starts, parts.pts, dst.keys, dst.pts),
                            block=HEAVY_BLOCK)
        else:
            _cuda.launch_1d(k("seg_accum_xyzz"), r.k_out, (*head, parts.pts, dst.keys, dst.pts), block=HEAVY_BLOCK)
        parts, spare = dst, parts
    _cuda.launch_1d(k("scatter_buckets"), parts.cap, (parts.keys, parts.pts, parts.count, np.uint64(parts.cap), buckets),
                    block=HEAVY_BLOCK)


def _short_runs_first(cp: Any, k: Kernel, parts: Partials, p: Plan, buckets: Any) -> Partials:
    """Sum keys with at most ``round_chunk + 1`` partials into buckets; gather the others' partials for the rounds."""
    kmax = parts.cap
    if kmax >= 1 << 32:
        raise ValueError(f"msm_reduce: {kmax} level-0 partials, the short/long prefix sum packs counts below 2^32")
    packed = cp.empty(max(kmax, 1), dtype=cp.uint64)
    _cuda.launch_1d(k("short_long_count"), kmax, (parts.keys, parts.count, np.uint32(p.round_chunk + 1), np.uint64(kmax),
                                                  packed))
    offs = cp.empty(kmax + 1, dtype=cp.uint64)
    offs[:1] = 0
    cp.cumsum(packed[:kmax], out=offs[1:])
    nmax = min(kmax, p.keys)  # at most one short run per key
    starts = cp.empty(max(nmax, 1), dtype=cp.uint64)
    _cuda.launch_1d(k("short_run_starts"), kmax, (offs, np.uint64(kmax), starts))
    _cuda.launch_1d(k("scatter_short_from"), nmax, (parts.keys, parts.pts, parts.count, offs, np.uint64(kmax), np.uint64(nmax),
                                                    starts, buckets), block=HEAVY_BLOCK)
    out = Partials.empty(cp, kmax, count=offs[kmax:] & np.uint64(0xFFFFFFFF), words=int(buckets.shape[1]))
    _cuda.launch_1d(k("gather_long_runs"), kmax, (parts.keys, parts.pts, offs, np.uint64(kmax), np.uint64(kmax),
                                                  out.keys, out.pts))
    return out
