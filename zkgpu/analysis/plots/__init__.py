"""Matplotlib figures for the event table and benchmark results. Every function returns the Figure and Axes (never
``plt.show()``); pass ``ax=`` to draw into an existing Axes.

Rules: one colour map (:data:`PHASE_COLORS`) across the report; legends list only what is drawn; intervals
narrower than :data:`MIN_PX` are widened and counted in the caption; compared runs share axes; every figure
carries a caption built from its data (:func:`caption`). Modules: ``style``, ``timelines``, ``bars``, ``curves``;
this file names the public API.
"""

from __future__ import annotations

from zkgpu.analysis.plots.bars import (
    barrier_race,
    critical_path,
    gpu_window,
    gw_sweep,
    hbars,
    held_breakdown,
    ntt_msm_h_split,
    staircase,
    summary,
    summary_scale,
    throughput_bars,
    utilization_bars,
)
from zkgpu.analysis.plots.curves import bandwidth_curves, load_curves, sppark_ratios
from zkgpu.analysis.plots.style import (
    METRIC_COLORS,
    PATH_STYLES,
    PHASE_COLORS,
    SERIES_STYLE,
    caption,
    path_style,
    phase_color,
    set_caption,
    size_label,
)
from zkgpu.analysis.plots.timelines import (
    MAX_THIN,
    MIN_PX,
    PROOF_SIDES,
    SIDE_PHASES,
    TIMELINE_PHASES,
    Zoom,
    proof_phases,
    proof_phases_compared,
    readable_window,
    timeline,
    timelines,
)

__all__ = ["PHASE_COLORS", "METRIC_COLORS", "PATH_STYLES", "SERIES_STYLE", "path_style", "SIDE_PHASES", "TIMELINE_PHASES",
           "MIN_PX", "MAX_THIN", "Zoom", "readable_window", "PROOF_SIDES", "proof_phases", "proof_phases_compared", "phase_color", "size_label", "caption", "set_caption", "timeline", "timelines", "utilization_bars",
           "critical_path", "gpu_window", "held_breakdown", "ntt_msm_h_split", "barrier_race", "throughput_bars", "gw_sweep",
           "summary", "summary_scale", "staircase", "hbars", "bandwidth_curves", "load_curves", "sppark_ratios"]
