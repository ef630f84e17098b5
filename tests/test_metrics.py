"""Metrics on small hand-built event tables with known answers (zkgpu.analysis.metrics)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from zkgpu.analysis.logs import parse_file, partition_table, to_events
from zkgpu.analysis.metrics import (
    effective_h2d_gbps,
    h2d_share,
    identity_check,
    kernel_utilization,
    mutex_stats,
    phase_shares,
    throughput,
    timeline_utilization,
    wall_span,
)
from zkgpu.core.events import normalize_events

MS = 1_000_000
SEED = Path(__file__).resolve().parent.parent / "data" / "reference" / "seed_cuzk_timing.log"


def ev(rows, run="r"):
    """rows: (phase, start_ms, end_ms, worker, partition, extra dict)."""
    out = []
    for r in rows:
        phase, s, e, w, p, *extra = r
        d = {"run": run, "phase": phase, "start_ns": int(s * MS), "end_ns": int(e * MS), "worker": w, "partition": p}
        if extra:
            d.update(extra[0])
        out.append(d)
    return normalize_events(pd.DataFrame(out))


def test_wall_span_per_run():
    df = pd.concat([ev([("prove", 10, 20, 0, 0), ("synthesize", 0, 15, None, 0)], run="a"), ev([("prove", 100, 130, 0, 0)], run="b")])
    w = wall_span(df)
    assert w.loc["a", "wall_ms"] == 20 and w.loc["b", "wall_ms"] == 30 and w.loc["a", "start_ns"] == 0


def test_timeline_utilization_union_of_overlapping_prove():
    # two workers, overlapping prove intervals: union [0,60] + [80,100] = 80 of a 100 ms wall
    df = ev([("prove", 0, 40, 0, 0), ("prove", 30, 60, 1, 1), ("prove", 80, 100, 0, 2), ("synthesize", 0, 10, None, 3)])
    u = timeline_utilization(df)
    assert u.loc["r", "busy_ms"] == 80 and u.loc["r", "wall_ms"] == 100 and u.loc["r", "utilization"] == pytest.approx(0.8)


def test_timeline_vs_kernel_utilization_gap():
    """cuzk's 90.1% vs 46.3% effect: prove spans everything, GPU phases only part of it."""
    rows = [("prove", 0, 90, 0, 0), ("prove", 90, 100, 1, 1)]
    rows += [("ntt_msm_h", 5, 25, 0, 0, {"gpu": 0}), ("barrier_wait", 25, 45, 0, 0, {"gpu": 0}), ("batch_add", 45, 50, 0, 0, {"gpu": 0}), ("tail_msm", 50, 52, 0, 0, {"gpu": 0})]
    rows += [("ntt_msm_h", 92, 97, 1, 1, {"gpu": 0}), ("tail_msm", 96, 98, 1, 1, {"gpu": 0})]  # overlapping: union counts once
    df = ev(rows)
    assert timeline_utilization(df).loc["r", "utilization"] == pytest.approx(1.0)
    k = kernel_utilization(df)
    assert k.loc["r", "method"] == "intervals"
    assert k.loc["r", "busy_ms"] == pytest.approx(20 + 5 + 2 + 6) and k.loc["r", "utilization"] == pytest.approx(0.33)


def test_kernel_utilization_uses_gpu_ms_when_complete():
    rows = [("prove", 0, 100, 0, 0), ("ntt_msm_h", 0, 50, 0, 0, {"gpu_ms": 10.0, "gpu": 0}), ("batch_add", 50, 60, 0, 0, {"gpu_ms": 5.0, "gpu": 0})]
    k = kernel_utilization(ev(rows))
    assert k.loc["r", "method"] == "gpu_ms" and k.loc["r", "busy_ms"] == 15 and k.loc["r", "utilization"] == pytest.approx(0.15)
    # one GPU row lacks gpu_ms -> intervals for that GPU
    rows[2] = ("batch_add", 50, 60, 0, 0, {"gpu": 0})
    k = kernel_utilization(ev(rows))
    assert k.loc["r", "method"] == "intervals" and k.loc["r", "busy_ms"] == 60


def test_kernel_utilization_never_counts_overlapping_workers_twice():
    """Without a shared mutex two workers' GPU phases overlap: Σ gpu_ms (90 ms) exceeds the time the
    GPU was in any of them (the union of the intervals, 60 ms), which caps it."""
    rows = [("prove", 0, 100, 0, 0), ("ntt_msm_h", 0, 50, 0, 0, {"gpu_ms": 45.0, "gpu": 0}),
            ("ntt_msm_h", 10, 60, 1, 1, {"gpu_ms": 45.0, "gpu": 0})]
    k = kernel_utilization(ev(rows))
    assert k.loc["r", "method"] == "gpu_ms" and k.loc["r", "busy_ms"] == 60 and k.loc["r", "utilization"] == pytest.approx(0.6)


def test_utilization_averages_over_gpus():
    rows = [("ntt_msm_h", 0, 100, 0, 0, {"gpu": 0}), ("ntt_msm_h", 0, 50, 0, 1, {"gpu": 1})]
    k = kernel_utilization(ev(rows))
    assert k.loc["r", "n_gpus"] == 2 and k.loc["r", "utilization"] == pytest.approx(0.75)


def test_phase_shares():
    rows = [("ntt_msm_h", 0, 30, 0, 0), ("batch_add", 30, 40, 0, 0), ("prove", 0, 100, 0, 0), ("mutex_held", 0, 40, 0, 0), ("h2d", 0, 20, 0, 0)]
    rows += [("ntt_msm_h", 0, 10, 1, 1), ("tail_msm", 10, 20, 1, 1)]
    s = phase_shares(ev(rows)).set_index(["worker", "phase"])
    assert set(s.index.get_level_values("phase")) == {"ntt_msm_h", "batch_add", "tail_msm"}  # containers / sub-phases excluded
    assert s.loc[(0, "ntt_msm_h"), "share"] == pytest.approx(0.75) and s.loc[(0, "batch_add"), "total_ms"] == 10
    assert s.loc[(1, "tail_msm"), "share"] == pytest.approx(0.5)
    g = phase_shares(ev(rows), by=("run",), phases=["prove", "ntt_msm_h"]).set_index("phase")
    assert g.loc["ntt_msm_h", "total_ms"] == 40 and g.loc["prove", "share"] == pytest.approx(100 / 140)
    assert g["share"].sum() == pytest.approx(1.0)


def test_h2d_share_and_bandwidth():
    rows = [
        ("ntt_msm_h", 0, 100, 0, 0),
        ("h2d", 0, 60, 0, 0, {"bytes": 3_000_000_000, "gpu_ms": 50.0}),
        ("ntt_msm_h", 100, 200, 0, 1),
        ("h2d", 100, 120, 0, 1, {"bytes": 1_000_000_000}),
    ]
    df = ev(rows)
    h = h2d_share(df).set_index("run")
    assert h.loc["r", "h2d_ms"] == 80 and h.loc["r", "share"] == pytest.approx(0.4)
    hp = h2d_share(df, by=("run", "partition")).set_index("partition")
    assert hp.loc[0, "share"] == pytest.approx(0.6) and hp.loc[1, "share"] == pytest.approx(0.2)
    b = effective_h2d_gbps(df).set_index("run")
    # gpu_ms (50) for the first, interval (20) for the second: 4e9 B / 70 ms = 57.14 GB/s
    assert b.loc["r", "time_ms"] == 70 and b.loc["r", "gbps"] == pytest.approx(4e9 / 70e6)
    bp = effective_h2d_gbps(df, by=("run", "partition")).set_index("partition")
    assert bp.loc[0, "gbps"] == pytest.approx(60.0) and bp.loc[1, "gbps"] == pytest.approx(50.0)
    assert len(effective_h2d_gbps(ev([("ntt_msm_h", 0, 1, 0, 0)]))) == 0


def test_throughput():
    rows = [("prove", 0, 30_000, 0, 0), ("prove", 20_000, 60_000, 1, 1), ("prove", 50_000, 120_000, 0, 2), ("synthesize", 0, 5, None, 3)]
    t = throughput(ev(rows))
    assert t.loc["r", "partitions"] == 3 and t.loc["r", "wall_ms"] == 120_000
    assert t.loc["r", "partitions_per_min"] == pytest.approx(1.5) and t.loc["r", "s_per_partition"] == pytest.approx(40)
    # no prove rows: tail_msm partitions count
    t2 = throughput(ev([("tail_msm", 0, 10, None, 0), ("tail_msm", 10, 60_000, None, 1), ("prep_msm", 0, 5, None, 2)]))
    assert t2.loc["r", "partitions"] == 2 and t2.loc["r", "partitions_per_min"] == pytest.approx(2.0)


def test_identity_check_seed():
    ic = identity_check(partition_table(parse_file(SEED)))
    assert ic["residual_ms"].iloc[:3].tolist() == [3425 - 2825 - 196, 3501 - 2895 - 199, 3299 - 2699 - 197]
    assert ic["residual_ms"].iloc[0] == 404
    assert ic["missing"].iloc[0] == "barrier_wait,batch_add"
    assert math.isnan(ic["residual_ms"].iloc[3])  # gpu_total cut off in the source
    assert ic["rel_residual"].iloc[0] == pytest.approx(404 / 3425)


def test_identity_check_full():
    pt = pd.DataFrame(
        {
            "ntt_msm_h_ms": [2800.0],
            "barrier_wait_ms": [0.0],
            "batch_add_ms": [400.0],
            "tail_msm_ms": [196.0],
            "gpu_total_ms": [3400.0],
            "mutex_held_ms": [3405.0],
            "total_start_fn_ms": [3417.0],
            "pre_lock_cpu_ms": [12.0],
            "mutex_wait_ms": [0.0],
        }
    )
    ic = identity_check(pt)
    assert ic.loc[0, "residual_ms"] == 4 and ic.loc[0, "missing"] == "" and ic.loc[0, "held_residual_ms"] == 5 and ic.loc[0, "start_fn_residual_ms"] == 0


def test_mutex_stats():
    rows = [
        ("mutex_wait", 0, 10, 0, 0),
        ("mutex_held", 10, 110, 0, 0),
        ("barrier_wait", 60, 90, 0, 0),
        ("mutex_wait", 0, 100, 1, 1),
        ("mutex_wait", 200, 240, 1, 2),
        ("mutex_held", 110, 160, 1, 1),
    ]
    m = mutex_stats(ev(rows)).set_index("worker")
    assert m.loc[0, "barrier_in_held"] == pytest.approx(0.3)
    assert m.loc[1, "mutex_wait_count"] == 2 and m.loc[1, "mutex_wait_total_ms"] == 140 and m.loc[1, "mutex_wait_max_ms"] == 100
    assert m.loc[1, "barrier_wait_total_ms"] == 0 and m.loc[1, "barrier_in_held"] == 0


def test_metrics_on_parsed_fixture():
    ev_ = to_events(parse_file(Path(__file__).parent / "fixtures" / "cuzk_mixed.log"), run="fx")
    t = timeline_utilization(ev_).loc["fx"]
    k = kernel_utilization(ev_).loc["fx"]
    assert 0 <= k["utilization"] < t["utilization"] <= 1
    # prove union [3306, 9500] over wall [100, 9500]
    assert t["busy_ms"] == 9500 - 3306 and t["wall_ms"] == 9400
    # GPU phases only (barrier_wait is not kernel time): p0 2800+400+196, p1 700+400+150
    assert k["busy_ms"] == pytest.approx(2800 + 400 + 196 + 700 + 400 + 150)


def test_bad_table():
    with pytest.raises(ValueError, match="lacks columns"):
        timeline_utilization(pd.DataFrame({"x": [1]}))


def test_compute_utilization_subtracts_h2d_inside_ntt_msm_h():
    from zkgpu.analysis.metrics import compute_utilization

    inside = {"gpu": 0, "gpu_ms": 30.0, "detail": "stage=ntt_msm_h"}
    outside = {"gpu": 0, "gpu_ms": 50.0, "detail": "stage=pre_lock"}  # pre-staged copy: not subtracted
    rows = [
        ("ntt_msm_h", 0, 60, 0, 0, {"gpu": 0, "gpu_ms": 60.0}),
        ("h2d", 0, 30, 0, 0, inside),
        ("batch_add", 60, 80, 0, 0, {"gpu": 0, "gpu_ms": 20.0}),
        ("tail_msm", 80, 100, 0, 0, {"gpu": 0, "gpu_ms": 20.0}),
        ("h2d", 100, 150, 1, 1, outside),
        ("synthesize", 150, 200, None, 1),
    ]
    c = compute_utilization(ev(rows)).loc["r"]
    assert c["copy_ms"] == pytest.approx(30.0)
    assert c["busy_ms"] == pytest.approx(70.0) and c["wall_ms"] == pytest.approx(200.0)
    assert c["utilization"] == pytest.approx(0.35)
    assert kernel_utilization(ev(rows)).loc["r", "utilization"] == pytest.approx(0.5)
    # without stage= keys, containment in ntt_msm_h decides
    for extra in (inside, outside):
        extra.pop("detail")
    assert compute_utilization(ev(rows)).loc["r", "copy_ms"] == pytest.approx(30.0)


def test_empty_event_table_gives_empty_results():
    from zkgpu.analysis import metrics
    from zkgpu.core.events import empty_events

    e = empty_events()
    for fn in (metrics.throughput, metrics.timeline_utilization, metrics.kernel_utilization, metrics.compute_utilization):
        out = fn(e)
        assert len(out) == 0, fn.__name__
    assert {"partitions_per_min", "s_per_partition"} <= set(metrics.throughput(e).columns)
    assert "utilization" in metrics.compute_utilization(e).columns


def test_detail_value_and_exposed_h2d_share():
    from zkgpu.analysis.metrics import compute_utilization, detail_value

    rows = [
        ("ntt_msm_h", 0, 100, 0, 0, {"gpu": 0, "gpu_ms": 100.0}),
        ("h2d", 0, 40, 0, 0, {"gpu": 0, "gpu_ms": 36.0, "detail": "path=pinned_pool,stage=ntt_msm_h,stream_ms=36.0,exposed_ms=12.5"}),
        ("ntt_msm_h", 100, 200, 0, 1, {"gpu": 0, "gpu_ms": 100.0}),
        ("h2d", 100, 160, 0, 1, {"gpu": 0, "detail": "path=pageable,stage=ntt_msm_h"}),  # older recording
    ]
    df = ev(rows)
    dv = detail_value(df[df["phase"] == "h2d"], "exposed_ms")
    assert dv.iloc[0] == pytest.approx(12.5) and math.isnan(dv.iloc[1])
    assert math.isnan(detail_value(df[df["phase"] == "h2d"], "path").iloc[0])  # not a number
    hp = h2d_share(df, by=("run", "partition")).set_index("partition")
    assert hp.loc[0, "h2d_ms"] == pytest.approx(12.5) and hp.loc[0, "share"] == pytest.approx(0.125)
    assert hp.loc[0, "interval_ms"] == pytest.approx(40.0) and hp.loc[0, "interval_share"] == pytest.approx(0.4)
    assert hp.loc[1, "h2d_ms"] == pytest.approx(60.0) and hp.loc[1, "share"] == pytest.approx(0.6)
    # compute utilization subtracts the exposed copy time (12.5), and the interval of the other (60)
    assert compute_utilization(df).loc["r", "copy_ms"] == pytest.approx(72.5)


def test_h2d_share_skips_pre_staged_copies_and_survives_concatenated_runs():
    a = ev([("ntt_msm_h", 0, 100, 0, 0), ("h2d", 0, 50, 0, 0, {"detail": "stage=ntt_msm_h"})], run="a")
    b = ev([("h2d", 0, 80, 0, 0, {"detail": "stage=pre_lock"}), ("ntt_msm_h", 100, 200, 0, 0)], run="b")
    both = pd.concat([a, b])  # duplicate index labels, as when scenarios are concatenated
    h = h2d_share(both).set_index("run")
    assert h.loc["a", "share"] == pytest.approx(0.5) and h.loc["b", "share"] == 0.0
    from zkgpu.analysis.metrics import compute_utilization

    assert compute_utilization(both).loc["b", "copy_ms"] == 0.0


def test_barrier_in_held_counts_only_waits_inside_the_lock():
    coarse = ev([("mutex_held", 0, 100, 0, 0), ("barrier_wait", 40, 70, 0, 0)], run="coarse")
    narrow = ev([("mutex_held", 0, 40, 0, 0), ("barrier_wait", 40, 70, 0, 0), ("mutex_held", 70, 100, 0, 0)], run="narrow")
    ms = mutex_stats(pd.concat([coarse, narrow])).set_index("run")
    assert ms.loc["coarse", "barrier_in_held"] == pytest.approx(0.3)
    assert ms.loc["narrow", "barrier_in_held"] == 0.0 and ms.loc["narrow", "barrier_wait_total_ms"] == 30
    half = ev([("mutex_held", 0, 50, 0, 0), ("barrier_wait", 40, 70, 0, 0)], run="h")  # 10 of 30 ms inside
    assert mutex_stats(half).loc[0, "barrier_in_held"] == pytest.approx(10 / 50)


def test_detail_values_are_matched_literally_and_clipped():
    from zkgpu.analysis.metrics import compute_utilization, detail_value

    rows = [
        ("ntt_msm_h", 0, 100, 0, 0, {"gpu": 0, "gpu_ms": 100.0}),
        ("h2d", 0, 40, 0, 0, {"gpu": 0, "detail": "stage=ntt_msm_h,exposed_ms=250"}),  # > the copy: clipped
        ("ntt_msm_h", 100, 200, 0, 1, {"gpu": 0, "gpu_ms": 100.0}),
        ("h2d", 100, 120, 0, 1, {"gpu": 0, "detail": "stage=ntt_msm_h,exposed_ms=-5"}),  # negative: 0
        ("ntt_msm_h", 200, 300, 0, 2, {"gpu": 0, "gpu_ms": 100.0}),
        ("h2d", 200, 210, 0, 2, {"gpu": 0, "detail": "stage=ntt_msm_h,exposed_ms=inf,axb=3"}),  # inf: not a value
        ("h2d", 210, 260, 0, 2, {"gpu": 0, "detail": "stage=ntt_msm_h_prefetch"}),  # another stage
    ]
    df = ev(rows)
    hp = h2d_share(df, by=("run", "partition")).set_index("partition")
    assert hp.loc[0, "h2d_ms"] == 40 and hp.loc[1, "h2d_ms"] == 0 and hp.loc[2, "h2d_ms"] == 10
    assert compute_utilization(df).loc["r", "copy_ms"] == pytest.approx(50.0)
    assert detail_value(df, "a.b").isna().all() and detail_value(df, "x(").isna().all()
    nodetail = df.drop(columns=["detail"])
    assert detail_value(nodetail, "exposed_ms").isna().all()
    assert h2d_share(nodetail)["share"].iloc[0] == pytest.approx(120 / 300)  # no stage info: containment -> inside


def test_kernel_ms_sums_the_kernel_categories_of_the_critical_path():
    from zkgpu.analysis.metrics import KERNEL_PATH, kernel_ms

    path = pd.DataFrame({"lock_free": [5.0], "h2d": [100.0], "ntt": [20.0], "h_msm": [60.0], "barrier_wait": [7.0],
                         "batch_add": [12.0], "tail_msm": [38.0], "lock_other": [0.5]}, index=pd.Index(["r"], name="run"))
    assert KERNEL_PATH == ("ntt", "h_msm", "batch_add", "tail_msm")
    assert kernel_ms(path).loc["r"] == pytest.approx(130.0)  # copies, waits and idle time left out
    with pytest.raises(ValueError, match="lacks columns"):
        kernel_ms(path.drop(columns="tail_msm"))
