"""Bar charts of the investigation: the three utilizations, the GPU's time per partition, the GPU
window's causes, throughput against the model and a throughput bound, the gw sweep, and the
one-page summary. Bars are drawn in the table's row order; legends list only what is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.transforms import ScaledTranslation

from zkgpu.analysis import keynumbers
from zkgpu.analysis.gpu_time import BUSY_PARTS, CAUSE_PHASES, OUTSIDE_WINDOW
from zkgpu.analysis.metrics import GPU_PATH, UTILIZATIONS, utilization
from zkgpu.analysis.plots.style import (
    METRIC_COLORS,
    METRIC_EDGE,
    SERIES_STYLE,
    add_shown,
    fig_ax,
    patch_legend,
    phase_color,
    set_caption,
)

__all__ = ["utilization_bars", "critical_path", "gpu_window", "held_breakdown", "ntt_msm_h_split", "barrier_race",
           "throughput_bars", "gw_sweep", "hbars", "summary", "summary_scale", "staircase"]

#: Legend labels of the GPU critical path's categories (:data:`zkgpu.analysis.metrics.GPU_PATH`).
PATH_LABELS = {"lock_free": "no worker holds the mutex", "h2d": "H2D (exposed)", "ntt": "NTT and the rest of ntt_msm_h", "h_msm": "H MSM",
                "barrier_wait": "barrier_wait (lock held)", "batch_add": "batch_add", "tail_msm": "tail_msm",
                "lock_other": "lock held, other"}


def _as_util_frame(data: pd.DataFrame) -> pd.DataFrame:
    cols = list(UTILIZATIONS)
    if set(cols) & set(data.columns):
        u = data.set_index("run") if "run" in data.columns else data
        return u.reindex(columns=cols).astype(float)
    return utilization(data)[cols]


def _spread(table: pd.DataFrame, col: str, v: np.ndarray, scale: float = 1.0) -> np.ndarray | None:
    """Whisker lengths ``(2, n)`` below and above ``v`` to the runs' range (``<col>_min`` / ``<col>_max`` of
    :func:`zkgpu.analysis.replay.scenario_table`, times ``scale``), or None when the table has no range or
    every range is a point (one run per row)."""
    lo, hi = f"{col}_min", f"{col}_max"
    if not {lo, hi} <= set(table.columns):
        return None
    e = np.vstack([v - scale * table[lo].to_numpy(dtype=float), scale * table[hi].to_numpy(dtype=float) - v])
    e = np.where(np.isfinite(e), np.clip(e, 0.0, None), 0.0)
    return e if (e > 0).any() else None


SPREAD_NOTE = " Whiskers: the range (min to max) over each scenario's repeated runs; the bar is their median."
"""The caption sentence of a figure that draws :func:`_spread`'s whiskers."""

SPREAD_LABEL = "min–max over the repeats"
"""The legend entry of :func:`_spread`'s whiskers (black), in every figure that draws them."""


def utilization_bars(data: pd.DataFrame, ax: Axes | None = None, reference: Mapping[str, Mapping[str, float]] | None = None,
                     title: str | None = None) -> tuple[Figure, Axes]:
    """The three utilizations (in %), one group per run. ``data``: an event table or a frame with ``compute_util``,
    ``kernel_util``, ``timeline_util`` (fractions); ``reference``: published groups
    (``{label: {metric: fraction}}``), a missing metric marked "n/a".

    Raises:
        ValueError: nothing to draw.
    """
    u = _as_util_frame(data)
    if reference:
        u = pd.concat([u, pd.DataFrame.from_dict({k: dict(v) for k, v in reference.items()}, orient="index").reindex(columns=u.columns)])
    if not len(u):
        raise ValueError("nothing to draw")
    fig, ax = fig_ax(ax, (max(6, 1.6 * len(u) + 2.5), 4.4))
    x = np.arange(len(u))
    w = 0.27
    spread = False
    for j, m in enumerate(UTILIZATIONS):
        v = 100 * u[m].to_numpy(dtype=float)
        bars = ax.bar(x + (j - 1) * w, np.nan_to_num(v), w, color=METRIC_COLORS[m], edgecolor=METRIC_EDGE, linewidth=0.5, label=UTILIZATIONS[m][0])
        err = _spread(data.reindex(u.index), m, v, 100.0) if m == "compute_util" and "run" not in data.columns and len(data) == len(u) else None
        if err is not None:
            spread = True
            ax.errorbar(x + (j - 1) * w, v, yerr=err, fmt="none", ecolor="#111111", capsize=2, lw=0.8, label=SPREAD_LABEL)
        if m == "compute_util" or len(u) <= 3:
            ax.bar_label(bars, labels=["n/a" if np.isnan(a) else f"{a:.1f}%" for a in v], fontsize="x-small", padding=2,
                         fontweight="bold" if m == "compute_util" else "normal", rotation=90 if len(u) > 3 else 0)
    ax.set_xticks(x)
    many = len(u) > 4  # long names of many groups would collide at a slight angle
    ax.set_xticklabels([str(i).replace(" (", "\n(") if many else str(i) for i in u.index], rotation=35 if many else 15, ha="right",
                       fontsize="small" if many else None, rotation_mode="anchor")
    ax.set_ylim(0, 118)
    ax.set_ylabel("share of wall time (%)")
    ax.set_title(title or "three utilizations")
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    lead = "; ".join(f"{i}: compute {100 * r['compute_util']:.1f}%" for i, r in u.iterrows() if not np.isnan(r["compute_util"]))
    set_caption(fig, "Three bars per group, each a share of the same window (the run's wall span): compute utilization "
                 "(dark, kernels only), upstream's kernel utilization (H2D copies counted as GPU work) and TIMELINE "
                 f"(GPU_START → GPU_END intervals, waits counted). {lead}." + (" Published groups have no compute figure (n/a)." if reference else "")
                 + (SPREAD_NOTE.replace("Whiskers:", "Whiskers (compute utilization):") if spread else ""))
    return fig, ax


def _stacked(table: pd.DataFrame, cats: Sequence[str], ax: Axes | None, xlabel: str, title: str, normalize: bool = False,
             labels: Mapping[str, str] | None = None, totals: Mapping[str, str] | None = None, figw: float = 10.0,
             xmax: float | None = None) -> tuple[Figure, Axes, pd.DataFrame]:
    """Horizontal stacked bars, one per row of ``table`` (top to bottom in its order); ``xmax``: the
    longest bar the axis must hold (default: this table's), so that figures compared share it."""
    if not len(table):
        raise ValueError("nothing to draw")
    missing = set(cats) - set(table.columns)
    if missing:
        raise ValueError(f"table lacks columns {sorted(missing)}")
    if table[list(cats)].isna().all(axis=None):  # e.g. reindexed by names the table does not hold: an empty figure says nothing
        raise ValueError(f"nothing to draw: every row is empty ({', '.join(map(str, table.index[:4]))})")
    v = table[list(cats)].astype(float).fillna(0.0)
    if normalize:
        v = v.div(v.sum(axis=1).replace(0.0, np.nan), axis=0).fillna(0.0) * 100
    own = ax is None  # a figure of its own: laid out here; else the caller's figure lays out its panels
    names = [(labels or {}).get(c, c) for c in cats if (v[c] > 0).any()]
    # a figure of its own with bar-end labels has its legend under the axes, in as many columns as its width holds, so
    # that the bars get the figure's width (beside them, the legend, the row names and the labels left the bars a narrow strip)
    below = own and bool(totals)
    ncol = max(1, min(len(names), int(figw // (0.065 * max((len(n) for n in names), default=1) + 0.45))))
    rows = -(-len(names) // ncol)
    per_row = 0.5 if len(v) <= 8 else 0.42  # many rows: a little thinner, so that a page of them stays within its screens
    fig, ax = fig_ax(ax, (figw, per_row * len(v) + 1.8 + (0.22 * rows + 0.2 if below else 0.0)))
    y = np.arange(len(v))
    left = np.zeros(len(v))
    drawn = []
    for c in cats:
        w = v[c].to_numpy()
        if (w > 0).any():
            ax.barh(y, w, left=left, color=phase_color(c), edgecolor="#888888" if c in ("lock_free", "outside_window") else "none", linewidth=0.5, height=0.62)
            drawn.append(c)
        left += w
    for yi, (idx, tot) in enumerate(zip(v.index, left, strict=True)):
        t = (totals or {}).get(idx)
        if t:
            ax.text(tot, yi, "  " + t, va="center", fontsize="x-small")
    ax.set_yticks(y)
    ax.set_yticklabels([str(i) for i in v.index])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    if normalize:
        ax.set_xlim(0, 100)
    else:
        # room for the longest bar-end label inside the axes: x-small text is ~0.075 inch per character, and the axes narrow
        # once the legend beside them is laid out (0.09 keeps the label inside the frame)
        chars = max((len(str(t)) for t in (totals or {}).values()), default=0)
        axis_in = max(1.0, ax.get_position().width * fig.get_figwidth())
        longest = max(float(left.max()) if len(left) else 0.0, xmax or 0.0)
        # a shared axis (xmax given): the same room for the labels in every figure that shares it
        room = 0.62 if xmax is not None else max(0.3, 1.0 - 0.09 * (chars + 2) / axis_in)
        ax.set_xlim(0, longest / room if longest > 0 else 1)
    # the legend lists every colour drawn, however thin its segments (a reader who sees a sliver can name it)
    if below:  # a fixed distance under the axes (past the tick labels and the x label), whatever their height
        under = ScaledTranslation(0, -0.55, fig.dpi_scale_trans)
        patch_legend(ax, drawn, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=ax.transAxes + under, ncol=ncol)
    else:
        patch_legend(ax, drawn, labels)
    ax.grid(axis="x", alpha=0.3)
    if own:
        fig.tight_layout()
        if not normalize and xmax is None and ax.texts:
            _fit_end_labels(fig, ax)
    return fig, ax, v


def _fit_end_labels(fig: Figure, ax: Axes) -> None:
    """Set the x range so that every bar-end label ends just inside the axes (measured once laid out: long row names
    narrow the axes more than the estimate allows, and a label then ran into the legend; a range set wider than the
    labels need left the bars a narrow strip)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    box = ax.get_window_extent(renderer)
    lo, hi = ax.get_xlim()
    need = 0.0
    for t in ax.texts:
        w = t.get_window_extent(renderer).width
        x = float(t.get_position()[0])
        if box.width > w and x > 0:
            need = max(need, x * box.width / (box.width - w))
    if need > 0:  # as wide as the labels need, no wider: the bars keep the rest of the axes
        ax.set_xlim(lo, need * 1.03)


#: The idle parts of :func:`zkgpu.story.conclusions.gpu_time_split` (idle causes of :func:`zkgpu.analysis.gpu_time.idle_causes`) and
#: the colour key of each (the phase whose colour it is drawn in; :data:`zkgpu.analysis.gpu_time.CAUSE_PHASES`).
#: The title of :func:`critical_path`'s lock-centred figure (:func:`zkgpu.analysis.metrics.critical_path`), told apart from the
#: idle-cause figure ("the GPU's time per partition") whose segments are named and coloured otherwise.
LOCK_TITLE = "the GPU's time per partition around its mutex"
#: The legend label of ntt_msm_h drawn whole, where the data (a log) have no H2D or H MSM rows to split it by.
UNSPLIT_LABEL = "ntt_msm_h (not split: no H2D or H MSM rows)"
IDLE_KEYS: dict[str, str] = {**{c: k for c, k in CAUSE_PHASES.items() if c not in ("compute", "exposed H2D")},
                             OUTSIDE_WINDOW: "outside_window"}


def critical_path(table: pd.DataFrame, ax: Axes | None = None, title: str | None = None, xmax: float | None = None) -> tuple[Figure, Axes]:
    """Per partition, what the GPU does and waits for: one bar per run, in the table's order; ``table`` is
    :func:`zkgpu.analysis.gpu_time.gpu_time_split` or :func:`zkgpu.analysis.metrics.critical_path`. A bar's length is
    the GPU's wall ms per partition; ``xmax`` (ms) shares the axis between figures.

    Raises:
        ValueError: the table has neither table's columns, or is empty.
    """
    tot = {i: f"{r['ms_per_partition']:.0f} ms = {60000 / r['ms_per_partition']:.0f} partitions/min" for i, r in table.iterrows()
           if r.get("ms_per_partition", 0) and np.isfinite(r.get("ms_per_partition", np.nan))}
    by_cause = set(IDLE_KEYS) & set(table.columns)
    unsplit = not (table.reindex(columns=["h2d", "h_msm"]).fillna(0.0) > 0).any(axis=None)  # no sub-phase rows (a log): ntt is all of ntt_msm_h
    if by_cause:  # idle causes drawn in their phases' colours, named as gpu_window names them
        cats = [*BUSY_PARTS, *[c for c in IDLE_KEYS if c in table.columns]]
        keys = {c: IDLE_KEYS.get(c, c) for c in cats}
        labels = {**{k: PATH_LABELS[k] for k in BUSY_PARTS}, **{IDLE_KEYS[c]: c for c in by_cause}}
        if unsplit:
            keys["ntt"] = "ntt_msm_h"
            labels["ntt_msm_h"] = UNSPLIT_LABEL
        fig, ax, v = _stacked(table[cats].rename(columns=keys), [keys[c] for c in cats], ax, "ms of GPU time per partition",
                              title or "the GPU's time per partition", labels=labels, totals=tot, xmax=xmax)
        how = ("the GPU's parts (exposed H2D, NTT, H MSM, batch_add, tail_msm), then the time it idled, named by what the "
               "workers did meanwhile (as in the GPU-window figure: barrier_wait for prep_msm, the mutex changing hands, a "
               "worker's set-up, no partition ready, other host work) and the time outside the GPU window")
    else:  # lock-centred: its title says so, whatever it is given, so it is never taken for the idle-cause figure of that name
        name = "the GPU's time per partition"
        title = (title or name).replace(name, LOCK_TITLE, 1) if name in (title or name) else f"{LOCK_TITLE}: {title}"
        cats, labels, tab = list(GPU_PATH), dict(PATH_LABELS), table
        if unsplit:
            tab, cats = table.rename(columns={"ntt": "ntt_msm_h"}), ["ntt_msm_h" if c == "ntt" else c for c in cats]
            labels["ntt_msm_h"] = UNSPLIT_LABEL
        fig, ax, v = _stacked(tab, cats, ax, "ms of GPU time per partition", title, labels=labels, totals=tot, xmax=xmax)
        how = ("in the order of the GPU's critical path: no worker holds the mutex, then, with the mutex held, exposed H2D, NTT, "
               "H MSM (or all of ntt_msm_h, in its own colour, where the data do not split it), barrier_wait, batch_add, tail_msm and "
               "the rest of the held time")
    if "ms_per_partition" in table.columns:  # a bar is labelled with its total: its segments must add up to it
        total = pd.to_numeric(table["ms_per_partition"], errors="coerce").reindex(v.index).to_numpy(dtype=float)
        over = [f"{i} ({s:.0f} ms drawn, {t:.0f} ms labelled)" for i, s, t in zip(v.index, v.sum(axis=1), total, strict=True)
                if np.isfinite(t) and abs(s - t) > 1.0 + 0.01 * t]
        if over:
            plt.close(fig)
            raise ValueError("the segments do not add up to the bar's time per partition (they overlap: workers outside one lock, "
                             f"or a log without mutex_held rows): {'; '.join(over)}; draw zkgpu.analysis.gpu_time.gpu_time_split instead")
    first = v.index[0]
    parts = ", ".join(f"{labels.get(c, c)} {v.at[first, c]:.0f}" for c in v.columns if v.at[first, c] >= 0.5)
    set_caption(fig, "Each bar is one GPU's wall time divided by the partitions it finished; the segments are disjoint "
                 f"stretches of that time (no two overlap): {how}. {first}: {parts} ms.")
    return fig, ax


def gpu_window(table: pd.DataFrame, keys: Mapping[str, str], ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """Where each run's GPU window goes, in %, one bar per run. ``table``: shares (fractions) indexed by run, one column
    per cause; ``keys``: ``{cause column: phase}`` for colours (:data:`zkgpu.analysis.gpu_time.CAUSE_PHASES`).

    Raises:
        ValueError: a cause column of ``keys`` is missing, or the table is empty.
    """
    causes = [c for c in keys if c in table.columns]
    renamed = table[causes].rename(columns=dict(keys))
    labels = {keys[c]: c for c in causes}
    fig, ax, v = _stacked(renamed, [keys[c] for c in causes], ax, "% of the GPU window (first GPU start to the last GPU phase's end)",
                          title or "where the GPU window goes", normalize=True, labels=labels)
    first = v.index[0]
    parts = ", ".join(f"{labels[k]} {v.at[first, k]:.0f}%" for k in v.columns if v.at[first, k] >= 0.5)
    set_caption(fig, "Each bar is one run's GPU window split into disjoint parts: the GPU computing, copies no kernel hid, "
                 "and idle time attributed to what the workers were doing meanwhile (a cause claims idle time in the "
                 f"legend's order). {first}: {parts}.")
    return fig, ax


def held_breakdown(table: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """What the held mutex is spent on, in % of the held time, one bar per run: the held categories
    of :func:`zkgpu.analysis.metrics.critical_path` (exposed H2D, NTT, H MSM = ntt_msm_h; barrier_wait
    inside the lock; batch_add; tail_msm; other)."""
    cats = [c for c in GPU_PATH if c != "lock_free"]
    fig, ax, v = _stacked(table, cats, ax, "share of the time the GPU mutex is held (%)", title or "what the held mutex is spent on",
                          normalize=True, labels=PATH_LABELS)
    bits = "; ".join(f"{i}: ntt_msm_h {r['h2d'] + r['ntt'] + r['h_msm']:.0f}%, barrier_wait {r['barrier_wait']:.1f}%" for i, r in v.iterrows())
    set_caption(fig, "Each bar is 100% of the time some worker holds the GPU mutex, split into the phases run under it "
                 f"(ntt_msm_h as exposed H2D, NTT and H MSM). {bits}.")
    return fig, ax


def ntt_msm_h_split(table: pd.DataFrame, ax: Axes | None = None, title: str | None = None, gbps: Mapping[str, float] | None = None,
                    xmax: float | None = None, share: Mapping[str, float] | None = None) -> tuple[Figure, Axes]:
    """ntt_msm_h per partition split into exposed H2D, NTT and H MSM (ms), one bar per run; ``gbps`` ({run: GB/s})
    labels the bars, ``xmax`` (ms) shares the axis, ``share`` ({run: h2d_share}) is the share the caption prints.
    """
    tot = {i: f"{r['ntt_msm_h']:.0f} ms" + (f", H2D at {gbps[i]:.1f} GB/s" if gbps and i in gbps and np.isfinite(gbps[i]) and r["h2d"] > 0 else "")
           for i, r in table.iterrows()}
    fig, ax, v = _stacked(table, ["h2d", "ntt", "h_msm"], ax, "ms per partition", title or "inside ntt_msm_h", labels=PATH_LABELS, totals=tot, figw=9.0,
                          xmax=xmax)
    bits = []
    for i, r in v.iterrows():
        if r.sum() <= 0:
            continue
        add_shown(fig, "h2d_exposed", str(i), float(r["h2d"]), f"{r['h2d']:.1f} ms")
        add_shown(fig, "ntt_msm_h", str(i), float(r.sum()), f"{r.sum():.1f} ms", statistic=keynumbers.MEAN_PER_PARTITION)
        one = f"{i}: {r['h2d']:.1f} ms H2D of {r.sum():.1f} ms"
        if share is not None and i in share and np.isfinite(share[i]):
            add_shown(fig, "h2d_share", str(i), float(share[i]), f"{share[i]:.1%}")
            one += f" (H2D share {share[i]:.1%})"
        bits.append(one)
    note = (" The H2D share in brackets is the report's one: Σ exposed / Σ ntt_msm_h of each run, median over the runs."
            if share is not None else "")
    set_caption(fig, "Mean ntt_msm_h per partition of each scenario's representative run (its median-throughput run): the exposed "
                 "H2D (copy time no kernel hid, CUDA events), the H MSM, and the rest — the NTTs, the copy time they hid, and any "
                 f"host-side work inside ntt_msm_h such as registering the buffers (registered). {'; '.join(bits)}.{note}")
    return fig, ax


def barrier_race(panels: Mapping[str, pd.DataFrame], title: str | None = None) -> tuple[Figure, np.ndarray]:
    """ntt_msm_h against prep_msm per partition, one panel per source (``{title: frame}`` with ``prep_msm_ms``,
    ``ntt_msm_h_ms``, optionally ``reach_barrier_ms``), each divided by its median prep_msm.

    Raises:
        ValueError: no panels, or a frame lacks a column.
    """
    if not panels:
        raise ValueError("no panels")
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels) + 1.5, 4.2), sharey=True, squeeze=False)
    axes = axes[0]
    # left bar: prep_msm; right bar: the time to reach the barrier, stacked from its phases (each in
    # its phase colour; the seed's grep has ntt_msm_h only)
    stack = ("pre_lock", "mutex_wait", "ntt_msm_h")
    caps = []
    handles = {}
    for ax, (name, df) in zip(axes, panels.items(), strict=True):
        need = {"prep_msm_ms", "ntt_msm_h_ms"} - set(df.columns)
        if need:
            raise ValueError(f"panel {name!r} lacks columns {sorted(need)}")
        d = df.dropna(subset=["prep_msm_ms", "ntt_msm_h_ms"]).reset_index(drop=True)
        ref = float(d["prep_msm_ms"].median())
        x = np.arange(len(d))
        w = 0.4
        handles["prep_msm"] = ax.bar(x - w / 2, d["prep_msm_ms"] / ref, w, color=phase_color("prep_msm"))
        bottom = np.zeros(len(d))
        for ph in stack:
            col = f"{ph}_ms"
            if col not in d.columns or not (d[col].fillna(0) > 0).any():
                continue
            h = d[col].fillna(0.0).to_numpy() / ref
            handles[ph] = ax.bar(x + w / 2, h, w, bottom=bottom, color=phase_color(ph))
            bottom += h
        ax.axhline(1.0, color="#555555", lw=0.8, ls=":")
        labels = [str(i) for i in (d["partition"] if "partition" in d.columns else d.index)]
        step = max(1, -(-len(labels) // 16))  # at most ~16 labels: 64 partitions' labels overprinted into a smear
        ax.set_xticks(x[::step])
        ax.set_xticklabels(labels[::step], fontsize="x-small")
        ax.set_xlabel("partition")
        ax.set_title(f"{name}\n(1.0 = median prep_msm = {ref:.0f} ms)", fontsize="medium")
        r = (d["ntt_msm_h_ms"] / d["prep_msm_ms"])
        caps.append(f"{name}: ntt_msm_h / prep_msm {r.min():.2f}–{r.max():.2f}" +
                    (f", (pre_lock + mutex_wait + ntt_msm_h) / prep_msm {(d['reach_barrier_ms'] / d['prep_msm_ms']).median():.2f} (median)" if "reach_barrier_ms" in d else ""))
    axes[0].set_ylabel("× median prep_msm of the source")
    names = [p for p in ("prep_msm", *stack) if p in handles]
    axes[-1].legend(handles=[Patch(color=phase_color(p), label=p) for p in names], fontsize="small", frameon=False,
                    loc="upper left", bbox_to_anchor=(1.01, 1))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    set_caption(fig, "Per partition, two bars divided by the median prep_msm of their own source (dotted line = 1): prep_msm "
                 "(left) and the time the worker needs to reach the barrier (right, stacked from its phases). A worker "
                 "waits at the barrier only if the left bar is the taller. " + "; ".join(caps) + ".")
    return fig, axes


def throughput_bars(table: pd.DataFrame, ax: Axes | None = None, bound: float | None = None, model: Mapping[str, float] | None = None,
                    title: str | None = None, ymax: float | None = None,
                    bound_label: tuple[str, str] = ("compute-only bound", "60 000 / GPU kernel ms per partition")) -> tuple[Figure, Axes]:
    """Partitions per minute per run (``table[partitions_per_min]``), optionally ``model`` ({run: partitions/min},
    hatched) and a ``bound`` (dashed line) named by ``bound_label`` (name, definition); ``ymax`` shares the axis.
    """
    if "partitions_per_min" not in table.columns or not len(table):
        raise ValueError("table needs a partitions_per_min column and rows")
    fig, ax = fig_ax(ax, (max(6, 1.1 * len(table) + 3), 4.2))
    x = np.arange(len(table))
    v = table["partitions_per_min"].astype(float).to_numpy()
    w = 0.4 if model else 0.6
    bars = ax.bar(x - (w / 2 if model else 0), v, w, **SERIES_STYLE["measured"], label="measured")
    err = _spread(table, "partitions_per_min", v)
    if err is not None:
        ax.errorbar(x - (w / 2 if model else 0), v, yerr=err, fmt="none", ecolor="#111111", capsize=3, lw=1, label=SPREAD_LABEL)
    lab = [f"{a:.0f}" + (f"\n({a / bound:.0%})" if bound else "") for a in v]
    if err is None:
        ax.bar_label(bars, labels=lab, fontsize="x-small", padding=2)
    else:  # above the whisker, never through it
        for xi, top_i, t in zip(x - (w / 2 if model else 0), v + err[1], lab, strict=True):
            ax.annotate(t, (xi, top_i), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize="x-small")
    caps = [f"{i} {a:.0f}" for i, a in zip(table.index, v, strict=True)]
    if model:
        mv = np.array([model.get(i, np.nan) for i in table.index], dtype=float)
        mb = ax.bar(x + w / 2, np.nan_to_num(mv), w, **SERIES_STYLE["model"], linewidth=0.6, label="model prediction")
        ax.bar_label(mb, labels=[f"{m:.0f}" if np.isfinite(m) else "" for m in mv], fontsize="x-small", padding=2, color="#252525")
        caps.append("white hatched bars, the model's prediction: " + ", ".join(f"{i} {m:.0f}" for i, m in zip(table.index, mv, strict=True) if np.isfinite(m)))
    top = max(np.nanmax(v), bound or 0, np.nanmax(list(model.values())) if model else 0, ymax or 0)
    if bound:
        ax.axhline(bound, color="#333333", ls="--", lw=1, label=f"{bound_label[0]} ({bound:.0f}/min)", zorder=1)
    ax.set_ylim(0, top * 1.25)
    ax.set_xticks(x)
    ax.set_xticklabels([str(i) for i in table.index], rotation=15, ha="right")
    ax.set_ylabel("partitions per minute")
    ax.set_title(title or "throughput")
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    set_caption(fig, "Bars: measured partitions per minute over each run's wall span (" + "; ".join(caps) + ")"
                 + (f"; dashed line: the {bound_label[0]}, {bound:.0f} partitions/min ({bound_label[1]}); in brackets each bar's "
                    "share of it" if bound else "") + "." + (SPREAD_NOTE if err is not None else ""))
    return fig, ax


def gw_sweep(measured: Mapping[int, float], model: Mapping[int, float] | None = None, bound: float | None = None,
             ax: Axes | None = None, title: str | None = None, bound_name: str = "compute-only bound") -> tuple[Figure, Axes]:
    """Throughput against gw (GPU workers per GPU): measured points (``{gw: partitions/min}``),
    optionally the model's prediction and a throughput bound named ``bound_name``."""
    if not measured:
        raise ValueError("no measured points")
    fig, ax = fig_ax(ax, (6.5, 4.0))
    g = sorted(measured)
    ax.plot(g, [measured[k] for k in g], "o-", color=SERIES_STYLE["measured"]["color"], label="measured")
    for k in g:
        ax.annotate(f"{measured[k]:.0f}", (k, measured[k]), textcoords="offset points", xytext=(0, 7), ha="center", fontsize="x-small")
    if model:
        gm = sorted(model)
        ax.plot(gm, [model[k] for k in gm], "D--", color=SERIES_STYLE["model"]["edgecolor"], markerfacecolor="white", label="model prediction")
    if bound:
        ax.axhline(bound, color="#333333", ls="--", lw=1, label=f"{bound_name} ({bound:.0f}/min)")
    ax.set_xticks(g)
    ax.set_xlabel("gw (GPU workers sharing one GPU mutex)")
    ax.set_ylabel("partitions per minute")
    ax.set_ylim(0, max([*measured.values(), *(model or {}).values(), bound or 0]) * 1.2)
    ax.set_title(title or "throughput against gw")
    ax.legend(fontsize="small", frameon=False, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    set_caption(fig, "Measured partitions per minute at gw = " + ", ".join(f"{k}: {measured[k]:.0f}" for k in g)
                 + ("; model: " + ", ".join(f"{k}: {model[k]:.0f}" for k in sorted(model)) if model else "")
                 + (f"; {bound_name} {bound:.0f}" if bound else "") + ".")
    return fig, ax


def hbars(values: Mapping[str, float], unit: str = "%", ax: Axes | None = None, title: str | None = None, color: str | None = None,
          full_scale: bool = True) -> tuple[Figure, Axes]:
    """Horizontal bars of a few named values (``unit`` "%": fractions drawn in %, on a 0–100 %
    axis unless ``full_scale`` is False; else as given), labelled with their values; grey (measured
    values, :data:`SERIES_STYLE`) unless ``color`` says otherwise."""
    if not values:
        raise ValueError("nothing to draw")
    names = list(values)
    v = np.array([values[k] for k in names], dtype=float) * (100 if unit == "%" else 1)
    fig, ax = fig_ax(ax, (8, 0.45 * len(names) + 1.4))
    bars = ax.barh(np.arange(len(names)), v, color=color or SERIES_STYLE["measured"]["color"], height=0.6)  # no phase's blue
    ax.bar_label(bars, labels=[(f"{a:.2f}%" if unit == "%" else f"{a:,.1f} {unit}") for a in v], fontsize="x-small", padding=3)
    ax.set_yticks(np.arange(len(names)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlim(0, 112 if (unit == "%" and full_scale) else max(v.max(), 1e-9) * 1.25)
    ax.set_xlabel(unit)
    ax.set_title(title or "")
    fig.tight_layout()
    set_caption(fig, "; ".join(f"{k}: {(f'{a:.2f}%' if unit == '%' else f'{a:,.1f} {unit}')}" for k, a in zip(names, v, strict=True)) + ".")
    return fig, ax


def _parts(path: pd.DataFrame) -> list[str]:
    """The columns of a GPU's-time table (:func:`critical_path`'s input) that its bars stack."""
    return [c for c in path.columns if c not in ("partitions", "ms_per_partition", "wall_ms")]


def summary_scale(*runs: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, float | None]) -> dict[str, float]:
    """The largest ``partitions_per_min``, ``ms_per_partition`` and ``ntt_msm_h`` (ms) over ``runs`` (``(table, path,
    split, bound)`` as :func:`summary` takes them), the axis limits compared summaries share.

    Raises:
        ValueError: no runs.
    """
    if not runs:
        raise ValueError("summary_scale needs at least one run")

    def top(values: Sequence[float]) -> float:
        finite = [float(v) for v in values if v is not None and np.isfinite(v)]
        return max(finite, default=0.0)

    return {"partitions_per_min": top([v for t, _, _, b in runs for v in (*t["partitions_per_min"], b or 0.0)]),
            "ms_per_partition": top([v for _, p, _, _ in runs for v in p[_parts(p)].astype(float).fillna(0.0).sum(axis=1)]),
            "ntt_msm_h": top([v for _, _, s, _ in runs for v in s[["h2d", "ntt", "h_msm"]].astype(float).fillna(0.0).sum(axis=1)])}


def _utilization_rows(u: pd.DataFrame, ax: Axes, title: str) -> None:
    """The three utilizations as horizontal bars, one group of three per row of ``u`` (top to
    bottom), compute utilization labelled at its bar's end (the headline; the others are read
    against the grid)."""
    y = np.arange(len(u))
    h = 0.26
    for j, m in enumerate(UTILIZATIONS):
        v = 100 * u[m].to_numpy(dtype=float)
        bars = ax.barh(y + (j - 1) * h, np.nan_to_num(v), h, color=METRIC_COLORS[m], edgecolor=METRIC_EDGE, linewidth=0.4,
                       label=UTILIZATIONS[m][0])
        if m == "compute_util":
            ax.bar_label(bars, labels=["n/a" if np.isnan(a) else f"{a:.1f}%" for a in v], fontsize="x-small", padding=2, fontweight="bold")
    ax.set_yticks(y)
    ax.set_yticklabels([str(i) for i in u.index])
    ax.invert_yaxis()
    ax.set_xlim(0, 112)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("share of wall time (%)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title)


def _throughput_rows(table: pd.DataFrame, ax: Axes, bound: float | None, bound_label: str, xmax: float | None, title: str) -> None:
    """Measured partitions per minute as horizontal bars (rows of ``table``, top to bottom), each
    labelled with its value and, with a ``bound``, its share of it. The bound is a dashed vertical
    line drawn behind the bars; a label sits inside its bar where it fits, else after it on a white
    ground, so that the line never runs through a label."""
    v = table["partitions_per_min"].astype(float).to_numpy()
    y = np.arange(len(v))
    top = max(float(np.nanmax(v)) if len(v) else 0.0, bound or 0.0, xmax or 0.0)
    ax.set_xlim(0, top * 1.12 if top > 0 else 1)
    ax.barh(y, np.nan_to_num(v), 0.62, **SERIES_STYLE["measured"], label="measured", zorder=2)
    err = _spread(table, "partitions_per_min", v)
    if err is not None:
        ax.errorbar(v, y, xerr=err, fmt="none", ecolor="#111111", capsize=2, lw=0.8, zorder=4, label=SPREAD_LABEL)
    if bound:
        ax.axvline(bound, color="#333333", ls="--", lw=1, label=f"{bound_label} ({bound:.0f}/min)", zorder=1)
    ax.figure.canvas.draw_idle()
    width_px = max(1.0, ax.get_window_extent().width)
    per_px = ax.get_xlim()[1] / width_px
    # a label ends left of its whisker (inside the bar) or starts right of it (after the bar): never under the whisker
    lo_err, hi_err = (err[0], err[1]) if err is not None else (np.zeros(len(v)), np.zeros(len(v)))
    for yi, a, el, eh in zip(y.astype(float), v, lo_err, hi_err, strict=True):
        if not np.isfinite(a):  # a published row of (a): no throughput of ours
            ax.text(3 * per_px, yi, "n/a", va="center", ha="left", fontsize="x-small", color="#636363")
            continue
        text = f"{a:.0f}" + (f" ({a / bound:.0%})" if bound else "")
        need = (len(text) * 5.2 + 8) * per_px  # x-small text: about 5 px a character at the report's 72 dpi
        if a - el > need:
            ax.text(a - el - 3 * per_px, yi, text, va="center", ha="right", fontsize="x-small", color="white", zorder=3)
        else:
            ax.text(a + eh + 3 * per_px, yi, text, va="center", ha="left", fontsize="x-small", zorder=3,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    ax.set_yticks(y)
    ax.set_yticklabels([str(i) for i in table.index])
    ax.invert_yaxis()
    ax.set_xlabel("partitions per minute")
    ax.grid(axis="x", alpha=0.3, zorder=0)
    ax.set_title(title)


def summary(table: pd.DataFrame, path: pd.DataFrame, split: pd.DataFrame, bound: float | None = None,
            reference: Mapping[str, Mapping[str, float]] | None = None, title: str | None = None,
            scale: Mapping[str, float] | None = None,
            bound_label: tuple[str, str] = ("compute-only bound", "60 000 / GPU kernel ms per partition")) -> tuple[Figure, np.ndarray]:
    """The investigation on one page, one row per scenario: (a) utilizations, (b) throughput against the bound, (c)
    :func:`critical_path`, (d) ntt_msm_h's split. ``table``: :func:`zkgpu.analysis.replay.scenario_table`; ``path``:
    ``gpu_time_split`` or ``critical_path``; ``split``: ``ntt_msm_h_split`` (all indexed by scenario);
    ``reference``: published utilizations for (a); ``scale``: :func:`summary_scale`; ``bound_label``: (name,
    definition).
    """
    order = list(table.index)
    u = _as_util_frame(table)
    if reference:
        u = pd.concat([u, pd.DataFrame.from_dict({k: dict(v) for k, v in reference.items()}, orient="index").reindex(columns=u.columns)])
    rows = len(u) + len(order)
    fig = plt.figure(figsize=(16, 0.42 * rows + 6.5), layout="constrained")  # the names once, on the left: the panels keep their width
    gs = fig.add_gridspec(2, 2, height_ratios=[len(u) + 1.5, len(order) + 1.5])
    axes = np.array([fig.add_subplot(gs[i, j]) for i in range(2) for j in range(2)])
    gb = table["h2d_gbps"].to_dict() if "h2d_gbps" in table.columns else None
    sc = dict(scale or {})
    _utilization_rows(u, axes[0], "(a) three utilizations")
    _throughput_rows(table.reindex(u.index), axes[1], bound, bound_label[0], sc.get("partitions_per_min"), "(b) throughput (rows as in (a))")
    critical_path(path.reindex(order), ax=axes[2], title="(c) the GPU's time per partition", xmax=sc.get("ms_per_partition"))
    ntt_msm_h_split(split.reindex(order), ax=axes[3], gbps=gb, title="(d) inside ntt_msm_h (rows as in (c))", xmax=sc.get("ntt_msm_h"))
    axes[1].set_yticklabels([])
    axes[3].set_yticklabels([])
    for i, a in enumerate(axes):
        h, lab = a.get_legend_handles_labels() if a.get_legend() is None else (a.get_legend().legend_handles, [t.get_text() for t in a.get_legend().get_texts()])
        if i < 2:  # legends between the title and the axes
            a.legend(h, lab, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(3, len(lab)), fontsize="small", frameon=False)
            a.set_title(a.get_title(), pad=22)
        else:
            a.legend(h, lab, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize="small", frameon=False)
    fig.suptitle(title or "the investigation on one page", fontsize="x-large")
    # one short caption: what each panel is; the numbers are on the panels, in the scenario table
    # and in the conclusions (the panels' own long captions are for their stand-alone figures)
    set_caption(fig, "One row per scenario in every panel. (a) compute utilization (kernels only: the headline, labelled), "
                "upstream's kernel utilization (copies counted) and TIMELINE over each run's wall span; (b) measured "
                "partitions per minute"
                + (f", in brackets the share of the {bound_label[0]} ({bound:.0f}/min, dashed: {bound_label[1]})" if bound else "")
                + "; (c) the GPU's wall time per partition: its parts (exposed H2D, NTT, H MSM, batch_add, tail_msm) and the "
                "time it idled, named by what the workers did meanwhile (the names of notebook 07b's GPU window), adding up "
                "to 60 000 / throughput; (d) ntt_msm_h split into exposed H2D, NTT and H MSM (means per partition), with the "
                "effective H2D rate of a, b, c."
                + (" Panels (b), (c) and (d) share their axes with the other one-page summaries of this report, so that "
                   "bars of different recordings compare by length." if scale else ""), append=False)
    return fig, axes


def staircase(table: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """The throughput staircase: one bar per step of ``partitions_per_min`` (a min–max whisker where
    ``partitions_per_min_min``/``_max`` exist), ``compute_util`` (fraction) on a second axis.

    Raises:
        ValueError: ``table`` has no rows, or lacks ``partitions_per_min`` or ``compute_util`` (names them).
    """
    missing = {"partitions_per_min", "compute_util"} - set(table.columns)
    if missing or not len(table):
        raise ValueError(f"staircase needs rows and the columns partitions_per_min, compute_util; missing: {sorted(missing) or 'rows'}")
    fig, ax = fig_ax(ax, (max(6.5, 0.75 * len(table) + 3.5), 4.4))
    x = np.arange(len(table))
    v = table["partitions_per_min"].astype(float).to_numpy()
    ax.bar(x, v, 0.6, **SERIES_STYLE["measured"], label="partitions/min (median run)")
    lo_hi = [f"partitions_per_min_{k}" for k in ("min", "max")]
    spread = table[lo_hi].astype(float).to_numpy() if set(lo_hi) <= set(table.columns) else np.full((len(table), 2), np.nan)
    has = np.isfinite(spread).all(axis=1)
    if has.any():
        err = np.vstack([v - spread[:, 0], spread[:, 1] - v])
        err[:, ~has] = 0
        ax.errorbar(x[has], v[has], yerr=err[:, has], fmt="none", ecolor="#111111", capsize=3, lw=1, label=SPREAD_LABEL)
    ax.set_ylim(0, np.nanmax(np.where(has, spread[:, 1], v)) * 1.2)
    # a label sits inside its bar, under the whisker's lower end (the utilization line runs above the bars, the whisker
    # through their tops); a bar too short for it has it above the whisker
    fig.canvas.draw()
    pts_per_unit = ax.get_window_extent().height * 72.0 / fig.dpi / ax.get_ylim()[1]
    lows, tops = np.where(has, spread[:, 0], v), np.where(has, spread[:, 1], v)
    for xi, a, lo, t, ok in zip(x, v, lows, tops, has, strict=True):
        text = f"{a:.0f}" + ("\n(1 run)" if has.any() and not ok else "")
        if np.isfinite(lo) and lo * pts_per_unit > 26:
            ax.annotate(text, (xi, lo), xytext=(0, -3), textcoords="offset points", ha="center", va="top", fontsize="x-small", color="white")
        else:
            ax.annotate(text, (xi, t if np.isfinite(t) else a), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                        fontsize="x-small")
    ax.set_xticks(x)
    ax.set_xticklabels([str(i) for i in table.index], rotation=25, ha="right", fontsize="small")
    ax.set_ylabel("partitions per minute")
    u = table["compute_util"].astype(float).to_numpy()
    ax2 = ax.twinx()
    ax2.plot(x, u, color=METRIC_COLORS["compute_util"], marker="o", lw=1.5, label="compute_util (right axis)")
    ax2.set_ylim(0, 1.05)
    ax2.yaxis.set_major_formatter(plt.FuncFormatter(lambda y, _: f"{y:.0%}"))
    ax2.set_ylabel("compute utilization")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    # the legend above the axes, where neither the utilization line nor a bar runs through it
    ax.legend(h1 + h2, l1 + l2, fontsize="small", frameon=False, loc="lower left", bbox_to_anchor=(0.0, 1.0),
              ncol=3 if fig.get_figwidth() >= 9 else 2)
    ax.set_title(title or "throughput, step by step", pad=22 if fig.get_figwidth() >= 9 else 34)
    fig.tight_layout()
    steps = "; ".join(f"{i} {a:.0f}/min at {c:.0%}" + (f" (range {lo:.0f}–{hi:.0f})" if ok else "")
                      for i, a, c, (lo, hi), ok in zip(table.index, v, u, spread, has, strict=True))
    one_run = [str(i) for i, ok in zip(table.index, has, strict=True) if not ok]
    set_caption(fig, "Bars: partitions per minute over each run's wall span, step by step; dots: compute utilization (right axis). "
                + steps + ". " + ("Whiskers: min–max over the recording's repeats. " if has.any() else "")
                + (("Every bar is one run: no whisker, its spread is unknown." if len(one_run) == len(table)
                    else f"One run, no whisker: {', '.join(one_run)}.") if one_run else ""))
    return fig, ax
