"""The GPU MSM's bucket accumulation without host synchronisation: worst-case sizes, fixed rounds.

:func:`zkgpu.gpu.msm.pippenger.msm_device` sorts one 64-bit key per (window, point) -- bucket key in the high word,
zero digits and identity points as sentinel keys sorted last -- and then calls, in this order:

1. :func:`valid_count`: ``E`` (the number of non-sentinel keys) found on the device by a binary
   search (``msm_valid_count``) and left there: no read-back.
2. :func:`level0`: balanced level 0 (``seg_count_sorted64`` + ``seg_accum_affine_balanced``): thread t
   takes exactly ``chunk`` sorted entries ``[t*chunk, (t+1)*chunk)`` and writes one XYZZ partial per
   run of equal bucket key among them, at offsets from a prefix sum of the per-thread run counts
   (``cupy.cumsum``, no sync). The grid covers the worst case (every key valid); threads past ``E``,
   read from device memory, exit at once.
3. :func:`to_buckets`: with short runs first (:data:`SHORT_FIRST`, :func:`short_first`) first
   ``short_long_count``: at each key's first partial, a short-run mark (at most ``L + 1`` partials; uniform
   scalars' keys have 1 to 3) or the long run's length, both packed in one uint64; one exclusive
   ``cupy.cumsum`` ranks the short runs (high words) and places the long partials (low words);
   ``short_run_starts`` + ``scatter_short_from`` sum each short run into its bucket, one thread per key,
   and ``gather_long_runs`` copies the long runs' partials, in order, into a fresh buffer, so the rounds
   carry only those (the PoRep-like ones' bucket) instead of copying every partial each round.
   Then a FIXED number of rounds over the (key, partial) pairs, still sorted by key:
   each key's run of partials cut into chunks of at most ``L`` (``run_chunk_count``: the chunk count
   at each run's first partial, the run's end by a galloping search; an exclusive ``cupy.cumsum``),
   ``round_chunk_starts`` writes each chunk's first partial into a table (the thread of each run's first
   partial, one write per chunk), one thread per chunk sums it (``seg_accum_xyzz_from``; with
   :data:`ROUND_STARTS` ``"search"``, ``seg_accum_xyzz`` finds its chunk by a binary search in the
   prefix sum instead); then ``scatter_buckets``: the thread of each key's first partial sums that key's
   last few partials into its bucket.

Every array is sized on the host from n, the window count, ``2^(c-1)`` and the chunk (:func:`plan`);
every kernel reads its live count from device memory. So no step waits for the GPU, and the host
can queue the whole MSM at once.

Why a fixed number of rounds suffices (the bound :func:`plan` computes, tested in
``tests/test_msm_reduce.py``). Level 0: with ``L`` entries per thread, the x consecutive entries of
one key touch at most ``g(x) = ceil((x - 1) / L) + 1`` thread ranges (``floor((s+x-1)/L) - floor(s/L)
<= ceil((x-1)/L)`` for any start s), and each thread writes one partial per key it touches, in key
order: a key with x entries leaves at most ``g(x)`` partials, still contiguous and sorted. A bucket
holds at most n entries (one per point: a bucket key names its window), so after level 0 a key has at
most ``g(n)`` partials. A round with the rounds' chunk ``R >= 2`` (:data:`ROUND_CHUNK`) cuts a key's x
partials into ``ceil(x / R)`` chunks and writes one partial per chunk, in order, so after r rounds a key has
at most ``ceil(g(n) / R^r)`` partials (each round divides the bound by at least 2). The rounds stop at
the first r with that bound ``<= R + 1``; the last pass (and, with short runs first, ``scatter_short_from``)
then adds at most ``R`` partials per bucket -- no more than a round's thread -- however the scalars fall.
PoRep-like scalars (45% zero, 45% one) put about half the points into window 0's bucket 1; that bucket is
spread over ``n / (2 L)`` threads at level 0, ``n / (2 L R)`` in round 1, and so on, while a round over
uniform scalars' keys (a few partials each) has about one thread per key. With L = R = 64: no round up to
n = 4097, one up to 266,177 (2^18 + 4,033), two up to 17,039,297 (2^24 + 262,081), three up to
2^30 + 16,777,153; with L = 64 and R = 16 (the default, with short runs first), one round from n = 1,026,
two from 17,346, three from 278,466, four from 4,456,386 (the rounds then carry only the long runs).

Sizes: level 0 has ``T0 = ceil(N / L)`` threads over ``N = nwin * n`` entries and writes at most
``min(N, T0 + D - 1)`` partials, ``D = nwin * 2^(c-1)`` the number of bucket keys (each live thread
writes one partial plus one per key change inside its range, and there are at most D - 1 key changes).
A round over K partials writes at most ``min(K, floor(K / L) + D)`` (the sum over runs of
``ceil(x / L) <= floor(x / L) + 1``). Rounds alternate between two buffers.

Algorithm sources: the balanced level 0 follows the sorted-bucket accumulation of sppark
``msm/pippenger.cuh`` and cuzk / supraseal ``msm`` (each thread an equal share of the sorted entries);
the device-side counts and chunk bounds and the bound on the rounds are ours.
"""

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
"""How a round's thread finds its chunk: ``"table"`` (``round_chunk_starts`` writes every chunk's first partial,
``seg_accum_xyzz_from`` reads it: one load) or ``"search"`` (``seg_accum_xyzz``: a binary search in the round's
prefix sum, ~log2(partials) dependent loads per thread). Set by :func:`configure`."""
ROUND_STARTS_MODES = ("table", "search")


SHORT_FIRST: bool | str = True
"""True: after level 0, every key with at most ``round_chunk + 1`` partials is summed into its bucket at once
and only the longer runs' partials go through the rounds (the PoRep-like ones' bucket); False: the rounds carry
every partial (copying the short runs each round); ``"auto"``: :func:`short_first` decides per MSM. True
measured faster at every size and distribution on the H200 (2^22 .. 2^26, uniform and PoRep-like; 2^26 uniform
``bucket_partials`` 34.2 -> 20.6 ms; notes/msm-kernels.md)."""
ROUND_CHUNK = 0
"""The rounds' partials per thread; 0: with short runs first :data:`SHORT_ROUND_CHUNK`, else ``max(chunk, 2)``
(the level-0 chunk). Smaller rounds mean shorter dependency chains on a long run, and more rounds; with short
runs first the rounds carry only the long runs, so more rounds cost little."""
SHORT_ROUND_CHUNK = 16
"""The rounds' chunk with short runs first (ROUND_CHUNK = 0): 16 measured faster than 64 on PoRep-like scalars
(notes/msm-kernels.md)."""


def configure(*, round_starts: str | None = None, short_first: bool | None = None,
              round_chunk: int | None = None) -> None:
    """Set :data:`ROUND_STARTS`, :data:`SHORT_FIRST` and :data:`ROUND_CHUNK` (None keeps a value).

    Raises:
        ValueError: a mode not in :data:`ROUND_STARTS_MODES`, short_first not a bool, round_chunk not 0 or an
            int >= 2 (names the value).
    """
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
    """Whether to sum the short runs first (:data:`SHORT_FIRST`; ``"auto"``: when the expected entries per bucket
    key, ``entries_per_key``, are fewer than the level-0 ``chunk``, so that most keys leave one or two partials).

    "auto" is the pattern of the first measurement (notes/msm-kernels.md), when the short runs were summed one
    thread per partial: faster at 32 entries per key, slower at 128 (~3 partials per key, most lanes idle). With
    one thread per key (now) short runs first measured faster everywhere, hence the default True.
    """
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
    """The most partials that one key with ``x`` consecutive sorted entries leaves after a balanced
    pass of ``chunk`` entries per thread: ``ceil((x - 1) / chunk) + 1`` (0 for x = 0).

    Raises:
        ValueError: x < 0 or chunk < 1 (names the value).
    """
    if x < 0 or chunk < 1:
        raise ValueError(f"partials_bound: need x >= 0 and chunk >= 1, got x={x}, chunk={chunk}")
    return 0 if x == 0 else -(-(x - 1) // chunk) + 1


@dataclasses.dataclass(frozen=True)
class Round:
    """One round over at most ``k_in`` partials (one ``run_chunk_count`` thread each), writing at most
    ``k_out`` (one ``seg_accum_xyzz`` thread per chunk); ``run_bound`` = the most partials of one key
    after it."""

    k_in: int
    k_out: int
    run_bound: int


@dataclasses.dataclass(frozen=True)
class Plan:
    """The host-side sizes of one MSM's bucket accumulation (:func:`plan`; counts of entries, partials
    and threads, no units).

    Attributes:
        entries: N = nwin * n, the sorted keys (valid ones first, sentinels after).
        keys: D = nwin * 2^(c-1), the bucket keys.
        chunk: level 0's entries per thread (:data:`zkgpu.gpu.msm.pippenger.CHUNK`).
        round_chunk: the rounds' partials per thread (:data:`ROUND_CHUNK`).
        short_first: whether the short runs go to their buckets before the rounds (:func:`short_first`).
        max_bucket: the most entries one bucket can hold (n).
        threads0: level 0's threads, ``ceil(N / chunk)``.
        partials0: the most partials level 0 writes, ``min(N, threads0 + D - 1)``.
        run_bound0: the most partials of one key after level 0, ``partials_bound(n, chunk)``.
        rounds: the rounds for ``partials0`` partials (:meth:`rounds_from`).
        final_bound: the most partials one key has when ``scatter_buckets`` sums them (``<= round_chunk + 1``).
    """

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
    """The sizes and the fixed round count of the bucket accumulation of an n-point MSM with ``nwin``
    windows of ``buckets_per_window`` (2^(c-1)) buckets and ``chunk`` entries per level-0 thread
    (module docstring: the bound and its proof); ``round_chunk`` the rounds' partials per thread (None:
    :data:`ROUND_CHUNK`, whose 0 means :data:`SHORT_ROUND_CHUNK` with short runs first, else ``max(chunk, 2)``);
    ``entries_per_key`` the expected entries per bucket key for :func:`short_first` (None: n / 2^(c-1), uniform
    scalars; the MSM passes the significant count's share for sparse scalars).

    Raises:
        ValueError: n, nwin, buckets_per_window or chunk < 1, or round_chunk neither 0 nor >= 2 (names the value).
    """
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
    """Balanced level 0 over the sorted ``keys (N,)`` uint64 with ``e`` (:func:`valid_count`) of them
    valid, points ``mont (n, 24)`` uint32 in Montgomery form (G2: ``(n, 48)`` with ``words=96``, the XYZZ
    partials' uint32 words): at most ``p.partials0`` partials."""
    offs = _offsets(cp, k, "seg_count_sorted64", keys, e, p.chunk, p.threads0)
    out = Partials.empty(cp, p.partials0, count=offs[p.threads0:], words=words)
    _cuda.launch_1d(
        k("seg_accum_affine_balanced"), p.threads0,
        (keys, e, np.uint32(p.chunk), np.uint64(p.threads0), offs, mont, out.keys, out.pts), block=HEAVY_BLOCK,
    )
    return out


def to_buckets(cp: Any, k: Kernel, parts: Partials, p: Plan, buckets: Any) -> None:
    """Sum the sorted partials of each key into ``buckets (D, 48)`` uint32 (G2: ``(D, 96)``; zero-filled
    beforehand = identity): the plan's rounds (per-key chunks), then ``scatter_buckets``. Queues kernels only; no
    host sync."""
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
    """The keys with at most ``p.round_chunk + 1`` partials summed into their buckets, one thread per key
    (``short_long_count``, one prefix sum, ``short_run_starts``, ``scatter_short_from``); the other keys' partials
    gathered, in order, for the rounds (``gather_long_runs``; room for all of them, the count on the device)."""
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
