"""Forecasts: the model's prediction of the *next* recording of each last-mile scenario, written down
before that recording exists, so that the next recording tests the model blind.

Notebook 07b predicts each step from another scenario of the same recording (:func:`zkgpu.bottleneck.predictions`);
those predictions can only be made once the recording exists, so a change to the model made after looking at it
is not a blind test. A forecast is made from one recording alone: for every scenario of it that takes prep_msm off
the critical path (:func:`zkgpu.bottleneck.prep_scenarios`), the model calibrated (means) on that scenario's own run
(:func:`zkgpu.calibration.calibrated_params`) and run again with its recorded settings (partitions, gw, queue depth,
lock scope, H2D stage) predicts the throughput (partitions/min) and compute utilization of the next run of it. The
forecast file records when it was made, the commit, and a SHA-256 of the model's source files, so a reader can tell
whether the model changed between the forecast and the recording it is compared with (:func:`forecast_vs_measured`).

Forecast files live in ``forecasts/`` at the repository root (:data:`FORECAST_DIR`), never in ``data/`` (which
holds measurements only): ``forecast-from-<recording>.json``, never overwritten.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

import pandas as pd

from . import bottleneck, calibration, metrics, model
from .manifest import REPO_ROOT, git_commit, write_json_new
from .replay import Recording, Source

__all__ = ["FORECAST_DIR", "model_sha256", "forecast", "write_forecast", "read_forecasts", "forecast_vs_measured", "blind_test_markdown"]

#: where forecast files are committed (not ``data/``: a forecast is not a measurement)
FORECAST_DIR = REPO_ROOT / "forecasts"


def model_sha256() -> str:
    """SHA-256 (hex) of the model's code as it is now: :mod:`zkgpu.model`, :mod:`zkgpu.calibration`, the source of
    :func:`zkgpu.bottleneck.predict` and of :func:`forecast`. Two forecasts, or a forecast and today's code, with the
    same value ran the same model (an edit elsewhere, e.g. to a notebook's table, leaves it unchanged)."""
    h = hashlib.sha256()
    for mod in (model, calibration):
        h.update(Path(str(mod.__file__)).read_bytes())
    for fn in (bottleneck.predict, forecast):
        h.update(inspect.getsource(fn).encode())
    return h.hexdigest()


def forecast(source: Source) -> pd.DataFrame:
    """The model's prediction of the next run of each :func:`zkgpu.bottleneck.prep_scenarios` entry of ``source``,
    calibrated (means) on that scenario's own run in ``source`` and simulated with its recorded settings.

    Returns:
        DataFrame indexed by ``scenario`` (story order) with ``partitions_per_min`` (the model's, whole run),
        ``compute_util`` (the model's kernel utilization, a fraction), ``measured_per_min`` (the calibration run's
        own throughput, for reference) and ``partitions``; empty when the recording has no such scenario.
    """
    rows = {}
    for name, st in bottleneck.prep_scenarios(source).items():
        if not source.has(name):
            continue
        cfg = source.config(name)
        params = calibration.calibrated_params(source, scenario=name, stat="mean")
        sim = bottleneck.predict(params, prep_ms=params.prep_msm_ms, gw=int(st.get("gw", 2)), scope=str(st["lock_scope"]),
                                 transfer=str(st["transfer"]), partitions=int(cfg.get("partitions", 16)),
                                 max_queue=int(cfg.get("queue_depth") or 0) or None, run=f"forecast-{name}",
                                 h2d_stage=str(st.get("h2d_stage", "in_lock")))
        rows[name] = {"partitions_per_min": sim.partitions_per_min, "compute_util": sim.compute_util,
                      "measured_per_min": float(metrics.utilization(source.events(name)).iloc[0]["partitions_per_min"]),
                      "partitions": int(cfg.get("partitions", 16))}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["partitions_per_min", "compute_util", "measured_per_min", "partitions"])
    out.index.name = "scenario"
    return out


def write_forecast(source: Source, out_dir: str | Path | None = None, *, made_utc: str | None = None) -> Path:
    """Write :func:`forecast` of ``source`` to ``<out_dir>/forecast-from-<recording>.json`` (default
    :data:`FORECAST_DIR`), with the date (UTC), :func:`zkgpu.manifest.git_commit` and :func:`model_sha256`.

    Raises:
        FileExistsError: that file exists (a forecast is never rewritten: make a new one from a newer recording).
        ValueError: the recording has no scenario to forecast (names the recording).
    """
    table = forecast(source)
    rec = source.recording
    if table.empty:
        raise ValueError(f"{rec.path.name} has no last-mile scenario (prep other than cpu) to forecast")
    folder = Path(out_dir) if out_dir is not None else FORECAST_DIR
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "kind": "forecast",
        "made_utc": made_utc or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **git_commit(),
        "model_sha256": model_sha256(),
        "from_recording": rec.path.name,
        "from_recording_date_utc": rec.date,
        "method": "per scenario: the model calibrated (means) on that scenario's run in from_recording, simulated with its recorded settings",
        "scenarios": {name: {k: (float(v) if k != "partitions" else int(v)) for k, v in row.items()} for name, row in table.iterrows()},
    }
    target = folder / f"forecast-from-{rec.path.name}.json"
    try:
        return write_json_new(target, doc)
    except FileExistsError:
        raise FileExistsError(f"{target} exists: a forecast is never rewritten (make the next one from a newer recording)") from None


def read_forecasts(folder: str | Path | None = None) -> list[dict[str, Any]]:
    """Every ``forecast-*.json`` in ``folder`` (default :data:`FORECAST_DIR`), oldest first by ``made_utc``;
    ``[]`` when the folder does not exist.

    Raises:
        ValueError: a file is not JSON or not a forecast (names the file).
    """
    d = Path(folder) if folder is not None else FORECAST_DIR
    out = []
    for f in sorted(d.glob("forecast-*.json")) if d.is_dir() else []:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{f}: not a JSON forecast ({exc})") from None
        if not (isinstance(doc, dict) and doc.get("kind") == "forecast" and isinstance(doc.get("scenarios"), dict) and doc.get("made_utc")):
            raise ValueError(f"{f}: not a forecast (needs kind='forecast', made_utc and a scenarios object)")
        out.append({**doc, "file": f.name})
    return sorted(out, key=lambda d: str(d["made_utc"]))


def forecast_vs_measured(recording: Recording | Source, folder: str | Path | None = None) -> pd.DataFrame:
    """The newest forecast made *before* ``recording`` (``made_utc`` earlier than its ``date_utc``, from another
    recording) against what ``recording`` measured, scenario by scenario.

    Returns:
        DataFrame indexed by ``scenario`` with ``forecast_per_min``, ``measured_per_min``, ``rel_err``
        ((forecast − measured) / measured) and ``forecast_compute_util``, ``measured_compute_util``; its ``attrs``
        hold ``file``, ``made_utc``, ``commit``, ``from_recording`` and ``model_unchanged`` (the forecast's
        :func:`model_sha256` equals today's). Empty (no attrs) when no forecast precedes the recording.
    """
    src = recording if isinstance(recording, Source) else Source("recorded-gpu", recording, "replay")
    rec = src.recording
    before = [f for f in read_forecasts(folder) if str(f["made_utc"]) < rec.date and f.get("from_recording") != rec.path.name]
    if not before:
        return pd.DataFrame(columns=["forecast_per_min", "measured_per_min", "rel_err", "forecast_compute_util", "measured_compute_util"])
    fc = before[-1]
    rows = {}
    for name in bottleneck.prep_scenarios(src):  # the story's order (the file's keys are sorted)
        v = fc["scenarios"].get(name)
        if v is None or not src.has(name):
            continue
        m = metrics.utilization(src.events(name)).iloc[0]
        meas = float(m["partitions_per_min"])
        rows[name] = {"forecast_per_min": float(v["partitions_per_min"]), "measured_per_min": meas,
                      "rel_err": (float(v["partitions_per_min"]) - meas) / meas,
                      "forecast_compute_util": float(v["compute_util"]), "measured_compute_util": float(m["compute_util"])}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "scenario"
    out.attrs.update(file=fc["file"], made_utc=fc["made_utc"], commit=fc.get("commit"), from_recording=fc.get("from_recording"),
                     model_unchanged=fc.get("model_sha256") == model_sha256())
    return out


def blind_test_markdown(recording: Recording | Source, best: str | None = None, folder: str | Path | None = None) -> str:
    """One paragraph (Markdown) for notebook 07b: the blind test of ``recording`` by the newest forecast made before
    it (:func:`forecast_vs_measured`: the forecast's error for ``best``, else the scenario the recording measured
    fastest, the range over every scenario, whether the model is still the one that made it), or, when no forecast
    precedes it, the pending forecast made from it (its date, commit and the forecast for ``best``) and what to run."""
    src = recording if isinstance(recording, Source) else Source("recorded-gpu", recording, "replay")
    name = src.recording.path.name
    t = forecast_vs_measured(src, folder)
    if not t.empty:
        b = best if best in t.index else str(t["measured_per_min"].idxmax())
        ok = abs(float(t.loc[b, "rel_err"])) <= 0.10
        same = "the model's code is still the one that made it" if t.attrs["model_unchanged"] else "the model's code has changed since"
        return (f"**Blind test.** The forecast `{t.attrs['file']}` (made {t.attrs['made_utc']} at commit "
                f"{str(t.attrs['commit'] or 'unknown')[:7]}, from {t.attrs['from_recording']} alone, before {name} existed; {same}) "
                f"predicted `{b}` at {t.loc[b, 'forecast_per_min']:.0f} partitions/min; {name} measured {t.loc[b, 'measured_per_min']:.0f} "
                f"({100 * t.loc[b, 'rel_err']:+.1f}%: {'within' if ok else 'outside'} 10%). Over its {len(t)} scenarios the errors range "
                f"from {100 * t['rel_err'].min():+.0f}% to {100 * t['rel_err'].max():+.0f}% "
                f"({int((t['rel_err'].abs() <= 0.10).sum())} within 10%).")
    pending = [f for f in read_forecasts(folder) if f.get("from_recording") == name]
    if not pending:
        return (f"**Blind test.** No forecast precedes {name}, and none was made from it: `zkgpu forecast` writes one, "
                "to be committed before the next recording.")
    f = pending[-1]
    sc = f["scenarios"]
    b = best if best in sc else max(sc, key=lambda k: float(sc[k]["measured_per_min"]))
    return (f"**Blind test: pending.** No forecast was made before {name}, so the predictions above are not blind (the model "
            f"may have been corrected after it was measured). The forecast `{f['file']}`, made from {name} alone on "
            f"{f['made_utc']} (commit {str(f.get('commit') or 'unknown')[:7]}), predicts the next recording of `{b}` at "
            f"{float(sc[b]['partitions_per_min']):.0f} partitions/min; the next `scripts/gpu_run.sh record-last-mile` tests it.")
