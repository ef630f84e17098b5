"""What limits a run once neither the host side nor a pageable copy does: the one rule.

:func:`decide` is both ``zkgpu diagnose``'s step 6 and the story's "what limits it next", so the two agree. The
evidence: the GPU window's idle share at the barrier (:func:`zkgpu.analysis.gpu_time.idle_causes`), prep_msm's
share of each worker's cycle, and the model's gain from prep_msm 2× faster and from the mutex over the
submission only. :data:`THRESHOLDS` holds the thresholds with their reasons.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["THRESHOLDS", "NextLimit", "decide", "evidence_text"]

#: name → (value, why); shares are fractions in [0, 1].
THRESHOLDS: dict[str, tuple[float, str]] = {
    "barrier_idle": (0.15, "share of the GPU window idle while a worker waits at the barrier for prep_msm: >= 0.21 in the recorded "
                           "runs where the GPU waits for a one-thread prep_msm, <= 0.09 in those where it does not (the submission "
                           "scope's logged waits excepted: the model's check below rules them out)"),
    "prep_share": (0.4, "prep_msm / (workers × wall ms per partition): the CPU's prep_msm is most of a worker's cycle"),
    "min_gain": (1.10, "the model's gain (calibrated on the log) for a verdict's change from which the change is worth making: "
                       "the run-to-run spread issue 20 accepts ((max − min) / median <= 10%), below which a measured gain could not "
                       "be told from the spread between repeats. Checked for lock_scope (the submission scope) and prep_msm_barrier "
                       "(prep_msm 2× faster). On logs where the change is already made (submission scope, no lock) the model "
                       "predicts less (tests/test_diagnose.py checks every committed log's verdict)"),
}


def _t(name: str) -> float:
    return float(THRESHOLDS[name][0])


@dataclass
class NextLimit:
    """:func:`decide`'s answer: ``bottleneck`` (``prep_msm_barrier``, ``lock_scope``, ``gpu_bound`` or ``undetermined``),
    ``text`` (why), and the evidence weighed: ``barrier_idle`` (share of the GPU window idle while a worker waits at the
    barrier), ``prep_share`` (prep_msm / (workers × wall ms per partition)), ``workers``, ``prep_gain`` and ``lock_gain``
    (the model's throughput ratio, calibrated on the log, with prep_msm 2× faster and with the mutex over the submission
    only; NaN where not computed or the model cannot be calibrated)."""

    bottleneck: str
    text: str
    barrier_idle: float
    prep_share: float
    workers: int
    prep_gain: float = math.nan
    lock_gain: float = math.nan


def decide(*, barrier_idle: float, prep_msm_ms: float, prep_share: float, workers: int, contention: float,
           gain: Callable[[str], tuple[dict[str, Any] | None, str]]) -> NextLimit:
    """The rule:

    * ``prep_msm_barrier``: the GPU idles at least :data:`THRESHOLDS` ``barrier_idle`` of its window at the barrier,
      prep_msm is at least ``prep_share`` of each worker's cycle, and the model predicts at least ``min_gain`` with
      prep_msm 2× faster (or cannot be calibrated);
    * else ``gpu_bound`` with one worker (nothing waits for the lock);
    * else ``lock_scope`` when the model predicts at least ``min_gain`` with the mutex over the submission only,
      ``gpu_bound`` when less, ``undetermined`` when it cannot be calibrated.

    ``contention``: Σ mutex_wait / Σ mutex_held (NaN: not logged). ``gain(change)``: the model's gain for
    ``"prep_msm_barrier"`` or ``"lock_scope"`` (a dict with ``ratio``, or None and why); the prep_msm gain is always
    asked for (it is evidence either way), the lock's only when needed.
    """
    pgain, _ = gain("prep_msm_barrier")
    out = NextLimit("", "", barrier_idle, prep_share, workers, pgain["ratio"] if pgain else math.nan)
    prep_note = ""
    if barrier_idle >= _t("barrier_idle") and prep_share >= _t("prep_share"):
        if pgain is None or pgain["ratio"] >= _t("min_gain"):
            out.bottleneck, out.text = "prep_msm_barrier", (
                f"The GPU idles {100 * barrier_idle:.0f}% of its window at the barrier, and prep_msm ({prep_msm_ms:.0f} ms) is "
                f"{100 * prep_share:.0f}% of each of the {max(workers, 1)} workers' cycle: the CPU's prep_msm is the critical path.")
            return out
        prep_note = (f" The GPU idles {100 * barrier_idle:.0f}% of its window at the barrier, but the model calibrated on this "
                     f"log predicts only {pgain['ratio']:.2f}× with prep_msm 2× faster: the wait is not what sets the pace.")
    wait = "a barrier wait that does not set the pace" if prep_note else "no long barrier wait"
    if workers < 2:
        out.bottleneck, out.text = "gpu_bound", (f"No pageable copy, {wait}, and one GPU worker: nothing waits for the lock; "
                                                 "the GPU phases themselves set the pace." + prep_note)
        return out
    lgain, note = gain("lock_scope")
    if lgain is None:
        out.bottleneck, out.text = "undetermined", f"The lock cannot be weighed against the GPU phases: {note}."
        return out
    out.lock_gain = lgain["ratio"]
    said = f" (workers wait for the lock {contention:.2f}× as long as it is held)" if math.isfinite(contention) else ""
    if lgain["ratio"] >= _t("min_gain"):
        out.bottleneck, out.text = "lock_scope", (
            f"No pageable copy and {wait}, but the model calibrated on this log predicts {lgain['ratio']:.2f}× the "
            f"throughput with the mutex over the submission only{said}: the lock covers more than the kernels (copies, syncs, "
            "host work between the phases)." + prep_note)
        return out
    out.bottleneck, out.text = "gpu_bound", (f"No pageable copy, {wait}, and a narrower lock would give only {lgain['ratio']:.2f}× "
                                             f"in the model{said}: the GPU phases themselves set the pace." + prep_note)
    return out


def evidence_text(nl: NextLimit) -> str:
    """The evidence of ``nl`` against the rule's thresholds, as one clause (idle share, prep_msm share, model gains,
    each with its threshold).
    """
    parts = [f"the GPU idles {100 * nl.barrier_idle:.1f}% of its window at the barrier (the rule asks at least "
             f"{100 * _t('barrier_idle'):.0f}%)"]
    if math.isfinite(nl.prep_share):
        parts.append(f"prep_msm is {100 * nl.prep_share:.0f}% of each worker's cycle (at least {100 * _t('prep_share'):.0f}%)")
    gains = []
    if math.isfinite(nl.prep_gain):
        gains.append(f"{nl.prep_gain:.2f}× with prep_msm 2× faster")
    if math.isfinite(nl.lock_gain):
        gains.append(f"{nl.lock_gain:.2f}× with the mutex over the submission only")
    text = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    if gains:
        text += ("; the model, calibrated on the same log, predicts " + " and ".join(gains)
                 + f" (a change counts from {_t('min_gain'):.2f}×)")
    return text
