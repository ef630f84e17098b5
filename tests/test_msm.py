"""G1 MSM, batch_add, prep_msm and generate_points (zkgpu.gpu.msm.pippenger) against py_ecc and arkworks.

Three paths run the same cases:
  cpu  -- the CPU fallback (py-arkworks-bls12381 multiexp), always;
  emu  -- the GPU host driver of zkgpu/gpu/msm/pippenger.py with the kernels of zkgpu/kernels/msm.cu built by
          g++ (tests/native/msm_emu.cpp) and numpy standing in for CuPy, always (no GPU needed);
  gpu  -- the real kernels on a CUDA GPU (@pytest.mark.gpu, skipped without one).
Inputs are fresh random draws each run (seeds are printed by pytest on failure via the ids).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import types
from pathlib import Path

import numpy as np
import py_ecc.optimized_bls12_381 as pe
import pytest

from seeding import new_pyrng, new_rng
from zkgpu.arith import curve
from zkgpu.arith.field import FR, fr_from_ints, fr_random
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases
from zkgpu.gpu.msm import pippenger as msm

R = FR.modulus
ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "zkgpu" / "kernels"

# ----------------------------------------------------------------------------- the emulated GPU


def _build_emu(name: str = "msm_emu") -> ctypes.CDLL:
    src = ROOT / "tests" / "native" / f"{name}.cpp"
    deps = [src, ROOT / "tests" / "native" / "emu.h", *sorted(KERNELS.glob("*.cu*"))]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in deps)).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"zkgpu-{name}-{digest}.so"
    if not out.exists():
        cxx = shutil.which("g++") or shutil.which("c++")
        if cxx is None:
            pytest.skip("no C++ compiler for the emulated kernels")
        tmp = out.with_suffix(f".{os.getpid()}.tmp.so")  # xdist workers build at once: each its own file
        subprocess.run([cxx, "-O2", "-std=c++17", "-shared", "-fPIC", f"-I{KERNELS}", str(src), "-o", str(tmp)], check=True)
        tmp.replace(out)
    return ctypes.CDLL(str(out))


_EMU: dict[str, ctypes.CDLL] = {}
_EMU_SOURCES = {"g1": "msm_emu", "g2": "msm_g2_emu"}  # msm.cu built as it is, and with ZK_MSM_G2=1


def emu_library(group: str = "g1") -> ctypes.CDLL:
    """The emulation library of msm.cu built for ``group`` (built once per session and source)."""
    if group not in _EMU:
        _EMU[group] = _build_emu(_EMU_SOURCES[group])
    return _EMU[group]


def _emu_kernel(name: str, group: str = "g1"):
    f = getattr(emu_library(group), name)

    def call(grid, block, args, stream=None):
        cargs = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous, f"{name}: non-contiguous array argument"
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, np.uint64):
                cargs.append(ctypes.c_uint64(int(a)))
            elif isinstance(a, np.uint32):
                cargs.append(ctypes.c_uint32(int(a)))
            elif isinstance(a, np.int32):
                cargs.append(ctypes.c_int32(int(a)))
            else:
                raise TypeError(f"{name}: untyped kernel argument {a!r} ({type(a).__name__})")
        f(*cargs)

    return call


class _FakeCupy(types.ModuleType):
    """numpy under CuPy's names (asnumpy added) for the emulated device path."""

    def __init__(self):
        super().__init__("fake_cupy")
        self.asnumpy = np.asarray

    def __getattr__(self, name):
        return getattr(np, name)


@contextlib.contextmanager
def emulated():
    mp = pytest.MonkeyPatch()
    fake = _FakeCupy()
    mp.setattr(_cuda, "cupy", lambda: fake)
    mp.setattr(msm, "_k", _emu_kernel)
    try:
        yield
    finally:
        mp.undo()


# ----------------------------------------------------------------------------- paths


def run_msm(path: str, pts: np.ndarray, sc: np.ndarray) -> np.ndarray:
    if path == "cpu":
        return msm.msm_cpu(pts, sc)
    if path == "emu":
        with emulated():
            return msm.msm_device(pts, sc)
    cp = _cuda.cupy()
    out_dev = msm.msm(cp.asarray(pts), cp.asarray(sc))
    assert isinstance(out_dev, cp.ndarray) and out_dev.shape == (1, 12)
    out_host = msm.msm(pts, sc)
    assert isinstance(out_host, np.ndarray)
    assert (cp.asnumpy(out_dev) == out_host).all()
    return out_host


def run_batch_add(path: str, pts: np.ndarray, bm: np.ndarray) -> np.ndarray:
    if path == "cpu":
        return msm.batch_add_cpu(pts, bm)
    if path == "emu":
        with emulated():
            return msm.batch_add_device(pts, bm)
    cp = _cuda.cupy()
    out = msm.batch_add(cp.asarray(pts), cp.asarray(bm))
    assert isinstance(out, cp.ndarray)
    host = msm.batch_add(pts, bm)
    assert (cp.asnumpy(out) == host).all()
    return host


PATHS = ["cpu", "emu", pytest.param("gpu", marks=pytest.mark.gpu)]


def ref_arkworks(pts: np.ndarray, sc: np.ndarray) -> np.ndarray:
    return msm.msm_cpu(pts, sc)


def ref_py_ecc(pts: np.ndarray, sc: np.ndarray) -> np.ndarray:
    acc = pe.Z1
    for p, k in zip(curve.g1_to_py_ecc(pts), (int(v) for v in _ints(sc)), strict=True):
        acc = pe.add(acc, pe.multiply(p, k))
    return curve.g1_from_py_ecc([acc])


def _ints(sc: np.ndarray) -> list[int]:
    from zkgpu.arith.field import fr_to_ints

    return fr_to_ints(sc)


def rand_points(n: int) -> np.ndarray:
    return bases.generate_points_cpu(n, new_pyrng().randrange(2**64))


# ----------------------------------------------------------------------------- msm


@pytest.mark.parametrize("path", PATHS)
def test_msm_random_vs_py_ecc(path):
    n = 64
    pts, sc = rand_points(n), fr_random(n, new_rng())
    assert (run_msm(path, pts, sc) == ref_py_ecc(pts, sc)).all()


@pytest.mark.parametrize("path", PATHS)
def test_all_scalars_zero_is_identity(path):
    pts = rand_points(40)
    out = run_msm(path, pts, np.zeros((40, 4), dtype=np.uint64))
    assert out.shape == (1, 12) and not out.any()


@pytest.mark.parametrize("path", PATHS)
def test_one_scalar_one(path):
    pts = rand_points(37)
    sc = np.zeros((37, 4), dtype=np.uint64)
    sc[11, 0] = 1
    assert (run_msm(path, pts, sc) == pts[11:12]).all()


@pytest.mark.parametrize("path", PATHS)
def test_scalar_r_minus_one(path):
    pts = rand_points(5)
    sc = fr_from_ints([R - 1, 0, 0, R - 1, 1])
    want = curve.g1_add(curve.g1_add(curve.g1_neg(pts[0:1]), curve.g1_neg(pts[3:4])), pts[4:5])
    assert (run_msm(path, pts, sc) == want).all()
    assert (run_msm(path, pts[:1], sc[:1]) == curve.g1_neg(pts[:1])).all()


@pytest.mark.parametrize("path", PATHS)
def test_scalar_not_reduced_raises(path):
    pts = rand_points(6)
    sc = fr_random(6, new_rng())
    sc[4] = np.array([(R >> (64 * i)) & (2**64 - 1) for i in range(4)], dtype=np.uint64)  # == r
    with pytest.raises(ValueError, match=r"scalars\[4\]"):
        run_msm(path, pts, sc)


@pytest.mark.parametrize("path", PATHS)
def test_point_off_curve_raises(path):
    pts = rand_points(6)
    pts[2, 0] ^= np.uint64(1)
    with pytest.raises(ValueError, match=r"points\[2\]"):
        run_msm(path, pts, fr_random(6, new_rng()))


@pytest.mark.parametrize("path", PATHS)
def test_identity_points_among_bases(path):
    pts = rand_points(33)
    pts[[0, 7, 32]] = 0
    sc = fr_random(33, new_rng())
    assert (run_msm(path, pts, sc) == ref_arkworks(pts, sc)).all()


@pytest.mark.parametrize("path", PATHS)
def test_p_and_minus_p(path):
    p = rand_points(3)
    pts = np.concatenate([p, curve.g1_neg(p)])
    sc = fr_random(3, new_rng())
    sc = np.concatenate([sc, sc])
    assert not run_msm(path, pts, sc).any()
    sc2 = fr_random(6, new_rng())
    assert (run_msm(path, pts, sc2) == ref_arkworks(pts, sc2)).all()


@pytest.mark.parametrize("path", PATHS)
def test_same_point_repeated(path):
    n = 300
    pts = np.repeat(rand_points(1), n, axis=0)
    sc = fr_random(n, new_rng())
    want = curve.g1_mul(pts[:1], [sum(_ints(sc)) % R])
    assert (run_msm(path, pts, sc) == want).all()
    ones = np.zeros((n, 4), dtype=np.uint64)
    ones[:, 0] = 1  # one bucket holding every point
    assert (run_msm(path, pts, ones) == curve.g1_mul(pts[:1], [n])).all()


@pytest.mark.parametrize("n", [1, 31, 32, 33, 80, 81, 181, 182])
@pytest.mark.parametrize("path", PATHS)
def test_sizes_and_window_changes(path, n):
    pts, sc = rand_points(n), fr_random(n, new_rng())
    assert (run_msm(path, pts, sc) == ref_arkworks(pts, sc)).all()


def test_window_rule_changes_where_tested():
    assert msm.window_bits(80) != msm.window_bits(81)
    assert msm.window_bits(181) != msm.window_bits(182)
    assert msm.window_bits(1 << 24) == 20
    cs = [msm.window_bits(1 << k) for k in range(0, 27)]
    assert cs == sorted(cs) and min(cs) >= 4 and max(cs) <= 20


@pytest.mark.parametrize("path", PATHS)
def test_empty_input_is_identity(path):
    out = run_msm(path, np.zeros((0, 12), dtype=np.uint64), np.zeros((0, 4), dtype=np.uint64))
    assert out.shape == (1, 12) and not out.any()


@pytest.mark.parametrize("path", PATHS)
def test_mostly_zero_one_scalars(path):
    n = 200
    pts = rand_points(n)
    rng = new_rng()
    sc = np.zeros((n, 4), dtype=np.uint64)
    u = rng.random(n)
    sc[u < 0.5, 0] = 1
    big = u > 0.9
    sc[big] = fr_random(int(big.sum()))
    assert (run_msm(path, pts, sc) == ref_arkworks(pts, sc)).all()


def test_input_errors():
    pts = rand_points(3)
    with pytest.raises(ValueError, match="3 rows"):
        msm.msm(pts, fr_random(2, new_rng()))
    with pytest.raises(ValueError, match=r"shape \(n, 12\)"):
        msm.msm(pts[:, :6], fr_random(3, new_rng()))
    with pytest.raises(TypeError):
        msm.msm(pts.astype(np.int64), fr_random(3, new_rng()))
    with pytest.raises(ValueError, match="window"):
        msm.msm(pts, fr_random(3, new_rng()), window=25)


@pytest.mark.parametrize("c", [2, 4, 7, 13, 16])
def test_explicit_window_emulated(c):
    pts, sc = rand_points(50), fr_random(50, new_rng())
    with emulated():
        got = msm.msm_device(pts, sc, c)
    assert (got == ref_arkworks(pts, sc)).all()


# ----------------------------------------------------------------------------- batch_add, prep_msm


def _bitmap(sel: np.ndarray) -> np.ndarray:
    n = sel.size
    buf = np.zeros(-(-n // 64) * 8, dtype=np.uint8)
    packed = np.packbits(sel, bitorder="little")
    buf[: packed.size] = packed
    return buf.view("<u8").astype(np.uint64)


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 200])
@pytest.mark.parametrize("path", PATHS)
def test_batch_add(path, n):
    pts = rand_points(n)
    if n > 3:
        pts[3] = 0  # an identity among the points
    sel = new_rng().random(n) < 0.5
    want = ref_arkworks(pts, sel.astype(np.uint64)[:, None] * np.array([[1, 0, 0, 0]], dtype=np.uint64)) if n else curve.identity(1)
    assert (run_batch_add(path, pts, _bitmap(sel)) == want).all()


@pytest.mark.parametrize("path", PATHS)
def test_batch_add_p_minus_p_and_repeats(path):
    p = rand_points(1)
    pts = np.concatenate([p, curve.g1_neg(p), np.repeat(p, 70, axis=0)])
    sel = np.ones(72, dtype=bool)
    assert (run_batch_add(path, pts, _bitmap(sel)) == curve.g1_mul(p, [70])).all()


def test_batch_add_bitmap_errors():
    with pytest.raises(ValueError, match="words"):
        msm.batch_add(rand_points(65), np.zeros(1, dtype=np.uint64))
    with pytest.raises(TypeError):
        msm.batch_add(rand_points(3), np.zeros(1, dtype=np.int64))


def test_prep_msm_split():
    sc = fr_random(150, new_rng())
    sc[::3] = 0
    sc[1::5] = 0
    sc[1::5, 0] = 1
    p = msm.prep_msm(sc)
    ints = _ints(sc)
    assert p.n == 150 and p.ones + p.zeros + p.significant == 150
    assert p.ones == sum(k == 1 for k in ints) and p.zeros == sum(k == 0 for k in ints)
    assert p.bitmap.dtype == np.uint64 and p.bitmap.shape == (3,)
    bits = np.unpackbits(p.bitmap.astype("<u8").view(np.uint8), bitorder="little")[:150]
    assert bits.tolist() == [int(k == 1) for k in ints]
    assert [ints[i] for i in p.sig_indices] == _ints(p.sig_scalars)
    assert all(ints[i] not in (0, 1) for i in p.sig_indices)
    bad = sc.copy()
    bad[7] = np.array([(R >> (64 * i)) & (2**64 - 1) for i in range(4)], dtype=np.uint64)
    with pytest.raises(ValueError, match=r"scalars\[7\]"):
        msm.prep_msm(bad)


@pytest.mark.parametrize("path", PATHS)
def test_prep_msm_property(path):
    n = 64
    pts = rand_points(n)
    rng = new_rng()
    sc = fr_random(n, new_rng())
    u = rng.random(n)
    sc[u < 0.4] = 0
    sc[(u >= 0.4) & (u < 0.8)] = 0
    sc[(u >= 0.4) & (u < 0.8), 0] = 1
    p = msm.prep_msm(sc)
    ones = run_batch_add(path, pts, p.bitmap)
    tail = run_msm(path, pts[p.sig_indices], p.sig_scalars)
    full = run_msm(path, pts, sc)
    assert (curve.g1_add(ones, tail) == full).all()
    assert (full == ref_py_ecc(pts, sc)).all()


# ----------------------------------------------------------------------------- generate_points


def test_generate_points_cpu_valid_and_deterministic():
    a = bases.generate_points_cpu(70, 5)
    curve.check_points(a)
    assert (a == bases.generate_points_cpu(70, 5)).all()
    assert not (a == bases.generate_points_cpu(70, 6)).all()
    assert len({r.tobytes() for r in a}) == 70
    with pytest.raises(ValueError):
        bases.generate_points_cpu(-1, 0)


def test_generate_points_emulated_matches_cpu():
    with emulated():
        dev = bases._generate_device(70, 9)
    assert (dev == bases.generate_points_cpu(70, 9)).all()


@pytest.mark.gpu
def test_generate_points_gpu_matches_cpu():
    cp = _cuda.cupy()
    dev = bases.generate_points(100, 12345)
    assert isinstance(dev, cp.ndarray) and dev.shape == (100, 12)
    assert (cp.asnumpy(dev) == bases.generate_points_cpu(100, 12345)).all()


# ----------------------------------------------------------------------------- GPU at scale


@pytest.mark.gpu
@pytest.mark.parametrize("lg", [8])
def test_gpu_vs_py_ecc(lg):
    n = 1 << lg
    pts, sc = rand_points(n), fr_random(n, new_rng())
    assert (run_msm("gpu", pts, sc) == ref_py_ecc(pts, sc)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("lg", [10, 12, 14, 16])
def test_gpu_vs_arkworks(lg):
    cp = _cuda.cupy()
    n = 1 << lg
    seed = new_pyrng().randrange(2**64)
    pts = bases.generate_points(n, seed)
    sc = fr_random(n, new_rng())
    got = cp.asnumpy(msm.msm(pts, cp.asarray(sc)))
    assert (got == ref_arkworks(cp.asnumpy(pts), sc)).all()
    # PoRep-like scalars (mostly 0/1: long buckets split over many threads)
    sc[: n // 2] = 0
    sc[n // 2 : n - n // 8] = 0
    sc[n // 2 : n - n // 8, 0] = 1
    got = cp.asnumpy(msm.msm(pts, cp.asarray(sc)))
    assert (got == ref_arkworks(cp.asnumpy(pts), sc)).all()


@pytest.mark.gpu
def test_gpu_batch_add_large():
    cp = _cuda.cupy()
    n = 1 << 16
    pts = bases.generate_points(n, new_pyrng().randrange(2**64))
    sel = new_rng().random(n) < 0.3
    got = msm.batch_add(pts, cp.asarray(_bitmap(sel)))
    want = ref_arkworks(cp.asnumpy(pts), sel.astype(np.uint64)[:, None] * np.array([[1, 0, 0, 0]], dtype=np.uint64))
    assert (cp.asnumpy(got) == want).all()


def test_chunks_cover_runs_and_converge():
    rng = new_rng()
    lens = rng.integers(1, 3 * msm.CHUNK, size=200)
    lens[:5] = [1, msm.CHUNK, msm.CHUNK + 1, 2 * msm.CHUNK, 2 * msm.CHUNK + 1]
    keys = np.repeat(np.arange(200, dtype=np.uint32) * 3, lens)
    levels = 0
    while True:
        cs, ce, K, R = msm._chunks(np, keys)
        assert R == np.unique(keys).size and cs.shape == (K,) and ce.shape == (K,)
        assert cs[0] == 0 and ce[-1] == keys.size and (cs[1:] == ce[:-1]).all()
        assert ((ce - cs) <= msm.CHUNK).all() and ((ce - cs) >= 1).all()
        assert (keys[cs.astype(np.int64)] == keys[(ce - 1).astype(np.int64)]).all()  # never crosses a run
        levels += 1
        if K == R:
            break
        keys = keys[cs.astype(np.int64)]
    assert levels <= 3


@pytest.mark.parametrize("path", PATHS)
def test_small_scalars_long_buckets(path):
    n = 500  # scalars in 1..3: a few buckets of 100+ entries, split into chunks over two levels
    pts = rand_points(n)
    sc = np.zeros((n, 4), dtype=np.uint64)
    sc[:, 0] = new_rng().integers(1, 4, size=n)
    assert (run_msm(path, pts, sc) == ref_arkworks(pts, sc)).all()


@pytest.mark.parametrize("mode,chunk", [("balanced", 32), ("balanced", 7), ("runs", 32), ("runs", 5)])
@pytest.mark.parametrize("path", ["emu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_level0_modes_and_chunk_sizes(path, mode, chunk, monkeypatch):
    monkeypatch.setattr(msm, "LEVEL0", mode)
    monkeypatch.setattr(msm, "CHUNK", chunk)
    n = 300
    pts = rand_points(n)
    sc = fr_random(n, new_rng())
    sc[: n // 2] = 0
    sc[: n // 2, 0] = new_rng().integers(0, 3, size=n // 2)  # long buckets 1, 2
    pts[5] = 0
    assert (run_msm(path, pts, sc) == ref_arkworks(pts, sc)).all()


def test_lists_are_type_errors_not_attribute_errors():
    with pytest.raises(TypeError, match="points: expected a numpy or CuPy"):
        msm.msm([1], [2])


# ----------------------------------------------------------------------------- fewer host syncs


def _delta(before: dict[str, int]) -> dict[str, int]:
    after = _cuda.sync_counts()
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


@pytest.mark.parametrize("n", [1, 33, 300])
def test_prepared_points_and_deferred_check_same_result_fewer_syncs(n):
    """The pipeline's path (bases prepared once, scalar check deferred) gives the same point as
    the checked path, without the two checks' host syncs; rows gathered from the prepared bases
    (the tail MSMs' compacted bases) too."""
    pts, sc = rand_points(n), fr_random(n, new_rng())
    sc[: n // 3] = fr_from_ints([1] * (n // 3))  # ones and zeros: long buckets, reduction rounds
    sc[n // 3 : n // 2] = 0
    with emulated():
        c0 = _cuda.sync_counts()
        want = msm.msm_device(pts, sc)
        plain = _delta(c0)
        mont = msm.prepare_points(pts)
        chk = msm.DeferredCheck()
        c1 = _cuda.sync_counts()
        got = msm.msm_device(None, sc, mont=mont, deferred=chk)
        lean = _delta(c1)
        chk.raise_if_bad()
        idx = np.arange(0, n, 2)
        sub = msm.msm_device(None, sc[idx], mont=np.ascontiguousarray(mont[idx]))
        c2 = _cuda.sync_counts()
        ba = msm.batch_add_device(None, np.full(-(-n // 64), 0x5555555555555555, dtype=np.uint64), mont=mont)
        assert _delta(c2) == {}  # batch add over prepared points: no host sync at all
    assert np.array_equal(got, want) and np.array_equal(want, ref_arkworks(pts, sc))
    assert np.array_equal(sub, ref_arkworks(pts[idx], sc[idx]))
    assert np.array_equal(ba, msm.batch_add_cpu(pts, np.full(-(-n // 64), 0x5555555555555555, dtype=np.uint64)))
    assert plain == {"msm.points_check": 1, "msm.scalars_check": 1}  # the two checks; no size read-back
    assert lean == {}  # prepared bases and a deferred check: no host sync inside the MSM


def test_deferred_scalar_check_raises_later_with_the_same_message():
    pts, sc = rand_points(6), fr_random(6, new_rng())
    sc[4] = np.array([(R >> (64 * i)) & (2**64 - 1) for i in range(4)], dtype=np.uint64)  # == r
    with emulated():
        with pytest.raises(ValueError) as now:
            msm.msm_device(pts, sc)
        chk = msm.DeferredCheck()
        msm.msm_device(None, sc, mont=msm.prepare_points(pts), deferred=chk)  # no error yet
        with pytest.raises(ValueError) as later:
            chk.raise_if_bad()
        with pytest.raises(ValueError, match="expected 6 rows"):
            msm.msm_device(None, sc[:5], mont=msm.prepare_points(pts))
    assert str(later.value) == str(now.value) and "scalars[4]" in str(now.value)


class _FakeStream:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass

    def wait_event(self, ev):
        pass


class _FakeEvent:
    def __init__(self, **kw):
        pass

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass


class _FakeCupyStreams(_FakeCupy):
    """The emulated device plus no-op streams and events: enough for the pipeline's GpuBackend."""

    def __init__(self):
        super().__init__()
        self.asnumpy = lambda a, stream=None: np.asarray(a)
        # Device: the backend runs each method with its GPU current (one emulated device)
        self.cuda = types.SimpleNamespace(Stream=lambda non_blocking=True: _FakeStream(), Event=_FakeEvent, Device=lambda i=0: contextlib.nullcontext())


@pytest.mark.parametrize("defer, concurrent", [(False, False), (True, False), (True, True), (False, True)])
def test_gpu_backend_msm_and_batch_add_on_prepared_bases(defer, concurrent, monkeypatch):
    """GpuBackend's MSM driver (prepared bases, tail rows gathered, deferred scalar checks, results
    deferred on the device, side streams) on the emulated kernels, against arkworks; and its host
    syncs: only the MSMs' size read-backs while it submits, plus the result reads."""
    import threading

    from zkgpu.pipeline.gpu_backend import GpuBackend

    fake = _FakeCupyStreams()
    monkeypatch.setattr(_cuda, "cupy", lambda: fake)
    monkeypatch.setattr(msm, "_k", _emu_kernel)
    pts = rand_points(70)
    be = object.__new__(GpuBackend)
    be.cp, be._lock, be._side_free, be.device_id = fake, threading.Lock(), [], 0
    be.bases, be._mont, be._tables = {"l": pts}, {"l": msm.prepare_points(pts)}, {}  # plain bases (msm_bases="plain")
    sc = fr_random(70, new_rng())
    sc[:30] = fr_from_ints([1] * 30)
    idx = np.arange(3, 70, 3)
    bm = np.array([0x0F0F_0000_FFFF_0001, 0x3F], dtype=np.uint64)
    s = _FakeStream()
    c0 = _cuda.sync_counts()
    tails = be.msm_many({"l": (sc, None)}, s, concurrent, defer=defer)
    sub = be.msm("l", sc[idx], idx, s, defer=defer)
    ones = be.batch_add_many({"l": bm}, s, concurrent, defer=defer)
    mid = _delta(c0)
    got = {k: be.to_host(v) for k, v in {"full": tails["l"], "sub": sub, "ones": ones["l"]}.items()}
    assert np.array_equal(got["full"], ref_arkworks(pts, sc))
    assert np.array_equal(got["sub"], ref_arkworks(pts[idx], sc[idx]))
    assert np.array_equal(got["ones"], msm.batch_add_cpu(pts, bm))
    assert "msm.points_check" not in mid and "msm.scalars_check" not in mid
    assert ("result_d2h" in mid) == (not defer)  # deferred: read only by to_host, after the wait
    none = be.msm("l", sc[:0], np.zeros(0, dtype=np.int64), s, defer=defer)  # no significant scalar: the identity
    assert np.array_equal(be.to_host(none), np.zeros((1, 12), dtype=np.uint64))
    bad = sc.copy()
    bad[5] = np.array([(R >> (64 * i)) & (2**64 - 1) for i in range(4)], dtype=np.uint64)
    with pytest.raises(ValueError, match=r"scalars\[5\]"):
        be.to_host(be.msm("l", bad, None, s, defer=defer))
    with pytest.raises(ValueError, match="uint64 words"):
        be.batch_add("l", bm[:1], s)
