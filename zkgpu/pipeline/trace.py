"""Pipeline tracing: one call per phase gives an NVTX range, one event-table row and its cuzk-format log line(s).

Log formats are cuzk's (``CUZK_TIMING:``, ``CUZK_NTT_H:``, ``TIMELINE,...``, tracing ``INFO`` lines;
notes/cuzk-pipeline.md §2); :data:`PHASE_LINES` fixes which line a phase writes. A phase whose body raises records its
event (``error=<Type>``) but no log line. Files are created with mode "x" (FileExistsError)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.core.errors import check_bool
from zkgpu.core.events import normalize_events

__all__ = [
    "configure",
    "NVTX_DOMAIN",
    "NvtxBackend",
    "NullNvtx",
    "RealNvtx",
    "default_nvtx",
    "LogWriter",
    "Phase",
    "Span",
    "Tracer",
    "PHASE_LINES",
    "timing_line",
    "ntt_h_line",
    "timeline_line",
    "info_line",
    "write_events_parquet",
]

NVTX_DOMAIN = "zkgpu"
_NVTX_ON = True  # configure(nvtx=...)
_CPU_ONLY = frozenset({"synthesize"})  # phases not tied to a GPU unless one is given


# --------------------------------------------------------------------------------------------
# NVTX backends
# --------------------------------------------------------------------------------------------


class NvtxBackend(Protocol):
    """What the tracer needs from NVTX. push/pop are thread-local nested ranges; start/end are
    process-wide ranges that may end on another thread (used for spans such as ``prove``)."""

    def push(self, message: str) -> None: ...

    def pop(self) -> None: ...

    def start(self, message: str) -> Any: ...

    def end(self, handle: Any) -> None: ...


def configure(*, nvtx: bool) -> None:
    """``nvtx=False``: :func:`default_nvtx` returns :class:`NullNvtx`. Raises TypeError: not a bool."""
    global _NVTX_ON
    _NVTX_ON = check_bool("trace.configure", "nvtx", nvtx)


class NullNvtx:
    """No-op backend (nvtx not installed, or disabled with ``configure(nvtx=False)``)."""

    def push(self, message: str) -> None:
        pass

    def pop(self) -> None:
        pass

    def start(self, message: str) -> Any:
        return None

    def end(self, handle: Any) -> None:
        pass


class RealNvtx:
    """The ``nvtx`` package, domain :data:`NVTX_DOMAIN`."""

    def __init__(self, domain: str = NVTX_DOMAIN) -> None:
        """Raises ImportError: the ``nvtx`` package is not installed (extra ``gpu-cuda13`` / ``notebooks``)."""
        mod = optional.nvtx()
        if mod is None:
            raise ImportError("the nvtx package is not installed: pip install -e '.[notebooks]' (or nvtx)")
        self._nvtx = mod
        self.domain = domain

    def push(self, message: str) -> None:
        self._nvtx.push_range(message=message, domain=self.domain)

    def pop(self) -> None:
        self._nvtx.pop_range(domain=self.domain)

    def start(self, message: str) -> Any:
        return self._nvtx.start_range(message=message, domain=self.domain)

    def end(self, handle: Any) -> None:
        if handle is not None:
            self._nvtx.end_range(handle)


def default_nvtx() -> NvtxBackend:
    """:class:`RealNvtx` when ``nvtx`` is installed and NVTX is on (:func:`configure`), else
    :class:`NullNvtx` (tracing never stops a run)."""
    if not _NVTX_ON or optional.nvtx() is None:
        return NullNvtx()
    return RealNvtx()


# --------------------------------------------------------------------------------------------
# Log writer (never truncates)
# --------------------------------------------------------------------------------------------


class LogWriter:
    """Thread-safe line writer: ``lines`` in memory, and a fresh file if created with a path. Raises FileExistsError:
    :meth:`create` on an existing path."""

    def __init__(self, stream: io.TextIOBase | None = None, *, echo: Callable[[str], None] | None = None) -> None:
        self._f = stream
        self._echo = echo
        self._lock = threading.Lock()
        self.lines: list[str] = []
        self.path: Path | None = None

    @classmethod
    def create(cls, path: str | os.PathLike[str], *, echo: Callable[[str], None] | None = None) -> LogWriter:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        f = open(p, "x", encoding="utf-8", buffering=1)  # noqa: SIM115 - the writer owns the file until close()
        w = cls(f, echo=echo)
        w.path = p
        return w

    def write(self, line: str) -> None:
        if "\n" in line:
            raise ValueError(f"log line must be one line, got {line!r}")
        with self._lock:
            self.lines.append(line)
            if self._f is not None:
                self._f.write(line + "\n")
            if self._echo is not None:
                self._echo(line)

    def close(self) -> None:
        with self._lock:
            if self._f is not None:
                self._f.close()
                self._f = None

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Line formatters
# --------------------------------------------------------------------------------------------


def _ms(x: float) -> int:
    """Integer ms as upstream's ``%ld`` of a ``duration_cast<milliseconds>`` (truncation)."""
    return int(x)


def timing_line(body: str) -> str:
    """``CUZK_TIMING: <body>``."""
    return f"CUZK_TIMING: {body}"


def ntt_h_line(*, d_b_alloc: float, ntt_kernels: float, coset_intt_sync: float, msm_init: float, msm_invoke: float, msm_dtor: float, total: float) -> str:
    """The ``CUZK_NTT_H:`` sub-timer line (``groth16_ntt_h.cu:153-156``), all values in ms."""
    return (
        f"CUZK_NTT_H: d_b_alloc={_ms(d_b_alloc)}ms ntt_kernels={_ms(ntt_kernels)}ms coset_intt_sync={_ms(coset_intt_sync)}ms "
        f"msm_init={_ms(msm_init)}ms msm_invoke={_ms(msm_invoke)}ms msm_dtor={_ms(msm_dtor)}ms total={_ms(total)}ms"
    )


def timeline_line(offset_ms: float, event: str, job_id: str, detail: str) -> str:
    """``TIMELINE,<offset_ms>,<EVENT>,<job_id>,<detail>`` (``engine.rs:331-353``)."""
    return f"TIMELINE,{_ms(offset_ms)},{event},{job_id},{detail}"


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))
    return str(v)


def info_line(message: str, fields: dict[str, Any] | None = None, *, target: str = "zkgpu::pipeline", when: _dt.datetime | None = None) -> str:
    """A Rust tracing ``info!`` line as tracing-subscriber's default formatter prints it:
    ``2026-11-29T18:00:00.123456Z  INFO zkgpu::pipeline: GPU_TIMING hot_path pre-prove overhead worker_id=0 ...``."""
    when = when or _dt.datetime.now(_dt.timezone.utc)
    ts = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kv = " ".join(f"{k}={_fmt_value(v)}" for k, v in (fields or {}).items())
    return f"{ts}  INFO {target}: {message}" + (f" {kv}" if kv else "")


def _need(fields: dict[str, Any], *names: str, phase: str) -> list[Any]:
    missing = [n for n in names if n not in fields]
    if missing:
        raise KeyError(f"phase {phase!r} log line needs fields {missing}")
    return [fields[n] for n in names]


# Each entry: phase -> function(ph: Phase) -> list of lines emitted when the phase ENDS.
# (Lines emitted when a phase STARTS are in _START_LINES.)
def _lines_split_vectors(ph: Phase) -> list[str]:
    (setup,) = _need(ph.fields, "setup_to_split_ms", phase=ph.name)
    return [timing_line(f"split_vectors_ms={_ms(ph.ms)} setup_to_split_ms={_ms(setup)}")]


def _lines_prep(ph: Phase) -> list[str]:
    return [timing_line(f"prep_msm_ms={_ms(ph.ms)}")]


def _lines_b_g2(ph: Phase) -> list[str]:
    return [timing_line(f"b_g2_msm_ms={_ms(ph.ms)} num_circuits={int(ph.fields.get('num_circuits', 1))}")]


def _lines_mutex_wait(ph: Phase) -> list[str]:
    if ph.fields.get("relock"):  # narrow scope's re-acquire after the barrier: no upstream line
        return []
    (pre,) = _need(ph.fields, "pre_lock_cpu_ms", phase=ph.name)
    return [timing_line(f"pre_lock_cpu_ms={_ms(pre)} mutex_wait_ms={_ms(ph.ms)}")]


def _gpu_tid(ph: Phase) -> int:
    return int(ph.fields.get("gpu_tid", 0))


def _lines_ntt_msm_h(ph: Phase) -> list[str]:
    # upstream prints CUZK_NTT_H at the end of execute_ntt_msm_h (groth16_ntt_h.cu:153-156),
    # i.e. before the caller's ntt_msm_h_ms line (groth16_cuda.cu:937)
    out = []
    sub = ph.fields.get("ntt_h")
    if sub is not None:
        out.append(ntt_h_line(**{**sub, "total": sub.get("total", ph.ms)}))
    out.append(timing_line(f"gpu_tid={_gpu_tid(ph)} ntt_msm_h_ms={_ms(ph.ms)}"))
    return out


def _lines_barrier(ph: Phase) -> list[str]:
    ms = ph.fields.get("barrier_wait_ms", ph.ms)
    return [timing_line(f"gpu_tid={_gpu_tid(ph)} barrier_wait_ms={_ms(ms)}")]


def _lines_batch_add(ph: Phase) -> list[str]:
    return [timing_line(f"gpu_tid={_gpu_tid(ph)} batch_add_ms={_ms(ph.ms)}")]


def _lines_tail(ph: Phase) -> list[str]:
    (total,) = _need(ph.fields, "gpu_total_ms", phase=ph.name)
    return [timing_line(f"gpu_tid={_gpu_tid(ph)} tail_msm_ms={_ms(ph.ms)} gpu_total_ms={_ms(total)}")]


def _lines_mutex_held(ph: Phase) -> list[str]:
    if "mutex_held_ms" not in ph.fields:  # narrow scope: only the last held interval prints
        return []
    held, total = _need(ph.fields, "mutex_held_ms", "total_start_fn_ms", phase=ph.name)
    return [timing_line(f"mutex_held_ms={_ms(held)} total_start_fn_ms={_ms(total)}")]


def _lines_synth(ph: Phase) -> list[str]:
    t = ph.tracer
    p = ph.partition
    return [
        timeline_line(t.ns_to_ms(ph.ended_ns), "SYNTH_END", t.job_id, f"partition={p},synth_ms={_ms(ph.ms)}"),
        info_line("partition synthesis complete", {"partition": p, "synth_ms": _ms(ph.ms), "is_pinned": bool(ph.fields.get("is_pinned", False))}),
    ]


def _gpu_suffix(ph: Phase) -> str:
    """``,gpu=G`` on a GPU worker's TIMELINE detail when the run has several GPUs."""
    return f",gpu={ph.gpu}" if ph.tracer.gpu_field and ph.gpu is not None else ""


def _lines_gpu_queue(ph: Phase) -> list[str]:
    t = ph.tracer
    return [timeline_line(t.ns_to_ms(ph.ended_ns), "GPU_PICKUP", t.job_id, f"worker={ph.worker},partition={ph.partition}{_gpu_suffix(ph)}")]


def _lines_prove(ph: Phase) -> list[str]:
    t = ph.tracer
    return [timeline_line(t.ns_to_ms(ph.ended_ns), "GPU_END", t.job_id, f"worker={ph.worker},partition={ph.partition},gpu_ms={_ms(ph.ms)}{_gpu_suffix(ph)}")]


def _lines_finalize(ph: Phase) -> list[str]:
    if "async_dealloc_ms" in ph.fields:
        return [timing_line(f"async_dealloc_ms={_ms(ph.fields['async_dealloc_ms'])}")]
    return []


def _lines_malloc_trim(ph: Phase) -> list[str]:
    path = ph.fields.get("path", "success")
    return [info_line(f"FIN_TIMING malloc_trim ({path} path)", {"job_id": ph.tracer.job_id, "partition": ph.partition, "malloc_trim_ms": _ms(ph.ms)})]


PHASE_LINES: dict[str, Callable[[Phase], list[str]]] = {
    "synthesize": _lines_synth,
    "gpu_queue": _lines_gpu_queue,
    "prove": _lines_prove,
    "split_vectors": _lines_split_vectors,
    "prep_msm": _lines_prep,
    "b_g2_msm": _lines_b_g2,
    "mutex_wait": _lines_mutex_wait,
    "ntt_msm_h": _lines_ntt_msm_h,
    "barrier_wait": _lines_barrier,
    "batch_add": _lines_batch_add,
    "tail_msm": _lines_tail,
    "mutex_held": _lines_mutex_held,
    "finalize": _lines_finalize,
    "malloc_trim": _lines_malloc_trim,
}
"""Phase name -> lines written when the phase ends. Phases not listed (``pre_lock``, ``h2d``,
``ntt``, ``h_msm``, ``tracker_lock``) only produce an event row and an NVTX range."""

_START_LINES: dict[str, Callable[[Phase], list[str]]] = {
    "synthesize": lambda ph: [timeline_line(ph.tracer.ns_to_ms(ph.start_ns), "SYNTH_START", ph.tracer.job_id, f"partition={ph.partition}")],
    "gpu_queue": lambda ph: [timeline_line(ph.tracer.ns_to_ms(ph.start_ns), "GPU_QUEUE", ph.tracer.job_id, f"partition={ph.partition}")],
    "prove": lambda ph: [timeline_line(ph.tracer.ns_to_ms(ph.start_ns), "GPU_START", ph.tracer.job_id, f"worker={ph.worker},partition={ph.partition}{_gpu_suffix(ph)}")],
}


# --------------------------------------------------------------------------------------------
# Phases and the tracer
# --------------------------------------------------------------------------------------------


@dataclass
class Phase:
    """One timed interval. ``ms`` is host wall time; ``bytes``, ``fields`` and ``detail`` may be
    set inside the ``with`` body. ``gpu_ms`` is resolved when the event table is built."""

    tracer: Tracer
    name: str
    worker: int | None
    partition: int | None
    gpu: int | None
    start_ns: int
    end_ns: int | None = None
    bytes: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    _cuda: tuple[Any, Any] | None = None

    @property
    def ended_ns(self) -> int:
        """``end_ns`` of an ended phase. Raises RuntimeError: still open."""
        if self.end_ns is None:
            raise RuntimeError(f"phase {self.label()} has not ended")
        return self.end_ns

    @property
    def ms(self) -> float:
        """Host duration in ms (up to now while the phase is open)."""
        end = self.end_ns if self.end_ns is not None else self.tracer.now_ns()
        return (end - self.start_ns) / 1e6

    def label(self) -> str:
        parts = [self.name]
        if self.partition is not None:
            parts.append(f"p{self.partition}")
        if self.worker is not None:
            parts.append(f"w{self.worker}")
        return " ".join(parts)


class Span:
    """A phase that may end on another thread (e.g. ``prove``: GPU_START on the GPU worker,
    GPU_END in the finalizer). Uses NVTX start/end ranges instead of push/pop."""

    def __init__(self, tracer: Tracer, ph: Phase, handle: Any) -> None:
        self._tracer, self.phase, self._handle, self._done = tracer, ph, handle, False

    def end(self, *, error: BaseException | None = None, **fields: Any) -> Phase:
        if self._done:
            raise RuntimeError(f"span {self.phase.label()} ended twice")
        self._done = True
        self.phase.fields.update(fields)
        try:
            self._tracer._finish(self.phase, error)
        finally:
            self._tracer.nvtx.end(self._handle)
        return self.phase


class Tracer:
    """Event recorder, cuzk-format log writer and NVTX ranges of one run; thread-safe. ``run``, ``source``, ``gpu``:
    event columns; ``job_id``: TIMELINE's (default ``run``); ``gpu_field``: add ``gpu=G`` to TIMELINE details. Times are
    ns since the tracer's creation (``perf_counter_ns``)."""

    def __init__(self, run: str, *, log: LogWriter | None = None, nvtx: NvtxBackend | None = None, job_id: str | None = None, gpu: int | None = 0, source: str = "zkgpu", gpu_field: bool = False) -> None:
        self.run = run
        self.gpu_field = gpu_field
        self.log = log if log is not None else LogWriter()
        self.nvtx = nvtx if nvtx is not None else default_nvtx()
        self.job_id: str = job_id or run
        self.gpu = gpu
        self.source = source
        self.epoch_ns = time.perf_counter_ns()
        self._lock = threading.Lock()
        self._phases: list[Phase] = []

    # clocks -----------------------------------------------------------------------------------
    def now_ns(self) -> int:
        """ns since the run epoch."""
        return time.perf_counter_ns() - self.epoch_ns

    def ns_to_ms(self, ns: int) -> float:
        return ns / 1e6

    # lines ------------------------------------------------------------------------------------
    def write(self, line: str) -> None:
        """Write one raw log line."""
        self.log.write(line)

    def info(self, message: str, **fields: Any) -> None:
        """Write a Rust-tracing-style ``info!`` line (``GPU_TIMING …``, ``pinned pool: …``)."""
        self.log.write(info_line(message, fields))

    # phases -----------------------------------------------------------------------------------
    def _open(self, name: str, worker: int | None, partition: int | None, gpu: int | None, stream: Any, nbytes: int | None, fields: dict[str, Any] | None, detail: dict[str, Any] | None) -> Phase:
        if gpu is None and name not in _CPU_ONLY:
            gpu = self.gpu
        ph = Phase(self, name, worker, partition, gpu, self.now_ns(), bytes=nbytes, fields=dict(fields or {}), detail=dict(detail or {}))
        if stream is not None:
            start = _cuda_event()
            if start is not None:
                start.record(stream)
                ph._cuda = (start, stream)
        for line in _START_LINES.get(name, lambda _ph: [])(ph):
            self.log.write(line)
        return ph

    def _finish(self, ph: Phase, error: BaseException | None) -> None:
        if ph._cuda is not None:
            start, stream = ph._cuda
            end = _cuda_event()
            end.record(stream)
            ph._cuda = (start, end)
        ph.end_ns = self.now_ns()
        since = ph.fields.pop("gpu_total_from_ns", None)
        if since is not None:  # tail_msm's gpu_total ends when the phase does, so ntt + barrier + batch + tail <= gpu_total
            ph.fields["gpu_total_ms"] = (ph.end_ns - since) / 1e6
        if error is not None:
            ph.detail.setdefault("error", type(error).__name__)
        with self._lock:
            self._phases.append(ph)
        if error is None and not ph.fields.get("no_line"):
            for line in PHASE_LINES.get(ph.name, lambda _ph: [])(ph):
                self.log.write(line)

    @contextlib.contextmanager
    def phase(self, name: str, *, worker: int | None = None, partition: int | None = None, gpu: int | None = None, stream: Any = None, bytes: int | None = None, fields: dict[str, Any] | None = None, detail: dict[str, Any] | None = None) -> Iterator[Phase]:
        """Time the ``with`` body as phase ``name``: event row, NVTX range, log line (:data:`PHASE_LINES`). ``stream``:
        CUDA events on it give ``gpu_ms``; ``bytes``; ``fields`` for the log line; ``detail`` pairs. Re-raises what the
        body raises, after recording."""
        ph = self._open(name, worker, partition, gpu, stream, bytes, fields, detail)
        self.nvtx.push(ph.label())
        try:
            yield ph
        except BaseException as e:
            try:
                self._finish(ph, e)
            finally:
                self.nvtx.pop()
            raise
        else:
            try:
                self._finish(ph, None)
            finally:
                self.nvtx.pop()

    def begin(self, name: str, *, worker: int | None = None, partition: int | None = None, gpu: int | None = None, fields: dict[str, Any] | None = None, detail: dict[str, Any] | None = None) -> Span:
        """Start a cross-thread :class:`Span`; call ``span.end()`` (from any thread) to record it."""
        ph = self._open(name, worker, partition, gpu, None, None, fields, detail)
        return Span(self, ph, self.nvtx.start(ph.label()))

    def record(self, name: str, start_ns: int, end_ns: int, *, worker: int | None = None, partition: int | None = None, gpu: int | None = None, bytes: int | None = None, detail: dict[str, Any] | None = None, gpu_ms: float | None = None) -> Phase:
        """Record an already-measured interval (no NVTX range, no log line)."""
        ph = Phase(self, name, worker, partition, self.gpu if gpu is None else gpu, start_ns, end_ns, bytes=bytes, detail=dict(detail or {}))
        if gpu_ms is not None:
            ph.fields["gpu_ms"] = gpu_ms
        with self._lock:
            self._phases.append(ph)
        return ph

    def place_on_gpu_clock(self, phases: Sequence[Phase], mark: Any, mark_ns: int) -> int:
        """Move ended ``phases``' rows to the interval their kernels ran, anchored at ``mark`` completing at
        ``mark_ns``. The host interval stays as ``host_ms``; moved rows get ``clock=gpu``. Returns the count moved."""
        moved = 0
        for ph in phases:
            if ph._cuda is None or len(ph._cuda) != 2 or not hasattr(ph._cuda[1], "synchronize"):
                continue
            start, end = ph._cuda
            elapsed = _cuda.cupy().cuda.get_elapsed_time
            s_ns = mark_ns - round(float(elapsed(start, mark)) * 1e6)
            e_ns = mark_ns - round(float(elapsed(end, mark)) * 1e6)
            ph.detail.update(host_ms=round(ph.ms, 3), clock="gpu")
            ph.start_ns, ph.end_ns = s_ns, max(s_ns, e_ns)
            moved += 1
        return moved

    # output -----------------------------------------------------------------------------------
    def phases(self) -> list[Phase]:
        with self._lock:
            return list(self._phases)

    def events(self) -> pd.DataFrame:
        """The event table (:func:`zkgpu.core.events.normalize_events`), sorted by start_ns.
        Synchronizes the CUDA end events of phases that recorded them."""
        rows = []
        for ph in self.phases():
            gpu_ms = ph.fields.get("gpu_ms", float("nan"))
            if ph._cuda is not None and len(ph._cuda) == 2 and hasattr(ph._cuda[1], "synchronize"):
                start, end = ph._cuda
                end.synchronize()
                gpu_ms = float(_cuda.cupy().cuda.get_elapsed_time(start, end))
            rows.append(
                {
                    "run": self.run,
                    "source": self.source,
                    "worker": ph.worker,
                    "gpu": ph.gpu,
                    "partition": ph.partition,
                    "phase": ph.name,
                    "start_ns": ph.start_ns,
                    "end_ns": ph.end_ns,
                    "gpu_ms": gpu_ms,
                    "bytes": ph.bytes,
                    "detail": ",".join(f"{k}={_fmt_value(v)}" for k, v in ph.detail.items()) or pd.NA,
                }
            )
        df = pd.DataFrame(rows)
        if len(df):
            df = df.sort_values(["start_ns", "end_ns"], kind="stable")
        return normalize_events(df)


def _cuda_event() -> Any:
    if not _cuda.gpu_available():
        return None
    return _cuda.cupy().cuda.Event()


def write_events_parquet(df: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write the normalized event table to a new Parquet file. Raises FileExistsError: ``path`` exists."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    df = normalize_events(df)
    with open(p, "xb") as f:
        df.to_parquet(f, index=False)
    return p
