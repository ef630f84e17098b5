"""Parsers for cuzk-format logs and nsys SQLite exports (zkgpu.analysis.logs)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from zkgpu.analysis.logs import (
    PARTITION_COLUMNS,
    parse_file,
    parse_lines,
    partition_table,
    read_nsys_sqlite,
    to_events,
)
from zkgpu.app.parse_cmd import parse_command
from zkgpu.core.events import COLUMNS, DTYPES, normalize_events

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "data" / "reference" / "seed_cuzk_timing.log"
MIXED = ROOT / "tests" / "fixtures" / "cuzk_mixed.log"


def one(line: str, frame: str = "timing") -> dict:
    p = parse_lines([line])
    df = getattr(p, frame)
    assert len(df) == 1, (line, p.summary())
    return df.iloc[0].to_dict()


# ---------------------------------------------------------------- every format of §2.1 / §2.2

@pytest.mark.parametrize(
    "line, kind, fields",
    [
        ("CUZK_TIMING: split_vectors_ms=10 setup_to_split_ms=12", "split_vectors", {"split_vectors_ms": 10, "setup_to_split_ms": 12}),
        ("CUZK_TIMING: prep_msm_ms=1633", "prep_msm", {"prep_msm_ms": 1633}),
        ("CUZK_TIMING: b_g2_msm_ms=400 num_circuits=1", "b_g2_msm", {"b_g2_msm_ms": 400, "num_circuits": 1}),
        ("CUZK_TIMING: pre_lock_cpu_ms=12 mutex_wait_ms=3400", "pre_lock", {"pre_lock_cpu_ms": 12, "mutex_wait_ms": 3400}),
        ("CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=2825", "ntt_msm_h", {"ntt_msm_h_ms": 2825, "gpu_tid": 0}),
        ("CUZK_TIMING: gpu_tid=1 barrier_wait_ms=950", "barrier_wait", {"barrier_wait_ms": 950, "gpu_tid": 1}),
        ("CUZK_TIMING: gpu_tid=0 batch_add_ms=403", "batch_add", {"batch_add_ms": 403}),
        ("CUZK_TIMING: gpu_tid=0 tail_msm_ms=196 gpu_total_ms=3425", "tail_msm", {"tail_msm_ms": 196, "gpu_total_ms": 3425}),
        ("CUZK_TIMING: mutex_held_ms=3405 total_start_fn_ms=3417", "mutex_held", {"mutex_held_ms": 3405, "total_start_fn_ms": 3417}),
        ("CUZK_TIMING: async_dealloc_ms=30", "async_dealloc", {"async_dealloc_ms": 30}),
        ("CUZK_TIMING: set pool release threshold to MAX on gpu 1", "pool_threshold", {"gpu": 1}),
        ("CUZK_TIMING: d_a_cache allocated 4096 MiB on gpu 0", "d_a_cache", {"d_a_cache_mib": 4096, "gpu": 0}),
        # historical lines (Phase 4-9)
        ("CUZK_TIMING: epilogue_ms=41 pre_destructor_ms=3", "epilogue", {"epilogue_ms": 41, "pre_destructor_ms": 3}),
        ("CUZK_TIMING: host_register=fallback err=1", "host_register", {"host_register": "fallback", "err": 1}),
        ("CUZK_TIMING: prestage_vram free_mib=15000 usable_mib=14000 need_da_mib=4096 need_dbc_mib=8192 total_mib=16303", "prestage_vram", {"free_mib": 15000, "total_mib": 16303}),
        ("CUZK_TIMING: prestage_setup=skip_vram", "prestage_setup", {"prestage_setup": "skip_vram"}),
        ("CUZK_TIMING: prestage_setup=fallback err=2", "prestage_setup", {"prestage_setup": "fallback", "err": 2}),
        (
            "CUZK_TIMING: prestage_setup=ok domain=134217728 lot_of_memory=1 sync_ms=3 trim_ms=1 alloc_ms=5 upload_ms=9 total_ps_ms=18",
            "prestage_setup",
            {"prestage_setup": "ok", "domain": 134217728, "lot_of_memory": 1, "total_ps_ms": 18},
        ),
    ],
)
def test_cuzk_timing_formats(line, kind, fields):
    r = one(line)
    assert r["kind"] == kind and not r["truncated"]
    for k, v in fields.items():
        assert r[k] == v, (k, r[k])


def test_cuzk_timing_without_gpu_tid_has_na():
    assert pd.isna(one("CUZK_TIMING: prep_msm_ms=1633")["gpu_tid"])


def test_ntt_h_subtimers():
    r = one("CUZK_NTT_H: d_b_alloc=700ms ntt_kernels=2400ms coset_intt_sync=90ms msm_init=1ms msm_invoke=300ms msm_dtor=5ms total=3496ms", "ntt_h")
    assert (r["d_b_alloc_ms"], r["ntt_kernels_ms"], r["coset_intt_sync_ms"], r["msm_init_ms"], r["msm_invoke_ms"], r["msm_dtor_ms"], r["total_ms"]) == (700, 2400, 90, 1, 300, 5, 3496)


@pytest.mark.parametrize(
    "line, event, worker, partition, extra",
    [
        ("TIMELINE,100,SYNTH_START,job-a,partition=3", "SYNTH_START", None, 3, {}),
        ("TIMELINE,3100,SYNTH_END,job-a,partition=3,synth_ms=3000", "SYNTH_END", None, 3, {"synth_ms": 3000.0}),
        ("TIMELINE,3101,GPU_QUEUE,job-a,partition=3", "GPU_QUEUE", None, 3, {}),
        ("TIMELINE,3305,GPU_PICKUP,job-a,worker=1,partition=3", "GPU_PICKUP", 1, 3, {}),
        ("TIMELINE,3306,GPU_START,job-a,worker=1,partition=3", "GPU_START", 1, 3, {}),
        ("TIMELINE,7000,GPU_END,job-a,worker=1,partition=3,gpu_ms=3694", "GPU_END", 1, 3, {"gpu_ms": 3694.0}),
        ("TIMELINE,5,SYNTH_START,j9,kind=porep", "SYNTH_START", None, None, {"kind": "porep"}),
        ("TIMELINE,6,GPU_QUEUE,j9,monolithic", "GPU_QUEUE", None, None, {"flags": "monolithic"}),
    ],
)
def test_timeline_formats(line, event, worker, partition, extra):
    r = one(line, "timeline")
    assert r["event"] == event and r["job"] in ("job-a", "j9")
    assert (pd.isna(r["worker"]) if worker is None else r["worker"] == worker)
    assert (pd.isna(r["partition"]) if partition is None else r["partition"] == partition)
    for k, v in extra.items():
        assert r[k] == v


@pytest.mark.parametrize(
    "line, frame, what, fields",
    [
        (
            "2026-03-10T12:00:03.305000Z  INFO cuzk_core::engine: GPU_TIMING hot_path pre-prove overhead worker_id=0 partition=3 status_ms=0 fail_check_ms=1 mark_busy_ms=0 total_overhead_ms=1",
            "gpu_timing",
            "hot_path pre-prove overhead",
            {"worker_id": 0, "partition": 3, "fail_check_ms": 1, "total_overhead_ms": 1},
        ),
        ("GPU_TIMING spawn_blocking prove_start spawn_to_enter_ms=0 prove_start_ms=3418", "gpu_timing", "spawn_blocking prove_start", {"prove_start_ms": 3418}),
        ("GPU_TIMING prove_start returned total_pre_prove_ms=3420 spawn_blocking_wall_ms=3419", "gpu_timing", "prove_start returned", {"spawn_blocking_wall_ms": 3419}),
        ("INFO FIN_TIMING finalizer partition finish_ms=250 drop_res_ms=0 lock_wait_ms=1 process_ms=3 total_ms=254", "fin_timing", "finalizer partition", {"lock_wait_ms": 1, "total_ms": 254}),
        ("FIN_TIMING finalizer monolithic finish_ms=9 drop_res_ms=0 lock_wait_ms=0 process_ms=1 total_ms=10", "fin_timing", "finalizer monolithic", {"finish_ms": 9}),
        ('FIN_TIMING malloc_trim (success path) job_id="abc-1" partition=2 malloc_trim_ms=12', "fin_timing", "malloc_trim (success path)", {"job_id": "abc-1", "malloc_trim_ms": 12}),
        ("FIN_TIMING malloc_trim (discard path) job_id=abc partition=2 malloc_trim_ms=7", "fin_timing", "malloc_trim (discard path)", {"malloc_trim_ms": 7}),
        ("pinned pool: checkout (reuse) size_gib=3.88 free_remaining=2", "pool", "pinned pool: checkout (reuse)", {"event": "checkout_reuse", "size_gib": 3.88}),
        ("pinned pool: allocated new buffer size_gib=3.88 total_buffers=3 total_gib=11.65", "pool", "pinned pool: allocated new buffer", {"event": "allocate", "total_buffers": 3}),
        ("pinned pool: checkin", "pool", "pinned pool: checkin", {"event": "checkin"}),
        ("pinned pool: freed buffer (evictor)", "pool", "pinned pool: freed buffer (evictor)", {"event": "free_evictor"}),
        ("WARN pinned pool checkout FAILED — falling back to unpinned", "pool", "pinned pool checkout FAILED — falling back to unpinned", {"event": "checkout_failed"}),
        ("attempting pinned memory synthesis num_constraints=130278869 scalar_size=32 buf_gib=3.88", "pool", "attempting pinned memory synthesis", {"event": "attempt_pinned", "num_constraints": 130278869}),
        ("partition synthesis complete partition=0 synth_ms=3000 is_pinned=true", "messages", "partition synthesis complete", {"synth_ms": 3000, "is_pinned": "true"}),
    ],
)
def test_rust_lines(line, frame, what, fields):
    r = one(line, frame)
    assert r["what"] == what
    for k, v in fields.items():
        assert r[k] == v, (k, r[k])


# ---------------------------------------------------------------- the seed

def test_seed_file_four_partitions():
    p = parse_file(SEED)
    assert p.unknown_count == 0 and p.malformed_count == 0 and p.truncated_count == 1
    pt = partition_table(p)
    assert len(pt) == 4
    assert pt["prep_msm_ms"].tolist() == [1633, 1488, 1502, 1768]
    assert pt["ntt_msm_h_ms"].tolist() == [2825, 2895, 2699, 2958]
    assert pt["tail_msm_ms"].tolist() == [196, 199, 197, 211]
    assert pt["gpu_total_ms"].iloc[:3].tolist() == [3425, 3501, 3299]
    assert math.isnan(pt["gpu_total_ms"].iloc[3])  # cut at "gpu_to..." in the source
    assert pt["truncated"].tolist() == [False, False, False, True]
    assert pt["batch_add_ms"].isna().all()  # filtered out by the seed's grep
    assert list(pt.columns[1:12]) == list(PARTITION_COLUMNS)
    assert p.timing["text"].iloc[-1] == "CUZK_TIMING: gpu_tid=0 tail_msm_ms=211 gpu_to..."


def test_seed_file_is_verbatim_transcription():
    src = Path("/work/shared/seed/000_bcd3a140fddaebb4.txt")
    if not src.exists():
        pytest.skip("seed write-up not available on this machine")
    text = SEED.read_text()
    assert not text.endswith("\n")
    assert " ".join(text.split("\n")) in src.read_text()


def test_seed_flattened_on_one_line():
    """The write-up prints the grep output on one line: markers split it into records."""
    flat = " ".join(SEED.read_text().split("\n"))
    pt = partition_table(parse_lines([flat]))
    assert pt["ntt_msm_h_ms"].tolist() == [2825, 2895, 2699, 2958]
    assert pt["gpu_total_ms"].iloc[:3].tolist() == [3425, 3501, 3299]


def test_seed_events_sequential_placement():
    ev = to_events(parse_file(SEED), run="seed", source="seed")
    assert list(ev.columns) == COLUMNS
    assert ev.dtypes.astype(str).to_dict() == DTYPES
    pd.testing.assert_frame_equal(ev, normalize_events(ev))
    p0 = ev[ev["partition"] == 0].set_index("phase")
    assert p0.at["ntt_msm_h", "start_ns"] == 0 and p0.at["ntt_msm_h", "end_ns"] == 2825 * 10**6
    # tail right-aligned to lock + gpu_total: the unlogged barrier+batch_add leave a 404 ms gap
    assert p0.at["tail_msm", "end_ns"] == 3425 * 10**6 and p0.at["tail_msm", "start_ns"] == (3425 - 196) * 10**6
    # partition 1 takes the mutex when partition 0's GPU chain ends
    p1 = ev[ev["partition"] == 1].set_index("phase")
    assert p1.at["ntt_msm_h", "start_ns"] == 3425 * 10**6
    assert set(ev["phase"]) == {"prep_msm", "ntt_msm_h", "tail_msm"}
    assert (ev["detail"].str.contains("placement=sequential")).all()
    assert ev.loc[ev["phase"] == "ntt_msm_h", "gpu"].tolist() == [0, 0, 0, 0]


# ---------------------------------------------------------------- robustness

def test_mixed_fixture_counts_and_grouping():
    p = parse_file(MIXED)
    s = p.summary()
    assert s["unknown"] == 3 and s["truncated"] == 1 and s["malformed"] == 0
    assert s["cuzk_timing"] == 22 and s["cuzk_ntt_h"] == 2 and s["timeline"] == 12
    assert s["gpu_timing"] == 3 and s["fin_timing"] == 2 and s["pinned_pool"] == 5 and s["messages"] == 2
    pt = partition_table(p)
    assert len(pt) == 2
    assert pt["mutex_wait_ms"].tolist() == [0, 3400] and pt["barrier_wait_ms"].tolist() == [0, 950]
    assert pt["b_g2_msm_ms"].tolist() == [400, 450] and pt["async_dealloc_ms"].tolist() == [30, 25]
    assert pt["ntt_h_ntt_kernels_ms"].tolist() == [2400, 20]
    # ANSI codes stripped, timestamp kept
    g = p.gpu_timing.iloc[0]
    assert g["worker_id"] == 0 and g["ts"] == "2026-03-10T12:00:03.305000Z" and g["level"] == "INFO"
    # truncated last line: event kept, cut gpu_ms dropped
    last = p.timeline.iloc[-1]
    assert last["event"] == "GPU_END" and bool(last["truncated"]) and pd.isna(last["gpu_ms"])


def test_mixed_fixture_events_anchored_on_timeline():
    ev = to_events(parse_file(MIXED), run="fx")
    pd.testing.assert_frame_equal(ev, normalize_events(ev))
    prove = ev[ev["phase"] == "prove"].sort_values("start_ns")
    assert prove["start_ns"].tolist() == [3306 * 10**6, 3311 * 10**6]
    assert prove["end_ns"].tolist() == [7000 * 10**6, 9500 * 10**6]
    assert prove["gpu_ms"].isna().all()  # GPU_END gpu_ms is a wall time: kept in detail only
    assert "gpu_ms=3694" in prove["detail"].iloc[0]
    syn = ev[ev["phase"] == "synthesize"]
    assert sorted(syn["end_ns"] - syn["start_ns"]) == [3000 * 10**6, 3180 * 10**6]
    q = ev[ev["phase"] == "gpu_queue"].set_index("partition")
    assert q.at[1, "worker"] == 1 and q.at[1, "end_ns"] - q.at[1, "start_ns"] == 9 * 10**6
    w1 = ev[(ev["partition"] == 1)].set_index("phase")
    # t0 = GPU_START 3311; lock at t0 + pre_lock 13 + mutex_wait 3400
    assert w1.at["mutex_wait", "end_ns"] == (3311 + 13 + 3400) * 10**6
    assert w1.at["ntt_msm_h", "start_ns"] == (3311 + 13 + 3400) * 10**6
    assert w1.at["barrier_wait", "start_ns"] == w1.at["ntt_msm_h", "end_ns"]
    assert w1.at["batch_add", "start_ns"] == w1.at["barrier_wait", "end_ns"]
    assert w1.at["tail_msm", "end_ns"] == (3311 + 13 + 3400 + 2205) * 10**6
    assert w1.at["mutex_held", "end_ns"] == (3311 + 13 + 3400 + 2210) * 10**6
    assert w1.at["prep_msm", "start_ns"] == (3311 + 13) * 10**6  # t0 + setup_to_split
    assert w1.at["b_g2_msm", "start_ns"] == w1.at["prep_msm", "end_ns"]
    assert (ev.loc[ev["phase"].isin(["pre_lock", "ntt_msm_h"]), "worker"].notna()).all()
    assert "ntt_h_ntt_kernels_ms=20" in w1.at["ntt_msm_h", "detail"]


def test_interleaved_partitions_two_workers():
    """Lines of two partitions in flight (two workers) are grouped by the C++ print order."""
    lines = [
        "CUZK_TIMING: split_vectors_ms=1 setup_to_split_ms=2",  # A
        "CUZK_TIMING: split_vectors_ms=3 setup_to_split_ms=4",  # B
        "CUZK_TIMING: prep_msm_ms=100",  # A
        "CUZK_TIMING: pre_lock_cpu_ms=5 mutex_wait_ms=0",  # A
        "CUZK_TIMING: prep_msm_ms=200",  # B
        "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=300",  # A
        "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=0",  # A
        "CUZK_TIMING: b_g2_msm_ms=40 num_circuits=1",  # A
        "CUZK_TIMING: gpu_tid=0 batch_add_ms=50",  # A
        "CUZK_TIMING: gpu_tid=0 tail_msm_ms=10 gpu_total_ms=361",  # A
        "CUZK_TIMING: mutex_held_ms=362 total_start_fn_ms=368",  # A
        "CUZK_TIMING: pre_lock_cpu_ms=6 mutex_wait_ms=360",  # B
        "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=310",  # B
        "CUZK_TIMING: async_dealloc_ms=7",  # A
        "CUZK_TIMING: gpu_tid=0 barrier_wait_ms=0",  # B
        "CUZK_TIMING: b_g2_msm_ms=41 num_circuits=1",  # B
        "CUZK_TIMING: gpu_tid=0 batch_add_ms=51",  # B
        "CUZK_TIMING: gpu_tid=0 tail_msm_ms=11 gpu_total_ms=373",  # B
        "CUZK_TIMING: prep_msm_ms=150",  # C starts before B's lock is released
        "CUZK_TIMING: mutex_held_ms=374 total_start_fn_ms=740",  # B
    ]
    pt = partition_table(parse_lines(lines))
    assert len(pt) == 3
    assert pt["split_vectors_ms"].tolist()[:2] == [1, 3]
    assert pt["prep_msm_ms"].tolist() == [100, 200, 150]
    assert pt["mutex_wait_ms"].tolist()[:2] == [0, 360]
    assert pt["ntt_msm_h_ms"].tolist()[:2] == [300, 310]
    assert pt["b_g2_msm_ms"].tolist()[:2] == [40, 41]
    assert pt["gpu_total_ms"].tolist()[:2] == [361, 373]
    assert pt["mutex_held_ms"].tolist()[:2] == [362, 374]
    assert pt["async_dealloc_ms"].tolist()[0] == 7


def test_log_starting_mid_partition():
    """A 'tail -40' cut: the first record lacks its early lines; later records still line up."""
    lines = [
        "CUZK_TIMING: gpu_tid=0 tail_msm_ms=196 gpu_total_ms=3425",
        "CUZK_TIMING: prep_msm_ms=1488",
        "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=2895",
        "CUZK_TIMING: gpu_tid=0 tail_msm_ms=199 gpu_total_ms=3501",
    ]
    pt = partition_table(parse_lines(lines))
    assert len(pt) == 2
    assert math.isnan(pt["prep_msm_ms"][0]) and pt["prep_msm_ms"][1] == 1488 and pt["ntt_msm_h_ms"][1] == 2895


def test_marker_mid_line_ansi_and_prefixes():
    E = "\x1b"
    lines = [
        f"{E}[2m2026-03-10T12:00:00.1Z{E}[0m {E}[33m WARN{E}[0m some::target: message text CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=2825",
        f"[12:00:01] {E}[1mCUZK_TIMING:{E}[0m prep_msm_ms=1633",
        "  TIMELINE,10,GPU_START,j,worker=0,partition=0",
    ]
    p = parse_lines(lines)
    assert p.unknown_count == 0
    assert p.timing["ntt_msm_h_ms"].dropna().tolist() == [2825]
    assert p.timing["prep_msm_ms"].dropna().tolist() == [1633]
    assert p.timeline["event"].tolist() == ["GPU_START"]


def test_two_records_glued_without_whitespace():
    """A record directly followed by another thread's marker is cut: its last token is dropped."""
    p = parse_lines(["CUZK_TIMING: gpu_tid=0 tail_msm_ms=196 gpu_total_ms=34CUZK_TIMING: prep_msm_ms=1633"])
    t = p.timing
    assert len(t) == 2
    first = t.iloc[0]
    assert bool(first["truncated"]) and first["tail_msm_ms"] == 196 and pd.isna(first.get("gpu_total_ms", float("nan")))
    assert t.iloc[1]["prep_msm_ms"] == 1633 and not bool(t.iloc[1]["truncated"])


def test_truncated_last_line_via_flag_and_unknowns():
    lines = ["hello", "", "CUZK_TIMING: prep_msm_ms=1633", "random noise = 3", "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=28"]
    p = parse_lines(lines, last_line_complete=False)
    assert p.unknown_count == 2 and p.unknown_examples == ["hello", "random noise = 3"]
    assert p.truncated_count == 1
    # "ntt_msm_h_ms=28" may be cut (e.g. 2825): dropped, leaving only gpu_tid -> malformed, not guessed
    assert p.malformed_count == 1 and len(p.timing) == 1
    # the same line, complete, is read
    assert parse_lines(lines).timing["ntt_msm_h_ms"].dropna().tolist() == [28]


def test_malformed_records_counted_not_fatal():
    p = parse_lines(["TIMELINE,abc", "TIMELINE,notanumber,GPU_START,j,worker=0", "CUZK_TIMING:", "CUZK_TIMING: prep_msm_ms=5"])
    assert p.malformed_count == 3 and len(p.timing) == 1 and len(p.timeline) == 0


def test_crlf_and_bytes_file(tmp_path):
    f = tmp_path / "w.log"
    f.write_bytes(b"CUZK_TIMING: prep_msm_ms=1633\r\nbad \xff\xfe bytes\r\nCUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=2825\r\n")
    p = parse_file(f)
    assert p.unknown_count == 1 and p.truncated_count == 0
    assert partition_table(p)["ntt_msm_h_ms"].tolist() == [2825]


def test_empty_inputs():
    p = parse_lines([])
    assert p.summary()["lines"] == 0
    assert len(partition_table(p)) == 0
    ev = to_events(p)
    assert list(ev.columns) == COLUMNS and len(ev) == 0
    with pytest.raises(FileNotFoundError):
        parse_file("/nonexistent/x.log")


def test_multi_job_partition_numbering():
    lines = [
        "TIMELINE,0,GPU_START,jobA,worker=0,partition=0",
        "TIMELINE,5,GPU_END,jobA,worker=0,partition=0,gpu_ms=5",
        "TIMELINE,6,GPU_START,jobB,worker=1,partition=2",
        "TIMELINE,9,GPU_END,jobB,worker=1,partition=2,gpu_ms=3",
        "TIMELINE,10,GPU_START,jobA,worker=0,partition=1",
        "TIMELINE,12,GPU_END,jobA,worker=0,partition=1,gpu_ms=2",
    ]
    ev = to_events(parse_lines(lines))
    # stride = 3 (largest partition 2, + 1); jobA rank 0, jobB rank 1
    assert sorted(ev["partition"].tolist()) == [0, 1, 5]
    assert ev["detail"].str.contains("job=jobB,partition=2").sum() == 1


# ---------------------------------------------------------------- nsys SQLite

def _make_nsys(path: Path) -> None:
    con = sqlite3.connect(path)
    c = con.cursor()
    c.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    c.execute(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,"
        " color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,"
        " int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT)"
    )
    c.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER,"
        " streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,"
        " mangledName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER)"
    )
    c.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER,"
        " streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,"
        " deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER)"
    )
    c.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "ntt_msm_h partition=3 worker=1"), (2, "fr_mul"), (3, "void fr_mul(unsigned int*)"), (4, "zkgpu")])
    gtid = (1234 << 24) | 77
    c.executemany(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (0, None, 75, "zkgpu", gtid, None, 5),  # domain create
            (1000, 5000, 59, None, gtid, 1, 5),  # push/pop range, text via StringIds
            (1200, 1800, 60, "batch_add p3 w1", gtid, None, 5),  # zkgpu.pipeline.trace label form
            (1300, None, 34, "a mark", gtid, None, 0),  # mark: no end, skipped
        ],
    )
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, demangledName, shortName) VALUES (2000, 2600, 0, 7, 3, 2)")
    c.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, bytes, copyKind, srcKind, dstKind) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(1000, 1500, 0, 13, 500_000, 1, 1, 3), (3000, 3100, 0, 14, 1_000_000, 1, 2, 3), (4000, 4010, 0, 14, 64, 2, 3, 2)],
    )
    con.commit()
    con.close()


def test_read_nsys_sqlite(tmp_path):
    db = tmp_path / "prof.sqlite"
    _make_nsys(db)
    ev = read_nsys_sqlite(db, run="prof")
    pd.testing.assert_frame_equal(ev, normalize_events(ev))
    assert (ev["source"] == "nsys").all() and (ev["run"] == "prof").all()
    nv = ev[ev["phase"].isin(["ntt_msm_h", "batch_add"])].set_index("phase")
    assert nv.at["ntt_msm_h", "start_ns"] == 1000 and nv.at["ntt_msm_h", "end_ns"] == 5000
    assert nv.at["ntt_msm_h", "partition"] == 3 and nv.at["ntt_msm_h", "worker"] == 1
    assert nv.at["batch_add", "partition"] == 3 and nv.at["batch_add", "worker"] == 1 and pd.isna(nv.at["batch_add", "gpu"])
    assert "domain=zkgpu" in nv.at["ntt_msm_h", "detail"] and "tid=77" in nv.at["ntt_msm_h", "detail"]
    assert "a mark" not in " ".join(ev["detail"].tolist())
    k = ev[ev["phase"] == "kernel"].iloc[0]
    assert k["gpu"] == 0 and k["gpu_ms"] == pytest.approx(0.0006) and "name=fr_mul" in k["detail"]
    h = ev[ev["phase"] == "memcpy_htod"].sort_values("start_ns")
    assert h["bytes"].tolist() == [500_000, 1_000_000]
    assert "src=pageable" in h["detail"].iloc[0] and "src=pinned" in h["detail"].iloc[1]
    assert (ev["phase"] == "memcpy_dtoh").sum() == 1
    assert len(ev) == 6


def test_read_nsys_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_nsys_sqlite(tmp_path / "none.sqlite")
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a database")
    with pytest.raises(ValueError, match="not an SQLite"):
        read_nsys_sqlite(bad)
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).execute("CREATE TABLE other (x INTEGER)").connection.close()
    with pytest.raises(ValueError, match="none of the nsys tables"):
        read_nsys_sqlite(empty)


# ---------------------------------------------------------------- CLI

def test_parse_cli_seed(tmp_path):
    out = tmp_path / "seed.parquet"
    res = CliRunner().invoke(parse_command, [str(SEED), "--out", str(out), "--run", "seed"])
    assert res.exit_code == 0, res.output
    assert "4 partitions" in res.output and "unknown lines: 0" in res.output
    assert "2825" in res.output and "404" in res.output  # residual 3425 - 2825 - 196
    ev = pd.read_parquet(out)
    assert len(ev) == 12 and set(ev["run"]) == {"seed"}


def test_parse_cli_csv_and_partitions(tmp_path):
    out, parts = tmp_path / "ev.csv", tmp_path / "pt.csv"
    res = CliRunner().invoke(parse_command, [str(MIXED), "--out", str(out), "--partitions-out", str(parts)])
    assert res.exit_code == 0, res.output
    assert "unknown lines: 3" in res.output
    assert len(pd.read_csv(parts)) == 2 and len(pd.read_csv(out)) > 10


def test_parse_cli_bad_suffix(tmp_path):
    res = CliRunner().invoke(parse_command, [str(SEED), "--out", str(tmp_path / "x.json")])
    assert res.exit_code != 0 and ".parquet or .csv" in res.output


def test_parse_registered_in_main_cli():
    import click

    from zkgpu.app.cli import main
    from zkgpu.app.parse_cmd import parse_command

    ctx = click.Context(main)
    assert "parse" in main.list_commands(ctx) and main.get_command(ctx, "parse") is parse_command  # loaded on first use


def test_sequential_placement_shares_timeline_base():
    """Counts differ (a GPU_START whose CUZK lines are missing): sequential, from the first GPU_START."""
    lines = [
        "TIMELINE,500,GPU_START,j,worker=0,partition=0",
        "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=100",
        "CUZK_TIMING: gpu_tid=0 tail_msm_ms=10 gpu_total_ms=120",
        "TIMELINE,640,GPU_START,j,worker=1,partition=1",
        "TIMELINE,700,GPU_END,j,worker=0,partition=0,gpu_ms=200",
    ]
    ev = to_events(parse_lines(lines))
    ntt = ev[ev["phase"] == "ntt_msm_h"].iloc[0]
    assert ntt["start_ns"] == 500 * 10**6 and "placement=sequential" in ntt["detail"] and pd.isna(ntt["worker"])
    assert ev[ev["phase"] == "prove"]["start_ns"].tolist() == [500 * 10**6]


@pytest.mark.parametrize("line", ["CUZK_TIMING: prep_msm_ms=1e400", "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=-5",
                                  "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=" + "9" * 400])
def test_corrupt_durations_do_not_break_to_events(line):
    ev = to_events(parse_lines([line, "CUZK_TIMING: gpu_tid=0 tail_msm_ms=5 gpu_total_ms=9"]))
    assert (ev["end_ns"] >= ev["start_ns"]).all()


def test_parse_cli_never_overwrites(tmp_path):
    from click.testing import CliRunner

    log = tmp_path / "a.log"
    log.write_text("CUZK_TIMING: prep_msm_ms=5\n")
    out = tmp_path / "e.csv"
    out.write_text("precious\n")
    res = CliRunner().invoke(parse_command, [str(log), "--out", str(out)])
    assert res.exit_code != 0 and "never overwrites" in res.output
    assert out.read_text() == "precious\n"
