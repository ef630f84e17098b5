"""The run: synthesis workers -> GPU queue -> ``gw`` GPU workers per GPU -> finalizers (cuzk's partition path).

A failed step fails its partition only; KeyboardInterrupt stops the run cleanly (:class:`PipelineInterrupted` carries
the partial result). Every wait is bounded and a watchdog fails steps past ``timeout_s``."""

from __future__ import annotations

import itertools
import logging
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm.prep import warm_up as warm_up_prep
from zkgpu.pipeline.backend import Backend
from zkgpu.pipeline.config import PipelineConfig
from zkgpu.pipeline.cpu_backend import CpuBackend
from zkgpu.pipeline.gpu_backend import GpuBackend
from zkgpu.pipeline.sync import Cancelled, GpuMutex, StageTimeout, is_device_failure, watchdog_limit_s
from zkgpu.pipeline.synthesis import Circuit, make_circuit, partition_circuit, synthesize_into, warm_up_synthesis
from zkgpu.pipeline.trace import LogWriter, NvtxBackend, Tracer, info_line, write_events_parquet
from zkgpu.pipeline.worker import (
    PartitionResult,
    SynthesizedJob,
    WorkerContext,
    finalize,
    prove_start,
    record_failure,
)
from zkgpu.transfer import pinned_pool
from zkgpu.transfer.host_alloc import PageableAllocator

__all__ = ["PipelineResult", "PipelineInterrupted", "run_pipeline", "prepare_backend", "make_backend"]

GIB = 1 << 30


@dataclass
class PipelineResult:
    """Outcome of :func:`run_pipeline`: ``events``, ``log_lines``, ``partitions``, ``errors``, ``pool_stats`` (summed
    over per-GPU pools, with ``per_gpu``), ``wall_ms``, ``interrupted``."""

    config: PipelineConfig
    run: str
    events: pd.DataFrame
    log_lines: list[str]
    log_path: Path | None
    events_path: Path | None
    partitions: list[PartitionResult]
    errors: list[str]
    pool_stats: dict[str, Any] | None
    wall_ms: float
    interrupted: bool = False
    circuit: Circuit | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return all(p.status == "ok" for p in self.partitions)


class PipelineInterrupted(KeyboardInterrupt):
    """KeyboardInterrupt after a clean stop; ``.result`` is the partial :class:`PipelineResult`."""

    entry: dict[str, Any] | None = None  # the caller's record of the run (zkgpu.app.record sets its manifest entry)

    def __init__(self, result: PipelineResult, cause: str | None = None) -> None:
        why = f" by {cause}" if cause else ""
        super().__init__(f"pipeline run {result.run!r} interrupted{why}: {sum(p.status == 'ok' for p in result.partitions)}/{len(result.partitions)} partitions done")
        self.result = result


class _PoolLogHandler(logging.Handler):
    """Forwards ``zkgpu.transfer.pinned_pool``'s ``pinned pool…`` messages into the run's cuzk-format log."""

    def __init__(self, tracer: Tracer) -> None:
        super().__init__(logging.DEBUG)
        self.tracer = tracer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            if msg.startswith("pinned pool"):
                self.tracer.write(_pool_line(msg, record.levelname))
        except Exception:  # noqa: BLE001 - logging must never break the run
            self.handleError(record)


def _pool_line(msg: str, level: str) -> str:
    """tracing-subscriber style line; the level is right-aligned to 5 characters as it prints it."""
    lvl = {"WARNING": "WARN", "CRITICAL": "ERROR"}.get(level, level)
    return info_line(msg, target="zkgpu::pinned_pool").replace("  INFO ", f" {lvl:>5} ", 1)


def make_backend(config: PipelineConfig, circuit: Circuit) -> Backend:
    """The backend for ``config.device`` (call ``setup()``). Raises RuntimeError: device="gpu" without a GPU."""
    if config.device == "gpu":
        if not _cuda.gpu_available():
            raise RuntimeError("PipelineConfig.device='gpu' but no CUDA GPU is available; use device='cpu'")
        count = gpu_count()
        if config.gpus > count:
            raise ValueError(f"PipelineConfig.gpus={config.gpus}: this host has {count} CUDA device(s); use gpus <= {count}, or device='cpu' to emulate more")
        return GpuBackend(config, circuit)
    return CpuBackend(config, circuit)


def gpu_count() -> int:
    """CUDA devices present (0 without CuPy or a GPU)."""
    if not _cuda.gpu_available():
        return 0
    return int(_cuda.cupy().cuda.runtime.getDeviceCount())


def _pool_stats(pools: list[Any]) -> dict[str, Any] | None:
    """The pools' counters: one pool's :meth:`~zkgpu.transfer.pinned_pool.PinnedPool.stats`, or the sum over
    several with ``per_gpu`` (each pool's), see :attr:`PipelineResult.pool_stats`."""
    if not pools:
        return None
    each = [pl.stats().as_dict() for pl in pools]
    if len(each) == 1:
        return each[0]
    total: dict[str, Any] = {k: sum(d[k] for d in each) for k in each[0]}
    total["per_gpu"] = each
    return total


def prepare_backend(config: PipelineConfig) -> tuple[Circuit, Backend]:
    """Circuit structure + backend with its bases generated (the scaled-down SRS). Pass the pair
    to several :func:`run_pipeline` calls with the same n/seed/device to generate the bases once."""
    circuit = make_circuit(config)
    backend = make_backend(config, circuit)
    backend.setup()
    return circuit, backend


def run_pipeline(config: PipelineConfig, *, prepared: tuple[Circuit, Backend] | None = None, pool: Any = None, nvtx: NvtxBackend | None = None) -> PipelineResult:
    """Prove ``config.partitions`` partitions; failed ones are in ``errors`` (no exception).

    Args:
        prepared: ``prepare_backend(config)`` to reuse bases. pool: a PinnedPool (or one per GPU with ``per_gpu``).
        nvtx: NVTX backend (default :func:`zkgpu.pipeline.trace.default_nvtx`).
    Raises:
        FileExistsError: an output exists. ValueError: too many gpus, or pools not one per GPU.
        PipelineInterrupted: on KeyboardInterrupt. RuntimeError: device="gpu" without a GPU."""
    for pth in (config.log_path, config.events_path):
        if pth is not None and Path(pth).exists():
            raise FileExistsError(f"{pth} exists; zkgpu never overwrites a log or event file (use a fresh run folder)")
    per_gpu = config.transfer == "pinned_pool" and config.pool_scope == "per_gpu"
    if config.transfer == "pinned_pool" and pool is not None and per_gpu != isinstance(pool, (list, tuple)):
        raise ValueError(f"run_pipeline(pool=...) with pool_scope={config.pool_scope!r} takes {'a list of one pool per GPU' if per_gpu else 'one PinnedPool'}, got {type(pool).__name__}")
    if per_gpu and pool is not None and len(pool) != config.gpus:
        raise ValueError(f"run_pipeline(pool=...) with pool_scope='per_gpu' takes {config.gpus} pools (one per GPU), got {len(pool)}")
    if config.device == "gpu" and config.gpus > 1 and config.gpus > gpu_count():
        raise ValueError(f"PipelineConfig.gpus={config.gpus}: this host has {gpu_count()} CUDA device(s); use gpus <= {gpu_count()}, or device='cpu' to emulate more")
    circuit, backend = prepared if prepared is not None else prepare_backend(config)
    backends = {g: backend.for_device(g) for g in range(config.gpus)}
    warm_up_prep(config.prep)  # numba / NVRTC compilation of the prep variant, before any timed phase
    warm_up_synthesis()  # the synthetic fill's numba loops, likewise
    log = LogWriter.create(config.log_path, echo=_stderr_echo if config.echo else None) if config.log_path is not None else LogWriter(echo=_stderr_echo if config.echo else None)
    tracer = Tracer(config.run_name, log=log, nvtx=nvtx, gpu_field=config.gpus > 1)
    own_pool = False
    pools: list[Any] = []  # the run's pools: one (shared) or one per GPU
    if config.transfer == "pinned_pool":
        if pool is None:
            pools = [pinned_pool.PinnedPool(PageableAllocator() if config.device == "cpu" else None) for _ in range(config.gpus if per_gpu else 1)]
            own_pool = True
        else:
            pools = list(pool) if per_gpu else [pool]
    ctx = WorkerContext(
        config=config,
        circuit=circuit,
        backend=backend,
        tracer=tracer,
        mutexes=[GpuMutex(g) for g in range(config.gpus)],
        tracker_lock=threading.Lock(),
        stop=threading.Event(),
        # lock_scope="submit": the workers of a GPU queue their GPU phases on one shared stream
        gpu_streams={g: backends[g].new_stream() for g in range(config.gpus)} if config.lock_scope == "submit" else {},
        backends=backends,
    )
    run = _Run(ctx, pools)
    pool_logger = pinned_pool.log
    handler = _PoolLogHandler(tracer)
    old_level = pool_logger.level
    if pools:
        pool_logger.addHandler(handler)
        pool_logger.setLevel(logging.DEBUG)
    try:
        run.execute()
    finally:
        if pools:
            pool_logger.removeHandler(handler)
            pool_logger.setLevel(old_level)
    wall_ms = tracer.now_ns() / 1e6
    pool_stats = _pool_stats(pools)
    if own_pool:
        for pl in pools:
            pl.close()
    events = tracer.events()
    parts = []
    for p in range(config.partitions):
        r = ctx.results.get(p)
        if r is None:
            why = run.stop_reason if ctx.stop.is_set() else "no synthesis thread was left to take it"
            r = PartitionResult(p, "cancelled", error=f"Cancelled: not started ({why})")
        parts.append(r)
    errors = [f"partition {r.partition}: {r.error}" for r in parts if r.status != "ok"]
    log.close()
    events_path = None
    if config.events_path is not None:
        events_path = write_events_parquet(events, config.events_path)
    result = PipelineResult(config, config.run_name, events, list(log.lines), log.path, events_path, parts, errors, pool_stats, wall_ms, run.interrupted, circuit)
    if run.interrupted:
        raise PipelineInterrupted(result, run.interrupt_cause)
    return result


def _stderr_echo(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _Held:
    """A partition's a/b/c checkout and queue permit, each released once by whoever comes first."""

    def __init__(self, permits: threading.Semaphore) -> None:
        self.permits = permits
        self.abc: Any = None  # the current checkout; set by the synthesis thread
        self._lock = threading.Lock()
        self._permit_done = False

    def release_buffers(self) -> None:
        """Check a/b/c in (once; a checkout made after an earlier call is checked in too)."""
        with self._lock:
            abc, self.abc = self.abc, None
        if abc is not None:
            abc.release()

    def release(self) -> None:
        self.release_buffers()
        with self._lock:
            done, self._permit_done = self._permit_done, True
        if not done:
            self.permits.release()


class _Run:
    """Threads and queues of one run."""

    def __init__(self, ctx: WorkerContext, pools: list[Any]) -> None:
        cfg = ctx.config
        self.ctx, self.pools = ctx, pools
        self.work: queue.Queue[int] = queue.Queue()
        for p in range(cfg.partitions):
            self.work.put(p)
        # one GPU queue (shared pool or none: any worker takes any partition), or one per GPU (per_gpu pools)
        self.routed = len(pools) > 1
        self.gpu_qs: list[queue.PriorityQueue[tuple[float, int, SynthesizedJob | None]]] = [queue.PriorityQueue() for _ in range(cfg.gpus if self.routed else 1)]
        self.assigned = [0] * cfg.gpus  # routed: partitions queued on or in the start half of each GPU
        self.route_lock = threading.Lock()
        self.seq = itertools.count()
        self.permits = threading.Semaphore(cfg.effective_queue_depth)
        self.finalizers: list[threading.Thread] = []
        self.fin_lock = threading.Lock()
        self.interrupted = False
        self.busy: dict[int, int | None] = {}
        self.abandoned_threads: set[int | None] = set()
        self.gpu_threads: list[threading.Thread] = []
        self.thread_gpus: list[int] = []  # the GPU of each of gpu_threads
        self.stop_reason = "run stopped"
        self.interrupt_cause: str | None = None

    # -- helpers --------------------------------------------------------------------------------
    def _interrupt(self, cause: BaseException | None = None) -> None:
        if cause is not None and self.interrupt_cause is None:
            self.interrupt_cause = f"{type(cause).__name__}({str(cause)!r})" if str(cause) else type(cause).__name__
        self.interrupted = True
        self.stop_reason = "run interrupted"
        self.ctx.stop.set()

    def _q(self, gpu: int) -> queue.PriorityQueue[tuple[float, int, SynthesizedJob | None]]:
        return self.gpu_qs[gpu if self.routed else 0]

    def _route(self) -> int:
        """The GPU a partition goes to (per_gpu pools): the live one with the fewest partitions queued or
        in its start half, the lowest ordinal on a tie; GPU 0 with a shared queue."""
        if not self.routed:
            return 0
        with self.route_lock:
            live = [g for g in range(self.ctx.config.gpus) if g not in self.ctx.lost_gpus] or [0]
            g = min(live, key=lambda g: (self.assigned[g], g))
            self.assigned[g] += 1
            return g

    def _unroute(self, gpu: int | None) -> None:
        if self.routed and gpu is not None:
            with self.route_lock:
                self.assigned[gpu] -= 1

    def _lose(self, gpu: int, e: BaseException) -> None:
        """GPU ``gpu`` failed as a device: its workers take no more partitions; its queued ones go to the
        others (routed: they take from a lost GPU's queue when their own is empty). Every GPU lost stops the run."""
        ctx = self.ctx
        with self.route_lock:
            if gpu in ctx.lost_gpus:
                return
            ctx.lost_gpus.add(gpu)
            every = len(ctx.lost_gpus) == ctx.config.gpus
        ctx.tracer.write(f"zkgpu: gpu {gpu} lost ({type(e).__name__}: {e}); its workers take no more partitions")
        if every and not ctx.stop.is_set():
            self.stop_reason = "every GPU failed"
            ctx.stop.set()

    def _next_job(self, gpu: int) -> tuple[float, int, SynthesizedJob | None]:
        """The next queue entry for a worker of ``gpu`` (raises queue.Empty after a short wait): its own
        queue's, else (routed) a lost GPU's queued partition."""
        own: tuple[float, int, SynthesizedJob | None] | None
        try:
            own = self._q(gpu).get(timeout=0.05)
        except queue.Empty:
            own = None
        if not self.routed or (own is not None and own[2] is not None):
            if own is None:
                raise queue.Empty
            return own
        for g in sorted(self.ctx.lost_gpus):  # nothing (or only its shutdown sentinel) left on its own queue
            try:
                item = self._q(g).get_nowait()
            except queue.Empty:
                continue
            if item[2] is None:  # a lost worker's shutdown sentinel: not this worker's
                self._q(g).put(item)
                continue
            if own is not None:
                self._q(gpu).put(own)  # its sentinel back: the stolen partition first
            self._unroute(g)
            with self.route_lock:
                self.assigned[gpu] += 1
            return item
        if own is None:
            raise queue.Empty
        return own

    def _abandoned_me(self) -> bool:
        """The watchdog gave up on the calling thread (one of its steps hung)."""
        return threading.get_ident() in self.abandoned_threads

    def _fail(self, p: int, e: BaseException, **kw: Any) -> None:
        if isinstance(e, KeyboardInterrupt):
            self._interrupt(e)
        record_failure(self.ctx, p, e, **kw)

    # -- synthesis ------------------------------------------------------------------------------
    def _synth_worker(self, sid: int) -> None:
        ctx, cfg, tr = self.ctx, self.ctx.config, self.ctx.tracer
        while not ctx.stop.is_set():
            try:
                p = self.work.get_nowait()
            except queue.Empty:
                return
            got = False
            while not ctx.stop.is_set():
                if self.permits.acquire(timeout=0.05):
                    got = True
                    break
            if not got:
                record_failure(ctx, p, Cancelled(f"{self.stop_reason} before synthesis"), stage="synthesize")
                return
            held = _Held(self.permits)
            ctx.releasers[p] = held.release
            gpu = self._route()
            routed = True
            try:
                with tr.phase("synthesize", partition=p, detail={"synth_worker": sid, **({"gpu": gpu} if self.routed else {})}) as ph:
                    ctx.hook("synthesize", p, None)
                    if self.pools:
                        tr.info("attempting pinned memory synthesis", num_constraints=cfg.n, scalar_size=32, buf_gib=round(cfg.n * 32 / GIB, 4))
                        abc = self.pools[gpu if self.routed else 0].checkout_abc(cfg.n)
                        held.abc = abc
                        a, b, c, pinned = abc.a, abc.b, abc.c, abc.pinned
                    else:
                        a, b, c = (np.empty((cfg.n, 4), dtype=np.uint64) for _ in range(3))
                        pinned = False
                    aux = np.empty((cfg.aux_size, 4), dtype=np.uint64)
                    witness = synthesize_into(cfg, p, a, b, c, aux)
                    ph.fields["is_pinned"] = pinned
                    ph.bytes = 3 * a.nbytes
                    ph.detail["is_pinned"] = pinned
                if p in ctx.abandoned:  # the watchdog failed it (and released what it held) meanwhile
                    held.release_buffers()  # a checkout made after the watchdog ran
                    self._unroute(gpu)
                    return  # this (hung) thread was abandoned: it takes no more partitions
                job = SynthesizedJob(p, a, b, c, aux, pinned, held.release_buffers, witness=witness,
                                     circuit=partition_circuit(cfg, ctx.circuit, p), synth_ms=ph.ms)
                job.queue_span = tr.begin("gpu_queue", partition=p)
                ctx.releasers.pop(p, None)  # the job owns a/b/c and the permit now
                ctx.leave(p, "synth")
                routed = False  # the queue entry carries it now
                self._q(gpu).put((p, next(self.seq), job))
            except BaseException as e:  # noqa: BLE001 - any failure (KeyboardInterrupt included) fails this partition only
                held.release()
                if routed:
                    self._unroute(gpu)
                self._fail(p, e)
                if self._abandoned_me():
                    return
            finally:
                ctx.leave(p, "synth")

    # -- GPU workers ----------------------------------------------------------------------------
    def _gpu_worker(self, w: int, gpu: int, stream: Any) -> None:
        ctx, tr = self.ctx, self.ctx.tracer
        ctx.device(gpu).bind_thread()  # CuPy's current device is per thread: this worker set's GPU
        while True:
            if ctx.stop.is_set() or gpu in ctx.lost_gpus:
                return
            try:
                item = self._next_job(gpu)
            except queue.Empty:
                continue
            job = item[2]
            if job is None:
                return
            if gpu in ctx.lost_gpus:  # lost while this worker waited: the partition goes back for the others
                self._unroute(gpu)
                self._q(self._route()).put(item)
                return
            p = job.partition
            t_pick = time.perf_counter()
            if job.queue_span is not None:
                job.queue_span.phase.worker = w
                job.queue_span.phase.gpu = gpu
                job.queue_span.end()
            prove_span = None
            released = False

            def release_abc(job: SynthesizedJob = job) -> None:
                nonlocal released
                if not released:
                    released = True
                    job.release()  # cuzk release_abc(): a/b/c back to the pool right after start
                    self.permits.release()
                    self._unroute(gpu)

            ctx.releasers[p] = release_abc
            ctx.stage("gpu_pickup", p)
            step_now: str | None = "gpu_pickup"
            try:
                t0 = time.perf_counter()
                self.busy.setdefault(w, None)  # status update
                t1 = time.perf_counter()
                with ctx.tracker_lock:  # fail check (engine.rs: JobTracker lock #1)
                    job_failed = False  # partitions fail independently here (one job per run)
                t2 = time.perf_counter()
                with ctx.tracker_lock:  # mark busy (lock #2)
                    self.busy[w] = p
                t3 = time.perf_counter()
                tr.info(
                    "GPU_TIMING hot_path pre-prove overhead",
                    worker_id=w,
                    partition=p,
                    status_ms=int((t1 - t0) * 1e3),
                    fail_check_ms=int((t2 - t1) * 1e3),
                    mark_busy_ms=int((t3 - t2) * 1e3),
                    total_overhead_ms=int((t3 - t0) * 1e3),
                )
                if job_failed:
                    raise Cancelled("job already failed")
                prove_span = tr.begin("prove", worker=w, partition=p, gpu=gpu)
                t_call = time.perf_counter()
                try:
                    st = prove_start(ctx, job, w, gpu, stream)
                finally:
                    step_now = ctx.steps.get((p, "gpu"), (None,))[0]  # where a failure happened
                    release_abc()
                    ctx.releasers.pop(p, None)
                    ctx.leave(p, "gpu")
                if self._abandoned_me():  # one of its steps hung past timeout_s: the watchdog failed it
                    return  # the run no longer waits for this thread: it takes no more partitions
                if p in ctx.abandoned:  # another thread of the partition hung (prep): already failed
                    with ctx.tracker_lock:
                        self.busy[w] = None
                    continue
                t_ret = time.perf_counter()
                st.timings["prove_start_ms"] = (t_ret - t_call) * 1e3
                tr.info("GPU_TIMING spawn_blocking prove_start", worker_id=w, partition=p, spawn_to_enter_ms=0, prove_start_ms=int((t_ret - t_call) * 1e3))
                tr.info("GPU_TIMING prove_start returned", worker_id=w, partition=p, total_pre_prove_ms=int((t_ret - t_pick) * 1e3), spawn_blocking_wall_ms=int((t_ret - t_call) * 1e3))
            except BaseException as e:  # noqa: BLE001 - any failure (KeyboardInterrupt included) fails this partition only
                release_abc()
                ctx.releasers.pop(p, None)
                step_now = ctx.steps.get((p, "gpu"), (step_now,))[0]
                ctx.leave(p, "gpu")
                if prove_span is not None:
                    prove_span.end(error=e)
                self._fail(p, e, worker=w, gpu=gpu, stage=getattr(e, "stage", None) or step_now)
                if is_device_failure(e):
                    self._lose(gpu, e)  # this worker set stops at the top of its loop
                if self._abandoned_me():
                    return
                with ctx.tracker_lock:
                    self.busy[w] = None
                continue
            with ctx.tracker_lock:
                self.busy[w] = None
            th = threading.Thread(target=self._finalizer, args=(st, prove_span), name=f"finalizer-p{p}", daemon=True)
            with self.fin_lock:
                self.finalizers.append(th)
            th.start()

    def _finalizer(self, st: Any, span: Any) -> None:
        finalize(self.ctx, st, span)
        if self.ctx.stop.is_set() and not self.interrupted and any(isinstance(r.exception, KeyboardInterrupt) for r in list(self.ctx.results.values())):
            self.interrupted = True

    # -- orchestration --------------------------------------------------------------------------
    def _watchdog(self) -> None:
        """Fail partitions whose step ran past its limit (:func:`~zkgpu.pipeline.sync.watchdog_limit_s`) and release what they hold."""
        ctx = self.ctx
        limit = ctx.config.timeout_s
        now = time.monotonic()
        for (p, lane), (step, t0, ident) in list(ctx.steps.items()):
            if p in ctx.abandoned:
                continue
            if now - t0 <= watchdog_limit_s(ctx.config, step):
                continue
            err = StageTimeout(f"partition {p}: {step} did not return within {watchdog_limit_s(ctx.config, step):g} s (timeout_s={limit:g}); its {lane} thread was abandoned "
                               f"and the partition's a/b/c, queue permit, GPU mutex and prep barrier released", partition=p, stage=step)
            ctx.abandoned.add(p)
            self.abandoned_threads.add(ident)
            record_failure(ctx, p, err, stage=step)
            for m in ctx.mutexes:
                m.force_release(p)
            barrier = ctx.barriers.get(p)
            if barrier is not None:
                barrier.abort(err)
            release = ctx.releasers.pop(p, None)
            if release is not None:
                release()
            ctx.tracer.write(f"zkgpu watchdog: {err}")
        gone = [th.ident in self.abandoned_threads or (not th.is_alive() and gpu in ctx.lost_gpus) for th, gpu in zip(self.gpu_threads, self.thread_gpus, strict=True)]
        if gone and all(gone) and not ctx.stop.is_set():  # hung, or exited with their lost GPU: nothing can take the queued partitions
            hung = any(th.ident in self.abandoned_threads for th in self.gpu_threads)
            self.stop_reason = "every GPU worker hung" if len(ctx.lost_gpus) == 0 else "every GPU worker hung or lost its GPU" if hung else "every GPU failed"
            ctx.stop.set()

    def _join(self, threads: list[threading.Thread], deadline: float) -> bool:
        """Wait for ``threads`` (skipping abandoned ones), running the watchdog. Returns False when
        the overall deadline passed (the run then stops waiting)."""
        cfg = self.ctx.config
        while True:
            alive = [th for th in threads if th.is_alive() and th.ident not in self.abandoned_threads]
            if not alive:
                return True
            try:
                alive[0].join(0.05)
            except KeyboardInterrupt as e:
                self._interrupt(e)
            self._watchdog()
            if time.monotonic() > deadline:
                if not self.ctx.stop.is_set():
                    self.stop_reason = f"run past its overall deadline ({cfg.partitions + 2} x timeout_s)"
                self.ctx.stop.set()
                if time.monotonic() > deadline + cfg.timeout_s:
                    return False  # daemon threads; recorded below as cancelled/timeouts

    def execute(self) -> None:
        cfg, ctx = self.ctx.config, self.ctx
        # the overall deadline only guards against a wait that escaped both its own timeout and
        # the watchdog
        deadline = time.monotonic() + cfg.timeout_s * (cfg.partitions + 2)
        synth = [threading.Thread(target=self._synth_worker, args=(i,), name=f"synth-{i}", daemon=True) for i in range(cfg.synth_workers)]
        # streams are made here so that a CUDA error surfaces from run_pipeline, not in a thread
        gpu_workers = [
            threading.Thread(target=self._gpu_worker, args=(g * cfg.gw + i, g, ctx.device(g).new_stream()), name=f"gpu{g}-worker{i}", daemon=True)
            for g in range(cfg.gpus)
            for i in range(cfg.gw)
        ]
        self.gpu_threads = gpu_workers
        self.thread_gpus = [g for g in range(cfg.gpus) for _ in range(cfg.gw)]
        try:
            for th in synth + gpu_workers:
                th.start()
            self._join(synth, deadline)
            for g in range(cfg.gpus):
                for _ in range(cfg.gw):
                    self._q(g).put((float("inf"), next(self.seq), None))
            self._join(gpu_workers, deadline)
            while True:
                with self.fin_lock:
                    pending = list(self.finalizers)
                if self._join(pending, deadline):
                    with self.fin_lock:
                        if len(self.finalizers) == len(pending):
                            break
                else:
                    break
        except KeyboardInterrupt as e:
            self._interrupt(e)
            self._join(synth + gpu_workers, deadline)
        finally:
            self._drain()
        if any(isinstance(r.exception, KeyboardInterrupt) for r in ctx.results.values()):
            self.interrupted = True

    def _drain(self) -> None:
        """Release partitions still queued (stop) and mark them cancelled."""
        for q in self.gpu_qs:
            self._drain_queue(q)

    def _drain_queue(self, q: queue.PriorityQueue[tuple[float, int, SynthesizedJob | None]]) -> None:
        while True:
            try:
                _, _, job = q.get_nowait()
            except queue.Empty:
                return
            if job is None:
                continue
            if job.queue_span is not None:
                job.queue_span.end(error=Cancelled("run stopped"))
            job.release()
            self.permits.release()
            record_failure(self.ctx, job.partition, Cancelled(f"{self.stop_reason} while it was queued"), stage="gpu_queue")
