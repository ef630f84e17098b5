"""The what-if model (:mod:`zkgpu.analysis.model`) behind controls, for notebook 07.

:func:`predict` runs one setting and draws it (a static figure: what the executed HTML report
shows, the default state); :func:`controls` puts the same call behind ipywidgets sliders in
JupyterLab — H2D rate (GB/s), lock scope (coarse / narrow), gw, and prep_msm speed-up — and
redraws the predicted timeline, the three utilizations and the throughput on every change.
Every number is computed by :func:`zkgpu.analysis.metrics.utilization` on the model's event table (the
measurements' definitions and window).

Needs ipywidgets and IPython (the ``notebooks`` extra).
"""

from __future__ import annotations

import ipywidgets as widgets
from IPython.display import display
from matplotlib.figure import Figure

from zkgpu.analysis import plots
from zkgpu.analysis.model import SCOPES, ModelParams, compute_bound_per_min, simulate
from zkgpu.app.view import figure as show_figure

__all__ = ["predict", "controls"]


def predict(params: ModelParams, h2d_gbps: float, scope: str = "coarse", gw: int = 2, prep_speedup: float = 1.0,
            partitions: int = 12) -> Figure:
    """Simulate one setting and draw its predicted timeline, titled with the predicted
    compute / kernel / TIMELINE utilization and partitions per minute (and the share of the
    compute-only bound, :func:`zkgpu.analysis.model.compute_bound_per_min`).

    Args:
        params: model parameters (e.g. :func:`zkgpu.analysis.calibration.calibrated_params`).
        h2d_gbps: H2D rate of a, b, c, GB/s (> 0).
        scope: ``coarse`` or ``narrow``; gw: workers per GPU (>= 1); prep_speedup: prep_msm runs
            this many times faster (> 0); partitions: partitions simulated (>= 1).

    Raises:
        ValueError: a setting out of range (from :func:`zkgpu.analysis.model.simulate`).
    """
    r = simulate(params, partitions=partitions, gw=gw, scope=scope, transfer="pinned", h2d_gbps=h2d_gbps, prep_speedup=prep_speedup)
    bound = compute_bound_per_min(params)
    title = (f"model: H2D {h2d_gbps:.1f} GB/s, {scope} lock, gw = {gw}, prep_msm ×{prep_speedup:g} → compute {r.compute_util:.1%}, "
             f"kernel {r.kernel_util:.1%}, TIMELINE {r.timeline_util:.1%}; {r.partitions_per_min:.0f} partitions/min "
             f"({r.partitions_per_min / bound:.0%} of the GPU-phase bound {bound:.0f})")
    fig, _ = plots.timeline(r.events, title=title, zoom=True)  # the whole run would be a barcode: its steady middle
    fig.axes[0].title.set_fontsize("small")
    return fig


def controls(params: ModelParams, partitions: int = 12) -> widgets.Widget:
    """Show sliders for H2D rate, lock scope, gw and prep_msm speed-up, starting at the calibrated
    setting (pinned rate, coarse, gw = 2, ×1); each change redraws :func:`predict`. Returns the
    widget box (already displayed). Where no widget can be shown (an executed HTML copy) the
    output reads as a one-line note instead."""
    rate = widgets.FloatLogSlider(value=params.pinned_gbps, base=10, min=0, max=2, step=0.05, description="H2D GB/s",
                                  continuous_update=False)
    scope = widgets.ToggleButtons(options=list(SCOPES), value="coarse", description="lock scope")
    gw = widgets.IntSlider(value=2, min=1, max=4, description="gw", continuous_update=False)
    prep = widgets.FloatSlider(value=1.0, min=0.5, max=4.0, step=0.25, description="prep_msm ×", continuous_update=False)
    out = widgets.Output()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            show_figure(predict(params, rate.value, scope.value, gw.value, prep.value, partitions))

    for w in (rate, scope, gw, prep):
        w.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([widgets.HBox([rate, gw]), widgets.HBox([scope, prep]), out])
    bundle = box._repr_mimebundle_()
    bundle["text/plain"] = ("[interactive what-if controls: open notebooks/07_next_bottleneck.ipynb in JupyterLab to move them; "
                            "the figure above is their default state]")
    display(bundle, raw=True)
    return box
