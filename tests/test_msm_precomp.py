"""The MSM over precomputed shifted bases (zkgpu/gpu/msm/precomp.py, kernels/msm_precomp.cu).

Three layers, as test_msm_reduce.py: argument and size checks on the host; msm_reduce's bucket accumulation
on one-bucket-set keys over ``nwin * n`` table points with integers mod a prime standing in for the points
(its worst-case bounds asserted at every step); the real kernels compiled by g++ (tests/native/msm_emu.cpp)
against arkworks and msm_device; and on the GPU the same checks at large sizes and every window. Every
random draw comes from the test's seed (named in the failure)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_msm import _emu_kernel, emulated, rand_points, ref_arkworks
from test_msm_reduce import EDGE_CASES, IntKernels, P, _dlog_reference, _edge_case, _expected_buckets

from seeding import current_seed, new_pyrng, new_rng
from zkgpu.analysis import anchors
from zkgpu.app.bench.msm import _porep_scalars, parse_precomp_windows
from zkgpu.arith import curve
from zkgpu.arith.field import FR, fr_from_ints, fr_random
from zkgpu.core import cuda as _cuda
from zkgpu.core.errors import CliError
from zkgpu.gpu.msm import bases
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm import precomp as msm_precomp
from zkgpu.gpu.msm import reduce as msm_reduce

R = FR.modulus
SENTINEL = msm._SENTINEL_KEY >> 32


# ----------------------------------------------------------------------------- host: sizes and arguments


def test_sentinel_is_msm_cu_s():
    """msm.cu's reduction drops the keys of zero digits: msm_precomp.cu must write the same sentinel."""
    assert _cuda.header_defines("msm_precomp.cu", "MSM_SENTINEL") == _cuda.header_defines("msm.cu", "MSM_SENTINEL")


def test_window_rule_documented_values():
    assert [msm_precomp.window_bits(1 << lg) for lg in (16, 20, 22, 24, 26)] == [14, 16, 20, 20, 22]
    for lg in range(0, 28):
        c = msm_precomp.window_bits(1 << lg)
        assert msm.num_windows(c) * (1 << lg) < msm_precomp.INDEX_LIMIT


@pytest.mark.parametrize("n,c,match", [
    (0, 16, "n \\(bases\\)"), (10, 1, "window c"), (10, 27, "window c"), (10, True, "window c"),
    (2**28, 22, "index field"), (2**26 + 2**25, 12, "index field"),
])
def test_check_size_errors(n, c, match):
    with pytest.raises(ValueError, match=match):
        msm_precomp.check_size(n, c)


def test_index_limit_boundary():
    msm_precomp.check_size(2**31 // 16 - 1, 16)  # 16 windows: the largest n below 2^31 entries
    with pytest.raises(ValueError, match="2147483648 table points"):
        msm_precomp.check_size(2**31 // 16, 16)
    with pytest.raises(ValueError, match="exceed the 2\\^31 table index"):
        msm_precomp.window_bits(2**31)


def test_memory_sizes():
    n, c = 2**24, 22
    assert msm_precomp.table_bytes(n, c) == 96 * 12 * n  # 19.3 GB, the docstring's figure
    assert msm_precomp.workspace_bytes(n, c) > 16 * 12 * n


def test_build_argument_errors():
    with pytest.raises(TypeError, match="uint32"):
        msm_precomp.PrecomputedBases.build(np.zeros((4, 24), dtype=np.uint64))
    with pytest.raises(TypeError, match="uint32"):
        msm_precomp.PrecomputedBases.build([[0] * 24])
    with pytest.raises(ValueError, match="shape \\(n, 24\\)"):
        msm_precomp.PrecomputedBases.build(np.zeros((4, 12), dtype=np.uint32))
    with pytest.raises(ValueError, match="n \\(bases\\)"):
        msm_precomp.PrecomputedBases.build(np.zeros((0, 24), dtype=np.uint32))
    with pytest.raises(ValueError, match="window c"):
        msm_precomp.PrecomputedBases.build(np.zeros((4, 24), dtype=np.uint32), 40)


def test_build_refuses_a_table_that_does_not_fit(monkeypatch):
    monkeypatch.setattr(msm_precomp, "free_bytes", lambda: 10**9)
    with pytest.raises(ValueError, match=r"needs .* GB \+ .* GB of MSM workspace, 1.00 GB free"):
        msm_precomp.PrecomputedBases.build(np.zeros((2**20, 24), dtype=np.uint32), 16)


def test_msm_argument_errors():
    b = msm_precomp.PrecomputedBases(table=np.zeros((32, 24), dtype=np.uint32), n=2, c=16)
    with pytest.raises(TypeError, match="PrecomputedBases"):
        msm_precomp.msm_precomputed(object(), np.zeros((2, 4), dtype=np.uint64))
    with pytest.raises(ValueError, match="expected 2 rows"):
        msm_precomp.msm_precomputed(b, np.zeros((3, 4), dtype=np.uint64))
    with pytest.raises(TypeError, match="uint64"):
        msm_precomp.msm_precomputed(b, np.zeros((2, 4), dtype=np.int64))
    assert b.nwin == 16 and b.nbytes == 96 * 32


# ----------------------------------------------------------------------------- integer group: the reduction bound


def _keys_one_set(d: np.ndarray, m: int) -> np.ndarray:
    """msm_precomp_digits' keys for digits ``d (nwin, n)``: bucket |d| - 1, index w*n + i, sentinel for 0."""
    nwin, n = d.shape
    bucket = np.where(d == 0, SENTINEL, np.abs(d) - 1).astype(np.uint64)
    idx = np.arange(nwin * n, dtype=np.uint64).reshape(nwin, n)
    return ((bucket << np.uint64(32)) | (np.uint64(d < 0) << np.uint64(31)) | idx).reshape(-1)


@pytest.mark.parametrize("n,nwin,m,chunk,kind", [
    (2**14, 12, 2**10, 64, "porep"),    # bucket 0 holds ~45% of the points plus its uniform share
    (2**14, 12, 2**4, 64, "uniform"),   # few buckets: runs of ~12 n / 16 entries
    (5000, 7, 8, 64, "all_one"),        # every digit 1 in every window: ONE bucket of nwin * n > n entries
    (3000, 5, 4, 2, "all_one"),         # the same with chunk 2: many rounds
    (700, 3, 64, 1, "porep"),           # chunk 1
    (1000, 4, 64, 64, "zero"),          # E = 0
])
def test_integer_group_one_bucket_set(n, nwin, m, chunk, kind):
    """msm_reduce with plan(nwin * n, 1, m, chunk), as msm_precomputed calls it: a bucket can hold every
    entry (up to nwin * n, not n as in msm_device), and the plan's bounds (asserted by IntKernels at every
    step) still hold; the bucket sums and sum_k (k+1) B_k equal the direct sums."""
    rng = new_rng()
    d = rng.integers(-m, m + 1, size=(nwin, n))
    if kind == "porep":
        u = rng.random(n)
        d[:, u < 0.45] = 0
        ones = (u >= 0.45) & (u < 0.9)
        d[:, ones] = 0
        d[0, ones] = 1
    elif kind == "all_one":
        d[:] = 1
    elif kind == "zero":
        d[:] = 0
    keys = np.sort(_keys_one_set(d, m))
    values = rng.integers(0, P, size=nwin * n)  # table point w*n + i
    p = msm_reduce.plan(nwin * n, 1, m, chunk)
    ik = IntKernels(p, values)
    e = msm_reduce.valid_count(np, ik, keys)
    parts = msm_reduce.level0(np, ik, keys, e, values, p)
    buckets = np.zeros((m, msm_reduce.XYZZ_WORDS), dtype=np.uint32)
    msm_reduce.to_buckets(np, ik, parts, p, buckets)
    got = buckets[:, 0].astype(np.int64)
    assert np.array_equal(got, _expected_buckets(keys, values, m)), f"seed {current_seed()}"
    total = int(sum((k + 1) * int(b) for k, b in enumerate(got)) % P)
    direct = int(sum(int(x) * int(v) for x, v in zip(d.reshape(-1), values, strict=True)) % P)
    assert total == direct, f"seed {current_seed()}"
    if kind == "all_one":
        assert p.max_bucket == nwin * n and ik.log[0][0] == nwin * n


# ----------------------------------------------------------------------------- emu: the real kernels, no GPU


def _precomp_emu(pts, sc, c, monkeypatch, deferred=None):
    """The table and the MSM on the emulated kernels; (result, table, prepared bases)."""
    monkeypatch.setattr(msm_precomp, "_own", _emu_kernel)
    monkeypatch.setattr(msm_precomp, "free_bytes", lambda: 1 << 40)
    with emulated():
        mont = msm.prepare_points(pts)
        table = msm_precomp.PrecomputedBases.build(mont, c)
        out = msm_precomp.msm_precomputed(table, sc, deferred=deferred)
    return out, table, mont


@pytest.mark.parametrize("c", [2, 3, 5, 8, 13])
def test_emu_table_rows_are_shifted_bases(c, monkeypatch):
    n = 5
    pts = rand_points(n)
    pts[2] = 0  # an identity base: every row stays the identity
    _, t, _ = _precomp_emu(pts, fr_random(n, new_rng()), c, monkeypatch)
    for w in sorted({0, 1, 7, t.nwin - 1} & set(range(t.nwin))):
        with emulated():
            want = msm.prepare_points(curve.g1_mul(pts, [1 << (c * w)] * n))
        assert np.array_equal(t.table[w * n : (w + 1) * n], want), f"c={c}, window {w}, seed {current_seed()}"


@pytest.mark.parametrize("c", [2, 3, 5, 8, 13])
@pytest.mark.parametrize("n", [1, 2, 3, 70])
def test_emu_random_vs_arkworks_and_msm_device(n, c, monkeypatch):
    pts, sc = rand_points(n), fr_random(n, new_rng())
    got, _, _ = _precomp_emu(pts, sc, c, monkeypatch)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, n={n}, c={c}"
    with emulated():
        assert (got == msm.msm_device(pts, sc, c)).all()


@pytest.mark.parametrize("case", EDGE_CASES + ["porep"])
def test_emu_edge_inputs(case, monkeypatch):
    pts, sc = _edge_case(case, 70) if case != "porep" else (rand_points(300), _porep_scalars(300, new_rng()))
    got, _, _ = _precomp_emu(pts, sc, 6, monkeypatch)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, {case}"


def test_emu_small_chunks_porep(monkeypatch):
    monkeypatch.setattr(msm, "CHUNK", 2)
    n = 200
    pts, sc = rand_points(n), _porep_scalars(n, new_rng())
    got, _, _ = _precomp_emu(pts, sc, 4, monkeypatch)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}"


def test_emu_no_host_sync_and_deferred_check(monkeypatch):
    n = 300
    pts, sc = rand_points(n), _porep_scalars(n, new_rng())
    chk = msm.DeferredCheck()
    monkeypatch.setattr(msm_precomp, "_own", _emu_kernel)
    monkeypatch.setattr(msm_precomp, "free_bytes", lambda: 1 << 40)
    bad = sc.copy()
    bad[5] = fr_from_ints([R - 1])[0]
    bad[5, 3] = np.uint64(2**64 - 1)  # >= r
    with emulated():
        mont = msm.prepare_points(pts)
        before = _cuda.sync_counts()
        table = msm_precomp.PrecomputedBases.build(mont, 7)
        got = msm_precomp.msm_precomputed(table, sc, deferred=chk)
        after = _cuda.sync_counts()
        chk.raise_if_bad()
        chk2 = msm.DeferredCheck()
        msm_precomp.msm_precomputed(table, bad, deferred=chk2)
        with pytest.raises(ValueError, match=r"scalars\[5\]"):
            chk2.raise_if_bad()
        with pytest.raises(ValueError, match=r"scalars\[5\]"):
            msm_precomp.msm_precomputed(table, bad)
    assert {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)} == {}
    assert (got == ref_arkworks(pts, sc)).all()


# ----------------------------------------------------------------------------- gpu


def _gpu(pts_dev, sc_dev, c=None):
    """Table build + MSM with a deferred check, asserting no msm.* host sync inside; (result, bases)."""
    cp = _cuda.cupy()
    mont = msm.prepare_points(pts_dev)
    chk = msm.DeferredCheck()
    before = _cuda.sync_counts()
    table = msm_precomp.PrecomputedBases.build(mont, c)
    out = msm_precomp.msm_precomputed(table, sc_dev, deferred=chk)
    after = _cuda.sync_counts()
    assert {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)} == {}
    host = cp.asnumpy(out)
    chk.raise_if_bad()
    return host, mont


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 2, 3, 1000])
def test_gpu_random_vs_arkworks_and_msm_device(n):
    cp = _cuda.cupy()
    pts, sc = rand_points(n), fr_random(n, new_rng())
    got, mont = _gpu(cp.asarray(pts), cp.asarray(sc))
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, n={n}"
    assert (got == cp.asnumpy(msm.msm_device(None, cp.asarray(sc), mont=mont))).all()


@pytest.mark.gpu
@pytest.mark.parametrize("n,kind", [(2**16 + 1, "uniform"), (2**20, "uniform"), (2**20, "porep"), (2**18, "ones"),
                                    (2**18, "zeros")])
def test_gpu_large_vs_discrete_logs(n, kind):
    cp = _cuda.cupy()
    seed, rng = new_pyrng().randrange(2**64), new_rng()
    sc = {"uniform": lambda: fr_random(n, rng), "porep": lambda: _porep_scalars(n, rng),
          "ones": lambda: fr_from_ints([1] * n), "zeros": lambda: np.zeros((n, 4), dtype=np.uint64)}[kind]()
    sc_dev = cp.asarray(sc)
    got, mont = _gpu(bases.generate_points(n, seed), sc_dev)
    assert (got == _dlog_reference(n, seed, sc)).all(), f"seed {current_seed()} (points seed {seed}), n={n}, {kind}"
    assert (got == cp.asnumpy(msm.msm_device(None, sc_dev, mont=mont))).all()


@pytest.mark.gpu
@pytest.mark.parametrize("c", [2, 3, 8, 13, 16, 20, 22])
def test_gpu_windows(c):
    cp = _cuda.cupy()
    n, rng = 3000, new_rng()
    pts, sc = rand_points(n), _porep_scalars(n, rng)
    sc[: n // 3] = fr_random(n // 3, rng)
    got, mont = _gpu(cp.asarray(pts), cp.asarray(sc), c)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, c={c}"
    assert (got == cp.asnumpy(msm.msm_device(None, cp.asarray(sc), min(c, 16), mont=mont))).all()


@pytest.mark.gpu
@pytest.mark.parametrize("case", EDGE_CASES)
def test_gpu_edge_inputs(case):
    cp = _cuda.cupy()
    pts, sc = _edge_case(case, 2000)
    got, _ = _gpu(cp.asarray(pts), cp.asarray(sc), 13)
    assert (got == ref_arkworks(pts, sc)).all(), f"seed {current_seed()}, {case}"


@pytest.mark.gpu
def test_gpu_table_rows():
    cp = _cuda.cupy()
    n, c = 50, 20
    pts = rand_points(n)
    pts[3] = 0
    t = msm_precomp.PrecomputedBases.build(msm.prepare_points(cp.asarray(pts)), c)
    for w in (0, 1, t.nwin - 1):
        want = cp.asnumpy(msm.prepare_points(cp.asarray(curve.g1_mul(pts, [1 << (c * w)] * n))))
        assert (cp.asnumpy(t.table[w * n : (w + 1) * n]) == want).all(), f"window {w}, seed {current_seed()}"


# ----------------------------------------------------------------------------- bench option


@pytest.mark.parametrize("text,want", [("none", ()), ("", ()), ("auto", (0,)), ("auto,18, 20,22,20", (0, 18, 20, 22))])
def test_bench_precomp_windows_option(text, want):
    assert parse_precomp_windows(text) == want


@pytest.mark.parametrize("text", ["1", "27", "x", "auto,-3"])
def test_bench_precomp_windows_option_errors(text):
    with pytest.raises(CliError, match="--precomp-windows"):
        parse_precomp_windows(text)


def test_anchors_precomp_rows_beside_sppark():
    """bench msm's device_precomp rows are their own variants beside sppark (its sweep rows are not compared); the
    PoRep-like rows are like for like where the PoRep-like sppark driver ran, context (its uniform time) elsewhere."""
    sp = pd.DataFrame([dict(op="msm", lg_n=lg, variant=v, median_ms=ms, check="PASS")
                       for lg, v, ms in ((22, "devpts_devsc", 100.0), (24, "devpts_devsc", 400.0), (24, "devpts_devsc_porep", 50.0))])
    rows = pd.DataFrame([dict(log2_n=lg, mode=mode, scalars=sc, variant="v", median_ms=ms)
                         for lg in (22, 24)
                         for mode, sc, ms in (("device", "uniform", 80.0), ("device", "porep", 40.0),
                                              ("device_precomp", "uniform", 60.0), ("device_precomp", "porep", 20.0),
                                              ("device_precomp_sweep", "uniform", 50.0), ("precomp_build", "", 900.0))])
    vs = anchors.vs_sppark(None, rows, sp)
    v22, v24 = vs[vs["log_n"] == 22], vs[vs["log_n"] == 24]
    assert list(v22["variant"]) == ["uniform", "porep", "precomp-uniform", "precomp-porep"]
    assert list(v22["ratio"]) == pytest.approx([0.8, 0.4, 0.6, 0.2])
    assert list(v22["like_for_like"]) == [True, False, True, False]
    assert list(v24["ratio"]) == pytest.approx([0.2, 0.8, 0.15, 0.4]) and v24["like_for_like"].all()
    def labels(d):
        return [anchors.row_label(o, v, bool(f)) for o, v, f in zip(d["op"], d["variant"], d["like_for_like"], strict=True)]

    assert labels(v22) == ["MSM uniform", "MSM PoRep-like (sppark: uniform)", "MSM precomputed bases, uniform",
                          "MSM precomputed bases, PoRep-like (sppark: uniform)"]
    assert labels(v24) == ["MSM uniform", "MSM PoRep-like", "MSM precomputed bases, uniform", "MSM precomputed bases, PoRep-like"]
