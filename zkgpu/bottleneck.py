"""What keeps the GPU idle, read from an event table, and what the model predicts once prep_msm is
off the critical path (notebook 07b, "the last bottleneck").

* :func:`idle_causes`: splits a run's **GPU window** (first GPU-side start — ``prove``,
  ``mutex_wait`` or a GPU phase — to the last end of a GPU phase, as :func:`zkgpu.model.utilization`)
  into *compute* (the GPU phases ``ntt_msm_h``, ``batch_add``, ``tail_msm`` minus the copy time no
  kernel hid, ``exposed_ms``), *exposed H2D*, and GPU-idle time, which it attributes, in this order
  of precedence, to what the workers were doing meanwhile: ``barrier_wait`` (waiting for prep_msm),
  ``mutex_wait`` (the lock changing hands), ``pre_lock`` (a worker's set-up before the lock,
  ``split_vectors`` and the prep thread's start), *no partition ready* (no ``gpu_queue`` interval
  open: every synthesized partition already taken), and *other host work* (the rest: Python
  between phases, the worker loop, finalizer hand-off). The shares sum to 1. Also the **start-up**:
  the time from the run's first event (synthesis) to the GPU window, which whole-run metrics
  (:func:`zkgpu.metrics.compute_utilization`, :func:`zkgpu.metrics.throughput`) include.
* :func:`gpu_ms_per_partition`: median per partition of the GPU phases' wall time minus the
  exposed copy time (ms): the GPU work one partition needs in that run; 60000 / it is the
  compute-only bound in partitions/min (the same quantity as :func:`zkgpu.model.compute_bound_per_min`,
  measured instead of calibrated).
* :func:`prep_ms_prediction`: the prep_msm time a variant will take in the pipeline, from a
  ``zkgpu bench prep`` table scaled by the measured slowdown of the ``cpu`` variant in the pipeline.
* :func:`predict`: :func:`zkgpu.model.simulate` of a scenario with that prep time.
* :func:`kernel_floor_ms`: the kernels' own benchmark time (``zkgpu bench ntt`` compute_h and
  ``zkgpu bench msm`` device, uniform scalars) for the H computation and the H MSM at size n.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .metrics import detail_value
from .model import ModelParams, ModelResult, simulate

__all__ = [
    "GPU_PHASES",
    "IDLE_CAUSES",
    "CAUSE_PHASES",
    "key_numbers",
    "last_mile_recordings",
    "summary",
    "acceptance_markdown",
    "gpu_window",
    "idle_causes",
    "gpu_ms_per_partition",
    "kernel_ms_per_partition",
    "prep_workload",
    "prep_ms_prediction",
    "predict",
    "kernel_floor_ms",
    "msm_bench_ms",
    "gpu_budget",
    "prep_scenarios",
    "PILOT_DIR",
    "open_last_mile",
    "prior_recording",
    "idle_table",
    "predictions",
    "steps_table",
    "prediction_vs_measurement",
    "acceptance",
]

GPU_PHASES = ("ntt_msm_h", "batch_add", "tail_msm")
#: GPU-idle causes in order of precedence: (label, phases whose intervals claim the idle time).
IDLE_CAUSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("barrier_wait (prep_msm)", ("barrier_wait",)),
    ("mutex_wait (lock hand-off)", ("mutex_wait",)),
    ("pre_lock (worker set-up)", ("pre_lock",)),
)
NO_PARTITION = "no partition ready (synthesis)"
OTHER = "other host work"
CAUSE_PHASES: dict[str, str] = {
    "compute": "kernel", "exposed H2D": "h2d", "barrier_wait (prep_msm)": "barrier_wait",
    "mutex_wait (lock hand-off)": "mutex_wait", "pre_lock (worker set-up)": "pre_lock",
    NO_PARTITION: "gpu_queue", OTHER: "lock_other",
}
"""The phase whose colour each cause of :func:`idle_causes` is drawn in (:func:`zkgpu.plots.gpu_window`)."""


def _union(iv: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted((int(s), int(e)) for s, e in iv if e > s):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _complement(a: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    out, cur = [], lo
    for s, e in a:
        if s > cur:
            out.append((cur, min(s, hi)))
        cur = max(cur, e)
        if cur >= hi:
            break
    if cur < hi:
        out.append((cur, hi))
    return [(s, e) for s, e in out if e > s]


def _len(iv: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in iv)


def _iv(ev: pd.DataFrame, phases: Iterable[str]) -> list[tuple[int, int]]:
    sub = ev[ev["phase"].isin(list(phases))]
    return list(zip(sub["start_ns"].astype("int64"), sub["end_ns"].astype("int64")))


def gpu_window(events: pd.DataFrame) -> tuple[int, int]:
    """``(lo_ns, hi_ns)``: first GPU-side start (``prove``, ``mutex_wait`` or a GPU phase) to the
    last end of a GPU phase (:func:`zkgpu.model.utilization`'s window).

    Raises:
        ValueError: the table has no GPU phase rows.
    """
    gpu_rows = events[events["phase"].isin(GPU_PHASES)]
    if not len(gpu_rows):
        raise ValueError(f"the event table has no {GPU_PHASES} rows")
    starts = events[events["phase"].isin(("prove", "mutex_wait") + GPU_PHASES)]["start_ns"]
    return int(starts.min()), int(gpu_rows["end_ns"].max())


def _exposed_ms(events: pd.DataFrame) -> float:
    h = events[events["phase"] == "h2d"]
    if not len(h):
        return 0.0
    stage_inside = h["detail"].astype("string").str.contains("stage=ntt_msm_h", regex=False).fillna(False).to_numpy(bool)
    ex = detail_value(h, "exposed_ms")
    return float(ex[stage_inside].clip(lower=0).fillna(0.0).sum())


def idle_causes(events: pd.DataFrame) -> pd.DataFrame:
    """Where one run's GPU window goes (see the module docstring).

    Args:
        events: the event table of ONE run (one GPU).

    Returns:
        DataFrame indexed by ``cause`` (``compute``, ``exposed H2D``, the :data:`IDLE_CAUSES`
        labels, :data:`NO_PARTITION`, :data:`OTHER`) with ``ms`` and ``share`` (of the GPU window,
        summing to 1); ``attrs`` carry ``window_ms``, ``startup_ms`` (first event of the run to the
        window's start) and ``partitions``.

    Raises:
        ValueError: no GPU phase rows.
    """
    lo, hi = gpu_window(events)
    busy = _intersect(_union(_iv(events, GPU_PHASES)), [(lo, hi)])
    exposed_ns = min(_exposed_ms(events) * 1e6, float(_len(busy)))
    idle = _complement(busy, lo, hi)
    rows = {"compute": (_len(busy) - exposed_ns) / 1e6, "exposed H2D": exposed_ns / 1e6}
    for label, phases in IDLE_CAUSES:
        claimed = _intersect(idle, _union(_iv(events, phases)))
        rows[label] = _len(claimed) / 1e6
        idle = _intersect(idle, _complement(claimed, lo, hi))
    waiting = _union(_iv(events, ("gpu_queue",)))
    starved = _intersect(idle, _complement(waiting, lo, hi))
    rows[NO_PARTITION] = _len(starved) / 1e6
    rows[OTHER] = (_len(idle) - _len(starved)) / 1e6
    window_ms = (hi - lo) / 1e6
    out = pd.DataFrame({"ms": pd.Series(rows, dtype=float)})
    out["share"] = out["ms"] / window_ms if window_ms > 0 else np.nan
    out.index.name = "cause"
    out.attrs.update(window_ms=window_ms, startup_ms=(lo - int(events["start_ns"].min())) / 1e6,
                     partitions=int(events.loc[events["phase"] == "tail_msm", "partition"].nunique()))
    return out


def gpu_ms_per_partition(events: pd.DataFrame) -> float:
    """Median over partitions of Σ wall ms of the GPU phases (``ntt_msm_h``, ``batch_add``,
    ``tail_msm``) minus the partition's exposed H2D ms (the copy time no kernel hid). NaN
    without GPU phase rows."""
    g = events[events["phase"].isin(GPU_PHASES)]
    if not len(g):
        return float("nan")
    per = ((g["end_ns"] - g["start_ns"]) / 1e6).groupby(g["partition"]).sum()
    h = events[events["phase"] == "h2d"]
    if len(h):
        inside = h["detail"].astype("string").str.contains("stage=ntt_msm_h", regex=False).fillna(False).to_numpy(bool)
        ex = detail_value(h, "exposed_ms").clip(lower=0).fillna(0.0)[inside]
        per = per.sub(ex.groupby(h["partition"][inside]).sum(), fill_value=0.0)
    return float(per.median())


def kernel_ms_per_partition(events: pd.DataFrame) -> float:
    """GPU kernel ms one partition needs, from a run's medians: the H computation's kernels (the
    ``ntt`` row's ``kernel_ms``, CUDA events), the H MSM, batch_add and tail_msm (each a stream
    span between CUDA events). Unlike :func:`gpu_ms_per_partition` it leaves out the host work
    inside the phases and the exposed copies: 60000 / it is the compute-only bound (partitions/min).
    NaN when a part is missing."""
    def med(phase: str) -> float:
        s = events[events["phase"] == phase]
        return float(((s["end_ns"] - s["start_ns"]) / 1e6).median()) if len(s) else float("nan")

    nt = events[events["phase"] == "ntt"]
    h = float(detail_value(nt, "kernel_ms").median()) if len(nt) else float("nan")
    return h + med("h_msm") + med("batch_add") + med("tail_msm")


def prep_workload(config: dict[str, Any]) -> int:
    """Scalars one partition's prep_msm classifies: L (aux) + A (inputs + a-density aux) + B
    (b-density inputs + aux), from a scenario's recorded configuration (``n``, ``aux_ratio``,
    ``num_inputs``, ``density``) with the expected densities."""
    from .pipeline.config import Density, PipelineConfig

    dens = config.get("density") or {}
    d = Density(**dens) if isinstance(dens, dict) else Density()
    c = PipelineConfig(n=int(config["n"]), aux_ratio=float(config.get("aux_ratio", 0.5)),
                       num_inputs=int(config.get("num_inputs", 8)), device="cpu", density=d)
    aux = c.aux_size
    return int(round(aux + c.num_inputs + d.a_aux * aux + 1 + d.b_aux * aux))


def prep_ms_prediction(bench: pd.DataFrame, variant: str, scalars: int, measured_cpu_ms: float, *, phase: str | None = None) -> dict[str, float]:
    """prep_msm ms of ``variant`` in the pipeline for ``scalars`` scalars per partition.

    From a ``zkgpu bench prep`` table: each variant's ms per scalar at the benchmarked size nearest
    above ``scalars`` (log-interpolated per scalar), times ``scalars``; the ``cpu`` variant's
    benchmark against ``measured_cpu_ms`` (its median prep_msm in the recorded pipeline, under
    the recording's host load) gives the slowdown the pipeline's host imposes, applied to the CPU
    variants. The ``gpu`` variant uses the ``with_h2d`` phase (aux is copied from pageable memory
    first) and no slowdown (the GPU is not what the host load slows; its copy is).

    Returns:
        ``{"bench_ms", "slowdown", "predicted_ms"}``.

    Raises:
        ValueError: the table lacks the variant or the ``cpu`` rows.
    """
    def per_scalar(v: str, ph: str | None) -> float:
        sel = bench[bench["prep"] == v]
        if ph is not None and "phase" in sel:
            sel = sel[sel["phase"] == ph]
        if not len(sel):
            raise ValueError(f"the prep benchmark has no rows for prep={v!r}{f' phase={ph!r}' if ph else ''}; it has {sorted(set(bench['prep']))}")
        sel = sel.sort_values("n")
        x = np.log2(sel["n"].to_numpy(float))
        y = np.log2((sel["median_ms"] / sel["n"]).to_numpy(float))
        return float(2 ** np.interp(math.log2(max(scalars, 1)), x, y))

    cpu_bench = per_scalar("cpu", None) * scalars
    slowdown = measured_cpu_ms / cpu_bench if cpu_bench > 0 else float("nan")
    if variant == "gpu":
        b = per_scalar("gpu", phase or "with_h2d") * scalars
        return {"bench_ms": b, "slowdown": 1.0, "predicted_ms": b}
    b = per_scalar(variant, phase) * scalars
    return {"bench_ms": b, "slowdown": slowdown, "predicted_ms": b * slowdown}


def predict(params: ModelParams, *, prep_ms: float, gw: int, scope: str = "narrow", transfer: str = "pinned_pool",
            partitions: int = 16, max_queue: int | None = None, run: str | None = None) -> ModelResult:
    """:func:`zkgpu.model.simulate` with prep_msm taking ``prep_ms`` (ms, >= 0) instead of the
    calibrated ``params.prep_msm_ms``; everything else as calibrated."""
    if not (math.isfinite(prep_ms) and prep_ms >= 0):
        raise ValueError(f"prep_ms must be a finite number >= 0, got {prep_ms!r}")
    speedup = params.prep_msm_ms / max(prep_ms, 1e-6) if params.prep_msm_ms > 0 else 1.0
    return simulate(params, partitions=partitions, gw=gw, scope=scope, transfer=transfer, prep_speedup=speedup,
                    max_queue=max_queue, run=run)


def _msm_rows(msm_bench: pd.DataFrame | None) -> pd.DataFrame | None:
    """Device-resident, uniform-scalar rows of a ``zkgpu bench msm`` table (``log2_n``, ``median_ms``)."""
    if msm_bench is None or "median_ms" not in msm_bench.columns:
        return None
    s = msm_bench.rename(columns={"log_n": "log2_n"})
    for c, v in (("mode", "device"), ("scalars", "uniform")):
        if c in s:
            s = s[s[c] == v]
    s = s.groupby("log2_n", as_index=False)["median_ms"].median()
    return s if len(s) else None


def msm_bench_ms(msm_bench: pd.DataFrame | None, m: int) -> float:
    """The benchmarked G1 MSM time (device, uniform scalars) for m points: log-log interpolation
    between the benchmarked sizes, clamped to the smallest / largest (below the smallest size an
    MSM costs at least its per-call floor, so the clamp is an upper estimate there). NaN without
    a table or for m < 1."""
    s = _msm_rows(msm_bench)
    if s is None or m < 1:
        return float("nan")
    return float(2 ** np.interp(math.log2(m), s["log2_n"].to_numpy(float), np.log2(s["median_ms"].to_numpy(float))))


def kernel_floor_ms(n: int, ntt_bench: pd.DataFrame | None, msm_bench: pd.DataFrame | None) -> dict[str, float]:
    """The kernels' own benchmark ms at size n: ``compute_h`` (``zkgpu bench ntt``, variant
    compute_h: 7 NTTs + pointwise, device-resident) and ``h_msm`` (:func:`msm_bench_ms` at n: H's
    coefficients are uniform). NaN where a table lacks that size."""
    lg = int(n).bit_length() - 1
    out = {"compute_h": float("nan"), "h_msm": float("nan")}
    if ntt_bench is not None and {"variant", "median_ms"} <= set(ntt_bench.columns):
        col = "log_n" if "log_n" in ntt_bench else "log2_n"
        s = ntt_bench[(ntt_bench["variant"] == "compute_h") & (ntt_bench[col] == lg)]
        if len(s):
            out["compute_h"] = float(s["median_ms"].median())
    rows = _msm_rows(msm_bench)
    if rows is not None and (rows["log2_n"] == lg).any():
        out["h_msm"] = float(rows.loc[rows["log2_n"] == lg, "median_ms"].iloc[0])
    return out


# --------------------------------------------------------------------------- notebook 07b tables


PILOT_DIR = "last-mile"
"""Sub-folder of ``data/`` for recordings of the last-mile scenario set
(:data:`zkgpu.record.LAST_MILE_SCENARIOS`, ``scripts/gpu_run.sh record-last-mile`` writes there):
notebook 07b reads them first (as its measurement, and older ones to calibrate its predictions);
the other notebooks, which replay the newest ``data/*-record*`` with the full scenario matrix, do
not see them."""


def last_mile_recordings(base: Any = None) -> list[Any]:
    """GPU recordings that have any of :func:`prep_scenarios`: those in ``data/last-mile/``
    (:data:`PILOT_DIR`) newest first, then those in ``data/`` newest first."""
    from pathlib import Path

    from . import replay

    root = Path(base) if base is not None else replay.data_dir()
    new = set(prep_scenarios())
    out = []
    for d in (root / PILOT_DIR, root):
        out += sorted((r for r in replay.find_recordings(d) if r.is_gpu and new & set(r.scenarios)), key=lambda r: r.date, reverse=True)
    return out


def prep_scenarios() -> dict[str, dict[str, Any]]:
    """The ``zkgpu record`` scenarios that take prep_msm off the critical path (``prep`` other than
    ``cpu``), in recording order: name -> settings."""
    from .record import SCENARIOS

    return {k: dict(v) for k, v in SCENARIOS.items() if v.get("prep", "cpu") != "cpu"}


def open_last_mile(mode: str | None = None, *, n: int | None = None, partitions: int | None = None,
                   host_load: int | None = None, base: Any = None) -> Any:
    """The data of notebook 07b: live, :data:`zkgpu.record.LAST_MILE_SCENARIOS` measured now; in
    replay, the newest GPU recording in ``data/last-mile/`` (:data:`PILOT_DIR`), else the newest in
    ``data/`` that has any of :func:`prep_scenarios`, else what :func:`zkgpu.live.open_source` gives (which then
    lacks them: the notebook says so).

    Raises:
        as :func:`zkgpu.live.open_source`.
    """
    from . import live, replay
    from .record import LAST_MILE_SCENARIOS

    live.configure_from_env()  # $ZKGPU_DATA, $ZKGPU_NB_OUT, as live.open_source does
    m = live.resolve_mode(mode)
    if m == "replay":
        recs = last_mile_recordings(base)
        if recs:
            return replay.Source("recorded-gpu", recs[0], m)
    return live.open_source(m, n=n, partitions=partitions, host_load=host_load, scenarios=LAST_MILE_SCENARIOS, base=base)


def idle_table(source: Any, names: Iterable[str]) -> pd.DataFrame:
    """:func:`idle_causes` shares of each recorded scenario in ``names`` (one row each), plus
    ``window_ms``, ``startup_ms`` and ``gpu_ms_per_partition`` (:func:`gpu_ms_per_partition`)."""
    rows = {}
    for name in names:
        if not source.has(name):
            continue
        ev = source.events(name)
        t = idle_causes(ev)
        rows[name] = {**t["share"].to_dict(), "window_ms": t.attrs["window_ms"], "startup_ms": t.attrs["startup_ms"],
                      "gpu_ms_per_partition": gpu_ms_per_partition(ev)}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "scenario"
    return out


def prior_recording(source: Any, base: Any = None) -> Any:
    """The newest GPU recording in ``data/last-mile/`` or ``data/``, older than ``source``'s, that
    has any of :func:`prep_scenarios` (an earlier measurement the predictions may calibrate on), or None."""
    mine = source.recording
    older = [r for r in last_mile_recordings(base) if r.path.resolve() != mine.path.resolve() and r.date < mine.date]
    return max(older, key=lambda r: r.date) if older else None


def _median(ev: pd.DataFrame, phase: str) -> float:
    s = ev[ev["phase"] == phase]
    return float(((s["end_ns"] - s["start_ns"]) / 1e6).median()) if len(s) else float("nan")


def predictions(source: Any, *, calibrate_on: str = "pinned_narrow", bench: pd.DataFrame | None = None,
                bench_label: str = "", prior: Any = None) -> tuple[pd.DataFrame, dict[str, ModelResult]]:
    """The model's prediction for every :func:`prep_scenarios` entry, made without its measurement
    in ``source``: calibrated on ``calibrate_on`` of ``source`` (:func:`zkgpu.calibration.calibrated_params`),
    with prep_msm taking the time :func:`prep_ms_prediction` gives from ``bench`` (a ``zkgpu bench
    prep`` table), or 0 ms without one (the bound where prep_msm no longer limits); batch_add and
    tail_msm stay as calibrated (the model does not know how well ``tail_streams=3`` overlaps them).
    ``prep_basis`` says which. Where ``prior`` (an earlier :class:`~zkgpu.replay.Recording`, e.g.
    :func:`prior_recording`) recorded the same scenario, ``prior_partitions_per_min`` is the model
    calibrated on that earlier run instead (the only prediction for ``lock_scope="none"``, whose
    phase durations depend on how the workers share the GPU). Partitions, queue depth and gw as
    the recording's configuration (or the calibration scenario's where the scenario was not
    recorded).

    Returns:
        ``(table, {scenario: ModelResult})`` (the calibration-based runs); the table has ``prep``,
        ``gw``, ``prep_ms``, ``prep_basis``, ``partitions_per_min`` (over the GPU window),
        ``model_util`` (the model's kernel utilization, which counts the whole copy as
        non-compute) and ``prior_partitions_per_min``; ``attrs["params"]`` holds the calibrated
        :class:`~zkgpu.model.ModelParams`, ``attrs["prior_sims"]`` the prior-calibrated runs.

    Raises:
        ValueError: the calibration scenario is missing (names it).
    """
    from . import replay
    from .calibration import calibrated_params

    if not source.has(calibrate_on):
        raise ValueError(f"predictions: {calibrate_on!r} is not in {source.recording.path.name}; recorded: {source.scenarios}")
    params = calibrated_params(source, scenario=calibrate_on)
    base_cfg = source.config(calibrate_on)
    rows, sims, prior_sims = {}, {}, {}
    for name, st in prep_scenarios().items():
        cfg = source.config(name) if source.has(name) else {**base_cfg, **st}
        run_kw = dict(gw=int(st["gw"]), scope=st["lock_scope"], transfer=st["transfer"], partitions=int(cfg.get("partitions", 16)),
                      max_queue=int(cfg.get("queue_depth") or 0) or None, run=f"model-{name}")
        row: dict[str, Any] = {"prep": st["prep"], "gw": st["gw"], "prep_ms": float("nan"), "prep_basis": "", "partitions_per_min": float("nan"),
                               "model_util": float("nan"), "prior_partitions_per_min": float("nan")}
        if prior is not None and name in prior.scenarios and prior.scenario(name).get("events"):
            # an earlier recording of this very configuration: calibrate on it, predict this run
            pp = calibrated_params(replay.Source("recorded-gpu", prior, "replay"), scenario=name)
            prior_sims[name] = predict(pp, prep_ms=pp.prep_msm_ms, **run_kw)
            row["prior_partitions_per_min"] = prior_sims[name].partitions_per_min
        if st["lock_scope"] == "none":
            # no shared mutex: the phases' durations depend on how the workers share the GPU, which
            # only a run with the same concurrency measures (the prior-calibrated column)
            row["prep_basis"] = "lock_scope='none': predicted only from an earlier run of it (prior_partitions_per_min)"
            rows[name] = row
            continue
        if bench is not None and len(bench):
            p = prep_ms_prediction(bench, st["prep"], prep_workload(cfg), params.prep_msm_ms)
            prep_ms, basis = p["predicted_ms"], f"bench prep {bench_label} x {p['slowdown']:.2f} (cpu slowdown in {calibrate_on})".strip()
        else:
            prep_ms, basis = 0.0, "0 ms: no prep benchmark recorded (prep_msm assumed off the critical path)"
        if int(st.get("tail_streams", 1)) > 1:
            basis += "; tail_streams=3 not modelled (batch_add and tail_msm as calibrated)"
        sims[name] = predict(params, prep_ms=prep_ms, **run_kw)
        row.update(prep_ms=prep_ms, prep_basis=basis, partitions_per_min=sims[name].partitions_per_min, model_util=sims[name].compute_util)
        rows[name] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "scenario"
    out.attrs["params"] = params
    out.attrs["prior_sims"] = prior_sims
    return out, sims


def _union_compute_share(events: pd.DataFrame) -> float:
    """(union of the GPU phases − exposed copies) / the run's whole wall span (all events)."""
    t = idle_causes(events)
    wall = (int(events["end_ns"].max()) - int(events["start_ns"].min())) / 1e6
    return float(t.loc["compute", "ms"]) / wall if wall > 0 else float("nan")


def steps_table(source: Any, names: Iterable[str]) -> pd.DataFrame:
    """Each recorded scenario's whole-run throughput and compute utilization
    (:func:`zkgpu.replay.scenario_table`; ``union_compute_util``: the same from the union of the
    GPU phases, which does not double-count overlapping workers), the same over the GPU window
    (:func:`zkgpu.model.utilization`), and the throughput relative to ``baseline`` where recorded."""
    from . import replay
    from .model import utilization

    present = [n for n in names if source.has(n)]
    tab = replay.scenario_table(source, present)
    if tab.empty:
        return tab
    cols = ["transfer", "lock_scope", "gw", "partitions", "partitions_per_min", "compute_util", "prep_msm_ms", "barrier_wait_ms", "ntt_msm_h_ms"]
    out = tab[[c for c in cols if c in tab.columns]].copy()
    out.insert(3, "prep", [source.config(n).get("prep", "cpu") for n in out.index])
    out.insert(4, "tail_streams", [int(source.config(n).get("tail_streams", 1)) for n in out.index])
    win = {n: utilization(source.events(n)) for n in out.index}
    # compute utilization from the union of the GPU phases (no double count where the workers'
    # phases overlap, lock_scope="none") over the whole run, as compute_util's wall span
    out["union_compute_util"] = [_union_compute_share(source.events(n)) for n in out.index]
    out["window_partitions_per_min"] = [win[n]["partitions_per_min"] for n in out.index]
    out["window_compute_util"] = [win[n]["compute_util"] for n in out.index]
    if "baseline" in out.index:
        out["x_baseline"] = out["partitions_per_min"] / out.loc["baseline", "partitions_per_min"]
    return out


def acceptance(source: Any, preds: pd.DataFrame, sims: dict[str, ModelResult]) -> dict[str, Any] | None:
    """Issue 12's acceptance on the recorded :func:`prep_scenarios` (None when none was recorded):
    the best (highest whole-run partitions/min) one's compute utilization (whole run: the lower of
    :func:`zkgpu.metrics.compute_utilization` and the union-based figure of :func:`steps_table`,
    since Σ gpu_ms double-counts workers whose phases overlap; and over the GPU window), its throughput against the
    baseline's of the same recording and against the compute-only bound (60000 / the fewest
    :func:`kernel_ms_per_partition` of the recording's runs at that size, ``compute_bound_from``
    names which), and the model's throughput error (over the GPU window, as the
    model measures it; ``model_whole_run_*``: the same over the whole run, startup included, from
    the model's own event table). ``*_ok`` flags test the thresholds (0.9, 2, 0.9, 10% over the
    GPU window)."""
    from .metrics import throughput
    from .model import compare

    done = [n for n in prep_scenarios() if source.has(n)]
    if not done or not source.has("baseline"):
        return None
    steps = steps_table(source, ["baseline", *done])
    best = str(steps.loc[done, "partitions_per_min"].idxmax())
    ev = source.events(best)
    g = gpu_ms_per_partition(ev)
    # the compute-only bound: the fewest kernel ms per partition any recorded run needed at this size
    kms = {n: kernel_ms_per_partition(source.events(n)) for n in ("baseline", "pinned_pool", "pinned_narrow", *done) if source.has(n)}
    kms = {k: v for k, v in kms.items() if math.isfinite(v) and v > 0}
    bound_from = min(kms, key=kms.get) if kms else None
    bound = 60000.0 / kms[bound_from] if bound_from else float("nan")
    prior_sims = preds.attrs.get("prior_sims", {})
    sim, basis = (sims[best], "calibration") if best in sims else ((prior_sims[best], "prior") if best in prior_sims else (None, ""))
    c = compare(sim, ev) if sim is not None else None
    rel = float(c.loc["partitions_per_min", "rel_err"]) if c is not None else float("nan")
    # the model's own event table includes its synthesis from t = 0, so the whole-run figure compares too
    whole = float(throughput(sim.events)["partitions_per_min"].iloc[0]) if sim is not None else float("nan")
    r = steps.loc[best]
    out = {
        "best": best, "compute_util": min(float(r["compute_util"]), float(r["union_compute_util"])),
        "window_compute_util": float(r["window_compute_util"]),
        "partitions_per_min": float(r["partitions_per_min"]), "baseline_partitions_per_min": float(steps.loc["baseline", "partitions_per_min"]),
        "x_baseline": float(r["x_baseline"]), "gpu_ms_per_partition": g,
        "kernel_ms_per_partition": kms.get(best, float("nan")), "compute_bound_per_min": bound, "compute_bound_from": bound_from or "",
        "vs_bound": float(r["partitions_per_min"]) / bound if bound > 0 else float("nan"),
        "window_vs_bound": float(r["window_partitions_per_min"]) / bound if bound > 0 else float("nan"),
        "model_partitions_per_min": sim.partitions_per_min if sim is not None else float("nan"), "model_basis": basis,
        "model_rel_err": rel,
        "model_whole_run_per_min": whole,
        "model_whole_run_rel_err": whole / float(r["partitions_per_min"]) - 1.0 if math.isfinite(whole) else float("nan"),
    }
    out.update(compute_util_ok=out["compute_util"] >= 0.9, x_baseline_ok=out["x_baseline"] >= 2.0,
               vs_bound_ok=out["vs_bound"] >= 0.9, model_ok=abs(rel) <= 0.10 if math.isfinite(rel) else False)
    return out


def gpu_budget(events: pd.DataFrame, n: int, ntt_bench: pd.DataFrame | None = None, msm_bench: pd.DataFrame | None = None) -> pd.DataFrame:
    """Where one partition's GPU time goes in a run, against the kernels' own benchmarks.

    Rows (median ms per partition): ``H computation`` (the ``ntt`` row's ``kernel_ms``: every
    kernel of compute_h by CUDA events, also those overlapping the copies) against
    :func:`kernel_floor_ms` ``compute_h``; ``exposed H2D`` (``exposed_ms``); ``H MSM`` (``h_msm``)
    against the benchmarked MSM at n; ``batch_add`` (no benchmark); ``tail_msm`` against the sum of
    :func:`msm_bench_ms` at the median significant counts of L, A and B (``*_sig`` in prep_msm's
    detail), one after another; ``GPU phases`` = :func:`gpu_ms_per_partition`; ``host work inside
    the phases`` = GPU phases + exposed H2D − the parts above (≥ 0): the time inside ntt_msm_h,
    batch_add and tail_msm in which the GPU waited for the worker's host side (Python, launches,
    copies it waits for, syncs). The parts are medians, so this is an estimate.
    Columns: ``pipeline_ms``, ``benchmark_ms`` (NaN where none), ``ratio``.
    """
    def med(phase: str) -> float:
        s = events[events["phase"] == phase]
        return float(((s["end_ns"] - s["start_ns"]) / 1e6).median()) if len(s) else float("nan")

    floor = kernel_floor_ms(n, ntt_bench, msm_bench)
    pm = events[events["phase"] == "prep_msm"]
    sig = [detail_value(pm, f"{k}_sig").median() for k in ("l", "a", "b_g1")] if len(pm) else []
    tails = sum(msm_bench_ms(msm_bench, int(m)) for m in sig if np.isfinite(m) and m > 0) if sig else float("nan")
    nt = events[events["phase"] == "ntt"]
    h = events[events["phase"] == "h2d"]
    rows = {
        "H computation": (float(detail_value(nt, "kernel_ms").median()) if len(nt) else float("nan"), floor["compute_h"]),
        "exposed H2D": (float(detail_value(h, "exposed_ms").median()) if len(h) else 0.0, float("nan")),
        "H MSM": (med("h_msm"), floor["h_msm"]),
        "batch_add": (med("batch_add"), float("nan")),
        "tail_msm": (med("tail_msm"), tails if tails else float("nan")),
        "GPU phases": (gpu_ms_per_partition(events), float("nan")),
    }
    parts = sum(v[0] for k, v in rows.items() if k != "GPU phases" and np.isfinite(v[0]))
    # the part of the GPU phases in which none of the above ran: the worker's host work (Python,
    # launches, waits on copies and syncs) that the GPU waited for
    rows["host work inside the phases"] = (max(0.0, rows["GPU phases"][0] + rows["exposed H2D"][0] - parts) if parts else float("nan"), float("nan"))
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["pipeline_ms", "benchmark_ms"])
    out["ratio"] = out["pipeline_ms"] / out["benchmark_ms"]
    out.index.name = "part"
    return out


def prediction_vs_measurement(source: Any, preds: pd.DataFrame, sims: dict[str, ModelResult]) -> pd.DataFrame:
    """Per recorded :func:`prep_scenarios` entry: the calibration-based prediction, the prediction
    from an earlier run (``preds.attrs["prior_sims"]``) and the measurement, all partitions/min
    over the GPU window (:func:`zkgpu.model.utilization`), with each prediction's relative error."""
    from .model import utilization

    prior_sims = preds.attrs.get("prior_sims", {})
    rows = {}
    for name in prep_scenarios():
        if not source.has(name):
            continue
        meas = utilization(source.events(name))["partitions_per_min"]
        m = sims[name].partitions_per_min if name in sims else float("nan")
        pr = prior_sims[name].partitions_per_min if name in prior_sims else float("nan")
        rows[name] = {"model /min": m, "model from earlier run /min": pr, "measured /min": meas,
                      "model rel_err": m / meas - 1.0, "earlier-run rel_err": pr / meas - 1.0}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "scenario"
    return out


def key_numbers(source: Any, idle: pd.DataFrame, after_fix: str, preds: pd.DataFrame, acc: dict[str, Any] | None,
                gpu_phase_ms: float) -> tuple[dict[str, Any], str]:
    """Notebook 07b's key numbers (the report's contract, :func:`zkgpu.keynumbers.number`) and its
    one-sentence finding, from :func:`idle_table`, :func:`predictions` and :func:`acceptance`.

    Args:
        source: the replayed or live source; idle: :func:`idle_table` (shares); after_fix: the run
            that shows the state after the fix; preds: :func:`predictions`; acc: :func:`acceptance`
            (None before the new scenarios are recorded); gpu_phase_ms: GPU phase ms per partition
            of the run shown (:func:`gpu_budget`).

    Returns:
        ``(numbers, finding)``; every key starts with ``last_mile_`` (the numbers come from the
        last-mile recording, not the one notebooks 01-08 replay).
    """
    from .keynumbers import number

    causes = [c for c in idle.columns if c in CAUSE_PHASES and c not in ("compute", "exposed H2D")]
    top = idle.loc[after_fix, causes].astype(float)
    k: dict[str, Any] = {
        "source": number(source.kind, "", "data source"),
        "recording": number(source.recording.path.name, "", "recording"),
        f"{after_fix}_window_compute": number(float(idle.loc[after_fix, "compute"]), "%", "GPU computing, share of its window", after_fix),
        f"{after_fix}_top_idle_share": number(float(top.max()), "%", f"largest idle cause: {top.idxmax()}", after_fix),
        "gpu_phase_ms": number(float(gpu_phase_ms), "ms", "GPU phases per partition, run shown"),
        "after_fix": number(after_fix, "", "run showing the state after the fix"),
        "top_idle_cause": number(str(top.idxmax()), "", "largest idle cause after the fix", after_fix),
        "shown": number(acc["best"] if acc else after_fix, "", "run whose timeline and budget are shown"),
    }
    for s_, v in preds["partitions_per_min"].dropna().items():
        k[f"predicted_{s_}"] = number(float(v), "partitions/min", "model prediction (GPU window)", str(s_))
    text = (f"After the fix ({after_fix}) the GPU computes {idle.loc[after_fix, 'compute']:.0%} of its window and its largest "
            f"idle cause is {top.idxmax()} ({top.max():.0%})")
    if acc:
        best = acc["best"]
        k.update({
            "best_compute_util": number(float(acc["compute_util"]), "%", "compute utilization, whole run", best),
            "best_partitions_per_min": number(float(acc["partitions_per_min"]), "partitions/min", "throughput", best),
            "baseline_partitions_per_min": number(float(acc["baseline_partitions_per_min"]), "partitions/min", "throughput", "baseline"),
            "best_x_baseline": number(float(acc["x_baseline"]), "x", "throughput / baseline's", best),
            "best_vs_bound": number(float(acc["vs_bound"]), "x", "throughput / compute-only bound", best),
        })
        err = abs(float(acc["model_rel_err"]))
        if math.isfinite(err) and err <= 1.0:
            k["model_rel_err"] = number(err, "%", "model's throughput error (GPU window)", best)
        text += (f"; with prep_msm off the critical path the best configuration ({best}) computes {acc['compute_util']:.0%} "
                 f"of the run at {acc['partitions_per_min']:.0f} partitions/min, {acc['x_baseline']:.2f}x the baseline's "
                 f"{acc['baseline_partitions_per_min']:.0f} in the same recording and {acc['vs_bound']:.0%} of the compute-only "
                 f"bound of {acc['compute_bound_per_min']:.0f} (targets: 90% utilization "
                 f"{'met' if acc['compute_util_ok'] else 'not met'}, 2x the baseline {'met' if acc['x_baseline_ok'] else 'not met'}, "
                 f"90% of the bound {'met' if acc['vs_bound_ok'] else 'not met'}); the model predicted "
                 f"{acc['model_partitions_per_min']:.0f} ({acc['model_rel_err']:+.1%})")
    else:
        text += "; this recording has no run with prep_msm off the critical path yet"
    k = {f"last_mile_{name}": v for name, v in k.items()}
    return k, text + "."


def summary(mode: str | None = "replay") -> tuple[dict[str, Any], str]:
    """Notebook 07b's key numbers and finding (:func:`key_numbers`) from the newest last-mile
    recording, computed the way 07b computes them (for notebook 08's conclusions); the finding names
    the recording, since it is not the one notebooks 01-08 replay.

    Raises:
        ValueError: no last-mile recording (``data/last-mile/``) to replay.
    """
    from . import replay

    src = open_last_mile(mode)
    new = [s for s in prep_scenarios() if src.has(s)]
    before = [s for s in ("baseline", "pinned_pool", "pinned_narrow") if src.has(s)]
    idle = idle_table(src, before + new)
    after_fix = "pinned_narrow" if "pinned_narrow" in idle.index else str(idle.index[-1])
    found = replay.find_benchmarks("prep")
    bench = found[1].get("prep") if found else None
    preds, sims = predictions(src, bench=bench, bench_label=found[0].name if found else "", prior=prior_recording(src))
    acc = acceptance(src, preds, sims)
    shown = acc["best"] if acc else after_fix
    budget = gpu_budget(src.events(shown), int(src.config(shown).get("n", 0) or 0))
    nums, text = key_numbers(src, idle, after_fix, preds, acc, float(budget.loc["GPU phases", "pipeline_ms"]))
    return nums, f"In {src.recording.path.name} (data/last-mile/, {int(src.config(shown).get('partitions', 0) or 0)} partitions): " + text


def acceptance_markdown(acc: dict[str, Any]) -> str:
    """Issue 12's targets against :func:`acceptance`, one markdown bullet each: what was measured,
    the target, met or not."""
    rows = [
        ("compute utilization of the best run (whole run)", f"{acc['compute_util']:.1%}", ">= 90%", acc["compute_util_ok"]),
        ("its throughput / the baseline's (same recording)", f"{acc['x_baseline']:.2f}x ({acc['partitions_per_min']:.0f} / "
         f"{acc['baseline_partitions_per_min']:.0f} partitions/min)", ">= 2x", acc["x_baseline_ok"]),
        ("its throughput / the compute-only bound", f"{acc['vs_bound']:.1%} of {acc['compute_bound_per_min']:.0f} partitions/min "
         f"(60000 / {acc['kernel_ms_per_partition']:.1f} kernel ms per partition, from {acc['compute_bound_from']})", ">= 90%", acc["vs_bound_ok"]),
        ("the model's throughput error", f"{acc['model_rel_err']:+.1%} (predicted {acc['model_partitions_per_min']:.0f})", "within 10%", acc["model_ok"]),
    ]
    return "\n".join(f"* {what}: **{val}** — target {target}: {'met' if ok else '**not met**'}" for what, val, target, ok in rows)
