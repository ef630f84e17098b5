"""The what-if model behind controls (notebook 07): :func:`predict` draws one setting, :func:`controls` adds sliders."""

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
    """Simulate one setting and draw its timeline, titled with the utilizations and partitions/min. ``h2d_gbps`` > 0;
    ``scope`` coarse/narrow; ``gw`` >= 1; ``prep_speedup`` > 0. Raises ValueError: out of range."""
    r = simulate(params, partitions=partitions, gw=gw, scope=scope, transfer="pinned", h2d_gbps=h2d_gbps, prep_speedup=prep_speedup)
    bound = compute_bound_per_min(params)
    title = (f"model: H2D {h2d_gbps:.1f} GB/s, {scope} lock, gw = {gw}, prep_msm ×{prep_speedup:g} → compute {r.compute_util:.1%}, "
             f"kernel {r.kernel_util:.1%}, TIMELINE {r.timeline_util:.1%}; {r.partitions_per_min:.0f} partitions/min "
             f"({r.partitions_per_min / bound:.0%} of the GPU-phase bound {bound:.0f})")
    fig, _ = plots.timeline(r.events, title=title, zoom=True)  # the whole run would be a barcode: its steady middle
    fig.axes[0].title.set_fontsize("small")
    return fig


def controls(params: ModelParams, partitions: int = 12) -> widgets.Widget:
    """Show sliders (H2D rate, lock scope, gw, prep speed-up) redrawing :func:`predict`; returns the widget box."""
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
