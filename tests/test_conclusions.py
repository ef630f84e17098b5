"""zkgpu.story.conclusions: the findings of notebook 08, computed from the recording."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from zkgpu.analysis import metrics, replay
from zkgpu.analysis.keynumbers import UNITS
from zkgpu.app import live
from zkgpu.story import bottleneck, conclusions


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("zk_cache")))  # without a recording in data/, the CPU stand-in goes here
    yield live.open_source("replay")
    mp.undo()


def test_every_step_in_story_order_with_its_notebook_and_numbers(src):
    items = conclusions.conclusions(src)
    steps = [c.step for c in items]
    assert steps[0] == "symptom" and steps[-1] == "next bottleneck"
    assert [c.notebook for c in items] == sorted(c.notebook for c in items)  # story order = notebook order
    for c in items:
        assert c.text.endswith(".") and c.numbers, c.step
        for k, v in c.numbers.items():
            assert v["unit"] in UNITS and v["label"], k
    md = conclusions.markdown(items)
    assert md.startswith("## Conclusions") and md.count("](") == len(items)
    assert conclusions.key_numbers(items).keys() >= {"baseline_compute_util", "pinned_pool_per_min"}


def test_numbers_are_the_metrics_of_the_recording(src):
    nums = conclusions.key_numbers(conclusions.conclusions(src))
    tab = replay.scenario_table(src)  # medians over each scenario's runs
    assert nums["baseline_compute_util"]["value"] == pytest.approx(tab.loc["baseline", "compute_util"])
    assert nums["baseline_timeline_util"]["value"] == pytest.approx(tab.loc["baseline", "timeline_util"])
    assert nums["pinned_pool_per_min"]["value"] == pytest.approx(tab.loc["pinned_pool", "partitions_per_min"])
    if len(src.runs("baseline")) == 1:  # one run: the run's own metrics
        ev = src.events("baseline")
        assert nums["baseline_compute_util"]["value"] == pytest.approx(float(metrics.compute_utilization(ev)["utilization"].iloc[0]))
    assert conclusions.published_utilization() == {"timeline_util": 0.901, "kernel_util": 0.463}
    assert conclusions.finding(src, "symptom").startswith("In the baseline") and "**" not in conclusions.finding(src, "symptom")
    with pytest.raises(ValueError, match="step must be one of"):
        conclusions.finding(src, "nope")


@pytest.mark.parametrize("keep", [("baseline",), ("baseline", "pinned_pool"), ("baseline", "registered", "pinned_pool")])
def test_a_live_notebook_that_recorded_only_some_scenarios(src, keep):
    """A live notebook records only its scenarios: the steps it can support are there, the rest left out."""
    m = dict(src.recording.manifest)
    m["scenarios"] = {k: v for k, v in m["scenarios"].items() if k in keep}
    part = replay.Source(src.kind, replay.Recording(src.recording.path, m), src.mode)
    steps = [c.step for c in conclusions.conclusions(part)]
    assert steps[0] == "symptom"
    assert ("fix" in steps) == ("pinned_pool" in keep) and ("next bottleneck" in steps) == ("pinned_pool" in keep)
    assert conclusions.finding(part, "symptom")


_SHARE = r"(\d+\.\d)%(?: of it)? \((\d+\.\d) of (\d+\.\d) ms"


def test_each_printed_share_is_the_ratio_of_the_numbers_printed_beside_it(src):
    """"58.0 % (117.0 of 201.6 ms)": the share equals numerator / denominator as printed (review 1, point 1)."""


    found = 0
    for c in conclusions.conclusions(src):
        for pct, a, b in re.findall(_SHARE, c.text.replace("**", "")):
            found += 1
            assert 100 * float(a) / float(b) == pytest.approx(float(pct), abs=0.1), (c.step, pct, a, b)
    assert found >= 2  # the mutex's two; the H2D shares are the one definition, named as such (the next test)


def test_each_share_key_number_is_the_one_h2d_share(src):
    """H2D share is defined once: Σ exposed H2D / Σ ntt_msm_h per run (replay.scenario_table), the median over runs."""
    nums = conclusions.key_numbers(conclusions.conclusions(src))
    tab = replay.scenario_table(src, ["baseline", "pinned_pool"])
    for name in ("baseline", "pinned_pool"):
        assert nums[f"{name}_h2d_share"]["value"] == pytest.approx(tab.loc[name, "h2d_share"])
    assert "mean" in nums["baseline_ntt_msm_h_mean_ms"]["label"] and "median" in nums["pinned_pool_prep_msm_ms"]["label"]
    # the sentences print that share, by that name, and no other ratio of exposed H2D to ntt_msm_h
    for step, names in (("smoking gun", ("baseline",)), ("fix", ("baseline", "pinned_pool"))):
        text = conclusions.finding(src, step).replace("**", "")
        assert conclusions.H2D_SHARE_NOTE in text, step
        shown = [float(p) for p in re.findall(r"(\d+\.\d)% (?:of it|to|of ntt_msm_h)", text.split(conclusions.H2D_SHARE_NOTE)[0].split("What holds")[-1])]
        assert shown == [round(100 * tab.loc[n, "h2d_share"], 1) for n in names], (step, shown)


def test_the_smoking_gun_says_whether_the_seeds_test_holds_on_every_run(src):
    from zkgpu.story import seed

    ratios = [seed.smoking_gun_ratio(src.events("baseline", k)) for k in range(len(src.runs("baseline")))]
    text = conclusions.finding(src, "smoking gun")
    if min(ratios) > 1:
        assert "the test reproduces" in text
    elif max(ratios) > 1:
        assert "does not hold in every run" in text
    else:
        assert "does not reproduce" in text
    assert f"{pd.Series(ratios).median():.2f}" in text and "What holds" in text


def test_the_next_bottleneck_names_the_limit_the_pools_log_shows_and_the_bound_apart_from_the_scenario(src):
    """What limits the pipeline after the fix is read from the pool's log by zkgpu diagnose's rule (issue 24), never
    assumed: the sentence names that verdict and its evidence, and a faster prep_msm as the next step only where the GPU
    waits for prep_msm."""
    from zkgpu.story import diagnose as dg

    text = conclusions.finding(src, "next bottleneck")
    nums = conclusions.key_numbers(conclusions.conclusions(src))
    want = dg.diagnose_file(src.log_path("pinned_pool")).bottleneck
    assert nums["pinned_pool_next_limit"]["value"] == want == conclusions.next_limit(src).bottleneck
    assert f"the next limit is {conclusions.LIMIT_NAMES[want]}" in text and "next step" in text
    assert ("the next step is a faster prep_msm" in text) == (want == "prep_msm_barrier")
    assert "zkgpu diagnose's rule on the pool's log" in text and "of its window at the barrier" in text
    if src.has("compute_only"):
        assert "not the measured compute_only scenario" in text
    assert nums["model_prep_2x_gain"]["value"] >= 1.0
    assert nums["pinned_pool_barrier_idle"]["value"] == pytest.approx(conclusions.next_limit(src).next_limit.barrier_idle)


def test_compute_utilization_is_not_read_as_a_ranking(src):
    tab = replay.scenario_table(src)
    text = conclusions.finding(src, "fix")
    if src.has("registered") and tab.loc["registered", "compute_util"] > tab.loc["pinned_pool", "compute_util"]:
        assert "does not rank configurations" in text and "GPU phase ms per partition" in text


def test_the_fix_finding_quotes_only_the_scenarios_notebook_06_shows(src):
    """Notebook 06 prints this sentence as its finding and shows baseline, registered and pinned_pool only: no other
    scenario (compute_only is 07's) and no bound (06 draws none) may appear in it."""
    text = conclusions.finding(src, "fix")
    others = set(src.scenarios) - set(conclusions.FIX_SCENARIOS)
    assert text and not [s for s in others if f"{s} " in text or f"{s}," in text or f"{s})" in text]
    assert "bound" not in text


def test_the_two_bounds_have_two_names(src):
    """The investigation's bound (the model's GPU phases) and 07b's (measured kernel time) never share a name."""
    assert conclusions.GPU_PHASE_BOUND[0] != conclusions.KERNEL_BOUND[0]
    items = conclusions.conclusions(src)
    nxt = next(c for c in items if c.step == "next bottleneck")
    assert conclusions.GPU_PHASE_BOUND[0] in nxt.text and conclusions.KERNEL_BOUND[0] not in nxt.text
    assert nxt.numbers["compute_bound_per_min"]["label"].startswith(conclusions.GPU_PHASE_BOUND[0])


def test_baseline_proportions_are_the_split_of_each_last_mile_baseline():
    tab = conclusions.baseline_proportions()
    recs = [r for r in bottleneck.last_mile_recordings() if "baseline" in r.scenarios]
    assert list(tab.index) == [replay.shown_path(r.path) for r in reversed(recs)]  # oldest first, by folder (two may share a name)
    if tab.empty:
        pytest.skip("no last-mile recording with a baseline")
    newest = recs[0]
    split = metrics.ntt_msm_h_split(newest.events("baseline")).loc["baseline"]
    row = tab.loc[replay.shown_path(newest.path)]
    src = replay.Source("recorded-gpu", newest, "replay")
    assert row["h2d_share"] == pytest.approx(replay.scenario_table(src, ["baseline"]).loc["baseline", "h2d_share"])  # the one H2D share
    assert row["ntt_msm_h"] == pytest.approx(row["h2d"] + row["ntt"] + row["h_msm"])
    assert row["h2d"] == pytest.approx(split["h2d"])
    text = conclusions.baseline_proportions_text(tab)
    assert (text == "") == (len(tab) < 2)
    if text:
        assert f"{tab['h2d_share'].iloc[-1]:.1%}" in text and tab.index[-1] in text


def test_baseline_proportions_without_recordings(tmp_path):
    tab = conclusions.baseline_proportions(tmp_path)
    assert tab.empty and "h2d_share" in tab.columns and conclusions.baseline_proportions_text(tab) == ""
