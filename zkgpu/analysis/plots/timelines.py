"""Per-worker timelines (Gantt charts) of one run or of several on one time axis.

An interval narrower than :data:`MIN_PX` pixels at the figure's scale is drawn that wide, and the
caption counts them; container phases (``prove``, ``mutex_held``, :data:`zkgpu.analysis.metrics.CONTAINER_PHASES`)
are thin bars above the phases they contain, ntt_msm_h's parts (:data:`zkgpu.analysis.metrics.SUB_PHASES`)
are drawn over it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from zkgpu.analysis.metrics import CONTAINER_PHASES, SUB_PHASES
from zkgpu.analysis.plots.style import (
    add_shown,
    fig_ax,
    patch_legend,
    phase_color,
    phase_sort,
    require_columns,
    root_figure,
    set_caption,
)

__all__ = ["SIDE_PHASES", "TIMELINE_PHASES", "MIN_PX", "MAX_THIN", "PROOF_SIDES", "Zoom", "readable_window", "timeline", "timelines",
           "proof_phases", "proof_phases_compared", "COMPARE_COLORS"]

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
    fig = root_figure(ax)
    return ax.get_position().width * fig.get_figwidth() * fig.dpi / span if span > 0 else 1.0


def _draw_timeline(ax: Axes, df: pd.DataFrame, t0: int, lanes: list[str], xspan: float,
                   window: tuple[float, float] | None = None) -> tuple[list[str], int, int, dict[str, int], float]:
    """Draw the rows of ``df`` (lane column set) onto ``ax``, only those that reach into ``window`` (s since
    ``t0``) when one is given; returns (phases drawn, intervals, intervals widened to MIN_PX, widened per
    phase, MIN_PX in seconds at this scale)."""
    min_w = MIN_PX / _px_per_unit(ax, xspan)
    if window is not None:
        s_all, e_all = (df["start_ns"] - t0) / 1e9, (df["end_ns"] - t0) / 1e9
        df = df[(e_all >= window[0]) & (s_all <= window[1])]
    drawn: list[str] = []
    widened: dict[str, int] = {}
    n = 0
    for i, lane in enumerate(lanes):
        sub = df[df["lane"] == lane]
        order = {p: k for k, p in enumerate(("ntt_msm_h", *SUB_PHASES))}  # sub-phases drawn over ntt_msm_h
        for phase in sorted(sub["phase"].unique(), key=lambda p: order.get(p, -1)):
            grp = sub[sub["phase"] == phase]
            s = (grp["start_ns"].to_numpy() - t0) / 1e9
            w = (grp["end_ns"].to_numpy() - grp["start_ns"].to_numpy()) / 1e9
            thin = w < min_w
            if thin.any():
                widened[phase] = widened.get(phase, 0) + int(thin.sum())
            w = np.maximum(w, min_w)
            if phase in CONTAINER_PHASES:
                y, h = (i - 0.47, 0.08) if phase == "prove" else (i - 0.37, 0.08)
            elif phase in SIDE_PHASES and lane != "CPU / unassigned":
                y, h = i + 0.06, 0.34
            else:
                y, h = i - 0.27, 0.31
            ax.broken_barh(list(zip(s, w, strict=True)), (y, h), facecolors=phase_color(phase), edgecolor="none")
            n += len(grp)
            if phase not in drawn:
                drawn.append(phase)
    return drawn, n, sum(widened.values()), widened, min_w


@dataclass(frozen=True)
class Zoom:
    """A timeline's window (:func:`readable_window`): ``width`` seconds around each run's middle; at the whole
    runs' scale ``thin`` of their ``intervals`` would be narrower than :data:`MIN_PX`."""

    width: float
    thin: int
    intervals: int

    def window(self, span: float) -> tuple[float, float]:
        """The window of a run of ``span`` seconds: ``width`` around its middle (its steady state), within the run."""
        lo = max(0.0, span / 2 - self.width / 2)
        return lo, min(span, lo + self.width)

    def note(self, window: tuple[float, float] | None = None) -> str:
        """The caption's account of the zoom (one account, every zoomed timeline of the report): ``window``, the one
        run's window (None: several panels, each its own run's middle)."""
        where = (f"{window[0]:.2f}–{window[1]:.2f} s, the middle of the run" if window is not None
                 else f"{self.width:.2f} s in the middle of each run")
        return (f"The whole run would be a barcode ({self.thin} of its {self.intervals} intervals narrower than {MIN_PX} px), so the "
                f"figure shows {where}, where it is in its steady state; the trace on the details page has every event.")


#: The share of a timeline's intervals that may be narrower than :data:`MIN_PX` before :func:`readable_window` zooms.
MAX_THIN = 0.2


def readable_window(runs: Mapping[str, pd.DataFrame], phases: Sequence[str] | None = None, max_thin: float = MAX_THIN,
                    axes_px: float | None = None) -> Zoom | None:
    """How much of ``runs`` (``{name: event table of one run}``) a timeline shows so that at most ``max_thin`` of
    the intervals it draws are narrower than :data:`MIN_PX` at ``axes_px`` pixels across (default: the axes of
    :func:`timelines`, 11 in at ``figure.dpi``): None when the whole runs already are; else the widest of
    1/2, 1/4, ... 1/64 of the shortest run around each run's middle that is (the narrowest tried when none is).
    The one rule of every timeline the report zooms (01, 03, 06, 07b)."""
    px = axes_px if axes_px is not None else 0.66 * 11 * float(plt.rcParams["figure.dpi"])
    runs_s = []
    for ev in runs.values():
        df, _, _, t0 = _prepare(ev, None, phases)
        runs_s.append((((df["start_ns"] - t0) / 1e9).to_numpy(), ((df["end_ns"] - t0) / 1e9).to_numpy(),
                       (int(ev["end_ns"].max()) - t0) / 1e9))
    longest, shortest = max(r[2] for r in runs_s), min(r[2] for r in runs_s)

    def thin_share(width: float, zoomed: bool) -> tuple[int, int]:
        thin = n = 0
        for s, e, span in runs_s:
            lo, hi = Zoom(width, 0, 0).window(span) if zoomed else (0.0, span)
            keep = (e >= lo) & (s <= hi)
            n += int(keep.sum())
            thin += int(((e - s)[keep] < MIN_PX * width / px).sum())
        return thin, n

    thin, n = thin_share(longest, False)
    if n == 0 or thin <= max_thin * n:
        return None
    for k in range(1, 7):
        t, m = thin_share(shortest / 2 ** k, True)
        if m and t <= max_thin * m:
            break
    return Zoom(shortest / 2 ** k, thin, n)


def _prepare(events: pd.DataFrame, run: str | None, phases: Sequence[str] | None) -> tuple[pd.DataFrame, str, list[str], int]:
    """The rows of one run to draw, its name, the phases left out, and the run's first start (ns:
    x = 0, the start of the metrics' window, so the synthesis ramp-up shows as an empty stretch)."""
    df, name = _one_run(events, run)
    t0 = int(df["start_ns"].min()) if len(df) else 0
    keep = list(phases) if phases is not None else list(TIMELINE_PHASES)
    left_out = sorted(set(df["phase"].dropna()) - set(keep))
    df = df[df["phase"].isin(keep)]
    if df["phase"].isin(SUB_PHASES).any():  # ntt_msm_h is drawn as its parts, which cover it
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
             title: str | None = None, xlim: tuple[float, float] | None = None, zoom: bool = False) -> tuple[Figure, Axes]:
    """Per-worker Gantt chart of one run, coloured by phase (:data:`PHASE_COLORS`), x in seconds since the first drawn
    event. One lane per worker (else per GPU, or ``CPU / unassigned``); containers thin on top, side threads below,
    ntt_msm_h's parts over it. ``phases`` filters (default :data:`TIMELINE_PHASES`), ``xlim`` (s) fixes the range,
    ``zoom`` shows :func:`readable_window` where the whole run would be sub-pixel.

    Raises:
        ValueError: several runs and no ``run``; ``run`` not found; nothing to draw.
    """
    df, name, left_out, t0 = _prepare(events, run, phases)
    z = readable_window({name: events if run is None else events[events["run"] == run]}, phases) if zoom and xlim is None else None
    if z is not None:
        xlim = z.window((int(events["end_ns"].max() if run is None else events.loc[events["run"] == run, "end_ns"].max()) - t0) / 1e9)
    multi = df["gpu"].dropna().nunique() > 1
    df["lane"] = [_lane(r, multi) for r in df[["gpu", "worker"]].to_dict("records")]
    lanes = sorted(df["lane"].unique(), key=lambda s: (s.startswith("CPU"), s))
    fig, ax = fig_ax(ax, (11, 0.65 * len(lanes) + 1.9))
    if ax.figure is fig and len(fig.axes) == 1:
        fig.subplots_adjust(left=0.1, right=0.8, bottom=0.2 if len(lanes) < 3 else 0.12)
    xspan = (xlim[1] - xlim[0]) if xlim else (int(events["end_ns"].max() if run is None else events.loc[events["run"] == run, "end_ns"].max()) - t0) / 1e9
    drawn, n, thin, widened, min_s = _draw_timeline(ax, df, t0, lanes, xspan, xlim)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.invert_yaxis()
    ax.set_xlim(*(xlim or (0, xspan * 1.01)))
    ax.set_xlabel("time since the run's first event (s)")
    ax.set_title(title or f"timeline: {name}")
    patch_legend(ax, phase_sort(drawn))
    ax.grid(axis="x", alpha=0.3)
    set_caption(fig, (z.note(xlim) + " " if z is not None else "") + _timeline_caption(drawn, n, thin, widened, left_out, min_s))
    return fig, ax


def timelines(runs: Mapping[str, pd.DataFrame], phases: Sequence[str] | None = None, title: str | None = None,
              zoom: bool = False) -> tuple[Figure, np.ndarray]:
    """Several runs' timelines on one time axis, one panel per run (``{title: event table}``), one legend; ``zoom`` as
    :func:`timeline`, the same length of each run.

    Raises:
        ValueError: no runs, or a table with several runs or nothing to draw.
    """
    if not runs:
        raise ValueError("no runs to draw")
    prepared = {k: _prepare(v, None, phases) for k, v in runs.items()}
    spans = {k: (int(v["end_ns"].max()) - int(v["start_ns"].min())) / 1e9 for k, v in runs.items()}
    xmax = max(spans.values())
    z = readable_window(runs, phases) if zoom else None
    nl = {k: len({_lane(r, d["gpu"].dropna().nunique() > 1) for r in d[["gpu", "worker"]].to_dict("records")}) for k, (d, _, _, _) in prepared.items()}
    fig, axes = plt.subplots(len(runs), 1, figsize=(11, sum(0.65 * n + 0.9 for n in nl.values()) + 0.8), sharex=z is None,
                             gridspec_kw={"height_ratios": [nl[k] + 0.6 for k in runs]}, squeeze=False)
    axes = axes[:, 0]
    fig.subplots_adjust(left=0.12, right=0.78, hspace=0.45)
    drawn_all: list[str] = []
    caps = []
    tot_n = tot_thin = 0
    wid_all: dict[str, int] = {}
    left_all: set[str] = set()
    for ax, (k, (df, _, left, t0)) in zip(axes, prepared.items(), strict=True):
        df["lane"] = [_lane(r, df["gpu"].dropna().nunique() > 1) for r in df[["gpu", "worker"]].to_dict("records")]
        lanes = sorted(df["lane"].unique(), key=lambda s: (s.startswith("CPU"), s))
        win = z.window(spans[k]) if z is not None else None
        drawn, n, thin, wid, min_s = _draw_timeline(ax, df, t0, lanes, z.width if z is not None else xmax, win)
        if win is not None:
            ax.set_xlim(*win)
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
    if z is None:
        axes[-1].set_xlim(0, xmax * 1.01)
    axes[-1].set_xlabel("time since the run's first event (s), the same scale in every panel")
    patch_legend(axes[0], phase_sort(drawn_all))
    if title:
        fig.suptitle(title)
    head = (f"Panels share one time axis, x = 0 at each run's first event (synthesis of its first partition; wall spans: {', '.join(caps)}). "
            if z is None else f"Every panel shows {z.width:.2f} s of its run at the same scale, x = 0 at the run's first event (wall spans: "
            f"{', '.join(caps)}). {z.note()} ")
    set_caption(fig, head + _timeline_caption(drawn_all, tot_n, tot_thin, wid_all, sorted(left_all), min_s))
    return fig, axes


#: Where a phase of one ``zkgpu prove`` runs (the ``on`` column of
#: :func:`zkgpu.story.prove_results.phase_timeline`) -> (legend label, colour, hatch), in the report's
#: one colour map: the GPU's kernels in the nsys ``kernel`` row's colour, the G2 MSM on its CPU
#: thread in ``b_g2_msm``'s (the pipeline's name for it), the main thread in a grey no phase uses.
PROOF_SIDES: dict[str, tuple[str, str, str | None]] = {
    "GPU": ("zkgpu kernels (GPU)", phase_color("kernel"), None),
    "CPU": ("CPU, main thread", "#525252", None),
    "CPU thread": ("CPU, G2 MSM thread (b_g2_msm, overlapped)", phase_color("b_g2_msm"), "//"),
}


def proof_phases(table: pd.DataFrame, *, on_gpu: bool = True, ax: Axes | None = None, title: str | None = None,
                 command_ms: float | None = None) -> tuple[Figure, Axes]:
    """One Groth16 proof phase by phase: a bar per row of ``table`` (``phase``, ``start_ms``, ``ms``, ``on`` in
    :data:`PROOF_SIDES`), coloured by where it runs; ``on_gpu`` False marks CPU references; ``command_ms`` is the
    whole command's median, set beside the phases' span in the caption.

    Raises:
        ValueError: a column is missing, the table is empty, or an ``on`` value is unknown.
    """
    require_columns(table, {"phase", "start_ms", "ms", "on"}, "proof phase")
    unknown = sorted(set(table["on"]) - set(PROOF_SIDES))
    if unknown:
        raise ValueError(f"proof phase rows 'on' must be one of {list(PROOF_SIDES)}, got {unknown}")
    labels = {k: v[0] for k, v in PROOF_SIDES.items()} | ({} if on_gpu else {"GPU": "zkgpu kernels' CPU references (no GPU)"})
    fig, ax = fig_ax(ax, (9, 0.3 * len(table) + 1.6))
    for i, r in enumerate(table.itertuples()):
        _, color, hatch = PROOF_SIDES[r.on]
        ax.barh(i, r.ms, left=r.start_ms, color=color, hatch=hatch, edgecolor="#555555" if hatch else color, linewidth=0.4)
    ax.set_yticks(range(len(table)), [str(p) for p in table["phase"]])
    ax.invert_yaxis()
    ax.set_xlim(0, float((table["start_ms"] + table["ms"]).max()) * 1.02)
    ax.set_xlabel("ms since the start of the proof")
    present = [k for k in PROOF_SIDES if k in set(table["on"])]
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, facecolor=PROOF_SIDES[k][1], hatch=PROOF_SIDES[k][2], edgecolor="#555555")
                       for k in present], labels=[labels[k] for k in present],
              loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=len(present), fontsize="small", frameon=False)
    ax.set_title(title or "one real Groth16 proof, phase by phase (median over proofs)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    end = table.assign(end=table["start_ms"] + table["ms"])
    longest = end.loc[end["ms"].idxmax()]
    span = float(end["end"].max())
    add_shown(fig, "proof_phases", "", span, f"{span:,.0f} ms")
    whole = ""
    if command_ms is not None and np.isfinite(command_ms):
        add_shown(fig, "prove", "", float(command_ms), f"{command_ms:,.0f} ms")
        whole = (f", of a whole `zkgpu prove` command of {command_ms:,.0f} ms (median; the rest is outside the phases: the process "
                 "starting, its imports and writing the proof)")
    set_caption(fig, "One bar per phase of `zkgpu prove`, from its start to its end in ms since the proof began (median over "
                "the proofs), coloured by where it runs: " + ", ".join(labels[k] for k in present)
                + f". The phases, from reading the key to the last one's end, take {span:,.0f} ms{whole}; the longest phase is "
                f"{longest['phase']} ({float(longest['ms']):,.0f} ms, {longest['on']}).")
    return fig, ax


#: The series of :func:`proof_phases_compared`, in order (Okabe-Ito hues; none is the main thread's grey).
COMPARE_COLORS = ("#E69F00", "#56B4E9", "#0072B2", "#CC79A7", "#D55E00", "#009E73", "#000000")


def proof_phases_compared(table: pd.DataFrame, *, ax: Axes | None = None) -> tuple[Figure, Axes]:
    """One proof's phases in several recordings: for each row of the phase order in ``table`` (columns ``series``,
    ``phase``, ``ms``, as :func:`zkgpu.story.prove_results.phase_comparison` builds it), one horizontal bar per
    series, on a log scale of ms; a series without a phase has no bar there.

    Raises:
        ValueError: a column is missing, the table is empty, or it has more series than :data:`COMPARE_COLORS`.
    """
    require_columns(table, {"series", "phase", "ms"}, "phase comparison")
    series = list(dict.fromkeys(table["series"]))
    phases = list(dict.fromkeys(table["phase"]))
    if not series or len(series) > len(COMPARE_COLORS):
        raise ValueError(f"phase comparison: 1 to {len(COMPARE_COLORS)} series, got {len(series)}")
    fig, ax = fig_ax(ax, (9, 0.12 * len(phases) * max(2, len(series)) + 0.25 * len(series) + 1.2))
    h = 0.8 / len(series)
    for j, name in enumerate(series):
        rows = table[table["series"] == name].set_index("phase")["ms"]
        ys = [i - 0.4 + h * (j + 0.5) for i, ph in enumerate(phases) if ph in rows.index]
        ax.barh(ys, [float(rows[ph]) for ph in phases if ph in rows.index], height=h, color=COMPARE_COLORS[j], label=name)
    ax.set_yticks(range(len(phases)), phases)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ms (median, log scale)")
    ax.grid(axis="x", alpha=0.3, which="both")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=1, fontsize="small", frameon=False)
    ax.set_title("one proof, phase by phase, in each bench-prove recording")
    fig.tight_layout()
    one = table[table["phase"] == phases[0]].set_index("series")["ms"]
    set_caption(fig, f"For each phase of one `zkgpu prove` proof (rows; the first row, {phases[0]}, is the whole proof), one bar "
                "per recording: its median ms on a log scale, coloured by recording as the legend lists them ("
                + "; ".join(f"{s}: {one[s]:,.0f} ms" for s in series if s in one.index)
                + f" for {phases[0]}). A recording without a phase has no bar there.")
    return fig, ax
