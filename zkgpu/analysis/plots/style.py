"""The report's colours, styles and captions, shared by every figure of :mod:`zkgpu.analysis.plots`.

* **one colour map** (:data:`PHASE_COLORS`): a phase, a category of the GPU critical path
  (:data:`zkgpu.analysis.metrics.GPU_PATH`) or a utilization (:data:`METRIC_COLORS`) has the same colour in
  every figure of the report; H2D paths (:data:`PATH_STYLES`) and measured/model series
  (:data:`SERIES_STYLE`) have palettes of their own, disjoint from the phases';
* a caption (:func:`caption`, :func:`set_caption`) rides on each Figure; ``zkgpu.app.view.figure``
  prints it under the figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.patches import Patch

from zkgpu.core.events import PHASES

__all__ = ["PHASE_COLORS", "METRIC_COLORS", "METRIC_EDGE", "PATH_STYLES", "SERIES_STYLE", "UNKNOWN_COLOR", "path_style", "phase_color",
           "caption", "set_caption", "shown_numbers", "add_shown", "fig_ax", "root_figure", "patch_legend", "phase_sort", "size_label", "require_columns"]

_PALETTE = {
    "synthesize": "#8c8c8c",
    "gpu_queue": "#cedb9c",  # not outside_window's grey: no partition ready vs outside the window
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
    # categories of the GPU critical path (zkgpu.analysis.metrics.GPU_PATH) that are not phases
    "lock_free": "#f2e5c6",  # not outside_window's grey: two meanings, two colours
    # the time outside the GPU window (zkgpu.analysis.gpu_time.OUTSIDE_WINDOW): start-up and wind-down
    "outside_window": "#eeeeee",
    "lock_other": "#bd9e39",  # not pre_lock's lavender: other host work vs a worker's set-up
}
#: Fixed colour per phase and per GPU-path category (all of :data:`zkgpu.core.events.PHASES`, the
#: categories of :data:`zkgpu.analysis.metrics.GPU_PATH`, and the nsys row names).
PHASE_COLORS: dict[str, str] = {p: _PALETTE.get(p, "#999999") for p in PHASES} | _PALETTE
#: Fixed colour per utilization (:data:`zkgpu.analysis.metrics.UTILIZATIONS`); compute is the headline (dark). Teals, which
#: no phase uses (the blues are the GPU phases'), so that a utilization bar beside the GPU's time per partition
#: never reads as a phase.
METRIC_COLORS: dict[str, str] = {"compute_util": "#01665e", "kernel_util": "#5ab4ac", "timeline_util": "#c7eae5"}
#: The edge of the utilization bars (a darker teal).
METRIC_EDGE = "#2f6f69"
#: Fixed colour and marker per H2D path (:data:`zkgpu.transfer.paths.PATHS`), from a palette no phase
#: uses (golds, olives, plum, black), so that no colour means a phase in one figure and a path in
#: the next; the fix (pinned_pool) is black.
PATH_STYLES: dict[str, tuple[str, str]] = {  # hues told apart (Okabe-Ito, Tol): the pageable paths warm, the pinned ones blue and black
    "pageable": ("#d55e00", "o"), "pageable_memcpy": ("#882255", "v"), "cupy_asarray": ("#cc79a7", "^"),
    "registered": ("#999933", "s"), "pinned_staging": ("#56b4e9", "P"), "pinned_pool": ("#000000", "D"),
    "pinned_raw": ("#0072b2", "X"),
}
#: Measured against modelled values (throughput bars, the gw sweep): grey bars / white hatched
#: bars, neither a phase's nor a path's colour.
SERIES_STYLE: dict[str, dict[str, Any]] = {
    "measured": {"color": "#636363"},
    "model": {"color": "white", "edgecolor": "#252525", "hatch": "////"},
}
UNKNOWN_COLOR = "#bbbbbb"



def path_style(path: str) -> tuple[str, str]:
    """(colour, marker) of an H2D path (:data:`PATH_STYLES`; a grey with a '*' for other names)."""
    return PATH_STYLES.get(path, ("#969696", "*"))


def phase_color(phase: str) -> str:
    """The fixed colour of ``phase`` (grey for unknown names)."""
    return PHASE_COLORS.get(phase, UNKNOWN_COLOR)


_CAPTION_ATTR = "zkgpu_caption"
"""The attribute of a Figure that holds its caption (:func:`caption`, :func:`set_caption`)."""


def caption(fig: Figure | SubFigure) -> str:
    """The caption a plotting function of :mod:`zkgpu.analysis.plots` attached to ``fig`` ('' if none):
    what is drawn, in words built from the data."""
    return str(getattr(fig, _CAPTION_ATTR, ""))


def set_caption(fig: Figure | SubFigure, text: str, *, append: bool = True) -> None:
    """Attach ``text`` as ``fig``'s caption, after the caption it has (``append``) or instead of it."""
    setattr(fig, _CAPTION_ATTR, ((caption(fig) + " ") if append else "") + text.strip())


_SHOWN_ATTR = "zkgpu_shown"


def shown_numbers(fig: Figure | SubFigure) -> list[dict[str, Any]]:
    """The named numbers ``fig``'s caption prints (:func:`add_shown`), for the report's one-number-per-name check
    (``zkgpu.app.view.figure`` hands them to :func:`zkgpu.analysis.keynumbers.show`)."""
    return list(getattr(fig, _SHOWN_ATTR, []))


def add_shown(fig: Figure | SubFigure, name: str, scenario: str, value: float, text: str, statistic: str = "") -> None:
    """Record that ``fig``'s caption prints ``value`` (as ``text``) under the name ``name`` (one of
    :data:`zkgpu.analysis.keynumbers.STATISTICS`) for ``scenario``; ``statistic``: '' for the name's own, else the
    one the caption says."""
    setattr(fig, _SHOWN_ATTR, [*shown_numbers(fig), {"name": name, "scenario": str(scenario), "value": float(value), "text": text,
                                                     "statistic": statistic}])


def fig_ax(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """``ax`` and its Figure, or a new Figure of ``figsize`` inches with one Axes."""
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    return root_figure(ax), ax


def root_figure(ax: Axes) -> Figure:
    """The top-level Figure ``ax`` is drawn in (through any SubFigure)."""
    fig = ax.figure
    while isinstance(fig, SubFigure):
        fig = fig.figure
    if not isinstance(fig, Figure):
        raise ValueError("the Axes belongs to no Figure")
    return fig


def patch_legend(ax: Axes, names: Sequence[str], labels: Mapping[str, str] | None = None, **kw: Any) -> None:
    """A legend of exactly ``names`` (colour patches, :func:`phase_color`) labelled by ``labels``
    (default: the name), outside the axes on the right unless ``kw`` says otherwise."""
    labels = labels or {}
    opts: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1), "fontsize": "small", "frameon": False} | kw
    ax.legend(handles=[Patch(facecolor=phase_color(p), edgecolor="#888888", linewidth=0.3, label=labels.get(p, p)) for p in names], **opts)


def phase_sort(names: Iterable[str]) -> list[str]:
    """``names`` in :data:`zkgpu.core.events.PHASES` order, unknown names after (alphabetically)."""
    order = {p: k for k, p in enumerate(PHASES)}
    return sorted(names, key=lambda p: (order.get(p, len(order)), p))


def size_label(nbytes: float) -> str:
    """A byte count in binary units: 1048576 -> "1 MiB", 4294967296 -> "4 GiB", 1536 -> "1.5 KiB"."""
    v = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(v) < 1024 or unit == "GiB":
            return f"{v:g} {unit}" if v == int(v) else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:g} GiB"


def require_columns(df: pd.DataFrame, need: set[str], what: str) -> None:
    """ValueError naming the missing columns, or an empty ``what`` frame."""
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"{what} frame lacks columns {sorted(missing)}")
    if not len(df):
        raise ValueError(f"empty {what} frame")
