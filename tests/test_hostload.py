"""zkgpu.transfer.hostload: the host memory-bandwidth load (CPU), its records; zkgpu.app.bench.hostload: H2D under load (GPU)."""

from __future__ import annotations

import dataclasses
import json
import time
import types

import numpy as np
import pytest
from click.testing import CliRunner

from zkgpu.app.bench.hostload import LOAD_COLUMNS, h2d_under_load
from zkgpu.transfer import hostload
from zkgpu.transfer.hostload import HostMemoryLoad, LoadStats

MIB = 1 << 20


def test_load_moves_bytes_and_stops():
    load = HostMemoryLoad(2, 4 * MIB)
    with load:
        assert load.running
        mark = load.snapshot()
        time.sleep(0.2)
        s = load.since(mark)
    assert not load.running
    assert isinstance(s, LoadStats) and s.threads == 2 and s.buffer_bytes == 4 * MIB
    assert s.traffic_bytes > 0 and s.gbps > 0 and s.seconds >= 0.2
    assert s.traffic_bytes % (2 * MIB) == 0  # whole chunks, read + write counted
    assert load.stop().traffic_bytes == 0  # stopping again is a no-op
    assert not any(t.name.startswith("zkgpu-hostload") and t.is_alive() for t in __import__("threading").enumerate())


def test_zero_threads_is_a_no_op_control():
    with HostMemoryLoad(0) as load:
        mark = load.snapshot()
        s = load.since(mark)
    assert s.traffic_bytes == 0 and s.gbps == 0.0 and dataclasses.asdict(s)["threads"] == 0


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        ({"threads": -1}, ValueError, "threads must be >= 0, got -1"),
        ({"threads": True}, TypeError, "threads must be an int, got bool"),
        ({"threads": 1.5}, TypeError, "threads must be an int"),
        ({"threads": 1, "buffer_bytes": 100}, ValueError, "buffer_bytes must be >= 4096, got 100"),
        ({"threads": 1, "buffer_bytes": 5000}, ValueError, "multiple of 4096, got 5000"),
    ],
)
def test_bad_settings_are_named(kw, exc, match):
    with pytest.raises(exc, match=match):
        HostMemoryLoad(**kw)


def test_start_twice_is_an_error():
    load = HostMemoryLoad(1, 4096)
    with load, pytest.raises(RuntimeError, match="already running"):
        load.start()


def test_a_failing_thread_is_reported_by_stop(monkeypatch):
    def boom(dst, src):
        raise MemoryError("simulated")

    shim = types.SimpleNamespace(empty=np.empty, uint8=np.uint8, integer=np.integer, copyto=boom)
    monkeypatch.setattr(hostload, "np", shim)
    load = HostMemoryLoad(2, 4096).start()
    time.sleep(0.05)
    with pytest.raises(RuntimeError, match="host load thread failed.*simulated"):
        load.stop()
    assert not load.running


def test_h2d_under_load_needs_a_gpu_or_valid_arguments():
    with pytest.raises(ValueError, match="paths must be a non-empty subset"):
        h2d_under_load([0], paths=("nope",))
    with pytest.raises(ValueError, match="load level must be >= 0, got -2"):
        h2d_under_load([-2])


def test_bench_load_cli_without_gpu(monkeypatch):
    from zkgpu.app.cli import main
    from zkgpu.core import cuda as _cuda

    monkeypatch.setattr(_cuda, "gpu_available", lambda: False)
    r = CliRunner().invoke(main, ["bench", "load", "--levels", "0,2"])
    assert r.exit_code != 0 and "needs a CUDA GPU" in r.output


def test_record_under_host_load_keeps_the_load_in_the_manifest(tmp_path):
    from zkgpu.app.record import record

    run = record(tmp_path, device="cpu", n=1 << 6, partitions=2, scenarios=["baseline"], host_load=1)
    m = json.loads((run / "manifest.json").read_text())
    assert m["host_load"] == {"threads": 1, "buffer_bytes": hostload.DEFAULT_BUFFER_BYTES}
    hl = m["scenarios"]["baseline"]["host_load"]
    assert hl["threads"] == 1 and hl["traffic_bytes"] > 0 and hl["gbps"] > 0
    assert any("host memory load" in n for n in m["notes"])
    with pytest.raises(ValueError, match="threads must be >= 0"):
        record(tmp_path, device="cpu", n=1 << 6, partitions=2, scenarios=["baseline"], host_load=-1)


@pytest.mark.gpu
def test_h2d_under_load_on_gpu():
    df = h2d_under_load([0, 1], size_bytes=8 * MIB, repeat=2, warmup=1, buffer_bytes=16 * MIB)
    assert list(df.columns) == list(LOAD_COLUMNS)
    assert len(df) == 2 * 2 * 2 and (df["gbps"] > 0).all()
    assert (df.loc[df["load_threads"] == 1, "load_gbps"] >= 0).all()
    assert (df.loc[df["load_threads"] == 0, "load_gbps"] == 0).all()


def test_a_thread_that_cannot_start_stops_the_others(monkeypatch):
    import threading

    real_start = threading.Thread.start
    calls = {"n": 0}

    def start(self):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    load = HostMemoryLoad(3, 4096)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        load.start()
    monkeypatch.setattr(threading.Thread, "start", real_start)
    assert not load.running
    assert not any(t.name.startswith("zkgpu-hostload") and t.is_alive() for t in threading.enumerate())


def test_the_body_error_wins_over_a_load_failure(monkeypatch):
    def boom(dst, src):
        raise MemoryError("simulated")

    monkeypatch.setattr(hostload, "np", types.SimpleNamespace(empty=np.empty, uint8=np.uint8, integer=np.integer, copyto=boom))
    with pytest.raises(KeyError) as info, HostMemoryLoad(1, 4096):
        time.sleep(0.05)
        raise KeyError("body")
    assert any("host load thread failed" in n for n in getattr(info.value, "__notes__", []))


def test_record_keeps_its_manifest_when_a_load_thread_fails(tmp_path, monkeypatch):
    from zkgpu.app.record import record

    calls = {"n": 0}

    def flaky(dst, src):
        calls["n"] += 1
        if calls["n"] > 3:
            raise MemoryError("simulated")
        np.copyto(dst, src)

    monkeypatch.setattr(hostload, "np", types.SimpleNamespace(empty=np.empty, uint8=np.uint8, integer=np.integer, copyto=flaky))
    run = record(tmp_path, device="cpu", n=1 << 6, partitions=2, scenarios=["baseline"], host_load=1)
    m = json.loads((run / "manifest.json").read_text())
    assert any("HOST LOAD FAILED" in n for n in m["notes"]) and "events" in m["scenarios"]["baseline"]


def test_record_with_a_load_that_cannot_allocate_leaves_no_folder(tmp_path, monkeypatch):
    from zkgpu.app.record import record

    def no_memory(*a, **k):
        raise MemoryError("no room")

    monkeypatch.setattr(hostload, "np", types.SimpleNamespace(empty=no_memory, uint8=np.uint8, integer=np.integer, copyto=np.copyto))
    with pytest.raises(MemoryError, match="no room"):
        record(tmp_path, device="cpu", n=1 << 6, partitions=2, scenarios=["baseline"], host_load=2)
    assert list(tmp_path.iterdir()) == []


def test_bench_load_rejects_bad_levels(monkeypatch):
    from zkgpu.app.cli import main
    from zkgpu.core import cuda as _cuda

    monkeypatch.setattr(_cuda, "gpu_available", lambda: True)
    for bad in ("-1", "", "a,b"):
        r = CliRunner().invoke(main, ["bench", "load", "--levels", bad])
        assert r.exit_code == 2 and "--levels" in r.output, (bad, r.output)
