"""Plots return figures and never show them (zkgpu.plots)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from zkgpu import metrics, plots
from zkgpu.events import PHASES
from zkgpu.logs import parse_file, to_events
from zkgpu.plots import PHASE_COLORS, bandwidth_curves, caption, phase_color, timeline, utilization_bars

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def events():
    a = to_events(parse_file(ROOT / "tests" / "fixtures" / "cuzk_mixed.log"), run="fixture")
    b = to_events(parse_file(ROOT / "data" / "reference" / "seed_cuzk_timing.log"), run="seed")
    return pd.concat([a, b], ignore_index=True)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_fixed_colours():
    assert set(PHASES) <= set(PHASE_COLORS) and set(metrics.GPU_PATH) <= set(PHASE_COLORS)
    assert len({PHASE_COLORS[p] for p in PHASES}) == len(PHASES)  # distinct per phase
    path = [PHASE_COLORS[c] for c in metrics.GPU_PATH]
    assert len(set(path)) == len(path)  # and per category of the GPU path
    assert phase_color("ntt_msm_h") == PHASE_COLORS["ntt_msm_h"] and phase_color("no-such-phase").startswith("#")


def test_timeline(events):
    fig, ax = timeline(events, run="fixture")
    assert isinstance(fig, Figure) and isinstance(ax, Axes)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[:2] == ["worker 0", "worker 1"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ntt_msm_h" in legend and "mutex_wait" in legend and "prove" in legend
    # the legend lists exactly the phases drawn, each in its fixed colour
    drawn = {tuple(c.get_facecolor()[0]) for c in ax.collections}
    for p in legend:
        assert tuple(matplotlib.colors.to_rgba(PHASE_COLORS[p])) in drawn, p
    assert len(drawn) == len(legend)
    assert "intervals" in caption(fig)
    with pytest.raises(ValueError, match="several runs"):
        timeline(events)
    with pytest.raises(ValueError, match="not in the table"):
        timeline(events, run="nope")


def _run(rows):
    ms = 1_000_000
    return pd.DataFrame([{"run": "r", "worker": w, "gpu": 0, "partition": p, "phase": ph, "start_ns": a * ms, "end_ns": b * ms,
                          "gpu_ms": float("nan"), "bytes": None, "detail": d} for w, p, ph, a, b, d in rows])


def test_sub_pixel_intervals_are_widened_and_counted():
    # a 10 s run with 0.001 s intervals: far narrower than a pixel at 11 inches
    rows = [(0, 0, "mutex_wait", 0, 10_000, ""), (0, 0, "barrier_wait", 5_000, 5_001, ""), (0, 1, "barrier_wait", 7_000, 7_001, "")]
    fig, ax = timeline(_run(rows))
    bars = [b for c in ax.collections for b in c.get_paths()]
    xs = [p.vertices[:, 0] for p in bars]
    narrow = min(float(x.max() - x.min()) for x in xs)
    px = ax.get_position().width * fig.get_figwidth() * fig.dpi / 10.0  # pixels per second
    assert narrow * px >= plots.MIN_PX * 0.99
    assert "2 of 3 intervals are narrower than" in caption(fig) and "barrier_wait 2" in caption(fig)


def test_timelines_share_one_axis(events):
    a = _run([(0, 0, "mutex_wait", 0, 1_000, "")])
    b = _run([(0, 0, "mutex_wait", 0, 4_000, "")])
    fig, axes = plots.timelines({"short": a, "long": b})
    assert axes[0].get_xlim() == axes[1].get_xlim() and axes[0].get_xlim()[1] >= 4.0
    assert "one time axis" in caption(fig)
    with pytest.raises(ValueError, match="no runs"):
        plots.timelines({})


def test_timeline_seed_lanes(events):
    _, ax = timeline(events, run="seed", phases=["prep_msm", "ntt_msm_h", "tail_msm"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["gpu 0", "CPU / unassigned"]


def test_critical_path_bars_add_up_to_wall_time_per_partition():
    # one GPU, two partitions; lock held 0-60 and 70-100 ms of a 0-110 ms run
    rows = [(0, 0, "synthesize", 0, 5, ""), (0, 0, "mutex_held", 0, 60, ""), (0, 0, "ntt_msm_h", 0, 40, ""),
            (0, 0, "h2d", 0, 20, "stage=ntt_msm_h"), (0, 0, "h_msm", 30, 40, ""), (0, 0, "barrier_wait", 40, 50, ""),
            (0, 0, "batch_add", 50, 55, ""), (0, 0, "tail_msm", 55, 60, ""), (0, 0, "prove", 0, 60, ""),
            (1, 1, "mutex_held", 70, 100, ""), (1, 1, "ntt_msm_h", 70, 90, ""), (1, 1, "batch_add", 90, 95, ""),
            (1, 1, "tail_msm", 95, 100, ""), (1, 1, "prove", 70, 110, "")]
    t = metrics.critical_path(_run(rows))
    r = t.loc["r"]
    assert r["ms_per_partition"] == pytest.approx(110 / 2)
    assert sum(r[c] for c in metrics.GPU_PATH) == pytest.approx(110 / 2)
    assert r["lock_free"] == pytest.approx(20 / 2) and r["h2d"] == pytest.approx(20 / 2) and r["h_msm"] == pytest.approx(10 / 2)
    assert r["ntt"] == pytest.approx((60 - 20 - 10) / 2) and r["barrier_wait"] == pytest.approx(10 / 2)
    assert r["lock_other"] == pytest.approx(0.0)
    fig, ax = plots.critical_path(t)
    assert "disjoint" in caption(fig)
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {plots.bars.PATH_LABELS[c] for c in metrics.GPU_PATH if r[c] > 0}
    s = metrics.ntt_msm_h_split(_run(rows)).loc["r"]
    assert s["ntt_msm_h"] == pytest.approx(60 / 2) and s["h2d"] == pytest.approx(10)


def test_bandwidth_curves():
    df = pd.DataFrame(
        {
            "path": ["pageable", "pageable", "pinned", "pinned", "pinned", "pinned"],
            "size_bytes": [1 << 20, 1 << 24, 1 << 20, 1 << 24, 1 << 20, 1 << 24],
            "fresh_buffer": [False, False, False, False, True, True],
            "gbps": [3.0, 4.0, 20.0, 50.0, 2.0, 9.0],
        }
    )
    fig, ax = bandwidth_curves(df)
    assert ax.get_xscale() == "log"
    lines = {line.get_label(): line.get_linestyle() for line in ax.get_lines() if line.get_xdata().size}
    assert lines == {"pageable (reused)": "-", "pinned (reused)": "-", "pinned (fresh)": "--"}
    with pytest.raises(ValueError, match="lacks columns"):
        bandwidth_curves(df.drop(columns=["gbps"]))


def test_utilization_bars(events):
    fig, ax = utilization_bars(events, reference={"cuzk Phase 9 (gw=1)": {"timeline_util": 0.901, "kernel_util": 0.463}})
    assert isinstance(fig, Figure)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fixture", "seed", "cuzk Phase 9 (gw=1)"]
    heights = sorted(round(p.get_height(), 1) for p in ax.patches)
    assert 90.1 in heights and 46.3 in heights
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [v[0] for v in metrics.UTILIZATIONS.values()]
    fig2, ax2 = plt.subplots()
    f, a = utilization_bars(pd.DataFrame({"run": ["x"], "compute_util": [0.2], "kernel_util": [0.5], "timeline_util": [0.25]}), ax=ax2)
    assert f is fig2 and a is ax2 and len(a.patches) == 3
    assert "x: compute 20.0%" in caption(f)


def test_load_curves_one_line_per_path_and_errors():
    from zkgpu.plots import load_curves

    rows = [{"load_threads": t, "path": p, "gbps": g, "load_gbps": lg, "rep": r}
            for t, lg in ((0, 0.0), (4, 40.0), (8, 60.0)) for p, g in (("pageable", 6.0 - t / 4), ("pinned_raw", 55.0 - t)) for r in range(2)]
    fig, ax = load_curves(pd.DataFrame(rows))
    assert isinstance(fig, Figure) and len(ax.get_lines()) == 2
    assert list(ax.get_lines()[0].get_xdata()) == [0.0, 40.0, 60.0]
    plt.close(fig)
    with pytest.raises(ValueError, match="lacks columns"):
        load_curves(pd.DataFrame({"path": ["x"]}))
    with pytest.raises(ValueError, match="empty load frame"):
        load_curves(pd.DataFrame(columns=["load_threads", "path", "gbps", "load_gbps"]))
