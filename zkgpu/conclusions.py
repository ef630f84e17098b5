"""The investigation's conclusions, as sentences computed from a recording.

Every sentence of notebook 08's **Conclusions** section, and every number in it, comes from
:func:`conclusions` on the notebook's :class:`zkgpu.replay.Source`; nothing is typed in. Each
conclusion names the notebook that shows it (``notebook``) and carries its numbers in the
key-numbers contract (:func:`zkgpu.replay.number`), so the tests recompute them from ``data/``.

Steps, in story order: symptom (01), host ruled out (02), mutex and barrier (03), smoking gun
(04), H2D bandwidth (05), the fix (06), the next bottleneck (07). A step whose scenario is not in
the recording is left out.

Sources of the published numbers: upstream's 90.1 % / 46.3 % (curio ``extern/cuzk/cuzk-project.md:1140``)
from ``data/reference/cuzk_utilization.csv``; the seed's ``CUZK_TIMING`` lines from
``data/reference/seed_cuzk_timing.log``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from . import logs, metrics, model
from .replay import Source, calibrated_params, number, reference_path, reference_table, scenario_table

__all__ = ["Conclusion", "host_suspects", "published_utilization", "conclusions", "finding", "key_numbers", "markdown"]


@dataclass
class Conclusion:
    """One finding: ``step`` (short name), ``notebook`` (the one that shows it, without suffix),
    ``text`` (one or two markdown sentences), ``numbers`` (key-numbers contract entries)."""

    step: str
    notebook: str
    text: str
    numbers: dict[str, dict[str, Any]] = field(default_factory=dict)


def _pct(v: float) -> str:
    return f"{100 * v:.1f} %"


def host_suspects(source: Source, scenario: str = "baseline") -> dict[str, float]:
    """The host-side suspects of notebook 02 from a scenario's cuzk-format log, totals in ms.

    ``hot_path_ms`` = Σ GPU_TIMING ``total_overhead_ms`` (status update, fail check and mark busy,
    both under the JobTracker lock) + Σ ``spawn_to_enter_ms``; ``lock_wait_ms`` = Σ FIN_TIMING
    ``lock_wait_ms`` (the finalizer's tracker lock); ``malloc_trim_ms`` = Σ ``malloc_trim_ms``;
    ``prove_start_ms`` = Σ ``prove_start_ms`` (the C++ start function); ``suspects_ms`` = the first
    three; ``share`` = suspects_ms / prove_start_ms (NaN without prove_start).

    Raises:
        KeyError: the scenario is not recorded; FileNotFoundError: it has no log.
    """
    path = source.log_path(scenario)
    if path is None:
        raise FileNotFoundError(f"scenario {scenario!r} has no cuzk-format log")
    parsed = logs.parse_file(path)
    gt, ft = parsed.gpu_timing, parsed.fin_timing

    def tot(df: pd.DataFrame, col: str) -> float:
        return float(pd.to_numeric(df[col], errors="coerce").sum()) if col in df.columns else 0.0

    out = {
        "hot_path_ms": tot(gt, "total_overhead_ms") + tot(gt, "spawn_to_enter_ms"),
        "lock_wait_ms": tot(ft, "lock_wait_ms"),
        "malloc_trim_ms": tot(ft, "malloc_trim_ms"),
        "prove_start_ms": tot(gt, "prove_start_ms"),
    }
    out["suspects_ms"] = out["hot_path_ms"] + out["lock_wait_ms"] + out["malloc_trim_ms"]
    out["share"] = out["suspects_ms"] / out["prove_start_ms"] if out["prove_start_ms"] > 0 else float("nan")
    return out


def published_utilization() -> dict[str, float]:
    """Upstream's published utilizations of one run (gw=1, RTX 5070 Ti; cuzk-project.md:1140):
    ``{"timeline_util": 0.901, "kernel_util": 0.463}`` from data/reference/cuzk_utilization.csv."""
    ref = reference_table("cuzk_utilization.csv")
    row = ref[ref["config"].astype(str).str.contains("gw=1", na=False)].set_index("metric")["value"]
    return {"timeline_util": float(row["timeline_utilization"]), "kernel_util": float(row["kernel_utilization"])}


def _barrier_in_held(ev: pd.DataFrame) -> float:
    ms = metrics.mutex_stats(ev, by=("run",))
    return float(ms["barrier_in_held"].iloc[0]) if len(ms) else float("nan")


def conclusions(source: Source) -> list[Conclusion]:
    """The findings of the investigation on ``source``'s recording, in story order (module doc)."""
    tab = scenario_table(source)
    have = set(tab.index)
    out: list[Conclusion] = []
    path = metrics.critical_path(source.all_events([s for s in tab.index])) if len(tab) else pd.DataFrame()
    pub = published_utilization()
    if "baseline" in have:
        b = tab.loc["baseline"]
        out.append(Conclusion("symptom", "01_symptom",
            f"In the baseline (pageable a, b, c; coarse lock; gw = {b['gw']}) the GPU computed during **{_pct(b['compute_util'])}** "
            f"of the wall time (compute utilization), while upstream's two figures read {_pct(b['timeline_util'])} (TIMELINE) and "
            f"{_pct(b['kernel_util'])} (kernel utilization, which counts the H2D copies as GPU work); upstream published "
            f"{_pct(pub['timeline_util'])} and {_pct(pub['kernel_util'])} for its run.",
            {"baseline_compute_util": number(b["compute_util"], "%", "compute utilization", "baseline"),
             "baseline_kernel_util": number(b["kernel_util"], "%", "kernel utilization (upstream)", "baseline"),
             "baseline_timeline_util": number(b["timeline_util"], "%", "TIMELINE utilization", "baseline"),
             "published_timeline_util": number(pub["timeline_util"], "%", "TIMELINE utilization, upstream published", "cuzk gw=1"),
             "published_kernel_util": number(pub["kernel_util"], "%", "kernel utilization, upstream published", "cuzk gw=1")}))
        try:
            h = host_suspects(source, "baseline")
        except (FileNotFoundError, KeyError):
            h = None
        if h and h["prove_start_ms"] > 0:
            verdict = "not where the time goes" if h["share"] < 0.05 else "a share worth a closer look"
            out.append(Conclusion("host", "02_host_instrumentation",
                f"The host-side suspects (the JobTracker lock taken twice per partition, the spawn, the finalizer's lock wait and "
                f"malloc_trim) add up to {h['suspects_ms']:.1f} ms, **{100 * h['share']:.2f} %** of the {h['prove_start_ms']:.0f} ms "
                f"spent inside the C++ start function: {verdict}.",
                {"host_suspects_ms": number(h["suspects_ms"], "ms", "host-side suspects, total", "baseline"),
                 "host_share": number(h["share"], "%", "host-side suspects / prove_start", "baseline")}))
        if "baseline" in path.index:
            p = path.loc["baseline"]
            held = sum(p[c] for c in metrics.GPU_PATH if c != "lock_free")
            ntt = p["h2d"] + p["ntt"] + p["h_msm"]
            what = "through the slow ntt_msm_h, not through the barrier" if ntt > p["barrier_wait"] else "mostly at the barrier"
            out.append(Conclusion("mutex", "03_mutex_barrier",
                f"In the baseline some worker holds the GPU mutex {held:.0f} ms per partition; **{_pct(ntt / held)}** of it is "
                f"ntt_msm_h and {_pct(p['barrier_wait'] / held)} barrier_wait: the lock is held {what}.",
                {"baseline_held_ms": number(held, "ms", "mutex held per partition", "baseline"),
                 "baseline_held_ntt_msm_h": number(ntt / held, "%", "share of the held mutex in ntt_msm_h", "baseline"),
                 "baseline_held_barrier": number(p["barrier_wait"] / held, "%", "share of the held mutex in barrier_wait", "baseline")}))
        seed = logs.partition_table(logs.parse_file(reference_path("seed_cuzk_timing.log")))
        d = (seed["ntt_msm_h_ms"] - seed["prep_msm_ms"]).dropna()
        out.append(Conclusion("smoking gun", "04_smoking_gun",
            f"The seed's ntt_msm_h ({seed['ntt_msm_h_ms'].min():.0f}–{seed['ntt_msm_h_ms'].max():.0f} ms) exceeds its prep_msm by "
            f"{d.min():.0f}–{d.max():.0f} ms, so the GPU was not waiting for the CPU; in our baseline the exposed H2D of a, b, c is "
            f"**{_pct(b['h2d_share'])}** of ntt_msm_h ({b['h2d_exposed_ms']:.0f} of {b['ntt_msm_h_ms']:.0f} ms, medians per partition).",
            {"seed_ntt_minus_prep_min_ms": number(d.min(), "ms", "seed: ntt_msm_h − prep_msm, smallest", "seed"),
             "baseline_h2d_share": number(b["h2d_share"], "%", "exposed H2D share of ntt_msm_h", "baseline"),
             "baseline_ntt_msm_h_ms": number(b["ntt_msm_h_ms"], "ms", "ntt_msm_h, median", "baseline")}))
    if {"baseline", "pinned_pool"} <= have:
        b, q = tab.loc["baseline"], tab.loc["pinned_pool"]
        load = source.recording.host_load_threads
        out.append(Conclusion("H2D bandwidth", "05_h2d_bandwidth",
            f"{'Under ' + str(load) + ' host memory-load threads' if load else 'On an idle host'} a, b, c reached the GPU at "
            f"**{b['h2d_gbps']:.2f} GB/s** from pageable memory and {q['h2d_gbps']:.1f} GB/s from the pinned pool "
            f"({q['h2d_gbps'] / b['h2d_gbps']:.1f}× faster).",
            {"baseline_h2d_gbps": number(b["h2d_gbps"], "GB/s", "effective H2D rate of a, b, c", "baseline"),
             "pinned_pool_h2d_gbps": number(q["h2d_gbps"], "GB/s", "effective H2D rate of a, b, c", "pinned_pool")}))
        rose = "rose" if q["compute_util"] > b["compute_util"] else "fell"
        kfell = "fell" if q["kernel_util"] < b["kernel_util"] else "rose"
        why = (" because it had counted the slow copies as GPU work" if (rose, kfell) == ("rose", "fell") else "")
        ratio = q["partitions_per_min"] / b["partitions_per_min"]
        out.append(Conclusion("fix", "06_pinned_pool_fix",
            f"With the pinned pool the exposed H2D went from {_pct(b['h2d_share'])} to {_pct(q['h2d_share'])} of ntt_msm_h and "
            f"ntt_msm_h from {b['ntt_msm_h_ms']:.0f} to {q['ntt_msm_h_ms']:.0f} ms; compute utilization {rose} from {_pct(b['compute_util'])} to "
            f"{_pct(q['compute_util'])} and throughput went from {b['partitions_per_min']:.0f} to **{q['partitions_per_min']:.0f} "
            f"partitions/min** ({ratio:.2f}×), while upstream's kernel utilization {kfell} from {_pct(b['kernel_util'])} to "
            f"{_pct(q['kernel_util'])}{why}.",
            {"pinned_pool_h2d_share": number(q["h2d_share"], "%", "exposed H2D share of ntt_msm_h", "pinned_pool"),
             "pinned_pool_compute_util": number(q["compute_util"], "%", "compute utilization", "pinned_pool"),
             "pinned_pool_kernel_util": number(q["kernel_util"], "%", "kernel utilization (upstream)", "pinned_pool"),
             "baseline_per_min": number(b["partitions_per_min"], "partitions/min", "throughput", "baseline"),
             "pinned_pool_per_min": number(q["partitions_per_min"], "partitions/min", "throughput", "pinned_pool"),
             "fix_throughput_ratio": number(ratio, "x", "throughput, pinned pool / baseline", "pinned_pool")}))
        ev = source.events("pinned_pool")
        bih = _barrier_in_held(ev)
        bound = model.compute_bound_per_min(calibrated_params(source, scenario="pinned_pool"))
        gw = {1: "pinned_gw1", 2: "pinned_pool", 3: "pinned_gw3"}
        sweep = {g: float(tab.loc[n, "partitions_per_min"]) for g, n in gw.items() if n in have}
        cands = {n: float(tab.loc[n, "partitions_per_min"]) for n in ("pinned_pool", "pinned_narrow", "pinned_gw1", "pinned_gw3") if n in have}
        best = max(cands, key=cands.get)
        narrow = (f" Narrowing the lock scope gave {tab.loc['pinned_narrow', 'partitions_per_min']:.0f} partitions/min against "
                  f"{q['partitions_per_min']:.0f} with the coarse lock;" if "pinned_narrow" in have else "")
        gws = (" gw = " + ", ".join(str(g) for g in sweep) + " gave " + ", ".join(f"{v:.0f}" for v in sweep.values()) + ";") if len(sweep) > 1 else ""
        nums = {"pinned_pool_barrier_in_held": number(bih, "%", "share of the held mutex in barrier_wait", "pinned_pool"),
                "compute_bound_per_min": number(bound, "partitions/min", "compute-only bound (model, calibrated on pinned_pool)", "pinned_pool"),
                "best_per_min": number(cands[best], "partitions/min", f"best throughput ({best})", best),
                "best_vs_bound": number(cands[best] / bound, "x", "best throughput / compute-only bound", best)}
        if "pinned_narrow" in have:
            nums["pinned_narrow_per_min"] = number(tab.loc["pinned_narrow", "partitions_per_min"], "partitions/min", "throughput", "pinned_narrow")
        out.append(Conclusion("next bottleneck", "07_next_bottleneck",
            f"With the pool, barrier_wait takes **{_pct(bih)}** of the held mutex ({path.loc['pinned_pool', 'barrier_wait']:.0f} ms per "
            f"partition on the GPU's critical path, against {path.loc['baseline', 'barrier_wait']:.0f} ms in the baseline)"
            f"{': the GPU now idles inside the lock waiting for prep_msm' if path.loc['pinned_pool', 'barrier_wait'] > path.loc['baseline', 'barrier_wait'] else ''}."
            f"{narrow}{gws} the best, {best} at {cands[best]:.0f} partitions/min, "
            f"reaches **{_pct(cands[best] / bound)}** of the compute-only bound of {bound:.0f} partitions/min.",
            nums))
    return out


def finding(source: Source, step: str) -> str:
    """The sentence of one step of :func:`conclusions` (plain text, markdown emphasis removed),
    a notebook's one-line finding; '' when the recording lacks that step's scenarios.

    Raises:
        ValueError: ``step`` is not a step name (lists them).
    """
    steps = ("symptom", "host", "mutex", "smoking gun", "H2D bandwidth", "fix", "next bottleneck")
    if step not in steps:
        raise ValueError(f"step must be one of {steps}, got {step!r}")
    for c in conclusions(source):
        if c.step == step:
            return c.text.replace("**", "")
    return ""


def key_numbers(items: list[Conclusion]) -> dict[str, dict[str, Any]]:
    """All numbers of ``items`` in one key-numbers dict (for :func:`zkgpu.replay.save_key_numbers`)."""
    out: dict[str, dict[str, Any]] = {}
    for c in items:
        out.update(c.numbers)
    return out


def markdown(items: list[Conclusion], suffix: str = ".html") -> str:
    """The conclusions as a numbered markdown list, each ending with a link to its notebook
    (``<notebook><suffix>``: ``.html``, the pages of ``zkgpu report`` that sit side by side in
    ``reports/``; pass ``.ipynb`` for links inside JupyterLab)."""
    lines = ["## Conclusions", ""]
    for i, c in enumerate(items, 1):
        lines.append(f"{i}. **{c.step[0].upper() + c.step[1:]}.** {c.text} → [{c.notebook}]({c.notebook}{suffix})")
    return "\n".join(lines)
