"""Matplotlib figures for the event table and benchmark results. Every function returns the Figure
and Axes (never calls ``plt.show()``); pass ``ax=`` to draw into an existing Axes.

Rules every figure follows, so that a reader can trust it:

* **one colour map** (:data:`PHASE_COLORS`): a phase, a category of the GPU critical path
  (:data:`zkgpu.analysis.metrics.GPU_PATH`) or a utilization (:data:`METRIC_COLORS`) has the same colour in
  every figure of the report; H2D paths (:data:`PATH_STYLES`) and measured/model series
  (:data:`SERIES_STYLE`) have palettes of their own, disjoint from the phases';
* legends list only what is drawn;
* an interval narrower than :data:`MIN_PX` pixels at the figure's scale is drawn that wide, and the
  caption counts them (:func:`caption`);
* runs that are compared share their axes;
* every function attaches a caption that describes what is drawn, built from the data
  (:func:`caption`; ``zkgpu.app.view.figure`` prints it under the figure).

The package's modules, by concern: :mod:`~zkgpu.analysis.plots.style` (colours, styles, captions),
:mod:`~zkgpu.analysis.plots.timelines` (per-worker Gantt charts), :mod:`~zkgpu.analysis.plots.bars` (utilizations,
the GPU's time, throughput, the one-page summary), :mod:`~zkgpu.analysis.plots.curves` (H2D bandwidth, kernel
times against sppark's).
This file names the package's public API (``from zkgpu import plots; plots.timeline(...)``).
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
