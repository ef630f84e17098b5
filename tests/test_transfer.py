"""Tests of zkgpu.transfer.paths (the H2D paths) and zkgpu.app.bench.transfer (the sweep, ``zkgpu bench h2d``).

The GPU tests run on the H200; the same tests run here against a fake CuPy (host memory,
``ctypes.memmove`` as the DMA) to check the Python plumbing.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import math
import sys
import time

import numpy as np
import pandas as pd
import pytest

import zkgpu.app.bench.transfer as bt
import zkgpu.transfer.paths as tr
from zkgpu.core import optional
from zkgpu.core.cuda import gpu_available
from zkgpu.transfer.host_alloc import CudaHostAllocator, PageableAllocator
from zkgpu.transfer.pinned_pool import PinnedPool

MIB = 1 << 20



# ---------------------------------------------------------------------------------------------
# CPU: everything else that runs without a GPU
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU behaviour")
@pytest.mark.parametrize("path", tr.PATHS)
def test_transfer_paths_raise_runtime_error_without_gpu(path):
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        tr.TRANSFER_PATHS[path](np.zeros(16, dtype=np.uint8))


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU behaviour")
def test_gpu_entry_points_without_gpu():
    with pytest.raises(RuntimeError):
        bt.bandwidth_sweep([MIB], repeat=1)
    with pytest.raises(RuntimeError):
        bt.host_alloc_costs([MIB], repeat=1)
    with pytest.raises(RuntimeError):
        CudaHostAllocator().alloc(10)
    assert tr.is_pinned(np.zeros(4)) is False
    from click.testing import CliRunner

    res = CliRunner().invoke(bt.bench_command, ["--max-size", "1MiB"])
    assert res.exit_code != 0 and "needs a CUDA GPU" in res.output


def test_sweep_argument_validation_happens_first():
    with pytest.raises(ValueError, match="unknown transfer path"):
        bt.bandwidth_sweep([MIB], paths=["pageable", "teleport"])
    with pytest.raises(ValueError):
        bt.bandwidth_sweep([0])
    with pytest.raises(ValueError):
        bt.bandwidth_sweep([MIB], repeat=0)
    with pytest.raises(ValueError):
        bt.bandwidth_sweep([MIB], fresh=())


def test_default_sizes_and_paths():
    assert bt.DEFAULT_SIZES[0] == MIB and bt.DEFAULT_SIZES[-1] == 4 << 30
    assert all(b == 4 * a for a, b in itertools.pairwise(bt.DEFAULT_SIZES))
    assert set(tr.PATHS) == {"pageable", "pageable_memcpy", "cupy_asarray", "registered", "pinned_staging", "pinned_pool", "pinned_raw"}
    assert "h2d" == bt.bench_command.name


def test_parse_bytes():
    assert bt._parse_bytes("1MiB") == MIB and bt._parse_bytes("4GiB") == 4 << 30
    assert bt._parse_bytes("4096") == 4096 and bt._parse_bytes("256m") == 256 * MIB
    with pytest.raises(ValueError):
        bt._parse_bytes("lots")


def test_fill_pattern_any_size():
    tile = bt._pattern()
    for n in (1, 1000, bt._TILE, 3 * bt._TILE + 17):
        buf = np.empty(n, dtype=np.uint8)
        bt._fill(buf, tile)
        expect = np.resize(tile, n)
        assert np.array_equal(buf, expect)


def test_host_bytes_validation():
    with pytest.raises(TypeError):
        tr._host_bytes([1, 2])
    with pytest.raises(ValueError, match="C-contiguous"):
        tr._host_bytes(np.zeros((4, 4))[:, 1])
    with pytest.raises(ValueError, match="empty"):
        tr._host_bytes(np.zeros(0))
    v = tr._host_bytes(np.zeros((3, 4), dtype=np.uint64))
    assert v.dtype == np.uint8 and v.shape == (96,)


def _synthetic_sweep() -> pd.DataFrame:
    rows = []
    for size in (MIB, 256 * MIB, 1 << 30):
        for path, g in (("pinned_pool", 50.0), ("pinned_raw", 52.0), ("pageable", 7.0)):
            for fresh in (False, True):
                for r in range(3):
                    gbps = g * (0.5 if fresh else 1.0) + r * 0.1
                    row = dict.fromkeys(bt.SWEEP_COLUMNS, math.nan)
                    row.update(path=path, size_bytes=size, fresh_buffer=fresh, repeat=r, gbps=gbps, stream_ms=size / gbps / 1e6, host_ms=0.1, src_pinned=path != "pageable")
                    rows.append(row)
    return pd.DataFrame(rows, columns=list(bt.SWEEP_COLUMNS))


def test_summarize_sweep_medians():
    df = _synthetic_sweep()
    s = bt.summarize_sweep(df)
    assert len(s) == 3 * 3 * 2
    assert {"path", "size_bytes", "fresh_buffer", "n", "gbps", "stream_ms", "host_ms"} <= set(s.columns)
    row = s[(s.path == "pinned_pool") & (s.size_bytes == MIB) & (~s.fresh_buffer)].iloc[0]
    assert row["n"] == 3 and row["gbps"] == pytest.approx(50.1)
    with pytest.raises(ValueError):
        bt.summarize_sweep(df.drop(columns=["path"]))


def test_pool_efficiency_check():
    df = _synthetic_sweep()
    eff = bt.pool_efficiency(df)
    assert list(eff.size_bytes) == [256 * MIB, 1 << 30]  # 1 MiB is below the 256 MiB floor
    assert eff.ratio.iloc[0] == pytest.approx(50.1 / 52.1)
    assert eff.attrs["passed"] is True and eff.ok.all()
    slow = df.copy()
    slow.loc[slow.path == "pinned_pool", "gbps"] = 30.0
    eff2 = bt.pool_efficiency(slow)
    assert eff2.attrs["passed"] is False and not eff2.ok.any()
    with pytest.raises(ValueError, match="no size"):
        bt.pool_efficiency(df[df.path != "pinned_raw"])
    with pytest.raises(ValueError):
        bt.pool_efficiency(df, min_size=2 << 30)


def test_transfer_result_row():
    r = tr.TransferResult(path="registered", nbytes=10**9, host_ms=1.0, stream_ms=20.0, wall_ms=21.0, gbps=50.0, overhead_ms=5.0, extra={"register_ms": 4.0, "unregister_ms": 1.0}, src_pinned=True, dst=object())
    assert r.effective_gbps == pytest.approx(40.0)
    row = r.as_row()
    assert row["register_ms"] == 4.0 and "dst" not in row and row["effective_gbps"] == pytest.approx(40.0)
    assert "dst" not in repr(r)


# ---------------------------------------------------------------------------------------------
# GPU (run by the lead on the H200): quick, < 60 s together
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def cp():
    from zkgpu.core.cuda import cupy

    return cupy()


def _random_bytes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


GPU_SIZES = [MIB, 4 * MIB + 12345, 4096 * 3 + 5]


@pytest.mark.gpu
@pytest.mark.parametrize("n", GPU_SIZES)
@pytest.mark.parametrize("path", tr.PATHS)
def test_gpu_each_path_copies_the_right_bytes(cp, path, n):
    import cupyx

    data = _random_bytes(n, seed=n + len(path))
    pool = PinnedPool()  # the CUDA allocator on a GPU machine
    try:
        stream = cp.cuda.Stream(non_blocking=True)
        dst = cp.zeros(n, dtype=cp.uint8)
        if path == "pinned_pool":
            src = pool.checkout(n)
            src[:] = data
            res = tr.pinned_pool(src, dst, stream=stream)
            pool.checkin(src)
        elif path == "pinned_raw":
            src = cupyx.empty_pinned(n, dtype=np.uint8)
            src[:] = data
            res = tr.pinned_raw(src, dst, stream=stream)
        elif path == "pinned_staging":
            with pool.checkout(n + 100) as staging:
                res = tr.pinned_staging(data, dst, stream=stream, staging=staging)
        elif path == "cupy_asarray":
            res = tr.cupy_asarray(data, stream=stream)
            dst = res.dst
            assert res.extra["staging_bytes"] >= n  # pageable source: staged through pinned memory
        else:
            res = tr.TRANSFER_PATHS[path](data, dst, stream=stream)
        assert res.dst is dst
        assert np.array_equal(cp.asnumpy(dst), data)
        assert res.path == path and res.nbytes == n
        assert res.gbps > 0 and res.stream_ms > 0 and res.host_ms >= 0 and res.wall_ms >= res.host_ms
        assert math.isfinite(res.effective_gbps) and res.effective_gbps <= res.gbps + 1e-9
        assert res.src_pinned == (path in ("registered", "pinned_pool", "pinned_raw"))
        if path == "registered":
            assert res.extra["register_ms"] >= 0 and res.extra["unregister_ms"] >= 0
            assert res.overhead_ms == pytest.approx(res.extra["register_ms"] + res.extra["unregister_ms"])
            assert not tr.is_pinned(data)  # unregistered again
        if path == "pinned_staging":
            assert res.extra["stage_ms"] >= 0
    finally:
        pool.close()


@pytest.mark.gpu
def test_gpu_dtype_shape_independent_and_default_dst(cp):
    host = np.random.default_rng(1).integers(0, 2**63, (1000, 4), dtype=np.uint64)
    dst = cp.empty((1000, 8), dtype=cp.uint32)
    res = tr.pageable(host, dst)
    assert res.dst is dst and np.array_equal(cp.asnumpy(dst).view(np.uint64), host)
    res2 = tr.pageable_memcpy(host)  # dst allocated: uint8 bytes
    assert res2.dst.dtype == cp.uint8 and np.array_equal(cp.asnumpy(res2.dst), host.reshape(-1).view(np.uint8))
    res3 = tr.cupy_asarray(host)
    assert res3.dst.shape == host.shape and res3.dst.dtype == cp.uint64
    res4 = tr.pinned_staging(host)  # allocates and frees its own staging buffer
    assert res4.extra["alloc_ms"] >= 0 and res4.extra["free_ms"] >= 0
    assert np.array_equal(cp.asnumpy(res4.dst), host.reshape(-1).view(np.uint8))


@pytest.mark.gpu
def test_gpu_errors(cp):
    host = np.zeros(1024, dtype=np.uint8)
    with pytest.raises(ValueError, match="bytes"):
        tr.pageable(host, cp.empty(1000, dtype=cp.uint8))
    with pytest.raises(TypeError):
        tr.pageable(host, np.empty(1024, dtype=np.uint8))
    with pytest.raises(ValueError, match="C-contiguous"):
        tr.pageable(np.zeros((64, 64))[:, 0])
    with pytest.raises(ValueError, match="not page-locked"):
        tr.pinned_pool(host)
    with pytest.raises(ValueError, match="not page-locked"):
        tr.pinned_staging(host, staging=np.empty(2048, dtype=np.uint8))
    with pytest.raises(ValueError):
        tr.cupy_asarray(host, cp.empty(1024, dtype=cp.uint8))
    import cupyx

    pinned = cupyx.empty_pinned(1024, dtype=np.uint8)
    with pytest.raises(ValueError, match="already page-locked"):
        tr.registered(pinned)
    with pytest.raises(ValueError, match="bytes"):
        tr.pinned_staging(np.zeros(4096, dtype=np.uint8), staging=pinned)
    res = tr.pinned_pool(host, require_pinned=False)
    assert res.src_pinned is False


@pytest.mark.gpu
def test_gpu_cupy_asarray_from_pinned_source_is_not_staged(cp):
    import cupyx

    src = cupyx.empty_pinned(MIB, dtype=np.uint8)
    src[:] = 5
    res = tr.cupy_asarray(src)
    assert res.extra["staging_bytes"] == 0 and res.src_pinned
    assert int(res.dst.sum()) == 5 * MIB


@pytest.mark.gpu
def test_gpu_pool_hands_out_real_pinned_memory(cp):
    rt = cp.cuda.runtime
    with PinnedPool() as pool:
        assert isinstance(pool.allocator, CudaHostAllocator) and pool.pinned
        with pool.checkout(shape=(1000, 4), dtype=np.uint64) as buf:
            attrs = rt.pointerGetAttributes(buf.__array_interface__["data"][0])
            assert attrs.type == rt.memoryTypeHost
            assert buf.pinned and tr.is_pinned(buf)
            buf[:] = 7
            assert int(buf.sum()) == 7 * 4000
        with pool.checkout_abc(1000) as abc:
            assert abc.pinned and all(tr.is_pinned(x) for x in abc)
        assert pool.stats().reuses >= 1
    assert not tr.is_pinned(np.zeros(1000))
    with PinnedPool(PageableAllocator()) as pp, pp.checkout(4096) as b:
        assert not tr.is_pinned(b)


@pytest.mark.gpu
def test_gpu_small_sweep_columns_and_helpers(cp):
    sizes = [MIB, 4 * MIB]
    df = bt.bandwidth_sweep(sizes, repeat=2, warmup=1)
    assert list(df.columns) == list(bt.SWEEP_COLUMNS)
    assert len(df) == len(sizes) * len(tr.PATHS) * 2 * 2
    assert (df.gbps > 0).all() and (df.stream_ms > 0).all() and df.verified.notna().all() and df.verified.all()
    assert set(df.path) == set(tr.PATHS) and set(df.fresh_buffer) == {False, True}
    pinned = df[df.path.isin(["pinned_pool", "pinned_raw", "registered"])]
    assert pinned.src_pinned.all() and not df[df.path == "pageable"].src_pinned.any()
    assert (df[df.path == "registered"].register_ms >= 0).all()
    assert (df[df.path == "cupy_asarray"].staging_bytes >= df[df.path == "cupy_asarray"].size_bytes).all()
    fresh_pool = df[(df.path == "pinned_pool") & df.fresh_buffer]
    assert (fresh_pool.alloc_ms > 0).all() and (fresh_pool.overhead_ms >= fresh_pool.alloc_ms).all()
    s = bt.summarize_sweep(df)
    assert len(s) == len(sizes) * len(tr.PATHS) * 2 and (s.n == 2).all()
    eff = bt.pool_efficiency(df, min_size=MIB)
    assert list(eff.size_bytes) == sizes and (eff.ratio > 0).all()
    costs = bt.host_alloc_costs([MIB], repeat=1)
    assert set(costs.op) == {"hostAlloc", "freeHost", "touch", "hostRegister", "hostUnregister"}
    assert (costs.ms >= 0).all()


@pytest.mark.gpu
def test_gpu_bench_command_writes_run_folder(cp, tmp_path):
    from click.testing import CliRunner

    res = CliRunner().invoke(bt.bench_command, ["--out", str(tmp_path), "--max-size", "4MiB", "--repeat", "1", "--warmup", "0", "--alloc-repeat", "1"])
    assert res.exit_code == 0, res.output
    (run,) = list(tmp_path.iterdir())
    for name in ("sweep.csv", "sweep.parquet", "summary.csv", "host_alloc.csv", "manifest.json"):
        assert (run / name).exists(), name
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["sizes"] == [MIB, 4 * MIB] and manifest["repeat"] == 1
    df = pd.read_parquet(run / "sweep.parquet")
    assert list(df.columns) == list(bt.SWEEP_COLUMNS) and len(df) == 2 * len(tr.PATHS) * 2


def test_sweep_frame_dtypes_and_parquet_roundtrip(tmp_path):
    rows = []
    for i, verified in enumerate((True, math.nan, False)):
        row = dict.fromkeys(bt.SWEEP_COLUMNS, math.nan)
        row.update(path="pageable", size_bytes=MIB, fresh_buffer=bool(i % 2), repeat=i, host_ms=1.0, stream_ms=1.2, gbps=0.87, src_pinned=False, verified=verified)
        rows.append(row)
    df = bt._sweep_frame(rows)
    assert list(df.columns) == list(bt.SWEEP_COLUMNS)
    assert str(df["verified"].dtype) == "boolean" and df["verified"].isna().sum() == 1
    assert df["register_ms"].dtype == np.float64 and df["size_bytes"].dtype == np.int64
    df.to_parquet(tmp_path / "s.parquet", index=False)
    df.to_csv(tmp_path / "s.csv", index=False)
    back = pd.read_parquet(tmp_path / "s.parquet")
    assert list(back.columns) == list(bt.SWEEP_COLUMNS) and len(back) == 3



# ---------------------------------------------------------------------------------------------
# CPU: the GPU tests above, run against a fake CuPy (host memory, ctypes.memmove as the DMA).
# It checks the Python plumbing of every path, the sweep, the cost table and `bench h2d` here;
# the real behaviour (pinned memory, bandwidth) is checked by the gpu tests on the H200.
# ---------------------------------------------------------------------------------------------


class _FakeRuntime:
    """``cupy.cuda.runtime`` over host memory: page-locked ranges are bookkept, copies are memmove."""

    def __init__(self):
        self.ranges: dict[int, tuple[int, object]] = {}  # start -> (end, keepalive or None)
        # the names as cupy.cuda.runtime spells them (camelCase, after the CUDA runtime API)
        vars(self).update(memcpyHostToDevice=1, memoryTypeUnregistered=0, memoryTypeHost=1, CUDARuntimeError=RuntimeError,
                          hostAlloc=self.host_alloc, freeHost=self.free_host, hostRegister=self.host_register,
                          hostUnregister=self.host_unregister, pointerGetAttributes=self.pointer_get_attributes,
                          memcpyAsync=self.memcpy_async)

    def _find(self, ptr):
        for start, (end, _) in self.ranges.items():
            if start <= ptr < end:
                return start
        return None

    def host_alloc(self, n, flags):
        buf = np.empty(n + 4096, dtype=np.uint8)
        ptr = buf.__array_interface__["data"][0]
        ptr += (-ptr) % 4096
        self.ranges[ptr] = (ptr + n, buf)
        return ptr

    def free_host(self, ptr):
        assert self.ranges.pop(ptr)[1] is not None, "freeHost of registered memory"

    def host_register(self, ptr, n, flags):
        if self._find(ptr) is not None or self._find(ptr + n - 1) is not None:
            raise RuntimeError("cudaErrorHostMemoryAlreadyRegistered")
        self.ranges[ptr] = (ptr + n, None)

    def host_unregister(self, ptr):
        assert self.ranges.pop(ptr)[1] is None, "hostUnregister of hostAlloc'd memory"

    def pointer_get_attributes(self, ptr):
        class A:
            pass

        a = A()
        a.type = 1 if self._find(ptr) is not None else 0
        return a

    def memcpy_async(self, dst, src, n, kind, stream):
        assert kind == 1
        ctypes.memmove(dst, src, n)


class _FakeDeviceArray(np.ndarray):
    @property
    def data(self):
        class D:
            pass

        d = D()
        d.ptr = self.__array_interface__["data"][0]
        return d

    def set(self, arr, stream=None):
        assert isinstance(arr, np.ndarray) and arr.shape == self.shape and arr.dtype == self.dtype
        np.copyto(np.asarray(self).view(np.ndarray), arr)

    def get(self):
        return np.array(self.view(np.ndarray))


def _make_fake_cupy():
    import types

    cp = types.SimpleNamespace()
    rt = _FakeRuntime()
    cp.ndarray = _FakeDeviceArray
    cp.uint8, cp.uint32, cp.uint64 = np.uint8, np.uint32, np.uint64
    cp.empty = lambda shape, dtype=float: np.empty(shape, dtype).view(_FakeDeviceArray)
    cp.zeros = lambda shape, dtype=float: np.zeros(shape, dtype).view(_FakeDeviceArray)
    cp.asnumpy = lambda a: np.array(np.asarray(a).view(np.ndarray))
    state = {"stream": None, "allocator": None}

    class Stream:
        ptr = 0

        def __init__(self, non_blocking=False):
            self.non_blocking = non_blocking

        def synchronize(self):
            pass

        def __enter__(self):
            state["prev"] = state["stream"]
            state["stream"] = self
            return self

        def __exit__(self, *exc):
            state["stream"] = state.pop("prev")

    class Event:
        def record(self, stream=None):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    class PinnedPoolFake:
        def __init__(self):
            self.blocks = []

        def malloc(self, size):
            ptr = rt.hostAlloc(size, 1)
            self.blocks.append(ptr)
            return ptr

        def free_all_blocks(self):
            pass

    ppool = PinnedPoolFake()
    state["allocator"] = ppool.malloc

    def set_pinned_memory_allocator(a=None):
        state["allocator"] = a or ppool.malloc

    def asarray(a):
        a = np.asarray(a)
        ptr = a.__array_interface__["data"][0]
        if rt.pointerGetAttributes(ptr).type != 1:
            state["allocator"](a.nbytes)  # the staging buffer CuPy would take
        return np.array(a).view(_FakeDeviceArray)

    cp.asarray = asarray
    cp.get_default_pinned_memory_pool = lambda: ppool
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    cp.cuda = types.SimpleNamespace(
        runtime=rt,
        Stream=Stream,
        Event=Event,
        get_current_stream=lambda: state["stream"] or Stream(),
        get_elapsed_time=lambda s, e: (e.t - s.t) * 1e3 + 1e-6,
        Device=lambda *a: types.SimpleNamespace(synchronize=lambda: None),
        set_pinned_memory_allocator=set_pinned_memory_allocator,
    )

    def empty_pinned(shape, dtype=float):
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        ptr = rt.hostAlloc(n, 1)
        return np.frombuffer((ctypes.c_ubyte * n).from_address(ptr), dtype=np.uint8).view(dtype).reshape(shape)

    cupyx = types.SimpleNamespace(empty_pinned=empty_pinned)
    return cp, cupyx


@pytest.fixture
def fake_cp(monkeypatch):
    import zkgpu.core.cuda as cuda_mod

    cp, cupyx = _make_fake_cupy()
    monkeypatch.setattr(cuda_mod, "cupy", lambda: cp)
    monkeypatch.setattr(cuda_mod, "gpu_available", lambda: True)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.setattr(optional, "cupyx", lambda: cupyx)
    return cp


@pytest.mark.parametrize("n", GPU_SIZES)
@pytest.mark.parametrize("path", tr.PATHS)
def test_fake_cupy_each_path(fake_cp, path, n):
    test_gpu_each_path_copies_the_right_bytes(fake_cp, path, n)


def test_fake_cupy_dtype_shape_errors_and_pool(fake_cp):
    test_gpu_dtype_shape_independent_and_default_dst(fake_cp)
    test_gpu_errors(fake_cp)
    test_gpu_cupy_asarray_from_pinned_source_is_not_staged(fake_cp)
    test_gpu_pool_hands_out_real_pinned_memory(fake_cp)
    assert not fake_cp.cuda.runtime.ranges or all(v[1] is not None for v in fake_cp.cuda.runtime.ranges.values())  # nothing left registered


def test_fake_cupy_sweep_and_bench(fake_cp, tmp_path):
    test_gpu_small_sweep_columns_and_helpers(fake_cp)
    test_gpu_bench_command_writes_run_folder(fake_cp, tmp_path)


def test_fake_cupy_sweep_detects_wrong_bytes(fake_cp, monkeypatch):
    rt = fake_cp.cuda.runtime
    real = rt.memcpyAsync
    monkeypatch.setattr(rt, "memcpyAsync", lambda d, s, n, k, st: real(d, s, n - 1, k, st))  # drop the last byte
    with pytest.raises(RuntimeError, match="wrong bytes"):
        bt.bandwidth_sweep([MIB], paths=["pinned_raw"], fresh=(False,), repeat=1, warmup=0)


def test_fake_cupy_sweep_time_budget(fake_cp):
    with pytest.warns(RuntimeWarning, match="time budget"):
        df = bt.bandwidth_sweep([MIB, 4 * MIB], paths=["pinned_pool"], fresh=(False,), repeat=1, warmup=0, time_budget_s=0.0)
    assert df.attrs["skipped_sizes"] == [MIB, 4 * MIB] and len(df) == 0


@pytest.mark.gpu
def test_gpu_bench_command_large_sizes_run_a_path_subset(cp, tmp_path):
    """Sizes from --large-from run only the --large-path paths with reused buffers (the 4 GiB
    points of the full sweep), and --verify-max limits the byte comparison to small sizes."""
    from click.testing import CliRunner

    args = ["--out", str(tmp_path), "--max-size", "4MiB", "--repeat", "1", "--warmup", "0", "--alloc-repeat", "0",
            "--large-from", "4MiB", "--large-path", "pinned_raw", "--large-path", "pageable", "--verify-max", "1MiB"]
    res = CliRunner().invoke(bt.bench_command, args)
    assert res.exit_code == 0, res.output
    (run,) = list(tmp_path.iterdir())
    df = pd.read_parquet(run / "sweep.parquet")
    big = df[df.size_bytes == 4 * MIB]
    assert set(big.path) == {"pinned_raw", "pageable"} and not big.fresh_buffer.any()
    assert len(df[df.size_bytes == MIB]) == 2 * len(tr.PATHS)
    assert big.verified.isna().all() or not big.verified.astype(bool).any()
    assert json.loads((run / "manifest.json").read_text())["large_sizes"]["from_bytes"] == 4 * MIB


def test_fake_cupy_bench_large_sizes(fake_cp, tmp_path):
    test_gpu_bench_command_large_sizes_run_a_path_subset(fake_cp, tmp_path)
