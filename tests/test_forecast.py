"""zkgpu.story.forecast: the model's forecast of the next recording, written before it exists (CPU; replays data/last-mile)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zkgpu.analysis.metrics import utilization
from zkgpu.analysis.replay import Recording, Source, data_dir, repeat_table
from zkgpu.story import bottleneck as b
from zkgpu.story import forecast as fc

LM = data_dir() / b.PILOT_DIR


def _src(name: str) -> Source:
    return Source("recorded-gpu", Recording.open(LM / name), "replay")


def test_forecast_calibrates_each_scenario_on_its_own_run():
    src = _src("nvidia-h200-20261201-record-4")
    t = fc.forecast(src)
    assert list(t.index) == [n for n in b.prep_scenarios(src) if src.has(n)]
    assert (t["partitions_per_min"] > 0).all() and t["compute_util"].between(0, 1).all()
    # the submit scope reproduces its own run (the model's submit path, calibrated on it)
    row = t.loc["submit_prep_gpu"]
    assert row["partitions_per_min"] == pytest.approx(utilization(src.events("submit_prep_gpu"))["partitions_per_min"], rel=0.02)
    assert row["measured_per_min"] == pytest.approx(utilization(src.events("submit_prep_gpu"))["partitions_per_min"])


def test_write_read_and_never_overwrite(tmp_path):
    src = _src("nvidia-h200-20261201-record-4")
    path = fc.write_forecast(src, tmp_path, made_utc="2026-12-01T20:00:00+00:00")
    doc = json.loads(path.read_text())
    assert path.name == "forecast-from-nvidia-h200-20261201-record-4.json"
    assert doc["kind"] == "forecast" and doc["from_recording"] == "nvidia-h200-20261201-record-4" and "commit" in doc
    assert doc["model_sha256"] == fc.model_sha256() and len(doc["model_sha256"]) == 64
    assert set(doc["scenarios"]) == set(fc.forecast(src).index)
    with pytest.raises(FileExistsError, match="never rewritten"):
        fc.write_forecast(src, tmp_path)
    [back] = fc.read_forecasts(tmp_path)
    assert back["file"] == path.name and back["scenarios"] == doc["scenarios"]
    assert fc.read_forecasts(tmp_path / "missing") == []
    (tmp_path / "forecast-bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="forecast-bad.json"):
        fc.read_forecasts(tmp_path)


@pytest.mark.slow
def test_forecast_vs_measured_takes_the_newest_forecast_made_before_the_recording(tmp_path):
    r3, r4 = _src("nvidia-h200-20261201-record-3"), _src("nvidia-h200-20261201-record-4")
    assert fc.forecast_vs_measured(r4, tmp_path).empty  # none yet
    fc.write_forecast(r3, tmp_path, made_utc="2026-12-01T12:00:00+00:00")  # before record-4 was made
    t = fc.forecast_vs_measured(r4, tmp_path)
    common = [n for n in fc.forecast(r3).index if r4.has(n)]
    assert list(t.index) == common and len(common) >= 5
    n = common[0]
    assert t.loc[n, "measured_per_min"] == pytest.approx(utilization(r4.events(n))["partitions_per_min"])
    assert t.loc[n, "rel_err"] == pytest.approx((t.loc[n, "forecast_per_min"] - t.loc[n, "measured_per_min"]) / t.loc[n, "measured_per_min"])
    assert t.attrs["from_recording"] == "nvidia-h200-20261201-record-3" and t.attrs["reproduced"] is True
    # a forecast made from the recording itself, or after it, is no test of it
    fc.write_forecast(r4, tmp_path, made_utc="2026-12-01T23:00:00+00:00")
    assert fc.forecast_vs_measured(r4, tmp_path).attrs["from_recording"] == "nvidia-h200-20261201-record-3"
    assert fc.forecast_vs_measured(r3, tmp_path).empty


@pytest.mark.slow
def test_cli_forecast_one_line_errors(tmp_path):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "zkgpu.app.cli", "forecast", *args], capture_output=True, text=True, timeout=300)

    ok = run(str(LM / "nvidia-h200-20261201-record-4"), "--out", str(tmp_path))
    assert ok.returncode == 0 and "forecast-from-nvidia-h200-20261201-record-4.json" in ok.stdout, ok.stderr
    for args in ([str(LM / "nvidia-h200-20261201-record-4"), "--out", str(tmp_path)], [str(tmp_path / "nowhere")]):
        r = run(*args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_the_committed_forecast_of_the_next_recording_was_made_by_todays_model():
    """The newest committed forecast (forecasts/) is the blind test of the next recording: while that recording
    does not exist, today's code must still make the same forecast. After a change to the model, remake it
    (`git rm forecasts/forecast-from-<newest>.json; zkgpu forecast`) before the next recording."""
    committed = fc.read_forecasts()
    assert committed, "no forecast in forecasts/: run `zkgpu forecast` on the newest last-mile recording"
    newest = b.last_mile_recordings()[0]
    pending = [f for f in committed if f["from_recording"] == newest.path.name]
    if pending:
        assert fc.reproduces(pending[-1]) is True, (
            f"{pending[-1]['file']}: today's code makes another forecast: remake it before the next recording")


@pytest.mark.slow
def test_times_are_compared_as_instants_and_bad_files_are_one_line(tmp_path):
    r3, r4 = _src("nvidia-h200-20261201-record-3"), _src("nvidia-h200-20261201-record-4")
    start4 = "2026-12-01T19:44:00+00:00"  # record-4: date_utc 19:46:21 less elapsed_s 141.7
    assert r4.recording.date == "2026-12-01T19:46:21+00:00" and r4.recording.manifest["elapsed_s"] > 140
    # 18:30-01:00 is 19:30Z: before record-4 started; 21:50+02:00 is 19:50Z: after it started
    path = fc.write_forecast(r3, tmp_path, made_utc="2026-12-01T18:30:00-01:00")
    assert fc.forecast_vs_measured(r4, tmp_path).attrs["file"] == path.name
    path.rename(tmp_path / "forecast-late.json")
    doc = json.loads((tmp_path / "forecast-late.json").read_text())
    doc["made_utc"] = "2026-12-01T21:50:00+02:00"
    (tmp_path / "forecast-late.json").write_text(json.dumps(doc))
    assert not fc.forecast_vs_measured(r4, tmp_path).attrs  # made while record-4 ran: no blind test of it
    assert fc.forecast_vs_measured(r4, tmp_path).empty and start4 < r4.recording.date
    for made in ("2026-12-01 20:00:00", 12345, "yesterday"):  # naive, not a string, not a time: refused, naming the file
        doc["made_utc"] = made
        (tmp_path / "forecast-late.json").write_text(json.dumps(doc))
        with pytest.raises(ValueError, match=r"forecast-late\.json: made_utc"):
            fc.read_forecasts(tmp_path)
    doc["made_utc"] = "2026-12-01T12:00:00+00:00"
    for bad in ("fast", {"partitions_per_min": "x", "compute_util": 0.9, "measured_per_min": 1.0}, None,
                {"partitions_per_min": float("nan"), "compute_util": 0.9, "measured_per_min": 1.0}):
        doc["scenarios"] = {"submit_prep_gpu": bad}
        (tmp_path / "forecast-late.json").write_text(json.dumps(doc))
        with pytest.raises(ValueError, match="scenario 'submit_prep_gpu'"):
            fc.read_forecasts(tmp_path)
    doc["scenarios"] = {"not_recorded": {"partitions_per_min": 1.0, "compute_util": 0.5, "measured_per_min": 1.0}}
    (tmp_path / "forecast-late.json").write_text(json.dumps(doc))
    t = fc.forecast_vs_measured(r4, tmp_path)
    assert t.empty and t.attrs["file"] == "forecast-late.json"
    assert "tests nothing here" in fc.blind_test_markdown(r4, folder=tmp_path)


def test_a_cpu_recording_is_not_forecast(tmp_path):
    import shutil

    d = tmp_path / "cpu-20261201-record"
    shutil.copytree(LM / "nvidia-h200-20261201-record-4", d)
    m = json.loads((d / "manifest.json").read_text())
    m["device"] = "cpu"
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ValueError, match="CPU recording"):
        fc.write_forecast(Source("recorded-cpu", Recording.open(d), "replay"), tmp_path / "out")


@pytest.mark.slow
def test_blind_test_markdown_pending_then_tested(tmp_path):
    r3, r4 = _src("nvidia-h200-20261201-record-3"), _src("nvidia-h200-20261201-record-4")
    assert "No forecast was made before nvidia-h200-20261201-record-4, and none from it" in fc.blind_test_markdown(r4, folder=tmp_path)
    fc.write_forecast(r4, tmp_path, made_utc="2026-12-01T23:00:00+00:00")
    pending = fc.blind_test_markdown(r4, "submit_prep_gpu_msm_precomp", folder=tmp_path)
    assert "pending" in pending and "`submit_prep_gpu_msm_precomp`" in pending
    assert f"{fc.forecast(r4).loc['submit_prep_gpu_msm_precomp', 'partitions_per_min']:.0f} partitions/min" in pending
    fc.write_forecast(r3, tmp_path, made_utc="2026-12-01T12:00:00+00:00")
    t = fc.forecast_vs_measured(r4, tmp_path)
    done = fc.blind_test_markdown(r4, "submit_prep_gpu", folder=tmp_path)
    assert done.startswith("**Blind test.**") and f"{100 * t.loc['submit_prep_gpu', 'rel_err']:+.1f}%" in done
    assert "today's code makes the same forecast" in done
    swapped = fc.blind_test_markdown(r4, "submit_prep_gpu_msm_precomp", folder=tmp_path)  # record-3 did not have it
    assert "has no forecast of `submit_prep_gpu_msm_precomp`" in swapped


def test_band_adds_runs_model_miss_and_drift_in_quadrature():
    """The band's three parts: the runs' range, the model's miss on its calibration run, and the move since the
    previous recording (same GPU and n, same settings); without a previous recording the drift part is 0."""
    names = ["nvidia-h200-20261203-record", "nvidia-h200-20261203-record-1"]
    if not all((LM / n / "manifest.json").is_file() for n in names):
        pytest.skip("the two seed-regime last-mile recordings are not here")
    before, now = (_src(n) for n in names)
    assert fc.previous_recording(now.recording).path.name == names[0]
    assert fc.previous_recording(before.recording) is None or fc.previous_recording(before.recording).path.name < names[0]
    t = fc.forecast(now, before)
    parts = t[["band_runs", "band_model", "band_drift"]]
    assert (parts >= 0).all().all()
    assert ((parts ** 2).sum(axis=1) ** 0.5).values == pytest.approx(t["band_rel"].values)
    assert (t["band_lo"] == t["partitions_per_min"] * (1 - t["band_rel"])).all()
    for name in t.index:  # the drift part is at least this scenario's own move between the two recordings
        med = [float(repeat_table(s, [name])["partitions_per_min"].median()) for s in (before, now)]
        own = abs(med[1] - med[0]) / med[0]
        assert t.loc[name, "band_drift"] >= own - 1e-12
    alone = fc.forecast(now)
    assert (alone["band_drift"] == 0).all() and (alone["band_rel"] <= t["band_rel"] + 1e-12).all()


def test_drift_ignores_a_setting_only_one_recording_names(monkeypatch):
    """A setting added to the pipeline between two recordings (pool_scope) is not a difference of settings; a
    setting both name with different values is."""
    import pandas as pd

    class _Fake:
        def __init__(self, cfg: dict, rate: float):
            self.cfg, self.rate = cfg, rate

        def has(self, name: str) -> bool:
            return name == "submit_prep_gpu"

        def config(self, name: str) -> dict:
            return self.cfg

    monkeypatch.setattr(fc, "repeat_table", lambda s, names: pd.DataFrame({"partitions_per_min": [s.rate]}))
    monkeypatch.setattr(fc.bottleneck, "prep_scenarios", lambda s: {"submit_prep_gpu": {}})
    old = _Fake({"gw": 2, "prep": "gpu"}, 100.0)
    assert fc._drifts(_Fake({"gw": 2, "prep": "gpu", "pool_scope": "shared"}, 110.0), old) == {"submit_prep_gpu": pytest.approx(0.10)}
    assert fc._drifts(_Fake({"gw": 3, "prep": "gpu"}, 110.0), old) == {}


def test_forecasts_of_other_folders_are_named_by_folder_and_not_set_against_last_mile(tmp_path):
    """Names repeat across data/'s sub-folders: a forecast from a recording outside data/last-mile names its folder,
    and a last-mile recording is only set against forecasts made from last-mile recordings."""
    import shutil

    name = "nvidia-h200-20261201-record-3"
    other = tmp_path / "elsewhere" / name
    shutil.copytree(LM / name, other)
    path = fc.write_forecast(Source("recorded-gpu", Recording.open(other), "replay"), tmp_path / "fc", made_utc="2026-12-01T12:00:00+00:00")
    assert path.name == f"forecast-from-elsewhere-{name}.json"
    doc = json.loads(path.read_text())
    doc["from_recording_path"] = f"data/elsewhere/{name}"  # as if committed beside data/last-mile
    path.write_text(json.dumps(doc))
    assert fc.forecast_vs_measured(_src("nvidia-h200-20261201-record-4"), tmp_path / "fc").empty
    doc["from_recording_path"] = f"data/last-mile/{name}"
    path.write_text(json.dumps(doc))
    assert not fc.forecast_vs_measured(_src("nvidia-h200-20261201-record-4"), tmp_path / "fc").empty
