"""A discrete-event what-if model of the cuzk partition pipeline (simpy).

The model follows ``generate_groth16_proofs_start_c`` (curio ``extern/supraseal-c2/cuda/
groth16_cuda.cu``; see ``cuzk-pipeline.md`` §1.2, §1.4, §3, §7) one partition at a time:

* ``synth_workers`` synthesis processes (CPU) each produce a partition in ``synth_ms`` and put it
  into the GPU queue (optionally bounded by ``max_queue``: the dispatch throttle);
* ``gw`` GPU worker processes per GPU pop partitions; each first spawns the CPU **prep_msm**
  process (``prep_msm_ms / prep_speedup``; it then signals the partition's **barrier** — a simpy
  event — and runs **b_g2_msm**), then takes the per-GPU **mutex** (a ``simpy.Resource`` of
  capacity 1; the time blocked is ``mutex_wait``);
* inside the mutex: **ntt_msm_h** = H2D of a, b, c (``h2d_bytes / rate``, the rate depending on
  the transfer path) + NTTs (``ntt_ms``) + H MSM (``h_msm_ms``); then the **barrier wait** for
  prep_msm; then **batch_add** and **tail_msm**;
* lock scope ``coarse`` (upstream): the barrier wait happens *inside* the mutex, so the GPU idles
  while another worker is blocked; ``narrow`` (the what-if): the worker releases the mutex after
  ntt_msm_h, waits for the barrier outside and re-acquires it for batch_add + tail_msm;
* the worker loops back immediately; **finalize** (join b_g2, epilogue ``finalize_ms``) runs on
  its own, and the ``prove`` interval (upstream's GPU_START → GPU_END) ends after it.

Times are milliseconds in the model and nanoseconds in the emitted event table (the schema of
:mod:`zkgpu.events`, ``source="model"``), so every metric, plot and notebook works on it.

Every number the model reports is computed by :mod:`zkgpu.metrics` on the model's event table,
with the same functions and the same window as the measurements (:func:`utilization`): the three
utilizations ``compute_util`` (kernels only: the model's ``ntt``, ``h_msm``, ``batch_add``,
``tail_msm``), ``kernel_util`` (upstream's: ntt_msm_h + batch_add + tail_msm, H2D counted),
``timeline_util`` (``prove`` intervals), and ``partitions_per_min``, all over the run's wall span
(first synthesis start to the last event).

Parameters come from a recorded event table (:func:`calibrate`; medians per phase, H2D rate from
bytes / time) or from upstream's published numbers (:func:`reference_params`: the seed's
``CUZK_TIMING`` lines and the tables in ``data/reference/``).

Example::

    from zkgpu import model
    p = model.ModelParams(prep_msm_ms=1600, ntt_ms=500, batch_add_ms=400, tail_msm_ms=200,
                          h2d_bytes=12_500_000_000, pageable_gbps=5.0, pinned_gbps=50.0)
    r = model.simulate(p, partitions=20, gw=2, scope="coarse", transfer="pageable")
    r.compute_util, r.partitions_per_min
    model.what_if(p, {"transfer": ["pageable", "pinned"], "scope": ["coarse", "narrow"], "gw": [1, 2, 3]})
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from . import metrics
from .events import normalize_events

__all__ = [
    "ModelParams",
    "ModelResult",
    "SCOPES",
    "TRANSFERS",
    "calibrate",
    "reference_params",
    "POREP_CONSTRAINTS",
    "simulate",
    "what_if",
    "compare",
    "utilization",
    "compute_bound_per_min",
    "phase_medians",
]

SCOPES = ("coarse", "narrow", "none")
#: transfer path names accepted by :func:`simulate`; ``registered`` and ``pinned_pool`` use the
#: pinned rate (both DMA from page-locked memory), ``resident`` moves nothing (compute-only bound).
TRANSFERS = ("pageable", "registered", "pinned", "pinned_pool", "resident")



@dataclass(frozen=True)
class ModelParams:
    """Per-partition durations (ms), sizes (bytes) and rates (GB/s = 1e9 B/s) of the model.

    Attributes:
        prep_msm_ms: CPU prep_msm per partition (one thread per partition, as upstream).
        ntt_ms: GPU NTT work of ntt_msm_h (iNTT, coset NTTs, pointwise), H2D excluded.
        h_msm_ms: GPU H MSM inside ntt_msm_h (0 when the table does not separate it; then it
            is part of ``ntt_ms``).
        batch_add_ms: GPU batch additions (L, A, B_g1, B_g2).
        tail_msm_ms: GPU tail MSMs (L, A, B_g1).
        h2d_bytes: bytes of a, b, c copied host→device per partition.
        pageable_gbps: effective H2D rate from pageable memory, GB/s.
        pinned_gbps: effective H2D rate from page-locked (pinned or registered) memory, GB/s.
        b_g2_msm_ms: CPU G2 tail MSM after prep_msm (outside the mutex; delays finalize only).
        synth_ms: synthesis of one partition on one synthesis worker (0 = always available).
        synth_workers: concurrent synthesis workers.
        finalize_ms: epilogue after joining prep/b_g2 (outside the mutex).
        pre_lock_ms: worker overhead between pickup and asking for the mutex.
        lock_overhead_ms: time the mutex is held beyond the phases (spawn/join of the per-GPU
            thread, syncs), spent after tail_msm before the unlock; the GPU idles meanwhile.
        source: where the numbers come from (free text, shown in notebooks).
    """

    prep_msm_ms: float
    ntt_ms: float
    batch_add_ms: float
    tail_msm_ms: float
    h2d_bytes: float
    pageable_gbps: float
    pinned_gbps: float
    h_msm_ms: float = 0.0
    b_g2_msm_ms: float = 0.0
    synth_ms: float = 0.0
    synth_workers: int = 1
    finalize_ms: float = 0.0
    pre_lock_ms: float = 0.0
    lock_overhead_ms: float = 0.0
    source: str = "manual"

    def __post_init__(self) -> None:
        for name in (
            "prep_msm_ms", "ntt_ms", "h_msm_ms", "batch_add_ms", "tail_msm_ms", "h2d_bytes",
            "b_g2_msm_ms", "synth_ms", "finalize_ms", "pre_lock_ms", "lock_overhead_ms",
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
        events: event table (schema of :mod:`zkgpu.events`, ``source="model"``).
        params: the parameters used (after ``prep_speedup``), settings: the knobs of this run.
        compute_util, kernel_util, timeline_util: fractions in [0, 1] (:func:`zkgpu.metrics.utilization`).
        partitions_per_min: partitions per minute over the run's wall span.
        wall_ms: the run's wall span (first synthesis start → last event end), ms.
    """

    events: pd.DataFrame
    params: ModelParams
    settings: dict[str, Any]
    compute_util: float
    kernel_util: float
    timeline_util: float
    partitions_per_min: float
    wall_ms: float

    def summary(self) -> dict[str, Any]:
        """Settings plus utilizations, throughput and median waits, one flat dict."""
        med = phase_medians(self.events)
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


# --------------------------------------------------------------------------- calibration


def _dur_ms(df: pd.DataFrame) -> pd.Series:
    return (df["end_ns"].astype("int64") - df["start_ns"].astype("int64")) / 1e6


def phase_medians(events: pd.DataFrame) -> dict[str, float]:
    """Median wall duration (ms) of each phase present in an event table."""
    if len(events) == 0:
        return {}
    d = events.assign(_ms=_dur_ms(events))
    return {str(k): float(v) for k, v in d.groupby("phase", observed=True)["_ms"].median().items()}


def _max_overlap(df: pd.DataFrame) -> int:
    """Largest number of intervals open at once."""
    if len(df) == 0:
        return 0
    pts = sorted([(int(s), 1) for s in df["start_ns"]] + [(int(e), -1) for e in df["end_ns"]], key=lambda t: (t[0], t[1]))
    cur = best = 0
    for _, step in pts:
        cur += step
        best = max(best, cur)
    return best


def _lock_overhead_ms(ev: pd.DataFrame) -> float:
    """Median over partitions of Σ mutex_held − Σ durations of the phases lying inside the held intervals."""
    held = ev[ev["phase"] == "mutex_held"]
    if not len(held):
        return 0.0
    inner = ev[ev["phase"].isin(("ntt_msm_h", "barrier_wait", "batch_add", "tail_msm"))]
    vals = []
    for key, h in held.groupby(["run", "partition"], dropna=False):
        ivs = list(zip(h["start_ns"].astype("int64"), h["end_ns"].astype("int64")))
        sub = inner[(inner["run"] == key[0]) & (inner["partition"] == key[1])] if not pd.isna(key[1]) else inner.iloc[0:0]
        inside = sum(
            int(e) - int(s) for s, e in zip(sub["start_ns"], sub["end_ns"])
            if any(hs <= int(s) and int(e) <= he for hs, he in ivs)
        )
        vals.append(max(0.0, (sum(he - hs for hs, he in ivs) - inside) / 1e6))
    return float(np.median(vals)) if vals else 0.0


def calibrate(
    events: pd.DataFrame,
    *,
    pinned_gbps: float | None = None,
    pageable_gbps: float | None = None,
    h2d_bytes: float | None = None,
    transfer: str | None = None,
    source: str | None = None,
) -> ModelParams:
    """Fit :class:`ModelParams` to a recorded event table (medians per phase).

    Rules: each duration is the median wall time (``end_ns - start_ns``) of its phase. The H2D
    rate is ``sum(bytes) / sum(time)`` over ``h2d`` rows with bytes; it is assigned to the
    pageable or pinned rate according to ``transfer`` or else the rows' ``detail``
    (``path=``/``transfer=`` ``registered``, ``pinned``, ``pinned_pool`` → pinned; otherwise
    pageable), and the other rate comes from the argument. Without ``h2d`` rows the whole
    ``ntt_msm_h`` is taken as compute (``ntt_ms``) unless ``h2d_bytes`` and a rate are given, in
    which case the H2D time at that rate is subtracted. ``ntt_ms`` = median ``ntt_msm_h`` − median
    per-partition ``h2d`` − median ``h_msm`` (so the model's ntt_msm_h is the measured median).
    Synthesis: median ``synthesize`` time and the largest number of syntheses running at once. ``lock_overhead_ms``: median per partition
    of the mutex_held time not covered by the phases inside it; ``pre_lock_ms``: median pre_lock.

    Args:
        events: event table (any producer) with at least ``prep_msm``, ``ntt_msm_h``,
            ``batch_add`` and ``tail_msm`` rows.
        pinned_gbps, pageable_gbps: rates (GB/s) to use where the table does not measure them.
        h2d_bytes: bytes per partition where the table has no ``h2d`` bytes.
        transfer: the transfer path the recorded run used (overrides the detail column).
        source: label for the parameters (default: the table's run names).

    Raises:
        ValueError: a required phase is missing (names it), or a rate is needed but unknown.
    """
    ev = events
    med = phase_medians(ev)
    missing = [p for p in ("prep_msm", "ntt_msm_h", "batch_add", "tail_msm") if p not in med]
    if missing:
        raise ValueError(f"calibrate: the event table has no rows for phase(s) {missing}; phases present: {sorted(med)}")

    h2d = ev[(ev["phase"] == "h2d") & ev["bytes"].notna()] if "bytes" in ev else ev.iloc[0:0]
    measured_rate = None
    measured_kind = None
    h2d_ms = 0.0
    if len(h2d):
        secs = float(_dur_ms(h2d).sum()) / 1e3
        total_bytes = float(h2d["bytes"].astype("float64").sum())
        if secs > 0 and total_bytes > 0:
            measured_rate = total_bytes / secs / 1e9
        per_part = h2d.groupby(["run", "partition"], dropna=False)["bytes"].sum().astype("float64")
        h2d_bytes = float(per_part.median()) if h2d_bytes is None else h2d_bytes
        h2d_ms = float(h2d.assign(_ms=_dur_ms(h2d)).groupby(["run", "partition"], dropna=False)["_ms"].sum().median())
        if transfer is not None:
            measured_kind = "pageable" if transfer == "pageable" else "pinned"
        else:
            detail = " ".join(str(x) for x in h2d["detail"].dropna().unique()) if "detail" in h2d else ""
            pinned_words = ("=registered", "=pinned", "=pinned_pool")
            measured_kind = "pinned" if any(w in detail for w in pinned_words) else "pageable"
    if measured_kind == "pageable":
        pageable_gbps = measured_rate if pageable_gbps is None else pageable_gbps
    elif measured_kind == "pinned":
        pinned_gbps = measured_rate if pinned_gbps is None else pinned_gbps

    h_msm = med.get("h_msm", 0.0)
    if not len(h2d) and h2d_bytes:
        rate = pageable_gbps if (transfer in (None, "pageable")) else pinned_gbps
        if rate is None:
            raise ValueError("calibrate: h2d_bytes given without h2d rows: pass pageable_gbps (the rate the run used)")
        h2d_ms = h2d_bytes / (rate * 1e9) * 1e3
    # the rest of the median ntt_msm_h, so that the model's ntt_msm_h equals the measured median
    # (a sum of sub-phase medians need not equal the median of their sum)
    ntt = max(med["ntt_msm_h"] - h2d_ms - h_msm, 0.0)

    if h2d_bytes is None:
        h2d_bytes = 0.0
    if pageable_gbps is None or pinned_gbps is None:
        if h2d_bytes == 0.0:
            pageable_gbps = pageable_gbps or 1.0
            pinned_gbps = pinned_gbps or 1.0
        else:
            raise ValueError(
                f"calibrate: the table measures only the {measured_kind or 'no'} H2D rate; pass "
                f"{'pinned_gbps' if pinned_gbps is None else 'pageable_gbps'} (e.g. from the bandwidth sweep)"
            )
    lock_overhead = _lock_overhead_ms(ev)
    synth = ev[ev["phase"] == "synthesize"]
    synth_workers = max(1, max((_max_overlap(g) for _, g in synth.groupby("run")), default=1)) if len(synth) else 1
    runs = sorted(str(r) for r in ev["run"].dropna().unique()) if "run" in ev else []
    return ModelParams(
        prep_msm_ms=med["prep_msm"],
        ntt_ms=ntt,
        h_msm_ms=h_msm,
        batch_add_ms=med["batch_add"],
        tail_msm_ms=med["tail_msm"],
        h2d_bytes=float(h2d_bytes),
        pageable_gbps=float(pageable_gbps),
        pinned_gbps=float(pinned_gbps),
        b_g2_msm_ms=med.get("b_g2_msm", 0.0),
        synth_ms=med.get("synthesize", 0.0),
        synth_workers=int(synth_workers),
        finalize_ms=med.get("finalize", 0.0),
        pre_lock_ms=med.get("pre_lock", 0.0),
        lock_overhead_ms=lock_overhead,
        source=source or ("calibrated from " + (", ".join(runs) if runs else "an event table")),
    )


#: Constraints of one PoRep-32GiB partition (PCE extraction, curio ``extern/cuzk/cuzk-project.md``
#: :1588-1601, quoted in cuzk-pipeline.md §4); a, b, c are one 32-byte Fr per constraint each.
POREP_CONSTRAINTS = 130_278_869
FR_BYTES = 32


def reference_params(reference_dir: str | None = None) -> ModelParams:
    """Parameters of upstream's PoRep partition from ``data/reference/`` (published, not measured here).

    * prep_msm_ms, ntt_msm_h (pageable), tail_msm_ms: medians of the seed's ``CUZK_TIMING`` lines
      (``seed_cuzk_timing.log``, parsed by :mod:`zkgpu.logs`); batch_add_ms: median of
      gpu_total − ntt_msm_h − tail_msm (the seed's lines carry no barrier_wait, which the write-up
      shows to be ≈ 0 because prep_msm < ntt_msm_h);
    * b_g2_msm_ms: Phase 8 of ``cuzk_phase8_vs_phase9.csv``;
    * h2d_bytes: 3 × :data:`POREP_CONSTRAINTS` × 32 B;
    * pinned_gbps: the PCIe Gen5 line rate quoted in ``cuzk_48dccd93_claims.csv`` (~50 GB/s);
    * ntt_ms (compute part of ntt_msm_h): Phase 9's ntt_msm_h (pre-staged pinned uploads, 690 ms)
      minus its H2D at the pinned rate; pageable_gbps: h2d_bytes over the rest of the seed's
      ntt_msm_h.

    These are RTX 5070 Ti numbers (upstream's test box), for what-if questions about upstream's
    sizes; they are never presented as our measurements.
    """
    from pathlib import Path

    from . import logs
    from .manifest import DATA_DIR

    ref = Path(reference_dir) if reference_dir else DATA_DIR / "reference"
    pt = logs.partition_table(logs.parse_file(ref / "seed_cuzk_timing.log"))
    prep = float(pt["prep_msm_ms"].median())
    ntt_pageable = float(pt["ntt_msm_h_ms"].median())
    tail = float(pt["tail_msm_ms"].median())
    batch = float((pt["gpu_total_ms"] - pt["ntt_msm_h_ms"] - pt["tail_msm_ms"]).median())
    p89 = pd.read_csv(ref / "cuzk_phase8_vs_phase9.csv").set_index("metric")
    claims = pd.read_csv(ref / "cuzk_48dccd93_claims.csv").set_index("claim")
    pinned = float(claims.loc["h2d_bandwidth_unpinned_vs_line_rate", "after_min"])
    h2d_bytes = 3.0 * POREP_CONSTRAINTS * FR_BYTES
    pinned_h2d_ms = h2d_bytes / (pinned * 1e9) * 1e3
    ntt = float(p89.loc["ntt_msm_h_ms", "phase9_ms"]) - pinned_h2d_ms
    pageable = h2d_bytes / ((ntt_pageable - ntt) * 1e6)
    return ModelParams(
        prep_msm_ms=prep, ntt_ms=ntt, batch_add_ms=batch, tail_msm_ms=tail, h2d_bytes=h2d_bytes,
        pageable_gbps=pageable, pinned_gbps=pinned, b_g2_msm_ms=float(p89.loc["b_g2_msm_ms", "phase8_ms"]),
        source="upstream (RTX 5070 Ti, PoRep 32 GiB): seed CUZK_TIMING medians + Phase 8/9 table + 48dccd93 line rate",
    )


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
    h2d_gbps: float | None = None,
    prep_speedup: float = 1.0,
    gpus: int = 1,
    synth_workers: int | None = None,
    max_queue: int | None = None,
    jitter: float = 0.0,
    seed: int = 0,
    run: str | None = None,
) -> ModelResult:
    """Simulate ``partitions`` partitions through the pipeline and return the event table and metrics.

    Args:
        params: per-partition durations and rates (:func:`calibrate` or by hand).
        partitions: number of partitions (>= 1).
        gw: GPU workers per GPU sharing one mutex (>= 1).
        scope: ``coarse`` (barrier wait inside the mutex, upstream), ``narrow`` (outside), or
            ``none`` (no shared mutex: each worker's GPU phases run whenever it gets there, side
            by side with the other workers'; their durations are taken as given, so calibrate
            them on a run with the same concurrency).
        transfer: one of :data:`TRANSFERS`; picks the H2D rate (``resident``: no H2D at all).
        h2d_gbps: override the H2D rate, GB/s.
        prep_speedup: prep_msm runs ``prep_speedup`` times faster (> 0).
        gpus: number of GPUs, each with its own mutex and ``gw`` workers.
        synth_workers: override ``params.synth_workers``.
        max_queue: bound of the synthesized-partition queue (None: unbounded).
        jitter: coefficient of variation of every duration (lognormal, mean kept); 0 = deterministic.
        seed: random seed for ``jitter``.
        run: run name in the event table (default built from the settings).

    Raises:
        ValueError: a setting is out of range (names it).
    """
    import simpy

    for name, v in (("partitions", partitions), ("gw", gw), ("gpus", gpus)):
        if not (isinstance(v, (int, np.integer)) and v >= 1):
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    if not (isinstance(prep_speedup, (int, float)) and math.isfinite(prep_speedup) and prep_speedup > 0):
        raise ValueError(f"prep_speedup must be a finite number > 0, got {prep_speedup!r}")
    if not (jitter >= 0 and math.isfinite(jitter)):
        raise ValueError(f"jitter must be >= 0, got {jitter!r}")
    if max_queue is not None and max_queue < 1:
        raise ValueError(f"max_queue must be >= 1 or None, got {max_queue!r}")
    sw = params.synth_workers if synth_workers is None else synth_workers
    if not (isinstance(sw, (int, np.integer)) and sw >= 1):
        raise ValueError(f"synth_workers must be an int >= 1, got {sw!r}")
    rate = _rate_for(params, transfer, h2d_gbps)
    h2d_ms = 0.0 if rate is None else params.h2d_ms(rate)
    prep_ms = params.prep_msm_ms / prep_speedup
    used = replace(params, prep_msm_ms=prep_ms, synth_workers=int(sw))
    settings = {
        "partitions": int(partitions), "gw": int(gw), "scope": scope, "transfer": transfer,
        "h2d_gbps": rate, "prep_speedup": float(prep_speedup), "gpus": int(gpus),
        "synth_workers": int(sw), "max_queue": max_queue, "jitter": float(jitter),
    }
    run = run or f"model-{transfer}-{scope}-gw{gw}"
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
    counter = itertools.count()

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
            t0 = env.now
            req = mtx.request()
            yield req
            rec("mutex_wait", t0, env.now, **kw)
            held0 = env.now
            # ntt_msm_h = H2D + NTT + H MSM
            t_ntt0 = env.now
            if h2d_ms > 0:
                d = dur(h2d_ms)
                yield env.timeout(d)
                rec("h2d", t_ntt0, env.now, nbytes=int(params.h2d_bytes), gpu_ms=d, detail=f"transfer={transfer},stage=ntt_msm_h", **kw)
            t1 = env.now
            d = dur(params.ntt_ms)
            yield env.timeout(d)
            rec("ntt", t1, env.now, gpu_ms=d, **kw)
            if params.h_msm_ms > 0:
                t1 = env.now
                d = dur(params.h_msm_ms)
                yield env.timeout(d)
                rec("h_msm", t1, env.now, gpu_ms=d, **kw)
            rec("ntt_msm_h", t_ntt0, env.now, **kw)
            if scope == "narrow":
                mtx.release(req)
                rec("mutex_held", held0, env.now, **kw, detail="part=1")
                t0 = env.now
                yield barrier
                rec("barrier_wait", t0, env.now, **kw, detail="mutex_held=0")
                t0 = env.now
                req = mtx.request()
                yield req
                rec("mutex_wait", t0, env.now, **kw, detail="part=2")
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
            if params.lock_overhead_ms > 0:
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
    u = utilization(events)
    return ModelResult(
        events=events,
        params=used,
        settings=settings,
        compute_util=u["compute_util"],
        kernel_util=u["kernel_util"],
        timeline_util=u["timeline_util"],
        partitions_per_min=u["partitions_per_min"],
        wall_ms=u["wall_ms"],
    )


# --------------------------------------------------------------------------- metrics on any table


def utilization(events: pd.DataFrame, gpu: int | None = None) -> dict[str, float]:
    """The three utilizations and the throughput of ONE run's event table (model or measured),
    through :func:`zkgpu.metrics.utilization` (same definitions, same window: the run's wall span).

    Args:
        events: event table of one run.
        gpu: restrict to one GPU ordinal (None: all rows).

    Returns:
        ``{"compute_util", "kernel_util", "timeline_util", "partitions_per_min", "wall_ms",
        "partitions"}``; the utilizations are NaN where the table has no GPU phases.

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
    """Simulate every combination of ``grid`` and tabulate the outcomes.

    Args:
        params: model parameters.
        grid: either ``{"gw": [1, 2, 3], "scope": ["coarse", "narrow"], ...}`` (cartesian product)
            or a list of setting dicts; keys are :func:`simulate` keyword arguments.
        partitions: partitions per simulation.
        fixed: further :func:`simulate` keywords applied to every row.

    Returns:
        One row per setting: the settings, ``compute_util``, ``kernel_util``, ``timeline_util``,
        ``partitions_per_min``, ``wall_ms``, median ``mutex_wait_ms`` / ``barrier_wait_ms`` /
        ``ntt_msm_h_ms``, and ``vs_compute_bound`` (throughput / :func:`compute_bound_per_min`).
    """
    if isinstance(grid, Mapping):
        keys = list(grid)
        combos = [dict(zip(keys, vals)) for vals in itertools.product(*(list(grid[k]) for k in keys))]
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


def compare(model_result: ModelResult | pd.DataFrame, measured_events: pd.DataFrame) -> pd.DataFrame:
    """Model vs measurement, metric by metric, with the same definitions on both tables.

    Returns:
        DataFrame indexed by metric (``compute_util``, ``kernel_util``, ``timeline_util``,
        ``partitions_per_min``, all from :func:`zkgpu.metrics.utilization`, then median ms of ``mutex_wait``, ``ntt_msm_h``,
        ``barrier_wait``, ``batch_add``, ``tail_msm``, ``mutex_held``) with columns ``model``,
        ``measured``, ``diff`` (model − measured) and ``rel_err`` (diff / measured; NaN when the
        measured value is 0 or missing, or is a time below 1 ms).
    """
    mev = model_result.events if isinstance(model_result, ModelResult) else model_result
    um, ux = utilization(mev), utilization(measured_events)
    mm, mx = phase_medians(mev), phase_medians(measured_events)
    rows = {}
    for k in ("compute_util", "kernel_util", "timeline_util", "partitions_per_min"):
        rows[k] = (um[k], ux[k])
    for ph in ("mutex_wait", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm", "mutex_held"):
        if ph in mm or ph in mx:
            rows[f"{ph}_ms"] = (mm.get(ph, float("nan")), mx.get(ph, float("nan")))
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["model", "measured"])
    out["diff"] = out["model"] - out["measured"]
    meas = out["measured"].where(out["measured"].abs() > 1e-12)
    # a wait of a fraction of a millisecond has no meaningful relative error (0 vs 0.05 ms is not "-100 %")
    meas = meas.where(~(out.index.str.endswith("_ms") & (out["measured"].abs() < 1.0)))
    out["rel_err"] = out["diff"] / meas
    out.index.name = "metric"
    return out

