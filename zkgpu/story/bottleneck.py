"""What the model predicts once prep_msm is off the critical path, against what was measured (notebook 07b).

Each prep scenario is simulated (:func:`zkgpu.analysis.model.simulate`) with its prep_msm time
(:func:`prep_ms_prediction`), calibrated on another scenario of the same recording with the same prep
placement (:func:`calibration_scenario`); a precomputed-bases step is a plain run with its MSM phases scaled
by :func:`msm_speedups`. Tables and targets: :func:`idle_table`, :func:`lock_table`, :func:`steps_table`,
:func:`prediction_vs_measurement`, :func:`acceptance`, :func:`key_numbers`, :func:`summary`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from zkgpu.analysis.calibration import calibrated_params, scenario_run_settings
from zkgpu.analysis.gpu_time import (
    CAUSE_PHASES,
    copy_wait,
    gpu_budget,
    gpu_ms_per_partition,
    idle_causes,
    kernel_ms_per_partition,
)
from zkgpu.analysis.keynumbers import REPRESENTATIVE_RUN, number
from zkgpu.analysis.model import ModelParams, ModelResult, compare, model_accuracy_text, simulate, utilization
from zkgpu.analysis.replay import (
    Recording,
    Source,
    data_dir,
    find_benchmarks,
    find_recordings,
    scenario_table,
    story_order,
)
from zkgpu.core.scenarios import MAIN_SCENARIOS

__all__ = [
    "PILOT_DIR", "prep_scenarios", "last_mile_recordings", "last_mile_source", "prior_recording", "prep_workload",
    "prep_ms_prediction", "predict", "prep_placement", "calibration_scenario", "msm_speedups", "setup_msm_bench",
    "predictions", "idle_table", "lock_table", "steps_table", "prediction_vs_measurement", "acceptance",
    "acceptance_markdown", "key_numbers", "summary", "summary_text"
]


def prep_workload(config: dict[str, Any]) -> int:
    """Scalars one partition's prep_msm classifies: L (aux) + A (inputs + a-density aux) + B (b-density inputs + aux),
    from a scenario's configuration (``n``, ``aux_ratio``, ``num_inputs``, ``density.a_aux``, ``density.b_aux``).

    Raises:
        ValueError: the configuration lacks one of those keys (names it).
    """
    dens = config.get("density")
    missing = [k for k in ("n", "aux_ratio", "num_inputs") if k not in config]
    missing += [f"density.{k}" for k in ("a_aux", "b_aux") if not (isinstance(dens, dict) and k in dens)]
    if missing:
        raise ValueError(f"prep_workload: the scenario's configuration lacks {missing}")
    assert isinstance(dens, dict)
    aux = max(1, int(round(float(config["aux_ratio"]) * int(config["n"]))))
    return int(round(aux + int(config["num_inputs"]) + float(dens["a_aux"]) * aux + 1 + float(dens["b_aux"]) * aux))


def prep_ms_prediction(bench: pd.DataFrame, variant: str, scalars: int, measured_cpu_ms: float, *, phase: str | None = None) -> dict[str, float]:
    """prep_msm ms of ``variant`` in the pipeline for ``scalars`` scalars per partition, from a ``zkgpu bench prep``
    table (log-interpolated ms per scalar); CPU variants are scaled by the ``cpu`` variant's slowdown in the
    pipeline (``measured_cpu_ms`` / its bench ms), ``gpu`` uses the ``with_h2d`` phase and no slowdown.

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
            partitions: int = 16, max_queue: int | None = None, run: str | None = None, h2d_stage: str = "in_lock") -> ModelResult:
    """:func:`zkgpu.analysis.model.simulate` with prep_msm taking ``prep_ms`` (ms, >= 0) instead of the
    calibrated ``params.prep_msm_ms``; everything else as calibrated."""
    if not (math.isfinite(prep_ms) and prep_ms >= 0):
        raise ValueError(f"prep_ms must be a finite number >= 0, got {prep_ms!r}")
    return simulate(replace(params, prep_msm_ms=float(prep_ms)), partitions=partitions, gw=gw, scope=scope, transfer=transfer,
                    h2d_stage=h2d_stage, max_queue=max_queue, run=run)


#: how much each setting that differs weighs when :func:`calibration_scenario` picks the run a
#: prediction is calibrated on: the lock scope and the transfer path change what the lock holds,
#: concurrent tails and more workers change how the GPU phases share the device; the H2D stage
#: is what the model itself moves (:mod:`zkgpu.analysis.model`), so it weighs least
_CALIBRATION_WEIGHTS = {"transfer": 4, "lock_scope": 3, "tail_streams": 2, "gw": 2, "h2d_stage": 1}
_SETTING_DEFAULTS: dict[str, Any] = {"prep": "cpu", "tail_streams": 1, "h2d_stage": "in_lock", "gw": 2, "msm_bases": "plain"}
#: the setup benchmark's keys (:meth:`zkgpu.pipeline.gpu_backend.GpuBackend.setup`, a manifest entry's ``setup.msm_bench``)
_MSM_BENCH_KEYS = ("h_plain", "h_precomp", "tail_plain", "tail_precomp")


def msm_speedups(source: Source, name: str, msm_bench: pd.DataFrame | None = None,
                 config: Mapping[str, Any] | None = None) -> tuple[float, float, str] | None:
    """``(h_ratio, tail_ratio, basis)``: precomputed-bases ms / plain ms of the H MSM and the L tail, which
    :func:`predictions` scales a plain run's ``h_msm`` and ``tail_msm`` by. From the scenario's setup MSM benchmark
    (``setup.msm_bench``), else another scenario's, else a ``zkgpu bench msm`` table (``msm_bench``) at the nearest
    size; None when there is none.
    """
    found = setup_msm_bench(source, name)
    if found is not None:
        b, other = found
        return b["h_precomp"] / b["h_plain"], b["tail_precomp"] / b["tail_plain"], f"setup MSM benchmark of {other}"
    if msm_bench is None or not len(msm_bench):
        return None
    uni = msm_bench[msm_bench["scalars"] == "uniform"]
    plain = uni[uni["mode"] == "device"].groupby("log2_n")["median_ms"].median()
    pre = uni[uni["mode"] == "device_precomp"].groupby("log2_n")["median_ms"].median()
    sizes = sorted(set(plain.index) & set(pre.index))
    if not sizes:
        return None
    cfg = source.config(name) if source.has(name) else dict(config or {})
    n = int(cfg.get("n") or 2 ** max(sizes))
    dens: dict[str, Any] = cfg["density"] if isinstance(cfg.get("density"), dict) else {}
    rows = max(1.0, (1.0 - float(dens.get("zero", 0.45)) - float(dens.get("one", 0.50))) * float(cfg.get("aux_ratio", 0.5)) * n)

    def ratio(points: float) -> tuple[float, int]:
        lg = min(sizes, key=lambda x: abs(x - math.log2(points)))
        return float(pre[lg] / plain[lg]), int(lg)

    (rh, lh), (rt, lt) = ratio(n), ratio(rows)
    return rh, rt, f"bench msm device_precomp / device, uniform, 2^{lh} (H) and 2^{lt} (tails)"


def setup_msm_bench(source: Source, name: str) -> tuple[dict[str, float], str] | None:
    """The MSM benchmark ``zkgpu record`` ran at the set-up of ``name``'s scenario (a manifest entry's
    ``setup.msm_bench``: ``h_plain``, ``h_precomp``, ``tail_plain``, ``tail_precomp``, median ms by CUDA
    events, in the recording's own session), else that of the first scenario of the story that has
    one: ``(bench, scenario it comes from)``, or None when no scenario of the recording has one."""
    rec = source.recording
    for other in [name, *story_order(rec.scenarios)]:
        if other not in rec.scenarios:
            continue
        b = (rec.scenario(other).get("setup") or {}).get("msm_bench") or {}
        if all(float(b.get(k) or 0) > 0 for k in _MSM_BENCH_KEYS):
            return {k: float(b[k]) for k in _MSM_BENCH_KEYS}, other
    return None


def prep_placement(settings: dict[str, Any]) -> str:
    """Where a scenario's prep_msm runs: ``gpu`` (``prep="gpu"``: kernels, the host copies aux and
    launches) or ``cpu`` (``cpu``, ``cpu_parallel``: numpy or numba threads that compete with the GPU
    workers' host side). It decides the host component of the GPU phases (see :func:`predictions`)."""
    return "gpu" if settings.get("prep", "cpu") == "gpu" else "cpu"


def calibration_scenario(source: Source, name: str, settings: dict[str, Any]) -> str | None:
    """The scenario of ``source`` that ``name``'s prediction is calibrated on: another one (not ``compute_only``) with
    the same prep placement and plain bases, fewest weighted setting differences (:data:`_CALIBRATION_WEIGHTS`),
    ties in story order; None when none qualifies.
    """
    def val(st: dict[str, Any], k: str) -> Any:
        return st.get(k, _SETTING_DEFAULTS.get(k))

    rec = source.recording
    cands = []
    for order, other in enumerate(story_order(rec.scenarios)):
        if other in (name, "compute_only") or not source.has(other):
            continue
        st = _settings(rec.scenario(other))
        if prep_placement(st) != prep_placement(settings) or val(st, "msm_bases") != "plain":
            continue
        cost = sum(w for k, w in _CALIBRATION_WEIGHTS.items() if str(val(st, k)) != str(val(settings, k)))
        cands.append((cost, order, other))
    return min(cands)[2] if cands else None


def _prep_ms(source: Source, name: str, st: dict[str, Any], params: ModelParams, calibrated_on: str, cfg: dict[str, Any],
             bench: pd.DataFrame | None, bench_label: str) -> tuple[float, str]:
    """prep_msm ms of ``name`` and where it comes from (see :func:`predictions`)."""
    variant = st.get("prep", "cpu")
    if _settings(source.recording.scenario(calibrated_on)).get("prep", "cpu") == variant:
        return params.prep_msm_ms, f"prep_msm of {calibrated_on} (same variant)"
    same = [o for o in story_order(source.scenarios) if o != name and _settings(source.recording.scenario(o)).get("prep", "cpu") == variant]
    if same:
        rows = source.events(same[0])
        rows = rows[rows["phase"] == "prep_msm"]
        if len(rows):
            return float(((rows["end_ns"] - rows["start_ns"]) / 1e6).mean()), f"prep_msm of {same[0]} (same variant, mean)"
    if bench is not None and len(bench) and source.has("pinned_narrow"):
        cpu = source.events("pinned_narrow")
        cpu = cpu[cpu["phase"] == "prep_msm"]
        p = prep_ms_prediction(bench, variant, prep_workload(cfg), float(((cpu["end_ns"] - cpu["start_ns"]) / 1e6).median()))
        return p["predicted_ms"], f"bench prep {bench_label} x {p['slowdown']:.2f} (the cpu variant's pipeline / bench time in pinned_narrow)".strip()
    return 0.0, "0 ms: no recorded run or benchmark of this prep variant (prep_msm assumed off the critical path)"


# --------------------------------------------------------------------------- notebook 07b tables


PILOT_DIR = "last-mile"
"""Sub-folder of ``data/`` for recordings of the last-mile scenario set
(``zkgpu.app.record.LAST_MILE_SCENARIOS``, ``scripts/gpu_run.sh record-last-mile`` writes there):
notebook 07b reads them first (as its measurement, and older ones to calibrate its predictions);
the other notebooks, which replay the newest ``data/*-record*`` with the full scenario matrix, do
not see them."""

#: the settings that name a scenario (``settings`` of a manifest entry; older entries: its ``config``)
_SETTING_KEYS = ("transfer", "lock_scope", "gw", "prep", "tail_streams", "h2d_stage", "msm_bases")


def _settings(entry: dict[str, Any]) -> dict[str, Any]:
    if isinstance(entry.get("settings"), dict):
        return dict(entry["settings"])
    cfg = entry.get("config") or {}
    return {k: cfg[k] for k in _SETTING_KEYS if k in cfg}


def _story_step(settings: dict[str, Any]) -> tuple[int, int, bool, bool, int, bool]:
    """The last-mile story's order: CPU-parallel prep, then GPU prep, the H2D before the mutex,
    more workers, the MSMs over precomputed bases (after the same step with plain ones), concurrent
    tail MSMs, no shared mutex, and last the mutex over the submission only, with plain then with
    precomputed bases (each step changes one more thing; the story ends on its best configuration)."""
    return ({"none": 1, "submit": 2}.get(str(settings.get("lock_scope", "")), 0), int(settings.get("tail_streams", 1)),
            settings.get("prep") != "cpu_parallel", settings.get("h2d_stage", "in_lock") == "pre_lock", int(settings.get("gw", 2)),
            settings.get("msm_bases", "plain") == "precomputed")


def prep_scenarios(source: Source | Recording) -> dict[str, dict[str, Any]]:
    """The scenarios of ``source``'s recording that take prep_msm off the critical path (``prep`` not
    ``cpu``, not pageable, the mutex narrower than coarse, as its manifest records), in the story's order (CPU-parallel
    prep, GPU prep, gw = 3, concurrent tails, no mutex): name -> settings (``transfer``,
    ``lock_scope``, ``gw``, ``prep``, ``tail_streams`` where set). Scenarios the recording lacks
    are not predicted (record them: ``scripts/gpu_run.sh record-last-mile``)."""
    rec = source.recording if isinstance(source, Source) else source
    found = {name: _settings(rec.scenario(name)) for name in rec.scenarios}
    prep = {k: v for k, v in found.items() if v.get("prep", "cpu") != "cpu" and v.get("transfer") != "pageable" and v.get("lock_scope", "coarse") != "coarse"}
    return dict(sorted(prep.items(), key=lambda kv: _story_step(kv[1])))


def last_mile_recordings(base: str | Path | None = None) -> list[Recording]:
    """GPU recordings that have any of :func:`prep_scenarios`: those in ``data/last-mile/``
    (:data:`PILOT_DIR`) newest first, then those in ``data/`` with a step beyond the main recording's, newest first."""
    root = Path(base) if base is not None else data_dir()
    pilot = sorted((r for r in find_recordings(root / PILOT_DIR) if r.is_gpu and prep_scenarios(r)), key=lambda r: r.date, reverse=True)
    main = sorted((r for r in find_recordings(root) if r.is_gpu and set(prep_scenarios(r)) - set(MAIN_SCENARIOS)), key=lambda r: r.date, reverse=True)
    return pilot + main


def last_mile_source(mode: str, *, base: str | Path | None = None) -> Source | None:
    """Notebook 07b's replayed data: the newest recording in :data:`PILOT_DIR`, else the newest in ``data/`` with any
    :func:`prep_scenarios`; None when there is none or ``mode`` is ``live``.

    Raises:
        ValueError: ``mode`` is not ``"live"`` or ``"replay"``.
    """
    if mode not in ("live", "replay"):
        raise ValueError(f"last_mile_source: mode must be 'live' or 'replay' (resolved by zkgpu.app.live.resolve_mode), got {mode!r}")
    m = mode
    if m != "replay":
        return None
    recs = last_mile_recordings(base)
    return Source("recorded-gpu", recs[0], m) if recs else None


def idle_table(source: Source, names: Iterable[str]) -> pd.DataFrame:
    """:func:`zkgpu.analysis.gpu_time.idle_causes` shares of each recorded scenario in ``names`` (one row each), plus
    ``window_ms``, ``startup_ms`` and ``gpu_ms_per_partition`` (:func:`zkgpu.analysis.gpu_time.gpu_ms_per_partition`)."""
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


def prior_recording(source: Source, base: str | Path | None = None) -> Recording | None:
    """The newest GPU recording in ``data/last-mile/`` or ``data/``, older than ``source``'s, that
    has any of :func:`prep_scenarios` (an earlier measurement the predictions may calibrate on), or None."""
    mine = source.recording
    older = [r for r in last_mile_recordings(base) if r.path.resolve() != mine.path.resolve() and r.date < mine.date]
    return max(older, key=lambda r: r.date) if older else None


def predictions(source: Source, *, bench: pd.DataFrame | None = None, bench_label: str = "", prior: Recording | None = None,
                extra: Mapping[str, dict[str, Any]] | None = None,
                msm_bench: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict[str, ModelResult]]:
    """The model's prediction for every :func:`prep_scenarios` entry (and every unrecorded ``extra`` scenario:
    name -> settings), each made without that scenario's own measurement.

    Lock scope, H2D stage, gw and prep_msm time are simulated; the GPU phases' host part depends on the host's load,
    so each scenario is calibrated on :func:`calibration_scenario` of the same recording. prep_msm's time: the
    calibration scenario's own, else another scenario's of that variant, else ``bench`` via
    :func:`prep_ms_prediction`, else 0 ms (``prep_basis`` says which). ``lock_scope="none"`` is predicted only from
    ``prior`` (an earlier :class:`~zkgpu.analysis.replay.Recording`). Precomputed-bases steps: a plain calibration
    scaled by :func:`msm_speedups` (``msm_basis``), not predicted without a benchmark.

    Returns:
        ``(table, {scenario: ModelResult})``; the table has ``prep``, ``gw``, ``h2d_stage``, ``msm_bases``,
        ``msm_basis``, ``calibrated_on``, ``prep_ms``, ``prep_basis``, ``partitions_per_min``, ``model_util`` and
        ``prior_partitions_per_min``; ``attrs["params"]`` holds each calibrated
        :class:`~zkgpu.analysis.model.ModelParams`, ``attrs["prior_sims"]`` the prior-calibrated runs.
    """
    todo = dict(prep_scenarios(source))
    for name, st in (extra or {}).items():
        if name not in todo and not source.has(name) and st.get("prep", "cpu") != "cpu":
            todo[name] = {k: st[k] for k in _SETTING_KEYS if k in st}
    rows, sims, prior_sims, params_used = {}, {}, {}, {}
    for name, st in todo.items():
        base = calibration_scenario(source, name, st)
        cfg = source.config(name) if source.has(name) else {**(source.config(base) if base else {}), **st}
        run_kw = scenario_run_settings(st, cfg, f"model-{name}")
        pre = run_kw["h2d_stage"] == "pre_lock" or st["lock_scope"] == "submit" or st["transfer"] == "resident"  # PipelineConfig.h2d_pre_lock
        precomp = st.get("msm_bases", "plain") == "precomputed"
        row: dict[str, Any] = {"prep": st.get("prep", "cpu"), "gw": st.get("gw", 2), "h2d_stage": "pre_lock" if pre else "in_lock",
                               "msm_bases": st.get("msm_bases", "plain"), "msm_basis": "", "calibrated_on": base or "",
                               "prep_ms": float("nan"), "prep_basis": "", "partitions_per_min": float("nan"),
                               "model_util": float("nan"), "prior_partitions_per_min": float("nan")}
        if prior is not None and name in prior.scenarios and prior.scenario(name).get("events"):
            # an earlier recording of this very configuration: calibrate on it, predict this run
            pp = calibrated_params(Source("recorded-gpu", prior, "replay"), scenario=name, stat="mean")
            prior_sims[name] = predict(pp, prep_ms=pp.prep_msm_ms, **run_kw)
            row["prior_partitions_per_min"] = prior_sims[name].partitions_per_min
        if st["lock_scope"] == "none" or base is None:
            row["prep_basis"] = ("lock_scope='none': predicted only from an earlier run of it (prior_partitions_per_min)" if st["lock_scope"] == "none"
                                 else f"no other recorded scenario runs prep_msm on the {prep_placement(st)}: not predicted")
            rows[name] = row
            continue
        try:
            params = params_used[name] = calibrated_params(source, scenario=base, stat="mean")
        except ValueError as exc:  # e.g. a pageable run without a pinned one to take the pinned rate from
            row["prep_basis"] = f"not predicted: calibrating on {base} failed ({exc})"
            rows[name] = row
            continue
        if precomp:  # the plain run's MSM phases scaled by the kernels' precomputed / plain time
            sp = msm_speedups(source, name, msm_bench, cfg)
            if sp is None:
                row["prep_basis"] = "not predicted: no MSM benchmark over precomputed bases (zkgpu record's setup, or zkgpu bench msm device_precomp rows)"
                rows[name] = row
                params_used.pop(name)
                continue
            rh, rt, basis = sp
            params = params_used[name] = replace(params, h_msm_ms=params.h_msm_ms * rh, tail_msm_ms=params.tail_msm_ms * rt,
                                                 source=f"{params.source}; h_msm x {rh:.3g}, tail_msm x {rt:.3g} ({basis})")
            row["msm_basis"] = f"h_msm x {rh:.2f}, tail_msm x {rt:.2f} ({basis})"
        prep_ms, basis = _prep_ms(source, name, st, params, base, cfg, bench, bench_label)
        sims[name] = predict(params, prep_ms=prep_ms, **run_kw)
        row.update(prep_ms=prep_ms, prep_basis=basis, partitions_per_min=sims[name].partitions_per_min, model_util=sims[name].compute_util)
        rows[name] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "scenario"
    out.attrs["params"] = params_used
    out.attrs["prior_sims"] = prior_sims
    return out, sims


def lock_table(source: Source, names: Iterable[str]) -> pd.DataFrame:
    """Per recorded scenario in ``names``, per partition: ``h2d_stage``, ``h2d_ms`` (host wait, median),
    ``h2d_dma_ms`` (the copies' CUDA-event time), ``in_lock_h2d_ms``, ``mutex_held_ms`` (mean), ``ntt_msm_h_ms``
    (median) and ``partitions_per_min`` over the GPU window.
    """
    rows = {}
    for name in names:
        if not source.has(name):
            continue
        ev = source.events(name)
        h = ev[ev["phase"] == "h2d"]
        ms = (h["end_ns"] - h["start_ns"]) / 1e6
        pre = bool(len(h)) and bool(h["detail"].astype("string").str.contains("stage=pre_lock", regex=False).fillna(False).all())
        held = ev[ev["phase"] == "mutex_held"]
        per_held = ((held["end_ns"] - held["start_ns"]) / 1e6).groupby(held["partition"]).sum()
        per_h2d = ms.groupby(h["partition"]).sum()
        nt = ev[ev["phase"] == "ntt_msm_h"]
        rows[name] = {"h2d_stage": "pre_lock" if pre else "in_lock", "h2d_ms": float(per_h2d.median()) if len(h) else float("nan"),
                      "h2d_dma_ms": copy_wait(ev)["dma_ms"] if len(h) else float("nan"),
                      "in_lock_h2d_ms": 0.0 if pre else (float(per_h2d.median()) if len(h) else float("nan")),
                      "mutex_held_ms": float(per_held.mean()) if len(held) else float("nan"),
                      "ntt_msm_h_ms": float(((nt["end_ns"] - nt["start_ns"]) / 1e6).median()) if len(nt) else float("nan"),
                      "partitions_per_min": utilization(ev)["partitions_per_min"]}
    out = pd.DataFrame.from_dict(rows, orient="index").rename_axis("scenario")
    out.attrs.update(statistic=REPRESENTATIVE_RUN, recording=source.recording.folder)
    return out


def _union_compute_share(events: pd.DataFrame) -> float:
    """(union of the GPU phases − exposed copies) / the run's whole wall span (all events)."""
    t = idle_causes(events)
    wall = (int(events["end_ns"].max()) - int(events["start_ns"].min())) / 1e6
    return float(t.loc["compute", "ms"]) / wall if wall > 0 else float("nan")


def steps_table(source: Source, names: Iterable[str]) -> pd.DataFrame:
    """Each recorded scenario's whole-run throughput and compute utilization (:func:`zkgpu.analysis.replay.scenario_table`;
    ``union_compute_util`` from the union of GPU phases), the same over the GPU window
    (``window_partitions_per_min``, ``window_compute_util``, ``window_ms``, ``startup_ms``), and throughput relative
    to ``baseline``.
    """
    present = [n for n in names if source.has(n)]
    tab = scenario_table(source, present)
    if tab.empty:
        return tab
    cols = ["transfer", "lock_scope", "gw", "partitions", "partitions_per_min", "compute_util", "prep_msm_ms", "barrier_wait_ms", "ntt_msm_h_ms"]
    out = tab[[c for c in cols if c in tab.columns]].copy()
    out.insert(3, "prep", [source.config(n).get("prep", "cpu") for n in out.index])
    out.insert(4, "tail_streams", [int(source.config(n).get("tail_streams", 1)) for n in out.index])
    out.insert(5, "msm_bases", [str(source.config(n).get("msm_bases", "plain")) for n in out.index])
    win = {n: idle_causes(source.events(n)) for n in out.index}
    # compute utilization from the union of the GPU phases (no double count where the workers'
    # phases overlap, lock_scope="none") over the whole run, as compute_util's wall span
    out["union_compute_util"] = [_union_compute_share(source.events(n)) for n in out.index]
    out["window_partitions_per_min"] = [60000.0 * w.attrs["partitions"] / w.attrs["window_ms"] if w.attrs["window_ms"] > 0 else float("nan")
                                        for w in (win[n] for n in out.index)]
    out["window_compute_util"] = [float(win[n].loc["compute", "share"]) for n in out.index]
    out["startup_ms"] = [float(win[n].attrs["startup_ms"]) for n in out.index]
    if "baseline" in out.index:
        out["x_baseline"] = out["partitions_per_min"] / out.loc["baseline", "partitions_per_min"]
    return out


def acceptance(source: Source, preds: pd.DataFrame, sims: dict[str, ModelResult]) -> dict[str, Any] | None:
    """The targets on the best recorded :func:`prep_scenarios` entry (None when none): compute utilization (whole run
    and ``window_compute_util``), throughput against the baseline and against the compute-only bound
    (``bound_kernel_ms``, ``compute_bound_from``), and the model's throughput error. ``*_ok`` flags test the
    thresholds (0.9, 2, 0.9, 10%).
    """
    done = [n for n in prep_scenarios(source) if source.has(n)]
    if not done or not source.has("baseline"):
        return None
    steps = steps_table(source, ["baseline", *done])
    best = str(steps.loc[done, "partitions_per_min"].idxmax())
    ev = source.events(best)
    g = gpu_ms_per_partition(ev)
    # the compute-only bound: the fewest kernel ms per partition any recorded run needed at this size
    kms = {n: kernel_ms_per_partition(source.events(n)) for n in ("baseline", "pinned_pool", "pinned_narrow", *done) if source.has(n)}
    kms = {k: v for k, v in kms.items() if math.isfinite(v) and v > 0}
    bound_from = min(kms, key=lambda k: kms[k]) if kms else None
    bound = 60000.0 / kms[bound_from] if bound_from else float("nan")
    prior_sims = preds.attrs.get("prior_sims", {})
    on = str(preds.loc[best, "calibrated_on"]) if best in preds.index and "calibrated_on" in preds.columns else ""
    sim, basis = (sims[best], f"calibrated on {on}") if best in sims else ((prior_sims[best], "calibrated on an earlier run of it") if best in prior_sims else (None, ""))
    c = compare(sim, ev) if sim is not None else None
    rel = float(c.loc["partitions_per_min", "rel_err"]) if c is not None else float("nan")
    r = steps.loc[best]
    out: dict[str, Any] = {
        "best": best, "compute_util": min(float(r["compute_util"]), float(r["union_compute_util"])),
        "window_compute_util": float(r["window_compute_util"]),
        "partitions_per_min": float(r["partitions_per_min"]), "baseline_partitions_per_min": float(steps.loc["baseline", "partitions_per_min"]),
        "x_baseline": float(r["x_baseline"]), "gpu_ms_per_partition": g,
        "kernel_ms_per_partition": kms.get(best, float("nan")), "compute_bound_per_min": bound, "compute_bound_from": bound_from or "",
        "bound_kernel_ms": kms[bound_from] if bound_from else float("nan"),
        "vs_bound": float(r["partitions_per_min"]) / bound if bound > 0 else float("nan"),
        "window_vs_bound": float(r["window_partitions_per_min"]) / bound if bound > 0 else float("nan"),
        "model_partitions_per_min": sim.partitions_per_min if sim is not None else float("nan"), "model_basis": basis,
        "model_rel_err": rel,
    }
    out.update(compute_util_ok=out["compute_util"] >= 0.9, x_baseline_ok=out["x_baseline"] >= 2.0,
               vs_bound_ok=out["vs_bound"] >= 0.9, model_ok=abs(rel) <= 0.10 if math.isfinite(rel) else False)
    return out


def prediction_vs_measurement(source: Source, preds: pd.DataFrame, sims: dict[str, ModelResult]) -> pd.DataFrame:
    """Per recorded :func:`prep_scenarios` entry: the calibration-based prediction, the prediction
    from an earlier run (``preds.attrs["prior_sims"]``) and the measurement, all partitions/min
    over the whole run (:func:`zkgpu.analysis.model.utilization`: the model's event table starts with its own
    synthesis, as the measured run does), with each prediction's relative error."""
    prior_sims = preds.attrs.get("prior_sims", {})
    rows = {}
    for name in prep_scenarios(source):
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


def key_numbers(source: Source, idle: pd.DataFrame, after_fix: str, preds: pd.DataFrame, acc: dict[str, Any] | None,
                gpu_phase_ms: float, errors: pd.Series | None = None) -> tuple[dict[str, Any], str]:
    """Notebook 07b's key numbers (:func:`zkgpu.analysis.keynumbers.number`) and one-sentence finding, from ``idle``
    (:func:`idle_table`), ``preds`` (:func:`predictions`), ``acc`` (:func:`acceptance`, or None), the run
    ``after_fix`` and its ``gpu_phase_ms``; ``errors`` (the model's rel_err per predicted step) adds their range.

    Returns:
        ``(numbers, finding)``; every key starts with ``last_mile_``.
    """
    causes = [c for c in idle.columns if c in CAUSE_PHASES and c not in ("compute", "exposed H2D")]
    top = idle.loc[after_fix, causes].astype(float)
    k: dict[str, Any] = {
        "source": number(source.kind, "", "data source"),
        "recording": number(source.recording.folder, "", "recording"),
        f"{after_fix}_window_compute": number(float(idle.loc[after_fix, "compute"]), "%", "GPU computing, share of its window", after_fix),
        f"{after_fix}_top_idle_share": number(float(top.max()), "%", f"largest idle cause: {top.idxmax()}", after_fix),
        "gpu_phase_ms": number(float(gpu_phase_ms), "ms", "GPU phases per partition (median partition), run shown", acc["best"] if acc else after_fix),
        "after_fix": number(after_fix, "", "run showing the state after the fix"),
        "top_idle_cause": number(str(top.idxmax()), "", "largest idle cause after the fix", after_fix),
        "shown": number(acc["best"] if acc else after_fix, "", "run whose timeline and budget are shown"),
    }
    for s_, v in preds["partitions_per_min"].dropna().items():
        k[f"predicted_{s_}"] = number(float(v), "partitions/min", "model prediction (whole run)", str(s_))
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
        err = float(acc["model_rel_err"])
        if math.isfinite(err) and abs(err) <= 1.0:  # a "%" key number is a fraction in [0, 1]: the size, and the sign in words
            k["model_rel_err"] = number(abs(err), "%", "model's throughput error (whole run), |predicted - measured| / measured", best)
            k["model_error_sign"] = number("over-predicted" if err > 0 else ("under-predicted" if err < 0 else "exact"), "", "the model's throughput error's direction", best)
        text += (f"; with prep_msm off the critical path the best configuration ({best}) computes {acc['compute_util']:.0%} "
                 f"of the run at {acc['partitions_per_min']:.0f} partitions/min, {acc['x_baseline']:.2f}x the baseline's "
                 f"{acc['baseline_partitions_per_min']:.0f} in the same recording and {acc['vs_bound']:.0%} of the compute-only "
                 f"bound of {acc['compute_bound_per_min']:.0f} (targets: 90% utilization "
                 f"{'met' if acc['compute_util_ok'] else 'not met'}, 2x the baseline {'met' if acc['x_baseline_ok'] else 'not met'}, "
                 f"90% of the bound {'met' if acc['vs_bound_ok'] else 'not met'}); the model, {acc['model_basis'] or 'without a prediction'}, "
                 f"predicted {acc['model_partitions_per_min']:.0f} ({acc['model_rel_err']:+.1%})")
        e = errors.dropna() if errors is not None else pd.Series(dtype=float)
        if len(e) > 1:
            text += (f"; its errors over the predicted steps range from {e.min():+.0%} ({e.idxmin()}) to "
                     f"{e.max():+.0%} ({e.idxmax()}): {model_accuracy_text(e)}")
    else:
        text += "; this recording has no run with prep_msm off the critical path yet"
    k = {f"last_mile_{name}": v for name, v in k.items()}
    return k, text + "."


def _replayed(base: str | Path | None) -> tuple[Source, list[str], list[str]]:
    """:func:`last_mile_source` replayed, its recorded reference runs and its recorded :func:`prep_scenarios`."""
    src = last_mile_source("replay", base=base)
    if src is None:
        raise ValueError(f"no recording with a prep scenario in {Path(base) if base is not None else data_dir()}/{PILOT_DIR} or above it")
    return src, [s for s in ("baseline", "pinned_pool", "pinned_narrow") if src.has(s)], [s for s in prep_scenarios(src) if src.has(s)]


def summary(base: str | Path | None = None) -> tuple[dict[str, Any], str]:
    """:func:`key_numbers` of the newest last-mile recording (:func:`last_mile_source`, replayed), for notebook 08.

    Raises:
        ValueError: no last-mile recording to replay.
    """
    src, before, new = _replayed(base)
    idle = idle_table(src, before + new)
    after_fix = "pinned_narrow" if "pinned_narrow" in idle.index else str(idle.index[-1])
    found = find_benchmarks("prep")
    bench = found[1].get("prep") if found else None
    preds, sims = predictions(src, bench=bench, bench_label=found[0].name if found else "", prior=prior_recording(src))
    acc = acceptance(src, preds, sims)
    shown = acc["best"] if acc else after_fix
    budget = gpu_budget(src.events(shown), int(src.config(shown).get("n", 0) or 0))
    errors = prediction_vs_measurement(src, preds, sims)["model rel_err"] if acc else None
    nums, text = key_numbers(src, idle, after_fix, preds, acc, float(budget.loc["GPU phases", "pipeline_ms"]), errors)
    return nums, f"In {src.recording.folder} ({int(src.config(shown).get('partitions', 0) or 0)} partitions per run of {shown}): " + text[:1].lower() + text[1:]


def summary_text(base: str | Path | None = None) -> str:
    """A plain-text digest of the newest last-mile recording under ``base``: steps, idle, predictions, prediction vs
    measurement and acceptance tables.

    Raises:
        ValueError: no last-mile recording under ``base``.
    """
    src, before, new = _replayed(base)
    names = before + new
    preds, sims = predictions(src, prior=prior_recording(src, base))
    acc = acceptance(src, preds, sims)
    steps = steps_table(src, names)
    cols = ["lock_scope", "gw", "msm_bases", "partitions", "partitions_per_min", "x_baseline", "compute_util", "union_compute_util",
            "window_partitions_per_min", "window_compute_util", "startup_ms"]
    with pd.option_context("display.width", 250, "display.max_columns", 40, "display.max_colwidth", 60, "display.float_format", "{:.4g}".format):
        parts = [f"recording: {src.recording.path}", "", "steps:", steps[[c for c in cols if c in steps.columns]].to_string(),
                 "", "kernel ms per partition (gpu_time.kernel_ms_per_partition) and GPU-phase ms (gpu_ms_per_partition):",
                 pd.DataFrame({n: {"kernel_ms": kernel_ms_per_partition(src.events(n)), "gpu_phase_ms": gpu_ms_per_partition(src.events(n))}
                               for n in names}).T.to_string(),
                 "", "idle causes (shares of the GPU window):", idle_table(src, names).to_string(),
                 "", "predictions:", preds[["calibrated_on", "prep_ms", "partitions_per_min", "msm_basis", "prep_basis"]].to_string(),
                 "", "prediction vs measurement (whole run):", prediction_vs_measurement(src, preds, sims).to_string(),
                 "", acceptance_markdown(acc) if acc else "acceptance: no prep scenario with a baseline in this recording"]
    return "\n".join(parts)


def acceptance_markdown(acc: dict[str, Any]) -> str:
    """The targets against :func:`acceptance`, one markdown bullet each: what was measured,
    the target, met or not."""
    rows = [
        ("compute utilization of the best run (whole run)", f"{acc['compute_util']:.1%}", ">= 90%", acc["compute_util_ok"]),
        ("its throughput / the baseline's (same recording)", f"{acc['x_baseline']:.2f}x ({acc['partitions_per_min']:.0f} / "
         f"{acc['baseline_partitions_per_min']:.0f} partitions/min)", ">= 2x", acc["x_baseline_ok"]),
        ("its throughput / the compute-only bound", f"{acc['vs_bound']:.1%} of {acc['compute_bound_per_min']:.0f} partitions/min "
         f"(60000 / {acc['bound_kernel_ms']:.1f} kernel ms per partition, from {acc['compute_bound_from']})", ">= 90%", acc["vs_bound_ok"]),
        ("the model's throughput error (predicted from another run of this recording; blind only if the model did not change "
         "after the recording: the blind test is below)", f"{acc['model_rel_err']:+.1%} (predicted {acc['model_partitions_per_min']:.0f}, {acc['model_basis'] or 'no prediction'})",
         "within 10%", acc["model_ok"]),
    ]
    return "\n".join(f"* {what}: **{val}** — target {target}: {'met' if ok else '**not met**'}" for what, val, target, ok in rows)
