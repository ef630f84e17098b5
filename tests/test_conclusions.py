"""zkgpu.conclusions: the findings of notebook 08, computed from the recording."""

from __future__ import annotations

import pytest

from zkgpu import conclusions, metrics, replay
from zkgpu.replay import UNITS


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("ZKGPU_CACHE", str(tmp_path_factory.mktemp("zk_cache")))  # without a recording in data/, the CPU stand-in goes here
    yield replay.open_source("replay")
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
    ev = src.events("baseline")
    assert nums["baseline_compute_util"]["value"] == pytest.approx(float(metrics.compute_utilization(ev)["utilization"].iloc[0]))
    assert nums["baseline_timeline_util"]["value"] == pytest.approx(float(metrics.timeline_utilization(ev)["utilization"].iloc[0]))
    assert nums["pinned_pool_per_min"]["value"] == pytest.approx(float(metrics.throughput(src.events("pinned_pool"))["partitions_per_min"].iloc[0]))
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
