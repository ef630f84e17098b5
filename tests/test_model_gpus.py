"""The model on N GPUs (issue 26): from a 1-GPU calibration, the pool scales with the GPUs while the
pageable baseline's copies share the host's memory bandwidth; synthesis is shared."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import simpy

from zkgpu.analysis import metrics, model
from zkgpu.analysis.shared_bandwidth import SharedBandwidth

GB = 1e9


def params(**kw) -> model.ModelParams:
    """GPU-bound per GPU (synthesis instant, prep shorter than ntt_msm_h); pageable copies take as long
    as the GPU phases, the pool's a tenth of it."""
    base = dict(prep_msm_ms=100.0, ntt_ms=300.0, batch_add_ms=150.0, tail_msm_ms=50.0,
                h2d_bytes=2 * GB, pageable_gbps=4.0, pinned_gbps=40.0)
    base.update(kw)
    return model.ModelParams(**base)


def _h2d_gbps_per_copy(ev: pd.DataFrame) -> float:
    h = ev[ev.phase == "h2d"]
    return float((h["bytes"].astype(float) / (h["end_ns"] - h["start_ns"])).median())


def _scaling(p: model.ModelParams, transfer: str, partitions: int = 24, **kw) -> tuple[float, model.ModelResult, model.ModelResult]:
    one = model.simulate(p, partitions=partitions, gw=2, transfer=transfer, gpus=1, **kw)
    two = model.simulate(p, partitions=2 * partitions, gw=2, transfer=transfer, gpus=2, **kw)
    return two.partitions_per_min / one.partitions_per_min, one, two


def test_pool_scales_about_2x_when_synthesis_is_not_the_limit():
    p = params(host_copy_gbps=5.0)  # a host budget that a pageable copy nearly fills: the pool does not draw on it
    ratio, one, two = _scaling(p, "pinned_pool")
    assert 1.9 <= ratio <= 2.05, ratio
    # the pool's per-GPU copy rate does not drop with two GPUs active
    assert _h2d_gbps_per_copy(two.events) == pytest.approx(_h2d_gbps_per_copy(one.events), rel=1e-9) == pytest.approx(40.0)
    assert set(two.events["gpu"].dropna().astype(int)) == {0, 1} and two.settings["gpus"] == 2


def test_pageable_scales_less_under_a_shared_host_budget():
    p = params(host_copy_gbps=5.0)  # two copies at once get 2.5 GB/s each instead of 4
    ratio_pool, *_ = _scaling(p, "pinned_pool")
    ratio, one, two = _scaling(p, "pageable")
    assert ratio < ratio_pool - 0.15 and ratio < 1.85, (ratio, ratio_pool)
    r1, r2 = _h2d_gbps_per_copy(one.events), _h2d_gbps_per_copy(two.events)
    assert r1 == pytest.approx(4.0) and 2.5 - 1e-6 <= r2 < r1  # the contention, in the per-copy rate
    # without a shared limit the pageable baseline scales like the pool
    free, *_ = _scaling(params(), "pageable")
    assert free == pytest.approx(2.0, rel=0.06)


def test_synthesis_shared_by_the_gpus_caps_the_scaling():
    p = params(synth_ms=2000.0, synth_workers=2)  # 60 partitions/min whatever the GPUs; one GPU alone does ~109
    ratio, one, two = _scaling(p, "pinned_pool", partitions=48)
    # both at most the synthesis rate (less the ramp of the last partition); the second GPU only shortens the tail
    assert 55.0 <= one.partitions_per_min <= two.partitions_per_min <= 60.0
    assert ratio <= 1.05, ratio


def test_per_gpu_metrics_of_a_model_run_add_up():
    r = model.simulate(params(host_copy_gbps=5.0), partitions=12, gw=2, transfer="pageable", gpus=2)
    per = metrics.utilization_per_gpu(r.events)
    assert list(per.index.get_level_values("gpu")) == [0, 1]
    assert per["partitions"].sum() == 12
    assert per["partitions_per_min"].sum() == pytest.approx(r.partitions_per_min)


def test_one_gpu_is_unchanged_by_the_host_budget_when_one_copy_fits():
    a = model.simulate(params(), partitions=8, gw=2, transfer="pageable")
    b = model.simulate(params(host_copy_gbps=4.0), partitions=8, gw=2, transfer="pageable")  # one copy at a time per GPU (in_lock)
    assert a.partitions_per_min == pytest.approx(b.partitions_per_min, rel=1e-9)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_host_copy_gbps_is_checked(bad):
    with pytest.raises(ValueError, match="host_copy_gbps"):
        params(host_copy_gbps=bad)
    with pytest.raises(ValueError, match="host_copy_gbps must be a finite rate >= 0"):
        model.simulate(params(), partitions=2, host_copy_gbps=bad)


def test_shared_bandwidth_fluid_sharing():
    """Two copies of 100 bytes at 10 bytes/ms each, 10 bytes/ms in total, the second starting at 5 ms:
    the first moves 50 bytes alone, then both at 5 bytes/ms until it is done at 15 ms; the second,
    50 bytes left at 15 ms, finishes alone at 20 ms. Then a copy alone runs at its own cap."""
    env = simpy.Environment()
    bw = SharedBandwidth(env, total=10.0, per_copy=10.0)
    ends: dict[str, float] = {}

    def copy(name: str, start: float, nbytes: float):
        yield env.timeout(start)
        yield bw.copy(nbytes)
        ends[name] = env.now

    env.process(copy("a", 0.0, 100.0))
    env.process(copy("b", 5.0, 100.0))
    env.process(copy("c", 30.0, 40.0))
    env.run()
    assert ends["a"] == pytest.approx(15.0) and ends["b"] == pytest.approx(20.0) and ends["c"] == pytest.approx(34.0)
    assert not bw.left and math.isclose(bw.t, 34.0)
