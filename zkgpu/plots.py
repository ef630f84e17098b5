"""Matplotlib figures for the event table and benchmark results. Every function returns the Figure
and Axes (never calls ``plt.show()``); pass ``ax=`` to draw into an existing Axes.

Rules every figure follows, so that a reader can trust it:

* **one colour map** (:data:`PHASE_COLORS`): a phase, a category of the GPU critical path
  (:data:`zkgpu.metrics.GPU_PATH`) or a utilization (:data:`METRIC_COLORS`) has the same colour in
  every figure of the report; H2D paths (:data:`PATH_STYLES`) and measured/model series
  (:data:`SERIES_STYLE`) have palettes of their own, disjoint from the phases';
* legends list only what is drawn;
* an interval narrower than :data:`MIN_PX` pixels at the figure's scale is drawn that wide, and the
  caption counts them (:func:`caption`);
* runs that are compared share their axes;
* every function attaches a caption that describes what is drawn, built from the data
  (:func:`caption`; ``zkgpu.view.figure`` prints it under the figure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from .events import PHASES
from .metrics import GPU_PATH, UTILIZATIONS, utilization

__all__ = ["PHASE_COLORS", "METRIC_COLORS", "PATH_STYLES", "SERIES_STYLE", "path_style", "SIDE_PHASES", "TIMELINE_PHASES", "MIN_PX", "phase_color", "size_label", "caption",
           "timeline", "timelines", "utilization_bars", "critical_path", "gpu_window", "held_breakdown", "ntt_msm_h_split",
           "barrier_race", "throughput_bars", "gw_sweep", "summary", "hbars", "bandwidth_curves", "load_curves"]

_PALETTE = {
    "synthesize": "#8c8c8c",
    "gpu_queue": "#d9d9d9",
    "prove": "#c6dbef",
    "split_vectors": "#bcbd22",
    "prep_msm": "#ff7f0e",
    "b_g2_msm": "#ffbb78",
    "pre_lock": "#c5b0d5",
    "mutex_wait": "#d62728",
    "ntt_msm_h": "#1f77b4",
    "h2d": "#9edae5",
    "ntt": "#17becf",
    "h_msm": "#393b79",
    "barrier_wait": "#e377c2",
    "batch_add": "#2ca02c",
    "tail_msm": "#98df8a",
    "mutex_held": "#9467bd",
    "finalize": "#8c564b",
    "tracker_lock": "#c49c94",
    "malloc_trim": "#7f7f7f",
    "async_dealloc": "#dbdb8d",
    "kernel": "#3182bd",
    "memcpy_htod": "#9edae5",
    "memcpy_dtoh": "#fdd0a2",
    # categories of the GPU critical path (zkgpu.metrics.GPU_PATH) that are not phases
    "lock_free": "#eeeeee",
    "lock_other": "#b5a1d6",
}
#: Fixed colour per phase and per GPU-path category (all of :data:`zkgpu.events.PHASES`, the
#: categories of :data:`zkgpu.metrics.GPU_PATH`, and the nsys row names).
PHASE_COLORS: dict[str, str] = {p: _PALETTE.get(p, "#999999") for p in PHASES} | _PALETTE
#: Fixed colour per utilization (:data:`zkgpu.metrics.UTILIZATIONS`); compute is the headline (dark).
METRIC_COLORS: dict[str, str] = {"compute_util": "#08306b", "kernel_util": "#6baed6", "timeline_util": "#c6dbef"}
#: Fixed colour and marker per H2D path (:data:`zkgpu.transfer.PATHS`), from a palette no phase
#: uses (golds, olives, plum, black), so that no colour means a phase in one figure and a path in
#: the next; the fix (pinned_pool) is black.
PATH_STYLES: dict[str, tuple[str, str]] = {
    "pageable": ("#8c6d31", "o"), "pageable_memcpy": ("#e7ba52", "v"), "cupy_asarray": ("#cedb9c", "^"),
    "registered": ("#637939", "s"), "pinned_staging": ("#bd9e39", "P"), "pinned_pool": ("#252525", "D"),
    "pinned_raw": ("#7b4173", "X"),
}
#: Measured against modelled values (throughput bars, the gw sweep): grey bars / white hatched
#: bars, neither a phase's nor a path's colour.
SERIES_STYLE: dict[str, dict[str, object]] = {
    "measured": {"color": "#636363"},
    "model": {"color": "white", "edgecolor": "#252525", "hatch": "////"},
}
_UNKNOWN = "#bbbbbb"
_THIN = ("prove", "mutex_held")  # drawn as thin bars above the phases they contain
_SUBS = ("h2d", "ntt", "h_msm")  # drawn on top of the ntt_msm_h bar they split
#: Phases of the prep_msm / finalize side threads, drawn in the lower half of a worker's lane so they
#: do not hide the worker's main chain (pre_lock, mutex_wait, ntt_msm_h, barrier_wait, ...).
SIDE_PHASES: tuple[str, ...] = ("split_vectors", "prep_msm", "b_g2_msm", "async_dealloc", "finalize", "malloc_trim", "tracker_lock")
#: Phases a timeline draws by default: a GPU worker's chain, its side threads and the containers.
#: Left out (and named in the caption): synthesis and queueing (CPU lanes of 16 overlapping
#: intervals) and the finalizer's host bookkeeping (tracker_lock, malloc_trim, async_dealloc).
TIMELINE_PHASES: tuple[str, ...] = ("prove", "mutex_held", "pre_lock", "mutex_wait", "ntt_msm_h", "h2d", "ntt", "h_msm",
                                    "barrier_wait", "batch_add", "tail_msm", "split_vectors", "prep_msm", "b_g2_msm", "finalize",
                                    "kernel", "memcpy_htod", "memcpy_dtoh")
#: Narrowest drawn interval, in pixels (at the figure's dpi).
MIN_PX = 1.5
_PATH_LABELS = {"lock_free": "GPU free (no worker holds the lock)", "h2d": "H2D (exposed)", "ntt": "NTT and the rest of ntt_msm_h", "h_msm": "H MSM",
                "barrier_wait": "barrier_wait (lock held)", "batch_add": "batch_add", "tail_msm": "tail_msm",
                "lock_other": "lock held, other"}


def path_style(path: str) -> tuple[str, str]:
    """(colour, marker) of an H2D path (:data:`PATH_STYLES`; a grey with a '*' for other names)."""
    return PATH_STYLES.get(path, ("#969696", "*"))


def phase_color(phase: str) -> str:
    """The fixed colour of ``phase`` (grey for unknown names)."""
    return PHASE_COLORS.get(phase, _UNKNOWN)


def caption(fig: Figure) -> str:
    """The caption a plotting function of this module attached to ``fig`` ('' if none): what is
    drawn, in words built from the data."""
    return getattr(fig, "zkgpu_caption", "")


def _set_caption(fig: Figure, text: str) -> None:
    fig.zkgpu_caption = (caption(fig) + " " + text).strip()


def _fig_ax(ax: Axes | None, figsize) -> tuple[Figure, Axes]:
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    return ax.figure, ax


def _lane(row, multi_gpu: bool) -> str:
    g, w = row["gpu"], row["worker"]
    if pd.isna(w):
        return "CPU / unassigned" if pd.isna(g) else f"gpu {int(g)}"
    return f"gpu {int(g)} worker {int(w)}" if (multi_gpu and not pd.isna(g)) else f"worker {int(w)}"


def _one_run(events: pd.DataFrame, run: str | None) -> tuple[pd.DataFrame, str]:
    runs = events["run"].dropna().unique().tolist()
    if run is None:
        if len(runs) > 1:
            raise ValueError(f"several runs in the table {runs[:5]}; pass run=")
        return events, (runs[0] if runs else "")
    if run not in runs:
        raise ValueError(f"run {run!r} not in the table; runs: {runs[:10]}")
    return events[events["run"] == run], run


def _px_per_unit(ax: Axes, span: float) -> float:
    """Pixels per x unit of ``ax`` when its x range is ``span``."""
    fig = ax.figure
    return ax.get_position().width * fig.get_figwidth() * fig.dpi / span if span > 0 else 1.0


def _draw_timeline(ax: Axes, df: pd.DataFrame, t0: int, lanes: list[str], xspan: float) -> tuple[list[str], int, int, dict[str, int], float]:
    """Draw the rows of ``df`` (lane column set) onto ``ax``; returns (phases drawn, intervals,
    intervals widened to MIN_PX, widened per phase, MIN_PX in seconds at this scale)."""
    min_w = MIN_PX / _px_per_unit(ax, xspan)
    drawn: list[str] = []
    widened: dict[str, int] = {}
    n = 0
    for i, lane in enumerate(lanes):
        sub = df[df["lane"] == lane]
        order = {p: k for k, p in enumerate(("ntt_msm_h", *_SUBS))}  # sub-phases drawn over ntt_msm_h
        for phase in sorted(sub["phase"].unique(), key=lambda p: order.get(p, -1)):
            grp = sub[sub["phase"] == phase]
            s = (grp["start_ns"].to_numpy() - t0) / 1e9
            w = (grp["end_ns"].to_numpy() - grp["start_ns"].to_numpy()) / 1e9
            thin = w < min_w
            if thin.any():
                widened[phase] = widened.get(phase, 0) + int(thin.sum())
            w = np.maximum(w, min_w)
            if phase in _THIN:
                y, h = (i - 0.47, 0.08) if phase == "prove" else (i - 0.37, 0.08)
            elif phase in SIDE_PHASES and lane != "CPU / unassigned":
                y, h = i + 0.06, 0.34
            else:
                y, h = i - 0.27, 0.31
            ax.broken_barh(list(zip(s, w)), (y, h), facecolors=phase_color(phase), edgecolor="none")
            n += len(grp)
            if phase not in drawn:
                drawn.append(phase)
    return drawn, n, sum(widened.values()), widened, min_w


def _legend(ax: Axes, names: Sequence[str], labels: Mapping[str, str] | None = None, **kw) -> None:
    """A legend of exactly ``names`` (colour patches), in :data:`zkgpu.events.PHASES` order for phases."""
    labels = labels or {}
    opts = {"loc": "upper left", "bbox_to_anchor": (1.01, 1), "fontsize": "small", "frameon": False} | kw
    ax.legend(handles=[Patch(facecolor=phase_color(p), edgecolor="#888888", linewidth=0.3, label=labels.get(p, p)) for p in names], **opts)


def _phase_sort(names) -> list[str]:
    order = {p: k for k, p in enumerate(PHASES)}
    return sorted(names, key=lambda p: (order.get(p, len(order)), p))


def _prepare(events: pd.DataFrame, run: str | None, phases: Sequence[str] | None) -> tuple[pd.DataFrame, str, list[str], int]:
    """The rows of one run to draw, its name, the phases left out, and the run's first start (ns:
    x = 0, the start of the metrics' window, so the synthesis ramp-up shows as an empty stretch)."""
    df, name = _one_run(events, run)
    t0 = int(df["start_ns"].min()) if len(df) else 0
    keep = list(phases) if phases is not None else list(TIMELINE_PHASES)
    left_out = sorted(set(df["phase"].dropna()) - set(keep))
    df = df[df["phase"].isin(keep)]
    if df["phase"].isin(_SUBS).any():  # ntt_msm_h is drawn as its parts, which cover it
        df = df[df["phase"] != "ntt_msm_h"]
    if not len(df):
        raise ValueError("no events to draw")
    return df.copy(), name, left_out, t0


def _timeline_caption(drawn: list[str], n: int, thin: int, widened: dict[str, int], left_out: list[str], min_s: float) -> str:
    parts = []
    if "prove" in drawn or "mutex_held" in drawn:
        parts.append("In each worker's lane the thin top bar is the partition's prove interval (GPU_START → GPU_END) and the thin bar "
                     "below it the time the worker holds the GPU mutex; the upper row is the worker's chain (pre_lock, mutex_wait, "
                     "ntt_msm_h drawn as its parts h2d, ntt, h_msm, then barrier_wait, batch_add, tail_msm) and the lower row its "
                     "CPU side threads (prep_msm, b_g2_msm, finalize).")
    px = min_s * 1000  # ms that MIN_PX pixels span at this scale
    if thin:
        what = ", ".join(f"{k} {v}" for k, v in sorted(widened.items(), key=lambda kv: -kv[1]))
        parts.append(f"{thin} of {n} intervals are narrower than {MIN_PX} px (about {px:.1f} ms at this scale) and are "
                     f"drawn {MIN_PX} px wide so that they stay visible: {what}.")
    else:
        parts.append(f"All {n} intervals are at least {MIN_PX} px wide at this scale.")
    if left_out:
        parts.append("Not drawn: " + ", ".join(left_out) + ".")
    return " ".join(parts)


def timeline(events: pd.DataFrame, run: str | None = None, phases: Sequence[str] | None = None, ax: Axes | None = None,
             title: str | None = None, xlim: tuple[float, float] | None = None) -> tuple[Figure, Axes]:
    """Per-worker Gantt chart of one run, coloured by phase (:data:`PHASE_COLORS`).

    Lanes: one per worker (``worker N``; ``gpu G worker N`` when the run spans several GPUs); rows
    without worker go to ``gpu G`` (when they have a GPU) or ``CPU / unassigned``. x = seconds since
    the run's first drawn event. Container phases (``prove``, ``mutex_held``) are thin bars at the
    top of a lane, the side threads (:data:`SIDE_PHASES`) its lower row, the worker's chain its
    upper row, with ``h2d``/``ntt``/``h_msm`` drawn over the ntt_msm_h they split. ``phases``
    filters (default :data:`TIMELINE_PHASES`; the caption names what is left out). Intervals
    narrower than :data:`MIN_PX` are widened to it and counted in the caption. ``xlim`` (seconds)
    fixes the x range (shared axes). The legend lists the phases drawn.

    Raises:
        ValueError: several runs and no ``run``; ``run`` not found; nothing to draw.
    """
    df, name, left_out, t0 = _prepare(events, run, phases)
    multi = df["gpu"].dropna().nunique() > 1
    df["lane"] = [_lane(r, multi) for r in df[["gpu", "worker"]].to_dict("records")]
    lanes = sorted(df["lane"].unique(), key=lambda s: (s.startswith("CPU"), s))
    fig, ax = _fig_ax(ax, (11, 0.65 * len(lanes) + 1.9))
    if ax.figure is fig and len(fig.axes) == 1:
        fig.subplots_adjust(left=0.1, right=0.8, bottom=0.2 if len(lanes) < 3 else 0.12)
    xspan = (xlim[1] - xlim[0]) if xlim else (int(events["end_ns"].max() if run is None else events.loc[events["run"] == run, "end_ns"].max()) - t0) / 1e9
    drawn, n, thin, widened, min_s = _draw_timeline(ax, df, t0, lanes, xspan)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.invert_yaxis()
    ax.set_xlim(*(xlim or (0, xspan * 1.01)))
    ax.set_xlabel("time since the run's first event (s)")
    ax.set_title(title or f"timeline: {name}")
    _legend(ax, _phase_sort(drawn))
    ax.grid(axis="x", alpha=0.3)
    _set_caption(fig, _timeline_caption(drawn, n, thin, widened, left_out, min_s))
    return fig, ax


def timelines(runs: Mapping[str, pd.DataFrame], phases: Sequence[str] | None = None, title: str | None = None) -> tuple[Figure, np.ndarray]:
    """Several runs' timelines stacked on **one time axis** (same seconds per pixel), one panel per
    run (``{panel title: event table of one run}``), one legend for all panels.

    Raises:
        ValueError: no runs, or a table with several runs or nothing to draw.
    """
    if not runs:
        raise ValueError("no runs to draw")
    prepared = {k: _prepare(v, None, phases) for k, v in runs.items()}
    spans = {k: (int(v["end_ns"].max()) - int(v["start_ns"].min())) / 1e9 for k, v in runs.items()}
    xmax = max(spans.values())
    nl = {k: len({_lane(r, d["gpu"].dropna().nunique() > 1) for r in d[["gpu", "worker"]].to_dict("records")}) for k, (d, _, _, _) in prepared.items()}
    fig, axes = plt.subplots(len(runs), 1, figsize=(11, sum(0.65 * n + 0.9 for n in nl.values()) + 0.8), sharex=True,
                             gridspec_kw={"height_ratios": [nl[k] + 0.6 for k in runs]}, squeeze=False)
    axes = axes[:, 0]
    fig.subplots_adjust(left=0.12, right=0.78, hspace=0.45)
    drawn_all: list[str] = []
    caps = []
    tot_n = tot_thin = 0
    wid_all: dict[str, int] = {}
    left_all: set[str] = set()
    for ax, (k, (df, _, left, t0)) in zip(axes, prepared.items()):
        df["lane"] = [_lane(r, df["gpu"].dropna().nunique() > 1) for r in df[["gpu", "worker"]].to_dict("records")]
        lanes = sorted(df["lane"].unique(), key=lambda s: (s.startswith("CPU"), s))
        drawn, n, thin, wid, min_s = _draw_timeline(ax, df, t0, lanes, xmax)
        drawn_all += [p for p in drawn if p not in drawn_all]
        tot_n += n
        tot_thin += thin
        for p, c in wid.items():
            wid_all[p] = wid_all.get(p, 0) + c
        left_all |= set(left)
        ax.set_yticks(range(len(lanes)))
        ax.set_yticklabels(lanes)
        ax.set_ylim(-0.6, len(lanes) - 0.4)
        ax.invert_yaxis()
        ax.set_title(f"{k}: wall span {spans[k]:.2f} s", fontsize="medium", loc="left")
        ax.grid(axis="x", alpha=0.3)
        caps.append(f"{k} {spans[k]:.2f} s")
    axes[-1].set_xlim(0, xmax * 1.01)
    axes[-1].set_xlabel("time since the run's first event (s), the same scale in every panel")
    _legend(axes[0], _phase_sort(drawn_all))
    if title:
        fig.suptitle(title)
    _set_caption(fig, f"Panels share one time axis, x = 0 at each run's first event (synthesis of its first partition; wall spans: {', '.join(caps)}). " + _timeline_caption(drawn_all, tot_n, tot_thin, wid_all, sorted(left_all), min_s))
    return fig, axes


def _as_util_frame(data: pd.DataFrame) -> pd.DataFrame:
    cols = list(UTILIZATIONS)
    if set(cols) & set(data.columns):
        u = data.set_index("run") if "run" in data.columns else data
        return u.reindex(columns=cols).astype(float)
    return utilization(data)[cols]


def utilization_bars(data: pd.DataFrame, ax: Axes | None = None, reference: Mapping[str, Mapping[str, float]] | None = None,
                     title: str | None = None) -> tuple[Figure, Axes]:
    """The three utilizations side by side (in %), one group per run: compute utilization (the
    headline, dark), upstream's kernel utilization, TIMELINE (:data:`zkgpu.metrics.UTILIZATIONS`).

    ``data`` is an event table (computed with :func:`zkgpu.metrics.utilization`) or a frame with
    columns among ``compute_util``, ``kernel_util``, ``timeline_util`` (fractions; index or ``run``
    column names the groups). ``reference`` adds groups of published values, e.g.
    ``{"cuzk, RTX 5070 Ti (published)": {"timeline_util": 0.901, "kernel_util": 0.463}}``
    (data/reference/cuzk_utilization.csv); a metric a group lacks is marked "n/a".

    Raises:
        ValueError: nothing to draw.
    """
    u = _as_util_frame(data)
    if reference:
        u = pd.concat([u, pd.DataFrame.from_dict({k: dict(v) for k, v in reference.items()}, orient="index").reindex(columns=u.columns)])
    if not len(u):
        raise ValueError("nothing to draw")
    fig, ax = _fig_ax(ax, (max(6, 1.6 * len(u) + 2.5), 4.4))
    x = np.arange(len(u))
    w = 0.27
    for j, m in enumerate(UTILIZATIONS):
        v = 100 * u[m].to_numpy(dtype=float)
        bars = ax.bar(x + (j - 1) * w, np.nan_to_num(v), w, color=METRIC_COLORS[m], edgecolor="#4a6fa5", linewidth=0.5, label=UTILIZATIONS[m][0])
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
    _set_caption(fig, "Three bars per group, each a share of the same window (the run's wall span): compute utilization "
                 "(dark, kernels only), upstream's kernel utilization (H2D copies counted as GPU work) and TIMELINE "
                 f"(GPU_START → GPU_END intervals, waits counted). {lead}." + (" Published groups have no compute figure (n/a)." if reference else ""))
    return fig, ax


def _stacked(table: pd.DataFrame, cats: Sequence[str], ax: Axes | None, xlabel: str, title: str, normalize: bool = False,
             labels: Mapping[str, str] | None = None, totals: Mapping[str, str] | None = None, figw: float = 10.0) -> tuple[Figure, Axes, pd.DataFrame]:
    """Horizontal stacked bars, one per row of ``table`` (top to bottom in its order)."""
    if not len(table):
        raise ValueError("nothing to draw")
    missing = set(cats) - set(table.columns)
    if missing:
        raise ValueError(f"table lacks columns {sorted(missing)}")
    v = table[list(cats)].astype(float).fillna(0.0)
    if normalize:
        v = v.div(v.sum(axis=1).replace(0.0, np.nan), axis=0).fillna(0.0) * 100
    fig, ax = _fig_ax(ax, (figw, 0.5 * len(v) + 1.8))
    y = np.arange(len(v))
    left = np.zeros(len(v))
    drawn = []
    for c in cats:
        w = v[c].to_numpy()
        if (w > 0).any():
            ax.barh(y, w, left=left, color=phase_color(c), edgecolor="#888888" if c == "lock_free" else "none", linewidth=0.5, height=0.62)
            drawn.append(c)
        left += w
    for yi, (idx, tot) in enumerate(zip(v.index, left)):
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
        # room for the longest bar-end label inside the axes: x-small text is ~0.075 inch per character
        chars = max((len(str(t)) for t in (totals or {}).values()), default=0)
        axis_in = max(1.0, ax.get_position().width * fig.get_figwidth())
        ax.set_xlim(0, float(left.max()) / max(0.3, 1.0 - 0.075 * (chars + 2) / axis_in) if len(left) else 1)
    # the legend lists what a reader can see: a category under 1 % of the longest bar in every row
    # (e.g. "lock held, other", ~0.5 ms) is drawn but not listed (the caption still gives its ms)
    seen = [c for c in drawn if float(v[c].max()) >= 0.01 * float(left.max())]
    _legend(ax, seen, labels)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig, ax, v


def critical_path(table: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """Per partition, what the GPU does and waits for: one bar per run (rows of
    :func:`zkgpu.metrics.critical_path`, drawn in the table's order), segments in
    :data:`zkgpu.metrics.GPU_PATH` order. The segments never overlap in time, so a bar's length is
    the GPU's wall time per partition (60 000 / partitions per minute ms).

    Raises:
        ValueError: the table lacks a category column or is empty.
    """
    tot = {i: f"{r['ms_per_partition']:.0f} ms = {60000 / r['ms_per_partition']:.0f} partitions/min" for i, r in table.iterrows()
           if r.get("ms_per_partition", 0) and np.isfinite(r.get("ms_per_partition", np.nan))}
    fig, ax, v = _stacked(table, list(GPU_PATH), ax, "ms of GPU time per partition", title or "the GPU's time per partition, along its critical path",
                          labels=_PATH_LABELS, totals=tot)
    first = v.index[0]
    parts = ", ".join(f"{_PATH_LABELS[c]} {v.at[first, c]:.0f}" for c in GPU_PATH if v.at[first, c] >= 0.5)
    _set_caption(fig, "Each bar is one GPU's wall time divided by the partitions it finished; the segments are disjoint "
                 "stretches of that time (no two overlap), in the order of the GPU's critical path: GPU free (no worker "
                 "holds the mutex), then, with the mutex held, exposed H2D, NTT, H MSM, barrier_wait, batch_add, tail_msm "
                 f"and the rest of the held time. {first}: {parts} ms.")
    return fig, ax


def gpu_window(table: pd.DataFrame, keys: Mapping[str, str], ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """Where each run's GPU window goes, in % of the window, one bar per run (rows of
    :func:`zkgpu.bottleneck.idle_table`, drawn in the table's order): compute, exposed H2D and the idle
    time named by what the workers did meanwhile.

    Args:
        table: shares (fractions) indexed by run, one column per cause.
        keys: ``{cause column: phase}`` giving each cause the colour of the phase it stands for
            (:data:`zkgpu.gpu_time.CAUSE_PHASES`); the legend shows the cause's name.

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
    _set_caption(fig, "Each bar is one run's GPU window split into disjoint parts: the GPU computing, copies no kernel hid, "
                 "and idle time attributed to what the workers were doing meanwhile (a cause claims idle time in the "
                 f"legend's order). {first}: {parts}.")
    return fig, ax


def held_breakdown(table: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """What the held mutex is spent on, in % of the held time, one bar per run: the held categories
    of :func:`zkgpu.metrics.critical_path` (exposed H2D, NTT, H MSM = ntt_msm_h; barrier_wait
    inside the lock; batch_add; tail_msm; other)."""
    cats = [c for c in GPU_PATH if c != "lock_free"]
    fig, ax, v = _stacked(table, cats, ax, "share of the time the GPU mutex is held (%)", title or "what the held mutex is spent on",
                          normalize=True, labels=_PATH_LABELS)
    bits = "; ".join(f"{i}: ntt_msm_h {r['h2d'] + r['ntt'] + r['h_msm']:.0f}%, barrier_wait {r['barrier_wait']:.1f}%" for i, r in v.iterrows())
    _set_caption(fig, "Each bar is 100% of the time some worker holds the GPU mutex, split into the phases run under it "
                 f"(ntt_msm_h as exposed H2D, NTT and H MSM). {bits}.")
    return fig, ax


def ntt_msm_h_split(table: pd.DataFrame, ax: Axes | None = None, title: str | None = None, gbps: Mapping[str, float] | None = None) -> tuple[Figure, Axes]:
    """ntt_msm_h per partition split into exposed H2D, NTT and H MSM (ms), one bar per run (rows of
    :func:`zkgpu.metrics.ntt_msm_h_split`); ``gbps`` ({run: effective H2D GB/s}) labels the bars."""
    tot = {i: f"{r['ntt_msm_h']:.0f} ms" + (f", H2D at {gbps[i]:.1f} GB/s" if gbps and i in gbps and np.isfinite(gbps[i]) and r["h2d"] > 0 else "")
           for i, r in table.iterrows()}
    fig, ax, v = _stacked(table, ["h2d", "ntt", "h_msm"], ax, "ms per partition", title or "inside ntt_msm_h", labels=_PATH_LABELS, totals=tot, figw=9.0)
    bits = "; ".join(f"{i}: {r['h2d']:.1f} ms H2D of {r.sum():.1f} ms ({r['h2d'] / r.sum():.1%})" for i, r in v.iterrows() if r.sum() > 0)
    _set_caption(fig, "Mean ntt_msm_h per partition: the exposed H2D (copy time no kernel hid, CUDA events), the H MSM, and "
                 "the rest — the NTTs, the copy time they hid, and any host-side work inside ntt_msm_h such as registering "
                 f"the buffers (registered). {bits}.")
    return fig, ax


def barrier_race(panels: Mapping[str, pd.DataFrame], title: str | None = None) -> tuple[Figure, np.ndarray]:
    """ntt_msm_h against prep_msm per partition, one panel per source (``{title: frame}`` with
    columns ``prep_msm_ms``, ``ntt_msm_h_ms`` and optionally ``reach_barrier_ms``, as
    :func:`zkgpu.metrics.barrier_race`), each divided by its source's median prep_msm so that a
    4 s partition and a 0.4 s one share the y axis (1.0 = the median prep_msm).

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
    for ax, (name, df) in zip(axes, panels.items()):
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
        ax.set_xticks(x)
        ax.set_xticklabels([str(i) for i in (d["partition"] if "partition" in d.columns else d.index)], fontsize="x-small")
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
    _set_caption(fig, "Per partition, two bars divided by the median prep_msm of their own source (dotted line = 1): prep_msm "
                 "(left) and the time the worker needs to reach the barrier (right, stacked from its phases). A worker "
                 "waits at the barrier only if the left bar is the taller. " + "; ".join(caps) + ".")
    return fig, axes


def throughput_bars(table: pd.DataFrame, ax: Axes | None = None, bound: float | None = None, model: Mapping[str, float] | None = None,
                    title: str | None = None) -> tuple[Figure, Axes]:
    """Measured partitions per minute per run (``table`` indexed by run with ``partitions_per_min``),
    optionally the model's prediction per run (``model``: {run: partitions/min}, white hatched bars)
    and the compute-only bound (``bound``, a dashed line; each bar then says its share of it)."""
    if "partitions_per_min" not in table.columns or not len(table):
        raise ValueError("table needs a partitions_per_min column and rows")
    fig, ax = _fig_ax(ax, (max(6, 1.1 * len(table) + 3), 4.2))
    x = np.arange(len(table))
    v = table["partitions_per_min"].astype(float).to_numpy()
    w = 0.4 if model else 0.6
    bars = ax.bar(x - (w / 2 if model else 0), v, w, **SERIES_STYLE["measured"], label="measured")
    lab = [f"{a:.0f}" + (f"\n({a / bound:.0%})" if bound else "") for a in v]
    ax.bar_label(bars, labels=lab, fontsize="x-small", padding=2)
    caps = [f"{i} {a:.0f}" for i, a in zip(table.index, v)]
    if model:
        mv = np.array([model.get(i, np.nan) for i in table.index], dtype=float)
        mb = ax.bar(x + w / 2, np.nan_to_num(mv), w, **SERIES_STYLE["model"], linewidth=0.6, label="model prediction")
        ax.bar_label(mb, labels=[f"{m:.0f}" if np.isfinite(m) else "" for m in mv], fontsize="x-small", padding=2, color="#252525")
        caps.append("white hatched bars, the model's prediction: " + ", ".join(f"{i} {m:.0f}" for i, m in zip(table.index, mv) if np.isfinite(m)))
    top = max(np.nanmax(v), bound or 0, np.nanmax(list(model.values())) if model else 0)
    if bound:
        ax.axhline(bound, color="#333333", ls="--", lw=1, label=f"compute-only bound ({bound:.0f}/min)")
    ax.set_ylim(0, top * 1.25)
    ax.set_xticks(x)
    ax.set_xticklabels([str(i) for i in table.index], rotation=15, ha="right")
    ax.set_ylabel("partitions per minute")
    ax.set_title(title or "throughput")
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    _set_caption(fig, "Bars: measured partitions per minute over each run's wall span (" + "; ".join(caps) + ")"
                 + (f"; dashed line: the compute-only bound, {bound:.0f} partitions/min (60 000 / GPU kernel ms per partition, a model figure, not the "
                    "measured compute_only run); in brackets each bar's share of it" if bound else "") + ".")
    return fig, ax


def gw_sweep(measured: Mapping[int, float], model: Mapping[int, float] | None = None, bound: float | None = None,
             ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """Throughput against gw (GPU workers per GPU): measured points (``{gw: partitions/min}``),
    optionally the model's prediction and the compute-only bound."""
    if not measured:
        raise ValueError("no measured points")
    fig, ax = _fig_ax(ax, (6.5, 4.0))
    g = sorted(measured)
    ax.plot(g, [measured[k] for k in g], "o-", color=SERIES_STYLE["measured"]["color"], label="measured")
    for k in g:
        ax.annotate(f"{measured[k]:.0f}", (k, measured[k]), textcoords="offset points", xytext=(0, 7), ha="center", fontsize="x-small")
    if model:
        gm = sorted(model)
        ax.plot(gm, [model[k] for k in gm], "D--", color=SERIES_STYLE["model"]["edgecolor"], markerfacecolor="white", label="model prediction")
    if bound:
        ax.axhline(bound, color="#333333", ls="--", lw=1, label=f"compute-only bound ({bound:.0f}/min)")
    ax.set_xticks(g)
    ax.set_xlabel("gw (GPU workers sharing one GPU mutex)")
    ax.set_ylabel("partitions per minute")
    ax.set_ylim(0, max([*measured.values(), *(model or {}).values(), bound or 0]) * 1.2)
    ax.set_title(title or "throughput against gw")
    ax.legend(fontsize="small", frameon=False, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _set_caption(fig, "Measured partitions per minute at gw = " + ", ".join(f"{k}: {measured[k]:.0f}" for k in g)
                 + ("; model: " + ", ".join(f"{k}: {model[k]:.0f}" for k in sorted(model)) if model else "")
                 + (f"; compute-only bound {bound:.0f}" if bound else "") + ".")
    return fig, ax


def hbars(values: Mapping[str, float], unit: str = "%", ax: Axes | None = None, title: str | None = None, color: str | None = None,
          full_scale: bool = True) -> tuple[Figure, Axes]:
    """Horizontal bars of a few named values (``unit`` "%": fractions drawn in %, on a 0–100 %
    axis unless ``full_scale`` is False; else as given), labelled with their values."""
    if not values:
        raise ValueError("nothing to draw")
    names = list(values)
    v = np.array([values[k] for k in names], dtype=float) * (100 if unit == "%" else 1)
    fig, ax = _fig_ax(ax, (8, 0.45 * len(names) + 1.4))
    bars = ax.barh(np.arange(len(names)), v, color=color or "#4c72b0", height=0.6)
    ax.bar_label(bars, labels=[(f"{a:.2f}%" if unit == "%" else f"{a:,.1f} {unit}") for a in v], fontsize="x-small", padding=3)
    ax.set_yticks(np.arange(len(names)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlim(0, 112 if (unit == "%" and full_scale) else max(v.max(), 1e-9) * 1.25)
    ax.set_xlabel(unit)
    ax.set_title(title or "")
    fig.tight_layout()
    _set_caption(fig, "; ".join(f"{k}: {(f'{a:.2f}%' if unit == '%' else f'{a:,.1f} {unit}')}" for k, a in zip(names, v)) + ".")
    return fig, ax


def summary(table: pd.DataFrame, path: pd.DataFrame, split: pd.DataFrame, bound: float | None = None,
            reference: Mapping[str, Mapping[str, float]] | None = None, title: str | None = None) -> tuple[Figure, np.ndarray]:
    """The investigation on one page: (a) the three utilizations per scenario, (b) throughput per
    scenario against the compute-only bound, (c) the GPU critical path per partition, (d) ntt_msm_h
    split into exposed H2D, NTT and H MSM. ``table``: :func:`zkgpu.replay.scenario_table`;
    ``path``: :func:`zkgpu.metrics.critical_path`; ``split``: :func:`zkgpu.metrics.ntt_msm_h_split`
    (all indexed by scenario, drawn in ``table``'s order)."""
    order = list(table.index)
    fig = plt.figure(figsize=(16, 12.5))
    gs = fig.add_gridspec(2, 2)
    axes = np.array([fig.add_subplot(gs[i, j]) for i in range(2) for j in range(2)])
    gb = table["h2d_gbps"].to_dict() if "h2d_gbps" in table.columns else None
    for i, draw in enumerate((lambda a: utilization_bars(table, ax=a, reference=reference, title="(a) three utilizations"),
                              lambda a: throughput_bars(table, ax=a, bound=bound, title="(b) throughput"),
                              lambda a: critical_path(path.reindex(order), ax=a, title="(c) the GPU's time per partition"),
                              lambda a: ntt_msm_h_split(split.reindex(order), ax=a, gbps=gb, title="(d) inside ntt_msm_h"))):
        a = axes[i]
        draw(a)
        h, lab = a.get_legend_handles_labels() if a.get_legend() is None else (a.get_legend().legend_handles, [t.get_text() for t in a.get_legend().get_texts()])
        a.legend(h, lab, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4 if len(lab) > 3 else len(lab), fontsize="small", frameon=False)
    fig.suptitle(title or "the investigation on one page", fontsize="x-large")
    fig.tight_layout()
    # one short caption: what each panel is; the numbers are on the panels, in the scenario table
    # and in the conclusions (the panels' own long captions are for their stand-alone figures)
    fig.zkgpu_caption = ("(a) compute utilization (dark, kernels only: the headline), upstream's kernel utilization "
                         "(copies counted) and TIMELINE over each run's wall span; (b) measured partitions per minute"
                         + (f", in brackets the share of the compute-only bound ({bound:.0f}/min, dashed; a model "
                            "figure, not the compute_only run)" if bound else "")
                         + "; (c) the GPU's time per partition along its critical path (means per partition; the "
                         "segments never overlap and add up to 60 000 / throughput); (d) ntt_msm_h split into exposed "
                         "H2D, NTT and H MSM (means per partition), with the effective H2D rate of a, b, c.")
    return fig, axes


def size_label(nbytes: float) -> str:
    """A byte count in binary units: 1048576 -> "1 MiB", 4294967296 -> "4 GiB", 1536 -> "1.5 KiB"."""
    v = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(v) < 1024 or unit == "GiB":
            return f"{v:g} {unit}" if v == int(v) else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:g} GiB"


def _require(df: pd.DataFrame, need: set[str], what: str) -> None:
    """ValueError naming the missing columns, or an empty ``what`` frame."""
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"{what} frame lacks columns {sorted(missing)}")
    if not len(df):
        raise ValueError(f"empty {what} frame")


def bandwidth_curves(df: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """GB/s vs transfer size: one colour per ``path``; reused buffers solid, fresh buffers dashed.

    Input columns: ``path`` (str), ``size_bytes`` (int), ``fresh_buffer`` (bool: buffer allocated /
    registered inside the timed call), ``gbps`` (float, 1e9 bytes/s). Several rows per point are
    averaged (median). x is log2-scaled in bytes.

    Raises:
        ValueError: a column is missing or the frame is empty.
    """
    _require(df, {"path", "size_bytes", "fresh_buffer", "gbps"}, "bandwidth")
    fig, ax = _fig_ax(ax, (7.5, 4.5))
    paths = list(dict.fromkeys(df["path"].astype(str)))
    colors = {p: path_style(p)[0] for p in paths}
    d = df.assign(path=df["path"].astype(str), fresh_buffer=df["fresh_buffer"].astype(bool))
    med = d.groupby(["path", "fresh_buffer", "size_bytes"], sort=True)["gbps"].median().reset_index()
    for (p, fresh), grp in med.groupby(["path", "fresh_buffer"], sort=False):
        grp = grp.sort_values("size_bytes")
        ax.plot(grp["size_bytes"], grp["gbps"], marker=path_style(p)[1], ms=4, color=colors[p], linestyle="--" if fresh else "-", label=f"{p} ({'fresh' if fresh else 'reused'})")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_label(v)))
    ax.set_xlabel("transfer size")
    ax.set_ylabel("GB/s")
    ax.set_title(title or "H2D bandwidth vs size")
    handles = [Line2D([], [], color=colors[p], marker=path_style(p)[1], label=p) for p in paths]
    kinds = set(med["fresh_buffer"])
    handles += [Line2D([], [], color="k", linestyle="-" if f is False else "--", label="fresh buffer" if f else "reused buffer") for f in (False, True) if f in kinds]
    ax.legend(handles=handles, fontsize="small", frameon=False)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    top = med[med["size_bytes"] == med["size_bytes"].max()]
    at = "; ".join(f"{r.path} {'fresh' if r.fresh_buffer else 'reused'} {r.gbps:.1f}" for r in top.itertuples())
    _set_caption(fig, f"Median GB/s (1e9 B/s, CUDA events) of each H2D path per transfer size; solid lines reuse their buffer, "
                 f"dashed ones allocate or pin it inside the timed call. At {size_label(med['size_bytes'].max())}: {at} GB/s.")
    return fig, ax


def load_curves(df: pd.DataFrame, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """H2D GB/s vs the host's background DRAM traffic: one line per ``path``, a point per load level.

    Input: the frame of :func:`zkgpu.hostload.h2d_under_load` (columns ``load_threads``, ``path``,
    ``gbps``, ``load_gbps``; 1e9 bytes/s). Each point is the median over its copies, x the median
    DRAM traffic of the load at that level, labelled with the number of load threads. y is log-scaled.

    Raises:
        ValueError: a column is missing or the frame is empty.
    """
    _require(df, {"load_threads", "path", "gbps", "load_gbps"}, "load")
    fig, ax = _fig_ax(ax, (7.0, 4.0))
    med = df.groupby(["path", "load_threads"], sort=True)[["gbps", "load_gbps"]].median().reset_index()
    x_of = med.groupby("load_threads")["load_gbps"].max()  # one x per level (the load's traffic)
    for path, grp in med.groupby("path", sort=False):
        grp = grp.sort_values("load_threads")
        x = x_of.loc[grp["load_threads"]].to_numpy()
        ax.plot(x, grp["gbps"], marker=path_style(str(path))[1], color=path_style(str(path))[0], label=str(path))
        if path == med["path"].iloc[0]:
            for xi, (_, r) in zip(x, grp.iterrows()):
                ax.annotate(f"{int(r['load_threads'])} thr", (xi, r["gbps"]), textcoords="offset points", xytext=(0, 6), fontsize="x-small", ha="center")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")  # 60, 6, 3 — never 6×10^1
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "2358" else ""))
    ax.set_xlabel("background DRAM traffic of the load threads (GB/s)")
    ax.set_ylabel("H2D GB/s")
    ax.set_title(title or "H2D bandwidth under host memory load")
    ax.legend(fontsize="small", frameon=False)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    pts = "; ".join(f"{p}: " + ", ".join(f"{g:.1f}" for g in grp.sort_values("load_threads")["gbps"]) for p, grp in med.groupby("path", sort=False))
    _set_caption(fig, "Median H2D GB/s of each copy mechanism (y, log scale) against the DRAM traffic of the background load "
                 f"threads (x; labels: threads), levels {', '.join(str(int(t)) for t in sorted(med['load_threads'].unique()))}: {pts} GB/s.")
    return fig, ax


