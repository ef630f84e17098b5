"""The report's one glossary: every term a legend, table or finding uses, and the seed's vocabulary. ``zkgpu report``
writes it as ``glossary.html``; a term is defined once, and the tests check every colour-map name is defined here.
"""

from __future__ import annotations

import html
import re

__all__ = ["SECTIONS", "TERMS", "SCENARIO_PARTS", "defined", "scenario_parts", "anchor", "html_page"]

#: ``{section: {term: definition}}``; `code` spans in a definition are rendered as code.
SECTIONS: dict[str, dict[str, str]] = {
    "The seed's vocabulary": {
        "PoRep": "Proof of Replication: Filecoin's proof that a storage provider holds a unique copy of a sector. "
                 "Its last step (C2) is a large Groth16 proof, the workload this project studies.",
        "sector": "The unit of storage a PoRep proves (32 GiB in the seed's runs); its C2 proof is split into partitions.",
        "partition": "One of the independent Groth16 proofs a sector's C2 is split into (10 per 32 GiB sector upstream); "
                     "each is synthesized on the CPU and proved on the GPU. Throughput counts partitions per minute.",
        "C2": "Commit phase 2 of sealing: the Groth16 proving of a sector's partitions (synthesis on the CPU, NTTs and MSMs on the GPU).",
        "upstream": "cuzk, the GPU proving engine in `filecoin-project/curio` whose logs and tables the seed quotes "
                    "(`data/reference/README.md`); its numbered Phase 3 … 12 are its optimisation steps.",
        "seed": "The original write-up this investigation re-creates; its log lines are in `data/reference/`.",
        "CUZK_TIMING": "Upstream's per-partition timing log line (`ntt_msm_h`, `prep_msm`, `gpu_total`, …); ours writes the same format.",
        "QAP": "Quadratic Arithmetic Program: the R1CS constraints as polynomials; the prover computes H = (A·B − C)/Z "
               "from the vectors a, b, c with NTTs on a coset.",
        "a, b, c": "The three vectors synthesis produces per partition (the constraints evaluated at the witness); "
                   "they are copied to the GPU (H2D) for the NTTs.",
        "NTT": "Number-theoretic transform: the FFT over the scalar field; the H computation runs inverse NTTs, a coset shift and forward NTTs.",
        "MSM": "Multi-scalar multiplication Σ sᵢ·Pᵢ over elliptic-curve points; a Groth16 proof needs five (H, L, A, B in G1, B in G2).",
        "Pippenger": "The bucket method for MSMs: scalars cut into c-bit windows, points summed into 2^c buckets per window, "
                     "buckets combined by a running sum.",
        "XYZZ": "Extended Jacobian coordinates (X, Y, ZZ, ZZZ) for bucket accumulation: point addition without inversions.",
        "Montgomery form": "a·R mod p, the representation in which the kernels multiply field elements without division.",
    },
    "Phases and legend terms": {
        "synthesize": "CPU: the circuit's synthesis of one partition (its witness and a, b, c).",
        "gpu_queue": "A synthesized partition waiting for a GPU worker.",
        "split_vectors": "CPU: the witness split into the MSMs' scalar vectors before the GPU phases.",
        "prove": "A partition's whole proof on its GPU worker, from taking it to its finalization.",
        "prep_msm": "CPU phase started before the worker takes the mutex: prepares the other MSMs' scalars "
                    "(bitmaps, popcounts, tails); upstream runs it on a thread pool.",
        "b_g2_msm": "The pipeline's B MSM in G2 (on the CPU, as upstream), beside the GPU phases; `zkgpu prove` runs it on the GPU (msm_b2_g2).",
        "pre_lock": "A worker's set-up before it asks for the mutex (in the last mile: the copy of a, b, c before the lock).",
        "mutex_wait": "A worker waiting for the per-GPU mutex (the lock hand-off).",
        "mutex_held": "A worker holding the per-GPU mutex.",
        "lock scope": "What the mutex covers: **coarse** (upstream) holds it through the barrier; **narrow** releases it "
                      "before the barrier and re-takes it after.",
        "ntt_msm_h": "GPU phase: H2D of a, b, c, the NTTs and the H MSM.",
        "h2d": "Host-to-device copy of a, b, c; in the GPU's time per partition: the **exposed** copy time, the part no kernel hid.",
        "ntt": "In the GPU's time per partition: the rest of ntt_msm_h (the NTTs, the copy time they hid, host work inside it).",
        "h_msm": "The H MSM on the GPU.",
        "barrier_wait": "The worker waiting for its prep_msm to finish; with the coarse scope the GPU idles, lock held.",
        "batch_add": "GPU phase after the barrier: batch additions of the MSM buckets.",
        "tail_msm": "GPU phase after the barrier: the tail MSMs.",
        "gpu_wait": "The host waiting for the GPU's stream to finish.",
        "finalize": "CPU: assembling the proof from the MSMs' results.",
        "tracker_lock": "Upstream's lock on the partition tracker (a phase of its logs).",
        "malloc_trim": "Returning freed host memory to the OS (a phase of upstream's logs).",
        "async_dealloc": "Freeing a partition's buffers on a background thread.",
        "kernel": "A CUDA kernel, as Nsight Systems exports it.",
        "memcpy_htod": "A host-to-device copy, as Nsight Systems exports it.",
        "memcpy_dtoh": "A device-to-host copy, as Nsight Systems exports it.",
        "lock_free": "No worker holds the GPU (waiting for a partition, ramp-up, tail).",
        "lock_other": "Lock held, none of the named phases (thread spawn/join, syncs).",
        "outside_window": "Before the first and after the last GPU phase of a run (start-up, wind-down).",
        "outside the GPU window (start-up, wind-down)": "The same as outside_window, in the idle causes' names.",
        "barrier_wait (prep_msm)": "GPU idle while the worker holding it waits for prep_msm.",
        "mutex_wait (lock hand-off)": "GPU idle while the next worker takes the mutex.",
        "pre_lock (worker set-up)": "GPU idle while workers do their set-up before the mutex.",
        "no partition ready (synthesis)": "GPU idle because no synthesized partition is waiting.",
        "other host work": "GPU idle while the workers do other host work.",
        "gw": "GPU workers per GPU: threads taking turns on the mutex.",
        "GPU window": "From the first GPU phase of a run to its last: the span the GPU's time per partition and the idle "
                      "causes divide (outside_window is what lies before and after it).",
        "critical path": "The GPU's wall time per partition split into stretches that never overlap: the time a worker holds "
                         "the mutex (h2d, ntt, h_msm, barrier_wait, batch_add, tail_msm, lock_other) and lock_free; they add "
                         "up to the run's wall time per partition (mean ms, `zkgpu.analysis.metrics.critical_path`) where one "
                         "lock orders the phases; where they overlap (the submission scope, a log without mutex_held lines) the "
                         "report draws the GPU's time per partition instead.",
        "GPU phases": "gpu_phase_ms: the GPU phases' wall time per partition without the exposed copies (NTT, H MSM, batch_add, "
                      "tail_msm, the host work inside them included), the representative run's mean; a page that shows "
                      "another statistic says so (07b: the median partition; 07: the model's).",
        "measured": "A series taken from a recording (CUDA events and host clocks).",
        "model": "A series computed by the simpy model (`zkgpu.analysis.model`), calibrated on a recorded run.",
    },
    "H2D paths": {
        "H2D": "Host-to-device copy.",
        "pageable": "A copy from ordinary (pageable) memory: the driver stages it through a bounce buffer (`cudaMemcpy`).",
        "pageable_memcpy": "The same pageable copy, as a plain `cudaMemcpy` of the whole vector.",
        "cupy_asarray": "A pageable copy through `cupy.asarray` (what a Python prover would write first).",
        "registered": "Ordinary memory page-locked per partition with `cudaHostRegister` (upstream's Phase 9).",
        "pinned_staging": "A copy through a pinned staging buffer the host first copies into.",
        "pinned_pool": "Pinned buffers allocated once and reused (the fix, upstream commit 48dccd93).",
        "pinned_raw": "A copy from pinned memory at line rate (the bandwidth ceiling).",
        "pinned": "Page-locked host memory: the GPU's DMA engine reads it directly, at line rate.",
        "exposed H2D": "The copy time no kernel hid: what the copies add to ntt_msm_h.",
        "H2D share": "Exposed H2D / ntt_msm_h, means per partition (`zkgpu.analysis.metrics.h2d_share`); the one definition every page uses.",
    },
    "Utilizations and bounds": {
        "compute_util": "Compute utilization (ours, the headline): the union of kernel time over the run's wall span.",
        "kernel_util": "Σ (gpu_total − barrier_wait) over the wall span, copies counted (upstream's \"actual kernel util\").",
        "timeline_util": "The union of GPU_START → GPU_END over the wall span (upstream's \"TIMELINE\").",
        "GPU's time per partition": "The GPU's wall time per partition split into stretches that never overlap "
                                    "(means, they add up): its parts and its idle time named by what the workers did meanwhile.",
        "GPU-phase bound": "60 000 / the model's GPU phase ms per partition without the copies (calibrated on pinned_pool, "
                           "host work inside the phases included): the investigation's bound (notebook 07).",
        "compute-only bound": "60 000 / the fewest GPU kernel ms per partition (CUDA events) of a recording's runs: "
                              "the last mile's bound (notebook 07b); kernel time alone, so higher than the GPU-phase bound.",
        "compute_only": "A measured scenario with a, b, c pre-staged on the GPU before the lock (not a bound).",
        "spread": "The min–max range of a number over a recording's repeats; a bar drawn from one run has none.",
        "median, mean": "Phase tables give medians per event; the GPU's time per partition gives means (its parts add up).",
        "repeats, run": "`zkgpu record --repeats k` runs every scenario k times, round-robin (`baseline.r2` is the baseline's "
                        "second run); tables give the median over the runs with their range.",
        "representative run": "The run of a scenario whose throughput is the median of its runs: figures that draw one "
                              "run's events (timelines, the GPU's time per partition) draw it.",
        "seed regime": "The host settings under which our baseline shows the seed's proportions: synthesis threads, host "
                       "memory-load threads and prep_msm threads, chosen on the H200 (`scripts/gpu_run.sh seed-cal`, `data/seed-regime/`).",
        "forecast, band": "`zkgpu forecast`: the model's prediction of the next recording, committed before it is made; its band "
                          "(`band_lo`..`band_hi`) adds the runs' range, the model's miss on its calibration run and the drift since "
                          "the previous recording; `in_band`: the next recording's median fell inside it (the blind test).",
        "x_baseline": "A throughput as a multiple of the same recording's baseline.",
    },
    "Scenario names": {
        "scenario name": "Parts joined by `_`, read left to right, each a setting changed from the baseline: "
                         "`narrow_prep_gpu_h2d_pre_lock` is the narrow lock, prep_msm on the GPU, a, b, c copied before the lock "
                         "(pinned pool, gw = 2 unless a part says otherwise).",
        "baseline": "Upstream before the fix: pageable a, b, c, the coarse lock, gw = 2, prep_msm on CPU threads.",
        "narrow": "The narrow lock scope, with the pinned pool (see lock scope).",
        "prep_gpu": "prep_msm (bitmaps, popcounts, tails) on the GPU instead of CPU threads.",
        "prep_parallel": "prep_msm on a pool of CPU threads (numpy/numba), as cuzk's; the setting's value is `cpu_parallel` "
                         "(`cpu`: one numpy thread, `gpu`: prep_gpu).",
        "h2d_pre_lock": "a, b, c copied to the GPU before the worker takes the mutex, so the lock no longer holds the copy.",
        "msm_precomp": "The MSMs over precomputed bases (multiples of the points computed once at set-up).",
        "tails": "The tail MSMs on concurrent streams.",
        "unlocked": "No shared mutex: the two workers' kernels share the GPU freely (lock scope none).",
        "submit": "The mutex covers only the submission of the kernels; the worker waits for them after releasing it.",
        "gw1, gw3": "One or three GPU workers instead of two (see gw).",
    },
    "Diagnose's verdicts": {
        "h2d_pageable": "`zkgpu diagnose`: the pageable copy of a, b, c is the hidden part of ntt_msm_h (the fix: the pinned pool).",
        "prep_msm_barrier": "`zkgpu diagnose`: the GPU waits at the barrier for the CPU's prep_msm, and the model gains from a faster one.",
        "lock_scope": "`zkgpu diagnose`: the mutex serialises more than the kernels; the model gains from a submission-only scope.",
        "host_side": "`zkgpu diagnose`: a host-side step (tracker lock, spawn, malloc_trim) holds the partitions up.",
        "gpu_bound": "`zkgpu diagnose`: the GPU phases themselves are the limit; no setting the model knows gains enough.",
        "undetermined": "`zkgpu diagnose`: the log lacks the lines a decision needs (it names them), or is cut or mixed.",
    },
}

#: The parts a scenario name is made of (:func:`scenario_parts`), each with the term that defines it.
SCENARIO_PARTS: dict[str, str] = {
    **{p: p for p in ("baseline", "registered", "pinned_pool", "pinned", "compute_only", "narrow", "prep_gpu", "prep_parallel",
                      "h2d_pre_lock", "msm_precomp", "tails", "unlocked", "submit")},
    "gw1": "gw1, gw3", "gw3": "gw1, gw3",
}

#: Every term, ``{term: definition}`` (the sections flattened).
TERMS: dict[str, str] = {t: d for sec in SECTIONS.values() for t, d in sec.items()}


def defined(term: str) -> bool:
    """True when ``term`` has a definition (exact name)."""
    return term in TERMS


def scenario_parts(name: str) -> list[str]:
    """The glossary terms that define a scenario name, part by part (longest part first):
    ``narrow_prep_gpu_h2d_pre_lock`` -> ``["narrow", "prep_gpu", "h2d_pre_lock"]``.

    Raises:
        ValueError: a part no term defines (names the scenario and the rest of its name).
    """
    toks, out, i = name.split("_"), [], 0
    while i < len(toks):
        j = next((j for j in range(len(toks), i, -1) if "_".join(toks[i:j]) in SCENARIO_PARTS), None)
        if j is None:
            raise ValueError(f"scenario {name!r}: no glossary entry for {'_'.join(toks[i:])!r} (zkgpu.story.glossary.SCENARIO_PARTS)")
        out.append(SCENARIO_PARTS["_".join(toks[i:j])])
        i = j
    return out


def anchor(term: str) -> str:
    """The HTML id of a term's row: ``term-`` + its name in lower case, runs of other characters as ``-``."""
    return "term-" + re.sub(r"[^a-z0-9]+", "-", term.lower()).strip("-")


def _inline(text: str) -> str:
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def html_page(nav: str = "", css: str = "") -> str:
    """The glossary as a standalone HTML page: one table per section; ``nav`` (HTML) above it."""
    body = "".join(
        f"<h2>{html.escape(sec)}</h2><table>" + "".join(
            f"<tr id='{anchor(t)}'><th>{html.escape(t)}</th><td>{_inline(d)}</td></tr>" for t, d in terms.items()) + "</table>"
        for sec, terms in SECTIONS.items())
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>zkgpu glossary</title><style>{css}"
            "th{white-space:nowrap}</style></head>"
            f"<body>{nav}<h1>Glossary</h1><p>Every term the report's figures, tables and findings use, defined once.</p>{body}</body></html>")
