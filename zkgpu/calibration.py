"""The cost model (:mod:`zkgpu.model`) against recordings: calibrated on one recorded scenario
(:func:`calibrated_params`), then set against every other (:func:`model_vs_measured`)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from . import metrics, model
from .model import ModelParams
from .replay import Source, story_order

__all__ = ["calibrated_params", "model_vs_measured"]


def _h2d_rate_gbps(events: pd.DataFrame) -> float | None:
    h = events[(events["phase"] == "h2d") & events["bytes"].notna()]
    secs = float(((h["end_ns"] - h["start_ns"]) / 1e9).sum())
    return float(h["bytes"].astype("float64").sum()) / secs / 1e9 if secs > 0 else None


def calibrated_params(
    source: Source, scenario: str = "baseline", *, pageable_scenario: str = "baseline", pinned_scenario: str = "pinned_pool"
) -> ModelParams:
    """:func:`zkgpu.model.calibrate` on one recorded scenario, with both H2D rates from the recording.

    The pageable rate comes from ``pageable_scenario``'s ``h2d`` rows, the pinned rate from
    ``pinned_scenario``'s (Σ bytes / Σ interval time, the same clock as the calibration);
    the calibrated scenario's own rows supply the rate of its own path.

    Raises:
        ValueError: a rate is needed but neither scenario measured it (from ``calibrate``).
    """
    ev = source.events(scenario)
    transfer = source.config(scenario).get("transfer", "pageable")
    kind = "pageable" if transfer == "pageable" else "pinned"
    rates: dict[str, float | None] = {"pageable": None, "pinned": None}
    for name, k in ((pageable_scenario, "pageable"), (pinned_scenario, "pinned")):
        if k != kind and source.has(name):
            rates[k] = _h2d_rate_gbps(source.events(name))
    return model.calibrate(ev, pageable_gbps=rates["pageable"], pinned_gbps=rates["pinned"], transfer=transfer,
                     source=f"calibrated from {scenario} of {source.recording.path.name} ({source.device_label})")


def model_vs_measured(source: Source, names: Iterable[str] | None = None, calibrate_on: str = "pinned_pool") -> pd.DataFrame:
    """The model's prediction of each recorded scenario against its measurement.

    The model is calibrated once on ``calibrate_on`` (:func:`calibrated_params`) and then run with
    each scenario's settings (partitions, gw, lock scope; transfer ``resident`` for
    ``compute_only``, whose copies happen before the lock, else the scenario's path), without
    looking at that scenario's events. Both sides go through :func:`zkgpu.metrics.utilization`.

    Returns: DataFrame indexed by scenario (story order) with ``measured_per_min``,
    ``model_per_min``, ``rel_err`` ((model − measured) / measured of the throughput),
    ``measured_compute_util``, ``model_compute_util``.

    Raises:
        KeyError: ``calibrate_on`` is not recorded.
    """
    params = calibrated_params(source, scenario=calibrate_on)
    rows = []
    for name in [s for s in (names if names is not None else story_order(source.scenarios)) if source.has(s)]:
        cfg = source.config(name)
        transfer = "resident" if name == "compute_only" else (cfg.get("transfer") or "pinned")
        sim = model.simulate(params, partitions=int(cfg["partitions"]), gw=int(cfg["gw"]), scope=cfg["lock_scope"], transfer=transfer)
        meas = metrics.utilization(source.events(name)).iloc[0]
        rows.append({"scenario": name, "measured_per_min": float(meas["partitions_per_min"]), "model_per_min": sim.partitions_per_min,
                     "rel_err": (sim.partitions_per_min - float(meas["partitions_per_min"])) / float(meas["partitions_per_min"]),
                     "measured_compute_util": float(meas["compute_util"]), "model_compute_util": sim.compute_util})
    return pd.DataFrame(rows).set_index("scenario")
