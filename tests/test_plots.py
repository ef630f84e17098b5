"""Plots return figures and never show them (zkgpu.plots)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from zkgpu.events import PHASES  # noqa: E402
from zkgpu.logs import parse_file, to_events  # noqa: E402
from zkgpu.plots import PHASE_COLORS, bandwidth_curves, phase_breakdown, phase_color, timeline, utilization_bars  # noqa: E402

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
    assert set(PHASES) <= set(PHASE_COLORS)
    assert len({PHASE_COLORS[p] for p in PHASES}) == len(PHASES)  # distinct per phase
    assert phase_color("ntt_msm_h") == PHASE_COLORS["ntt_msm_h"] and phase_color("no-such-phase").startswith("#")


def test_timeline(events):
    fig, ax = timeline(events, run="fixture")
    assert isinstance(fig, Figure) and isinstance(ax, Axes)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["worker 0", "worker 1", "CPU / unassigned"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ntt_msm_h" in legend and "mutex_wait" in legend and "prove" in legend
    # colour of the ntt_msm_h bars is the fixed one
    cols = {tuple(c.get_facecolor()[0]) for c in ax.collections}
    assert tuple(matplotlib.colors.to_rgba(PHASE_COLORS["ntt_msm_h"], 0.9)) in cols
    with pytest.raises(ValueError, match="several runs"):
        timeline(events)
    with pytest.raises(ValueError, match="not in the table"):
        timeline(events, run="nope")


def test_timeline_seed_lanes(events):
    _, ax = timeline(events, run="seed", phases=["prep_msm", "ntt_msm_h", "tail_msm"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["gpu 0", "CPU / unassigned"]


def test_phase_breakdown(events):
    fig, ax = phase_breakdown(events, by="run")
    assert isinstance(fig, Figure)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fixture", "seed"]
    # seed: mean ntt_msm_h per partition drawn = (2825+2895+2699+2958)/4
    heights = {(round(p.get_x() + p.get_width() / 2), p.get_facecolor()): p.get_height() for p in ax.patches}
    want = (2825 + 2895 + 2699 + 2958) / 4
    assert any(abs(h - want) < 1e-6 for h in heights.values())
    with pytest.raises(ValueError):
        phase_breakdown(events, by="nope")


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
    fig, ax = utilization_bars(events, reference={"cuzk Phase 9 (gw=1)": (0.901, 0.463)})
    assert isinstance(fig, Figure)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fixture", "seed", "cuzk Phase 9 (gw=1)"]
    heights = sorted(round(p.get_height(), 1) for p in ax.patches)
    assert 90.1 in heights and 46.3 in heights
    fig2, ax2 = plt.subplots()
    f, a = utilization_bars(pd.DataFrame({"run": ["x"], "timeline": [0.5], "kernel": [0.25]}), ax=ax2)
    assert f is fig2 and a is ax2 and len(a.patches) == 2


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
