"""Matplotlib figures for the event table and benchmark results. Every function returns the Figure
and Axes (never calls ``plt.show()``); pass ``ax=`` to draw into an existing Axes.

Colours: one fixed colour per phase (:data:`PHASE_COLORS`), the same in every figure, so a Gantt
chart and a breakdown bar of the same run read alike. Phases not in the map are drawn grey.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from .events import PHASES  # noqa: E402
from .metrics import CONTAINER_PHASES, SUB_PHASES, kernel_utilization, timeline_utilization  # noqa: E402

__all__ = ["PHASE_COLORS", "SIDE_PHASES", "phase_color", "timeline", "phase_breakdown", "bandwidth_curves",
    "load_curves", "utilization_bars"]

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
}
#: Fixed colour per phase (all of :data:`zkgpu.events.PHASES` plus a few extra names).
PHASE_COLORS: dict[str, str] = {p: _PALETTE.get(p, "#999999") for p in PHASES} | _PALETTE
_UNKNOWN = "#bbbbbb"
_THIN = CONTAINER_PHASES  # drawn as thin bars above the phases they contain
#: Phases of the prep_msm / finalize side threads, drawn in the lower half of a worker's lane so they
#: do not hide the worker's main chain (pre_lock, mutex_wait, ntt_msm_h, barrier_wait, ...).
SIDE_PHASES: tuple[str, ...] = ("split_vectors", "prep_msm", "b_g2_msm", "async_dealloc", "finalize", "malloc_trim", "tracker_lock")


def phase_color(phase: str) -> str:
    """The fixed colour of ``phase`` (grey for unknown names)."""
    return PHASE_COLORS.get(phase, _UNKNOWN)


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


def timeline(events: pd.DataFrame, run: str | None = None, phases: Sequence[str] | None = None, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """Per-worker Gantt chart of one run, coloured by phase.

    Lanes: one per worker (``worker N``; ``gpu G worker N`` when the run spans several GPUs); rows
    without worker go to ``gpu G`` (when they have a GPU) or ``CPU / unassigned``. x = seconds since the run's first event. Container phases (``prove``,
    ``mutex_held``) are drawn as thin bars at the top of a lane, side-thread phases (:data:`SIDE_PHASES`:
    prep_msm, b_g2_msm, ...) in its lower half, the worker's main chain in its upper half. ``phases`` filters (default all);
    ``run`` is required when the table holds several runs.

    Raises:
        ValueError: several runs and no ``run``; ``run`` not found; nothing to draw.
    """
    df = events
    runs = df["run"].dropna().unique().tolist()
    if run is None:
        if len(runs) > 1:
            raise ValueError(f"several runs in the table {runs[:5]}; pass run=")
    else:
        if run not in runs:
            raise ValueError(f"run {run!r} not in the table; runs: {runs[:10]}")
        df = df[df["run"] == run]
    if phases is not None:
        df = df[df["phase"].isin(list(phases))]
    if not len(df):
        raise ValueError("no events to draw")
    df = df.copy()
    t0 = int(df["start_ns"].min())
    multi = df["gpu"].dropna().nunique() > 1
    df["lane"] = [_lane(r, multi) for r in df[["gpu", "worker"]].to_dict("records")]
    lanes = sorted(df["lane"].unique(), key=lambda s: (s.startswith("CPU"), s))
    fig, ax = _fig_ax(ax, (11, 0.6 * len(lanes) + 1.8))
    present = []
    for i, lane in enumerate(lanes):
        sub = df[df["lane"] == lane]
        for phase, grp in sub.groupby("phase", sort=False):
            xs = [((s - t0) / 1e9, (e - s) / 1e9) for s, e in zip(grp["start_ns"], grp["end_ns"])]
            thin = phase in _THIN
            side = phase in SIDE_PHASES and lane != "CPU / unassigned"
            y, h = ((i - 0.48, 0.07) if phase == "prove" else (i - 0.41, 0.07)) if thin else ((i + 0.04, 0.36) if side else (i - 0.32, 0.34))
            ax.broken_barh(xs, (y, h), facecolors=phase_color(phase), edgecolor="none", alpha=0.9)
            if phase not in present:
                present.append(phase)
    order = {p: k for k, p in enumerate(PHASES)}
    present.sort(key=lambda p: order.get(p, len(order)))
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("time since run start (s)")
    ax.set_title(title or f"timeline: {run or (runs[0] if runs else '')}")
    ax.legend(handles=[Patch(color=phase_color(p), label=p) for p in present], loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig, ax


def phase_breakdown(events: pd.DataFrame, by: str = "run", phases: Sequence[str] | None = None, ax: Axes | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """Stacked bars: mean ms per partition of each phase, one bar per value of ``by`` (run/config).

    mean per partition = Σ durations of the phase / number of distinct partitions of the group (rows
    with <NA> partition count as one partition if the group has none). ``phases`` default: phases
    present, except container and sub-phases (``prove``, ``mutex_held``, ``h2d``, ``ntt``, ``h_msm``),
    in :data:`zkgpu.events.PHASES` order.

    Raises:
        ValueError: ``by`` not a column, or nothing to draw.
    """
    if by not in events.columns:
        raise ValueError(f"column {by!r} not in the event table")
    df = events.copy()
    if phases is None:
        order = {p: k for k, p in enumerate(PHASES)}
        phases = sorted((p for p in df["phase"].dropna().unique() if p not in CONTAINER_PHASES + SUB_PHASES), key=lambda p: (order.get(p, len(order)), p))
    df = df[df["phase"].isin(list(phases))]
    if not len(df):
        raise ValueError("no events to draw")
    df["dur_ms"] = (df["end_ns"] - df["start_ns"]) / 1e6
    groups = list(dict.fromkeys(df[by].astype(str)))
    df["_g"] = df[by].astype(str)
    nparts = {g: max(1, df.loc[df["_g"] == g, "partition"].dropna().nunique()) for g in groups}
    tot = df.groupby(["_g", "phase"])["dur_ms"].sum().unstack("phase").reindex(index=groups, columns=list(phases)).fillna(0.0)
    per = tot.div(pd.Series(nparts), axis=0)
    fig, ax = _fig_ax(ax, (max(5, 1.1 * len(groups) + 3), 4.5))
    bottom = np.zeros(len(groups))
    x = np.arange(len(groups))
    for p in phases:
        v = per[p].to_numpy()
        ax.bar(x, v, bottom=bottom, color=phase_color(p), label=p, width=0.7)
        bottom += v
    ax.set_xticks(x)
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylabel("ms per partition")
    ax.set_title(title or "phase breakdown per partition")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    fig.tight_layout()
    return fig, ax


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
    cmap = plt.get_cmap("tab10")
    colors = {p: cmap(i % 10) for i, p in enumerate(paths)}
    d = df.assign(path=df["path"].astype(str), fresh_buffer=df["fresh_buffer"].astype(bool))
    med = d.groupby(["path", "fresh_buffer", "size_bytes"], sort=True)["gbps"].median().reset_index()
    for (p, fresh), grp in med.groupby(["path", "fresh_buffer"], sort=False):
        grp = grp.sort_values("size_bytes")
        ax.plot(grp["size_bytes"], grp["gbps"], marker="o", ms=3, color=colors[p], linestyle="--" if fresh else "-", label=f"{p} ({'fresh' if fresh else 'reused'})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("GB/s")
    ax.set_title(title or "H2D bandwidth vs size")
    handles = [Line2D([], [], color=colors[p], label=p) for p in paths]
    handles += [Line2D([], [], color="k", linestyle="-", label="reused buffer"), Line2D([], [], color="k", linestyle="--", label="fresh buffer")]
    ax.legend(handles=handles, fontsize="small", frameon=False)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
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
        ax.plot(x, grp["gbps"], marker="o", label=str(path))
        if path == med["path"].iloc[0]:
            for xi, (_, r) in zip(x, grp.iterrows()):
                ax.annotate(f"{int(r['load_threads'])} thr", (xi, r["gbps"]), textcoords="offset points", xytext=(0, 6), fontsize="x-small", ha="center")
    ax.set_yscale("log")
    ax.set_xlabel("background DRAM traffic of the load threads (GB/s)")
    ax.set_ylabel("H2D GB/s")
    ax.set_title(title or "H2D bandwidth under host memory load")
    ax.legend(fontsize="small", frameon=False)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig, ax


def utilization_bars(data: pd.DataFrame, ax: Axes | None = None, reference: dict[str, tuple[float, float]] | None = None, title: str | None = None) -> tuple[Figure, Axes]:
    """Grouped bars, timeline vs kernel utilization (in %), one group per run.

    ``data`` is either an event table (both metrics are computed with
    :func:`zkgpu.metrics.timeline_utilization` / :func:`kernel_utilization`) or a frame with columns
    ``run``, ``timeline``, ``kernel`` (fractions in [0, 1]). ``reference`` adds groups of published
    values, e.g. ``{"cuzk Phase 9 (gw=1)": (0.901, 0.463)}`` (data/reference/cuzk_utilization.csv).
    """
    if {"timeline", "kernel"} <= set(data.columns):
        u = data.set_index("run")[["timeline", "kernel"]] if "run" in data.columns else data[["timeline", "kernel"]]
    else:
        tl = timeline_utilization(data)["utilization"]
        kn = kernel_utilization(data)["utilization"]
        u = pd.DataFrame({"timeline": tl, "kernel": kn})
    if reference:
        u = pd.concat([u, pd.DataFrame(reference, index=["timeline", "kernel"]).T])
    if not len(u):
        raise ValueError("nothing to draw")
    fig, ax = _fig_ax(ax, (max(5, 1.2 * len(u) + 2), 4.2))
    x = np.arange(len(u))
    w = 0.38
    b1 = ax.bar(x - w / 2, 100 * u["timeline"].astype(float), w, label="TIMELINE (GPU_START→GPU_END)", color=phase_color("prove"), edgecolor="#4a6fa5")
    b2 = ax.bar(x + w / 2, 100 * u["kernel"].astype(float), w, label="kernel (ntt_msm_h+batch_add+tail_msm)", color=phase_color("ntt_msm_h"))
    for bars in (b1, b2):
        ax.bar_label(bars, fmt="%.1f", fontsize="small", padding=2)
    ax.set_xticks(x)
    ax.set_xticklabels([str(i) for i in u.index], rotation=20, ha="right")
    ax.set_ylim(0, 125)
    ax.set_ylabel("GPU utilization (%)")
    ax.set_title(title or "timeline vs kernel utilization")
    ax.legend(fontsize="small", frameon=False, loc="upper right")
    fig.tight_layout()
    return fig, ax
