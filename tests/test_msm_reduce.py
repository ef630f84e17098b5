"""The GPU MSM's sync-free bucket accumulation (zkgpu.gpu.msm.reduce) and the MSM with it (zkgpu.gpu.msm.pippenger).

Four layers:
  plan     -- the worst-case sizes and the fixed round count (:func:`zkgpu.gpu.msm.reduce.plan`), exact values;
  group    -- msm_reduce's host code (level0, to_buckets: buffers, offsets, device counts, rounds) driven by
              numpy stand-ins of the kernels over integer "points" (addition mod a prime: the reduction needs
              only an abelian group), at 2^18..2^20 with PoRep-like keys; the stand-ins check every size and
              run-length bound of the plan as they run;
  emu      -- the real kernels (g++, tests/native/msm_emu.cpp) through msm_device: small chunks (many rounds),
              edge scalars and points, and no host sync inside the MSM;
  gpu      -- the real kernels on the GPU (@pytest.mark.gpu) against arkworks, or at large n against the
              points' known discrete logs (bases.generate_points: point i = a_i G, so the MSM is (sum s_i a_i) G).
Every random draw comes from the test's seed (conftest prints it on failure; ZKGPU_TEST_SEED replays it).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_kernels_compile import KERNEL_DIR, _nvcc_cubin, _registers
from test_msm import emulated, rand_points, ref_arkworks

from seeding import current_seed, new_pyrng, new_rng
from zkgpu.app.bench.msm import _porep_scalars
from zkgpu.arith import curve
from zkgpu.arith.field import FR, fr_from_ints, fr_random, fr_to_ints
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm import reduce as msm_reduce

R = FR.modulus
SENTINEL = msm._SENTINEL_KEY >> 32

# ----------------------------------------------------------------------------- plan


def _rounds(n: int, chunk: int = 64, round_chunk: int = 0) -> int:
    """The rounds of one bucket of n entries, the rounds' chunk the level-0 chunk (0) or its own."""
    return len(msm_reduce.plan(n, 1, 1, chunk, round_chunk or max(chunk, 2)).rounds)


def test_partials_bound():
    g = msm_reduce.partials_bound
    assert [g(x, 4) for x in range(0, 11)] == [0, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4]
    assert g(2, 64) == 2 and g(65, 64) == 2 and g(66, 64) == 3 and g(7, 1) == 7
    with pytest.raises(ValueError, match="chunk=0"):
        g(3, 0)


def test_round_count_is_the_documented_one():
    # module docstring: with L = 64, no round up to n = 4097, one up to 2^18 + 4,033, two up to 2^24 + 262,081, three up to
    # 2^30 + 16,777,153 (r rounds while ceil((n-1)/64) + 1 <= 65 * 64^r)
    sizes = (1, 2, 4097, 4098, 2**18 + 4033, 2**18 + 4034, 2**24 + 262081, 2**24 + 262082, 2**30 + 16777153, 2**30 + 16777154)
    assert [_rounds(n) for n in sizes] == [0, 0, 0, 1, 1, 2, 2, 3, 3, 4]
    # L = 64, R = 16: one round from n = 1,026 (g(n) > 17), two from 17,346, three from 278,466, four from 4,456,386
    edges = (1026, 17346, 278466, 4456386)
    assert [_rounds(n, 64, 16) for e in edges for n in (e - 1, e)] == [0, 1, 1, 2, 2, 3, 3, 4]
    assert _rounds(300, 2) == 6 and _rounds(300, 1) == 7  # chunk 1: level 0 leaves runs of n, the rounds take 2 per chunk


@pytest.mark.parametrize("n,nwin,m,chunk", [(1, 1, 1, 64), (1000, 20, 2**12, 64), (2**24, 13, 2**19, 64), (300, 128, 2, 1),
                                            (2**20, 16, 2**15, 7)])
def test_plan_sizes(n, nwin, m, chunk):
    p = msm_reduce.plan(n, nwin, m, chunk)
    N, D = nwin * n, nwin * m
    assert (p.entries, p.keys, p.threads0) == (N, D, -(-N // chunk))
    assert p.partials0 == min(N, p.threads0 + D - 1)
    assert p.short_first == msm_reduce.short_first(n / m, chunk)
    assert p.round_chunk == (msm_reduce.SHORT_ROUND_CHUNK if p.short_first else max(chunk, 2))
    assert p.final_bound <= p.round_chunk + 1
    k, run = p.partials0, p.run_bound0
    for r in p.rounds:
        assert r.k_in == k and r.k_out == min(k, k // p.round_chunk + D)
        assert r.run_bound == -(-run // p.round_chunk) < run
        k, run = r.k_out, r.run_bound
    assert run == p.final_bound


@pytest.mark.parametrize("bad", [dict(n=0), dict(nwin=0), dict(buckets_per_window=-1), dict(chunk=0), dict(n=2.5)])
def test_plan_rejects_bad_sizes(bad):
    args = dict(n=10, nwin=2, buckets_per_window=4, chunk=8) | bad
    (name, value), = bad.items()
    with pytest.raises(ValueError, match=f"{name} must be an int >= 1, got {value!r}"):
        msm_reduce.plan(**args)


def test_reduce_configure(monkeypatch):
    for name in ("ROUND_STARTS", "SHORT_FIRST", "ROUND_CHUNK"):
        monkeypatch.setattr(msm_reduce, name, getattr(msm_reduce, name))
    msm_reduce.configure(round_starts="search", short_first=False, round_chunk=8)
    assert (msm_reduce.ROUND_STARTS, msm_reduce.SHORT_FIRST, msm_reduce.ROUND_CHUNK) == ("search", False, 8)
    assert msm_reduce.plan(1 << 20, 2, 16, 64).round_chunk == 8
    assert msm_reduce.plan(1 << 20, 2, 16, 64, round_chunk=0).round_chunk == 64
    msm_reduce.configure(short_first="auto", round_chunk=0)
    # auto: short runs first when a key expects fewer entries than the level-0 chunk (then the rounds' chunk 16)
    assert not msm_reduce.plan(1 << 22, 16, 1 << 15, 64).short_first  # 2^22 uniform, c = 16: 128 per key
    assert msm_reduce.plan(1 << 24, 13, 1 << 19, 64).short_first  # 2^24 uniform, c = 20: 32 per key
    assert msm_reduce.plan(1 << 24, 13, 1 << 19, 64).round_chunk == msm_reduce.SHORT_ROUND_CHUNK
    assert not msm_reduce.plan(1 << 26, 13, 1 << 19, 64).short_first  # 2^26 uniform: 128 per key
    assert msm_reduce.plan(1 << 22, 16, 1 << 15, 64, entries_per_key=419430 / (1 << 15)).short_first  # PoRep-like
    with pytest.raises(ValueError, match="round_starts must be 'table' or 'search', got 'scan'"):
        msm_reduce.configure(round_starts="scan")
    with pytest.raises(ValueError, match="short_first must be True, False or 'auto', got 1"):
        msm_reduce.configure(short_first=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="round_chunk must be 0 .* or an int >= 2, got 1"):
        msm_reduce.configure(round_chunk=1)
    assert msm_reduce.ROUND_STARTS == "search"


# ----------------------------------------------------------------------------- group: numpy kernels over Z/P

P = 2**31 - 1  # the "points": integers mod P, addition mod P


def _starts(keys: np.ndarray, chunk: int) -> np.ndarray:
    """Where a balanced pass starts a partial: a thread boundary or a key change."""
    i = np.arange(keys.size)
    s = i % chunk == 0
    s[1:] |= keys[1:] != keys[:-1]
    return np.flatnonzero(s)


def _max_run(keys: np.ndarray) -> int:
    if keys.size == 0:
        return 0
    change = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True])
    return int(np.diff(change).max())


class IntKernels:
    """msm.cu's bucket kernels as numpy over integer points (column 0 of each 48-word XYZZ row), with the
    plan's bounds asserted as they run: the live counts fit the allocations, each thread's offsets are
    where its partials go, and each key's partial run is within the bound of the step before."""

    def __init__(self, plan: msm_reduce.Plan, values: np.ndarray):
        self.plan, self.values, self.stage, self.log = plan, values, 0, []

    def __call__(self, name):
        f = getattr(self, name)
        return lambda grid, block, args, stream=None: f(*args)

    def msm_valid_count(self, keys, N, e):
        e[0] = np.searchsorted(keys[: int(N)], np.uint64(SENTINEL << 32))

    def _count(self, keys, count, L, T, counts):
        k = int(count[0])
        assert -(-k // int(L)) <= int(T) <= counts.size, "the grid does not cover the live entries"
        counts[:] = 0
        counts[: -(-k // int(L))] = np.bincount(_starts(keys[:k], int(L)) // int(L), minlength=-(-k // int(L)))

    def seg_count_sorted64(self, keys, e, L, T, counts):
        self._count(keys >> np.uint64(32), e, L, T, counts)

    def run_chunk_count(self, keys, count, L, kmax, counts):
        k = int(count[0])
        assert k <= int(kmax) <= counts.size, "the grid does not cover the live partials"
        counts[:] = 0
        if k:
            s = np.flatnonzero(np.r_[True, keys[1:k] != keys[: k - 1]])
            counts[s] = -(-np.diff(np.r_[s, k]) // int(L))

    def _accum(self, bkeys, vals, count, L, offs, out_keys, out_pts, bound):
        k = int(count[0])
        s = _starts(bkeys[:k], int(L))
        assert s.size <= out_keys.size, f"{s.size} partials, room for {out_keys.size}"
        thread = s // int(L)
        rank = np.arange(s.size) - np.searchsorted(thread, thread)  # the partial's rank inside its thread
        assert np.array_equal(offs[thread].astype(np.int64) + rank, np.arange(s.size)), "offsets disagree"
        assert _max_run(bkeys[:k]) <= bound, f"a run of {_max_run(bkeys[:k])} partials, bound {bound}"
        out_keys[: s.size] = bkeys[s]
        out_pts[: s.size, 0] = np.add.reduceat(vals[:k], s) % P if k else 0
        self.log.append((k, s.size, _max_run(bkeys[s])))

    def seg_accum_affine_balanced(self, keys, e, L, T, offs, pts, out_keys, out_pts):
        k = int(e[0])
        low = (keys[:k] & np.uint64(0xFFFFFFFF)).astype(np.int64)
        v = pts[low & 0x7FFFFFFF]
        vals = np.where(low >> 31 == 1, (P - v) % P, v)
        self._accum((keys >> np.uint64(32)).astype(np.uint32), vals, e, L, offs, out_keys, out_pts, self.plan.max_bucket)

    def seg_accum_xyzz(self, keys, count, L, kmax, offs, nchunks_max, pts, out_keys, out_pts):
        bound = self.plan.run_bound0 if self.stage == 0 else self.plan.rounds[self.stage - 1].run_bound
        self.stage += 1
        k, L = int(count[0]), int(L)
        assert _max_run(keys[:k]) <= bound, f"a run of {_max_run(keys[:k])} partials, bound {bound}"
        idx = np.arange(k)
        first = np.r_[True, keys[1:k] != keys[: k - 1]] if k else np.zeros(0, dtype=bool)
        run_start = np.maximum.accumulate(np.where(first, idx, 0)) if k else idx
        c = np.flatnonzero((idx - run_start) % L == 0)  # chunk starts: every L-th partial of a run
        assert c.size == int(offs[int(kmax)]) and c.size <= int(nchunks_max) <= out_keys.size, "chunk count or room"
        assert np.array_equal(offs[run_start[c]].astype(np.int64) + (c - run_start[c]) // L, np.arange(c.size)), "offsets"
        out_keys[: c.size] = keys[c]
        out_pts[: c.size, 0] = np.add.reduceat(pts[:k, 0].astype(np.int64), c) % P if k else 0
        self.log.append((k, c.size, _max_run(keys[c])))

    def round_chunk_starts(self, offs, L, kmax, starts):
        kmax, L = int(kmax), int(L)
        chunks = np.diff(offs[: kmax + 1].astype(np.int64))
        first = np.flatnonzero(chunks)
        assert int(offs[kmax]) <= starts.size, "room for the chunk starts"
        for j in first:
            starts[int(offs[j]) : int(offs[j + 1])] = j + L * np.arange(chunks[j], dtype=np.uint64)

    def seg_accum_xyzz_from(self, keys, count, L, kmax, offs, nchunks_max, starts, pts, out_keys, out_pts):
        k, Li = int(count[0]), int(L)
        idx = np.arange(k)
        first = np.r_[True, keys[1:k] != keys[: k - 1]] if k else np.zeros(0, dtype=bool)
        run_start = np.maximum.accumulate(np.where(first, idx, 0)) if k else idx
        c = np.flatnonzero((idx - run_start) % Li == 0)
        assert np.array_equal(starts[: c.size].astype(np.int64), c), "the chunk-start table"
        self.seg_accum_xyzz(keys, count, L, kmax, offs, nchunks_max, pts, out_keys, out_pts)

    def short_long_count(self, keys, count, Lf, kmax, packed):
        k, Lf = int(count[0]), int(Lf)
        assert k <= int(kmax) <= packed.size
        assert self.stage == 0, "short runs first: right after level 0"
        assert _max_run(keys[:k]) <= self.plan.run_bound0
        packed[:] = 0
        if k:
            s = np.flatnonzero(np.r_[True, keys[1:k] != keys[: k - 1]])
            lens = np.diff(np.r_[s, k])
            short = lens <= Lf
            packed[s[short]] = np.uint64(1 << 32)
            packed[s[~short]] = lens[~short].astype(np.uint64)

    def short_run_starts(self, offs, kmax, starts):
        kmax = int(kmax)
        hi = (offs[: kmax + 1] >> np.uint64(32)).astype(np.int64)
        first = np.flatnonzero(np.diff(hi))
        assert first.size <= starts.size, "room for the short runs' starts"
        starts[hi[first]] = first

    def scatter_short_from(self, keys, pts, count, offs, kmax, nmax, starts, buckets):
        k, nshort = int(count[0]), int(offs[int(kmax)] >> np.uint64(32))
        assert nshort <= int(nmax) <= starts.size
        self.short_keys = set()
        for j in starts[:nshort].astype(np.int64):
            end = j + 1
            while end < k and keys[end] == keys[j]:
                end += 1
            assert end - j <= self.plan.round_chunk + 1, "a short run longer than the rounds' chunk + 1"
            buckets[keys[j], 0] = int(pts[j:end, 0].astype(np.int64).sum() % P)
            self.short_keys.add(int(keys[j]))

    def gather_long_runs(self, keys, pts, offs, kmax, cap, out_keys, out_pts):
        kmax = int(kmax)
        low = (offs[: kmax + 1] & np.uint64(0xFFFFFFFF)).astype(np.int64)
        total = int(low[kmax])
        assert total <= int(cap) <= out_keys.size
        lens = np.diff(low)
        idx = np.concatenate([np.arange(j, j + lens[j]) for j in np.flatnonzero(lens)] or [np.zeros(0, np.int64)])
        assert idx.size == total
        out_keys[:total] = keys[idx]
        out_pts[:total] = pts[idx]
        assert not set(keys[idx].tolist()) & getattr(self, "short_keys", set()), "a key both short and long"

    def scatter_buckets(self, keys, pts, count, kmax, buckets):
        k = int(count[0])
        assert k <= int(kmax) <= keys.size
        assert self.stage == len(self.plan.rounds), "the last pass before every round ran"
        assert _max_run(keys[:k]) <= self.plan.final_bound <= self.plan.round_chunk + 1
        if k:
            s = np.flatnonzero(np.r_[True, keys[1 : k] != keys[: k - 1]])
            buckets[keys[s], 0] = np.add.reduceat(pts[:k, 0].astype(np.int64), s) % P


# (ROUND_STARTS, SHORT_FIRST, ROUND_CHUNK): the default first, then the session-3 reduction, then small rounds
REDUCE_MODES = [("table", True, 0), ("search", False, 0), ("table", True, 4), ("search", True, 2), ("table", False, 3),
                ("table", "auto", 0)]


def _set_reduce_mode(monkeypatch, mode) -> None:
    starts, short_first, round_chunk = mode
    monkeypatch.setattr(msm_reduce, "ROUND_STARTS", starts)
    monkeypatch.setattr(msm_reduce, "SHORT_FIRST", short_first)
    monkeypatch.setattr(msm_reduce, "ROUND_CHUNK", round_chunk)


def _keys_porep(rng: np.random.Generator, n: int, nwin: int, m: int, zero=0.45, one=0.45) -> np.ndarray:
    """One sort key per (window, point) as msm_digits writes them, for PoRep-like scalars: a zero scalar has
    no digit, a one only window 0's digit 1 (bucket 0), the rest a uniform signed digit per window."""
    u = rng.random(n)
    d = rng.integers(-m, m + 1, size=(nwin, n))
    d[:, u < zero] = 0
    ones = (u >= zero) & (u < zero + one)
    d[:, ones] = 0
    d[0, ones] = 1
    w = np.arange(nwin)[:, None]
    bucket = np.where(d == 0, SENTINEL, w * m + np.abs(d) - 1).astype(np.uint64)
    idx = np.broadcast_to(np.arange(n, dtype=np.uint64), (nwin, n))
    return ((bucket << np.uint64(32)) | (np.uint64(d < 0) << np.uint64(31)) | idx).reshape(-1)


def _expected_buckets(keys: np.ndarray, values: np.ndarray, D: int) -> np.ndarray:
    b = (keys >> np.uint64(32)).astype(np.int64)
    ok = b != SENTINEL
    low = (keys[ok] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    v = values[low & 0x7FFFFFFF]
    out = np.zeros(D, dtype=np.int64)
    np.add.at(out, b[ok], np.where(low >> 31 == 1, (P - v) % P, v))
    return out % P


def _reduce_int(keys: np.ndarray, values: np.ndarray, nwin: int, m: int, chunk: int) -> tuple[np.ndarray, IntKernels]:
    """msm_reduce's host code on sorted keys with the integer kernels; the bucket sums (D,)."""
    n = values.size
    p = msm_reduce.plan(n, nwin, m, chunk)
    ik = IntKernels(p, values)
    e = msm_reduce.valid_count(np, ik, keys)
    parts = msm_reduce.level0(np, ik, keys, e, values, p)
    buckets = np.zeros((nwin * m, msm_reduce.XYZZ_WORDS), dtype=np.uint32)
    msm_reduce.to_buckets(np, ik, parts, p, buckets)
    return buckets[:, 0].astype(np.int64), ik


@pytest.mark.parametrize("n,nwin,m,chunk,zero,one", [
    (2**18, 4, 2**10, 64, 0.45, 0.45),   # PoRep-like: window 0's bucket 0 holds ~45% of the points
    (2**20, 2, 2**14, 64, 0.45, 0.5),    # 2^20, 45% zero and 50% one
    (2**18, 3, 2**12, 64, 0.0, 0.0),     # uniform
    (2**16 + 1, 2, 2**3, 3, 0.2, 0.2),   # few buckets, long runs everywhere, many rounds
    (5000, 2, 4, 1, 0.0, 1.0),           # chunk 1 (rounds of 2), every scalar one: one bucket of n
    (4098, 1, 1, 64, 0.0, 1.0),          # one bucket of 4098: the first size with a round
    (1000, 5, 64, 64, 1.0, 0.0),         # every scalar zero: E = 0
])
@pytest.mark.parametrize("reduce_mode", REDUCE_MODES)
def test_integer_group_reduction(n, nwin, m, chunk, zero, one, reduce_mode, monkeypatch):
    _set_reduce_mode(monkeypatch, reduce_mode)
    rng = new_rng()
    keys = np.sort(_keys_porep(rng, n, nwin, m, zero, one))
    values = rng.integers(0, P, size=n)
    got, ik = _reduce_int(keys, values, nwin, m, chunk)
    want = _expected_buckets(keys, values, nwin * m)
    assert np.array_equal(got, want), f"seed {current_seed()}: bucket sums differ at {np.flatnonzero(got != want)[:5]}"
    assert ik.stage == len(ik.plan.rounds)


def test_integer_group_reduction_sizes_are_worst_case_tight():
    """All keys distinct and valid, chunk 2: level 0 writes exactly N partials (the bound min(N, T0 + D - 1))."""
    n, nwin, m = 64, 2, 64
    keys = np.sort((np.arange(nwin * n, dtype=np.uint64) << np.uint64(32)) | (np.arange(nwin * n, dtype=np.uint64) % np.uint64(n)))
    values = new_rng().integers(0, P, size=n)
    got, ik = _reduce_int(keys, values, nwin, m, 2)
    assert ik.log[0][1] == ik.plan.partials0 == nwin * n
    assert np.array_equal(got, _expected_buckets(keys, values, nwin * m))


# ----------------------------------------------------------------------------- emu: the real kernels, no GPU


def _msm_emu(pts, sc, c=None):
    with emulated():
        return msm.msm_device(pts, sc, c)


@pytest.mark.parametrize("reduce_mode", REDUCE_MODES)
@pytest.mark.parametrize("chunk", [1, 2, 3, 64])
def test_emu_porep_like_small_chunks(chunk, reduce_mode, monkeypatch):
    """PoRep-like scalars with tiny chunks: many rounds (7 for n = 300 and chunk 2) on the real kernels, in each
    reduction mode (chunk starts from the table or by search, short runs first or not, the rounds' chunk)."""
    monkeypatch.setattr(msm, "CHUNK", chunk)
    _set_reduce_mode(monkeypatch, reduce_mode)
    n = 300
    pts, sc = rand_points(n), _porep_scalars(n, new_rng())
    assert (_msm_emu(pts, sc) == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}"


def _edge_case(case: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Points and scalars of one edge case: every scalar 0, 1 or r - 1; every third point the identity;
    P and -P with equal scalars; one point repeated n times (other values random)."""
    pts, sc = rand_points(n), fr_random(n, new_rng())
    if case in ("zero", "one", "r-1"):
        sc[:] = fr_from_ints([{"zero": 0, "one": 1, "r-1": R - 1}[case]])[0]
    elif case == "identity":
        pts[::3] = 0
    elif case == "p_minus_p":
        pts[1::2] = curve.g1_neg(pts[0::2])
        sc[1::2] = sc[0::2]
    else:
        pts[:] = pts[0]
    return pts, sc


EDGE_CASES = ["zero", "one", "r-1", "identity", "p_minus_p", "repeated"]


@pytest.mark.parametrize("case", EDGE_CASES)
def test_emu_edge_inputs(case):
    pts, sc = _edge_case(case, 70)
    assert (_msm_emu(pts, sc, 5) == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}"


def test_emu_no_host_sync_inside_the_msm():
    n = 500
    pts, sc = rand_points(n), fr_random(n, new_rng())
    sc[: n // 2] = fr_from_ints([1] * (n // 2))
    with emulated():
        mont = msm.prepare_points(pts)
        chk = msm.DeferredCheck()
        before = _cuda.sync_counts()
        got = msm.msm_device(None, sc, mont=mont, deferred=chk)
        after = _cuda.sync_counts()
        chk.raise_if_bad()
    assert {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)} == {}
    assert (got == ref_arkworks(pts, sc)).all()


def test_emu_one_round_at_the_default_chunk():
    """n = 4500 > 4097: with CHUNK = 64 the rounds run once (the giant bucket of ones: 4500 entries)."""
    n = 4500
    assert len(msm_reduce.plan(n, 1, 1, msm.CHUNK).rounds) == 1
    pts, sc = rand_points(n), _porep_scalars(n, new_rng())
    sc[: n // 2] = fr_from_ints([1])[0]
    assert (_msm_emu(pts, sc, 8) == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}"


def test_reduction_kernels_fit_three_blocks_per_sm(tmp_path):
    """The kernels that zkgpu.gpu.msm.reduce launches with HEAVY_BLOCK threads keep 3 blocks per SM (as
    test_kernels_compile checks for msm.cu's other heavy kernels)."""
    report = _nvcc_cubin(KERNEL_DIR / "msm.cu", tmp_path)
    limit = 65536 // (3 * msm_reduce.HEAVY_BLOCK) // 8 * 8
    regs = _registers(report)
    heavy = ("seg_accum_affine_balanced", "seg_accum_xyzz", "seg_accum_xyzz_from", "scatter_short_from", "scatter_buckets")
    assert {k: regs[k] for k in heavy if regs[k] > limit} == {}, f"more than {limit} registers"


# ----------------------------------------------------------------------------- gpu


def _dlog_reference(n: int, seed: int, sc: np.ndarray) -> np.ndarray:
    """sum_i s_i P_i for the generated points P_i = a_i G (bases): (sum_i s_i a_i mod r) G."""
    a = [bases._gen_scalar(seed, i) for i in range(n)]
    k = sum(s * x for s, x in zip(fr_to_ints(sc), a, strict=True)) % R
    return curve.g1_mul(curve.generator(), [k])


def _gpu_msm_synced(cp, pts, sc, c=None):
    """msm_device on prepared bases with a deferred check (the pipeline's call), asserting that it makes
    no host synchronisation; the result on the host."""
    mont = msm.prepare_points(pts)
    chk = msm.DeferredCheck()
    before = _cuda.sync_counts()
    out = msm.msm_device(None, sc, c, mont=mont, deferred=chk)
    after = _cuda.sync_counts()
    assert {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0) and k.startswith("msm.")} == {}
    host = cp.asnumpy(out)
    chk.raise_if_bad()
    return host


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 2, 3, 1000])
def test_gpu_random_small_vs_arkworks(n):
    cp = _cuda.cupy()
    pts, sc = rand_points(n), fr_random(n, new_rng())
    got = _gpu_msm_synced(cp, cp.asarray(pts), cp.asarray(sc))
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, n={n}"


@pytest.mark.gpu
@pytest.mark.parametrize("n,kind", [(2**16 + 1, "uniform"), (2**20, "uniform"), (2**18, "porep"), (2**20, "porep"),
                                          (2**18, "ones"), (2**18, "zeros")])
def test_gpu_large_vs_discrete_logs(n, kind):
    cp = _cuda.cupy()
    seed, rng = new_pyrng().randrange(2**64), new_rng()
    sc = {"uniform": lambda: fr_random(n, rng), "porep": lambda: _porep_scalars(n, rng),
          "ones": lambda: fr_from_ints([1] * n), "zeros": lambda: np.zeros((n, 4), dtype=np.uint64)}[kind]()
    got = _gpu_msm_synced(cp, bases.generate_points(n, seed), cp.asarray(sc))
    assert (got == _dlog_reference(n, seed, sc)).all(), f"seed {current_seed()} (points seed {seed}), n={n}, {kind}"


@pytest.mark.gpu
@pytest.mark.parametrize("c", [2, 3, 13, 16, 20])
def test_gpu_windows(c):
    cp = _cuda.cupy()
    n, rng = 3000, new_rng()
    pts, sc = rand_points(n), _porep_scalars(n, rng)
    sc[: n // 3] = fr_random(n // 3, rng)
    got = _gpu_msm_synced(cp, cp.asarray(pts), cp.asarray(sc), c)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, c={c}"


@pytest.mark.gpu
@pytest.mark.parametrize("case", EDGE_CASES)
def test_gpu_edge_inputs(case):
    cp = _cuda.cupy()
    pts, sc = _edge_case(case, 2000)
    got = _gpu_msm_synced(cp, cp.asarray(pts), cp.asarray(sc))
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, {case}"


@pytest.mark.gpu
@pytest.mark.parametrize("reduce_mode", REDUCE_MODES[:3])
@pytest.mark.parametrize("chunk", [1, 64, 256])
def test_gpu_chunks_porep_like(chunk, reduce_mode, monkeypatch):
    monkeypatch.setattr(msm, "CHUNK", chunk)
    _set_reduce_mode(monkeypatch, reduce_mode)
    cp = _cuda.cupy()
    n, seed = 2**15, new_pyrng().randrange(2**64)
    sc = _porep_scalars(n, new_rng())
    got = _gpu_msm_synced(cp, bases.generate_points(n, seed), cp.asarray(sc))
    assert (got == _dlog_reference(n, seed, sc)).all(), f"seed {current_seed()}, chunk={chunk}"


@pytest.mark.gpu
def test_gpu_sync_count_zero_and_same_as_checked_path():
    cp = _cuda.cupy()
    n = 5000
    pts, sc = cp.asarray(rand_points(n)), cp.asarray(_porep_scalars(n, new_rng()))
    checked = cp.asnumpy(msm.msm_device(pts, sc))
    assert (_gpu_msm_synced(cp, pts, sc) == checked).all()

