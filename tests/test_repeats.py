"""Repeats (issue 20): runs interleaved round-robin, medians with their range, `zkgpu compare`, forecast bands.

CPU recordings of two scenarios, each run three times (the pipeline on the CPU backend: the same files and
manifest as a GPU recording)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from zkgpu.analysis import compare, replay
from zkgpu.app import record
from zkgpu.story import forecast

NAMES = ["baseline", "pinned_narrow", "narrow_prep_parallel"]
PREP = ["pinned_narrow", "narrow_prep_parallel"]  # the forecast's scenarios (prep off the critical path)


@pytest.fixture(scope="module")
def rec_dir(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("rep")
    return record.record(out=base, device="cpu", n=1 << 6, partitions=3, scenarios=NAMES, repeats=3)


def _as_gpu(run_dir: Path, dest: Path, name: str, date: str) -> Path:
    d = dest / name
    shutil.copytree(run_dir, d)
    m = json.loads((d / "manifest.json").read_text())
    m.update(device="gpu", date_utc=date, environment=dict(m["environment"], gpu="FAKE-GPU (test fixture)"))
    (d / "manifest.json").write_text(json.dumps(m))
    return d


def test_runs_are_interleaved_and_the_representative_is_the_median(rec_dir):
    m = json.loads((rec_dir / "manifest.json").read_text())
    assert m["repeats"] == 3 and m["prep_threads"] == record.SEED_PREP_THREADS
    for name in NAMES:
        e = m["scenarios"][name]
        runs = e["repeats"]
        assert [r["events"] for r in runs] == [f"events/{name}.r{k}.parquet" for k in (1, 2, 3)]
        rates = [r["partitions_per_min"] for r in runs]
        assert rates[e["representative"]] == sorted(rates)[1] and e["events"] == runs[e["representative"]]["events"]
    # round-robin: the first run of every scenario was written before any second run
    mtime = {p.name: p.stat().st_mtime_ns for p in (rec_dir / "events").iterdir()}
    assert max(mtime[f"{n}.r1.parquet"] for n in NAMES) <= min(mtime[f"{n}.r2.parquet"] for n in NAMES)


def test_scenario_table_gives_medians_with_their_range(rec_dir):
    src = replay.Source("recorded-cpu", replay.Recording.open(rec_dir), "replay")
    reps = replay.repeat_table(src)
    assert sorted(reps["run"].unique()) == [0, 1, 2] and set(reps["scenario"]) == set(NAMES)
    tab = replay.scenario_table(src)
    for name in NAMES:
        g = reps[reps["scenario"] == name]["partitions_per_min"]
        row = tab.loc[name]
        assert row["repeats"] == 3 and row["partitions_per_min"] == pytest.approx(g.median())
        assert row["partitions_per_min_min"] == pytest.approx(g.min()) and row["partitions_per_min_max"] == pytest.approx(g.max())
    assert (replay.spread(tab) >= 0).all()


def test_compare_flags_only_differences_beyond_the_spread(rec_dir):
    assert compare.verdict(1, 2, 3, 3, 4, 3) == "beyond spread"
    assert compare.verdict(1, 3, 3, 2, 4, 3) == "within spread"
    assert compare.verdict(1, 1, 1, 3, 4, 3) == "single run"
    rec = replay.Recording.open(rec_dir)
    t = compare.compare(rec, rec)
    assert set(t["scenario"]) == set(NAMES) and (t["verdict"] == "within spread").all() and (t["rel_diff"].abs() < 1e-12).all()
    assert list(t["metric"].unique()) == list(compare.COMPARED)


def test_compare_command_is_one_table_and_one_line_errors(rec_dir, tmp_path):
    ok = subprocess.run([sys.executable, "-m", "zkgpu.app.cli", "compare", str(rec_dir), str(rec_dir), "--csv", str(tmp_path / "c.csv")],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "within spread" in ok.stdout and len(pd.read_csv(tmp_path / "c.csv")) == len(NAMES) * len(compare.COMPARED)
    again = subprocess.run([sys.executable, "-m", "zkgpu.app.cli", "compare", str(rec_dir), str(rec_dir), "--csv", str(tmp_path / "c.csv")],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    bad = subprocess.run([sys.executable, "-m", "zkgpu.app.cli", "compare", str(tmp_path / "nowhere"), str(rec_dir)],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "not a recording" in bad.stderr and "Traceback" not in bad.stderr


def test_forecast_carries_a_band_from_the_repeats_and_the_blind_test_says_if_it_held(rec_dir, tmp_path):
    a = _as_gpu(rec_dir, tmp_path, "fake-gpu-20990101-record", "2099-01-01T00:00:00+00:00")
    b = _as_gpu(rec_dir, tmp_path, "fake-gpu-20990102-record", "2099-01-02T00:00:00+00:00")
    src = replay.Source("recorded-gpu", replay.Recording.open(a), "replay")
    f = forecast.forecast(src)
    assert set(f.index) == set(PREP)
    for name, row in f.iterrows():
        assert row["band_rel"] >= 0 and row["band_lo"] <= row["partitions_per_min"] <= row["band_hi"], name
    folder = tmp_path / "fc"
    forecast.write_forecast(src, folder, made_utc="2099-01-01T12:00:00+00:00")
    t = forecast.forecast_vs_measured(replay.Recording.open(b), folder)
    assert set(t.index) == set(PREP) and t["runs"].eq(3).all() and t["in_band"].notna().all()
    text = forecast.blind_test_markdown(replay.Recording.open(b), folder=folder)
    assert "fell inside the forecast's band" in text


def test_model_vs_measured_measures_the_median_over_runs(rec_dir):
    """07's prediction table shows, under measured_*, the numbers every other table shows: scenario_table's medians
    (it showed the representative run's compute utilization, 83.1% beside 85.7% elsewhere)."""
    from zkgpu.analysis import calibration

    src = replay.Source("recorded-cpu", replay.Recording.open(rec_dir), "replay")
    pred = calibration.model_vs_measured(src, ["pinned_narrow"], calibrate_on="pinned_narrow")
    row = replay.scenario_table(src, ["pinned_narrow"]).loc["pinned_narrow"]
    assert pred.loc["pinned_narrow", "measured_compute_util"] == pytest.approx(row["compute_util"])
    assert pred.loc["pinned_narrow", "measured_per_min"] == pytest.approx(row["partitions_per_min"])


def test_seed_table_gives_the_smoking_gun_of_each_recording_of_the_regime(rec_dir, tmp_path):
    """Two recordings of one regime beside each other: the seed table adds a row with each one's median ratio
    and the range over recordings; a recording of another prep placement beside them is not counted."""
    from zkgpu.story import seed

    a = _as_gpu(rec_dir, tmp_path, "fake-record", "2026-12-01T10:00:00+00:00")
    b = _as_gpu(rec_dir, tmp_path, "fake-record-1", "2026-12-02T10:00:00+00:00")
    other = _as_gpu(rec_dir, tmp_path, "fake-record-2", "2026-12-03T10:00:00+00:00")
    m = json.loads((other / "manifest.json").read_text())
    for e in m["scenarios"].values():
        for run in [e, *e.get("repeats", [])]:
            run.get("config", {}).update(prep="gpu")
    (other / "manifest.json").write_text(json.dumps(m))
    src = replay.Source("recorded-gpu", replay.Recording.open(b), "replay")
    t = seed.seed_table(src).set_index("figure")
    row = t.loc["ntt_msm_h / prep_msm (baseline), each recording"]
    one = seed._per_run(src, "baseline", seed.smoking_gun_ratio)["median"]
    assert row["ours_min"] == pytest.approx(one) and row["ours_max"] == pytest.approx(one)  # the same runs copied twice
    assert "fake-record " in row["note"] and "fake-record-1 " in row["note"] and "fake-record-2" not in row["note"]
    assert row["reproduced"] == (seed.RATIO_RANGE[0] <= one <= seed.RATIO_RANGE[1])
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.move(str(a), alone / "fake-record")
    assert "ntt_msm_h / prep_msm (baseline), each recording" not in set(
        seed.seed_table(replay.Source("recorded-gpu", replay.Recording.open(alone / "fake-record"), "replay"))["figure"])


def test_seed_table_of_a_recording_without_baseline_beside_one_with_it(rec_dir, tmp_path):
    """The newest recording may hold other scenarios only (zkgpu record --scenario pinned_pool): its seed table is
    NaN rows, as alone, whatever lies beside it; an incomplete or unreadable sibling is passed over."""
    from zkgpu.story import seed

    _as_gpu(rec_dir, tmp_path, "fake-record", "2026-12-01T10:00:00+00:00")
    broken = tmp_path / "fake-record-9"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json")
    d = _as_gpu(rec_dir, tmp_path, "fake-record-1", "2026-12-02T10:00:00+00:00")
    m = json.loads((d / "manifest.json").read_text())
    m["scenarios"] = {k: v for k, v in m["scenarios"].items() if k != "baseline"}
    (d / "manifest.json").write_text(json.dumps(m))
    t = seed.seed_table(replay.Source("recorded-gpu", replay.Recording.open(d), "replay"))
    assert t.set_index("figure").loc["ntt_msm_h / prep_msm (baseline)", "ours"] != t.set_index("figure").loc["ntt_msm_h / prep_msm (baseline)", "ours"]
    assert "ntt_msm_h / prep_msm (baseline), each recording" not in set(t["figure"])
