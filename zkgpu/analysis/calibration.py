"""Parameters of the pipeline model (:mod:`zkgpu.analysis.model`): :func:`calibrate` from a recorded event table,
:func:`duration_spread` for its ``jitter``, :func:`reference_params` from upstream's published numbers
(what-if only, never shown as our measurements). Durations in ms, sizes in bytes, rates in GB/s (1e9 B/s).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from zkgpu.analysis import gpu_time, logs, metrics, model
from zkgpu.analysis.metrics import detail_value
from zkgpu.analysis.model import ModelParams
from zkgpu.analysis.replay import Source, scenario_table, story_order
from zkgpu.core.manifest import DATA_DIR

__all__ = ["calibrate", "duration_spread", "SPREAD_PHASES", "reference_params", "POREP_CONSTRAINTS", "FR_BYTES", "calibrated_params", "scenario_run_settings",
           "model_vs_measured", "run_differences", "DIFFERENCE_PHASES"]


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


def _lock_overhead_ms(ev: pd.DataFrame, stat: str = "median") -> float:
    """Median (or mean: ``stat``) over partitions of Σ mutex_held − Σ durations of the phases lying inside the held intervals."""
    held = ev[ev["phase"] == "mutex_held"]
    if not len(held):
        return 0.0
    inner = ev[ev["phase"].isin(("ntt_msm_h", "barrier_wait", "batch_add", "tail_msm"))]
    vals = []
    for key, h in held.groupby(["run", "partition"], dropna=False):
        ivs = list(zip(h["start_ns"].astype("int64"), h["end_ns"].astype("int64"), strict=True))
        sub = inner[(inner["run"] == key[0]) & (inner["partition"] == key[1])] if not pd.isna(key[1]) else inner.iloc[0:0]
        inside = sum(
            int(e) - int(s) for s, e in zip(sub["start_ns"], sub["end_ns"], strict=True)
            if any(hs <= int(s) and int(e) <= he for hs, he in ivs)
        )
        vals.append(max(0.0, (sum(he - hs for hs, he in ivs) - inside) / 1e6))
    return float(np.median(vals) if stat == "median" else np.mean(vals)) if vals else 0.0


def _pre_lock_host_ms(ev: pd.DataFrame, stat: str = "median") -> float:
    """Median (or mean: ``stat``) over ``pre_lock`` rows of their time not covered by the ``h2d`` rows of the same run
    and partition lying inside them (the copy of a/b/c before the mutex, ``stage=pre_lock``, lies inside the worker's
    pre_lock phase, :func:`zkgpu.pipeline.worker.prove_start`; overlapping copies counted once): the worker's own
    host work before it asks for the mutex, which the model adds to the copy it simulates
    (:func:`zkgpu.analysis.model.simulate`); 0 without pre_lock rows."""
    pl = ev[ev["phase"] == "pre_lock"]
    if not len(pl):
        return 0.0

    def key(df: pd.DataFrame) -> pd.Series:
        return df["run"].astype("string").fillna("") + "|" + df["partition"].astype("float64").fillna(-1.0).astype(str)

    h2d = ev[ev["phase"] == "h2d"]
    copies: dict[str, list[tuple[int, int]]] = {}
    for k, s, e in zip(key(h2d), h2d["start_ns"].astype("int64"), h2d["end_ns"].astype("int64"), strict=True):
        copies.setdefault(str(k), []).append((int(s), int(e)))
    vals = []
    for k, s, e in zip(key(pl), pl["start_ns"].astype("int64"), pl["end_ns"].astype("int64"), strict=True):
        inside, reach = 0, int(s)
        for cs, ce in sorted(c for c in copies.get(str(k), ()) if s <= c[0] and c[1] <= e):  # union of the copies inside
            if ce > reach:
                inside += ce - max(cs, reach)
                reach = ce
        vals.append(max(0.0, (int(e) - int(s) - inside) / 1e6))
    return float(np.median(vals) if stat == "median" else np.mean(vals))


def calibrate(
    events: pd.DataFrame,
    *,
    pinned_gbps: float | None = None,
    pageable_gbps: float | None = None,
    h2d_bytes: float | None = None,
    transfer: str | None = None,
    source: str | None = None,
    stat: str = "median",
) -> ModelParams:
    """Fit :class:`ModelParams` to a recorded event table: each duration is its phase's median wall time (``stat="mean"``:
    the mean, which adds up as the run does).

    The H2D rate is Σ bytes / Σ time of the ``h2d`` rows, assigned to the pageable or pinned rate by ``transfer`` or
    the rows' ``detail``; without ``h2d`` rows ntt_msm_h is all compute unless ``h2d_bytes`` and a rate are given.
    Copies inside ntt_msm_h: ``ntt_ms`` = ntt_msm_h − h2d − h_msm, ``h_kernel_ms`` = the ``ntt`` rows' ``kernel_ms``.
    Copies before the mutex: ``h_kernel_ms`` = ntt_msm_h − h_msm, ``ntt_ms`` =
    :func:`zkgpu.analysis.model.in_lock_tail_ms`. Also synthesis time and concurrency, ``lock_overhead_ms`` (mutex
    held beyond its phases) and ``pre_lock_ms`` (less its copies).

    Args:
        events: event table with at least ``prep_msm``, ``ntt_msm_h``, ``batch_add`` and ``tail_msm`` rows.
        pinned_gbps, pageable_gbps: rates (GB/s) where the table does not measure them.
        h2d_bytes: bytes per partition where the table has no ``h2d`` bytes.
        transfer: the recorded run's transfer path (overrides ``detail``).
        source: label for the parameters (default: the table's run names).

    Raises:
        ValueError: a required phase is missing (names it), or a rate is needed but unknown.
    """
    if stat not in ("median", "mean"):
        raise ValueError(f"calibrate: stat must be 'median' or 'mean', got {stat!r}")
    ev = events
    med = metrics.phase_medians(ev) if stat == "median" else {
        str(k): float(v) for k, v in ev.assign(_ms=metrics.duration_ms(ev)).groupby("phase", observed=True)["_ms"].mean().items()}
    missing = [p for p in ("prep_msm", "ntt_msm_h", "batch_add", "tail_msm") if p not in med]
    if missing:
        raise ValueError(f"calibrate: the event table has no rows for phase(s) {missing}; phases present: {sorted(med)}")

    h2d = ev[(ev["phase"] == "h2d") & ev["bytes"].notna()] if "bytes" in ev else ev.iloc[0:0]
    measured_rate = None
    measured_kind = None
    h2d_ms = 0.0
    pre_lock = False
    if len(h2d):
        secs = float(metrics.duration_ms(h2d).sum()) / 1e3
        total_bytes = float(h2d["bytes"].astype("float64").sum())
        if secs > 0 and total_bytes > 0:
            measured_rate = total_bytes / secs / 1e9
        per_part = h2d.groupby(["run", "partition"], dropna=False)["bytes"].sum().astype("float64")
        h2d_bytes = float(per_part.median()) if h2d_bytes is None else h2d_bytes
        h2d_ms = float(h2d.assign(_ms=metrics.duration_ms(h2d)).groupby(["run", "partition"], dropna=False)["_ms"].sum().agg(stat))
        pre_lock = bool(h2d["detail"].astype("string").str.contains("stage=pre_lock", regex=False).fillna(False).all()) if "detail" in h2d else False
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
    if pre_lock:  # no copy inside ntt_msm_h: its H part is the computation on device-resident inputs
        h_kernel = max(med["ntt_msm_h"] - h_msm, 0.0)
        ntt = model.in_lock_tail_ms(h_kernel, h2d_ms)
    else:
        ntt = max(med["ntt_msm_h"] - h2d_ms - h_msm, 0.0)
        nt = ev[ev["phase"] == "ntt"]
        k = detail_value(nt, "kernel_ms").dropna() if len(nt) and "detail" in nt else pd.Series(dtype=float)
        h_kernel = float(k.agg(stat)) if len(k) else 0.0

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
    lock_overhead = _lock_overhead_ms(ev, stat)
    synth = ev[ev["phase"] == "synthesize"]
    synth_workers = max(1, max((_max_overlap(g) for _, g in synth.groupby("run")), default=1)) if len(synth) else 1
    runs = sorted(str(r) for r in ev["run"].dropna().unique()) if "run" in ev else []
    return ModelParams(
        prep_msm_ms=med["prep_msm"],
        ntt_ms=ntt,
        h_msm_ms=h_msm,
        h_kernel_ms=h_kernel,
        batch_add_ms=med["batch_add"],
        tail_msm_ms=med["tail_msm"],
        h2d_bytes=float(h2d_bytes),
        pageable_gbps=float(pageable_gbps),
        pinned_gbps=float(pinned_gbps),
        b_g2_msm_ms=med.get("b_g2_msm", 0.0),
        synth_ms=med.get("synthesize", 0.0),
        synth_workers=int(synth_workers),
        finalize_ms=med.get("finalize", 0.0),
        pre_lock_ms=_pre_lock_host_ms(ev, stat),
        lock_overhead_ms=lock_overhead,
        source=source or ("calibrated from " + (", ".join(runs) if runs else "an event table")),
    )


#: the phases whose spread :func:`duration_spread` measures: those whose durations :func:`zkgpu.analysis.model.simulate` draws
SPREAD_PHASES = ("synthesize", "pre_lock", "prep_msm", "b_g2_msm", "ntt_msm_h", "batch_add", "tail_msm")


def duration_spread(events: pd.DataFrame, min_rows: int = 8) -> float:
    """The model's ``jitter`` for a recorded run: the median over :data:`SPREAD_PHASES` of each phase's robust CV,
    (q75 − q25) / 1.349 / median, for phases with at least ``min_rows`` rows and a median > 0; NaN when none counts.
    Without it, two ``submit``-scope workers fall into step and the model under-predicts.
    """
    if not len(events):
        return math.nan
    ev = events[events["phase"].isin(SPREAD_PHASES)]
    ms = metrics.duration_ms(ev)
    cvs = []
    for _, x in ms.groupby(ev["phase"].astype(str)):
        med = float(x.median())
        if len(x) >= min_rows and med > 0:
            q25, q75 = (float(v) for v in x.quantile([0.25, 0.75]))
            cvs.append((q75 - q25) / 1.349 / med)
    return float(np.median(cvs)) if cvs else math.nan


#: Constraints of one PoRep-32GiB partition (PCE extraction, curio ``extern/cuzk/cuzk-project.md``
#: :1588-1601, quoted in notes/cuzk-pipeline.md §4); a, b, c are one 32-byte Fr per constraint each.
POREP_CONSTRAINTS = 130_278_869
FR_BYTES = 32


def reference_params(reference_dir: str | None = None) -> ModelParams:
    """Parameters of upstream's PoRep partition (RTX 5070 Ti) from ``data/reference/``: medians of the seed's
    ``CUZK_TIMING`` lines, b_g2_msm from ``cuzk_phase8_vs_phase9.csv``, h2d_bytes = 3 × :data:`POREP_CONSTRAINTS`
    × 32 B, the pinned rate from ``cuzk_48dccd93_claims.csv``, ntt_ms from Phase 9's ntt_msm_h less its H2D.
    For what-if questions only, never shown as our measurements.
    """
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



def _h2d_rate_gbps(events: pd.DataFrame) -> float | None:
    h = events[(events["phase"] == "h2d") & events["bytes"].notna()]
    secs = float(((h["end_ns"] - h["start_ns"]) / 1e9).sum())
    return float(h["bytes"].astype("float64").sum()) / secs / 1e9 if secs > 0 else None


def calibrated_params(
    source: Source, scenario: str = "baseline", *, pageable_scenario: str = "baseline", pinned_scenario: str = "pinned_pool",
    stat: str = "median",
) -> ModelParams:
    """:func:`calibrate` on one recorded scenario, with the pageable rate from ``pageable_scenario``'s ``h2d`` rows and
    the pinned one from ``pinned_scenario``'s (the scenario's own rows supply its own path's).

    Raises:
        ValueError: a rate is needed but neither scenario measured it.
    """
    ev = source.events(scenario)
    transfer = source.config(scenario).get("transfer", "pageable")
    kind = "pageable" if transfer == "pageable" else "pinned"
    rates: dict[str, float | None] = {"pageable": None, "pinned": None}
    for name, k in ((pageable_scenario, "pageable"), (pinned_scenario, "pinned")):
        if k != kind and source.has(name):
            rates[k] = _h2d_rate_gbps(source.events(name))
    return calibrate(ev, pageable_gbps=rates["pageable"], pinned_gbps=rates["pinned"], transfer=transfer, stat=stat,
                     source=f"calibrated ({stat}s) from {scenario} of {source.recording.path.name} ({source.device_label})")


def scenario_run_settings(settings: Mapping[str, Any], config: Mapping[str, Any], run: str) -> dict[str, Any]:
    """:func:`zkgpu.analysis.model.simulate` keywords for a recorded scenario: ``gw``, ``scope``, ``transfer``,
    ``h2d_stage``, ``partitions``, ``max_queue`` (0 or none: unbounded) and ``run``, with defaults gw 2, 16
    partitions, ``in_lock``.

    Raises:
        KeyError: the settings lack ``lock_scope`` or ``transfer``.
    """
    return {"gw": int(settings.get("gw", 2)), "scope": str(settings["lock_scope"]), "transfer": str(settings["transfer"]),
            "partitions": int(config.get("partitions", 16)), "max_queue": int(config.get("queue_depth") or 0) or None, "run": run,
            "h2d_stage": str(settings.get("h2d_stage", "in_lock"))}


def model_vs_measured(source: Source, names: Iterable[str] | None = None, calibrate_on: str = "pinned_pool") -> pd.DataFrame:
    """The model calibrated once on ``calibrate_on`` and run with each scenario's settings, against that scenario's
    measured medians (:func:`zkgpu.analysis.replay.scenario_table`).

    Returns:
        DataFrame indexed by scenario with ``measured_per_min``, ``model_per_min``, ``rel_err``,
        ``measured_compute_util``, ``model_compute_util``.

    Raises:
        KeyError: ``calibrate_on`` is not recorded.
    """
    params = calibrated_params(source, scenario=calibrate_on)
    rows = []
    shown = [s for s in (names if names is not None else story_order(source.scenarios)) if source.has(s)]
    tab = scenario_table(source, shown)
    for name in shown:
        cfg = source.config(name)
        transfer = "resident" if name == "compute_only" else (cfg.get("transfer") or "pinned")
        sim = model.simulate(params, partitions=int(cfg["partitions"]), gw=int(cfg["gw"]), scope=cfg["lock_scope"], transfer=transfer,
                             h2d_stage=cfg.get("h2d_stage") or "in_lock")
        meas = tab.loc[name]
        rows.append({"scenario": name, "measured_per_min": float(meas["partitions_per_min"]), "model_per_min": sim.partitions_per_min,
                     "rel_err": (sim.partitions_per_min - float(meas["partitions_per_min"])) / float(meas["partitions_per_min"]),
                     "measured_compute_util": float(meas["compute_util"]), "model_compute_util": sim.compute_util})
    return pd.DataFrame(rows).set_index("scenario")


#: the phases :func:`run_differences` compares (the model's parameters, and synthesis, which feeds it)
DIFFERENCE_PHASES = ("synthesize", "prep_msm", "pre_lock", "mutex_wait", "mutex_held", "ntt_msm_h", "h_msm", "batch_add", "tail_msm")


def run_differences(events: pd.DataFrame, calibration_events: pd.DataFrame) -> pd.DataFrame:
    """Mean ms per event of each of :data:`DIFFERENCE_PHASES` and the GPU phases per partition in a predicted run
    (``events``) and its calibration run, and their ratio.

    Returns:
        DataFrame indexed by ``phase`` with ``run_ms``, ``calibration_ms`` (NaN where missing) and ``ratio``.
    """
    def means(ev: pd.DataFrame) -> pd.Series:
        sub = ev[ev["phase"].isin(DIFFERENCE_PHASES)]
        out = metrics.duration_ms(sub).groupby(sub["phase"].astype(str)).mean()
        if "pre_lock" in out.index:  # as calibrate takes it: without the copy of a/b/c inside it
            out["pre_lock"] = _pre_lock_host_ms(ev, "mean")
        return out

    a, b = means(events), means(calibration_events)
    order = [p for p in DIFFERENCE_PHASES if p in a.index or p in b.index]
    out = pd.DataFrame({"run_ms": a.reindex(order), "calibration_ms": b.reindex(order)})
    out.loc["GPU phases per partition"] = [gpu_time.gpu_ms_per_partition(events), gpu_time.gpu_ms_per_partition(calibration_events)]
    out["ratio"] = out["run_ms"] / out["calibration_ms"]
    out.index.name = "phase"
    return out
