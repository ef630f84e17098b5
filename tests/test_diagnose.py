"""``zkgpu diagnose`` (issue 24): the verdicts on the committed recordings, on the seed's lines, on
synthetic logs of each failure mode made by the CPU pipeline, on damaged and mixed logs; the command's
errors and outputs; linear time."""

from __future__ import annotations

import functools
import json
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import zkgpu.pipeline.worker as pipeline_worker
from zkgpu.analysis import logs
from zkgpu.analysis.gpu_time import IDLE_CAUSES, idle_causes
from zkgpu.analysis.replay import Recording, Source, data_dir, reference_path, scenario_table
from zkgpu.app.cli import main
from zkgpu.pipeline import PipelineConfig, prepare_backend, run_pipeline
from zkgpu.story import conclusions, limits
from zkgpu.story import diagnose as dg

#: The story's verdict of each recorded scenario is zkgpu.story.conclusions.story_verdict: from the scenario's configuration
#: where that decides it, and, after the fix (pinned or registered a, b, c with the coarse lock, or the narrow lock with the
#: one-thread prep), what limits it next as read from its log by the rule zkgpu diagnose uses (zkgpu.story.limits.decide):
#: there the story and diagnose agree by construction, and test_measured_event_tables_back_the_next_limit checks the
#: rule's reading against the recordings' measured event tables. (Before issue 24's fix the story said "the remaining
#: limit is the CPU's prep_msm" whatever the numbers; diagnose disagreed on the seed regime's pinned_pool, pinned_gw3 and
#: registered of data/nvidia-h200-20261203-record.)
#:
#: (recording, scenario) → (the verdict diagnose gives, why): the story's verdict (by configuration: the narrow scope with
#: prep_msm off the one CPU thread → lock_scope) cannot be checked there, because the recording has no run in the submission
#: scope with the same bases (:data:`MEASURES_SUBMIT`) to measure that change; diagnose reads the log by its own rule, and the
#: table says so rather than count a miss. test_not_measured_stays_not_measured checks that the measuring run is still absent.
#: (Issue 24: data/last-mile/nvidia-h200-20261203-record was a model miss here, 1.04× predicted against 1.11× measured: with
#: fixed durations the two workers of the submission scope fell into step in the model; diagnose now draws the durations
#: with the log's own spread, test_model_predicts_the_measured_submit_gain.)
NOT_MEASURED: dict[tuple[str, str], tuple[str, str]] = {
    ("last-mile/nvidia-h200-20261201-record-3", "narrow_prep_gpu_h2d_pre_lock_msm_precomp"): (
        "gpu_bound", "not measured: record-3 has no submission-scope run with the precomputed bases; the model calibrated on "
                     "this log predicts about 1.01x from the submission scope (synthesis, 741 ms a partition, sets its pace; "
                     "record-4's log gives lock_scope)"),
}
#: the narrow-scope scenario whose lock_scope verdict the submission-scope scenario with the same bases measures
MEASURES_SUBMIT = {"narrow_prep_gpu_h2d_pre_lock_msm_precomp": "submit_prep_gpu_msm_precomp"}


@functools.cache
def _diagnosed(path: Path) -> dg.Diagnosis:
    """zkgpu diagnose of one committed log, once per test process (several tests read the same recorded logs)."""
    return dg.diagnose_file(path)


def _recordings() -> list[Recording]:
    """Every committed recording with scenario logs: each data/**/manifest.json (main, last-mile, seed-regime, real)."""
    out = []
    for mf in sorted(data_dir().glob("**/manifest.json")):
        rec = Recording.open(mf.parent)
        if any(rec.log_path(s) is not None for s in rec.scenarios):
            out.append(rec)
    return out


def _key(rec: Recording) -> str:
    """The recording's folder under data/ (names repeat across data/, last-mile/ and seed-regime/)."""
    return rec.path.relative_to(data_dir()).as_posix()


_ALL = [(r, s) for r in _recordings() for s in r.scenarios if r.log_path(s) is not None]
#: the story gives verdicts for its scenario matrix under host load (pageable copies under load); data/real/ (notebook
#: 10, one real circuit, idle host, 4 partitions) gets none, and is only checked to give a verdict of the vocabulary
_CASES = [(r, s) for r, s in _ALL if r.host_load_threads > 0]


def _source(rec: Recording) -> Source:
    return Source("recorded-gpu" if rec.is_gpu else "recorded-cpu", rec, "replay")


def _expected(rec: Recording, scenario: str) -> str:
    key = (_key(rec), scenario)
    return NOT_MEASURED[key][0] if key in NOT_MEASURED else conclusions.story_verdict(_source(rec), scenario)


def _after_fix(rec: Recording, scenario: str) -> bool:
    """The scenario is one whose story verdict is read from its log (story_verdict's last case), not its configuration."""
    c = rec.scenario(scenario).get("config") or {}
    return (c.get("transfer") not in ("pageable", "resident") and c.get("lock_scope") not in ("submit", "none")
            and not (c.get("lock_scope") == "narrow" and c.get("prep", "cpu") != "cpu"))


def test_the_table_covers_every_committed_recording():
    keys = {_key(r) for r, _ in _CASES}
    assert {k.split("/")[0] if "/" in k else "main" for k in keys} >= {"main", "last-mile", "seed-regime"}  # no names: recordings come and go
    assert {k for k, _ in NOT_MEASURED} <= keys, "a listed recording is gone"
    assert {(_key(r), s) for r, s in _CASES} >= set(NOT_MEASURED)
    assert any(_after_fix(r, s) for r, s in _CASES)


@pytest.mark.parametrize(("rec", "scenario"), _CASES, ids=[f"{_key(r)}:{s}" for r, s in _CASES])
def test_recorded_scenario_gets_the_story_verdict(rec, scenario):
    d = _diagnosed(rec.log_path(scenario))
    want = _expected(rec, scenario)
    assert d.bottleneck == want, f"{_key(rec)}/{scenario}: {d.steps[-1].text}"
    assert d.bottleneck in dg.BOTTLENECKS and d.recommendation == dg.RECOMMENDATIONS[want]
    assert d.evidence and d.steps[-1].name == "verdict"
    if want in ("h2d_pageable", "prep_msm_barrier", "lock_scope") and d.predicted_gain is not None:
        assert d.predicted_gain["ratio"] > 0


@pytest.mark.parametrize(("rec", "scenario"), [c for c in _ALL if c not in _CASES], ids=lambda x: getattr(x, "name", x))
def test_recordings_without_a_story_verdict_still_get_one_of_the_vocabulary(rec, scenario):
    d = _diagnosed(rec.log_path(scenario))
    assert d.bottleneck in dg.BOTTLENECKS and d.steps[-1].name == "verdict"


#: every committed GPU recording with a scenario after the fix (the others, the seed regime's baselines and the last
#: mile's steps, get their story verdicts from their configuration, test_recorded_scenario_gets_the_story_verdict)
_GPU = [r for r in _recordings() if r.is_gpu and r.host_load_threads > 0 and any(_after_fix(r, s) for s in r.scenarios)]


def test_every_main_recording_has_a_next_limit_to_check():
    main = {_key(r) for r in _recordings() if r.is_gpu and r.host_load_threads > 0 and "pinned_pool" in r.scenarios}
    assert main and {_key(r) for r in _GPU} >= main


@pytest.mark.parametrize("rec", _GPU, ids=_key)
def test_conclusions_next_limit_is_diagnoses_verdict(rec):
    """Issue 24: on every committed GPU recording, the story's next limit after the fix (notebook 07's sentence,
    08's conclusions) is the verdict zkgpu diagnose gives the same scenario's log, by construction; the sentences
    name it (zkgpu.story.conclusions.LIMIT_NAMES), and say the CPU's prep_msm is the remaining limit only there."""
    src = _source(rec)
    for s in [s for s in rec.scenarios if rec.log_path(s) is not None and _after_fix(rec, s)]:
        want = _diagnosed(rec.log_path(s)).bottleneck
        assert conclusions.next_limit(src, s).bottleneck == conclusions.story_verdict(src, s) == want, s
        assert conclusions.LIMIT_NAMES[want] in conclusions.next_limit_sentence(src, s), s
    if {"baseline", "pinned_pool"} <= set(rec.scenarios):
        items = conclusions.conclusions(src)
        nums, text = conclusions.key_numbers(items), conclusions.finding(src, "next bottleneck")
        want = _diagnosed(rec.log_path("pinned_pool")).bottleneck
        assert nums["pinned_pool_next_limit"]["value"] == want
        assert f"the next limit is {conclusions.LIMIT_NAMES[want]}" in text
        assert ("is done, longer than" in text) == (want == "prep_msm_barrier") == ("waited inside the lock for the CPU's prep_msm"
                                                                                in conclusions.story_finding(items))


@pytest.mark.parametrize(("rec", "scenario"), [(r, s) for r, s in _CASES if _after_fix(r, s)], ids=lambda x: getattr(x, "name", x))
def test_measured_event_tables_back_the_next_limit(rec, scenario):
    """The rule reads the log; the recording's own event table (measured, not the log) agrees on whether the GPU waits
    for prep_msm: where the verdict is prep_msm_barrier the GPU idles at the barrier at least THRESHOLDS["barrier_idle"]
    of its window, and where the rule says otherwise, less (or the model finds nothing to gain from a faster prep_msm)."""
    d = conclusions.next_limit(_source(rec), scenario)
    if d.next_limit is None:  # decided before the rule (registered a, b, c: the per-partition registration reads as a copy)
        assert d.bottleneck in ("h2d_pageable", "host_side"), d.bottleneck
        return
    share = idle_causes(rec.events(scenario)).loc[IDLE_CAUSES[0][0], "share"]
    if d.bottleneck == "prep_msm_barrier":
        assert share >= dg.THRESHOLDS["barrier_idle"][0], share
    else:
        assert share < dg.THRESHOLDS["barrier_idle"][0] or d.next_limit.prep_gain < dg.THRESHOLDS["min_gain"][0], share


def _gains(prep: float | None, lock: float | None):
    asked = []

    def gain(change: str):
        asked.append(change)
        r = prep if change == "prep_msm_barrier" else lock
        return ({"ratio": r}, "") if r is not None else (None, "cannot be calibrated")

    return gain, asked


@pytest.mark.parametrize(("idle", "share", "workers", "prep", "lock", "want"), [
    (0.38, 0.71, 2, 1.42, None, "prep_msm_barrier"),  # a one-thread prep_msm: the GPU waits for it
    (0.38, 0.71, 2, None, None, "prep_msm_barrier"),  # the model cannot be calibrated: the wait decides
    (0.05, 0.47, 2, 1.01, 1.02, "gpu_bound"),  # the seed regime: little wait, nothing from either change
    (0.25, 0.60, 2, 1.02, 1.00, "gpu_bound"),  # a wait that does not set the pace
    (0.30, 0.20, 2, 1.50, 1.01, "gpu_bound"),  # prep_msm a small part of the cycle
    (0.05, 0.47, 2, 1.01, 1.20, "lock_scope"),
    (0.05, 0.47, 1, 1.01, None, "gpu_bound"),  # one worker: nothing waits for the lock
    (0.05, 0.47, 2, 1.01, None, "undetermined"),
])
def test_the_rule_after_the_copy(idle, share, workers, prep, lock, want):
    gain, asked = _gains(prep, lock)
    nl = limits.decide(barrier_idle=idle, prep_msm_ms=100.0, prep_share=share, workers=workers, contention=0.5, gain=gain)
    assert nl.bottleneck == want, nl.text
    assert asked[0] == "prep_msm_barrier" and (("lock_scope" in asked) == (want != "prep_msm_barrier" and workers > 1))
    assert (nl.barrier_idle, nl.prep_share, nl.workers) == (idle, share, workers)
    assert nl.prep_gain == pytest.approx(prep) if prep is not None else nl.prep_gain != nl.prep_gain
    text = limits.evidence_text(nl)
    assert f"{100 * idle:.1f}% of its window" in text and "at least 15%" in text
    assert ("with prep_msm 2× faster" in text) == (prep is not None) and (prep is None or f"{prep:.2f}×" in text)


def _synthetic_recording(tmp_path: Path, prepared, slow: str, seconds: float) -> Source:
    """A recording folder holding one pinned_pool scenario (coarse lock, gw = 2, one-thread prep) whose log is a CPU
    pipeline run with one phase made slow: the story reads its next limit from that log."""
    cfg = _cfg(partitions=6, fault_hook=_sleep_at(slow, seconds))
    (tmp_path / "logs").mkdir(parents=True)
    (tmp_path / "logs" / "pinned_pool.log").write_text("\n".join(run_pipeline(cfg, prepared=prepared).log_lines) + "\n")
    config = {"transfer": "pinned_pool", "lock_scope": "coarse", "gw": 2, "prep": "cpu", "partitions": 6}
    manifest = {"device": "cpu", "scenarios": {"pinned_pool": {"config": config, "log": "logs/pinned_pool.log"}}}
    return Source("recorded-cpu", Recording(tmp_path, manifest), "replay")


@pytest.mark.parametrize(("slow", "seconds", "want"), [("prep_msm", 0.3, "prep_msm_barrier"), ("ntt_msm_h", 0.05, "gpu_bound")])
def test_story_next_limit_on_synthetic_logs(tmp_path, prepared, slow, seconds, want):
    """After the fix, the story names prep_msm only where the log shows the GPU waiting for it: a slow prep_msm
    (the GPU idles at the barrier) against slow GPU phases (nothing to wait for but the GPU)."""
    src = _synthetic_recording(tmp_path, prepared, slow, seconds)
    d = conclusions.next_limit(src, "pinned_pool")
    assert d.bottleneck == want == conclusions.story_verdict(src, "pinned_pool"), d.steps[-1].text
    assert d.next_limit is not None and d.next_limit.bottleneck == want
    assert (d.next_limit.barrier_idle >= dg.THRESHOLDS["barrier_idle"][0]) == (want == "prep_msm_barrier")
    sentence = conclusions.next_limit_sentence(src, "pinned_pool")
    assert sentence.startswith(f"After the fix (pinned_pool, {tmp_path.name})") and conclusions.LIMIT_NAMES[want] in sentence
    assert ("the CPU's prep_msm (the GPU waits" in sentence) == (want == "prep_msm_barrier")
    assert conclusions.next_limit(src, "baseline") is None


@pytest.mark.parametrize("key", sorted(NOT_MEASURED), ids=lambda k: f"{k[0]}:{k[1]}")
def test_not_measured_stays_not_measured(key):
    """A "not measured" entry stays one only while its recording lacks the submission-scope run that would measure the
    change; diagnose's reading of it is its rule's (the model's gain from the submission scope below min_gain)."""
    rec = Recording.open(data_dir() / key[0])
    assert MEASURES_SUBMIT[key[1]] not in rec.scenarios, f"{key[0]} now measures the change: compare, and drop the entry"
    d = _diagnosed(rec.log_path(key[1]))
    assert d.bottleneck == NOT_MEASURED[key][0] and d.next_limit is not None
    assert d.next_limit.lock_gain < dg.THRESHOLDS["min_gain"][0], d.steps[-1].text


_MEASURED_SUBMIT = [(r, n, m) for r in _recordings() if r.is_gpu for n, m in MEASURES_SUBMIT.items()
                    if {n, m} <= set(r.scenarios) and r.log_path(n) is not None and r.log_path(m) is not None]


@pytest.mark.parametrize(("rec", "narrow", "submit"), _MEASURED_SUBMIT, ids=[_key(r) for r, _, _ in _MEASURED_SUBMIT])
def test_model_predicts_the_measured_submit_gain(rec, narrow, submit):
    """Where a recording measures the submission scope's gain (its submit scenario over the narrow one with the same
    bases, medians over repeats), the model calibrated on the narrow log alone puts it on the same side of min_gain,
    within the run-to-run spread issue 20 accepts (10%)."""
    tab = scenario_table(_source(rec), [narrow, submit])
    measured = float(tab.loc[submit, "partitions_per_min"] / tab.loc[narrow, "partitions_per_min"])
    d = _diagnosed(rec.log_path(narrow))
    predicted = d.next_limit.lock_gain
    assert (predicted >= dg.THRESHOLDS["min_gain"][0]) == (measured >= dg.THRESHOLDS["min_gain"][0]), (predicted, measured)
    assert abs(predicted / measured - 1) <= 0.10, (predicted, measured)


def test_seed_lines_alone_say_h2d_pageable_and_what_would_confirm_it():
    d = dg.diagnose_file(reference_path("seed_cuzk_timing.log"))
    assert (d.bottleneck, d.confidence) == ("h2d_pageable", "suspected")
    missing = " ".join(d.missing)
    for line in ("TIMELINE", "GPU_TIMING", "CUZK_NTT_H", "mutex_held_ms", "barrier_wait_ms", "nsys"):
        assert line in missing, line
    confirm = " ".join(d.to_confirm)
    assert "nsys" in confirm and "CUZK_NTT_H" in confirm and "pinned-pool" in confirm
    assert d.predicted_gain is None and "TIMELINE" in d.gain_note
    assert any("cut" in e for e in d.evidence)  # the excerpt's last line is cut; its record is left out
    j = d.to_json()
    assert json.loads(json.dumps(j))["bottleneck"] == "h2d_pageable"
    assert {"evidence", "recommendation", "predicted_gain", "numbers", "missing", "steps"} <= set(j)


# ------------------------------------------------------------------------------------------------
# synthetic logs of each failure mode, made by the pipeline on the CPU backend


def _cfg(**kw) -> PipelineConfig:
    base = dict(n=1 << 6, partitions=8, device="cpu", synth_workers=2, gw=2, timeout_s=20.0, b_g2_terms=4, transfer="pinned_pool")
    base.update(kw)
    return PipelineConfig(**base)


@pytest.fixture(scope="module")
def prepared():
    return prepare_backend(_cfg())


def _sleep_at(step: str, seconds: float):
    def hook(s, p, w):
        if s == step:
            time.sleep(seconds)

    return hook


def _diagnose_run(cfg: PipelineConfig, prepared, name: str) -> dg.Diagnosis:
    res = run_pipeline(cfg, prepared=prepared)
    return dg.diagnose(logs.parse_lines(res.log_lines), name=name)


def test_slow_prep_is_prep_msm_barrier(prepared):
    d = _diagnose_run(_cfg(partitions=6, fault_hook=_sleep_at("prep_msm", 0.3)), prepared, "slow_prep")
    assert d.bottleneck == "prep_msm_barrier", d.steps[-1].text
    assert d.predicted_gain is not None and d.predicted_gain["ratio"] > 1.05  # prep_msm 2x faster


def test_slow_host_side_step_is_host_side(prepared, monkeypatch):
    """A slow malloc_trim under the tracker lock (upstream's suspect, FIN_TIMING malloc_trim_ms)."""
    trim = pipeline_worker.malloc_trim

    def slow_trim():
        time.sleep(0.05)
        return trim()

    monkeypatch.setattr(pipeline_worker, "malloc_trim", slow_trim)
    d = _diagnose_run(_cfg(), prepared, "slow_trim")
    assert d.bottleneck == "host_side", d.steps[-1].text
    host = next(s for s in d.steps if s.name == "host")
    assert host.status == "decided" and d.numbers["host_share"]["value"] >= 0.05


def test_no_mutex_contention_is_gpu_bound(prepared):
    """One GPU worker whose GPU phases are slow: nothing waits for the lock or the barrier."""
    d = _diagnose_run(_cfg(gw=1, fault_hook=_sleep_at("ntt_msm_h", 0.05)), prepared, "gw1")
    assert d.bottleneck == "gpu_bound", d.steps[-1].text
    assert d.numbers["mutex_contention"]["value"] < 0.05


def test_contended_lock_over_slow_gpu_phases_is_still_gpu_bound(prepared):
    """Two workers queue for the lock, but the lock covers only the slow GPU phases: the model
    predicts nothing from a narrower scope."""
    d = _diagnose_run(_cfg(gw=2, fault_hook=_sleep_at("ntt_msm_h", 0.05)), prepared, "gw2")
    assert d.bottleneck == "gpu_bound", d.steps[-1].text


# ------------------------------------------------------------------------------------------------
# damaged and mixed logs

_RECORD = data_dir() / "nvidia-h200-20261129-record-2" / "logs"


def _lines(name: str) -> list[str]:
    return (_RECORD / f"{name}.log").read_text(encoding="utf-8").splitlines()


def _undetermined(lines: list[str], *reasons: str) -> dg.Diagnosis:
    d = dg.diagnose(logs.parse_lines(lines), name="damaged")
    assert d.bottleneck == "undetermined" and d.confidence == "none"
    for r in reasons:
        assert r in d.steps[0].text, (r, d.steps[0].text)
    return d


def test_log_cut_short_is_undetermined():
    lines = _lines("pinned_pool")
    _undetermined(lines[:60], "complete partition")


def test_record_cut_inside_the_log_is_undetermined():
    lines = _lines("pinned_pool")
    i = [k for k, line in enumerate(lines) if "tail_msm_ms" in line][5]
    lines[i] = lines[i][: lines[i].index("gpu_total_ms") + 3]
    _undetermined(lines, "cut or damaged", "truncated")


@pytest.mark.parametrize("where", ["middle", "last", "none"])
def test_diagnose_file_reads_cut_records_as_the_full_parse_does(tmp_path, where):
    """diagnose_file parses without one row per CUZK_TIMING line (timing_rows=False); the parse's own count of cut
    records before the last line (cut_before_last) stands in for those rows' truncated flags."""
    lines = _lines("pinned_pool")
    if where != "none":
        i = [k for k, line in enumerate(lines) if "tail_msm_ms" in line][5] if where == "middle" else len(lines) - 1
        lines[i] = lines[i][: max(lines[i].index("=") + 2, len(lines[i]) - 4)]
    f = tmp_path / "x.log"
    f.write_text("\n".join(lines) + ("" if where == "last" else "\n"))
    full = logs.parse_file(f)
    assert (full.cut_before_last == 0) == (dg._cut_lines(full) <= {full.n_lines})
    lean = logs.parse_file(f, timing_rows=False)
    assert len(lean.timing) == 0 and lean.summary() == full.summary() and lean.cut_before_last == full.cut_before_last
    a, b = dg.diagnose_file(f), dg.diagnose(full, name="x")
    assert (a.bottleneck, a.steps[0].text, a.steps[0].evidence) == (b.bottleneck, b.steps[0].text, b.steps[0].evidence)


def test_two_runs_in_one_log_are_undetermined():
    _undetermined(_lines("baseline") + _lines("pinned_pool"), "more than one engine run")


def test_two_circuit_sizes_are_undetermined(prepared):
    small = run_pipeline(_cfg(partitions=4), prepared=prepared).log_lines
    _undetermined(small + _lines("pinned_pool"), "circuit sizes")


def test_no_cuzk_timing_is_undetermined():
    _undetermined([line for line in _lines("pinned_pool") if not line.startswith("CUZK")], "no CUZK_TIMING")


def test_without_timeline_the_barrier_cannot_be_weighed():
    d = dg.diagnose(logs.parse_lines([line for line in _lines("pinned_pool") if not line.startswith("TIMELINE")]), name="no_tl")
    assert d.bottleneck == "undetermined" and "TIMELINE" in d.steps[-1].text
    assert any("TIMELINE" in m for m in d.missing)


# ------------------------------------------------------------------------------------------------
# scale


def synthetic_log(copies: int, name: str = "pinned_pool") -> list[str]:
    """``copies`` back-to-back repetitions of a recorded log as ONE run: TIMELINE times shifted by the
    log's span and partition numbers by its partition count each time."""
    base = _lines(name)
    span = max(float(m.group(1)) for line in base if (m := re.match(r"TIMELINE,([0-9.]+),", line))) + 1.0
    parts = 1 + max(int(p) for line in base for p in re.findall(r"partition=(\d+)", line))
    out: list[str] = []
    for k in range(copies):
        shift = k * parts
        for line in base:
            line = re.sub(r"partition=(\d+)", lambda m, s=shift: f"partition={int(m.group(1)) + s}", line)
            if line.startswith("TIMELINE,"):
                t, rest = line[9:].split(",", 1)
                line = f"TIMELINE,{float(t) + k * span:g},{rest}"
            out.append(line)
    return out


def test_diagnosis_time_grows_linearly():
    small, large = synthetic_log(8), synthetic_log(32)
    assert dg.diagnose(logs.parse_lines(small), name="s").bottleneck == "prep_msm_barrier"

    def best(lines: list[str]) -> float:
        times = []
        for _ in range(2):
            t = time.perf_counter()
            dg.diagnose(logs.parse_lines(lines), name="x")
            times.append(time.perf_counter() - t)
        return min(times)

    ratio = best(large) / best(small)
    assert ratio < 4 * 1.8, f"4x the lines took {ratio:.1f}x the time"


# ------------------------------------------------------------------------------------------------
# the command


def test_cli_json_and_report_folder(tmp_path):
    seed, base = str(reference_path("seed_cuzk_timing.log")), str(_RECORD / "baseline.log")
    r = CliRunner().invoke(main, ["diagnose", seed, base, "--json", "--no-progress"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [d["bottleneck"] for d in out] == ["h2d_pageable", "h2d_pageable"]
    folder = tmp_path / "diag"
    r = CliRunner().invoke(main, ["diagnose", base, "--out", str(folder), "--json"])
    assert r.exit_code == 0, r.output
    assert {p.name for p in folder.iterdir()} == {"diagnosis.md", "diagnosis.html", "diagnosis.json", "figures"}
    assert (folder / "figures" / "baseline.png").stat().st_size > 0
    assert "h2d_pageable" in (folder / "diagnosis.md").read_text() and "<h2>" in (folder / "diagnosis.html").read_text()
    r = CliRunner().invoke(main, ["diagnose", base, "--out", str(folder)])
    assert r.exit_code == 2 and "never reuses" in r.output and len(r.output.strip().splitlines()) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".diag")]  # no temporary folder left


@pytest.mark.parametrize("case", ["missing", "folder", "gzip", "nsys_two_logs", "nsys_not_sqlite"])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, case):
    base = str(_RECORD / "baseline.log")
    if case == "missing":
        args = [str(tmp_path / "nope.log")]
    elif case == "folder":
        args = [str(tmp_path)]
    elif case == "gzip":
        gz = tmp_path / "x.log"
        gz.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 20)
        args = [str(gz)]
    elif case == "nsys_two_logs":
        args = [base, base, "--nsys", str(tmp_path / "x.sqlite")]
    else:
        bad = tmp_path / "x.sqlite"
        bad.write_text("not a database")
        args = [base, "--nsys", str(bad)]
    r = CliRunner().invoke(main, ["diagnose", *args])
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_cli_same_stem_twice_gets_two_names(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for d in (a, b):
        (d / "run.log").write_text((_RECORD / "pinned_pool.log").read_text())
    r = CliRunner().invoke(main, ["diagnose", str(a / "run.log"), str(b / "run.log"), "--json"])
    assert r.exit_code == 0, r.output
    assert [d["log"] for d in json.loads(r.output)] == ["1-run", "2-run"]


def test_report_folder_path_is_checked_before_work(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = CliRunner().invoke(main, ["diagnose", str(_RECORD / "baseline.log"), "--out", str(f / "sub")])
    assert r.exit_code == 2 and "is a file" in r.output
    assert Path(f).read_text() == "x"
