"""``zkgpu diagnose``: the investigation's decision sequence on a user's own cuzk-format logs.

:func:`diagnose` takes one parsed log and optionally an event table with measured copies, and runs the steps in
order, each deciding only on the lines it has: 0 ``input`` (cut, damaged or mixed logs → ``undetermined``),
1 ``symptom``, 2 ``host`` (→ ``host_side``), 3 ``mutex``, 4 ``smoking gun``, 5 ``hidden H2D`` (measured,
inferred or suspected → ``h2d_pageable``), 6 ``verdict``: the first cause that holds, then
:func:`zkgpu.story.limits.decide`, with the gain :func:`zkgpu.analysis.model.simulate` predicts, calibrated on
the log with its duration spread (mean over :data:`GAIN_SEEDS`). Thresholds: :data:`THRESHOLDS`. Statistics
are medians over complete partitions unless named otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from zkgpu.analysis import logs, metrics
from zkgpu.analysis.calibration import FR_BYTES, calibrate, duration_spread
from zkgpu.analysis.gpu_time import IDLE_CAUSES, idle_causes
from zkgpu.analysis.keynumbers import number
from zkgpu.analysis.model import simulate
from zkgpu.story import limits
from zkgpu.story.limits import NextLimit

__all__ = ["BOTTLENECKS", "THRESHOLDS", "RECOMMENDATIONS", "LINES", "Step", "Diagnosis", "host_totals", "diagnose", "diagnose_file",
           "markdown"]

#: The JSON vocabulary of ``bottleneck``.
BOTTLENECKS: tuple[str, ...] = ("h2d_pageable", "prep_msm_barrier", "lock_scope", "host_side", "gpu_bound", "undetermined")

#: name → (value, why). Shares are fractions in [0, 1].
THRESHOLDS: dict[str, tuple[float, str]] = {
    "min_partitions": (3, "complete partitions (ntt_msm_h and gpu_total or mutex_held) needed for a median"),
    "host_share": (0.05, "host-side suspects / prove_start from which they are worth a closer look (notebook 02)"),
    "enqueue_share": (0.5, "CUZK_NTT_H ntt_kernels / ntt_msm_h above which the enqueue waited for the copies "
                           "(pageable cudaMemcpyAsync blocks the host; pinned: 0.2 on our H200 recordings)"),
    "ntt_in_held": (0.5, "ntt_msm_h / mutex_held (or gpu_total) from which ntt_msm_h is what the lock is held for"),
    "smoking_gun": (0.9, "fraction of partitions with ntt_msm_h > prep_msm: the GPU was not waiting for the CPU"),
    "measured_h2d_share": (0.3, "measured copy time / ntt_msm_h above which the copies are what ntt_msm_h is"),
    "pre_lock_share": (0.3, "pre_lock_cpu_ms / mutex_held from which a, b, c are copied (pre-staged) before the lock"),
    "scope_barrier_ms": (1.0, "barrier_wait_ms from which a partition shows whether mutex_held covers the wait (coarse) or not "
                              "(narrow): the log's resolution, whole ms"),
    "restart_ms": (1000.0, "a TIMELINE clock that goes back by more than this: a second engine run in the same log"),
    **limits.THRESHOLDS,  # the rule after the copy: barrier_idle, prep_share, min_gain (zkgpu.story.limits)
}

#: bottleneck → the change to make.
RECOMMENDATIONS: dict[str, str] = {
    "h2d_pageable": "synthesize a, b, c into page-locked memory: a pinned pool (upstream 48dccd93, pinned_pool.rs), "
                    "so the H2D runs at PCIe rate instead of through the driver's pageable bounce buffer",
    "prep_msm_barrier": "take prep_msm off the critical path: a faster prep_msm (more CPU threads, or on the GPU) and "
                        "the barrier wait out of the mutex (narrow lock scope)",
    "lock_scope": "hold the GPU mutex over less: copy a, b, c before taking it, then hold it only while the kernels "
                  "are submitted (submission scope)",
    "host_side": "shorten the host-side steps the GPU waits for: the tracker lock, the spawn, malloc_trim "
                 "(GPU_TIMING / FIN_TIMING show which)",
    "gpu_bound": "the GPU phases are the limit: faster kernels (NTT, MSM), or more GPUs",
    "undetermined": "give the log the lines the steps below name as missing, whole and from one run",
}

#: the lines each step reads, with what enables them upstream (notes: shared/reference/cuzk-pipeline.md §2)
LINES: dict[str, str] = {
    "CUZK_TIMING": "CUZK_TIMING lines (stderr of supraseal-c2, extern/supraseal-c2/cuda/groth16_cuda.cu)",
    "mutex": "CUZK_TIMING pre_lock_cpu_ms/mutex_wait_ms, barrier_wait_ms, mutex_held_ms (curio 48dccd93 and later)",
    "TIMELINE": "TIMELINE lines (extern/cuzk engine, the waterfall events SYNTH_START … GPU_END)",
    "GPU_TIMING": "GPU_TIMING / FIN_TIMING lines (extern/cuzk engine.rs, INFO level)",
    "CUZK_NTT_H": "CUZK_NTT_H sub-timers (extern/supraseal-c2/cuda/groth16_ntt_h.cu, b5962135 and later)",
    "pool": "pinned-pool messages (extern/cuzk pinned_pool.rs, DEBUG level)",
    "sizes": "num_constraints (the engine's 'attempting pinned memory synthesis' message)",
    "copies": "the copies' own times: an nsys export (nsys export --type sqlite) with CUDA memcpy rows",
}


@dataclass
class Step:
    """One step of the sequence: ``name``, ``title``, ``status`` (``decided``: it named the bottleneck;
    ``ruled out``; ``cannot decide``; ``info``), ``text`` (one or two sentences), ``evidence`` (the lines
    and numbers used), ``missing`` (the lines it lacks, each with what enables it), ``numbers``
    (key-numbers contract: :func:`zkgpu.analysis.keynumbers.number`)."""

    name: str
    title: str
    status: str = "info"
    text: str = ""
    evidence: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    numbers: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Diagnosis:
    """The diagnosis of one log: ``bottleneck`` (one of :data:`BOTTLENECKS`), ``confidence``
    (``measured``, ``inferred``, ``suspected`` or ``none``), ``steps``, ``recommendation``,
    ``predicted_gain`` (``{"ratio", "partitions_per_min", "model_partitions_per_min", "change", "calibrated_on",
    "settings"}`` or None with ``gain_note`` saying why); ``to_confirm``: the evidence that would confirm a verdict
    that is not measured; ``events``: the log's event table (None when the
    input step stopped); ``next_limit``: :func:`zkgpu.story.limits.decide`'s record (None when the verdict came before it)."""

    log: str
    bottleneck: str
    confidence: str
    steps: list[Step]
    recommendation: str
    predicted_gain: dict[str, Any] | None = None
    gain_note: str = ""
    to_confirm: list[str] = field(default_factory=list)
    events: pd.DataFrame | None = field(default=None, repr=False, compare=False)  # the log's event table (figures), not in JSON
    next_limit: NextLimit | None = field(default=None, repr=False, compare=False)

    @property
    def evidence(self) -> list[str]:
        return [e for s in self.steps for e in s.evidence]

    @property
    def missing(self) -> list[str]:
        return list(dict.fromkeys(m for s in self.steps for m in s.missing))

    @property
    def numbers(self) -> dict[str, dict[str, Any]]:
        return {k: v for s in self.steps for k, v in s.numbers.items()}

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: ``log``, ``bottleneck``, ``confidence``, ``evidence``, ``missing``,
        ``recommendation``, ``predicted_gain``, ``numbers`` and the ``steps``."""
        return {"log": self.log, "bottleneck": self.bottleneck, "confidence": self.confidence, "evidence": self.evidence,
                "missing": self.missing, "recommendation": self.recommendation, "to_confirm": self.to_confirm, "predicted_gain": self.predicted_gain,
                "gain_note": self.gain_note, "numbers": _finite(self.numbers),
                "steps": [{"name": s.name, "title": s.title, "status": s.status, "text": s.text, "evidence": s.evidence,
                           "missing": s.missing} for s in self.steps]}


def _finite(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _t(name: str) -> float:
    return float(THRESHOLDS[name][0])


def _med(df: pd.DataFrame, col: str) -> float:
    if col not in df.columns:
        return math.nan
    s = pd.to_numeric(df[col], errors="coerce").dropna()
    return float(s.median()) if len(s) else math.nan


def _tot(df: pd.DataFrame, col: str) -> float:
    return float(pd.to_numeric(df[col], errors="coerce").sum()) if col in df.columns else 0.0


def host_totals(parsed: logs.ParsedLog) -> dict[str, float]:
    """The host-side suspects of notebook 02 from a parsed log, totals in ms, as
    :func:`zkgpu.story.conclusions.host_suspects` defines them: ``hot_path_ms`` (Σ GPU_TIMING
    ``total_overhead_ms`` + Σ ``spawn_to_enter_ms``), ``lock_wait_ms`` (Σ FIN_TIMING), ``malloc_trim_ms``,
    ``prove_start_ms``, ``suspects_ms`` (the first three) and ``share`` = suspects / prove_start (NaN
    without prove_start)."""
    gt, ft = parsed.gpu_timing, parsed.fin_timing
    out = {"hot_path_ms": _tot(gt, "total_overhead_ms") + _tot(gt, "spawn_to_enter_ms"), "lock_wait_ms": _tot(ft, "lock_wait_ms"),
           "malloc_trim_ms": _tot(ft, "malloc_trim_ms"), "prove_start_ms": _tot(gt, "prove_start_ms")}
    out["suspects_ms"] = out["hot_path_ms"] + out["lock_wait_ms"] + out["malloc_trim_ms"]
    out["share"] = out["suspects_ms"] / out["prove_start_ms"] if out["prove_start_ms"] > 0 else math.nan
    return out


# ------------------------------------------------------------------------------------------------
# step 0: is the input one whole run?

def _sizes(parsed: logs.ParsedLog) -> list[int]:
    pool = parsed.pool
    if "num_constraints" not in pool.columns:
        return []
    return sorted({int(v) for v in pd.to_numeric(pool["num_constraints"], errors="coerce").dropna()})


def _restarts(parsed: logs.ParsedLog) -> int:
    t = pd.to_numeric(parsed.timeline["t_ms"], errors="coerce").dropna() if "t_ms" in parsed.timeline.columns else pd.Series(dtype=float)
    if not len(t):
        return 0
    drop = t.cummax() - t
    starts = (drop > _t("restart_ms")) & ~(drop.shift(1, fill_value=0.0) > _t("restart_ms"))
    return int(starts.sum())


def _cut_lines(parsed: logs.ParsedLog) -> set[int]:
    """Line numbers of the records the parser flagged as cut."""
    out: set[int] = set()
    for df in (parsed.timing, parsed.ntt_h, parsed.timeline, parsed.gpu_timing, parsed.fin_timing, parsed.pool, parsed.messages):
        if "truncated" in df.columns and len(df):
            out |= {int(x) for x in df.loc[df["truncated"].fillna(False).astype(bool), "line"]}
    return out


def _complete(pt: pd.DataFrame) -> pd.DataFrame:
    if "ntt_msm_h_ms" not in pt.columns:
        return pt.iloc[0:0]
    end = pd.Series(False, index=pt.index)
    for c in ("gpu_total_ms", "mutex_held_ms"):
        if c in pt.columns:
            end |= pt[c].notna()
    return pt[pt["ntt_msm_h_ms"].notna() & end]


def _input_step(parsed: logs.ParsedLog, pt: pd.DataFrame, done: pd.DataFrame) -> Step:
    st = Step("input", "0. The input")
    s = parsed.summary()
    reasons: list[str] = []
    if s["cuzk_timing"] == 0 or "ntt_msm_h_ms" not in pt.columns:
        reasons.append("no CUZK_TIMING ntt_msm_h_ms line: the steps need the C++ start function's timings")
        st.missing.append(LINES["CUZK_TIMING"])
    cut = [f"{s[k]} {k} record(s)" for k in ("truncated", "malformed") if s[k]]
    if s["no_final_newline"]:
        cut.append("a last line without line end")
    only_last = parsed.cut_before_last == 0 if parsed.cut_before_last is not None else _cut_lines(parsed) <= {parsed.n_lines}
    if cut and not s["malformed"] and only_last:
        st.evidence.append("the last line is cut (" + ", ".join(cut) + "): its record is left out")
        cut = []
    if cut:
        reasons.append("the log is cut or damaged (" + ", ".join(cut) + "): give the whole log, as the engine wrote it")
    restarts, sizes = _restarts(parsed), _sizes(parsed)
    if restarts:
        reasons.append(f"the TIMELINE clock goes back {restarts} time(s) by more than {_t('restart_ms'):.0f} ms: the log holds "
                       "more than one engine run; give one run per log")
    if len(sizes) > 1:
        reasons.append(f"partitions of {len(sizes)} circuit sizes (num_constraints {', '.join(map(str, sizes[:4]))}): the log mixes "
                       "runs; give one run per log")
    if len(done) < _t("min_partitions") and "ntt_msm_h_ms" in pt.columns:
        reasons.append(f"{len(done)} complete partition(s) (ntt_msm_h with gpu_total or mutex_held), fewer than "
                       f"{_t('min_partitions'):.0f}")
    st.evidence.append(f"{parsed.n_lines} lines: {s['cuzk_timing']} CUZK_TIMING, {s['cuzk_ntt_h']} CUZK_NTT_H, {s['timeline']} TIMELINE, "
                       f"{s['gpu_timing']} GPU_TIMING, {s['fin_timing']} FIN_TIMING, {s['pinned_pool']} pinned-pool records; "
                       f"{len(pt)} partition records, {len(done)} complete")
    if s["unpaired_starts"]:
        st.evidence.append(f"{s['unpaired_starts']} TIMELINE start(s) without an end (partitions in flight when the log ends)")
    st.numbers["partitions"] = number(len(done), "", "complete partitions")
    if reasons:
        st.status = "decided"
        st.text = "Cannot diagnose this log: " + "; ".join(reasons) + "."
    else:
        st.text = f"One run, {len(done)} complete partitions."
    return st


# ------------------------------------------------------------------------------------------------
# steps 1-5

@dataclass
class _Run:
    """What the steps share: the parse, the partition table (complete partitions), the log's event table."""

    name: str
    parsed: logs.ParsedLog
    done: pd.DataFrame
    events: pd.DataFrame
    measured: pd.DataFrame | None
    has_timeline: bool
    workers: int  # distinct GPU workers in TIMELINE (0: unknown)
    med: dict[str, float] = field(default_factory=dict)
    _util: pd.Series | None = None
    params: Any = None  # the model calibrated on the log, once (_model_gain)
    jitter: float = math.nan  # the log's duration spread, once (_model_gain)
    gains: dict[str, tuple[dict[str, Any] | None, str]] = field(default_factory=dict)  # _model_gain's answers by verdict

    def util(self) -> pd.Series:
        """:func:`zkgpu.analysis.metrics.utilization` of the log's event table (its one run), computed once."""
        if self._util is None:
            self._util = metrics.utilization(self.events).iloc[0]
        return self._util

    def num(self, key: str, value: float, unit: str, label: str) -> dict[str, Any]:
        return number(float(value), unit, label, self.name)


def _symptom_step(r: _Run) -> Step:
    st = Step("symptom", "1. The symptom: how busy the GPU is")
    if not r.has_timeline:
        st.status = "cannot decide"
        st.text = "No TIMELINE lines: no wall clock, so no utilization or throughput."
        st.missing.append(LINES["TIMELINE"])
        return st
    u = r.util()
    parts = []
    for col in ("timeline_util", "kernel_util"):
        label, definition = metrics.UTILIZATIONS[col]
        parts.append(f"{label} {100 * u[col]:.1f}% ({definition})")
        st.numbers[col] = r.num(col, u[col], "%", label)
    st.numbers["partitions_per_min"] = r.num("ppm", u["partitions_per_min"], "partitions/min", "throughput")
    if r.measured is not None and "h2d" in set(r.measured["phase"].dropna()):
        cu = metrics.utilization(r.measured)["compute_util"].dropna()
        if len(cu):
            label, definition = metrics.UTILIZATIONS["compute_util"]
            parts.append(f"{label} {100 * cu.iloc[0]:.1f}% ({definition})")
            st.numbers["compute_util"] = r.num("compute_util", cu.iloc[0], "%", label)
    else:
        st.missing.append("compute utilization (kernels without the copies) needs the copies' times: our event table, "
                          "or " + LINES["copies"])
    st.text = "; ".join(parts) + f"; {u['partitions_per_min']:.1f} partitions/min over {u['partitions']:.0f} partitions."
    st.evidence.append(f"TIMELINE GPU_START/GPU_END and CUZK_TIMING of {len(r.done)} partitions")
    return st


def _host_step(r: _Run) -> tuple[Step, bool]:
    st = Step("host", "2. Host-side suspects (tracker lock, spawn, malloc_trim)")
    if not len(r.parsed.gpu_timing) or "prove_start_ms" not in r.parsed.gpu_timing.columns:
        st.status = "cannot decide"
        st.text = "No GPU_TIMING prove_start lines: the host-side suspects cannot be weighed."
        st.missing.append(LINES["GPU_TIMING"])
        return st, False
    h = host_totals(r.parsed)
    hit = h["share"] >= _t("host_share")
    st.numbers["host_suspects_ms"] = r.num("h", h["suspects_ms"], "ms", "host-side suspects, total")
    if math.isfinite(h["share"]):
        st.numbers["host_share"] = r.num("hs", min(h["share"], 1.0), "%", "host-side suspects / prove_start")
    st.evidence.append(f"GPU_TIMING/FIN_TIMING: hot path {h['hot_path_ms']:.0f} ms, tracker lock wait {h['lock_wait_ms']:.0f} ms, "
                       f"malloc_trim {h['malloc_trim_ms']:.0f} ms against {h['prove_start_ms']:.0f} ms in prove_start (sums)")
    st.status = "decided" if hit else "ruled out"
    st.text = (f"The host-side suspects add up to {h['suspects_ms']:.0f} ms, {100 * h['share']:.2f}% of prove_start: "
               + ("where the GPU's time goes." if hit else f"below {100 * _t('host_share'):.0f}%, not where the time goes."))
    return st, hit


_BARRIER = IDLE_CAUSES[0][0]  # idle_causes' label of the GPU idle while a worker waits at the barrier


def _coarse(done: pd.DataFrame) -> float:
    """1.0 when the log's lock scope is coarse (barrier_wait inside mutex_held), 0.0 when narrow, NaN when it cannot
    tell: among partitions that waited at the barrier (>= ``scope_barrier_ms``), narrow when most have
    gpu_total − mutex_held >= half their wait.
    """
    cols = ("gpu_total_ms", "mutex_held_ms", "barrier_wait_ms")
    if any(c not in done.columns for c in cols):
        return math.nan
    t = done[list(cols)].apply(pd.to_numeric, errors="coerce").dropna()
    t = t[t["barrier_wait_ms"] >= _t("scope_barrier_ms")]
    if not len(t):
        return math.nan
    outside = (t["gpu_total_ms"] - t["mutex_held_ms"]) >= 0.5 * t["barrier_wait_ms"]
    return 0.0 if float(outside.mean()) > 0.5 else 1.0


def _mutex_step(r: _Run) -> Step:
    st = Step("mutex", "3. The mutex and the barrier")
    d = r.done
    need = [c for c in ("mutex_wait_ms", "barrier_wait_ms", "mutex_held_ms") if c not in d.columns or d[c].isna().all()]
    if need:
        st.missing.append(LINES["mutex"])
    held = _med(d, "mutex_held_ms") if "mutex_held_ms" not in need else _med(d, "gpu_total_ms")
    for k in ("prep_msm_ms", "ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms", "gpu_total_ms", "mutex_wait_ms"):
        r.med[k] = _med(d, k)
    r.med["held_ms"] = held
    if "barrier_wait_ms" in need:
        st.status = "cannot decide"
        st.text = "No barrier_wait_ms lines: where the lock's time goes cannot be split."
        return st
    ms = metrics.mutex_stats(r.events, by=("run",))
    row = ms.iloc[0] if len(ms) else None
    cont = (row["mutex_wait_total_ms"] / row["mutex_held_total_ms"]) if row is not None and row["mutex_held_total_ms"] > 0 else math.nan
    r.med["contention"] = cont if "mutex_wait_ms" not in need else math.nan
    ic = idle_causes(r.events)
    r.med["barrier_idle"] = float(ic.loc[_BARRIER, "share"]) if _BARRIER in ic.index else math.nan
    r.med["coarse"] = _coarse(d)
    scope = {1.0: "coarse (barrier_wait inside the lock)", 0.0: "narrow (the lock released before the barrier)"}.get(
        r.med["coarse"], "not visible (no partition waited at the barrier; taken as coarse, upstream's)")
    st.numbers["barrier_idle"] = r.num("bi", min(max(r.med["barrier_idle"], 0.0), 1.0), "%", "share of the GPU window idle at the barrier")
    if math.isfinite(cont):
        st.numbers["mutex_contention"] = r.num("c", cont, "x", "Σ mutex_wait / Σ mutex_held")
    st.numbers["held_ms"] = r.num("held", held, "ms", "mutex held, median per partition")
    st.evidence.append(f"CUZK_TIMING medians: mutex held {held:.0f} ms, ntt_msm_h {r.med['ntt_msm_h_ms']:.0f} ms, barrier_wait "
                       f"{r.med['barrier_wait_ms']:.0f} ms, mutex_wait {r.med['mutex_wait_ms']:.0f} ms; lock scope {scope}")
    where = "ntt_msm_h" if r.med["ntt_msm_h_ms"] >= r.med["barrier_wait_ms"] else "the barrier wait"
    st.text = (f"Some worker holds the GPU mutex {held:.0f} ms per partition (median), mostly through {where}; the GPU idles at the "
               f"barrier {100 * r.med['barrier_idle']:.1f}% of its window"
               + (f"; workers wait for the lock {cont:.2f}× as long as it is held." if math.isfinite(cont) else "."))
    if not r.has_timeline:
        st.text += " (Without TIMELINE the records are placed one after the other, as if one worker handed the lock straight on.)"
    return st


def _smoking_gun_step(r: _Run) -> Step:
    st = Step("smoking gun", "4. The smoking gun: ntt_msm_h against prep_msm")
    d = r.done
    if "prep_msm_ms" not in d.columns or d["prep_msm_ms"].isna().all():
        st.status = "cannot decide"
        st.text = "No prep_msm_ms lines."
        st.missing.append(LINES["CUZK_TIMING"] + ": prep_msm_ms")
        return st
    both = d[["ntt_msm_h_ms", "prep_msm_ms"]].apply(pd.to_numeric, errors="coerce").dropna()
    frac = float((both["ntt_msm_h_ms"] > both["prep_msm_ms"]).mean()) if len(both) else math.nan
    r.med["ntt_over_prep"] = frac
    ident = metrics.identity_check(d if len(d) <= 1024 else d.iloc[np.linspace(0, len(d) - 1, 1024).round().astype(int)])
    resid = float(ident["residual_ms"].median())
    missing = ident["missing"].mode().iloc[0] if len(ident) else ""
    st.numbers["ntt_over_prep"] = r.num("g", frac, "%", "partitions with ntt_msm_h > prep_msm")
    st.evidence.append(f"ntt_msm_h > prep_msm in {100 * frac:.0f}% of {len(both)} partitions (medians {r.med['ntt_msm_h_ms']:.0f} "
                       f"against {r.med['prep_msm_ms']:.0f} ms); gpu_total − logged phases = {resid:.0f} ms (median)"
                       + (f", phases not logged: {missing}" if missing else ""))
    gun = frac >= _t("smoking_gun")
    st.status = "info"
    st.text = ("ntt_msm_h outlasts prep_msm: the GPU was not waiting for the CPU, the time is inside ntt_msm_h." if gun else
               "prep_msm outlasts ntt_msm_h in some partitions: the GPU can wait for the CPU at the barrier.")
    return st


def _h2d_step(r: _Run) -> tuple[Step, str]:
    """Returns the step and the confidence of ``h2d_pageable`` ('' when not decided)."""
    st = Step("hidden H2D", "5. The hidden part of ntt_msm_h: the H2D of a, b, c")
    p, ntt = r.parsed, r.med["ntt_msm_h_ms"]
    held = r.med.get("held_ms", 0)
    held = held if held > 0 else r.med.get("gpu_total_ms", 0)
    in_held = ntt / held if held > 0 else math.nan  # a log of zero-ms phases: no share to weigh
    r.med["ntt_in_held"] = in_held
    sizes = _sizes(p)
    pinned = int((p.pool["event"].isin(["checkout_reuse", "allocate", "attempt_pinned"])).sum()) if "event" in p.pool.columns else 0
    nbytes = 3 * sizes[0] * FR_BYTES if sizes else math.nan
    if not sizes:
        st.missing.append(LINES["sizes"] + ": without it the bytes copied per partition are unknown")
    # measured: nsys memcpy rows, or our h2d rows
    m = r.measured
    if m is not None and len(m):
        if "h2d" in set(m["phase"].dropna()):
            share = float(metrics.h2d_share(m, by=("run",))["share"].median())
            gbps = metrics.effective_h2d_gbps(m, by=("run",))["gbps"].median()
            st.evidence.append(f"measured (event table): exposed H2D {100 * share:.1f}% of ntt_msm_h at {gbps:.2f} GB/s")
        else:
            cp = m[m["phase"] == "memcpy_htod"]
            src = cp["detail"].astype("string").str.extract(r"src=(\w+)", expand=False)
            page = cp[src == "pageable"]
            nparts = max(len(r.done), 1)
            share = float(metrics.duration_ms(page).sum() / nparts / ntt) if len(cp) and ntt > 0 else math.nan
            gbps = float(page["bytes"].sum() / (metrics.duration_ms(page).sum() * 1e6)) if len(page) else math.nan
            st.evidence.append(f"measured (nsys): {len(page)} of {len(cp)} HtoD copies from pageable memory, "
                               f"{share * ntt:.0f} ms per partition ({100 * share:.0f}% of ntt_msm_h)"
                               + (f" at {gbps:.2f} GB/s" if math.isfinite(gbps) else ""))
        st.numbers["h2d_share_measured"] = r.num("m", min(share, 1.0), "%", "measured copy time / ntt_msm_h")
        if math.isfinite(share) and share >= _t("measured_h2d_share") and pinned == 0:
            st.status, st.text = "decided", "The measured copies are what ntt_msm_h is: a, b, c reach the GPU from pageable memory."
            return st, "measured"
        st.status, st.text = "ruled out", "The measured copies are a small part of ntt_msm_h."
        return st, ""
    st.missing.append(LINES["copies"])
    if pinned:
        st.status = "ruled out"
        st.evidence.append(f"{pinned} pinned-pool records: a, b, c are synthesized into page-locked memory")
        st.text = "a, b, c come from the pinned pool: the copy runs at PCIe rate, not through the pageable bounce buffer."
        return st, ""
    st.missing.append(LINES["pool"] + " (their absence does not prove pageable buffers: the level may be off)")
    pre = _med(r.done, "pre_lock_cpu_ms")
    held = r.med.get("held_ms", math.nan)
    if math.isfinite(pre) and held > 0 and pre / held >= _t("pre_lock_share"):
        st.numbers["pre_lock_share"] = r.num("p", min(pre / held, 1.0), "x", "pre_lock_cpu / mutex_held (medians)")
        st.evidence.append(f"pre_lock_cpu takes {pre:.0f} ms before the worker asks for the mutex, against {held:.0f} ms held "
                           "(medians): a, b, c are staged on the GPU before the lock")
        st.status = "decided"
        st.text = ("a, b, c are copied before the lock, and not from pinned memory: the slow pageable copy runs beside the other "
                   "worker's kernels and slows them (upstream's Phase 9 pre-staging; our compute_only scenario).")
        return st, "inferred"
    nh = p.ntt_h
    if len(nh) and "ntt_kernels_ms" in nh.columns:
        enq = _med(nh, "ntt_kernels_ms")
        share = enq / ntt if ntt > 0 else math.nan
        st.numbers["enqueue_share"] = r.num("e", min(share, 1.0), "%", "CUZK_NTT_H ntt_kernels / ntt_msm_h (medians)")
        rate = (f"; {nbytes / 1e9:.2f} GB of a, b, c in {enq:.0f} ms is {nbytes / (enq * 1e6):.2f} GB/s"
                if math.isfinite(nbytes) and enq > 0 else "")
        st.evidence.append(f"CUZK_NTT_H: the enqueue of the copies and NTTs (ntt_kernels) takes {enq:.0f} of {ntt:.0f} ms "
                           f"of ntt_msm_h ({100 * share:.0f}%, medians){rate}")
        if share >= _t("enqueue_share") and in_held >= _t("ntt_in_held"):
            st.status = "decided"
            st.text = ("The host blocks in the enqueue of the copies for most of ntt_msm_h, and ntt_msm_h is most of the lock: "
                       "a pageable cudaMemcpyAsync returns only once its data is staged, so the slow copy lands there.")
            return st, "inferred"
        st.status, st.text = "ruled out", "The enqueue is a small part of ntt_msm_h: the copies do not block the host."
        return st, ""
    st.missing.append(LINES["CUZK_NTT_H"])
    gun = r.med.get("ntt_over_prep", math.nan) >= _t("smoking_gun")
    ntt_share = ntt / r.med["gpu_total_ms"] if r.med["gpu_total_ms"] > 0 else math.nan
    if gun and ntt_share >= _t("ntt_in_held"):
        st.status = "decided"
        st.text = (f"Only the smoking gun: ntt_msm_h is {100 * ntt_share:.0f}% of gpu_total and outlasts prep_msm, so the GPU's time "
                   "goes inside ntt_msm_h, where a, b, c are copied; with no line saying they are pinned, the pageable copy is the "
                   "suspect (upstream 48dccd93). To confirm: " + "; ".join([LINES["CUZK_NTT_H"], LINES["copies"], LINES["pool"]]) + ".")
        return st, "suspected"
    st.status = "cannot decide"
    st.text = "Without sub-timers, pool lines or measured copies the copy cannot be separated from the NTTs."
    return st, ""


# ------------------------------------------------------------------------------------------------
# step 6: the verdict and the model's gain

#: partitions the model is calibrated on: evenly spaced over the log, so that calibration (medians) costs the
#: same on a log of any length
CALIBRATION_PARTITIONS = 256


def _sample(events: pd.DataFrame) -> pd.DataFrame:
    """The rows of at most :data:`CALIBRATION_PARTITIONS` partitions, evenly spaced (rows without a partition kept)."""
    parts = pd.Series(events["partition"].dropna().unique()).sort_values().to_numpy()
    if len(parts) <= CALIBRATION_PARTITIONS:
        return events
    keep = parts[np.linspace(0, len(parts) - 1, CALIBRATION_PARTITIONS).round().astype(int)]
    return events[events["partition"].isna() | events["partition"].isin(keep)]


#: seeds whose mean throughput the predicted gain compares (the durations drawn with the log's spread)
GAIN_SEEDS = 8


def _throughput(params: Any, kw: dict[str, Any], jitter: float) -> float:
    """Mean partitions/min of :func:`zkgpu.analysis.model.simulate` over :data:`GAIN_SEEDS` seeds (one run when ``jitter`` is 0)."""
    seeds = range(GAIN_SEEDS if jitter > 0 else 1)
    return float(np.mean([simulate(params, **kw, jitter=jitter, seed=s).partitions_per_min for s in seeds]))


def _model_gain(r: _Run, verdict: str, hidden_ms: float) -> tuple[dict[str, Any] | None, str]:
    """The throughput gain :func:`zkgpu.analysis.model.simulate` predicts for the recommended change,
    calibrated on the log's own event table (medians), its durations varying by the log's spread
    (:func:`zkgpu.analysis.calibration.duration_spread`; none where it cannot be measured); computed once per verdict."""
    if verdict not in r.gains:
        r.gains[verdict] = _gain(r, verdict, hidden_ms)
    return r.gains[verdict]


def _gain(r: _Run, verdict: str, hidden_ms: float) -> tuple[dict[str, Any] | None, str]:
    if verdict in ("host_side", "gpu_bound", "undetermined"):
        return None, "the model takes the host-side steps and the GPU phases' times as given: no change of its settings removes them"
    if not r.has_timeline:
        return None, "no TIMELINE lines: the model cannot be calibrated on a log without synthesis and GPU queue times"
    try:
        params = r.params = r.params or calibrate(_sample(r.events), source=f"diagnose: {r.name}")
    except ValueError as exc:
        return None, f"the model cannot be calibrated on this log: {exc}"
    gw = max(r.workers, 1)
    scope = "narrow" if r.med.get("coarse") == 0 else "coarse"  # not visible: upstream's coarse (no barrier wait to place)
    kw: dict[str, Any] = {"partitions": int(min(max(len(r.done), 8), 64)), "gw": gw, "scope": scope, "transfer": "pinned"}
    after_params, after_kw = params, dict(kw)
    if verdict == "h2d_pageable":
        if not math.isfinite(hidden_ms):
            return None, "the copy's time is not in the log (no sub-timers or measured copies): the gain of pinned memory cannot be computed"
        after_params = replace(params, ntt_ms=max(params.ntt_ms - hidden_ms, 0.0))
        change = f"a, b, c pinned: ntt_msm_h without the {hidden_ms:.0f} ms the copy blocks it"
    elif verdict == "prep_msm_barrier":
        after_kw["prep_speedup"] = 2.0
        change = "prep_msm 2× faster"
    else:
        after_kw["scope"] = "submit"
        change = "the mutex over the kernels' submission only (copies before it)"
    if not math.isfinite(r.jitter):
        spread = duration_spread(_sample(r.events))
        r.jitter = spread if math.isfinite(spread) else 0.0
    before, after = _throughput(params, kw, r.jitter), _throughput(after_params, after_kw, r.jitter)
    return {"ratio": after / before, "partitions_per_min": after, "model_partitions_per_min": before, "change": change,
            "calibrated_on": r.name, "settings": {**kw, "jitter": r.jitter}}, ""


def _verdict(r: _Run, host_hit: bool, h2d_conf: str, steps: list[Step]) -> tuple[str, str, str, float, NextLimit | None]:
    """(bottleneck, confidence, text, hidden H2D ms, :func:`zkgpu.story.limits.decide`'s record or None)."""
    hidden = math.nan
    h2d = next(s for s in steps if s.name == "hidden H2D")
    if "enqueue_share" in h2d.numbers:
        hidden = h2d.numbers["enqueue_share"]["value"] * r.med["ntt_msm_h_ms"]
    if "h2d_share_measured" in h2d.numbers:
        hidden = h2d.numbers["h2d_share_measured"]["value"] * r.med["ntt_msm_h_ms"]
    if r.med.get("gpu_total_ms", math.nan) <= 0:  # NaN (not logged) is left to the steps below
        return "undetermined", "none", ("The log's GPU phases take 0 ms (gpu_total's median): there is no time to weigh; "
                                        "give a log of a run that did work."), hidden, None
    if host_hit:
        return "host_side", "measured", "The host-side steps take a share of prove_start the GPU waits through.", hidden, None
    if h2d_conf:
        return "h2d_pageable", h2d_conf, "The GPU's time goes into copying a, b, c from pageable memory inside ntt_msm_h.", hidden, None
    if not r.has_timeline:
        return "undetermined", "none", ("No pageable copy found, and without TIMELINE lines (wall clock, workers) the barrier, the lock "
                                        "and the GPU cannot be weighed against each other."), hidden, None
    if not math.isfinite(r.med.get("barrier_idle", math.nan)):
        return "undetermined", "none", "No barrier_wait lines: prep_msm cannot be weighed against the GPU phases.", hidden, None
    u = r.util()
    wall_pp = 60_000.0 / u["partitions_per_min"] if u["partitions_per_min"] > 0 else math.nan
    r.med["prep_share"] = r.med["prep_msm_ms"] / (max(r.workers, 1) * wall_pp)
    nl = limits.decide(barrier_idle=r.med["barrier_idle"], prep_msm_ms=r.med["prep_msm_ms"], prep_share=r.med["prep_share"],
                       workers=r.workers, contention=r.med.get("contention", math.nan),
                       gain=lambda change: _model_gain(r, change, hidden))
    return nl.bottleneck, "none" if nl.bottleneck == "undetermined" else "inferred", nl.text, hidden, nl


def diagnose(parsed: logs.ParsedLog, *, name: str = "log", measured: pd.DataFrame | None = None) -> Diagnosis:
    """The decision sequence (module doc) on one parsed log of ONE run; ``name`` names it, ``measured`` is an event
    table with the copies' own times or None.

    Returns:
        :class:`Diagnosis`; never raises on a log's content (what it cannot read becomes ``undetermined``).
    """
    pt = logs.partition_table(parsed)
    done = _complete(pt)
    st0 = _input_step(parsed, pt, done)
    if st0.status == "decided":
        return Diagnosis(name, "undetermined", "none", [st0], RECOMMENDATIONS["undetermined"], None, "no verdict to act on")
    events = logs.to_events(parsed, run=name)
    tl = events[events["phase"] == "prove"] if len(events) else events
    workers = int(tl["worker"].dropna().nunique()) if len(tl) else 0
    r = _Run(name, parsed, done, events, measured, bool(len(tl)), workers)
    steps = [st0, _symptom_step(r)]
    host, host_hit = _host_step(r)
    steps += [host, _mutex_step(r), _smoking_gun_step(r)]
    if "ntt_over_prep" not in r.med:
        r.med["ntt_over_prep"] = math.nan
    h2d, h2d_conf = _h2d_step(r)
    steps.append(h2d)
    verdict, conf, text, hidden, nl = _verdict(r, host_hit, h2d_conf, steps)
    gain, note = _model_gain(r, verdict, hidden)
    v = Step("verdict", "6. The verdict", "decided", f"**{verdict}** ({conf}). {text} Change: {RECOMMENDATIONS[verdict]}.")
    if gain is not None:
        v.text += (f" The model calibrated on this log predicts {gain['ratio']:.2f}× the throughput "
                   f"({gain['model_partitions_per_min']:.0f} → {gain['partitions_per_min']:.0f} partitions/min) with {gain['change']}.")
        v.numbers["predicted_gain"] = r.num("g", gain["ratio"], "x", f"model: throughput with {gain['change']} / as logged")
    elif note:
        v.text += f" No predicted gain: {note}."
    steps.append(v)
    confirm: list[str] = []
    if verdict == "h2d_pageable" and conf != "measured":
        confirm = [LINES["copies"] + " (HtoD rows with src=pageable, their time against ntt_msm_h)"]
        if not len(parsed.ntt_h):
            confirm.append(LINES["CUZK_NTT_H"] + " (ntt_kernels near ntt_msm_h: the host blocked in the copies)")
        confirm.append(LINES["pool"] + " (none: a, b, c are not from the pinned pool)")
    return Diagnosis(name, verdict, conf, steps, RECOMMENDATIONS[verdict], gain, note, confirm, events, nl)


def diagnose_file(path: str | Path, *, measured: pd.DataFrame | None = None, progress: bool = False) -> Diagnosis:
    """:func:`diagnose` of the log at ``path`` (streamed: linear time, bounded memory; a tqdm bar on
    stderr with ``progress`` for large files; the CUZK_TIMING lines kept as partition records only,
    ``timing_rows=False``). Raises OSError when the file cannot be read."""
    p = Path(path)
    return diagnose(logs.parse_file(p, progress=progress, timing_rows=False), name=p.stem, measured=measured)


def markdown(diag: Diagnosis, figure: str | None = None) -> str:
    """The diagnosis of one log as Markdown: the verdict first, then each step with its evidence and
    what is missing; ``figure`` (a relative image path) is shown after the verdict."""
    out = [f"## {diag.log}: `{diag.bottleneck}`", "", f"**Recommendation:** {diag.recommendation}.", ""]
    if diag.predicted_gain is not None:
        g = diag.predicted_gain
        out += [f"**Predicted gain:** {g['ratio']:.2f}× ({g['change']}; the model calibrated on this log).", ""]
    if figure:
        out += [f"![the GPU's time per partition, {diag.log}]({figure})", ""]
    for s in diag.steps:
        out += [f"### {s.title} — {s.status}", "", s.text, ""]
        out += [f"- evidence: {e}" for e in s.evidence]
        out += [f"- missing: {m}" for m in s.missing]
        out.append("")
    return "\n".join(out)
