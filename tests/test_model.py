"""The simpy what-if model: known answers on simple cases, monotonicity, calibration, schema."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from zkgpu.analysis import calibration, model
from zkgpu.core.events import COLUMNS, DTYPES

GB = 1e9


def params(**kw) -> model.ModelParams:
    base = dict(prep_msm_ms=100.0, ntt_ms=300.0, batch_add_ms=150.0, tail_msm_ms=50.0,
                h2d_bytes=2 * GB, pageable_gbps=2.0, pinned_gbps=20.0)
    base.update(kw)
    return model.ModelParams(**base)


def test_gw1_no_prep_bottleneck_utilization_is_compute_over_compute_plus_transfer():
    p = params()  # prep 100 < ntt_msm_h, synthesis instant
    for transfer, gbps in (("pageable", 2.0), ("pinned", 20.0)):
        r = model.simulate(p, partitions=7, gw=1, transfer=transfer)
        compute = p.gpu_compute_ms
        transfer_ms = p.h2d_bytes / (gbps * GB) * 1e3
        assert r.compute_util == pytest.approx(compute / (compute + transfer_ms), rel=1e-9)
        assert r.wall_ms == pytest.approx(7 * (compute + transfer_ms))
        assert r.partitions_per_min == pytest.approx(60_000 / (compute + transfer_ms))
        assert r.timeline_util == pytest.approx(1.0)


def test_resident_gw1_prep_bound_exposes_barrier_inside_mutex():
    p = params(prep_msm_ms=800.0)
    r = model.simulate(p, partitions=5, gw=1, transfer="resident")
    bw = r.events[r.events["phase"] == "barrier_wait"]
    # prep 800 ms vs ntt 300 ms: every partition waits 500 ms at the barrier with the mutex held
    assert ((bw["end_ns"] - bw["start_ns"]) / 1e6).tolist() == pytest.approx([500.0] * 5)
    assert r.compute_util == pytest.approx(p.gpu_compute_ms / (p.gpu_compute_ms + 500.0))
    assert model.compute_bound_per_min(p) == pytest.approx(60_000 / 500.0)


def test_narrow_scope_never_worse_than_coarse():
    for prep in (50.0, 400.0, 900.0, 2000.0):
        p = params(prep_msm_ms=prep)
        for transfer in ("pageable", "pinned", "resident"):
            for gw in (1, 2, 3):
                c = model.simulate(p, partitions=12, gw=gw, scope="coarse", transfer=transfer)
                n = model.simulate(p, partitions=12, gw=gw, scope="narrow", transfer=transfer)
                assert n.partitions_per_min >= c.partitions_per_min * (1 - 1e-9), (prep, transfer, gw)
                assert n.compute_util >= c.compute_util - 1e-9
    # and it strictly helps when prep exceeds ntt_msm_h and two workers share the GPU
    p = params(prep_msm_ms=900.0)
    c = model.simulate(p, partitions=12, gw=2, scope="coarse", transfer="pinned")
    n = model.simulate(p, partitions=12, gw=2, scope="narrow", transfer="pinned")
    assert n.partitions_per_min > c.partitions_per_min * 1.05


def test_submit_scope_moves_the_copy_before_the_mutex_and_holds_it_for_the_submission_only():
    p = params(prep_msm_ms=50.0, lock_overhead_ms=20.0)
    n = model.simulate(p, partitions=12, gw=2, scope="narrow", transfer="pinned")
    s = model.simulate(p, partitions=12, gw=2, scope="submit", transfer="pinned")
    assert s.partitions_per_min > n.partitions_per_min and s.compute_util > n.compute_util
    # with the copy hidden and no hand-off, two workers keep the GPU busy: the compute-only bound
    assert s.partitions_per_min == pytest.approx(60_000 / p.gpu_compute_ms, rel=0.15)
    ev = s.events
    h2d, held = ev[ev.phase == "h2d"], ev[ev.phase == "mutex_held"]
    assert len(h2d) == 12 and h2d["detail"].str.contains("stage=pre_lock").all()
    for _, r in h2d.iterrows():  # every copy ends before its partition's first mutex_held starts
        assert r.end_ns <= held[held.partition == r.partition]["start_ns"].min()
    for prep in (50.0, 900.0):  # never worse than narrow
        q = params(prep_msm_ms=prep)
        for gw in (1, 2, 3):
            a = model.simulate(q, partitions=10, gw=gw, scope="narrow", transfer="pinned")
            b = model.simulate(q, partitions=10, gw=gw, scope="submit", transfer="pinned")
            assert b.partitions_per_min >= a.partitions_per_min * (1 - 1e-9), (prep, gw)


def test_submit_scope_kernels_run_on_one_stream_in_submission_order_after_their_submission():
    # host set-up per partition (pre_lock 250 ms + copy 100 ms) longer than the other worker's second part
    # (batch_add + tail_msm = 200 ms): the mutex over the submissions keeps the stream fed at gw = 2
    p = params(prep_msm_ms=50.0, lock_overhead_ms=10.0, pre_lock_ms=250.0)
    s = model.simulate(p, partitions=12, gw=2, scope="submit", transfer="pinned")
    ev = s.events
    gpu = ev[ev.phase.isin(["ntt", "h_msm", "batch_add", "tail_msm"])].sort_values("start_ns")
    assert (gpu["start_ns"].to_numpy()[1:] >= gpu["end_ns"].to_numpy()[:-1]).all()  # one stream: never two at once
    held = ev[ev.phase == "mutex_held"]
    spans = ev[ev.phase == "ntt_msm_h"].set_index("partition")
    for part, g in gpu.groupby("partition"):  # each submission's kernels start once it starts and end no earlier than it
        h = held[held.partition == part].sort_values("start_ns")
        assert g[g.phase == "ntt"]["start_ns"].min() >= h["start_ns"].iloc[0]
        assert spans.loc[part, "end_ns"] >= h["end_ns"].iloc[0]
        assert g[g.phase == "batch_add"]["start_ns"].min() >= h["start_ns"].iloc[1]
        assert g[g.phase == "tail_msm"]["end_ns"].max() >= h["end_ns"].iloc[1]
    waits = ev[ev.phase == "gpu_wait"]
    assert len(waits) == 12 and (held.groupby("partition")["end_ns"].max() <= waits.set_index("partition")["start_ns"]).all()
    # the stream stays busy: within 10% of the compute-only bound, where the narrow scope idles
    n = model.simulate(p, partitions=12, gw=2, scope="narrow", transfer="pinned")
    assert s.partitions_per_min == pytest.approx(60_000 / p.gpu_compute_ms, rel=0.10)
    assert s.partitions_per_min > 1.1 * n.partitions_per_min

def test_faster_h2d_raises_utilization():
    p = params()
    utils = [model.simulate(p, partitions=8, gw=2, h2d_gbps=g).compute_util for g in (1.0, 4.0, 16.0, 64.0)]
    assert all(b > a for a, b in zip(utils, utils[1:], strict=False))  # neighbours: one shorter
    res = model.simulate(p, partitions=8, gw=2, transfer="resident")
    assert res.compute_util >= utils[-1]


def test_prep_speedup_removes_barrier_wait():
    p = params(prep_msm_ms=1200.0)
    slow = model.simulate(p, partitions=8, gw=2, transfer="pinned")
    fast = model.simulate(p, partitions=8, gw=2, transfer="pinned", prep_speedup=10.0)
    assert fast.partitions_per_min > slow.partitions_per_min
    assert fast.params.prep_msm_ms == pytest.approx(120.0)


def test_event_table_schema_and_consistency():
    p = params(b_g2_msm_ms=40.0, finalize_ms=10.0, synth_ms=200.0, synth_workers=2, h_msm_ms=20.0)
    r = model.simulate(p, partitions=4, gw=2, scope="narrow", transfer="pinned")
    ev = r.events
    assert list(ev.columns) == COLUMNS
    assert {c: str(t) for c, t in ev.dtypes.items()} == DTYPES
    assert (ev["source"] == "model").all() and (ev["end_ns"] >= ev["start_ns"]).all()
    phases = set(ev["phase"])
    assert {"synthesize", "gpu_queue", "prep_msm", "b_g2_msm", "mutex_wait", "ntt_msm_h", "h2d", "ntt", "h_msm",
            "barrier_wait", "batch_add", "tail_msm", "mutex_held", "finalize", "prove"} <= phases
    for _, g in ev.groupby("partition"):
        ph = dict(iter(g.groupby("phase")))

        def d(name: str, ph: dict = ph) -> float:
            return float(((ph[name]["end_ns"] - ph[name]["start_ns"]) / 1e6).sum())

        # ntt_msm_h = h2d + ntt + h_msm
        assert d("ntt_msm_h") == pytest.approx(d("h2d") + d("ntt") + d("h_msm"))
        assert int(ph["h2d"]["bytes"].iloc[0]) == int(p.h2d_bytes)
        assert ph["batch_add"]["start_ns"].iloc[0] >= ph["prep_msm"]["end_ns"].iloc[0]  # barrier respected
        assert ph["prove"]["end_ns"].iloc[0] >= ph["b_g2_msm"]["end_ns"].iloc[0]
    # the mutex is exclusive: GPU phases never overlap on one GPU
    gpu = ev[ev["phase"].isin(["h2d", "ntt", "h_msm", "batch_add", "tail_msm"])].sort_values("start_ns")
    assert (gpu["start_ns"].to_numpy()[1:] >= gpu["end_ns"].to_numpy()[:-1]).all()
    assert len(ev[ev["phase"] == "tail_msm"]) == 4


def test_jitter_is_reproducible():
    p = params()
    a = model.simulate(p, partitions=6, gw=2, jitter=0.2, seed=3)
    b = model.simulate(p, partitions=6, gw=2, jitter=0.2, seed=3)
    c = model.simulate(p, partitions=6, gw=2, jitter=0.2, seed=4)
    pd.testing.assert_frame_equal(a.events, b.events)
    assert not a.events["end_ns"].equals(c.events["end_ns"])


def test_calibrate_recovers_parameters_from_a_model_table():
    p = params(b_g2_msm_ms=40.0, synth_ms=50.0, synth_workers=3, h_msm_ms=25.0)
    r = model.simulate(p, partitions=10, gw=2, transfer="pageable")
    q = calibration.calibrate(r.events, pinned_gbps=20.0)
    assert q.prep_msm_ms == pytest.approx(p.prep_msm_ms)
    assert q.ntt_ms == pytest.approx(p.ntt_ms)
    assert q.h_msm_ms == pytest.approx(p.h_msm_ms)
    assert q.batch_add_ms == pytest.approx(p.batch_add_ms)
    assert q.h2d_bytes == pytest.approx(p.h2d_bytes)
    assert q.pageable_gbps == pytest.approx(p.pageable_gbps)
    assert q.pinned_gbps == 20.0 and q.synth_workers == 3
    # same settings again -> the model reproduces its own measurement
    cmp = model.compare(model.simulate(q, partitions=10, gw=2, transfer="pageable"), r.events)
    assert cmp.loc["compute_util", "rel_err"] == pytest.approx(0.0, abs=1e-6)
    assert cmp.loc["partitions_per_min", "rel_err"] == pytest.approx(0.0, abs=1e-6)
    assert {"model", "measured", "diff", "rel_err"} == set(cmp.columns)


def test_calibrate_without_subphases_and_missing_phase_errors():
    ev = pd.DataFrame({
        "run": "x", "partition": [0, 0, 0, 0], "phase": ["prep_msm", "ntt_msm_h", "batch_add", "tail_msm"],
        "start_ns": [0, 0, 0, 0], "end_ns": [int(1633e6), int(2825e6), int(404e6), int(196e6)],
    })
    q = calibration.calibrate(ev, h2d_bytes=12.5e9, pageable_gbps=5.0, pinned_gbps=50.0)
    assert q.ntt_ms == pytest.approx(2825 - 2500)
    with pytest.raises(ValueError, match="prep_msm"):
        calibration.calibrate(ev[ev["phase"] != "prep_msm"])
    with pytest.raises(ValueError, match="pageable_gbps"):
        calibration.calibrate(ev, h2d_bytes=1e9)


def test_what_if_grid_and_bad_settings():
    p = params(prep_msm_ms=700.0)
    df = model.what_if(p, {"gw": [1, 2], "scope": ["coarse", "narrow"], "transfer": ["pageable", "pinned"]}, partitions=6)
    assert len(df) == 8
    for col in ("gw", "scope", "transfer", "compute_util", "kernel_util", "timeline_util", "partitions_per_min",
                "barrier_wait_ms", "mutex_wait_ms", "vs_compute_bound"):
        assert col in df.columns
    assert (df["vs_compute_bound"] <= 1 + 1e-9).all()
    rows = model.what_if(p, [{"gw": 1}, {"gw": 3, "scope": "narrow"}], partitions=4, transfer="resident")
    assert rows["transfer"].tolist() == ["resident", "resident"]
    with pytest.raises(ValueError, match="scope"):
        model.simulate(p, scope="wide")
    with pytest.raises(ValueError, match="transfer"):
        model.simulate(p, transfer="magic")
    with pytest.raises(ValueError, match="gw"):
        model.simulate(p, gw=0)
    with pytest.raises(ValueError, match="prep_msm_ms"):
        params(prep_msm_ms=-1.0)
    with pytest.raises(ValueError, match="pinned_gbps"):
        params(pinned_gbps=0.0)
    with pytest.raises(ValueError, match="h2d_gbps"):
        model.simulate(p, h2d_gbps=math.nan)


def test_utilization_on_measured_style_table_subtracts_h2d():
    # ntt_msm_h 0-10 with h2d 0-4 inside, batch_add 10-12, tail 12-13; window 0-13 (ms)
    ms = int(1e6)
    ev = pd.DataFrame({
        "run": "m", "partition": [0] * 4, "phase": ["ntt_msm_h", "h2d", "batch_add", "tail_msm"],
        "start_ns": [0, 0, 10 * ms, 12 * ms], "end_ns": [10 * ms, 4 * ms, 12 * ms, 13 * ms],
    })
    u = model.utilization(ev)
    assert u["compute_util"] == pytest.approx(9 / 13)
    assert u["wall_ms"] == pytest.approx(13.0) and u["partitions"] == 1
    assert np.isnan(model.utilization(ev[ev["phase"] == "h2d"])["compute_util"])


def test_reference_params_from_the_seed_and_upstream_tables():
    p = calibration.reference_params()
    # medians of the seed's four partitions (message 3029)
    assert p.prep_msm_ms == pytest.approx((1502 + 1633) / 2)
    assert p.tail_msm_ms == pytest.approx((197 + 199) / 2)
    assert p.batch_add_ms == pytest.approx(404.0)  # 3425-2825-196, 3501-2895-199, 3299-2699-197 -> 404, 407, 403
    assert p.h2d_bytes == 3 * calibration.POREP_CONSTRAINTS * 32 and p.pinned_gbps == 50.0
    pageable = model.simulate(p, partitions=6, gw=1, transfer="pageable")
    assert pageable.summary()["ntt_msm_h_ms"] == pytest.approx((2825 + 2895) / 2)  # the seed's median ntt_msm_h
    assert pageable.summary()["barrier_wait_ms"] == pytest.approx(0.0)  # prep < ntt_msm_h: no barrier wait
    pinned = model.simulate(p, partitions=6, gw=1, transfer="pinned")
    assert pinned.summary()["ntt_msm_h_ms"] == pytest.approx(690.0)  # Phase 9's ntt_msm_h
    # after the fix the barrier wait appears inside the lock: prep_msm - ntt_msm_h
    assert pinned.summary()["barrier_wait_ms"] == pytest.approx(p.prep_msm_ms - 690.0)
    c = model.simulate(p, partitions=10, gw=2, scope="coarse", transfer="pinned")
    n = model.simulate(p, partitions=10, gw=2, scope="narrow", transfer="pinned")
    assert n.partitions_per_min > c.partitions_per_min > pageable.partitions_per_min


def test_pre_lock_h2d_stage_moves_the_copy_out_of_the_mutex():
    p = params(prep_msm_ms=50.0, ntt_ms=40.0, h_kernel_ms=120.0)  # pinned copy 100 ms; H kernels 120 ms on device-resident inputs
    n = model.simulate(p, partitions=12, gw=2, scope="narrow", transfer="pinned")
    q = model.simulate(p, partitions=12, gw=2, scope="narrow", transfer="pinned", h2d_stage="pre_lock")
    assert q.settings["h2d_stage"] == "pre_lock" and n.settings["h2d_stage"] == "in_lock"
    ev = q.events
    h2d, held, ntt = ev[ev.phase == "h2d"], ev[ev.phase == "mutex_held"], ev[ev.phase == "ntt"]
    assert len(h2d) == 12 and h2d["detail"].str.contains("stage=pre_lock").all()
    for _, r in h2d.iterrows():  # every copy ends before its partition's first mutex_held starts
        assert r.end_ns <= held[held.partition == r.partition]["start_ns"].min()
    # inside the mutex the H computation takes its kernels' time on device-resident inputs
    assert ((ntt.end_ns - ntt.start_ns) / 1e6).tolist() == pytest.approx([120.0] * 12)
    # held per partition: 100 + 40 (in_lock) -> 120 (pre_lock): the mutex-bound throughput follows
    per = p.h_msm_ms + p.batch_add_ms + p.tail_msm_ms
    assert q.partitions_per_min > n.partitions_per_min
    assert q.partitions_per_min == pytest.approx(60_000 / (120.0 + per), rel=0.08)
    assert n.partitions_per_min == pytest.approx(60_000 / (100.0 + 40.0 + per), rel=0.08)
    # submit always copies before the mutex; resident never copies; h_kernel_ms unknown (0): ntt_ms
    assert model.simulate(p, partitions=4, gw=2, scope="submit", transfer="pinned").settings["h2d_stage"] == "pre_lock"
    r = model.simulate(params(h_kernel_ms=0.0), partitions=3, gw=1, transfer="pinned", h2d_stage="pre_lock").events
    assert ((r[r.phase == "ntt"].end_ns - r[r.phase == "ntt"].start_ns) / 1e6).tolist() == pytest.approx([300.0] * 3)
    with pytest.raises(ValueError, match="h2d_stage"):
        model.simulate(p, h2d_stage="early")


def test_in_lock_tail_and_the_calibration_of_either_stage():
    # the three-stream overlap: short copies leave the kernels' last third (or more) after them
    assert model.in_lock_tail_ms(15.0, 21.0) == pytest.approx(5.0)
    assert model.in_lock_tail_ms(30.0, 6.0) == pytest.approx(26.0)
    p = params(ntt_ms=10.0, h_kernel_ms=24.0, h_msm_ms=20.0)
    # in_lock table: ntt_ms from the rest of ntt_msm_h, h_kernel_ms from the ntt rows' kernel_ms
    q = calibration.calibrate(model.simulate(p, partitions=8, gw=2, scope="narrow", transfer="pinned").events, pageable_gbps=2.0)
    assert q.ntt_ms == pytest.approx(10.0) and q.h_kernel_ms == pytest.approx(24.0)
    # pre_lock table: the H part of ntt_msm_h is the device-resident H computation; the in-lock tail from the formula
    ev = model.simulate(p, partitions=8, gw=2, scope="narrow", transfer="pinned", h2d_stage="pre_lock").events
    r = calibration.calibrate(ev, pageable_gbps=2.0)
    assert r.h_kernel_ms == pytest.approx(24.0) and r.ntt_ms == pytest.approx(model.in_lock_tail_ms(24.0, p.h2d_ms(20.0)))
    # means and medians agree on a deterministic table; stat is checked
    assert calibration.calibrate(ev, pageable_gbps=2.0, stat="mean").batch_add_ms == pytest.approx(p.batch_add_ms)
    with pytest.raises(ValueError, match="stat"):
        calibration.calibrate(ev, pageable_gbps=2.0, stat="mode")


@pytest.mark.parametrize("host_ms", [30.0, 2.0])
def test_prediction_of_the_pre_lock_stage_follows_the_host_component_of_its_sibling(host_ms):
    # the GPU phases' wall time is kernels + host work inside them (launches, read-backs); whether
    # that host part is large (MSM size read-backs) or small (removed), the pre-lock prediction
    # calibrated on the in-lock run of the same code reproduces the pre-lock run of that code
    truth = params(prep_msm_ms=40.0, ntt_ms=5.0, h_kernel_ms=15.0, h_msm_ms=50.0 + host_ms, batch_add_ms=10.0 + host_ms / 3, h2d_bytes=0.5 * GB,
                   tail_msm_ms=30.0 + host_ms, lock_overhead_ms=1.0)
    in_lock = model.simulate(truth, partitions=40, gw=2, scope="narrow", transfer="pinned", jitter=0.1, seed=1)
    pre_lock = model.simulate(truth, partitions=40, gw=2, scope="narrow", transfer="pinned", h2d_stage="pre_lock", jitter=0.1, seed=2)
    cal = calibration.calibrate(in_lock.events, pageable_gbps=2.0, stat="mean")
    pred = model.simulate(cal, partitions=40, gw=2, scope="narrow", transfer="pinned", h2d_stage="pre_lock")
    assert pred.partitions_per_min == pytest.approx(pre_lock.partitions_per_min, rel=0.05)
    assert pred.partitions_per_min > model.simulate(cal, partitions=40, gw=2, scope="narrow", transfer="pinned").partitions_per_min


def test_submit_scope_has_no_h_msm_row_when_it_takes_no_time():
    s = model.simulate(params(h_msm_ms=0.0), partitions=3, gw=2, scope="submit", transfer="pinned")
    assert not (s.events.phase == "h_msm").any() and (s.events.phase == "ntt").sum() == 3


@pytest.mark.parametrize("scope", ["narrow", "submit"])
def test_calibrating_a_pre_lock_run_does_not_count_its_copy_twice(scope):
    # the pipeline records the copy before the mutex inside its pre_lock phase (zkgpu.pipeline.worker.prove_start);
    # the calibrated pre_lock_ms is the host part alone, so the model, which adds the copy, reproduces the run
    truth = params(prep_msm_ms=40.0, h_kernel_ms=15.0, h_msm_ms=50.0, batch_add_ms=10.0, tail_msm_ms=30.0, h2d_bytes=0.5 * GB,
                   pre_lock_ms=6.0, lock_overhead_ms=4.0)
    run = model.simulate(truth, partitions=24, gw=2, scope=scope, transfer="pinned", h2d_stage="pre_lock")
    ev = run.events.copy()
    pl, h2d = ev[ev.phase == "pre_lock"].set_index("partition"), ev[ev.phase == "h2d"].set_index("partition")
    ev.loc[ev.phase == "pre_lock", "end_ns"] = h2d.loc[pl.index, "end_ns"].to_numpy()  # as the pipeline records it
    cal = calibration.calibrate(ev, pageable_gbps=2.0, stat="mean")
    assert cal.pre_lock_ms == pytest.approx(truth.pre_lock_ms, rel=1e-6)
    again = model.simulate(cal, partitions=24, gw=2, scope=scope, transfer="pinned", h2d_stage="pre_lock")
    assert again.partitions_per_min == pytest.approx(run.partitions_per_min, rel=0.01)


@pytest.mark.parametrize("kw", [dict(gw=2, scope="coarse", transfer="pageable"), dict(gw=2, scope="submit", transfer="pinned", jitter=0.2, seed=3),
                                dict(gw=1, transfer="resident")])
def test_result_throughput_and_lazy_utilizations_follow_metrics(kw):
    """ModelResult's partitions/min and wall ms (computed without metrics' groupby) and its utilizations (computed on first
    use) equal zkgpu.analysis.metrics on the simulated event table."""
    from zkgpu.analysis import metrics

    r = model.simulate(params(), partitions=9, **kw)
    tp = metrics.throughput(r.events).iloc[0]
    assert r.partitions_per_min == pytest.approx(float(tp["partitions_per_min"]), rel=1e-12)
    assert r.wall_ms == pytest.approx(float(tp["wall_ms"]), rel=1e-12)
    u = model.utilization(r.events)
    assert (r.compute_util, r.kernel_util, r.timeline_util) == (u["compute_util"], u["kernel_util"], u["timeline_util"])
