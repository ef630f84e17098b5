"""Forecasts: the model's prediction of the *next* recording of each last-mile scenario, written before it exists.

A forecast is made from one recording alone (each prep scenario calibrated on its own run and re-simulated) and
records its date, commit and :func:`model_sha256`, so :func:`forecast_vs_measured` is a blind test. Files live in
:data:`FORECAST_DIR` as ``forecast-from-<recording>.json``, never overwritten.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import inspect
import math
from pathlib import Path
from typing import Any

import pandas as pd

from zkgpu.analysis import calibration, metrics, model
from zkgpu.analysis.replay import Recording, Source, repeat_table
from zkgpu.analysis.schema import loads_strict
from zkgpu.core.manifest import REPO_ROOT, commit_label, git_commit, write_json_new
from zkgpu.story import bottleneck

__all__ = ["FORECAST_DIR", "model_sha256", "forecast", "previous_recording", "write_forecast", "read_forecasts", "reproduces", "forecast_vs_measured",
           "blind_test_markdown"]

#: where forecast files are committed (not ``data/``: a forecast is not a measurement)
FORECAST_DIR = REPO_ROOT / "forecasts"


def model_sha256() -> str:
    """SHA-256 (hex) of the model's code as it is now, line endings normalized: :mod:`zkgpu.analysis.model`,
    :mod:`zkgpu.analysis.calibration`, :mod:`zkgpu.analysis.metrics`, and the source of :func:`zkgpu.story.bottleneck.predict`,
    :func:`zkgpu.story.bottleneck.prep_scenarios` and :func:`forecast`. Informational: whether today's code still makes
    a forecast is decided by recomputing it (:func:`reproduces`), since the numbers also depend on code no hash
    can bound (pandas, simpy)."""
    h = hashlib.sha256()
    for mod in (model, calibration, metrics):
        h.update(Path(str(mod.__file__)).read_text(encoding="utf-8").replace("\r\n", "\n").encode())
    for fn in (bottleneck.predict, bottleneck.prep_scenarios, forecast):
        h.update(inspect.getsource(fn).replace("\r\n", "\n").encode())
    return h.hexdigest()


def _utc(value: Any, what: str) -> _dt.datetime:
    """``value`` (an ISO 8601 date-time with a UTC offset) as an aware datetime; ValueError naming ``what`` and the
    value when it is not one (a naive time is refused: it cannot be ordered against a recording's)."""
    try:
        t = _dt.datetime.fromisoformat(str(value)) if isinstance(value, str) else None
    except ValueError:
        t = None
    if t is None or t.tzinfo is None:
        raise ValueError(f"{what}: {value!r} is not an ISO 8601 date-time with a UTC offset (e.g. 2026-12-01T20:49:00+00:00)")
    return t


def _recording_start(rec: Recording) -> _dt.datetime:
    """When ``rec`` started: its manifest's ``date_utc`` (written when the recording ended) less ``elapsed_s``."""
    end = _utc(rec.date, f"{rec.path.name}'s date_utc")
    el = rec.manifest.get("elapsed_s")
    try:
        return end - _dt.timedelta(seconds=float(el)) if isinstance(el, (int, float)) and math.isfinite(el) and el > 0 else end
    except OverflowError:  # an elapsed_s beyond any date: the end is all we know
        return end


def forecast(source: Source, previous: Source | None = None) -> pd.DataFrame:
    """The model's prediction of the next run of each prep scenario of ``source``, calibrated on its own run.

    The band's half-width ``band_rel`` (a fraction) is the quadrature sum of ``band_runs`` (the spread over repeats),
    ``band_model`` (the miss on the calibration run) and ``band_drift`` (the move since ``previous``; 0 without it).

    Returns:
        DataFrame indexed by ``scenario`` with ``partitions_per_min``, ``compute_util`` (fraction),
        ``measured_per_min``, ``partitions``, the band columns and ``band_lo``/``band_hi`` (NaN with one run each).
        Empty when there is no such scenario.
    """
    rows = {}
    ranges = _run_ranges(source)
    pooled = float(pd.Series(list(ranges.values()), dtype=float).median()) if ranges else float("nan")
    drifts = _drifts(source, previous) if previous is not None else {}
    pooled_drift = float(pd.Series(list(drifts.values()), dtype=float).median()) if drifts else 0.0
    for name, st in bottleneck.prep_scenarios(source).items():
        if not source.has(name):
            continue
        try:
            cfg = source.config(name)
            params = calibration.calibrated_params(source, scenario=name, stat="mean")
            sim = bottleneck.predict(params, prep_ms=params.prep_msm_ms, **calibration.scenario_run_settings(st, cfg, f"forecast-{name}"))
            measured = float(metrics.utilization(source.events(name)).iloc[0]["partitions_per_min"])
        except (KeyError, TypeError, ValueError, IndexError, OSError) as exc:
            raise ValueError(f"{source.recording.path.name}: scenario {name}: cannot forecast it ({type(exc).__name__}: {exc})") from None
        runs = max(ranges.get(name, float("nan")), pooled) if name in ranges else float("nan")
        miss = abs(sim.partitions_per_min - measured) / measured if measured > 0 else float("nan")
        drift = max(drifts[name], pooled_drift) if name in drifts else (pooled_drift if drifts else 0.0)
        band = math.sqrt(runs ** 2 + miss ** 2 + drift ** 2)
        rows[name] = {"partitions_per_min": sim.partitions_per_min, "compute_util": sim.compute_util,
                      "measured_per_min": measured, "partitions": int(cfg.get("partitions", 16)), "band_runs": runs,
                      "band_model": miss, "band_drift": drift, "band_rel": band,
                      "band_lo": sim.partitions_per_min * (1 - band), "band_hi": sim.partitions_per_min * (1 + band)}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["partitions_per_min", "compute_util", "measured_per_min", "partitions",
                                                                 "band_runs", "band_model", "band_drift", "band_rel", "band_lo", "band_hi"])
    out.index.name = "scenario"
    return out


def _drifts(source: Source, previous: Source) -> dict[str, float]:
    """``{scenario: |median(source) - median(previous)| / median(previous)}`` of partitions/min over the runs, for every
    prep scenario both recordings ran with the same settings: every ``config`` key both name has one value (a key only
    one names, such as a setting added to the pipeline between them, is not a difference)."""
    out = {}
    for name in bottleneck.prep_scenarios(source):
        if not (source.has(name) and previous.has(name)):
            continue
        now_cfg, before_cfg = source.config(name), previous.config(name)
        if any(now_cfg[k] != before_cfg[k] for k in now_cfg.keys() & before_cfg.keys()):
            continue
        try:
            now, before = (float(repeat_table(s, [name]).get("partitions_per_min", pd.Series(dtype=float)).median())
                           for s in (source, previous))
        except (KeyError, ValueError, OSError):  # a damaged previous recording gives no drift, not an error
            continue
        if math.isfinite(now) and math.isfinite(before) and before > 0:
            out[name] = abs(now - before) / before
    return out


def previous_recording(rec: Recording) -> Recording | None:
    """The newest complete GPU recording beside ``rec`` (same folder) of the same GPU and n, made before it; None if
    there is none (unreadable ones are passed over)."""
    start = _recording_start(rec)
    found = []
    for mf in sorted(rec.path.parent.glob("*/manifest.json")):
        if mf.parent.resolve() == rec.path.resolve():
            continue
        try:
            other = Recording.open(mf.parent)
            if (not other.incomplete and other.is_gpu and other.gpu == rec.gpu and other.manifest.get("n") == rec.manifest.get("n")
                    and _recording_start(other) < start):
                found.append((_recording_start(other), other))
        except (ValueError, OSError, OverflowError):
            continue
    return max(found, key=lambda t: t[0])[1] if found else None


def _run_ranges(source: Source) -> dict[str, float]:
    """``{scenario: (max - min) / median}`` of partitions/min over the runs of every prep scenario run more than once."""
    out = {}
    for name in bottleneck.prep_scenarios(source):
        if source.has(name) and len(source.runs(name)) > 1:
            rates = repeat_table(source, [name])["partitions_per_min"]
            if len(rates) > 1 and rates.median() > 0:
                out[name] = float((rates.max() - rates.min()) / rates.median())
    return out


def _measured_median(source: Source, name: str) -> tuple[float, float]:
    """Median partitions/min and compute utilization of ``name`` over its runs."""
    t = repeat_table(source, [name])
    return float(t["partitions_per_min"].median()), float(t["compute_util"].median())


def write_forecast(source: Source, out_dir: str | Path | None = None, *, made_utc: str | None = None) -> Path:
    """Write :func:`forecast` of ``source`` to ``<out_dir>/forecast-from-<recording>.json`` with the UTC date,
    commit and :func:`model_sha256`.

    Raises:
        FileExistsError: that file exists; ValueError: the recording has no scenario to forecast.
    """
    rec = source.recording
    if not rec.is_gpu:
        raise ValueError(f"{rec.path.name} is a CPU recording: a forecast of GPU throughput needs a GPU recording")
    _utc(rec.date, f"{rec.path.name}'s date_utc")
    if rec.path.name in ("", ".", ".."):
        raise ValueError(f"{rec.path}: name the recording's folder (e.g. data/last-mile/<recording>), not {str(rec.path)!r}")
    folder = Path(out_dir) if out_dir is not None else FORECAST_DIR
    # names repeat across data/'s sub-folders (a main and a last-mile ...-record-2): outside data/last-mile the folder is named too
    stem = rec.path.name if rec.path.parent.name == bottleneck.PILOT_DIR else f"{rec.path.parent.name}-{rec.path.name}"
    target = folder / f"forecast-from-{stem}.json"
    taken = f"{target} exists: a forecast is never rewritten (make the next one from a newer recording)"
    if target.exists():  # refused before the work (write_json_new refuses it again, race-free)
        raise FileExistsError(taken)
    prev = previous_recording(rec)
    table = forecast(source, Source("recorded-gpu", prev, "replay") if prev is not None else None)
    if table.empty:
        raise ValueError(f"{rec.path.name} has no recorded last-mile scenario (prep other than cpu, with its events) to forecast")
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "kind": "forecast",
        "made_utc": made_utc or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **git_commit(),
        "model_sha256": model_sha256(),
        "from_recording": rec.path.name,
        "from_recording_path": _relative(rec.path),
        "from_recording_date_utc": rec.date,
        "from_recording_commit": rec.manifest.get("commit"),
        "gpu": rec.gpu,
        "n": rec.manifest.get("n"),
        "method": "per scenario: the model calibrated (means) on that scenario's run in from_recording, simulated with its recorded settings",
        "previous_recording": prev.path.name if prev is not None else None,
        "band": "band_lo..band_hi: the forecast -/+ band_rel = sqrt(band_runs^2 + band_model^2 + band_drift^2): band_runs the larger of "
                "the scenario's range over its repeats in from_recording ((max - min) / median) and the median of those ranges; "
                "band_model the model's miss on its calibration run; band_drift the scenario's move between previous_recording and "
                "from_recording (median over runs), at least the median move (0 without previous_recording); null when it ran each "
                "scenario once",
        "scenarios": {name: {k: (None if isinstance(v, float) and not math.isfinite(v) else float(v) if k != "partitions" else int(v))
                             for k, v in row.items()} for name, row in table.iterrows()},
    }
    try:
        return write_json_new(target, doc)
    except FileExistsError:
        raise FileExistsError(taken) from None


def _relative(path: Path) -> str | None:
    """The recording's folder relative to the repository, or None outside it (no machine's absolute path is stored;
    the reader then finds the recording by name among the last-mile recordings)."""
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return None


def _inside_repo(rel: Any) -> Path | None:
    """``REPO_ROOT / rel`` when ``rel`` is a relative path that stays inside the repository (links resolved), else None."""
    if not isinstance(rel, str) or not rel or Path(rel).is_absolute():
        return None
    p = (REPO_ROOT / rel).resolve()
    return p if p.is_relative_to(REPO_ROOT.resolve()) else None


_NUMBERS = ("partitions_per_min", "compute_util", "measured_per_min")


def read_forecasts(folder: str | Path | None = None) -> list[dict[str, Any]]:
    """Every ``forecast-*.json`` in ``folder`` (default :data:`FORECAST_DIR`), oldest first by ``made_utc``;
    ``[]`` when the folder does not exist.

    Raises:
        ValueError: a file is not JSON or not a forecast (names the file).
    """
    d = Path(folder) if folder is not None else FORECAST_DIR
    out = []
    for f in sorted(d.glob("forecast-*.json")) if d.is_dir() else []:
        if not f.is_file():  # a folder, a FIFO (would block), a device
            raise ValueError(f"{f}: not a regular file, so not a forecast (remove it)")
        try:
            doc = loads_strict(f.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:  # not JSON, or a key twice
            raise ValueError(f"{f}: not a JSON forecast ({exc})") from None
        except OSError as exc:
            raise ValueError(f"{f}: unreadable ({exc.strerror or exc})") from None
        if not (isinstance(doc, dict) and doc.get("kind") == "forecast" and isinstance(doc.get("scenarios"), dict) and doc["scenarios"]
                and isinstance(doc.get("from_recording"), str)):
            raise ValueError(f"{f}: not a forecast (needs kind='forecast', made_utc, from_recording and a non-empty scenarios object)")
        name, rel = doc["from_recording"], doc.get("from_recording_path")
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            raise ValueError(f"{f}: from_recording {name!r} is not a recording folder's name")
        if rel is not None and _inside_repo(rel) is None:
            raise ValueError(f"{f}: from_recording_path {rel!r} is not a relative path inside the repository (or null)")
        made = _utc(doc.get("made_utc"), f"{f}: made_utc")
        for name, v in doc["scenarios"].items():
            ok = isinstance(v, dict) and all(isinstance(v.get(k), (int, float)) and not isinstance(v.get(k), bool)
                                             and math.isfinite(v[k]) and v[k] >= 0 for k in _NUMBERS)
            band = [v.get(k) for k in ("band_lo", "band_hi")] if isinstance(v, dict) else []
            ok = ok and all(b is None or (isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b)) for b in band)
            lo, hi = (band + [None, None])[:2]
            ok = ok and not (lo is not None and hi is not None and lo > hi)  # a band's low end above its high end
            if not ok:
                raise ValueError(f"{f}: scenario {name!r}: needs finite numbers >= 0 for {', '.join(_NUMBERS)} (and finite or null "
                                 f"band_lo <= band_hi), got {v!r}")
        out.append({**doc, "file": f.name, "_made": made})
    return sorted(out, key=lambda d: d["_made"])


def _from_source(fc: dict[str, Any]) -> Source | None:
    """The recording a forecast was made from (its stored path, else the last-mile recording of that name), or None."""
    path = _inside_repo(fc.get("from_recording_path"))
    if path is not None and (path / "manifest.json").is_file():
        return Source("recorded-gpu", Recording.open(path), "replay")
    found = [r for r in bottleneck.last_mile_recordings() if r.path.name == fc["from_recording"]]
    return Source("recorded-gpu", found[0], "replay") if found else None


def reproduces(fc: dict[str, Any], rel: float = 1e-6) -> bool | None:
    """Whether today's code makes forecast ``fc`` (a :func:`read_forecasts` entry) again: :func:`forecast` of its
    recording gives the same partitions/min for every scenario (within ``rel``). None when that recording is not
    here. This, not :func:`model_sha256`, says whether the model changed since the forecast."""
    src = _from_source(fc)
    if src is None:
        return None
    try:
        now = forecast(src)
    except ValueError:
        return False
    return all(name in now.index and math.isclose(float(now.loc[name, "partitions_per_min"]), float(v["partitions_per_min"]), rel_tol=rel)
               for name, v in fc["scenarios"].items())


def _other_of_same_kind(fc: dict[str, Any], rec: Recording) -> bool:
    """Forecast ``fc`` was made from another recording than ``rec``, of the same collection (a last-mile forecast is
    set against last-mile recordings only): by ``from_recording_path`` where the file has one, else by name."""
    rel = fc.get("from_recording_path")
    if isinstance(rel, str) and rel:
        src = Path(rel)
        return src.parent.name == rec.path.parent.name and (REPO_ROOT / src).resolve() != rec.path.resolve()
    return fc["from_recording"] != rec.path.name


def forecast_vs_measured(recording: Recording | Source, folder: str | Path | None = None) -> pd.DataFrame:
    """The newest forecast made before ``recording`` started, from another recording of the same GPU, n and collection,
    against what ``recording`` measured, per shared scenario.

    Returns:
        DataFrame indexed by ``scenario`` with ``forecast_per_min``, ``measured_per_min`` (median; ``measured_min``,
        ``measured_max``, ``runs``), ``rel_err``, ``band_lo``, ``band_hi``, ``in_band``, ``forecast_compute_util``,
        ``measured_compute_util``; ``attrs``: ``file``, ``made_utc``, ``commit``, ``from_recording``,
        ``from_commit``, ``reproduced``. Empty when no forecast precedes it.

    Raises:
        ValueError: a malformed forecast file, or a recording date without a UTC offset.
    """
    src = recording if isinstance(recording, Source) else Source("recorded-gpu", recording, "replay")
    rec = src.recording
    start = _recording_start(rec)
    before = [f for f in read_forecasts(folder) if f["_made"] < start and _other_of_same_kind(f, rec)
              and f.get("gpu") in (None, rec.gpu) and f.get("n") in (None, rec.manifest.get("n"))]
    cols = ["forecast_per_min", "measured_per_min", "rel_err", "forecast_compute_util", "measured_compute_util", "band_lo", "band_hi",
            "in_band", "measured_min", "measured_max", "runs"]
    if not before:
        return pd.DataFrame(columns=cols)
    fc = before[-1]
    rows = {}
    for name in bottleneck.prep_scenarios(src):  # the story's order (the file's keys are sorted)
        v = fc["scenarios"].get(name)
        if v is None or not src.has(name):
            continue
        t = repeat_table(src, [name])
        if t.empty:
            continue
        meas, util = float(t["partitions_per_min"].median()), float(t["compute_util"].median())
        if not (math.isfinite(meas) and meas > 0):
            continue
        lo, hi = v.get("band_lo"), v.get("band_hi")
        banded = isinstance(lo, (int, float)) and isinstance(hi, (int, float))
        rows[name] = {"forecast_per_min": float(v["partitions_per_min"]), "measured_per_min": meas,
                      "rel_err": (float(v["partitions_per_min"]) - meas) / meas,
                      "forecast_compute_util": float(v["compute_util"]), "measured_compute_util": util,
                      "band_lo": float(lo) if banded else float("nan"), "band_hi": float(hi) if banded else float("nan"),
                      "in_band": (bool(lo <= meas <= hi) if banded else None),
                      "measured_min": float(t["partitions_per_min"].min()), "measured_max": float(t["partitions_per_min"].max()),
                      "runs": len(t)}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=cols) if rows else pd.DataFrame(columns=cols)
    out.index.name = "scenario"
    out.attrs.update(drift_band="previous_recording" in fc, file=fc["file"], made_utc=fc["made_utc"], commit=fc.get("commit"), from_recording=fc["from_recording"],
                     from_commit=fc.get("from_recording_commit"), reproduced=reproduces(fc))
    return out


def _code_state(reproduced: bool | None) -> str:
    return {True: "today's code makes the same forecast", False: "today's code makes another forecast: the model changed since",
            None: "its recording is not here to check today's code against"}[reproduced]


_BAND_WORDS = {False: "the band is how much the forecast recording's own runs moved",
               True: "the band adds how much the forecast recording's runs moved, the model's miss on them and how much each "
                     "scenario moved since the recording before it"}


def _band_sentence(t: pd.DataFrame) -> str:
    """How many measured medians fell inside the forecast's bands (or that the forecast had none)."""
    banded = t[t["in_band"].notna()] if "in_band" in t else t.iloc[:0]
    if banded.empty:
        return "The forecast carries no band (its recording ran each scenario once). "
    k = int(banded["in_band"].astype(bool).sum())
    return (f"The measured median (over {int(t['runs'].min())}-{int(t['runs'].max())} runs) fell inside the forecast's band for {k} of "
            f"{len(banded)} scenarios ({100 * k / len(banded):.0f}%; {_BAND_WORDS[bool(t.attrs.get('drift_band'))]}). ")


def blind_test_markdown(recording: Recording | Source, best: str | None = None, folder: str | Path | None = None) -> str:
    """One paragraph (Markdown) for notebook 07b: the blind test of ``recording`` by the newest forecast made before
    it started (:func:`forecast_vs_measured`: the forecast's error for ``best`` — said so when the forecast lacks it
    and another scenario stands in — the range over the scenarios both have, and whether today's code makes the same
    forecast), or, when no forecast precedes it, the pending forecast made from it and what tests it."""
    src = recording if isinstance(recording, Source) else Source("recorded-gpu", recording, "replay")
    name = src.recording.path.name
    t = forecast_vs_measured(src, folder)
    if t.attrs:
        head = (f"**Blind test.** The forecast `{t.attrs['file']}` was made on {t.attrs['made_utc']} (commit "
                f"{commit_label(t.attrs, 7)}) from {t.attrs['from_recording']} alone (its code: commit "
                f"{commit_label({'commit': t.attrs['from_commit']}, 7)}), before {name} started; {_code_state(t.attrs['reproduced'])}.")
        if t.empty:
            return head + f" It forecast no scenario that {name} measured, so it tests nothing here."
        b = best if best in t.index else str(t["measured_per_min"].idxmax())
        swap = "" if b == best or best is None else f" (it has no forecast of `{best}`; `{b}` is the fastest run both have)"
        ok = abs(float(t.loc[b, "rel_err"])) <= 0.10
        return (head + f" It predicted `{b}`{swap} at {t.loc[b, 'forecast_per_min']:.0f} partitions/min; {name} measured "
                f"{t.loc[b, 'measured_per_min']:.0f} ({100 * t.loc[b, 'rel_err']:+.1f}%: {'within' if ok else 'outside'} 10%). Over the "
                f"{len(t)} scenarios both have, the errors range from {100 * t['rel_err'].min():+.0f}% to {100 * t['rel_err'].max():+.0f}% "
                f"({int((t['rel_err'].abs() <= 0.10).sum())} within 10%). " + _band_sentence(t) + "A change between the two "
                "recordings' code or host shows as error here too: their commits are above.")
    pending = [f for f in read_forecasts(folder) if f["from_recording"] == name]
    if not pending:
        return (f"**Blind test.** No forecast was made before {name}, and none from it: `zkgpu forecast` writes one, "
                "to be committed before the next recording.")
    f = pending[-1]
    sc = f["scenarios"]
    b = best if best in sc else max(sc, key=lambda k: float(sc[k]["measured_per_min"]))
    return (f"**Blind test: pending.** No forecast was made before {name}, so the predictions above are not blind (the model "
            f"may have been corrected after it was measured). The forecast `{f['file']}`, made from {name} alone on "
            f"{f['made_utc']} (commit {commit_label(f, 7)}; {_code_state(reproduces(f))}), predicts the next recording of `{b}` at "
            f"{float(sc[b]['partitions_per_min']):.0f} partitions/min; the next `scripts/gpu_run.sh record-last-mile` tests it.")
