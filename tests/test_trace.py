"""zkgpu.pipeline.trace: NVTX balance, event table, exact cuzk line formats, never-truncating writers."""

from __future__ import annotations

import re
import threading
from collections import defaultdict

import pandas as pd
import pytest

from zkgpu.core.events import COLUMNS
from zkgpu.pipeline import trace
from zkgpu.pipeline.trace import (
    PHASE_LINES,
    LogWriter,
    NullNvtx,
    Tracer,
    default_nvtx,
    info_line,
    ntt_h_line,
    timeline_line,
    write_events_parquet,
)


class CountingNvtx:
    """Fake NVTX backend: per-thread push/pop depth and process-wide start/end handles."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth: dict[int, int] = defaultdict(int)
        self.max_depth: dict[int, int] = defaultdict(int)
        self.pushes = 0
        self.pops = 0
        self.negative = False
        self.open: set[int] = set()
        self.next = 0
        self.messages: list[str] = []

    def push(self, message: str) -> None:
        t = threading.get_ident()
        with self.lock:
            self.pushes += 1
            self.depth[t] += 1
            self.max_depth[t] = max(self.max_depth[t], self.depth[t])
            self.messages.append(message)

    def pop(self) -> None:
        t = threading.get_ident()
        with self.lock:
            self.pops += 1
            self.depth[t] -= 1
            self.negative |= self.depth[t] < 0

    def start(self, message: str) -> int:
        with self.lock:
            self.next += 1
            self.open.add(self.next)
            return self.next

    def end(self, handle: int) -> None:
        with self.lock:
            self.open.remove(handle)

    def balanced(self) -> bool:
        return self.pushes == self.pops and not self.negative and all(d == 0 for d in self.depth.values()) and not self.open


def test_nested_phases_balance_and_record():
    nv = CountingNvtx()
    tr = Tracer("t", nvtx=nv)
    with tr.phase("mutex_held", worker=0, partition=1) as mh:
        with tr.phase("ntt_msm_h", worker=0, partition=1, fields={"gpu_tid": 0}) as ph:
            with tr.phase("h2d", worker=0, partition=1, bytes=96):
                pass
            ph.bytes = 96
        mh.fields.update(mutex_held_ms=1, total_start_fn_ms=2)
    assert nv.balanced() and nv.pushes == 3 and max(nv.max_depth.values()) == 3
    assert "ntt_msm_h p1 w0" in nv.messages
    ev = tr.events()
    assert list(ev.columns) == COLUMNS
    assert list(ev["phase"]) == ["mutex_held", "ntt_msm_h", "h2d"]
    assert (ev["end_ns"] >= ev["start_ns"]).all() and (ev["start_ns"] >= 0).all()
    assert ev.loc[ev.phase == "h2d", "bytes"].iloc[0] == 96 and ev["gpu"].iloc[0] == 0
    assert ev["gpu_ms"].isna().all()  # no stream given
    # the body ran inside the interval
    outer, inner = ev.iloc[0], ev.iloc[1]
    assert outer.start_ns <= inner.start_ns <= inner.end_ns <= outer.end_ns


def test_nvtx_balanced_when_body_raises_and_no_line():
    nv = CountingNvtx()
    tr = Tracer("t", nvtx=nv)
    with pytest.raises(ZeroDivisionError), tr.phase("batch_add", worker=1, partition=0), tr.phase("h2d", worker=1, partition=0):
        _ = 1 / 0
    with pytest.raises(KeyboardInterrupt), tr.phase("prep_msm", partition=0):
        raise KeyboardInterrupt
    assert nv.balanced()
    ev = tr.events()
    assert len(ev) == 3 and ev["detail"].str.contains("error=").all()
    assert tr.log.lines == []  # a failed step prints no timing line (as upstream)


def test_nvtx_balanced_across_threads_and_spans():
    nv = CountingNvtx()
    tr = Tracer("t", nvtx=nv)
    spans = []

    def work(i):
        for _ in range(50):
            with tr.phase("ntt", worker=i, partition=i), tr.phase("h_msm", worker=i, partition=i):
                pass
        spans.append(tr.begin("prove", worker=i, partition=i))

    ths = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert nv.open  # spans still open
    # spans end on another thread (the finalizer in the pipeline)
    enders = [threading.Thread(target=s.end) for s in spans]
    for t in enders:
        t.start()
    for t in enders:
        t.join()
    assert nv.balanced() and nv.pushes == 400
    assert len(tr.events()) == 404
    with pytest.raises(RuntimeError, match="twice"):
        spans[0].end()


def test_real_and_null_nvtx_backends_work(monkeypatch):
    for nv in (default_nvtx(), NullNvtx()):
        tr = Tracer("t", nvtx=nv)
        with tr.phase("ntt", worker=0, partition=0):
            pass
        tr.begin("prove", worker=0, partition=0).end()
        assert len(tr.events()) == 2
    monkeypatch.setattr(trace, "_NVTX_ON", True)  # restored after the test
    trace.configure(nvtx=False)
    assert isinstance(default_nvtx(), NullNvtx)
    with pytest.raises(TypeError, match="nvtx must be a bool"):
        trace.configure(nvtx="0")


# exact cuzk formats (notes/cuzk-pipeline.md §2.1/§2.2); %ld values are integers
FORMATS = {
    "split_vectors": r"CUZK_TIMING: split_vectors_ms=\d+ setup_to_split_ms=\d+",
    "prep_msm": r"CUZK_TIMING: prep_msm_ms=\d+",
    "b_g2_msm": r"CUZK_TIMING: b_g2_msm_ms=\d+ num_circuits=\d+",
    "mutex_wait": r"CUZK_TIMING: pre_lock_cpu_ms=\d+ mutex_wait_ms=\d+",
    "ntt_msm_h": r"CUZK_TIMING: gpu_tid=\d+ ntt_msm_h_ms=\d+",
    "barrier_wait": r"CUZK_TIMING: gpu_tid=\d+ barrier_wait_ms=\d+",
    "batch_add": r"CUZK_TIMING: gpu_tid=\d+ batch_add_ms=\d+",
    "tail_msm": r"CUZK_TIMING: gpu_tid=\d+ tail_msm_ms=\d+ gpu_total_ms=\d+",
    "mutex_held": r"CUZK_TIMING: mutex_held_ms=\d+ total_start_fn_ms=\d+",
    "finalize": r"CUZK_TIMING: async_dealloc_ms=\d+",
    "ntt_h": r"CUZK_NTT_H: d_b_alloc=\d+ms ntt_kernels=\d+ms coset_intt_sync=\d+ms msm_init=\d+ms msm_invoke=\d+ms msm_dtor=\d+ms total=\d+ms",
    "timeline": r"TIMELINE,\d+,(SYNTH_START|SYNTH_END|GPU_QUEUE|GPU_PICKUP|GPU_START|GPU_END),[^,]+,(partition=\d+|partition=\d+,synth_ms=\d+|worker=\d+,partition=\d+|worker=\d+,partition=\d+,gpu_ms=\d+)",
    "info": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z +(INFO|DEBUG|WARN) [\w:]+: .+",
}


def line_kind(line: str) -> str | None:
    for k, rx in FORMATS.items():
        if re.fullmatch(rx, line):
            return k
    return None


def test_every_phase_line_has_the_exact_format():
    tr = Tracer("job-1")
    need = {
        "split_vectors": {"setup_to_split_ms": 1.7},
        "mutex_wait": {"pre_lock_cpu_ms": 3.2},
        "tail_msm": {"gpu_total_ms": 9.9},
        "mutex_held": {"mutex_held_ms": 5, "total_start_fn_ms": 8},
        "finalize": {"async_dealloc_ms": 0.4},
        "ntt_msm_h": {"ntt_h": {"d_b_alloc": 0, "ntt_kernels": 2.5, "coset_intt_sync": 1, "msm_init": 0, "msm_invoke": 3, "msm_dtor": 0}},
        "synthesize": {"is_pinned": True},
    }
    for name in PHASE_LINES:
        with tr.phase(name, worker=1, partition=2, fields=need.get(name, {})):
            pass
    kinds = [line_kind(x) for x in tr.log.lines]
    assert None not in kinds, [x for x, k in zip(tr.log.lines, kinds, strict=True) if k is None]
    text = "\n".join(tr.log.lines)
    assert "CUZK_TIMING: split_vectors_ms=0 setup_to_split_ms=1" in text
    assert "CUZK_TIMING: pre_lock_cpu_ms=3 mutex_wait_ms=0" in text
    assert "partition synthesis complete partition=2 synth_ms=0 is_pinned=true" in text
    assert "FIN_TIMING malloc_trim (success path) job_id=job-1 partition=2 malloc_trim_ms=0" in text
    for ev in ("SYNTH_START", "SYNTH_END", "GPU_QUEUE", "GPU_PICKUP", "GPU_START", "GPU_END"):
        assert f",{ev},job-1," in text
    assert re.search(r"TIMELINE,\d+,GPU_END,job-1,worker=1,partition=2,gpu_ms=\d+", text)


def test_missing_fields_name_the_field():
    tr = Tracer("t")
    with pytest.raises(KeyError, match="gpu_total_ms"), tr.phase("tail_msm", worker=0, partition=0):
        pass


def test_formatters():
    assert timeline_line(12.9, "GPU_START", "j", "worker=0,partition=3") == "TIMELINE,12,GPU_START,j,worker=0,partition=3"
    assert ntt_h_line(d_b_alloc=0, ntt_kernels=1.9, coset_intt_sync=2, msm_init=0, msm_invoke=3, msm_dtor=0, total=7.2) == (
        "CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=1ms coset_intt_sync=2ms msm_init=0ms msm_invoke=3ms msm_dtor=0ms total=7ms"
    )
    line = info_line("GPU_TIMING prove_start returned", {"worker_id": 0, "total_pre_prove_ms": 5})
    assert re.fullmatch(FORMATS["info"], line) and line.endswith("INFO zkgpu::pipeline: GPU_TIMING prove_start returned worker_id=0 total_pre_prove_ms=5")


def test_lines_round_trip_through_zkgpu_logs():
    logs = pytest.importorskip("zkgpu.analysis.logs")
    tr = Tracer("job")
    with tr.phase("prep_msm", partition=0):
        pass
    with tr.phase("ntt_msm_h", worker=0, partition=0, fields={"gpu_tid": 0}):
        pass
    with tr.phase("synthesize", partition=0, fields={"is_pinned": False}):
        pass
    tr.info("GPU_TIMING hot_path pre-prove overhead", worker_id=0, partition=0, status_ms=0, fail_check_ms=0, mark_busy_ms=0, total_overhead_ms=0)
    parsed = logs.parse_lines(tr.log.lines)
    s = parsed.summary()
    assert s["unknown"] == 0 and s["malformed"] == 0
    assert s["cuzk_timing"] == 2 and s["timeline"] == 2 and s["gpu_timing"] == 1 and s["messages"] == 1


def test_log_writer_never_truncates(tmp_path):
    p = tmp_path / "run.log"
    p.write_text("precious\n")
    with pytest.raises(FileExistsError):
        LogWriter.create(p)
    assert p.read_text() == "precious\n"
    q = tmp_path / "sub" / "new.log"
    with LogWriter.create(q) as w:
        w.write("a")
        w.write("b")
        with pytest.raises(ValueError):
            w.write("two\nlines")
    assert q.read_text() == "a\nb\n"
    with pytest.raises(FileExistsError):
        LogWriter.create(q)
    assert q.read_text() == "a\nb\n"


def test_write_events_parquet_never_truncates(tmp_path):
    tr = Tracer("t")
    with tr.phase("ntt", worker=0, partition=0, bytes=5):
        pass
    p = write_events_parquet(tr.events(), tmp_path / "ev.parquet")
    back = pd.read_parquet(p)
    assert list(back.columns) == COLUMNS and back.loc[0, "bytes"] == 5
    size = p.stat().st_size
    with pytest.raises(FileExistsError):
        write_events_parquet(tr.events(), p)
    assert p.stat().st_size == size


def test_place_on_gpu_clock_moves_rows_with_cuda_events(monkeypatch):
    """lock_scope="submit": a GPU phase row's interval becomes its kernels' time, anchored at the
    completion of a later event (fake events: times in ms on a GPU clock)."""
    import types

    from zkgpu.core import cuda as _cuda

    class Ev:
        def __init__(self, t_ms):
            self.t = t_ms

        def synchronize(self):
            pass

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(get_elapsed_time=lambda a, b: b.t - a.t))
    monkeypatch.setattr(_cuda, "cupy", lambda: fake)
    tr = Tracer("r", log=LogWriter())
    with tr.phase("batch_add", worker=0, partition=3) as ph:
        pass
    with tr.phase("pre_lock", worker=0, partition=3) as host_only:
        pass
    ph._cuda = (Ev(10.0), Ev(12.5))
    before = (host_only.start_ns, host_only.end_ns)
    assert tr.place_on_gpu_clock([ph, host_only], Ev(20.0), mark_ns=100_000_000) == 1
    assert (ph.start_ns, ph.end_ns) == (90_000_000, 92_500_000)
    assert ph.detail["clock"] == "gpu" and "host_ms" in ph.detail
    assert (host_only.start_ns, host_only.end_ns) == before
