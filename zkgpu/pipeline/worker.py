"""One partition through cuzk's start half and finalizer (notes/cuzk-pipeline.md §1.2, §3).

Start half (:func:`prove_start`): split_vectors; the prep thread (prep_msm, barrier notify, b_g2_msm); ``mutex_wait``;
in the mutex ntt_msm_h, barrier_wait, batch_add, tail_msm. ``lock_scope`` and ``h2d_stage`` vary the mutex and copy
placement (:class:`~zkgpu.pipeline.config.PipelineConfig`). Finalizer (:func:`finalize`): join prep, assemble, tracker
lock. A failure releases what the partition holds."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zkgpu.arith.curve import LIMBS, g1_sum
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm.prep import default_threads as default_prep_threads
from zkgpu.pipeline.backend import Backend, malloc_trim
from zkgpu.pipeline.config import PipelineConfig
from zkgpu.pipeline.split import Prep, splits
from zkgpu.pipeline.sync import (
    Cancelled,
    DeviceLost,
    GpuMutex,
    PrepBarrier,
    PrepFailed,
    mutex_wait_limit_s,
)
from zkgpu.pipeline.synthesis import Circuit
from zkgpu.pipeline.trace import Span, Tracer, timing_line

__all__ = [
    "SynthesizedJob",
    "StartState",
    "WorkerContext",
    "prove_start",
    "finalize",
    "PartitionResult",
    "record_failure",
]


#: the thread ("lane") each hooked step runs on; steps not listed run on the GPU worker's thread
LANES = {"synthesize": "synth", "prep_msm": "prep", "b_g2_msm": "prep", "finalize": "finalize"}


@dataclass
class SynthesizedJob:
    """A partition after synthesis, waiting for a GPU worker (cuzk ``SynthesizedJob``)."""

    partition: int
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    aux: np.ndarray
    pinned: bool
    release_abc: Callable[[], None]
    witness: np.ndarray | None = None  # a real circuit's witness (PipelineConfig.real)
    circuit: Circuit | None = None  # the partition's structure when it differs from the run's (real inputs)
    queue_span: Span | None = None
    synth_ms: float = 0.0
    _released: bool = False

    def release(self) -> None:
        """Return a/b/c (pool checkin, or drop the pageable arrays). Idempotent."""
        if not self._released:
            self._released = True
            self.release_abc()
            self.a = self.b = self.c = None  # type: ignore[assignment]


@dataclass
class WorkerContext:
    """Everything shared by the workers of one run. ``backend`` is GPU 0's; ``backends`` holds one per GPU
    (:meth:`device`), ``lost_gpus`` the GPUs a device failure took out of the run."""

    config: PipelineConfig
    circuit: Circuit
    backend: Backend
    tracer: Tracer
    mutexes: list[GpuMutex]
    tracker_lock: threading.Lock
    stop: threading.Event
    results: dict[int, Any] = field(default_factory=dict)
    results_lock: threading.Lock = field(default_factory=threading.Lock)
    failed_partitions: set[int] = field(default_factory=set)
    #: (partition, lane) -> (step, monotonic start, thread ident): what each thread is doing now
    steps: dict[tuple[int, str], tuple[str, float, int]] = field(default_factory=dict)
    #: partitions failed by the watchdog (a hung step); their threads' late results are dropped
    abandoned: set[int] = field(default_factory=set)
    #: partition -> its prep barrier / the release of its a/b/c and queue permit (watchdog)
    barriers: dict[int, PrepBarrier] = field(default_factory=dict)
    releasers: dict[int, Callable[[], None]] = field(default_factory=dict)
    #: lock_scope="submit": gpu -> the stream all its workers queue their GPU phases on
    gpu_streams: dict[int, Any] = field(default_factory=dict)
    #: gpu -> its backend (default: ``backend`` for every GPU)
    backends: dict[int, Backend] = field(default_factory=dict)
    lost_gpus: set[int] = field(default_factory=set)

    def device(self, gpu: int) -> Backend:
        """The backend that drives GPU ``gpu``."""
        return self.backends.get(gpu, self.backend)

    def stage(self, step: str, partition: int, lane: str | None = None) -> None:
        """Record that this thread starts ``step`` of ``partition`` (the watchdog's clock)."""
        self.steps[(partition, lane or LANES.get(step, "gpu"))] = (step, time.monotonic(), threading.get_ident())

    def leave(self, partition: int, lane: str) -> None:
        """This thread is done with ``partition`` on ``lane``."""
        self.steps.pop((partition, lane), None)

    def hook(self, step: str, partition: int, worker: int | None) -> None:
        """Start of a step: record it for the watchdog, then call the fault hook (tests)."""
        self.stage(step, partition)
        if self.config.fault_hook is not None:
            self.config.fault_hook(step, partition, worker)


@dataclass
class StartState:
    """What the start half hands to the finalizer (cuzk ``groth16_pending_proof``)."""

    partition: int
    worker: int
    gpu: int
    prep_thread: threading.Thread | None = None
    preps: dict[str, Prep] = field(default_factory=dict)
    prep_error: BaseException | None = None
    b_g2: bytes | np.ndarray | None = None
    witness: np.ndarray | None = None
    h: np.ndarray | None = None
    batch: dict[str, np.ndarray] = field(default_factory=dict)
    tail: dict[str, np.ndarray] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    staged: list[Any] | None = None
    hstart: Any = None  # the H computation's HStart (lock_scope="submit": completed after the wait)
    gpu_phases: list[Any] = field(default_factory=list)  # submit: the GPU phases, placed on the GPU clock after the wait


def _job_circuit(ctx: WorkerContext, job: SynthesizedJob) -> Circuit:
    return job.circuit if job.circuit is not None else ctx.circuit


def _witness(w: np.ndarray | None, partition: int) -> np.ndarray:
    """A real circuit's witness of the partition (synthesis returned it)."""
    if w is None:
        raise RuntimeError(f"partition {partition}: a real circuit's partition without its witness (synthesis returned none)")
    return w


def _msm_scalars(circuit: Circuit, aux: np.ndarray) -> dict[str, np.ndarray]:
    """The scalar vectors of the L, A, B MSMs (cuzk §1.6): L = aux; A = inputs + a-density aux;
    B = b-density inputs + b-density aux."""
    return {
        "l": aux,
        "a": np.concatenate([circuit.inp, aux[circuit.a_aux_density]]),
        "b_g1": np.concatenate([circuit.inp[circuit.b_inp_density], aux[circuit.b_aux_density]]),
    }


def _prep_main(ctx: WorkerContext, job: SynthesizedJob, st: StartState, barrier: PrepBarrier) -> None:
    tr, p = ctx.tracer, job.partition
    try:
        detail: dict[str, Any] = {"prep": ctx.config.prep}
        if ctx.config.prep == "cpu_parallel":  # the threads actually used (prep.default_threads() when prep_threads = 0)
            detail["threads"] = ctx.config.prep_threads or default_prep_threads()
        with tr.phase("prep_msm", worker=st.worker, partition=p, gpu=st.gpu, detail=detail) as ph:
            ctx.hook("prep_msm", p, None)
            cfg = ctx.config
            st.preps.update(ctx.device(st.gpu).prep(job.aux, cfg.prep, cfg.prep_threads or None, circuit=_job_circuit(ctx, job)))
            ph.detail.update({f"{k}_sig": v.significant for k, v in st.preps.items()})
        barrier.notify()
        with tr.phase("b_g2_msm", worker=st.worker, partition=p, gpu=st.gpu, fields={"num_circuits": 1}):
            ctx.hook("b_g2_msm", p, None)
            if ctx.config.real is not None:  # the full B2 MSM of the witness (CPU)
                st.b_g2 = ctx.config.real.b_g2(_witness(job.witness, p))
            else:
                st.b_g2 = ctx.device(st.gpu).b_g2(st.preps["b_g1"].sig_scalars)
    except BaseException as e:  # noqa: BLE001 - handed to the GPU thread through the barrier and the finalizer
        st.prep_error = e
        barrier.abort(e)
    finally:
        ctx.leave(p, "prep")


def _h2d(ctx: WorkerContext, job: SynthesizedJob, kw: dict[str, Any], stream: Any, *, stage: str) -> tuple[list[Any], int]:
    """Copy a/b/c before the mutex on the worker's stream (an ``h2d`` event); the device arrays and bytes."""
    with ctx.tracer.phase("h2d", **kw, stream=stream, detail={"path": ctx.config.transfer, "stage": stage}) as hd:
        ctx.hook("h2d", job.partition, kw.get("worker"))
        dev, nbytes = ctx.device(kw["gpu"]).h2d((job.a, job.b, job.c), stream)
        hd.bytes = nbytes
        trs = ctx.device(kw["gpu"]).last_transfers()
        if trs:  # zkgpu.transfer.paths's own CUDA-event timing of the three copies
            hd.detail["stream_ms"] = round(sum(r.stream_ms for r in trs), 3)
            hd.detail["src_pinned"] = all(r.src_pinned for r in trs)
    return dev, nbytes


def _syncs() -> int:
    """Host synchronisations of this thread so far (:func:`zkgpu.core.cuda.count_sync`): a GPU
    phase's ``host_syncs`` detail is the difference across it."""
    return sum(_cuda.sync_counts().values())


def _ntt_msm_h(ctx: WorkerContext, job: SynthesizedJob, st: StartState, kw: dict[str, Any], stream: Any) -> None:
    tr, be = ctx.tracer, ctx.device(st.gpu)
    s0 = _syncs()
    with tr.phase("ntt_msm_h", **kw, stream=stream, fields={"gpu_tid": 0}) as ph:
        st.gpu_phases.append(ph)
        ctx.hook("ntt_msm_h", job.partition, st.worker)
        t0 = tr.now_ns()
        staged, st.staged = st.staged, None  # transfer="resident": already on the device
        inputs: Sequence[Any] = staged if staged is not None else (job.a, job.b, job.c)
        hd = None
        if staged is not None:
            hs = be.start_h(inputs, stream)
        else:
            # h2d: the three copies, each waited for, plus the (non-blocking) launches of each
            # vector's NTTs on its own stream, which overlap the next copy (upstream's 3 streams)
            with tr.phase("h2d", **kw, detail={"path": ctx.config.transfer, "stage": "ntt_msm_h"}) as hd:
                hs = be.start_h(inputs, stream)
                hd.bytes = hs.nbytes
        ph.bytes = hs.nbytes
        t_enq = tr.now_ns()
        defer = ctx.config.lock_scope == "submit"
        st.hstart = hs
        with tr.phase("ntt", **kw) as nt:
            dh = be.finish_h(hs, stream, wait=not defer)
            if ctx.config.real is not None:  # h's coefficients -> the scalars of the key's H points
                dh = ctx.config.real.h_scalars(dh, stream)
                be.synchronize(stream)
                nt.detail["h_points"] = "real"
        tm = hs.timing
        if hd is not None and hs.transfers:  # CUDA-event times of the three copies (zkgpu.transfer.paths)
            hd.fields["gpu_ms"] = round(tm["copy_ms"], 3)
            hd.detail.update(stream_ms=round(tm["copy_ms"], 3), exposed_ms=round(tm["exposed_ms"], 3),
                             src_pinned=all(r.src_pinned for r in hs.transfers))
        if "kernel_ms" in tm:  # all H-computation kernels, also those that ran inside the h2d window
            nt.detail["kernel_ms"] = round(tm["kernel_ms"], 3)
        t_sync = tr.now_ns()
        with tr.phase("h_msm", **kw, stream=stream) as hm:
            st.gpu_phases.append(hm)
            st.h = be.msm("h", dh, None, stream, defer=defer)
        del dh
        # CUZK_NTT_H mapping (groth16_ntt_h.cu:153-156): d_b_alloc = 0 (device buffers come from
        # CuPy's memory pool inside the H2D step); ntt_kernels = H2D + host enqueue of the NTT
        # kernels (as upstream, a pageable H2D blocks the host inside this window);
        # coset_intt_sync = the rest of the H computation and the stream sync; msm_init =
        # msm_dtor = 0 (inside msm); msm_invoke = H MSM.
        ph.fields["ntt_h"] = {
            "d_b_alloc": 0.0,
            "ntt_kernels": (t_enq - t0) / 1e6,
            "coset_intt_sync": (t_sync - t_enq) / 1e6,
            "msm_init": 0.0,
            "msm_invoke": (tr.now_ns() - t_sync) / 1e6,
            "msm_dtor": 0.0,
        }
        ph.detail["host_syncs"] = _syncs() - s0


def _batch_add(ctx: WorkerContext, st: StartState, kw: dict[str, Any], stream: Any) -> None:
    s0 = _syncs()
    with ctx.tracer.phase("batch_add", **kw, stream=stream) as ph:
        st.gpu_phases.append(ph)
        ctx.hook("batch_add", st.partition, st.worker)
        jobs = {nm: pr.bitmap for nm, pr in st.preps.items() if splits(pr)}
        cfg = ctx.config
        st.batch.update(ctx.device(st.gpu).batch_add_many(jobs, stream, cfg.tail_streams > 1, defer=cfg.lock_scope == "submit"))
        ph.detail.update({f"{k}_ones": v.ones for k, v in st.preps.items() if splits(v)})
        ph.detail["host_syncs"] = _syncs() - s0


def _tail_msm(ctx: WorkerContext, job: SynthesizedJob, st: StartState, kw: dict[str, Any], stream: Any, t_gpu0: int) -> None:
    tr, be = ctx.tracer, ctx.device(st.gpu)
    s0 = _syncs()
    with tr.phase("tail_msm", **kw, stream=stream, fields={"gpu_tid": 0}) as tm:
        st.gpu_phases.append(tm)
        ctx.hook("tail_msm", st.partition, st.worker)
        full = _msm_scalars(_job_circuit(ctx, job), job.aux) if any(not splits(pr) for pr in st.preps.values()) else {}
        # upstream: no split -> the "tail" MSM runs over the full vector
        jobs = {nm: (pr.sig_scalars, pr.sig_indices) if splits(pr) else (full[nm], None) for nm, pr in st.preps.items()}
        submit = ctx.config.lock_scope == "submit"
        st.tail.update(be.msm_many(jobs, stream, ctx.config.tail_streams > 1, defer=submit))
        if not submit:  # submit: the wait comes after the mutex (_gpu_wait); gpu_total_ms is the submission
            be.synchronize(stream)
        tm.fields["gpu_total_from_ns"] = t_gpu0  # stamped at the phase's end (Tracer._finish), as cuzk's after its tail MSM
        tm.detail["host_syncs"] = _syncs() - s0


def _gpu_wait(ctx: WorkerContext, st: StartState, kw: dict[str, Any], done: Any) -> None:
    """lock_scope="submit" after the mutex: wait for the queued GPU work, move its rows to the GPU clock, check, fetch."""
    be, tr = ctx.device(st.gpu), ctx.tracer
    s0 = _syncs()
    with tr.phase("gpu_wait", **kw) as ph:
        ctx.hook("gpu_wait", st.partition, st.worker)
        anchored = not be.ready(done)
        be.wait(done)
        t_done = tr.now_ns()
        ph.detail["gpu_clock"] = tr.place_on_gpu_clock(st.gpu_phases, done, t_done) if anchored else 0
        st.gpu_phases.clear()
        if st.hstart is not None:
            be.complete_h(st.hstart)  # ValueError naming a value >= r in a, b or c
            st.hstart = None
        st.h = be.to_host(st.h)
        for d in (st.batch, st.tail):
            d.update({k: be.to_host(v) for k, v in d.items()})
        ph.detail["host_syncs"] = _syncs() - s0


def _check_device(ctx: WorkerContext, gpu: int, partition: int) -> None:
    """Raise :class:`DeviceLost` if ``gpu`` failed while this partition waited for its mutex."""
    if gpu in ctx.lost_gpus:
        raise DeviceLost(f"gpu {gpu} was lost while partition {partition} waited for its mutex")


def prove_start(ctx: WorkerContext, job: SynthesizedJob, worker: int, gpu: int, stream: Any) -> StartState:
    """The start half of one partition. Raises a step's error (after clean-up), Cancelled, or TimeoutError."""
    cfg, tr, p = ctx.config, ctx.tracer, job.partition
    mutex = ctx.mutexes[gpu] if cfg.lock_scope != "none" else GpuMutex(gpu)  # none: private, uncontended
    submit = cfg.lock_scope == "submit"
    own = stream  # the worker's own stream: the pre-lock copies
    stream = ctx.gpu_streams.get(gpu, stream) if submit else stream  # submit: the GPU's shared stream
    st = StartState(p, worker, gpu, witness=job.witness)
    t_entry = tr.now_ns()
    barrier = PrepBarrier()
    ctx.barriers[p] = barrier
    held = False
    done: Any = None  # submit: the mark after the partition's queued GPU work
    kw: dict[str, Any] = {"worker": worker, "partition": p, "gpu": gpu}
    ctx.stage("pre_lock", p)
    try:
        with tr.phase("pre_lock", **kw):
            with tr.phase("split_vectors", **kw) as sv:
                c = _job_circuit(ctx, job)
                sizes = {"l": c.l_size, "a": c.a_size, "b_g1": c.b_size}
                st.timings["split_words"] = sum(np.zeros((s + 63) // 64, dtype=np.uint64).size for s in sizes.values())
                sv.fields["setup_to_split_ms"] = (tr.now_ns() - t_entry) / 1e6
            st.prep_thread = threading.Thread(target=_prep_main, args=(ctx, job, st, barrier), name=f"prep_msm-p{p}", daemon=True)
            st.prep_thread.start()
            if cfg.h2d_pre_lock:  # a/b/c on the device before the mutex (resident: the compute-only bound;
                # h2d_stage="pre_lock" and submit: by the configured path, the DMA overlapping the other worker's kernels)
                st.staged, _ = _h2d(ctx, job, kw, own, stage="pre_lock")
                ctx.stage("pre_lock", p)
        pre_lock_ms = (tr.now_ns() - t_entry) / 1e6
        with tr.phase("mutex_wait", **kw, fields={"pre_lock_cpu_ms": pre_lock_ms}):
            ctx.stage("mutex_wait", p)
            mutex.acquire(worker, mutex_wait_limit_s(cfg), ctx.stop, p)
            held = True
            _check_device(ctx, gpu, p)
        if cfg.lock_scope in ("coarse", "none"):
            with tr.phase("mutex_held", **kw) as mh:
                t_gpu0 = tr.now_ns()
                _ntt_msm_h(ctx, job, st, kw, stream)
                with tr.phase("barrier_wait", **kw, fields={"gpu_tid": 0}):
                    ctx.hook("barrier_wait", p, worker)
                    barrier.wait(cfg.timeout_s, ctx.stop, p)
                _batch_add(ctx, st, kw, stream)
                _tail_msm(ctx, job, st, kw, stream, t_gpu0)
                mh.fields.update(mutex_held_ms=mh.ms, total_start_fn_ms=(tr.now_ns() - t_entry) / 1e6)
        else:
            with tr.phase("mutex_held", **kw) as mh1:
                t_gpu0 = tr.now_ns()
                _ntt_msm_h(ctx, job, st, kw, stream)
            mutex.release()
            held = False
            t_out = tr.now_ns()
            with tr.phase("barrier_wait", **kw, fields={"no_line": True}):
                ctx.hook("barrier_wait", p, worker)
                barrier.wait(cfg.timeout_s, ctx.stop, p)
            with tr.phase("mutex_wait", **kw, fields={"relock": True}, detail={"relock": True}):
                ctx.stage("mutex_wait", p)
                mutex.acquire(worker, mutex_wait_limit_s(cfg), ctx.stop, p)
                held = True
                _check_device(ctx, gpu, p)
            tr.write(timing_line(f"gpu_tid=0 barrier_wait_ms={int((tr.now_ns() - t_out) / 1e6)}"))
            with tr.phase("mutex_held", **kw, detail={"relock": True}) as mh2:
                _batch_add(ctx, st, kw, stream)
                _tail_msm(ctx, job, st, kw, stream, t_gpu0)
                mh2.fields.update(mutex_held_ms=mh1.ms + mh2.ms, total_start_fn_ms=(tr.now_ns() - t_entry) / 1e6)
                if submit:
                    done = ctx.device(gpu).mark(stream)
        mutex.release()
        held = False
        if submit:
            _gpu_wait(ctx, st, kw, done)
        st.timings["total_start_fn_ms"] = (tr.now_ns() - t_entry) / 1e6
        return st
    except BaseException as e:
        barrier.abort(e)
        if held:
            mutex.release()  # a no-op if the watchdog force-released it
            held = False
        if submit:  # queued kernels may still read this partition's device buffers: let them finish
            with contextlib.suppress(Exception):
                ctx.device(gpu).synchronize(stream)
        if st.prep_thread is not None:
            st.prep_thread.join(cfg.timeout_s)
        raise
    finally:
        ctx.barriers.pop(p, None)


@dataclass
class PartitionResult:
    """Outcome of one partition: ``status`` (ok/failed/cancelled); ``h``, ``l``, ``a``, ``b_g1`` (1, 12) uint64;
    ``b_g2`` (96 compressed bytes, or (1, 24) for a real circuit); ``proof``; ``error``; ``stage``; ``timings`` (ms)."""

    partition: int
    status: str = "pending"
    worker: int | None = None
    gpu: int | None = None
    h: np.ndarray | None = None
    l: np.ndarray | None = None  # noqa: E741 - Groth16's L, as h, a, b_g1
    a: np.ndarray | None = None
    b_g1: np.ndarray | None = None
    b_g2: bytes | np.ndarray | None = None
    proof: Any = None
    error: str | None = None
    stage: str | None = None
    exception: BaseException | None = field(default=None, repr=False)
    timings: dict[str, float] = field(default_factory=dict)


def record_failure(ctx: WorkerContext, partition: int, e: BaseException, *, worker: int | None = None, gpu: int | None = None, stage: str | None = None) -> None:
    """Record a failed (or cancelled) partition, first error wins. ``stage`` defaults to the step
    the partition's threads were last in."""
    status = "cancelled" if isinstance(e, (Cancelled, KeyboardInterrupt)) else "failed"
    if stage is None:
        stage = getattr(e, "stage", None) or next((v[0] for (p, _), v in list(ctx.steps.items()) if p == partition), None)
    with ctx.results_lock:
        r = ctx.results.get(partition)
        if r is None or r.status in ("pending", "ok"):
            ctx.results[partition] = PartitionResult(partition, status, worker, gpu, error=f"{type(e).__name__}: {e}", stage=stage, exception=e)
        ctx.failed_partitions.add(partition)


def finalize(ctx: WorkerContext, st: StartState, prove_span: Span | None) -> None:
    """The finalizer for one partition (own thread; see the module docstring). Never raises:
    errors are recorded in the partition's result."""
    cfg, tr, p = ctx.config, ctx.tracer, st.partition
    kw: dict[str, Any] = {"worker": st.worker, "partition": p, "gpu": st.gpu}
    t0 = tr.now_ns()
    result = PartitionResult(p, "ok", st.worker, st.gpu, timings=dict(st.timings))
    err: BaseException | None = None
    try:
        with tr.phase("finalize", **kw) as fin:
            ctx.hook("finalize", p, st.worker)
            if st.prep_thread is not None:
                st.prep_thread.join(cfg.timeout_s)
                if st.prep_thread.is_alive():
                    raise TimeoutError(f"prep_msm/b_g2 thread of partition {p} still running after timeout_s={cfg.timeout_s}")
            if st.prep_error is not None:
                if isinstance(st.prep_error, KeyboardInterrupt):
                    raise st.prep_error
                raise PrepFailed(f"b_g2_msm failed: {st.prep_error!r}") from st.prep_error
            result.h = st.h
            for nm in ("l", "a", "b_g1"):
                parts = [x for x in (st.batch.get(nm), st.tail.get(nm)) if x is not None]
                # the batch_add part + the tail_msm part ((1, 12) each; our own results: unchecked)
                setattr(result, nm, g1_sum(np.concatenate(parts) if parts else np.zeros((0, LIMBS), dtype=np.uint64), checked=False))
            result.b_g2 = st.b_g2
            if cfg.real is not None:  # assemble the proof (r, s, the key's alpha/beta/delta)
                msms = {"h": st.h, **{nm: getattr(result, nm) for nm in ("l", "a", "b_g1")}}
                if any(v is None for v in msms.values()) or not isinstance(st.b_g2, np.ndarray):
                    raise RuntimeError(f"partition {p}: an MSM result is missing; no proof assembled")
                result.proof = cfg.real.finish(p, _witness(st.witness, p), msms, st.b_g2)
                fin.detail["proof"] = True
            t_d = tr.now_ns()
            st.batch.clear()
            st.tail.clear()
            st.preps.clear()  # the "async dealloc" of the large vectors
            fin.fields["async_dealloc_ms"] = (tr.now_ns() - t_d) / 1e6
    except BaseException as e:  # noqa: BLE001 - recorded in the partition's result (the finalizer never raises)
        err = e
    finish_ms = (tr.now_ns() - t0) / 1e6
    if prove_span is not None:
        prove_span.end(error=err)  # GPU_END after finalize, as upstream (engine.rs:3196)
    t_drop = tr.now_ns()
    drop_res_ms = (tr.now_ns() - t_drop) / 1e6
    try:
        with tr.phase("tracker_lock", **kw) as tl:
            if not ctx.tracker_lock.acquire(timeout=cfg.timeout_s):
                raise TimeoutError(f"tracker lock wait exceeded timeout_s={cfg.timeout_s}")
        lock_wait_ms = tl.ms
        t_proc = tr.now_ns()
        try:
            with tr.phase("malloc_trim", **kw, fields={"path": "success" if err is None else "discard"}) as mt:
                released = malloc_trim()
                mt.detail["released"] = "na" if released is None else int(released)
            if err is None and p not in ctx.abandoned:  # a hung step already failed it
                with ctx.results_lock:
                    ctx.results[p] = result
        finally:
            ctx.tracker_lock.release()
        process_ms = (tr.now_ns() - t_proc) / 1e6
        tr.info(
            "FIN_TIMING finalizer partition",
            job_id=tr.job_id,
            partition=p,
            finish_ms=int(finish_ms),
            drop_res_ms=int(drop_res_ms),
            lock_wait_ms=int(lock_wait_ms),
            process_ms=int(process_ms),
            total_ms=int((tr.now_ns() - t0) / 1e6),
        )
    except BaseException as e:  # noqa: BLE001 - recorded in the partition's result (the finalizer never raises)
        err = err or e
    if err is not None:
        if isinstance(err, KeyboardInterrupt):
            ctx.stop.set()
        record_failure(ctx, p, err, worker=st.worker, gpu=st.gpu)
    ctx.leave(p, "finalize")
