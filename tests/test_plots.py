"""Plots return figures and never show them (zkgpu.analysis.plots)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from zkgpu.analysis import metrics, plots
from zkgpu.analysis.logs import parse_file, to_events
from zkgpu.analysis.plots import PHASE_COLORS, bandwidth_curves, caption, phase_color, timeline, utilization_bars
from zkgpu.core.events import PHASES

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
    # rows picked by names the table does not hold (09 reindexed runs "baseline.r1" by "baseline"): an error, not an empty figure
    with pytest.raises(ValueError, match="nothing to draw: every row is empty"):
        plots.critical_path(t.reindex(["baseline"]))
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
    from zkgpu.analysis.plots import load_curves

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


def _narrow_run():
    """One partition under a narrow lock: ntt_msm_h 0-30 ms (10 ms exposed copy, H MSM 20-30), both workers at the
    barrier 30-60 ms with the lock free, batch_add + tail_msm 60-80 ms, the finalizer until 100 ms."""
    return _run([(0, 0, "prove", 0, 80, ""), (0, 0, "mutex_held", 0, 30, ""), (0, 0, "ntt_msm_h", 0, 30, ""),
                 (0, 0, "h2d", 0, 10, "stage=ntt_msm_h,exposed_ms=10"), (0, 0, "h_msm", 20, 30, ""),
                 (0, 0, "barrier_wait", 30, 60, ""), (1, 1, "barrier_wait", 35, 60, ""), (0, 0, "mutex_held", 60, 80, ""),
                 (0, 0, "batch_add", 60, 70, ""), (0, 0, "tail_msm", 70, 80, ""), (0, 0, "finalize", 80, 100, "")])


def test_the_gpus_time_names_its_idle_time_as_the_gpu_window_does():
    """gpu_time_split: the GPU's parts, its idle time under idle_causes' names and the time outside the window add up
    to the wall time per partition; the figures of the GPU's time and of the GPU window use one name and one colour."""
    from zkgpu.analysis import gpu_time

    ev = _narrow_run()
    t = gpu_time.gpu_time_split(ev)
    r = t.loc["r"]
    parts = [*gpu_time.BUSY_PARTS, *gpu_time.IDLE_PARTS]
    assert list(t.columns[: len(parts)]) == parts
    assert r[parts].sum() == pytest.approx(r["ms_per_partition"]) and r["ms_per_partition"] == pytest.approx(100.0)
    assert {k: r[k] for k in gpu_time.BUSY_PARTS} == pytest.approx({"h2d": 10, "ntt": 10, "h_msm": 10, "batch_add": 10, "tail_msm": 10})
    barrier = gpu_time.IDLE_CAUSES[0][0]
    assert r[barrier] == pytest.approx(30.0) and r[gpu_time.OUTSIDE_WINDOW] == pytest.approx(20.0)
    assert r[barrier] == pytest.approx(gpu_time.idle_causes(ev).loc[barrier, "ms"])  # the same function's figure
    fig, ax = plots.critical_path(t)
    names = {x.get_text() for x in ax.get_legend().get_texts()}
    assert barrier in names and "no worker holds the mutex" not in names
    pink = [p for p in ax.patches if matplotlib.colors.to_hex(p.get_facecolor()) == phase_color("barrier_wait")]
    assert len(pink) == 1 and pink[0].get_width() == pytest.approx(30.0)
    share = gpu_time.idle_causes(ev)["share"].to_frame().T.rename(index={"share": "r"})
    fig2, ax2 = plots.gpu_window(share, gpu_time.CAUSE_PHASES)
    assert barrier in {x.get_text() for x in ax2.get_legend().get_texts()}
    assert "barrier_wait (prep_msm)" in caption(fig) or barrier in caption(fig)


def test_summary_throughput_labels_are_never_crossed_by_the_bound():
    """(b) of the one-page summary: the bound's dashed line runs behind the bars, and each label is inside its bar
    or on a white ground, so that the line never runs through a label; every scenario has one row in every panel."""
    idx = ["baseline", "a_very_long_scenario_name_of_the_last_mile_gw3", "near_the_bound", "short"]
    ppm = [268.0, 1133.0, 1150.0, 20.0]
    tab = pd.DataFrame({"partitions_per_min": ppm, "compute_util": 0.5, "kernel_util": 0.6, "timeline_util": 0.9, "h2d_gbps": 3.0}, index=idx)
    path = pd.DataFrame({c: 0.0 for c in metrics.GPU_PATH}, index=idx).assign(ntt=[60000 / p for p in ppm])
    path["ms_per_partition"] = path["ntt"]
    split = pd.DataFrame({"h2d": 1.0, "ntt": 10.0, "h_msm": 20.0, "ntt_msm_h": 31.0}, index=idx)
    fig, axes = plots.summary(tab, path, split, bound=1214.0, bound_label=("compute-only bound", "60 000 / kernel ms"))
    fig.canvas.draw()
    ax = axes[1]
    line = next(ln for ln in ax.get_lines() if ln.get_linestyle() == "--")
    assert line.get_zorder() < min(p.get_zorder() for p in ax.patches)
    x_line = ax.transData.transform((1214.0, 0))[0]
    for t in ax.texts:
        box = t.get_window_extent()
        crossed = box.x0 <= x_line <= box.x1
        assert not crossed or t.get_bbox_patch() is not None, t.get_text()
    for a in (axes[0], axes[2]):  # the names once, on the left panels, one row each
        assert [x.get_text() for x in a.get_yticklabels()][: len(idx)] == idx
    assert all(x.get_text() == "" for a in (axes[1], axes[3]) for x in a.get_yticklabels())
    assert "compute-only bound (1214/min, dashed: 60 000 / kernel ms)" in caption(fig)


def test_sppark_parity_is_named_on_the_axis_not_beside_the_points():
    t = pd.DataFrame({"2^22": [1.02, 0.65], "2^24": [0.93, 0.78]}, index=["NTT forward", "MSM uniform"])
    fig, ax = plots.sppark_ratios(t)
    fig.canvas.draw()
    assert not ax.texts  # no label in the plotting area that could be read as a point's
    ticks = {round(float(v), 6): lab.get_text() for v, lab in zip(ax.get_xticks(), ax.get_xticklabels(), strict=True)}
    assert ticks[1.0] == plots.curves.PARITY_TICK and plots.curves.PARITY_TICK not in {ticks[v] for v in ticks if v != 1.0}


def test_utilization_colours_are_no_phases_or_paths():
    """A utilization bar beside the GPU's time per partition must not read as a phase: its colour is none of theirs
    nor close to one (the TIMELINE bar had prove's exact colour, compute utilization nearly H MSM's)."""
    from matplotlib.colors import to_rgb

    others = {*PHASE_COLORS.values(), *(c for c, _ in plots.PATH_STYLES.values()), *(s["color"] for s in plots.SERIES_STYLE.values())}

    def dist(a, b):
        return sum((255 * (x - y)) ** 2 for x, y in zip(to_rgb(a), to_rgb(b), strict=True)) ** 0.5

    for m, c in plots.METRIC_COLORS.items():
        assert min(dist(c, o) for o in others) > 15, m
    assert min(dist(plots.METRIC_COLORS["compute_util"], o) for o in others) > 60  # the headline: far from every phase


def test_staircase_whiskers_from_the_repeats_and_says_which_bar_is_one_run():
    import matplotlib.pyplot as plt
    import pandas as pd

    from zkgpu.analysis import plots

    t = pd.DataFrame({"partitions_per_min": [268.0, 293.0, 1150.0], "compute_util": [0.33, 0.35, 0.95]}, index=["baseline", "pinned_narrow", "submit"])
    fig, ax = plots.staircase(t)
    assert "Every bar is one run: no whisker" in plots.caption(fig) and not ax.containers[1:]  # bars only, no error bars
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["partitions/min (median run)", "compute_util (right axis)"]
    plt.close(fig)
    t["partitions_per_min_min"], t["partitions_per_min_max"] = [260.0, float("nan"), 900.0], [270.0, float("nan"), 1160.0]
    fig, ax = plots.staircase(t)
    cap = plots.caption(fig)
    assert "Whiskers: min–max over the recording's repeats" in cap and "One run, no whisker: pinned_narrow." in cap
    assert "min–max over the repeats" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)
    with pytest.raises(ValueError, match="compute_util"):
        plots.staircase(t.drop(columns="compute_util"))


def test_stacked_legend_lists_every_colour_drawn_however_thin():
    """A category under 1% of the longest bar is still drawn, so the legend names it (issue 21: the story figure's red segments)."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from zkgpu.analysis import plots
    from zkgpu.analysis.metrics import GPU_PATH

    t = pd.DataFrame([{c: 0.0 for c in GPU_PATH} | {"h2d": 100.0, "ntt": 50.0, "lock_other": 0.2}], index=["baseline"])
    t["partitions"], t["ms_per_partition"] = 16, 150.2
    fig, ax = plots.critical_path(t)
    colours = {tuple(round(x, 3) for x in p.get_facecolor()) for p in ax.patches if p.get_width() > 0}
    legend = {tuple(round(x, 3) for x in h.get_facecolor()) for h in ax.get_legend().legend_handles}
    assert colours <= legend, "a colour drawn is missing from the legend"
    plt.close(fig)


def test_h2d_path_colours_are_told_apart():
    """05's bandwidth curves drew three browns and golds side by side (issue 21): every two paths now differ clearly."""
    from itertools import combinations

    from matplotlib.colors import to_rgb

    cols = {p: to_rgb(c) for p, (c, _) in plots.PATH_STYLES.items()}
    for (a, ca), (b, cb) in combinations(cols.items(), 2):
        assert sum((255 * (x - y)) ** 2 for x, y in zip(ca, cb, strict=True)) ** 0.5 > 80, (a, b)


def test_scenario_bars_draw_the_runs_range():
    """Issue 20: throughput and compute-utilization bars of a scenario table with repeats carry whiskers from
    the runs' min to max (``<column>_min`` / ``_max``), and say so; one run per row draws none."""
    import matplotlib.pyplot as plt
    import pandas as pd
    from matplotlib.collections import LineCollection

    from zkgpu.analysis import plots
    from zkgpu.analysis.plots.bars import SPREAD_NOTE

    t = pd.DataFrame({"partitions_per_min": [350.0, 830.0], "compute_util": [0.41, 0.80], "kernel_util": [0.6, 0.9],
                      "timeline_util": [0.97, 0.99]}, index=["baseline", "pinned_pool"])
    for draw in (plots.throughput_bars, plots.utilization_bars):
        fig, ax = draw(t)
        assert SPREAD_NOTE.strip()[:9] not in plots.caption(fig) and not any(isinstance(c, LineCollection) for c in ax.collections)
        plt.close(fig)
    t["partitions_per_min_min"], t["partitions_per_min_max"] = [330.0, 800.0], [380.0, 840.0]
    t["compute_util_min"], t["compute_util_max"] = [0.39, 0.79], [0.44, 0.82]
    for draw in (plots.throughput_bars, plots.utilization_bars):
        fig, ax = draw(t)
        segs = [s for c in ax.collections if isinstance(c, LineCollection) for s in c.get_segments()]
        assert "Whiskers" in plots.caption(fig) and len(segs) == 2, draw.__name__
        ys = sorted(round(float(y), 1) for s in segs for y in s[:, 1])
        assert ys == ([330.0, 380.0, 800.0, 840.0] if draw is plots.throughput_bars else [39.0, 44.0, 79.0, 82.0])
        plt.close(fig)


def test_bar_end_labels_stay_inside_the_axes_beside_long_row_names():
    """The landing page's story figure: "189 ms = 317 partitions/min" ran into the legend beside long step names."""
    names = ["baseline", "narrow_prep_gpu_h2d_pre_lock_msm_precomp_gw3", "submit_prep_gpu_msm_precomp"]
    t = pd.DataFrame({c: [0.0] * 3 for c in metrics.GPU_PATH}, index=names)
    t["h2d"], t["ntt"] = [100.0, 10.0, 10.0], [89.0, 50.0, 47.0]
    t["ms_per_partition"] = t[list(metrics.GPU_PATH)].sum(axis=1)
    fig, ax = plots.critical_path(t)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    right = ax.get_window_extent(r).x1
    assert ax.texts and all(txt.get_window_extent(r).x1 <= right + 0.5 for txt in ax.texts)


def test_a_timeline_that_would_be_a_barcode_zooms_on_the_runs_middle_by_one_rule():
    """01, 03 and 06 drew whole runs where most intervals were narrower than 1.5 px (a barcode): with zoom=True a timeline shows
    the window plots.readable_window picks (the rule 07b used by hand), in which at most MAX_THIN of the intervals are that thin."""
    # 200 partitions of 100 ms: a 50 ms phase, a 40 ms one and a 4 ms one each, per worker
    rows = [(w, p, ph, 100 * p + a, 100 * p + b, "") for w in (0, 1) for p in range(200)
            for ph, a, b in (("ntt_msm_h", 0, 50), ("tail_msm", 55, 95), ("batch_add", 96, 100))]
    ev = _run(rows)
    z = plots.readable_window({"r": ev})
    assert z is not None and z.thin > plots.MAX_THIN * z.intervals  # the whole run: a barcode
    fig, ax = timeline(ev, zoom=True)
    lo, hi = ax.get_xlim()
    assert (lo, hi) == pytest.approx(z.window(20.0)) and lo > 5 and hi < 15 and z.width < 20.0 / 2  # the middle of the 20 s run
    text = caption(fig)
    assert f"The whole run would be a barcode ({z.thin} of its {z.intervals} intervals" in text and "the middle of the run" in text
    m = __import__("re").search(r"(\d+) of (\d+) intervals are narrower than", text)
    assert m is None or int(m.group(1)) <= plots.MAX_THIN * int(m.group(2))  # what it draws, counted in its window only
    figs, axes = plots.timelines({"a": ev, "b": ev.assign(run="b")}, zoom=True)
    assert all(a.get_xlim() == pytest.approx(z.window(20.0)) for a in axes) and "in the middle of each run" in caption(figs)
    few = _run([(0, 0, "ntt_msm_h", 0, 500, ""), (0, 0, "tail_msm", 500, 900, "")])
    assert plots.readable_window({"r": few}) is None and "barcode" not in caption(timeline(few, zoom=True)[0])  # readable already


def test_the_gpus_time_per_partition_gives_its_bars_the_figures_width():
    """The landing page's figure of the GPU's time per partition drew its bars in a narrow strip: long step names on the
    left, the eleven-entry legend on the right and an x range twice the longest bar. The legend now sits under the axes,
    the axes take most of the figure's width, and the longest bar most of the axes."""
    from zkgpu.analysis.gpu_time import BUSY_PARTS, IDLE_PARTS

    names = ["baseline", "narrow_prep_gpu_h2d_pre_lock_msm_precomp_gw3", "submit_prep_gpu_msm_precomp_gw3"]
    t = pd.DataFrame([[99.0, 20, 36, 6, 18, *([1.0] * len(IDLE_PARTS))], [10.0, 1, 30, 6, 13, *([1.0] * len(IDLE_PARTS))],
                      [8.0, 1, 28, 5, 9, *([1.0] * len(IDLE_PARTS))]], index=names, columns=[*BUSY_PARTS, *IDLE_PARTS])
    t["ms_per_partition"] = t.sum(axis=1)
    fig, ax = plots.critical_path(t)
    fig.canvas.draw()
    box, legend = ax.get_position(), ax.get_legend().get_window_extent().transformed(fig.transFigure.inverted())
    assert box.width >= 0.5 and legend.y1 < box.y0  # the legend under the axes, not beside them
    assert float(t["ms_per_partition"].max()) / ax.get_xlim()[1] >= 0.6
    frame = ax.get_window_extent()
    assert all(x.get_window_extent().x1 <= frame.x1 + 1 for x in ax.texts)  # every bar-end label inside the axes


def test_bars_add_up_to_their_labels_or_the_figure_refuses():
    """09's lock-centred bars of the narrow scope, read from the logs alone, drew 171 ms under a "126 ms" label (no mutex_held
    lines: the workers' phases and barrier waits overlap). A bar whose segments do not add up to its label is refused; 09 now
    draws gpu_time_split, whose parts add up, with ntt_msm_h whole in its own colour where a log does not split it."""
    over = pd.DataFrame({"lock_free": [4.0], "h2d": [0.0], "ntt": [83.0], "h_msm": [0.0], "barrier_wait": [47.0], "batch_add": [8.0],
                         "tail_msm": [28.0], "lock_other": [0.0], "partitions": [16], "ms_per_partition": [126.0]}, index=["pinned_narrow"])
    with pytest.raises(ValueError, match=r"pinned_narrow \(170 ms drawn, 126 ms labelled\).*gpu_time_split"):
        plots.critical_path(over)
    split = pd.DataFrame({"h2d": [0.0], "ntt": [82.0], "h_msm": [0.0], "batch_add": [8.0], "tail_msm": [28.0], "barrier_wait (prep_msm)": [3.0],
                          "mutex_wait (lock hand-off)": [3.0], "outside the GPU window (start-up, wind-down)": [2.0], "partitions": [16],
                          "ms_per_partition": [126.0]}, index=["pinned_narrow"])
    fig, ax = plots.critical_path(split)
    faces = {t.get_text(): matplotlib.colors.to_hex(h.get_facecolor()) for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)}
    assert faces[plots.bars.UNSPLIT_LABEL] == PHASE_COLORS["ntt_msm_h"] and "NTT and the rest of ntt_msm_h" not in faces
    assert sum(p.get_width() for p in ax.patches) == pytest.approx(126.0)


def test_the_lock_centred_figure_has_its_own_title_and_the_reports_phase_colours():
    """09 drew metrics.critical_path of each log under 06's title, "the GPU's time per partition", with ntt_msm_h (the log does
    not split it) in the NTT's teal and the lock-free time in the grey of 'outside the GPU window': its title now says what it
    is, ntt_msm_h is drawn in ntt_msm_h's colour, and no two meanings share a colour."""
    table = pd.DataFrame({"lock_free": [10.0], "h2d": [0.0], "ntt": [160.0], "h_msm": [0.0], "barrier_wait": [1.0], "batch_add": [6.0],
                          "tail_msm": [18.0], "lock_other": [0.0], "partitions": [32], "ms_per_partition": [195.0]}, index=["baseline"])
    fig, ax = plots.critical_path(table, title="the GPU's time per partition, from the logs alone (G)")
    assert ax.get_title() == "the GPU's time per partition around its mutex, from the logs alone (G)"
    faces = {t.get_text(): matplotlib.colors.to_hex(h.get_facecolor()) for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)}
    assert faces["ntt_msm_h (not split: no H2D or H MSM rows)"] == PHASE_COLORS["ntt_msm_h"] and "NTT and the rest of ntt_msm_h" not in faces
    assert faces["no worker holds the mutex"] == PHASE_COLORS["lock_free"] != PHASE_COLORS["outside_window"]
    split = table.assign(h2d=100.0, ntt=40.0, h_msm=20.0)  # split where the data split it
    assert "NTT and the rest of ntt_msm_h" in [t.get_text() for t in plots.critical_path(split)[1].get_legend().get_texts()]
    aliases = {"memcpy_htod": "h2d"}  # nsys's copy rows are the h2d phase
    by_colour: dict[str, list[str]] = {}
    for k, c in PHASE_COLORS.items():
        if k not in aliases and c != "#999999":  # #999999: phases no figure draws (PHASES without a colour of their own)
            by_colour.setdefault(c.lower(), []).append(k)
    assert all(len(v) == 1 for v in by_colour.values()), {c: v for c, v in by_colour.items() if len(v) > 1}


def test_whiskers_never_cross_a_bar_label():
    """08's figure (b) drew each throughput whisker over the white label inside its bar, and the staircase's whiskers ran
    through the numbers above the bars: a label now ends before its whisker (or starts after it) and sits above it."""
    from matplotlib.collections import LineCollection

    t = pd.DataFrame({"partitions_per_min": [330.0, 961.0], "partitions_per_min_min": [316.0, 950.0], "partitions_per_min_max": [340.0, 997.0],
                      "compute_util": [0.43, 0.92], "kernel_util": [0.9, 0.95], "timeline_util": [0.97, 0.99]}, index=["baseline", "msm_precomp"])
    fig, panel = plt.subplots(figsize=(7, 3))
    plots.bars._throughput_rows(t, panel, 1200.0, "bound", None, "(b)")  # 08's panel (b)
    for ax in (panel, plots.staircase(t)[1]):
        ax.figure.canvas.draw()
        r = ax.figure.canvas.get_renderer()
        whiskers = [s for c in ax.collections if isinstance(c, LineCollection) for s in c.get_segments()]
        assert len(whiskers) == 2
        boxes = [txt.get_window_extent(r) for txt in ax.texts]
        for seg in whiskers:
            (x0, y0), (x1, y1) = ax.transData.transform(seg[0]), ax.transData.transform(seg[1])
            for b in boxes:  # no label box meets the whisker's line
                crosses = min(x0, x1) - 1 <= b.x1 and b.x0 <= max(x0, x1) + 1 and min(y0, y1) - 1 <= b.y1 and b.y0 <= max(y0, y1) + 1
                assert not crosses, (ax.get_title(), b, seg)
    stair = plots.staircase(t)[1]
    stair.figure.canvas.draw()
    assert stair.get_legend().get_window_extent().y0 >= stair.get_window_extent().y1 - 1  # above the axes: the line never crosses it
