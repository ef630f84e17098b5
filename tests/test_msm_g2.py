"""G2: Fq2 and the G2 group formulas of zkgpu/kernels (fq2.cuh, ec.cuh, msm_final.cuh) against py_ecc, and the
G2 MSM (zkgpu.gpu.msm.pippenger.msm(..., group="g2")) against py-arkworks-bls12381, py_ecc and known discrete logs.

Paths as tests/test_msm.py: ``cpu`` (arkworks), ``emu`` (the real host driver over msm.cu built with
ZK_MSM_G2=1 by g++, tests/native/msm_g2_emu.cpp, numpy standing in for CuPy) and ``gpu`` (@pytest.mark.gpu).
Random inputs come from the test's seed (tests/seeding.py), reported on failure.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import py_ecc.optimized_bls12_381 as pe
import pytest
from test_msm import emu_library, emulated

from seeding import current_seed, new_pyrng, new_rng
from zkgpu.arith import curve
from zkgpu.arith.field import FQ, FR, fr_from_ints, fr_random, fr_to_ints
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases
from zkgpu.gpu.msm import pippenger as msm

Q, R = FQ.modulus, FR.modulus
PATHS = ["cpu", "emu", pytest.param("gpu", marks=pytest.mark.gpu)]


def _lib() -> ctypes.CDLL:
    return emu_library("g2")


def _p(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def rand_points(n: int, seed: int | None = None) -> np.ndarray:
    """n G2 points with known discrete logs (bases' generated points, on the CPU)."""
    return bases.generate_points_cpu(n, new_pyrng().randrange(2**64) if seed is None else seed, group="g2")


def dlog_reference(n: int, seed: int, sc: np.ndarray) -> np.ndarray:
    """sum_i s_i P_i for the generated points P_i = a_i G2: (sum_i s_i a_i mod r) G2."""
    a = [bases._gen_scalar(seed, i) for i in range(n)]
    k = sum(s * x for s, x in zip(fr_to_ints(sc), a, strict=True)) % R
    return curve.g2_mul(curve.g2_generator(), [k])


def ref_py_ecc(pts: np.ndarray, sc: np.ndarray) -> np.ndarray:
    acc = pe.Z2
    for p, k in zip(curve.g2_to_py_ecc(pts), fr_to_ints(sc), strict=True):
        acc = pe.add(acc, pe.multiply(p, k))
    return curve.g2_from_py_ecc([acc])


def run_msm(path: str, pts: np.ndarray, sc: np.ndarray, window: int | None = None) -> np.ndarray:
    if path == "cpu":
        return msm.msm_cpu(pts, sc, group="g2")
    if path == "emu":
        with emulated():
            return msm.msm_device(pts, sc, window, group="g2")
    cp = _cuda.cupy()
    out_dev = msm.msm(cp.asarray(pts), cp.asarray(sc), window=window, group="g2")
    assert isinstance(out_dev, cp.ndarray) and out_dev.shape == (1, 24)
    out_host = msm.msm(pts, sc, window=window, group="g2")
    assert isinstance(out_host, np.ndarray) and (cp.asnumpy(out_dev) == out_host).all()
    return out_host


# ----------------------------------------------------------------------------- Fq2 and the group formulas


def _fq2_words(vals: list[tuple[int, int]]) -> np.ndarray:
    return np.frombuffer(b"".join(c0.to_bytes(48, "little") + c1.to_bytes(48, "little") for c0, c1 in vals),
                         dtype="<u4").astype(np.uint32).reshape(len(vals), 24)


def _fq2_ints(w: np.ndarray) -> list[tuple[int, int]]:
    raw = np.ascontiguousarray(w).astype("<u4").tobytes()
    return [(int.from_bytes(raw[i : i + 48], "little"), int.from_bytes(raw[i + 48 : i + 96], "little"))
            for i in range(0, len(raw), 96)]


def _fq2_op(a: list[tuple[int, int]], b: list[tuple[int, int]], op: int) -> list[tuple[int, int]]:
    wa, wb = _fq2_words(a), _fq2_words(b)
    out = np.zeros_like(wa)
    _lib().fq2_op(_p(wa), _p(wb), _p(out), ctypes.c_uint64(len(a)), ctypes.c_int(op))
    return _fq2_ints(out)


def test_fq2_products_and_inverses_match_py_ecc():
    rng = new_pyrng()
    edge = [(0, 0), (1, 0), (0, 1), (Q - 1, 0), (0, Q - 1), (Q - 1, Q - 1), (1, 1)]
    a = edge + [(rng.randrange(Q), rng.randrange(Q)) for _ in range(40)]
    b = list(reversed(edge)) + [(rng.randrange(Q), rng.randrange(Q)) for _ in range(40)]
    fa, fb = [pe.FQ2(list(x)) for x in a], [pe.FQ2(list(x)) for x in b]

    def ints(v):
        return (int(v.coeffs[0]), int(v.coeffs[1]))

    assert _fq2_op(a, b, 0) == [ints(x * y) for x, y in zip(fa, fb, strict=True)], f"seed {current_seed()}"
    assert _fq2_op(a, b, 1) == [ints(x * x) for x in fa], f"seed {current_seed()}"
    want_inv = [(0, 0) if x == (0, 0) else ints(pe.FQ2.one() / f) for x, f in zip(a, fa, strict=True)]
    assert _fq2_op(a, b, 2) == want_inv, f"seed {current_seed()} (Fermat)"
    assert _fq2_op(a, b, 3) == want_inv, f"seed {current_seed()} (binary)"


def _g2_op(a: np.ndarray, b: np.ndarray, op: int, k: int = 0) -> np.ndarray:
    """ec.cuh's G2 operation ``op`` (tests/native/msm_g2_emu.cpp g2_op) on canonical (n, 24) uint64 points."""
    n = a.shape[0]
    rng = new_rng()
    z = rng.integers(0, 2**32, size=(2, n, 24), dtype=np.uint64).astype(np.uint32)
    z[:, :, 11] &= 0x0FFFFFFF  # every coordinate < q
    z[:, :, 23] &= 0x0FFFFFFF
    out = np.zeros_like(a)
    ca, cb = np.ascontiguousarray(a), np.ascontiguousarray(b)
    z1, z2 = np.ascontiguousarray(z[0]), np.ascontiguousarray(z[1])
    _lib().g2_op(_p(ca), _p(cb), _p(z1), _p(z2), ctypes.c_uint32(k), _p(out), ctypes.c_uint64(n), ctypes.c_int(op))
    return out


def _pe_points(arr: np.ndarray) -> list:
    return curve.g2_to_py_ecc(arr)


def test_g2_group_operations_match_py_ecc():
    pts = rand_points(8)
    a, b = pts[:4], pts[4:]
    a = np.vstack([a, np.zeros((1, 24), np.uint64), a[:1]])  # the identity, and P + P below
    b = np.vstack([b, b[:1], a[:1]])
    pa, pb = _pe_points(a), _pe_points(b)
    add = curve.g2_from_py_ecc([pe.add(x, y) for x, y in zip(pa, pb, strict=True)])
    dbl = curve.g2_from_py_ecc([pe.double(x) for x in pa])
    assert (_g2_op(a, b, 0) == add).all()  # madd-2008-s (with P + P and identity + Q)
    assert (_g2_op(a, b, 1) == add).all()  # add-2008-s
    assert (_g2_op(a, b, 2) == dbl).all()  # dbl-2008-s
    assert (_g2_op(a, b, 3) == dbl).all()  # mdbl-2008-s
    k = 0xDEADBEEF
    assert (_g2_op(a, b, 4, k) == curve.g2_from_py_ecc([pe.multiply(x, k) for x in pa])).all()
    neg = curve.g2_from_py_ecc([pe.add(pe.neg(x), y) for x, y in zip(pa, pb, strict=True)])
    assert (_g2_op(a, b, 5) == neg).all()  # -a + b
    assert (_g2_op(a, b, 6) == a).all()  # XYZZ -> affine
    assert not _g2_op(a, a, 5).any()  # -P + P is the identity


def test_g2_on_curve_and_warp_split():
    pts = rand_points(6)
    bad = pts.copy()
    bad[1, 12] ^= 1  # y.c0 changed
    flags = np.zeros(6, np.uint8)
    _lib().g2_on_curve(_p(bad), ctypes.c_uint64(6), _p(flags))
    assert flags.tolist() == [1, 0, 1, 1, 1, 1]
    a, b = pts[:3], pts[3:]
    z = new_rng().integers(1, 2**28, size=(6, 24), dtype=np.uint64).astype(np.uint32)
    assert _lib().emu_g2_warp_mismatches(_p(np.ascontiguousarray(a)), _p(np.ascontiguousarray(b)), _p(z), ctypes.c_uint64(3)) == 0


# ----------------------------------------------------------------------------- the MSM


@pytest.mark.parametrize("path", PATHS)
def test_g2_msm_random_vs_py_ecc(path):
    pts, sc = rand_points(5), fr_random(5, new_rng())
    assert (run_msm(path, pts, sc) == ref_py_ecc(pts, sc)).all(), f"seed {current_seed()}"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n,window", [(1, None), (3, 2), (37, 3), (100, 5), (257, None)])
def test_g2_msm_sizes_vs_known_dlogs(path, n, window):
    """Sizes not a multiple of a window's chunk, n = 1, explicit windows: against (sum s_i a_i) G2."""
    seed = new_pyrng().randrange(2**64)
    pts, sc = rand_points(n, seed), fr_random(n, new_rng())
    want = dlog_reference(n, seed, sc)
    if path == "cpu":
        window = None
    assert (run_msm(path, pts, sc, window) == want).all(), f"seed {current_seed()}"


def _edge(case: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    pts, sc = rand_points(n), fr_random(n, new_rng())
    if case in ("zero", "one", "r-1"):
        sc[:] = fr_from_ints([{"zero": 0, "one": 1, "r-1": R - 1}[case]])[0]
    elif case == "identity":
        pts[::3] = 0
    elif case == "p_minus_p":
        pts[1::2] = curve.g2_from_py_ecc([pe.neg(p) for p in curve.g2_to_py_ecc(pts[0::2])])
        sc[1::2] = sc[0::2]
    elif case == "repeated":
        pts[:] = pts[0]
    return pts, sc


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", ["zero", "one", "r-1", "identity", "p_minus_p", "repeated"])
def test_g2_msm_edge_cases_vs_arkworks(path, case):
    pts, sc = _edge(case, 24)
    got = run_msm(path, pts, sc, None if path == "cpu" else 4)
    assert (got == msm.msm_cpu(pts, sc, group="g2")).all(), f"seed {current_seed()}, {case}"
    if case in ("zero", "p_minus_p"):
        assert not got.any()


@pytest.mark.parametrize("path", PATHS)
def test_g2_msm_refuses_bad_inputs(path):
    pts, sc = rand_points(4), fr_random(4, new_rng())
    big = sc.copy()
    big[2] = fr_from_ints([R - 1])[0]
    big[2, 0] += np.uint64(1)  # r itself
    with pytest.raises(ValueError, match=r"scalars\[2\]"):
        run_msm(path, pts, big)
    off = pts.copy()
    off[3, 12] ^= np.uint64(1)
    with pytest.raises(ValueError, match=r"points\[3\].*G2|points\[3\].*4\(u \+ 1\)"):
        run_msm(path, off, sc)
    with pytest.raises(ValueError, match=r"\(n, 24\)"):
        msm.msm(pts[:, :12].copy(), sc, group="g2")
    with pytest.raises(ValueError, match="group must be"):
        msm.msm(pts, sc, group="g3")


def test_g2_msm_empty_is_identity():
    out = msm.msm(np.zeros((0, 24), np.uint64), np.zeros((0, 4), np.uint64), group="g2")
    assert out.shape == (1, 24) and not out.any()
    with emulated():
        assert not msm.msm_device(np.zeros((0, 24), np.uint64), np.zeros((0, 4), np.uint64), group="g2").any()


def test_g2_generate_points_emulated_matches_cpu():
    with emulated():
        got = bases._generate_device(40, 12345, "g2")
    assert (got == bases.generate_points_cpu(40, 12345, group="g2")).all()


def test_g1_unchanged_by_the_group_argument():
    from test_msm import rand_points as g1_points

    pts, sc = g1_points(20), fr_random(20, new_rng())
    with emulated():
        a = msm.msm_device(pts, sc, 4)
        b = msm.msm_device(pts, sc, 4, group="g1")
    assert (a == b).all() and (a == msm.msm_cpu(pts, sc)).all()


# ----------------------------------------------------------------------------- GPU only


@pytest.mark.gpu
@pytest.mark.parametrize("lg", [10, 16, 20])
def test_gpu_g2_msm_vs_known_dlogs(lg):
    """Generated G2 points (g2_generate, on the GPU) at 2^10, 2^16, 2^20 with random scalars, against
    (sum s_i a_i) G2; the 2^10 points also against the CPU's generation."""
    cp = _cuda.cupy()
    n, seed = 1 << lg, new_pyrng().randrange(2**64)
    pts = bases.generate_points(n, seed, group="g2")
    if lg == 10:
        assert (cp.asnumpy(pts) == bases.generate_points_cpu(n, seed, group="g2")).all()
    sc = fr_random(n, new_rng())
    got = cp.asnumpy(msm.msm(pts, cp.asarray(sc), group="g2"))
    assert (got == dlog_reference(n, seed, sc)).all(), f"seed {current_seed()}, 2^{lg}"


@pytest.mark.gpu
def test_gpu_g2_prepared_points_deferred_check():
    cp = _cuda.cupy()
    pts, sc = rand_points(1000), fr_random(1000, new_rng())
    sc[:300] = fr_from_ints([1] * 300)
    mont = msm.prepare_points(cp.asarray(pts), group="g2")
    chk = msm.DeferredCheck()
    got = cp.asnumpy(msm.msm_device(None, cp.asarray(sc), mont=mont, deferred=chk, group="g2"))
    chk.raise_if_bad()
    assert (got == msm.msm_cpu(pts, sc, group="g2")).all(), f"seed {current_seed()}"


@pytest.mark.slow  # an nvcc build (the slow tier, as the other module builds)
def test_g2_build_compiles_sm90(tmp_path):
    """msm.cu's G2 instantiation (-DZK_MSM_G2=1) builds with nvcc for sm_90 (skipped without nvcc, as
    tests/test_kernels_compile.py); every kernel of the G1 build is there under the same name, the point kernels
    as g2_prepare / g2_generate."""
    from test_kernels_compile import KERNEL_DIR, _nvcc_cubin, _registers

    g2 = set(_registers(_nvcc_cubin(KERNEL_DIR / "msm.cu", tmp_path, "-DZK_MSM_G2=1")))
    assert {"g2_prepare", "g2_generate", "msm_digits", "window_reduce", "msm_final_warp"} <= g2
    assert not {"g1_prepare", "g1_generate"} & g2


def test_bench_refuses_g2_precomp_and_bad_groups():
    from click.testing import CliRunner

    from zkgpu.app.bench import msm as bench

    with pytest.raises(ValueError, match="group must be"):
        bench.run_benchmark(sizes=[4], group="g3")
    with pytest.raises(ValueError, match="precomputed-bases"):
        bench.run_benchmark(sizes=[4], group="g2", precomp_windows=(0,))
    res = CliRunner().invoke(bench.bench_command, ["--group", "g2", "--min-log", "16", "--max-log", "18", "--precomp-windows", "auto"])
    assert res.exit_code != 0 and "--group g2" in res.output
    res = CliRunner().invoke(bench.bench_command, ["--group", "g2", "--min-log", "18", "--max-log", "16"])
    assert res.exit_code != 0 and "--min-log and --max-log" in res.output


# ----------------------------------------------------------------------------- the blst anchor (anchors/blst-g2)

ROOT = Path(__file__).resolve().parent.parent
ANCHOR = ROOT / "anchors" / "blst-g2"
_M64 = (1 << 64) - 1


def _anchor_scalars(n: int, sseed: int) -> np.ndarray:
    """bench_g2.c's scalars: words splitmix64(sseed + 4 i + w), the top one masked to 62 bits."""
    w = [[bases._splitmix64((sseed + 4 * i + k) & _M64) for k in range(4)] for i in range(n)]
    for row in w:
        row[3] &= (1 << 62) - 1
    return np.array(w, dtype=np.uint64)


def test_blst_anchor_matches_ours():
    """anchors/blst-g2 (blst_p2s_mult_pippenger on 2 threads, its own self-check) gives, on the same inputs,
    the result of our G2 MSM (CPU reference and the emulated kernels). Skipped without the sppark-bench
    anchor's vendored blst (.anchors/sppark-bench, a copy of shared/anchors/sppark-bench) or a C compiler."""
    vendor = ROOT / ".anchors" / "sppark-bench" / "vendor" / "blst"
    if not vendor.is_dir() or not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no .anchors/sppark-bench (copy shared/anchors/sppark-bench there) or no C compiler")
    subprocess.run(["bash", str(ANCHOR / "build.sh")], check=True, capture_output=True)
    seed, sseed, lg = new_pyrng().randrange(2**32), new_pyrng().randrange(2**32), 6
    res = subprocess.run([str(ANCHOR / "build" / "bench_g2"), "--sizes", str(lg), "--threads", "2", "--reps", "1", "--warmup", "0",
                          "--seed", str(seed), "--scalar-seed", str(sseed), "--print"], check=True, capture_output=True, text=True)
    row = next(line for line in res.stdout.splitlines() if line.startswith("blst_g2,"))
    assert row.endswith(",ok"), res.stdout
    hexs = next(line for line in res.stdout.splitlines() if line.startswith(f"# result 2^{lg} ")).split()[-1]
    got = np.frombuffer(bytes.fromhex(hexs), dtype="<u8").astype(np.uint64).reshape(1, 24)
    pts, sc = bases.generate_points_cpu(1 << lg, seed, group="g2"), _anchor_scalars(1 << lg, sseed)
    assert (got == msm.msm_cpu(pts, sc, group="g2")).all(), f"seed {current_seed()}"
    assert (got == run_msm("emu", pts, sc)).all(), f"seed {current_seed()}"


# ----------------------------------------------------------------------------- the trusted path (issue 25 item 4)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_trusted_msm_same_result_no_checks_no_syncs(group):
    """msm_device(check=False) (what msm(check=False) runs on device arrays): the same point, no host sync;
    values out of range are not refused there (the contract), and are with the default check."""
    from test_msm import rand_points as g1_points

    pts = rand_points(30) if group == "g2" else g1_points(30)
    sc = fr_random(30, new_rng())
    with emulated():
        before = _cuda.sync_counts()
        got = msm.msm_device(pts, sc, 4, group=group, check=False)
        after = _cuda.sync_counts()
        assert {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0) and k.startswith("msm.")} == {}
        big = sc.copy()
        big[0] = np.uint64(2**64 - 1)
        msm.msm_device(pts, big, 4, group=group, check=False)  # trusted: no error
        with pytest.raises(ValueError, match=r"scalars\[0\]"):
            msm.msm_device(pts, big, 4, group=group)
    assert (got == msm.msm_cpu(pts, sc, group=group)).all(), f"seed {current_seed()}"


def test_msm_out_argument_on_the_host():
    pts, sc = rand_points(3), fr_random(3, new_rng())
    out = np.full((1, 24), 7, dtype=np.uint64)
    assert msm.msm(pts, sc, group="g2", out=out) is out and (out == msm.msm_cpu(pts, sc, group="g2")).all()
    with pytest.raises(ValueError, match=r"out: expected shape \(n, 24\)"):
        msm.msm(pts, sc, group="g2", out=np.zeros((1, 12), np.uint64))
    with pytest.raises(ValueError, match=r"out: expected a \(1, 24\)"):
        msm.msm(pts, sc, group="g2", out=np.zeros((2, 24), np.uint64))


@pytest.mark.gpu
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_gpu_trusted_msm_and_out(group):
    cp = _cuda.cupy()
    n = 5000
    pts = bases.generate_points(n, 7, group=group)
    sc = cp.asarray(fr_random(n, new_rng()))
    out = cp.empty((1, pts.shape[1]), dtype=cp.uint64)
    before = _cuda.sync_counts()
    r = msm.msm(pts, sc, group=group, check=False, out=out)
    after = _cuda.sync_counts()
    assert r is out
    assert {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0) and k.startswith("msm.")} == {}
    assert (cp.asnumpy(out) == cp.asnumpy(msm.msm(pts, sc, group=group))).all(), f"seed {current_seed()}"
