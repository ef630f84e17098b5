"""The scenario vocabulary: the seed-faithful baseline and the story's steps, each a dict of PipelineConfig settings."""

from __future__ import annotations

from typing import Any

__all__ = ["parse_scenario_partitions", "SEED_PREP", "SEED_PREP_THREADS", "SEED_HOST_LOAD", "BASELINE", "SCENARIOS", "MAIN_SCENARIOS", "DEFAULT_REPEATS",
           "LAST_MILE_SCENARIOS", "LAST_MILE_PARTITIONS", "LAST_MILE_ALTERNATIVE_PARTITIONS"]

#: The seed-faithful regime (issue 20): cuzk computes prep_msm on a thread pool, so the baseline's
#: prep_msm runs on numba threads (``prep="cpu_parallel"``) while host memory-load threads stand in for
#: cuzk's concurrent syntheses. The counts are the grid point of ``scripts/gpu_run.sh seed-cal`` nearest the
#: seed's proportions (its baseline recordings are in data/seed-regime/: 10 prep threads in the last call that
#: chose, 8 before; prep_msm moved by less than the run-to-run spread between them); each recording's manifest
#: says what it ran (``prep_threads``, ``host_load``, each scenario's ``synth_workers``).
SEED_PREP, SEED_PREP_THREADS, SEED_HOST_LOAD = "cpu_parallel", 10, 8
#: the baseline: pageable a/b/c, the coarse mutex, two GPU workers, prep_msm on CPU threads
BASELINE: dict[str, Any] = {"transfer": "pageable", "lock_scope": "coarse", "gw": 2, "prep": SEED_PREP}


def _step(**change: Any) -> dict[str, Any]:
    """A scenario: the baseline with the settings in ``change`` changed (each story step names its change)."""
    return {**BASELINE, **change}


#: scenario name -> PipelineConfig settings (everything else from the sizes given to :func:`record`).
#: Each of notebooks 01-07's scenarios differs from :data:`BASELINE` by the change it studies; the
#: last-mile steps (07b) add one change at a time. Ordered by importance: if a recording is cut short,
#: the first ones are the ones that matter.
SCENARIOS: dict[str, dict[str, Any]] = {
    "baseline": _step(),
    "pinned_pool": _step(transfer="pinned_pool"),
    "pinned_narrow": _step(transfer="pinned_pool", lock_scope="narrow"),
    "registered": _step(transfer="registered"),
    "pinned_gw1": _step(transfer="pinned_pool", gw=1),
    "pinned_gw3": _step(transfer="pinned_pool", gw=3),
    "compute_only": _step(transfer="resident"),
    # a named alternative: prep_msm on one numpy thread (the pre-issue-20 baseline)
    "baseline_prep_numpy": _step(prep="cpu"),
    # beyond upstream (notebook 07b): prep_msm off the critical path, then the GPU phases themselves
    "narrow_prep_parallel": _step(transfer="pinned_pool", lock_scope="narrow"),
    "narrow_prep_gpu": _step(transfer="pinned_pool", lock_scope="narrow", prep="gpu"),
    # + the H2D of a/b/c before the mutex (h2d_stage="pre_lock"): its DMA overlaps the other worker's kernels
    "narrow_prep_gpu_h2d_pre_lock": _step(transfer="pinned_pool", lock_scope="narrow", prep="gpu", h2d_stage="pre_lock"),
    # + every G1 MSM over precomputed shifted bases (msm_bases="precomputed"): one bucket set, no Horner doublings
    "narrow_prep_gpu_h2d_pre_lock_msm_precomp": _step(transfer="pinned_pool", lock_scope="narrow", prep="gpu", h2d_stage="pre_lock",
                                                      msm_bases="precomputed"),
    "narrow_prep_gpu_gw3": _step(transfer="pinned_pool", lock_scope="narrow", gw=3, prep="gpu"),
    # + the three batch additions and the three tail MSMs each on its own stream, at once
    "narrow_prep_gpu_tails": _step(transfer="pinned_pool", lock_scope="narrow", prep="gpu", tail_streams=3),
    # + no shared mutex: two workers' kernels overlap on the GPU (the mutex guards VRAM on small cards)
    "unlocked_prep_gpu_tails": _step(transfer="pinned_pool", lock_scope="none", prep="gpu", tail_streams=3),
    # the mutex over the submission only: a/b/c copied before it, the GPU phases queued on one
    # shared stream, the wait for the kernels and the results' D2H after its release
    "submit_prep_gpu": _step(transfer="pinned_pool", lock_scope="submit", prep="gpu"),
    "submit_prep_gpu_tails": _step(transfer="pinned_pool", lock_scope="submit", prep="gpu", tail_streams=3),
    # the precomputed-bases step with a third worker (one more partition set up while two hold the GPU)
    "narrow_prep_gpu_h2d_pre_lock_msm_precomp_gw3": _step(transfer="pinned_pool", lock_scope="narrow", gw=3, prep="gpu",
                                                          h2d_stage="pre_lock", msm_bases="precomputed"),
    # the story's last step: the mutex over the submission only, every G1 MSM over precomputed bases
    "submit_prep_gpu_msm_precomp": _step(transfer="pinned_pool", lock_scope="submit", prep="gpu", msm_bases="precomputed"),
    "submit_prep_gpu_msm_precomp_gw3": _step(transfer="pinned_pool", lock_scope="submit", gw=3, prep="gpu", msm_bases="precomputed"),
}

#: the main recording's scenarios (notebooks 01-07): the baseline and each single change
MAIN_SCENARIOS = ("baseline", "pinned_pool", "pinned_narrow", "registered", "pinned_gw1", "pinned_gw3", "compute_only")
#: runs of every scenario, interleaved round-robin (repeat 1 of every scenario, then repeat 2 ...) so that
#: drift over the recording hits every scenario alike
DEFAULT_REPEATS = 3

#: The scenarios of notebook 07b ("the last bottleneck") in one recording: the story (the baseline
#: and the fix it is measured against, prep_msm taken off the critical path on the CPU and on the
#: GPU, then the H2D before the mutex, then the G1 MSMs over precomputed bases, then the mutex over the
#: submission only, with plain and with precomputed bases: the last step), then the informative
#: alternatives (concurrent tails, no shared mutex, a third worker;
#: :data:`LAST_MILE_ALTERNATIVE_PARTITIONS`) (``scripts/gpu_run.sh record-last-mile``).
LAST_MILE_SCENARIOS = ("baseline", "pinned_narrow", "narrow_prep_gpu", "narrow_prep_gpu_h2d_pre_lock",
                       "narrow_prep_gpu_h2d_pre_lock_msm_precomp", "submit_prep_gpu", "submit_prep_gpu_msm_precomp",
                       "narrow_prep_gpu_tails", "unlocked_prep_gpu_tails", "narrow_prep_gpu_h2d_pre_lock_msm_precomp_gw3",
                       "submit_prep_gpu_msm_precomp_gw3")
#: partitions per scenario and repeat of the last-mile recording (``scripts/gpu_run.sh record-last-mile``):
#: 3 interleaved repeats of 48 (the run's window includes the pipeline fill, ~1/48 of it); the alternatives
#: run 32 (``zkgpu record --scenario-partitions``).
LAST_MILE_PARTITIONS = 48
LAST_MILE_ALTERNATIVE_PARTITIONS = {"narrow_prep_gpu_tails": 32, "unlocked_prep_gpu_tails": 32,
                                    "narrow_prep_gpu_h2d_pre_lock_msm_precomp_gw3": 32, "submit_prep_gpu_msm_precomp_gw3": 32}


def parse_scenario_partitions(items: Any) -> dict[str, int]:
    """``--scenario-partitions NAME=K ...`` as ``{NAME: K}``. Raises ValueError: malformed item or NAME twice."""
    counts: dict[str, int] = {}
    for item in items:
        name, sep, k = item.partition("=")
        if not sep or not k.strip().isdigit():
            raise ValueError(f"--scenario-partitions {item!r}: expected NAME=K with K a whole number of partitions (e.g. submit_prep_gpu=64)")
        if name.strip() in counts:
            raise ValueError(f"--scenario-partitions {name.strip()!r} given twice ({counts[name.strip()]} and {int(k)}): keep one")
        counts[name.strip()] = int(k)
    return counts
