"""The investigation's conclusions, as sentences computed from a recording.

Every sentence and number of notebook 08's Conclusions comes from :func:`conclusions`, with the notebook that
shows it and its numbers in the key-numbers contract (:func:`zkgpu.analysis.keynumbers.number`). Steps, in
order: symptom (01), host (02), mutex and barrier (03), smoking gun (04), H2D (05), the fix (06), the next
bottleneck (07); a step whose scenario is not recorded is left out. :func:`next_limit` runs ``zkgpu diagnose``
on the scenario's own log, so the story and the command agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from zkgpu.analysis import keynumbers, logs, metrics, model
from zkgpu.analysis.calibration import calibrated_params
from zkgpu.analysis.gpu_time import IDLE_PARTS, gpu_time_split
from zkgpu.analysis.keynumbers import number
from zkgpu.analysis.replay import Source, reference_path, reference_table, scenario_table, shown_path, story_order
from zkgpu.core.manifest import commit_label
from zkgpu.story import bottleneck
from zkgpu.story import diagnose as dg
from zkgpu.story import prove_results as proofs
from zkgpu.story.limits import evidence_text
from zkgpu.story.seed import seed_ratio, smoking_gun_ratio

__all__ = ["Conclusion", "FIX_SCENARIOS", "GPU_PHASE_BOUND", "H2D_SHARE_NOTE", "KERNEL_BOUND", "host_suspects", "published_utilization", "conclusions", "beyond", "finding", "key_numbers", "markdown",
           "STORY_KEYS", "story_numbers", "story_finding", "summary_frames", "last_mile_scenarios", "last_mile_bound",
           "baseline_proportions", "baseline_proportions_text", "next_limit", "story_verdict", "LIMIT_NAMES", "next_limit_sentence"]


@dataclass
class Conclusion:
    """One finding: ``step`` (short name), ``notebook`` (the one that shows it, without suffix),
    ``text`` (one or two markdown sentences), ``numbers`` (key-numbers contract entries)."""

    step: str
    notebook: str
    text: str
    numbers: dict[str, dict[str, Any]] = field(default_factory=dict)


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def host_suspects(source: Source, scenario: str = "baseline") -> dict[str, float]:
    """Notebook 02's host-side suspects from a scenario's cuzk-format log, totals in ms: ``hot_path_ms``
    (Σ total_overhead_ms + Σ spawn_to_enter_ms), ``lock_wait_ms``, ``malloc_trim_ms``, ``prove_start_ms``,
    ``suspects_ms`` (the first three) and ``share`` (suspects_ms / prove_start_ms, NaN without it).

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


def _ms_of(a: float, b: float) -> str:
    """The text "a of b ms" with one decimal, so that a / b matches the share printed beside it."""
    return f"{a:.1f} of {b:.1f} ms"


#: How a sentence names the H2D share it prints: the report's one definition (:func:`zkgpu.analysis.replay.scenario_table`'s
#: ``h2d_share``, the key numbers' ``*_h2d_share``), so that no page prints another ratio under that name.
H2D_SHARE_NOTE = "the H2D share: Σ exposed / Σ ntt_msm_h per run, median over runs"


#: The two throughput bounds of the report, (name, definition): each its own name, so that no reader sees two
#: numbers under one name. The GPU-phase bound (notebooks 07 and 08's investigation) is the model's, calibrated on
#: pinned_pool (:func:`zkgpu.analysis.model.compute_bound_per_min`): the GPU phases' wall time, host work inside them included.
#: The compute-only bound (notebook 07b and 08's last mile, :func:`zkgpu.story.bottleneck.acceptance`) is measured kernel time.
GPU_PHASE_BOUND: tuple[str, str] = (
    "GPU-phase bound",
    "60 000 / the model's GPU phase ms per partition without the copies (calibrated on pinned_pool, the host work inside "
    "the phases included; not the measured compute_only run)")
KERNEL_BOUND: tuple[str, str] = (
    "compute-only bound",
    "60 000 / the fewest GPU kernel ms per partition (CUDA events) of the recording's runs, as in notebook 07b")

#: The scenarios of the fix (notebook 06 shows these and no others; its finding is the "fix" conclusion).
FIX_SCENARIOS: tuple[str, ...] = ("baseline", "registered", "pinned_pool")


@lru_cache(maxsize=64)
def _diagnosis(path: str, stamp: tuple[int, int]) -> dg.Diagnosis:
    return dg.diagnose_file(path)


def next_limit(source: Source, scenario: str = "pinned_pool") -> dg.Diagnosis | None:
    """What limits ``scenario`` next as ``zkgpu diagnose`` reads its log alone (:func:`zkgpu.story.diagnose.diagnose_file`):
    its ``bottleneck`` and :func:`zkgpu.story.limits.decide`'s evidence. None without a log; cached per log file.
    """
    path = source.log_path(scenario) if scenario in source.scenarios else None
    if path is None or not Path(path).is_file():
        return None
    st = Path(path).stat()
    return _diagnosis(str(path), (st.st_size, st.st_mtime_ns))


def story_verdict(source: Source, scenario: str) -> str:
    """The story's verdict for ``scenario`` (one of :data:`zkgpu.story.diagnose.BOTTLENECKS`) from its recorded
    configuration, not its name: pageable a, b, c → ``h2d_pageable``; submission-only or no mutex → ``gpu_bound``;
    prep_msm off the one thread in the narrow scope → ``lock_scope``; otherwise :func:`next_limit`
    (``undetermined`` without a log).
    """
    config = source.config(scenario)
    if config.get("transfer") in ("pageable", "resident"):
        return "h2d_pageable"
    if config.get("lock_scope") in ("submit", "none"):
        return "gpu_bound"
    if config.get("lock_scope") == "narrow" and config.get("prep", "cpu") != "cpu":
        return "lock_scope"
    d = next_limit(source, scenario)
    return d.bottleneck if d is not None else "undetermined"


#: What each verdict names as the limit, in a sentence ("the next limit is ...").
LIMIT_NAMES: dict[str, str] = {
    "prep_msm_barrier": "the CPU's prep_msm (the GPU waits for it at the barrier)",
    "gpu_bound": "the GPU phases themselves, not prep_msm",
    "lock_scope": "the lock's scope (the mutex covers more than the kernels), not prep_msm",
    "h2d_pageable": "still the copy of a, b, c inside ntt_msm_h",
    "host_side": "the host-side steps (tracker lock, spawn, malloc_trim)",
    "undetermined": "not determined from its log",
}


def _limit_clause(d: dg.Diagnosis | None, log: str = "its log") -> str:
    """"by zkgpu diagnose's rule on <log> (notebook 09), <evidence>: the next limit is **<name>**" ('' without a
    log); the evidence is :func:`zkgpu.story.limits.evidence_text`'s, or the diagnosis' own reason where its verdict came
    before that rule (the host side, a pageable copy, a log it cannot read)."""
    if d is None:
        return ""
    if d.next_limit is not None:
        why = evidence_text(d.next_limit)
    else:  # the verdict step's reason: "**verdict** (confidence). <reason> Change: ..."
        why = d.steps[-1].text.split(" Change:")[0].split(". ", 1)[-1].rstrip(".")
        why = why[0].lower() + why[1:]
    return f"by zkgpu diagnose's rule on {log} (notebook 09), {why}: the next limit is **{LIMIT_NAMES[d.bottleneck]}**"


def next_limit_sentence(source: Source, scenario: str = "pinned_pool") -> str:
    """One sentence: what limits ``scenario`` next and why (:func:`next_limit`'s verdict and its evidence), for the
    pages that name the next limit in passing (00, 07b); '' when the scenario has no log."""
    clause = _limit_clause(next_limit(source, scenario)).replace("**", "")
    return f"After the fix ({scenario}, {shown_path(source.recording.path)}), {clause}." if clause else ""


def conclusions(source: Source) -> list[Conclusion]:
    """The findings on ``source``'s recording, in story order. ms per partition are means where parts must add up,
    medians where labelled.
    """
    tab = scenario_table(source)
    have = set(tab.index)
    out: list[Conclusion] = []
    evs = source.all_events(list(tab.index)) if len(tab) else pd.DataFrame()
    path = metrics.critical_path(evs) if len(tab) else pd.DataFrame()
    split = metrics.ntt_msm_h_split(evs) if len(tab) else pd.DataFrame()
    pub = published_utilization()
    if "baseline" in have:
        b = tab.loc["baseline"]
        near = ""
        nums_near = {}
        if "pinned_gw1" in have:
            g = tab.loc["pinned_gw1"]
            near = (f" Those are for upstream's run after its fix (Phase 9 of its write-up: pinned pre-staging, gw = 1, RTX 5070 Ti, "
                    f"CPU-limited); the same two definitions on our nearest run, pinned_gw1, read {_pct(g['timeline_util'])} and "
                    f"{_pct(g['kernel_util'])}.")
            nums_near = {"pinned_gw1_kernel_util": number(g["kernel_util"], "%", "kernel utilization (upstream)", "pinned_gw1"),
                         "pinned_gw1_timeline_util": number(g["timeline_util"], "%", "TIMELINE utilization", "pinned_gw1")}
        out.append(Conclusion("symptom", "01_symptom",
            f"In the baseline (pageable a, b, c; coarse lock; gw = {b['gw']}) the GPU ran kernels during **{_pct(b['compute_util'])}** "
            f"of the wall time (compute utilization), while upstream's two figures, over the same window, read {_pct(b['timeline_util'])} "
            f"(TIMELINE: some worker between GPU_START and GPU_END) and {_pct(b['kernel_util'])} (kernel utilization: "
            f"Σ (gpu_total − barrier_wait) / wall, which counts the H2D copies inside ntt_msm_h as GPU work). Upstream published "
            f"{_pct(pub['timeline_util'])} TIMELINE and {_pct(pub['kernel_util'])} kernel utilization.{near}",
            {"baseline_compute_util": number(b["compute_util"], "%", "compute utilization", "baseline"),
             "baseline_kernel_util": number(b["kernel_util"], "%", "kernel utilization (upstream)", "baseline"),
             "baseline_timeline_util": number(b["timeline_util"], "%", "TIMELINE utilization", "baseline"),
             "published_timeline_util": number(pub["timeline_util"], "%", "TIMELINE utilization, upstream published", "cuzk gw=1"),
             "published_kernel_util": number(pub["kernel_util"], "%", "kernel utilization, upstream published", "cuzk gw=1"),
             **nums_near}))
        try:
            h = host_suspects(source, "baseline")
        except (FileNotFoundError, KeyError):
            h = None
        if h and h["prove_start_ms"] > 0:
            verdict = "not where the time goes" if h["share"] < 0.05 else "a share worth a closer look"
            nums_host = {"host_suspects_ms": number(h["suspects_ms"], "ms", "host-side suspects, total", "baseline"),
                         "host_share": number(h["share"], "%", "host-side suspects / prove_start", "baseline")}
            text = (f"The host-side suspects (the JobTracker lock taken twice per partition, the spawn, the finalizer's lock wait "
                    f"and malloc_trim) add up to {h['suspects_ms']:.1f} ms, **{100 * h['share']:.2f}%** of the "
                    f"{h['prove_start_ms']:.0f} ms spent inside the C++ start function (both summed over every partition of both "
                    f"workers): {verdict}.")
            out.append(Conclusion("host", "02_host_instrumentation", text, nums_host))
        if "baseline" in path.index:
            p = path.loc["baseline"]
            held = sum(p[c] for c in metrics.GPU_PATH if c != "lock_free")
            ntt = p["h2d"] + p["ntt"] + p["h_msm"]
            what = "through the slow ntt_msm_h, not through the barrier" if ntt > p["barrier_wait"] else "mostly at the barrier"
            out.append(Conclusion("mutex", "03_mutex_barrier",
                f"In the baseline some worker holds the GPU mutex {held:.1f} ms per partition (mean per partition along the GPU's "
                f"critical path); **{_pct(ntt / held)}** of it ({_ms_of(ntt, held)}) is ntt_msm_h and "
                f"{_pct(p['barrier_wait'] / held)} ({_ms_of(p['barrier_wait'], held)}) barrier_wait: the lock is held {what}.",
                {"baseline_held_ms": number(held, "ms", "mutex held, mean per partition (GPU critical path)", "baseline"),
                 "baseline_held_ntt_msm_h": number(ntt / held, "%", "share of the held mutex in ntt_msm_h", "baseline"),
                 "baseline_held_barrier": number(p["barrier_wait"] / held, "%", "share of the held mutex in barrier_wait", "baseline")}))
        seed = logs.partition_table(logs.parse_file(reference_path("seed_cuzk_timing.log")))
        d = (seed["ntt_msm_h_ms"] - seed["prep_msm_ms"]).dropna()
        runs = [smoking_gun_ratio(source.events("baseline", k)) for k, e in enumerate(source.runs("baseline")) if e.get("events")]
        r = pd.Series(runs, dtype=float).dropna()
        sb = split.loc["baseline"] if "baseline" in split.index else None
        holds = ""
        nums_sg = {"seed_ntt_minus_prep_min_ms": number(d.min(), "ms", "seed: ntt_msm_h − prep_msm, smallest", "seed"),
                   "seed_ntt_over_prep": number(seed_ratio(), "x", "median ntt_msm_h / median prep_msm", "seed")}
        if len(r):
            verdict = ("the test reproduces: ntt_msm_h outlasts prep_msm" if r.min() > 1 else
                       "the test does not hold in every run: prep_msm outlasts ntt_msm_h" if r.max() > 1 else
                       "the test does not reproduce: prep_msm outlasts ntt_msm_h")
            holds = (f" On our H200 baseline (prep_msm on CPU threads, as cuzk's) {verdict}: median ntt_msm_h / median prep_msm = "
                     f"**{r.median():.2f}** (runs {r.min():.2f}–{r.max():.2f}, {len(r)} run(s); the seed {seed_ratio():.2f}).")
            nums_sg.update({"baseline_ntt_over_prep": number(r.median(), "x", "median ntt_msm_h / median prep_msm, median over runs", "baseline"),
                            "baseline_ntt_over_prep_min": number(r.min(), "x", "median ntt_msm_h / median prep_msm, smallest run", "baseline"),
                            "baseline_ntt_over_prep_max": number(r.max(), "x", "median ntt_msm_h / median prep_msm, largest run", "baseline")})
        what_holds = ""
        if sb is not None and sb["ntt_msm_h"] > 0:
            what_holds = (f" What holds on both: the copies sit inside ntt_msm_h, here the exposed H2D of a, b, c is "
                          f"**{_pct(tab.loc['baseline', 'h2d_share'])}** of it ({H2D_SHARE_NOTE}; the representative run's means per "
                          f"partition: {_ms_of(sb['h2d'], sb['ntt_msm_h'])}).")
            nums_sg.update({"baseline_h2d_share": number(tab.loc["baseline", "h2d_share"], "%", "exposed H2D share of ntt_msm_h (Σ exposed / Σ ntt_msm_h)", "baseline"),
                            "baseline_h2d_exposed_mean_ms": number(sb["h2d"], "ms", "exposed H2D, mean per partition", "baseline"),
                            "baseline_ntt_msm_h_mean_ms": number(sb["ntt_msm_h"], "ms", "ntt_msm_h, mean per partition", "baseline")})
        out.append(Conclusion("smoking gun", "04_smoking_gun",
            f"In the seed's CUZK_TIMING lines (RTX 5070 Ti, 32 GiB PoRep) ntt_msm_h ({seed['ntt_msm_h_ms'].min():.0f}–"
            f"{seed['ntt_msm_h_ms'].max():.0f} ms) exceeds prep_msm by {d.min():.0f}–{d.max():.0f} ms: the GPU was not waiting for "
            f"the CPU.{holds}{what_holds}", nums_sg))
    if {"baseline", "pinned_pool"} <= have:
        b, q = tab.loc["baseline"], tab.loc["pinned_pool"]
        load = source.recording.host_load_threads
        out.append(Conclusion("H2D bandwidth", "05_h2d_bandwidth",
            f"{'Under ' + str(load) + ' host memory-load threads' if load else 'On an idle host'} a, b, c reached the GPU at "
            f"**{b['h2d_gbps']:.2f} GB/s** from pageable memory and {q['h2d_gbps']:.2f} GB/s from the pinned pool "
            f"({q['h2d_gbps'] / b['h2d_gbps']:.1f}× faster; Σ bytes / Σ copy time).",
            {"baseline_h2d_gbps": number(b["h2d_gbps"], "GB/s", "effective H2D rate of a, b, c", "baseline"),
             "pinned_pool_h2d_gbps": number(q["h2d_gbps"], "GB/s", "effective H2D rate of a, b, c", "pinned_pool")}))
        sb, sq = split.loc["baseline"], split.loc["pinned_pool"]
        rose = "rose" if q["compute_util"] > b["compute_util"] else "fell"
        kfell = "fell" if q["kernel_util"] < b["kernel_util"] else "rose"
        why = (" because it had counted the slow copies as GPU work" if (rose, kfell) == ("rose", "fell") else "")
        ratio = q["partitions_per_min"] / b["partitions_per_min"]
        bound = model.compute_bound_per_min(calibrated_params(source, scenario="pinned_pool"))
        # the scenarios notebook 06 shows (its finding is this sentence): every number quoted is on its page
        higher = [n for n in FIX_SCENARIOS[1:-1] if n in have and tab.loc[n, "compute_util"] > q["compute_util"]
                  and tab.loc[n, "partitions_per_min"] < q["partitions_per_min"]]
        kms = {n: float(v) for n, v in metrics.kernel_ms(path).items() if n in ("pinned_pool", *higher)}
        caveat = ""
        nums_fix = {}
        if higher:
            caveat = (" Compute utilization alone does not rank configurations: "
                      + " and ".join(f"{n} reads {_pct(tab.loc[n, 'compute_util'])} at {tab.loc[n, 'partitions_per_min']:.0f} partitions/min"
                                     for n in higher)
                      + f", above the pool's {_pct(q['compute_util'])} at {q['partitions_per_min']:.0f}, because kernels that run beside "
                      "copies run slower and fill more of the wall time (GPU phase ms per partition without the copies, means: "
                      + ", ".join(f"{n} {v:.0f}" for n, v in kms.items()) + "); throughput ranks them.")
            nums_fix = {f"{n}_kernel_ms": number(v, "ms", "GPU phase ms without the copies, mean per partition", n) for n, v in kms.items()}
            for n, v in kms.items():
                keynumbers.show("gpu_phases", v, f"{v:.0f}", scenario=n, unit="ms")
        out.append(Conclusion("fix", "06_pinned_pool_fix",
            f"With the pinned pool the exposed H2D went from {_pct(b['h2d_share'])} to {_pct(q['h2d_share'])} of ntt_msm_h "
            f"({H2D_SHARE_NOTE}; the representative runs' means per partition: {_ms_of(sb['h2d'], sb['ntt_msm_h'])} and "
            f"{_ms_of(sq['h2d'], sq['ntt_msm_h'])}); "
            f"compute utilization {rose} from {_pct(b['compute_util'])} to {_pct(q['compute_util'])} and throughput went from "
            f"{b['partitions_per_min']:.0f} to **{q['partitions_per_min']:.0f} partitions/min** ({ratio:.2f}×), while upstream's "
            f"kernel utilization {kfell} from {_pct(b['kernel_util'])} to {_pct(q['kernel_util'])}{why}.{caveat}",
            {"pinned_pool_h2d_share": number(q["h2d_share"], "%", "exposed H2D share of ntt_msm_h (Σ exposed / Σ ntt_msm_h)", "pinned_pool"),
             "pinned_pool_compute_util": number(q["compute_util"], "%", "compute utilization", "pinned_pool"),
             "pinned_pool_kernel_util": number(q["kernel_util"], "%", "kernel utilization (upstream)", "pinned_pool"),
             "baseline_per_min": number(b["partitions_per_min"], "partitions/min", "throughput", "baseline"),
             "pinned_pool_per_min": number(q["partitions_per_min"], "partitions/min", "throughput", "pinned_pool"),
             "fix_throughput_ratio": number(ratio, "x", "throughput, pinned pool / baseline", "pinned_pool"),
             **nums_fix}))
        ev = source.events("pinned_pool")
        bih = _barrier_in_held(ev)
        params = calibrated_params(source, scenario="pinned_pool")
        gw = {1: "pinned_gw1", 2: "pinned_pool", 3: "pinned_gw3"}
        sweep = {g: float(tab.loc[n, "partitions_per_min"]) for g, n in gw.items() if n in have}
        cands = {n: float(tab.loc[n, "partitions_per_min"]) for n in ("pinned_pool", "pinned_narrow", "pinned_gw1", "pinned_gw3") if n in have}
        best = max(cands, key=lambda k: cands[k])
        narrow = ""
        if "pinned_narrow" in have:
            nv = tab.loc["pinned_narrow", "partitions_per_min"]
            idle = gpu_time_split(source.events("pinned_narrow")).iloc[0][list(IDLE_PARTS[:-1])].astype(float)  # as the figures name it
            narrow = (f" Narrowing the lock scope gave {nv:.0f} partitions/min against {q['partitions_per_min']:.0f} with the coarse "
                      f"lock: {'no gain, the' if nv <= q['partitions_per_min'] else 'a little, the'} wait moves outside the lock, and "
                      f"the GPU's largest idle part is still {idle.idxmax()} ({idle.max():.0f} ms per partition, mean), now with "
                      "the lock free.")
        d = next_limit(source, "pinned_pool")
        verdict = d.bottleneck if d is not None else "undetermined"
        prep_next = verdict == "prep_msm_barrier"
        gws = ""
        if len(sweep) > 1:
            third = ("; here a third worker keeps a third prep_msm in flight" if prep_next and sweep.get(3, 0.0) > sweep.get(2, math.inf)
                     else "")
            gws = (" gw = " + ", ".join(str(g) for g in sweep) + " gave " + ", ".join(f"{v:.0f}" for v in sweep.values())
                   + f" partitions/min (upstream measured gw = 3 slightly worse than gw = 2 at its sizes{third}).")
        pb = path.loc["pinned_pool"]
        kms_q = float(metrics.kernel_ms(path).loc["pinned_pool"])
        keynumbers.show("gpu_phases", kms_q, f"{kms_q:.0f} ms", scenario="pinned_pool", unit="ms")  # as 06's and 07's tables show it
        keynumbers.show("gpu_phases", params.gpu_compute_ms, f"{params.gpu_compute_ms:.0f} ms", scenario="pinned_pool", unit="ms",
                        statistic=keynumbers.GPU_PHASES_MODEL)  # the bound's: the model's, said so where it is printed
        nums = {"pinned_pool_barrier_in_held": number(bih, "%", "share of the held mutex in barrier_wait", "pinned_pool"),
                "pinned_pool_path_barrier_ms": number(pb["barrier_wait"], "ms", "barrier_wait in the lock, mean per partition (GPU critical path)", "pinned_pool"),
                "pinned_pool_prep_msm_ms": number(q["prep_msm_ms"], "ms", "prep_msm (CPU), median per partition", "pinned_pool"),
                "pinned_pool_next_limit": number(verdict, "", "what limits pinned_pool next (zkgpu diagnose's rule on its log)", "pinned_pool"),
                "compute_bound_per_min": number(bound, "partitions/min", f"{GPU_PHASE_BOUND[0]}: {GPU_PHASE_BOUND[1]}", "pinned_pool"),
                "best_per_min": number(cands[best], "partitions/min", f"best throughput ({best})", best),
                "best_vs_bound": number(cands[best] / bound, "x", f"best throughput / {GPU_PHASE_BOUND[0]} (a ratio: a stand-in run can exceed the model's bound)", best)}
        nl = d.next_limit if d is not None else None
        if nl is not None:
            nums["pinned_pool_barrier_idle"] = number(nl.barrier_idle, "%", "share of the GPU window idle at the barrier (its log)", "pinned_pool")
            if math.isfinite(nl.prep_gain):
                nums["model_prep_2x_gain"] = number(nl.prep_gain, "x", "model calibrated on the log: throughput with prep_msm 2× faster / as logged", "pinned_pool")
        if "pinned_narrow" in have:
            nums["pinned_narrow_per_min"] = number(tab.loc["pinned_narrow", "partitions_per_min"], "partitions/min", "throughput", "pinned_narrow")
        co = ""
        if "compute_only" in have:
            co = (f" (that bound is not the measured compute_only scenario, {tab.loc['compute_only', 'partitions_per_min']:.0f} "
                  f"partitions/min, whose pageable pre-staging copies ran beside the other worker's kernels and slowed them)")
            nums["compute_only_per_min"] = number(tab.loc["compute_only", "partitions_per_min"], "partitions/min", "throughput, pre-staged scenario (measured)", "compute_only")
        base_bw = path.loc["baseline", "barrier_wait"] if "baseline" in path.index else float("nan")
        # prep_msm starts before its worker queues for the mutex: longer than the GPU phases, it may still be done before
        # the worker reaches the barrier (a reader took "longer than the GPU phases" beside a 0% barrier share for a contradiction)
        early = "" if prep_next or bih >= 0.05 else (", yet done before its worker reaches the barrier (it starts before the "
                                                     "worker queues for the mutex)")
        waits = (f"the GPU idles inside the lock until the CPU's prep_msm (median {q['prep_msm_ms']:.0f} ms per partition) is done, "
                 "longer than" if prep_next else
                 f"the CPU's prep_msm (median {q['prep_msm_ms']:.0f} ms per partition) is "
                 + ("longer than" if q["prep_msm_ms"] > kms_q else "shorter than"))
        clause = _limit_clause(d, "the pool's log") or "the pool has no cuzk-format log to read what limits it next from"
        clause = clause[0].upper() + clause[1:]
        step = {"prep_msm_barrier": "a faster prep_msm (on the GPU, or more CPU threads)",
                "gpu_bound": "faster GPU phases (the kernels, and the host work inside the phases: 07b)",
                "lock_scope": "the mutex over the kernels' submission only (07b)"}.get(verdict, dg.RECOMMENDATIONS[verdict])
        out.append(Conclusion("next bottleneck", "07_next_bottleneck",
            f"With the pool, barrier_wait takes **{_pct(bih)}** of the held mutex ({pb['barrier_wait']:.0f} ms per partition, mean along "
            f"the GPU's critical path, against {base_bw:.0f} ms in the baseline): {waits} the GPU phases of a partition "
            f"({kms_q:.0f} ms without the copies, mean){early}.{narrow}{gws} The best, {best} at {cands[best]:.0f} partitions/min, reaches "
            f"**{_pct(cands[best] / bound)}** of the {GPU_PHASE_BOUND[0]} of {bound:.0f} partitions/min (60 000 / the model's {params.gpu_compute_ms:.0f} ms "
            f"of GPU phases per partition without the copies, its calibrated phases' medians){co}. {clause}; the next step is {step}.",
            nums))
    return out


def beyond() -> list[Conclusion]:
    """The two steps after the investigation, each from its own recording (replayed, never
    re-measured): prep_msm off the critical path (notebook 07b, the newest ``data/last-mile/``
    recording, :func:`zkgpu.story.bottleneck.summary`) and a real Groth16 proof (notebook 10, the newest
    ``bench-prove`` recording, :func:`zkgpu.story.prove_results.prove_finding`). A step whose recording
    is missing is left out."""
    out: list[Conclusion] = []
    try:
        nums, text = bottleneck.summary()
        out.append(Conclusion("beyond the fix", "07b_last_bottleneck", text, nums))
    except (ValueError, LookupError):
        pass
    try:
        psrc = proofs.recorded_prove_source()
        if psrc is not None:
            out.append(Conclusion("a real proof", "10_real_proof", proofs.prove_finding(psrc),
                                  {f"proof_{k}": v for k, v in proofs.prove_key_numbers(psrc).items()}))
    except (ValueError, LookupError, OSError):
        pass
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
    """All numbers of ``items`` in one key-numbers dict (for :func:`zkgpu.analysis.keynumbers.save_key_numbers`)."""
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


#: The key numbers of the whole story's one sentence (:func:`story_finding`), in its order: the
#: smoking gun and the fix (the replayed recording), the next bottleneck, the last mile (its own recording).
STORY_KEYS: tuple[str, ...] = (
    "baseline_h2d_share", "pinned_pool_h2d_share", "baseline_per_min", "pinned_pool_per_min", "fix_throughput_ratio",
    "pinned_pool_barrier_in_held", "pinned_pool_next_limit", "last_mile_recording", "last_mile_best_partitions_per_min", "last_mile_best_x_baseline",
    "last_mile_best_compute_util")


def story_numbers(items: list[Conclusion]) -> dict[str, dict[str, Any]]:
    """The :data:`STORY_KEYS` entries that ``items`` carry, in that order (notebook 08 lists them first)."""
    nums = key_numbers(items)
    out = {k: dict(nums[k]) for k in STORY_KEYS if k in nums}
    if "last_mile_recording" in out:  # beside 08's own numbers, say which recording it is
        out["last_mile_recording"]["label"] = "last-mile recording (07b's, newest in data/last-mile/)"
    return out


def story_finding(items: list[Conclusion]) -> str:
    """Notebook 08's one-sentence finding: the whole story from the numbers of ``items``
    (:func:`conclusions` + :func:`beyond`): how much of ntt_msm_h the pageable copies took and what
    the pinned pool made of it and of the throughput, what limited it next (``pinned_pool_next_limit``, read from the
    pool's log by :func:`next_limit`), and where the last-mile recording ended. A step whose numbers are missing is left out; '' if none is there."""
    n = story_numbers(items)

    def v(k: str) -> Any:
        return n[k]["value"]

    parts = []
    if {"baseline_h2d_share", "pinned_pool_h2d_share", "baseline_per_min", "pinned_pool_per_min", "fix_throughput_ratio"} <= n.keys():
        parts.append(f"pageable H2D of a, b, c took {_pct(v('baseline_h2d_share'))} of ntt_msm_h in the baseline and the pinned pool "
                     f"cut it to {_pct(v('pinned_pool_h2d_share'))}, taking throughput from {v('baseline_per_min'):.0f} to "
                     f"{v('pinned_pool_per_min'):.0f} partitions/min ({v('fix_throughput_ratio'):.2f}×)")
    if {"pinned_pool_barrier_in_held", "pinned_pool_next_limit"} <= n.keys():
        held = _pct(v("pinned_pool_barrier_in_held"))
        parts.append(f"the GPU then waited inside the lock for the CPU's prep_msm ({held} of the held mutex)"
                     if v("pinned_pool_next_limit") == "prep_msm_barrier" else
                     f"the barrier wait then took {held} of the held mutex and the next limit was "
                     f"{LIMIT_NAMES[v('pinned_pool_next_limit')]}")
    if {"last_mile_recording", "last_mile_best_partitions_per_min", "last_mile_best_x_baseline", "last_mile_best_compute_util"} <= n.keys():
        parts.append(f"with prep_msm off the critical path ({v('last_mile_recording')}) the best configuration, "
                     f"{n['last_mile_best_partitions_per_min']['scenario']}, reached {v('last_mile_best_partitions_per_min'):.0f} "
                     f"partitions/min, {v('last_mile_best_x_baseline'):.2f}× that recording's baseline, at "
                     f"{_pct(v('last_mile_best_compute_util'))} compute utilization")
    text = "; ".join(parts)
    return (text[0].upper() + text[1:] + ".") if text else ""


def summary_frames(source: Source, names: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """What :func:`zkgpu.analysis.plots.summary` draws for ``source``'s scenarios ``names`` (default: all, in
    :data:`zkgpu.analysis.replay.STORY_ORDER`): :func:`zkgpu.analysis.replay.scenario_table`, the GPU's time per partition
    (:func:`zkgpu.analysis.gpu_time.gpu_time_split`) and ntt_msm_h's split (:func:`zkgpu.analysis.metrics.ntt_msm_h_split`), the last two
    indexed like the table."""
    tab = scenario_table(source, names)
    evs = source.all_events(list(tab.index))
    return tab, gpu_time_split(evs).reindex(tab.index), metrics.ntt_msm_h_split(evs).reindex(tab.index)


def last_mile_scenarios(source: Source) -> list[str]:
    """A last-mile recording's scenarios in the story's order: those of the investigation
    (:func:`zkgpu.analysis.replay.story_order`: baseline, pinned_narrow, ...), then those that take prep_msm off
    the critical path in :func:`zkgpu.story.bottleneck.prep_scenarios`' order."""
    prep = [s for s in bottleneck.prep_scenarios(source) if source.has(s)]
    return [s for s in story_order(source.scenarios) if source.has(s) and s not in prep] + prep


def last_mile_bound(items: list[Conclusion]) -> float | None:
    """The compute-only bound (partitions/min) that :func:`beyond`'s last-mile finding measures its
    best run against (:func:`zkgpu.story.bottleneck.acceptance`'s), recovered from its two key numbers
    (best throughput / its share of the bound); None without them."""
    n = key_numbers(items)
    if {"last_mile_best_partitions_per_min", "last_mile_best_vs_bound"} <= n.keys() and n["last_mile_best_vs_bound"]["value"]:
        return float(n["last_mile_best_partitions_per_min"]["value"]) / float(n["last_mile_best_vs_bound"]["value"])
    return None


def baseline_proportions(base: str | Path | None = None) -> pd.DataFrame:
    """The baseline's ntt_msm_h split (:func:`zkgpu.analysis.metrics.ntt_msm_h_split`) in every last-mile recording,
    oldest first: ``h2d``, ``ntt``, ``h_msm``, ``ntt_msm_h`` (ms per partition, means), ``h2d_share`` (a fraction),
    ``commit`` and ``date``, indexed by the recording's folder. Empty (same columns) without such recordings.
    """
    cols = ["date", "commit", "h2d", "ntt", "h_msm", "ntt_msm_h", "h2d_share"]
    rows = {}
    for rec in reversed(bottleneck.last_mile_recordings(base)):
        if "baseline" not in rec.scenarios:
            continue
        split = metrics.ntt_msm_h_split(rec.events("baseline")).loc["baseline"]
        share = scenario_table(Source("recorded-gpu", rec, "replay"), ["baseline"])
        rows[shown_path(rec.path)] = {"date": rec.date, "commit": commit_label(rec.manifest),
                                      **{c: float(split[c]) for c in ("h2d", "ntt", "h_msm", "ntt_msm_h")},
                                      "h2d_share": float(share.loc["baseline", "h2d_share"]) if len(share) else float("nan")}
    return pd.DataFrame.from_dict(rows, orient="index", columns=cols).rename_axis("recording")


def baseline_proportions_text(tab: pd.DataFrame) -> str:
    """One sentence comparing the first and the last row of :func:`baseline_proportions` ("" with
    fewer than two rows): the baseline's kernel parts and its copy's share of ntt_msm_h."""
    if len(tab) < 2:
        return ""
    a, b = tab.iloc[0], tab.iloc[-1]
    return (f"From {tab.index[0]} to {tab.index[-1]} the baseline's NTT part of ntt_msm_h went from {a['ntt']:.1f} to "
            f"{b['ntt']:.1f} ms and its H MSM from {a['h_msm']:.1f} to {b['h_msm']:.1f} ms per partition, while the exposed "
            f"pageable copy went from {a['h2d']:.1f} to {b['h2d']:.1f} ms (it depends on the host, not the kernels): the copy's "
            f"share of ntt_msm_h went from {_pct(a['h2d_share'])} to {_pct(b['h2d_share'])}.")
