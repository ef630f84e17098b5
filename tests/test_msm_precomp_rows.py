"""The MSM over selected rows of a precomputed table (zkgpu/gpu/msm/precomp_rows.py, the appended kernel
``msm_precomp_rows_digits`` of kernels/msm_precomp.cu).

CPU: the kernel's source is there and compiles with the others (tests/test_kernels_compile.py compiles
every .cu); the real kernels compiled by g++ (tests/native/msm_emu.cpp includes msm_precomp.cu) against
msm_device over the gathered rows and arkworks, and GpuBackend.msm over tables on them; the GPU: against :func:`zkgpu.gpu.msm.pippenger.msm_device` over the gathered rows ``mont[idx]`` and
against arkworks, for seeded random rows (empty, one row, repeated rows, all rows, identity bases), with
no host sync when the scalar check is deferred. Every random draw comes from the test's seed."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_msm import _emu_kernel, _FakeCupyStreams, _FakeStream, emulated, rand_points, ref_arkworks

from seeding import current_seed, new_rng
from zkgpu.arith.field import fr_from_ints, fr_random
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.fr_device import DeferredCheck
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm import precomp as msm_precomp
from zkgpu.gpu.msm.precomp_rows import msm_precomputed_rows
from zkgpu.pipeline.gpu_backend import GpuBackend

KERNEL = "msm_precomp_rows_digits"


def test_kernel_is_appended_to_msm_precomp_cu():
    src = (_cuda.KERNEL_DIR / "msm_precomp.cu").read_text(encoding="utf-8")
    assert f"__global__ void {KERNEL}(" in src
    assert src.index(KERNEL) > src.index("msm_precomp_digits(")  # appended after the other helper's kernels


def _case(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    return {
        "empty": lambda: np.zeros(0, dtype=np.int64),
        "one": lambda: rng.integers(0, n, size=1),
        "repeated": lambda: np.concatenate([rng.integers(0, n, size=40), np.full(25, 7)]),
        "all": lambda: rng.permutation(n),
        "random": lambda: rng.integers(0, n, size=n // 3),
    }[kind]().astype(np.int64)


# ----------------------------------------------------------------------------- emu: the real kernels (g++), no GPU


def _table_emu(pts, c, monkeypatch):
    monkeypatch.setattr(msm_precomp, "_own", _emu_kernel)
    monkeypatch.setattr(msm_precomp, "free_bytes", lambda: 1 << 40)
    mont = msm.prepare_points(pts)
    return msm_precomp.PrecomputedBases.build(mont, c), mont


@pytest.mark.parametrize("kind", ["empty", "one", "repeated", "all", "random"])
@pytest.mark.parametrize("c", [3, 6, 9])
def test_emu_rows_equal_msm_device_over_gathered_rows(kind, c, monkeypatch):
    n, rng = 60, new_rng()
    pts = rand_points(n)
    pts[5] = 0  # an identity base
    idx = _case(kind, n, rng)
    sc = msm_random_scalars(idx.shape[0], rng)
    with emulated():
        table, mont = _table_emu(pts, c, monkeypatch)
        got = msm_precomputed_rows(table, sc, idx)
        if idx.size:
            assert np.array_equal(got, msm.msm_device(None, sc, mont=mont[idx])), f"seed {current_seed()}, {kind}, c={c}"
    if idx.size:
        assert np.array_equal(got, ref_arkworks(pts[idx], sc)), f"seed {current_seed()}, {kind}, c={c}"
    else:
        assert (got == 0).all() and got.shape == (1, 12)


def test_emu_rows_no_host_sync_and_errors(monkeypatch):
    n, rng = 50, new_rng()
    pts = rand_points(n)
    idx = rng.integers(0, n, size=30).astype(np.int64)
    sc = msm_random_scalars(30, rng)
    with emulated():
        table, _ = _table_emu(pts, 5, monkeypatch)
        before = _cuda.sync_counts()
        chk = DeferredCheck()
        got = msm_precomputed_rows(table, sc, idx, deferred=chk)
        assert _cuda.sync_counts() == before
        chk.raise_if_bad()
        with pytest.raises(ValueError, match=r"idx\[1\] = 50 is not a base row in \[0, 50\)"):
            msm_precomputed_rows(table, sc[:3], np.array([0, 50, 2]))
        with pytest.raises(ValueError, match=r"idx: expected \(3,\) integer rows"):
            msm_precomputed_rows(table, sc[:3], np.array([0, 1]))
    assert np.array_equal(got, ref_arkworks(pts[idx], sc))


@pytest.mark.parametrize("defer", [False, True])
def test_emu_gpu_backend_msm_over_tables(defer, monkeypatch):
    """GpuBackend.msm with msm_bases="precomputed" (a table per base set): the H-like full MSM and the tail over
    rows idx, on the emulated kernels, against arkworks."""
    fake = _FakeCupyStreams()
    monkeypatch.setattr(_cuda, "cupy", lambda: fake)
    monkeypatch.setattr(msm, "_k", _emu_kernel)
    n, rng = 64, new_rng()
    pts = rand_points(n)
    table, mont = _table_emu(pts, 7, monkeypatch)
    be = object.__new__(GpuBackend)
    be.cp, be._lock, be._side_free, be.device_id = fake, threading.Lock(), [], 0
    be.bases, be._mont, be._tables = {"l": pts}, {"l": mont}, {"l": table}
    sc = msm_random_scalars(n, rng)
    idx = np.sort(rng.choice(n, size=20, replace=False)).astype(np.int64)
    s = _FakeStream()
    full = be.to_host(be.msm("l", sc, None, s, defer=defer))
    sub = be.to_host(be.msm("l", sc[idx], idx, s, defer=defer))
    assert np.array_equal(full, ref_arkworks(pts, sc)) and np.array_equal(sub, ref_arkworks(pts[idx], sc[idx]))
    assert np.array_equal(be.to_host(be.msm("l", sc[:0], idx[:0], s, defer=defer)), np.zeros((1, 12), dtype=np.uint64))


# ----------------------------------------------------------------------------- gpu


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["empty", "one", "repeated", "all", "random"])
@pytest.mark.parametrize("c", [8, 13, 16])
def test_gpu_rows_equal_msm_device_over_gathered_rows(kind, c):
    cp = _cuda.cupy()
    n, rng = 600, new_rng()
    pts = rand_points(n)
    pts[5] = 0  # an identity base (its rows contribute nothing)
    mont = msm.prepare_points(cp.asarray(pts))
    table = msm_precomp.PrecomputedBases.build(mont, c)
    idx = _case(kind, n, rng)
    sc = msm_random_scalars(idx.shape[0], rng)
    for rows in (idx, cp.asarray(idx)):  # host rows (checked on the host) and device rows
        got = cp.asnumpy(msm_precomputed_rows(table, cp.asarray(sc), rows))
        if idx.size == 0:
            assert (got == 0).all()
            continue
        want = cp.asnumpy(msm.msm_device(None, cp.asarray(sc), mont=mont[cp.asarray(idx)]))
        assert (got == want).all(), f"seed {current_seed()}, {kind}, c={c}"
    if idx.size:
        assert (got == ref_arkworks(pts[idx], sc)).all(), f"seed {current_seed()}, {kind}, c={c}"


def msm_random_scalars(m: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform canonical Fr with some zeros and ones (the tails hold significant scalars; the kernel must not care)."""
    sc = fr_random(m, rng)
    if m >= 4:
        sc[0] = 0
        sc[1] = fr_from_ints([1])[0]
    return sc


@pytest.mark.gpu
def test_gpu_rows_no_host_sync_with_deferred_check():
    cp = _cuda.cupy()
    n, rng = 300, new_rng()
    table = msm_precomp.PrecomputedBases.build(msm.prepare_points(cp.asarray(rand_points(n))), 12)
    idx = cp.asarray(rng.integers(0, n, size=100).astype(np.int64))
    sc = cp.asarray(msm_random_scalars(100, rng))
    msm_precomputed_rows(table, sc, idx, deferred=DeferredCheck())  # compile first
    cp.cuda.Device().synchronize()
    before = _cuda.sync_counts()
    check = DeferredCheck()
    r = msm_precomputed_rows(table, sc, idx, deferred=check)
    assert _cuda.sync_counts() == before, f"host syncs: {before} -> {_cuda.sync_counts()}"
    cp.cuda.Device().synchronize()
    check.raise_if_bad()
    assert r.shape == (1, 12)


@pytest.mark.gpu
def test_gpu_rows_errors():
    cp = _cuda.cupy()
    n = 40
    table = msm_precomp.PrecomputedBases.build(msm.prepare_points(cp.asarray(rand_points(n))), 8)
    sc = cp.asarray(msm_random_scalars(3, new_rng()))
    with pytest.raises(ValueError, match=r"idx\[1\] = 40 is not a base row in \[0, 40\)"):
        msm_precomputed_rows(table, sc, np.array([0, 40, 2]))
    with pytest.raises(ValueError, match=r"idx\[2\] = -1 is not a base row"):
        msm_precomputed_rows(table, sc, cp.asarray(np.array([0, 1, -1])), check_rows=True)
    with pytest.raises(ValueError, match=r"idx: expected \(3,\) integer rows"):
        msm_precomputed_rows(table, sc, np.array([0, 1]))
    with pytest.raises(TypeError, match="PrecomputedBases"):
        msm_precomputed_rows(object(), sc, np.array([0, 1, 2]))
    bad = sc.copy()
    bad[1] = cp.asarray(np.array([2**64 - 1] * 4, dtype=np.uint64))
    with pytest.raises(ValueError, match="scalars"):
        msm_precomputed_rows(table, bad, np.array([0, 1, 2]))
