"""zkgpu.story.bottleneck and zkgpu.analysis.gpu_time on hand-made event tables (known answers) and on the committed recording."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from zkgpu.analysis import gpu_time as gt
from zkgpu.analysis.metrics import detail_value
from zkgpu.analysis.model import ModelParams, utilization
from zkgpu.core.events import normalize_events
from zkgpu.story import bottleneck as b


def table(rows) -> pd.DataFrame:
    ms = 1_000_000
    out = []
    for phase, part, worker, s, e, *detail in rows:
        out.append({"run": "r", "source": "zkgpu", "worker": worker, "gpu": 0, "partition": part, "phase": phase,
                    "start_ns": s * ms, "end_ns": e * ms, "gpu_ms": float("nan"), "bytes": None,
                    "detail": detail[0] if detail else None})
    return normalize_events(pd.DataFrame(out))


def toy() -> pd.DataFrame:
    # synthesis 0-50; window 50-200: compute 50-100 (p0, 5 ms of it an exposed copy), barrier 100-120,
    # compute 120-150 (p0), mutex hand-off 150-160, compute 160-190 (p1), pre_lock 190-195, nothing 195-200
    return table([
        ("synthesize", 0, None, 0, 50),
        ("gpu_queue", 1, None, 50, 155),
        ("mutex_wait", 0, 0, 50, 50),
        ("ntt_msm_h", 0, 0, 50, 100),
        ("h2d", 0, 0, 50, 60, "path=pinned_pool,stage=ntt_msm_h,exposed_ms=5"),
        ("barrier_wait", 0, 0, 100, 120),
        ("batch_add", 0, 0, 120, 130),
        ("tail_msm", 0, 0, 130, 150),
        ("mutex_wait", 1, 1, 155, 160),
        ("ntt_msm_h", 1, 1, 160, 180),
        ("batch_add", 1, 1, 180, 185),
        ("tail_msm", 1, 1, 185, 190),
        ("pre_lock", 2, 0, 190, 195),
        ("tail_msm", 2, 0, 199, 200),
    ])


def test_idle_causes_known_answer():
    t = gt.idle_causes(toy())
    ms = t["ms"].to_dict()
    assert t.attrs["window_ms"] == 150 and t.attrs["startup_ms"] == 50 and t.attrs["partitions"] == 3
    assert ms["compute"] == pytest.approx(50 + 30 + 30 + 1 - 5) and ms["exposed H2D"] == pytest.approx(5)
    assert ms["barrier_wait (prep_msm)"] == pytest.approx(20)
    assert ms["mutex_wait (lock hand-off)"] == pytest.approx(5)  # 155-160; 150-155 has a partition queued
    assert ms["pre_lock (worker set-up)"] == pytest.approx(5)
    assert ms[gt.NO_PARTITION] == pytest.approx(4)  # 195-199: no gpu_queue interval open
    assert ms[gt.OTHER] == pytest.approx(5)  # 150-155: a partition waits, no worker phase explains it
    assert t["share"].sum() == pytest.approx(1.0)


def test_gpu_ms_per_partition_subtracts_exposed_copies():
    # p0: 50 + 10 + 20 - 5 = 75; p1: 30; p2: 1 -> median 30
    assert gt.gpu_ms_per_partition(toy()) == pytest.approx(30)
    with pytest.raises(ValueError, match="no"):
        gt.idle_causes(table([("synthesize", 0, None, 0, 5)]))


def test_prep_ms_prediction_scales_by_the_cpu_slowdown():
    bench = pd.DataFrame([
        {"prep": "cpu", "phase": "host", "n": 1 << 20, "median_ms": 100.0},
        {"prep": "cpu", "phase": "host", "n": 1 << 22, "median_ms": 400.0},
        {"prep": "cpu_parallel", "phase": "host", "n": 1 << 20, "median_ms": 20.0},
        {"prep": "cpu_parallel", "phase": "host", "n": 1 << 22, "median_ms": 80.0},
        {"prep": "gpu", "phase": "device", "n": 1 << 20, "median_ms": 1.0},
        {"prep": "gpu", "phase": "with_h2d", "n": 1 << 20, "median_ms": 10.0},
        {"prep": "gpu", "phase": "with_h2d", "n": 1 << 22, "median_ms": 40.0},
    ])
    p = b.prep_ms_prediction(bench, "cpu_parallel", 1 << 21, measured_cpu_ms=300.0)
    assert p["bench_ms"] == pytest.approx(40.0) and p["slowdown"] == pytest.approx(1.5) and p["predicted_ms"] == pytest.approx(60.0)
    g = b.prep_ms_prediction(bench, "gpu", 1 << 21, measured_cpu_ms=300.0)
    assert g["predicted_ms"] == pytest.approx(20.0) and g["slowdown"] == 1.0
    with pytest.raises(ValueError, match="no rows for prep='fpga'"):
        b.prep_ms_prediction(bench, "fpga", 1 << 21, 300.0)


def test_prep_workload_counts_l_a_b():
    cfg = {"n": 1 << 10, "aux_ratio": 0.5, "num_inputs": 8, "density": {"zero": 0.45, "one": 0.5, "a_aux": 1.0, "b_aux": 0.0}}
    assert b.prep_workload(cfg) == 512 + (8 + 512) + 1


def test_predict_removes_the_prep_limit():
    p = ModelParams(prep_msm_ms=400, ntt_ms=20, h_msm_ms=60, batch_add_ms=10, tail_msm_ms=40, h2d_bytes=0,
                    pageable_gbps=5, pinned_gbps=50)
    slow = b.predict(p, prep_ms=400, gw=2, partitions=12)
    fast = b.predict(p, prep_ms=10, gw=2, partitions=12)
    assert fast.partitions_per_min > 1.5 * slow.partitions_per_min
    assert fast.compute_util > 0.9 and math.isclose(fast.params.prep_msm_ms, 10, rel_tol=1e-6)
    with pytest.raises(ValueError, match="prep_ms"):
        b.predict(p, prep_ms=-1, gw=2)


def test_committed_recording_names_prep_as_the_limit_after_the_fix():
    from zkgpu.analysis import replay

    rec = replay.Recording.open(replay.data_dir() / "nvidia-h200-20261129-record-2")
    t = gt.idle_causes(rec.events("pinned_narrow"))
    idle = t.drop(index=["compute", "exposed H2D"])["share"]
    assert idle.idxmax() == "barrier_wait (prep_msm)"


def test_msm_bench_interpolation_and_gpu_budget():
    bench = pd.DataFrame({"log2_n": [16, 18, 16], "mode": ["device", "device", "pinned_h2d"], "scalars": ["uniform"] * 3,
                          "median_ms": [10.0, 40.0, 99.0]})
    assert gt.msm_bench_ms(bench, 1 << 17) == pytest.approx(20.0)  # geometric midpoint
    assert gt.msm_bench_ms(bench, 1 << 10) == pytest.approx(10.0) and gt.msm_bench_ms(bench, 1 << 20) == pytest.approx(40.0)
    assert math.isnan(gt.msm_bench_ms(None, 5))
    ntt = pd.DataFrame({"log_n": [16], "variant": ["compute_h"], "median_ms": [2.0]})
    ev = pd.concat([toy(), table([("prep_msm", 0, 0, 40, 45, "prep=gpu,l_sig=65536,a_sig=65536,b_g1_sig=262144"),
                                  ("ntt", 0, 0, 60, 70, "kernel_ms=3.5"), ("h_msm", 0, 0, 70, 100)])], ignore_index=True)
    bud = gt.gpu_budget(ev, 1 << 16, ntt, bench)
    assert bud.loc["H computation", "pipeline_ms"] == pytest.approx(3.5) and bud.loc["H computation", "ratio"] == pytest.approx(1.75)
    assert bud.loc["H MSM", "benchmark_ms"] == pytest.approx(10.0) and bud.loc["H MSM", "pipeline_ms"] == pytest.approx(30.0)
    assert bud.loc["tail_msm", "benchmark_ms"] == pytest.approx(10.0 + 10.0 + 40.0)
    assert bud.loc["GPU phases", "pipeline_ms"] == pytest.approx(gt.gpu_ms_per_partition(ev))
    # kernels only: 3.5 (H computation) + 30 (H MSM) + median(10, 5) batch_add + median(20, 5, 1) tail_msm
    assert gt.kernel_ms_per_partition(ev) == pytest.approx(3.5 + 30 + 7.5 + 5)
    assert math.isnan(gt.kernel_ms_per_partition(toy()))  # no ntt row: unknown, not 0
    assert bud.loc["host work inside the phases", "pipeline_ms"] >= 0


def _as_gpu(run_dir, name, date):
    import json
    import shutil

    d = run_dir.parent / name
    shutil.move(str(run_dir), d)
    m = json.loads((d / "manifest.json").read_text())
    m.update(device="gpu", date_utc=date, environment=dict(m["environment"], gpu="FAKE-GPU (test fixture)"))
    (d / "manifest.json").write_text(json.dumps(m))
    return d


@pytest.mark.skipif(not __import__("zkgpu.gpu.msm.prep", fromlist=["x"]).numba_available(), reason="numba not installed")
def test_predictions_calibrate_on_an_earlier_recording_of_the_scenario(tmp_path, monkeypatch):
    from zkgpu.analysis import replay
    from zkgpu.app import record

    names = ["baseline", "pinned_narrow", "narrow_prep_parallel"]
    old = _as_gpu(record.record(out=tmp_path / "a", device="cpu", n=1 << 6, partitions=3, scenarios=names), "fake-gpu-20990101-record", "2099-01-01T00:00:00+00:00")
    new = _as_gpu(record.record(out=tmp_path / "b", device="cpu", n=1 << 6, partitions=3, scenarios=names), "fake-gpu-20990102-record", "2099-01-02T00:00:00+00:00")
    data = tmp_path / "data"
    (data / b.PILOT_DIR).mkdir(parents=True)
    new.rename(data / b.PILOT_DIR / new.name)  # data/last-mile: only notebook 07b sees it, and first
    old.rename(data / old.name)
    replay.configure(data_dir=data)  # what zkgpu.app.settings does with $ZKGPU_DATA (conftest restores it)
    assert [r.path.name for r in replay.find_recordings(data)] == ["fake-gpu-20990101-record"]
    src = b.last_mile_source("replay")
    assert src.recording.path.name == "fake-gpu-20990102-record"
    prior = b.prior_recording(src)
    assert prior is not None and prior.path.name == "fake-gpu-20990101-record"
    preds, sims = b.predictions(src, prior=prior)
    psim = preds.attrs["prior_sims"]["narrow_prep_parallel"]
    pev = prior.events("narrow_prep_parallel")
    for phase, got in (("prep_msm", psim.params.prep_msm_ms), ("tail_msm", psim.params.tail_msm_ms)):
        rows = pev[pev.phase == phase]
        assert got == pytest.approx(float(((rows.end_ns - rows.start_ns) / 1e6).mean()))  # calibrated on the earlier run (means)
    assert preds.loc["narrow_prep_parallel", "prior_partitions_per_min"] == pytest.approx(psim.partitions_per_min)
    # calibrated on the other CPU-prep scenario of the same recording, never on itself
    assert preds.loc["narrow_prep_parallel", "calibrated_on"] == "pinned_narrow"
    # the seed regime: pinned_narrow runs prep_msm on the same CPU threads, so its prep_msm is the prediction's
    assert preds.loc["narrow_prep_parallel", "prep_basis"].startswith("prep_msm of pinned_narrow")
    assert preds.loc["narrow_prep_parallel", "partitions_per_min"] == pytest.approx(sims["narrow_prep_parallel"].partitions_per_min)
    acc = b.acceptance(src, preds, sims)
    assert acc["best"] in preds.index and acc["compute_util_ok"] == (acc["compute_util"] >= 0.9)
    assert b.prior_recording(replay.Source("recorded-gpu", prior, "replay")) is None  # nothing older
    (data / b.PILOT_DIR / new.name).rename(tmp_path / "gone")
    assert b.last_mile_source("replay").recording.path.name == "fake-gpu-20990101-record"  # then data/


def test_model_scope_none_lets_the_workers_overlap():
    from zkgpu.analysis import model

    p = ModelParams(prep_msm_ms=10, ntt_ms=20, h_msm_ms=60, batch_add_ms=10, tail_msm_ms=40, h2d_bytes=0, pageable_gbps=5, pinned_gbps=50)
    coarse = model.simulate(p, partitions=12, gw=2, scope="coarse", transfer="resident")
    free = model.simulate(p, partitions=12, gw=2, scope="none", transfer="resident")
    assert free.partitions_per_min == pytest.approx(2 * coarse.partitions_per_min, rel=0.05)
    held = free.events[free.events.phase == "mutex_held"].sort_values("start_ns")
    starts, ends = held["start_ns"].to_numpy(), held["end_ns"].to_numpy()
    assert (starts[1:] < ends[:-1]).any()  # two workers inside their GPU phases at once
    assert "none" in model.SCOPES


def test_host_syncs_per_partition_by_phase():
    rows = []
    for p, (h, ba, tm, gw) in enumerate([(9, 0, 12, 16), (11, 0, 14, 16), (10, 0, 13, 16)]):
        rows += [dict(phase="ntt_msm_h", partition=p, start_ns=0, end_ns=1, detail=f"host_syncs={h}"),
                 dict(phase="batch_add", partition=p, start_ns=1, end_ns=2, detail=f"host_syncs={ba}"),
                 dict(phase="tail_msm", partition=p, start_ns=2, end_ns=3, detail=f"x=1,host_syncs={tm}"),
                 dict(phase="gpu_wait", partition=p, start_ns=3, end_ns=4, detail=f"host_syncs={gw}"),
                 dict(phase="prep_msm", partition=p, start_ns=0, end_ns=4, detail="host_syncs=99")]  # not a GPU phase
    s = gt.host_syncs(normalize_events(pd.DataFrame([{**r, "run": "x", "source": "zkgpu"} for r in rows])))
    assert s.to_dict() == {"ntt_msm_h": 10.0, "batch_add": 0.0, "tail_msm": 13.0, "gpu_wait": 16.0, "total": 39.0}
    old = normalize_events(pd.DataFrame([{**r, "detail": "", "run": "x", "source": "zkgpu"} for r in rows]))
    assert gt.host_syncs(old).empty  # recorded before the count existed


def test_model_structure_on_the_committed_last_mile_recording():
    """Replays data/last-mile/nvidia-h200-20261201-record-2 (H200, n = 2^22, 128 partitions, host load 8).

    The model's errors there (partitions/min over the whole run, model vs measured): narrow_prep_parallel
    +59% (calibrated on pinned_narrow: numba's threads slow the GPU phases' host side far more than numpy's one),
    narrow_prep_gpu -15% (on narrow_prep_gpu_tails, whose concurrent tails the model does not separate),
    narrow_prep_gpu_tails +19% and submit_prep_gpu +38% (both on narrow_prep_gpu: the model does not see what
    the three tail streams or the shared stream cost). Asserted here: the structure, not those numbers."""
    from zkgpu.analysis import replay
    from zkgpu.app import record

    rec = replay.Recording.open(replay.data_dir() / b.PILOT_DIR / "nvidia-h200-20261201-record-2")
    src = replay.Source("recorded-gpu", rec, "replay")
    nxt = "narrow_prep_gpu_h2d_pre_lock"
    assert not src.has(nxt)  # predicted before it was ever recorded
    preds, sims = b.predictions(src, extra={nxt: record.SCENARIOS[nxt]})
    for name, row in preds.iterrows():  # never calibrated on itself; always on the same prep placement
        if row["calibrated_on"]:
            assert row["calibrated_on"] != name
            base = b._settings(rec.scenario(row["calibrated_on"]))
            assert b.prep_placement(base) == b.prep_placement({"prep": row["prep"]}), name
    assert preds.loc["unlocked_prep_gpu_tails", "calibrated_on"] == "" or math.isnan(preds.loc["unlocked_prep_gpu_tails", "partitions_per_min"])
    # the next step: calibrated on the run that differs from it only in the H2D stage, prep from that run's prep_msm
    assert preds.loc[nxt, "calibrated_on"] == "narrow_prep_gpu" and preds.loc[nxt, "h2d_stage"] == "pre_lock"
    assert "narrow_prep_gpu" in preds.loc[nxt, "prep_basis"]
    params = preds.attrs["params"][nxt]
    ev = src.events("narrow_prep_gpu")
    nt = ev[ev.phase == "ntt"]
    assert params.h_kernel_ms == pytest.approx(float(detail_value(nt, "kernel_ms").mean()))  # the H kernels, CUDA events
    # moving the copy out of the mutex is the only change: the same parameters with the copy inside reproduce the
    # calibration run (means add up as the run does) and the pre-lock stage predicts more throughput than that
    same = b.predict(params, prep_ms=params.prep_msm_ms, gw=2, scope="narrow", partitions=128, max_queue=8)
    measured = utilization(ev)["partitions_per_min"]
    assert same.partitions_per_min == pytest.approx(measured, rel=0.05)
    assert sims[nxt].partitions_per_min > same.partitions_per_min
    # ... and the copy left the mutex in the model's own event table
    mev = sims[nxt].events
    assert mev[mev.phase == "h2d"]["detail"].str.contains("stage=pre_lock").all()


@pytest.mark.skipif(not __import__("zkgpu.gpu.msm.prep", fromlist=["x"]).numba_available(), reason="numba not installed")
def test_a_step_whose_calibration_run_cannot_calibrate_is_named_not_predicted(tmp_path):
    # the only CPU-prep run besides narrow_prep_parallel is the pageable baseline, which has no pinned rate to give
    from zkgpu.analysis import replay
    from zkgpu.app import record

    d = _as_gpu(record.record(out=tmp_path / "a", device="cpu", n=1 << 6, partitions=2, scenarios=["baseline", "narrow_prep_parallel"]),
                "fake-gpu-20990103-record", "2099-01-03T00:00:00+00:00")
    src = replay.Source("recorded-gpu", replay.Recording.open(d), "replay")
    preds, sims = b.predictions(src)
    row = preds.loc["narrow_prep_parallel"]
    assert row["calibrated_on"] == "baseline" and "not predicted" in row["prep_basis"] and "pinned" in row["prep_basis"]
    assert math.isnan(row["partitions_per_min"]) and "narrow_prep_parallel" not in sims
    assert b.acceptance(src, preds, sims)["model_ok"] is False  # no prediction: the target is not met, not an error


@pytest.mark.skipif(not __import__("zkgpu.gpu.msm.prep", fromlist=["x"]).numba_available(), reason="numba not installed")
def test_precomputed_bases_step_is_the_plain_run_with_its_msm_phases_scaled(tmp_path):
    """A msm_bases="precomputed" step, predicted before it is recorded: calibrated on a plain run of the same
    prep placement, its h_msm and tail_msm scaled by the setup benchmark's precomputed / plain ratio (here a
    synthetic benchmark written into the fixture's manifest), else by a bench-msm table; without either it is
    named not predicted. A precomputed run is never the calibration run of another step."""
    import json

    from zkgpu.analysis import replay
    from zkgpu.app import record

    d = _as_gpu(record.record(out=tmp_path / "a", device="cpu", n=1 << 6, partitions=3, scenarios=["baseline", "pinned_narrow", "narrow_prep_parallel"]),
                "fake-gpu-20990104-record", "2099-01-04T00:00:00+00:00")
    step = "narrow_prep_parallel_msm_precomp"
    extra = {step: {**record.SCENARIOS["narrow_prep_parallel"], "msm_bases": "precomputed"}}
    src = replay.Source("recorded-gpu", replay.Recording.open(d), "replay")
    preds, sims = b.predictions(src, extra=extra)
    assert "not predicted: no MSM benchmark" in preds.loc[step, "prep_basis"] and preds.loc[step, "msm_basis"] == ""
    assert step not in sims and math.isnan(preds.loc[step, "partitions_per_min"])
    assert b.msm_speedups(src, step) is None
    # a zkgpu bench msm table: H at the nearest size to n, the tails at the nearest to their expected rows
    bench = pd.DataFrame([dict(log2_n=lg, scalars="uniform", mode=m, median_ms=ms) for lg, m, ms in
                          [(6, "device", 10.0), (6, "device_precomp", 5.0), (2, "device", 4.0), (2, "device_precomp", 1.0)]])
    rh, rt, basis = b.msm_speedups(src, step, bench)
    assert (rh, rt) == (0.5, 0.25) and "2^6 (H) and 2^2 (tails)" in basis
    # the setup benchmark of zkgpu record (in the manifest) comes first
    m = json.loads((d / "manifest.json").read_text())
    m["scenarios"]["pinned_narrow"]["setup"] = {"msm_bench": {"h_plain": 50.0, "h_precomp": 40.0, "tail_plain": 20.0, "tail_precomp": 10.0}}
    (d / "manifest.json").write_text(json.dumps(m))
    src = replay.Source("recorded-gpu", replay.Recording.open(d), "replay")
    preds, sims = b.predictions(src, extra=extra, msm_bench=bench)
    row = preds.loc[step]
    base = row["calibrated_on"]
    assert base in ("pinned_narrow", "narrow_prep_parallel") and row["msm_bases"] == "precomputed"
    assert "h_msm x 0.80, tail_msm x 0.50 (setup MSM benchmark of pinned_narrow)" == row["msm_basis"]
    plain = b.calibrated_params(src, scenario=base, stat="mean")
    got = preds.attrs["params"][step]
    assert got.h_msm_ms == pytest.approx(plain.h_msm_ms * 0.8) and got.tail_msm_ms == pytest.approx(plain.tail_msm_ms * 0.5)
    assert got.ntt_ms == plain.ntt_ms and got.batch_add_ms == plain.batch_add_ms  # only the MSM phases change
    assert sims[step].partitions_per_min == pytest.approx(row["partitions_per_min"])
    assert b.calibration_scenario(src, "narrow_prep_parallel", record.SCENARIOS["narrow_prep_parallel"]) == "pinned_narrow"
    assert b._story_step(extra[step]) > b._story_step(record.SCENARIOS["narrow_prep_parallel"])
    steps = b.steps_table(src, ["pinned_narrow", "narrow_prep_parallel"])
    assert (steps["msm_bases"] == "plain").all()


def test_kernel_ms_of_a_run_on_the_gpu_clock():
    """lock_scope="submit" records no kernel_ms (its ntt row is the host's submission): the H computation's kernels
    are then ntt_msm_h's GPU-clock span minus the h_msm inside it, per partition."""
    rows = []
    for p, (h_comp, h_msm) in enumerate([(10, 40), (12, 41), (30, 45)]):
        t = 1000 * p
        rows += [("ntt", p, 0, t, t + 1), ("ntt_msm_h", p, 0, t, t + h_comp + h_msm, "host_ms=20,clock=gpu"),
                 ("h_msm", p, 0, t + h_comp, t + h_comp + h_msm, "host_ms=9,clock=gpu"),
                 ("batch_add", p, 0, t + 100, t + 108, "clock=gpu"), ("tail_msm", p, 0, t + 108, t + 128, "clock=gpu")]
    ev = table(rows)
    assert gt.h_kernel_ms(ev) == pytest.approx(12)  # median of 10, 12, 30
    assert gt.kernel_ms_per_partition(ev) == pytest.approx(12 + 41 + 8 + 20)
    host_clock = table([r[:5] for r in rows])  # the same rows without clock=gpu: not a GPU-clock run, no kernel_ms
    assert math.isnan(gt.h_kernel_ms(host_clock)) and math.isnan(gt.kernel_ms_per_partition(host_clock))
    with_kernel_ms = table([("ntt", 0, 0, 0, 1, "kernel_ms=7.5"), *rows[1:]])  # a recorded kernel_ms comes first
    assert gt.h_kernel_ms(with_kernel_ms) == 7.5


def test_the_last_step_is_predicted_from_the_submit_run_before_it_is_recorded():
    """record-3 (H200, n = 2^22) has submit_prep_gpu and the precomputed-bases narrow step, not the story's last
    step (the submission scope over precomputed bases): predicted from submit_prep_gpu, its MSM phases scaled by
    the recording's setup benchmark, never from a precomputed run. Its kernel ms are defined from the GPU clock,
    and acceptance reports a submit run when it is the best (here with the narrow precomputed run hidden)."""
    from zkgpu.analysis import replay
    from zkgpu.app import record

    rec = replay.Recording.open(replay.data_dir() / b.PILOT_DIR / "nvidia-h200-20261201-record-3")
    src = replay.Source("recorded-gpu", rec, "replay")
    last = "submit_prep_gpu_msm_precomp"
    assert not src.has(last) and record.LAST_MILE_SCENARIOS.index(last) > record.LAST_MILE_SCENARIOS.index("submit_prep_gpu")
    story = [n for n in record.LAST_MILE_SCENARIOS if n not in record.LAST_MILE_ALTERNATIVE_PARTITIONS]
    assert story[-1] == last and sorted(story[2:], key=lambda n: b._story_step(record.SCENARIOS[n]))[-1] == last
    extra = {n: record.SCENARIOS[n] for n in (last, "submit_prep_gpu_msm_precomp_gw3")}
    preds, sims = b.predictions(src, extra=extra)
    for n in extra:
        assert preds.loc[n, "calibrated_on"] == "submit_prep_gpu" and preds.loc[n, "h2d_stage"] == "pre_lock"
        assert "setup MSM benchmark of narrow_prep_gpu_h2d_pre_lock_msm_precomp" in preds.loc[n, "msm_basis"]
    bench = rec.scenario("narrow_prep_gpu_h2d_pre_lock_msm_precomp")["setup"]["msm_bench"]
    plain, got = b.calibrated_params(src, scenario="submit_prep_gpu", stat="mean"), preds.attrs["params"][last]
    assert got.h_msm_ms == pytest.approx(plain.h_msm_ms * bench["h_precomp"] / bench["h_plain"])
    assert got.tail_msm_ms == pytest.approx(plain.tail_msm_ms * bench["tail_precomp"] / bench["tail_plain"])
    assert sims[last].partitions_per_min > utilization(src.events("submit_prep_gpu"))["partitions_per_min"]
    # the submit run's kernel time, from its GPU-clock rows: H computation + H MSM + batch_add + tail_msm
    ev = src.events("submit_prep_gpu")
    k = gt.kernel_ms_per_partition(ev)
    assert math.isfinite(k) and gt.h_kernel_ms(ev) > 0 and k <= gt.gpu_ms_per_partition(ev) * 1.01
    hidden = "narrow_prep_gpu_h2d_pre_lock_msm_precomp"

    class Without(replay.Source):
        def has(self, name):
            return name != hidden and super().has(name)

    src2 = Without("recorded-gpu", rec, "replay")
    preds2, sims2 = b.predictions(src2)
    acc = b.acceptance(src2, preds2, sims2)
    steps = b.steps_table(src2, ["baseline", "submit_prep_gpu"])
    assert acc["best"] == "submit_prep_gpu" and acc["kernel_ms_per_partition"] == pytest.approx(k)
    assert acc["compute_util"] == pytest.approx(min(steps.loc["submit_prep_gpu", ["compute_util", "union_compute_util"]]))
    assert acc["compute_bound_per_min"] == pytest.approx(60000 / acc["bound_kernel_ms"])
    assert f"60000 / {acc['bound_kernel_ms']:.1f} kernel ms" in b.acceptance_markdown(acc)


def test_window_columns_are_the_gpu_window_not_the_whole_run():
    from zkgpu.analysis import replay

    rec = replay.Recording.open(replay.data_dir() / b.PILOT_DIR / "nvidia-h200-20261201-record-3")
    src = replay.Source("recorded-gpu", rec, "replay")
    steps = b.steps_table(src, ["baseline", "narrow_prep_gpu"])
    for n in steps.index:
        t = gt.idle_causes(src.events(n))
        assert steps.loc[n, "window_compute_util"] == pytest.approx(t.loc["compute", "share"])
        assert steps.loc[n, "window_partitions_per_min"] == pytest.approx(60000 * t.attrs["partitions"] / t.attrs["window_ms"])
        assert steps.loc[n, "startup_ms"] == pytest.approx(t.attrs["startup_ms"]) and steps.loc[n, "startup_ms"] > 0
        # without the start-up both are higher than over the whole run
        assert steps.loc[n, "window_partitions_per_min"] > steps.loc[n, "partitions_per_min"]


def test_gpu_budget_of_a_precomputed_pre_lock_run_uses_the_setup_benchmark():
    """A run with a/b/c copied before the mutex has no exposed copy (0, not NaN, so the host work inside the
    phases is still the remainder), and the recording's set-up benchmark is the MSMs' benchmark for its bases."""
    bench = pd.DataFrame({"log2_n": [16, 18], "mode": ["device", "device"], "scalars": ["uniform"] * 2, "median_ms": [10.0, 40.0]})
    ev = table([("prep_msm", 0, 0, 0, 5, "prep=gpu,l_sig=65536,a_sig=65536,b_g1_sig=262144"), ("ntt_msm_h", 0, 0, 10, 60),
                ("h2d", 0, 0, 5, 9, "path=pinned_pool,stage=pre_lock"), ("ntt", 0, 0, 10, 12, "kernel_ms=4"), ("h_msm", 0, 0, 15, 55),
                ("batch_add", 0, 0, 60, 70), ("tail_msm", 0, 0, 70, 90)])
    setup = {"h_plain": 50.0, "h_precomp": 35.0, "tail_plain": 10.0, "tail_precomp": 5.0}
    pre = gt.gpu_budget(ev, 1 << 16, None, bench, setup, "precomputed")
    assert pre.loc["exposed H2D", "pipeline_ms"] == 0.0
    assert pre.loc["host work inside the phases", "pipeline_ms"] == pytest.approx(50 + 10 + 20 - (4 + 40 + 10 + 20))
    assert pre.loc["H MSM", "benchmark_ms"] == 35.0 and pre.loc["tail_msm", "benchmark_ms"] == pytest.approx((10 + 10 + 40) * 0.5)
    plain = gt.gpu_budget(ev, 1 << 16, None, bench, setup)
    assert plain.loc["H MSM", "benchmark_ms"] == 50.0 and plain.loc["tail_msm", "benchmark_ms"] == pytest.approx(60.0)
    assert gt.gpu_budget(ev, 1 << 16, None, bench).loc["H MSM", "benchmark_ms"] == pytest.approx(10.0)  # no set-up benchmark
    with pytest.raises(ValueError, match="msm_bases must be"):
        gt.gpu_budget(ev, 1 << 16, msm_bases="shifted")


def test_run_differences_sets_a_run_beside_its_calibration_run():
    from zkgpu.analysis.calibration import run_differences

    slow = table([("synthesize", 0, None, 0, 80), ("ntt_msm_h", 0, 0, 100, 160), ("tail_msm", 0, 0, 160, 200), ("prep_msm", 0, 0, 90, 95)])
    base = table([("synthesize", 0, None, 0, 40), ("ntt_msm_h", 0, 0, 50, 80), ("tail_msm", 0, 0, 80, 100)])
    d = run_differences(slow, base)
    assert list(d.index) == ["synthesize", "prep_msm", "ntt_msm_h", "tail_msm", "GPU phases per partition"]
    assert d.loc["synthesize", "ratio"] == 2.0 and d.loc["GPU phases per partition", "run_ms"] == 100.0
    assert d.loc["GPU phases per partition", "calibration_ms"] == 50.0 and math.isnan(d.loc["prep_msm", "calibration_ms"])


def test_the_submit_model_reproduces_its_calibration_run_and_predicts_the_best_run_of_record_4():
    """record-4 (H200, n = 2^22, 128 partitions, host load 8): the model calibrated (means) on submit_prep_gpu
    reproduces that run within 2%, and the prediction of the story's last step made from it (the MSM phases
    scaled by the set-up's precomputed/plain benchmark) is within 10% of the measurement. The model was
    corrected after record-4 was measured (the submission overlapping its kernels, the copy not counted twice
    in pre_lock): this pins what the correction reproduces, not a blind prediction."""
    from zkgpu.analysis import calibration, replay

    rec = replay.Recording.open(replay.data_dir() / b.PILOT_DIR / "nvidia-h200-20261201-record-4")
    src = replay.Source("recorded-gpu", rec, "replay")
    p = calibration.calibrated_params(src, scenario="submit_prep_gpu", stat="mean")
    same = b.predict(p, prep_ms=p.prep_msm_ms, gw=2, scope="submit", partitions=128, max_queue=8, h2d_stage="pre_lock")
    assert same.partitions_per_min == pytest.approx(utilization(src.events("submit_prep_gpu"))["partitions_per_min"], rel=0.02)
    preds, _ = b.predictions(src)
    best = "submit_prep_gpu_msm_precomp"
    assert preds.loc[best, "calibrated_on"] == "submit_prep_gpu"
    assert preds.loc[best, "partitions_per_min"] == pytest.approx(utilization(src.events(best))["partitions_per_min"], rel=0.10)


def test_copy_wait_separates_the_dma_from_the_host_wait():
    ev = normalize_events(pd.DataFrame([
        {"run": "r", "source": "pipeline", "partition": i, "phase": "h2d", "start_ns": 0, "end_ns": int(w * 1e6), "bytes": 100,
         "detail": f"path=pinned_pool,stage=pre_lock,stream_ms={d}"} for i, (w, d) in enumerate([(40.0, 9.0), (12.0, 10.0), (30.0, 9.5)])]))
    c = gt.copy_wait(ev)
    assert c["stage"] == "pre_lock" and c["wall_ms"] == pytest.approx(30.0) and c["dma_ms"] == pytest.approx(9.5)
    assert c["wait_ms"] == pytest.approx(20.5) and c["wall_p90_ms"] == pytest.approx(38.0)
    assert math.isnan(gt.copy_wait(ev[ev.phase == "none"])["wall_ms"])
    # record-4: the copy before the mutex waits on the host in the narrow scope, not in the submit scope
    from zkgpu.analysis import replay

    src = replay.Source("recorded-gpu", replay.Recording.open(replay.data_dir() / b.PILOT_DIR / "nvidia-h200-20261201-record-4"), "replay")
    narrow, submit = gt.copy_wait(src.events("narrow_prep_gpu_h2d_pre_lock")), gt.copy_wait(src.events("submit_prep_gpu"))
    assert narrow["stage"] == submit["stage"] == "pre_lock"
    assert narrow["wait_ms"] > 2 * narrow["dma_ms"] and submit["wait_ms"] < 0.3 * submit["dma_ms"]


def test_copy_wait_counts_only_partitions_with_valid_dma_times_and_names_mixed_stages():
    rows = [(0, 30.0, "stage=pre_lock,stream_ms=9.0"), (1, 100.0, "stage=pre_lock"), (2, 50.0, "stage=pre_lock,stream_ms=-50"),
            (3, 10.0, "stage=ntt_msm_h,stream_ms=4.0"), (3, 10.0, "stage=ntt_msm_h,stream_ms=4.0")]
    ev = normalize_events(pd.DataFrame([{"run": "r", "source": "pipeline", "partition": p, "phase": "h2d", "start_ns": 0,
                                         "end_ns": int(w * 1e6), "bytes": 1, "detail": d} for p, w, d in rows]))
    c = gt.copy_wait(ev)
    assert c["stage"] == "mixed" and c["partitions"] == 2  # partitions 1 (no stream_ms) and 2 (negative) left out
    assert c["wall_ms"] == pytest.approx(25.0) and c["dma_ms"] == pytest.approx(8.5)  # partition 3: two rows, 20 ms / 8 ms


def test_pre_lock_host_time_leaves_out_copies_once_and_copes_without_partitions():
    from zkgpu.analysis.calibration import _pre_lock_host_ms

    def row(phase, s, e, part):
        return {"run": "r", "source": "pipeline", "partition": part, "phase": phase, "start_ns": int(s * 1e6), "end_ns": int(e * 1e6)}

    ev = normalize_events(pd.DataFrame([row("pre_lock", 0, 40, None), row("h2d", 5, 35, None),
                                        row("pre_lock", 100, 140, 1), row("h2d", 105, 125, 1), row("h2d", 115, 135, 1)]))
    assert _pre_lock_host_ms(ev, "mean") == pytest.approx((10 + 10) / 2)  # the overlapping copies 105..135 counted once
