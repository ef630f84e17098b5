"""A discrete-event what-if model of the cuzk partition pipeline (simpy), after ``generate_groth16_proofs_start_c``
(curio ``extern/supraseal-c2/cuda/groth16_cuda.cu``; ``notes/cuzk-pipeline.md``).

``synth_workers`` CPU processes fill a bounded GPU queue; ``gw`` workers per GPU start prep_msm on the CPU (then
b_g2_msm), take the per-GPU mutex and run ntt_msm_h, the barrier wait, batch_add and tail_msm. ``scope``:
``coarse`` waits at the barrier inside the mutex, ``narrow`` outside it, ``submit`` holds it only while the host
queues kernels on one shared stream, ``none`` has no mutex. ``h2d_stage``: ``in_lock`` copies a/b/c inside
ntt_msm_h, ``pre_lock`` before the mutex. With several GPUs, pageable copies in flight share ``host_copy_gbps``
(:mod:`zkgpu.analysis.shared_bandwidth`); pinned copies keep ``pinned_gbps``.

Units: ms in :class:`ModelParams`, ns in the emitted event table (:mod:`zkgpu.core.events`, ``source="model"``);
every reported number is computed by :mod:`zkgpu.analysis.metrics` on that table.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import simpy

from zkgpu.analysis import metrics
from zkgpu.analysis.shared_bandwidth import SharedBandwidth
from zkgpu.core.events import normalize_events

__all__ = [
    "MODEL_TOLERANCE", "model_accuracy", "model_accuracy_text",
    "ModelParams",
    "ModelResult",
    "SCOPES",
    "MAX_PARTITIONS",
    "MAX_RUN_MS",
    "TRANSFERS",
    "H2D_STAGES",
    "in_lock_tail_ms",
    "simulate",
    "what_if",
    "compare",
    "utilization",
    "compute_bound_per_min",
]

SCOPES = ("coarse", "narrow", "none", "submit")
MAX_PARTITIONS = 10_000
"""The most partitions one simulation runs (the bound of ``zkgpu record`` and ``zkgpu pipeline``): beyond it simpy
runs for hours."""
MAX_RUN_MS = 1e12
"""The longest simulated run, ms (about 32 years): its event times stay far inside int64 nanoseconds."""
#: transfer path names accepted by :func:`simulate`; ``registered`` and ``pinned_pool`` use the
#: pinned rate (both DMA from page-locked memory), ``resident`` moves nothing (compute-only bound).
TRANSFERS = ("pageable", "registered", "pinned", "pinned_pool", "resident")
#: where a/b/c are copied (:attr:`zkgpu.pipeline.config.PipelineConfig.h2d_stage`)
H2D_STAGES = ("in_lock", "pre_lock")


def in_lock_tail_ms(h_kernel_ms: float, h2d_ms: float) -> float:
    """The part of the H computation after the last of the three copies when a/b/c are copied
    inside ntt_msm_h (ms): ``max(h_kernel_ms / 3, h_kernel_ms - 2 * h2d_ms / 3)`` — each
    vector's NTTs (about a third of the kernels) queue behind its own copy, the copies follow
    one another, so the kernels of a and b run under the later copies unless they outlast them
    (see the module docstring)."""
    return max(h_kernel_ms / 3.0, h_kernel_ms - 2.0 * h2d_ms / 3.0)




@dataclass(frozen=True)
class ModelParams:
    """Per-partition durations (ms), sizes (bytes) and rates (GB/s = 1e9 B/s) of the model.

    Attributes:
        prep_msm_ms: CPU prep_msm per partition.
        ntt_ms: the H computation after the last copy with ``h2d_stage="in_lock"``, H2D excluded.
        h_kernel_ms: the H computation with a/b/c already on the device (0 = unknown: ``ntt_ms``).
        h_msm_ms: GPU H MSM inside ntt_msm_h (0: part of ``ntt_ms``).
        batch_add_ms: GPU batch additions (L, A, B_g1, B_g2).
        tail_msm_ms: GPU tail MSMs (L, A, B_g1).
        h2d_bytes: bytes of a, b, c copied host→device per partition.
        pageable_gbps, pinned_gbps: H2D rates from pageable / page-locked memory.
        b_g2_msm_ms: CPU G2 tail MSM after prep_msm (delays finalize only).
        synth_ms: synthesis of one partition (0 = always available).
        host_copy_gbps: host bandwidth all GPUs' pageable copies share (0 = no shared limit).
        synth_workers: concurrent synthesis workers.
        finalize_ms: epilogue after joining prep/b_g2 (outside the mutex).
        pre_lock_ms: worker overhead between pickup and asking for the mutex.
        lock_overhead_ms: mutex held beyond the phases, after tail_msm; the GPU idles meanwhile.
        source: where the numbers come from (free text).
    """

    prep_msm_ms: float
    ntt_ms: float
    batch_add_ms: float
    tail_msm_ms: float
    h2d_bytes: float
    pageable_gbps: float
    pinned_gbps: float
    h_msm_ms: float = 0.0
    h_kernel_ms: float = 0.0
    b_g2_msm_ms: float = 0.0
    synth_ms: float = 0.0
    synth_workers: int = 1
    finalize_ms: float = 0.0
    pre_lock_ms: float = 0.0
    lock_overhead_ms: float = 0.0
    host_copy_gbps: float = 0.0
    source: str = "manual"

    def __post_init__(self) -> None:
        for name in (
            "prep_msm_ms", "ntt_ms", "h_msm_ms", "h_kernel_ms", "batch_add_ms", "tail_msm_ms", "h2d_bytes",
            "b_g2_msm_ms", "synth_ms", "finalize_ms", "pre_lock_ms", "lock_overhead_ms", "host_copy_gbps",
        ):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"ModelParams.{name} must be a finite number >= 0, got {v!r}")
        for name in ("pageable_gbps", "pinned_gbps"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"ModelParams.{name} must be a finite rate > 0 GB/s, got {v!r}")
        if not (isinstance(self.synth_workers, (int, np.integer)) and self.synth_workers >= 1):
            raise ValueError(f"ModelParams.synth_workers must be an int >= 1, got {self.synth_workers!r}")

    @property
    def gpu_compute_ms(self) -> float:
        """GPU compute per partition without transfers: ntt + h_msm + batch_add + tail_msm, ms."""
        return self.ntt_ms + self.h_msm_ms + self.batch_add_ms + self.tail_msm_ms

    @property
    def h_on_device_ms(self) -> float:
        """The H computation with a/b/c already on the device: ``h_kernel_ms``, else ``ntt_ms``."""
        return self.h_kernel_ms if self.h_kernel_ms > 0 else self.ntt_ms

    def h2d_ms(self, gbps: float) -> float:
        """H2D time of a, b, c at ``gbps`` GB/s, ms."""
        return self.h2d_bytes / (gbps * 1e9) * 1e3

    def to_dict(self) -> dict[str, Any]:
        """The parameters as a plain dict (for JSON / tables)."""
        return asdict(self)


@dataclass
class ModelResult:
    """One simulated run.

    Attributes:
        events: event table (schema of :mod:`zkgpu.core.events`, ``source="model"``).
        params: the parameters used (after ``prep_speedup``), settings: the knobs of this run.
        compute_util, kernel_util, timeline_util: fractions in [0, 1] (:func:`zkgpu.analysis.metrics.utilization`).
        partitions_per_min: partitions per minute over the run's wall span.
        wall_ms: the run's wall span (first synthesis start → last event end), ms.
    """

    events: pd.DataFrame
    params: ModelParams
    settings: dict[str, Any]
    partitions_per_min: float
    wall_ms: float

    @functools.cached_property
    def _utils(self) -> dict[str, float]:
        return utilization(self.events)  # on first use: a throughput-only caller (diagnose's gain) never pays it

    @property
    def compute_util(self) -> float:
        return self._utils["compute_util"]

    @property
    def kernel_util(self) -> float:
        return self._utils["kernel_util"]

    @property
    def timeline_util(self) -> float:
        return self._utils["timeline_util"]

    def summary(self) -> dict[str, Any]:
        """Settings plus utilizations, throughput and median waits, one flat dict."""
        med = metrics.phase_medians(self.events)
        return {
            **self.settings,
            "compute_util": self.compute_util,
            "kernel_util": self.kernel_util,
            "timeline_util": self.timeline_util,
            "partitions_per_min": self.partitions_per_min,
            "wall_ms": self.wall_ms,
            "mutex_wait_ms": med.get("mutex_wait", 0.0),
            "barrier_wait_ms": med.get("barrier_wait", 0.0),
            "ntt_msm_h_ms": med.get("ntt_msm_h", float("nan")),
        }


# --------------------------------------------------------------------------- simulation


def _rate_for(params: ModelParams, transfer: str, h2d_gbps: float | None) -> float | None:
    if transfer not in TRANSFERS:
        raise ValueError(f"transfer must be one of {TRANSFERS}, got {transfer!r}")
    if transfer == "resident":
        return None
    if h2d_gbps is not None:
        if not (math.isfinite(h2d_gbps) and h2d_gbps > 0):
            raise ValueError(f"h2d_gbps must be a finite rate > 0 GB/s, got {h2d_gbps!r}")
        return float(h2d_gbps)
    return params.pageable_gbps if transfer == "pageable" else params.pinned_gbps


def simulate(
    params: ModelParams,
    *,
    partitions: int = 20,
    gw: int = 2,
    scope: str = "coarse",
    transfer: str = "pageable",
    h2d_stage: str = "in_lock",
    h2d_gbps: float | None = None,
    prep_speedup: float = 1.0,
    gpus: int = 1,
    synth_workers: int | None = None,
    max_queue: int | None = None,
    jitter: float = 0.0,
    seed: int = 0,
    run: str | None = None,
    host_copy_gbps: float | None = None,
) -> ModelResult:
    """Simulate ``partitions`` partitions through the pipeline; returns a :class:`ModelResult`.

    Args:
        params: per-partition durations and rates.
        partitions: number of partitions (>= 1).
        gw: GPU workers per GPU sharing one mutex (>= 1).
        scope: ``coarse``, ``narrow``, ``submit`` or ``none`` (module doc).
        transfer: one of :data:`TRANSFERS`; picks the H2D rate (``resident``: no H2D).
        h2d_stage: one of :data:`H2D_STAGES` (``pre_lock`` always with ``submit``).
        h2d_gbps: override the H2D rate, GB/s.
        prep_speedup: prep_msm runs this many times faster (> 0).
        gpus: number of GPUs, each with its own mutex, stream and ``gw`` workers.
        synth_workers, host_copy_gbps: override the params' values.
        max_queue: bound of the synthesized-partition queue (None: unbounded).
        jitter: coefficient of variation of every duration (lognormal, mean kept); 0 = deterministic.
        seed: random seed for ``jitter``.
        run: run name in the event table (default built from the settings).

    Raises:
        ValueError: a setting is out of range (names it).
    """
    for name, v in (("partitions", partitions), ("gw", gw), ("gpus", gpus)):
        if isinstance(v, bool) or not (isinstance(v, (int, np.integer)) and v >= 1):
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    if partitions > MAX_PARTITIONS:
        raise ValueError(f"partitions={partitions} is more than {MAX_PARTITIONS} (the bound of zkgpu record and zkgpu pipeline)")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    if h2d_stage not in H2D_STAGES:
        raise ValueError(f"h2d_stage must be one of {H2D_STAGES}, got {h2d_stage!r}")
    if not (isinstance(prep_speedup, (int, float)) and math.isfinite(prep_speedup) and prep_speedup > 0):
        raise ValueError(f"prep_speedup must be a finite number > 0, got {prep_speedup!r}")
    if not (isinstance(jitter, (int, float)) and jitter >= 0 and math.isfinite(jitter)):
        raise ValueError(f"jitter must be a finite number >= 0, got {jitter!r}")
    if max_queue is not None and (isinstance(max_queue, bool) or not isinstance(max_queue, (int, np.integer)) or max_queue < 1):
        raise ValueError(f"max_queue must be an int >= 1 or None, got {max_queue!r}")
    sw = params.synth_workers if synth_workers is None else synth_workers
    if not (isinstance(sw, (int, np.integer)) and sw >= 1):
        raise ValueError(f"synth_workers must be an int >= 1, got {sw!r}")
    host_gbps = params.host_copy_gbps if host_copy_gbps is None else host_copy_gbps
    if not (isinstance(host_gbps, (int, float)) and math.isfinite(host_gbps) and host_gbps >= 0):
        raise ValueError(f"host_copy_gbps must be a finite rate >= 0 GB/s (0: no shared limit), got {host_gbps!r}")
    rate = _rate_for(params, transfer, h2d_gbps)
    h2d_ms = 0.0 if rate is None else params.h2d_ms(rate)
    pre_lock = scope == "submit" or h2d_stage == "pre_lock"  # a/b/c copied before the mutex
    # the H computation inside the mutex: after the copies (in_lock), or on device-resident inputs
    ntt_ms = params.h_on_device_ms if (pre_lock or rate is None) else params.ntt_ms
    prep_ms = params.prep_msm_ms / prep_speedup
    steps = (h2d_ms, ntt_ms, prep_ms, params.h_msm_ms, params.batch_add_ms, params.tail_msm_ms, params.b_g2_msm_ms, params.synth_ms,
             params.finalize_ms, params.pre_lock_ms, params.lock_overhead_ms)
    longest = float(partitions) * sum(steps)
    if not (math.isfinite(longest) and longest <= MAX_RUN_MS):
        raise ValueError(f"the run would last up to {longest:.3g} ms ({partitions} partitions, an H2D copy of {h2d_ms:.3g} ms), beyond "
                         f"the model's clock ({MAX_RUN_MS:.0e} ms): a rate or a duration out of range")
    used = replace(params, prep_msm_ms=prep_ms, synth_workers=int(sw))
    settings = {
        "partitions": int(partitions), "gw": int(gw), "scope": scope, "transfer": transfer,
        "h2d_stage": "pre_lock" if pre_lock else "in_lock", "h2d_gbps": rate, "prep_speedup": float(prep_speedup), "gpus": int(gpus),
        "synth_workers": int(sw), "max_queue": max_queue, "jitter": float(jitter), "host_copy_gbps": float(host_gbps),
    }
    run = run or f"model-{transfer}-{scope}-gw{gw}" + (f"-gpus{gpus}" if gpus > 1 else "")
    rng = np.random.default_rng(seed)

    def dur(ms: float) -> float:
        if jitter == 0 or ms == 0:
            return ms
        s2 = math.log1p(jitter * jitter)
        return float(ms * rng.lognormal(-s2 / 2, math.sqrt(s2)))

    env = simpy.Environment()
    rows: list[dict[str, Any]] = []
    queue = simpy.Store(env, capacity=max_queue if max_queue is not None else float("inf"))
    mutexes = [simpy.Resource(env, capacity=1) for _ in range(gpus)]
    streams = [simpy.Resource(env, capacity=1) for _ in range(gpus)]  # submit: each GPU's shared stream (FIFO)
    counter = itertools.count()
    # pageable copies of all GPUs share the host's bandwidth; pinned ones are each GPU's own DMA
    shared = SharedBandwidth(env, host_gbps * 1e6, rate * 1e6) if (transfer == "pageable" and host_gbps > 0 and rate is not None) else None

    def copy_abc():
        """The H2D of a, b, c; returns its duration (ms)."""
        t0 = env.now
        if shared is None:
            yield env.timeout(dur(h2d_ms))
        else:
            yield shared.copy(params.h2d_bytes * (dur(1.0) if jitter else 1.0))
        return env.now - t0

    def rec(phase: str, start: float, end: float, *, part=None, worker=None, gpu=None, nbytes=None, gpu_ms=None, detail=""):
        rows.append({
            "run": run, "source": "model", "worker": worker, "gpu": gpu, "partition": part, "phase": phase,
            "start_ns": int(round(start * 1e6)), "end_ns": int(round(end * 1e6)),
            "gpu_ms": float("nan") if gpu_ms is None else gpu_ms, "bytes": nbytes, "detail": detail,
        })

    def synthesizer(sid: int):
        while True:
            p = next(counter)
            if p >= partitions:
                return
            t0 = env.now
            yield env.timeout(dur(params.synth_ms))
            rec("synthesize", t0, env.now, part=p, detail=f"synth_worker={sid}")
            yield queue.put((p, env.now))

    def prep(p: int, barrier, done, w: int, g: int):
        t0 = env.now
        yield env.timeout(dur(prep_ms))
        rec("prep_msm", t0, env.now, part=p, worker=w, gpu=g)
        barrier.succeed()
        t1 = env.now
        yield env.timeout(dur(params.b_g2_msm_ms))
        if params.b_g2_msm_ms > 0:
            rec("b_g2_msm", t1, env.now, part=p, worker=w, gpu=g)
        done.succeed()

    def finalize(p: int, w: int, g: int, gpu_start: float, gpu_done, prep_done):
        yield gpu_done & prep_done
        t0 = env.now
        yield env.timeout(dur(params.finalize_ms))
        if params.finalize_ms > 0:
            rec("finalize", t0, env.now, part=p, worker=w, gpu=g)
        rec("prove", gpu_start, env.now, part=p, worker=w, gpu=g, detail=f"scope={scope},transfer={transfer}")

    def gpu_job(g: int, phases: list[tuple[str, float, str]], kw: dict[str, Any], done, submitted, span: str | None = None):
        """submit: one submission's GPU phases on the GPU's shared stream, after the work queued before it.
        The job is queued when its submission starts (the first kernels run while the host still launches
        the rest) and cannot end before the submission does (``submitted``: its last kernel is launched
        then)."""
        req = streams[g].request()
        yield req
        t_job = env.now
        for phase, ms, detail in phases:
            if ms <= 0 and phase == "h_msm":  # as in the other scopes: no H MSM row when it takes 0 ms
                continue
            t0 = env.now
            d = dur(ms)
            yield env.timeout(d)
            rec(phase, t0, env.now, gpu_ms=d, detail=detail, **kw)
        if not submitted.triggered:
            yield submitted
        if span:
            rec(span, t_job, env.now, **kw)
        streams[g].release(req)
        done.succeed()

    # submit: the host's submission time (calibrated lock_overhead_ms: the mutex_held of a submit run is the
    # queueing of the kernels) split between the two submissions by their kernels' share of the GPU time
    gpu1 = ntt_ms + params.h_msm_ms
    gpu2 = params.batch_add_ms + params.tail_msm_ms
    sub1 = params.lock_overhead_ms * (gpu1 / (gpu1 + gpu2) if gpu1 + gpu2 > 0 else 0.5)
    sub2 = params.lock_overhead_ms - sub1

    def acquire(mtx, kw: dict[str, Any], detail: str = ""):
        """Request the mutex and record the wait; returns the granted request."""
        t0 = env.now
        req = mtx.request()
        yield req
        rec("mutex_wait", t0, env.now, **kw, detail=detail)
        return req

    def release_barrier_relock(mtx, req, held0: float, kw: dict[str, Any], barrier):
        """narrow and submit: release the mutex after the first part, wait for prep_msm outside it, re-acquire;
        returns the new request."""
        mtx.release(req)
        rec("mutex_held", held0, env.now, **kw, detail="part=1")
        t0 = env.now
        yield barrier
        rec("barrier_wait", t0, env.now, **kw, detail="mutex_held=0")
        return (yield from acquire(mtx, kw, "part=2"))

    def submit_phases(g: int, kw: dict[str, Any], mtx, barrier):
        """lock_scope="submit" (:mod:`zkgpu.pipeline.worker`): the mutex covers the submissions only; the
        kernels run on the GPU's shared stream in submission order while the worker goes on, and the
        worker waits for its partition's last kernel after the second submission (``gpu_wait``)."""
        req = yield from acquire(mtx, kw)
        held0 = env.now
        submitted = env.event()
        env.process(gpu_job(g, [("ntt", ntt_ms, f"kernel_ms={params.h_on_device_ms:.6g}"), ("h_msm", params.h_msm_ms, "")],
                            kw, env.event(), submitted, span="ntt_msm_h"))
        yield env.timeout(dur(sub1))
        submitted.succeed()
        req = yield from release_barrier_relock(mtx, req, held0, kw, barrier)
        held0 = env.now
        done, submitted = env.event(), env.event()
        env.process(gpu_job(g, [("batch_add", params.batch_add_ms, ""), ("tail_msm", params.tail_msm_ms, "")], kw, done, submitted))
        yield env.timeout(dur(sub2))
        submitted.succeed()
        mtx.release(req)
        rec("mutex_held", held0, env.now, **kw, detail="part=2")
        t0 = env.now
        yield done
        rec("gpu_wait", t0, env.now, **kw)

    def gpu_worker(g: int, w: int):
        mtx = mutexes[g] if scope != "none" else simpy.Resource(env, capacity=1)  # none: a private, uncontended lock
        kw_base = {"worker": w, "gpu": g}
        while True:
            item = yield queue.get()
            p, t_queued = item
            if p < 0:  # poison pill: no more work
                return
            kw = {**kw_base, "part": p}
            rec("gpu_queue", t_queued, env.now, **kw)
            gpu_start = env.now
            barrier, prep_done, gpu_done = env.event(), env.event(), env.event()
            env.process(prep(p, barrier, prep_done, w, g))
            env.process(finalize(p, w, g, gpu_start, gpu_done, prep_done))
            if params.pre_lock_ms > 0:
                t0 = env.now
                yield env.timeout(params.pre_lock_ms)
                rec("pre_lock", t0, env.now, **kw)
            if pre_lock and h2d_ms > 0:  # a/b/c copied before the mutex (the copy engine, not the SMs)
                t0 = env.now
                d = yield from copy_abc()
                rec("h2d", t0, env.now, nbytes=int(params.h2d_bytes), gpu_ms=d, detail=f"transfer={transfer},stage=pre_lock", **kw)
            if scope == "submit":
                yield from submit_phases(g, kw, mtx, barrier)
                gpu_done.succeed()
                continue
            req = yield from acquire(mtx, kw)
            held0 = env.now
            # ntt_msm_h = H2D + NTT + H MSM
            t_ntt0 = env.now
            if h2d_ms > 0 and not pre_lock:
                d = yield from copy_abc()
                rec("h2d", t_ntt0, env.now, nbytes=int(params.h2d_bytes), gpu_ms=d, detail=f"transfer={transfer},stage=ntt_msm_h", **kw)
            t1 = env.now
            d = dur(ntt_ms)
            yield env.timeout(d)
            rec("ntt", t1, env.now, gpu_ms=d, detail=f"kernel_ms={params.h_on_device_ms:.6g}", **kw)
            if params.h_msm_ms > 0:
                t1 = env.now
                d = dur(params.h_msm_ms)
                yield env.timeout(d)
                rec("h_msm", t1, env.now, gpu_ms=d, **kw)
            rec("ntt_msm_h", t_ntt0, env.now, **kw)
            if scope == "narrow":  # (submit took its own path above)
                req = yield from release_barrier_relock(mtx, req, held0, kw, barrier)
                held0 = env.now
            else:
                t0 = env.now
                yield barrier
                rec("barrier_wait", t0, env.now, **kw, detail="mutex_held=1")
            t0 = env.now
            d = dur(params.batch_add_ms)
            yield env.timeout(d)
            rec("batch_add", t0, env.now, gpu_ms=d, **kw)
            t0 = env.now
            d = dur(params.tail_msm_ms)
            yield env.timeout(d)
            rec("tail_msm", t0, env.now, gpu_ms=d, **kw)
            if params.lock_overhead_ms > 0 and scope != "submit":
                yield env.timeout(dur(params.lock_overhead_ms))
            mtx.release(req)
            rec("mutex_held", held0, env.now, **kw, detail="part=2" if scope == "narrow" else "")
            gpu_done.succeed()

    synths = [env.process(synthesizer(s)) for s in range(sw)]

    def closer():
        yield simpy.AllOf(env, synths)
        for _ in range(gpus * gw):
            yield queue.put((-1, env.now))

    env.process(closer())
    for g in range(gpus):
        for w in range(gw):
            env.process(gpu_worker(g, w))
    env.run()

    events = normalize_events(pd.DataFrame(rows)).sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)
    ppm, wall = _throughput(events)
    return ModelResult(events=events, params=used, settings=settings, partitions_per_min=ppm, wall_ms=wall)


def _throughput(events: pd.DataFrame) -> tuple[float, float]:
    """(partitions/min, wall ms) of one simulated run: :func:`zkgpu.analysis.metrics.throughput`'s definitions
    (:func:`~zkgpu.analysis.metrics.partitions_done` over the wall span of all rows) without its groupby."""
    if not len(events):
        return math.nan, math.nan
    wall = float(events["end_ns"].max() - events["start_ns"].min()) / 1e6
    n = metrics.partitions_done(events)
    return (n / (wall / 60000.0) if wall > 0 else math.nan), wall


# --------------------------------------------------------------------------- metrics on any table


def utilization(events: pd.DataFrame, gpu: int | None = None) -> dict[str, float]:
    """The three utilizations and the throughput of ONE run's event table (:func:`zkgpu.analysis.metrics.utilization`),
    optionally of one ``gpu``: ``{"compute_util", "kernel_util", "timeline_util", "partitions_per_min", "wall_ms",
    "partitions"}``; utilizations are NaN without GPU phases.

    Raises:
        ValueError: the table holds several runs (names them).
    """
    ev = events if gpu is None else events[events["gpu"] == gpu]
    runs = ev["run"].dropna().unique().tolist() if "run" in ev.columns else []
    if len(runs) > 1:
        raise ValueError(f"utilization: the table holds several runs {runs[:5]}; pass one")
    nan = float("nan")
    keys = ("compute_util", "kernel_util", "timeline_util", "partitions_per_min", "wall_ms")
    if not len(ev):
        return {**dict.fromkeys(keys, nan), "partitions": 0}
    row = metrics.utilization(ev).iloc[0]
    return {**{k: float(row[k]) for k in keys}, "partitions": int(row["partitions"])}


def compute_bound_per_min(params: ModelParams, gpus: int = 1) -> float:
    """Throughput (partitions/min) when the GPUs only compute: data resident, no waits."""
    return 60_000.0 / params.gpu_compute_ms * gpus if params.gpu_compute_ms > 0 else float("inf")


# --------------------------------------------------------------------------- what-if and compare


def what_if(
    params: ModelParams,
    grid: Mapping[str, Iterable[Any]] | Iterable[Mapping[str, Any]],
    *,
    partitions: int = 20,
    **fixed: Any,
) -> pd.DataFrame:
    """Simulate every combination of ``grid`` (a dict of lists, cartesian product, or a list of setting dicts; keys are
    :func:`simulate` keywords; ``fixed`` applies to every row).

    Returns:
        One row per setting: the settings, the utilizations, ``partitions_per_min``, ``wall_ms``, median
        ``mutex_wait_ms`` / ``barrier_wait_ms`` / ``ntt_msm_h_ms`` and ``vs_compute_bound``.
    """
    if isinstance(grid, Mapping):
        keys = list(grid)
        combos = [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*(list(grid[k]) for k in keys))]
    else:
        combos = [dict(c) for c in grid]
    rows = []
    for c in combos:
        kw = {"partitions": partitions, **fixed, **c}
        res = simulate(params, **kw)
        s = res.summary()
        s["vs_compute_bound"] = res.partitions_per_min / compute_bound_per_min(params, kw.get("gpus", 1))
        rows.append(s)
    return pd.DataFrame(rows)


def _phase_means(events: pd.DataFrame) -> dict[str, float]:
    """Mean wall duration (ms) of each phase's events: ``{phase: ms}``."""
    if len(events) == 0:
        return {}
    d = events.assign(_ms=metrics.duration_ms(events))
    return {str(k): float(v) for k, v in d.groupby("phase", observed=True)["_ms"].mean().items()}


def compare(model_result: ModelResult | pd.DataFrame, measured_events: pd.DataFrame, stat: str = "median") -> pd.DataFrame:
    """Model vs measurement, metric by metric, with the same definitions on both tables.

    Returns:
        DataFrame indexed by metric (the utilizations, ``partitions_per_min``, then ``<phase>_ms`` medians or
        ``<phase>_mean_ms`` means per ``stat``) with columns ``model``, ``measured``, ``diff`` and ``rel_err`` (NaN
        when measured is 0, missing or a time below 1 ms).

    Raises:
        ValueError: ``stat`` is neither "median" nor "mean".
    """
    if stat not in ("median", "mean"):
        raise ValueError(f"stat must be 'median' or 'mean', got {stat!r}")
    mev = model_result.events if isinstance(model_result, ModelResult) else model_result
    um, ux = utilization(mev), utilization(measured_events)
    if stat == "median":
        mm, mx, suffix = metrics.phase_medians(mev), metrics.phase_medians(measured_events), "_ms"
    else:
        mm, mx, suffix = _phase_means(mev), _phase_means(measured_events), "_mean_ms"
    rows = {}
    for k in ("compute_util", "kernel_util", "timeline_util", "partitions_per_min"):
        rows[k] = (um[k], ux[k])
    for ph in ("mutex_wait", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm", "mutex_held"):
        if ph in mm or ph in mx:
            rows[f"{ph}{suffix}"] = (mm.get(ph, float("nan")), mx.get(ph, float("nan")))
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["model", "measured"])
    out["diff"] = out["model"] - out["measured"]
    meas = out["measured"].where(out["measured"].abs() > 1e-12)
    # a wait of a fraction of a millisecond has no meaningful relative error (0 vs 0.05 ms is not "-100 %")
    meas = meas.where(~(out.index.str.endswith("_ms") & (out["measured"].abs() < 1.0)))
    out["rel_err"] = out["diff"] / meas
    out.index.name = "metric"
    return out


#: A step the model predicts within this relative error of its measurement counts as predicted well.
MODEL_TOLERANCE = 0.10


def model_accuracy(errors: pd.Series | None) -> tuple[int, int]:
    """The report's one account of the model's accuracy: ``(within, steps)``, where ``steps`` counts the steps
    with both a prediction and a measurement (``errors``: ``model rel_err`` of :func:`zkgpu.story.bottleneck.prediction_vs_measurement`;
    NaN, no prediction, is left out) and ``within`` those predicted within :data:`MODEL_TOLERANCE`."""
    e = errors.dropna() if errors is not None else pd.Series(dtype=float)
    return int((e.abs() <= MODEL_TOLERANCE).sum()), len(e)


def model_accuracy_text(errors: pd.Series | None) -> str:
    """:func:`model_accuracy` in words, the same on every page: "6 of 8 predicted steps within 10% of their measurement"."""
    within, steps = model_accuracy(errors)
    return f"{within} of {steps} predicted steps within {MODEL_TOLERANCE:.0%} of their measurement"
