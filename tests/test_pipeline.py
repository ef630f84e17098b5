"""zkgpu.pipeline on the CPU: real threads, per-GPU mutex, prep barrier, finalizers; results
against independent references; event-table invariants; faults, KeyboardInterrupt, no truncation."""

from __future__ import annotations

import itertools
import re
import signal
import threading
import time
import types

import numpy as np
import pandas as pd
import pytest
from test_trace import CountingNvtx, line_kind

from zkgpu.arith.field import FR, fr_from_ints, fr_to_ints
from zkgpu.core.events import COLUMNS
from zkgpu.gpu.msm import precomp as msm_precomp
from zkgpu.gpu.msm.pippenger import msm_cpu as cpu_msm  # the reference MSM (arkworks), not the pipeline's path
from zkgpu.gpu.msm.pippenger import prep_msm
from zkgpu.pipeline import Density, PipelineConfig, PipelineInterrupted, prepare_backend, run_pipeline
from zkgpu.pipeline.cpu_backend import cpu_compute_h
from zkgpu.pipeline.gpu_backend import GpuBackend, precomp_windows
from zkgpu.pipeline.split import prep_partition, splits
from zkgpu.pipeline.sync import PrepFailed
from zkgpu.pipeline.synthesis import synthesize_arrays

PIPE_THREADS = ("synth-", "gpu0-worker", "prep_msm-", "finalizer-")


def cfg(**kw) -> PipelineConfig:
    base = dict(n=1 << 6, partitions=3, device="cpu", synth_workers=2, gw=2, timeout_s=20.0, b_g2_terms=4)
    base.update(kw)
    return PipelineConfig(**base)


@pytest.fixture(scope="module")
def prepared():
    return prepare_backend(cfg())


def run_bounded(config: PipelineConfig, limit: float = 60.0, **kw):
    """run_pipeline in a thread; fail (instead of hanging CI) if it does not end within limit s."""
    out: dict = {}

    def target():
        try:
            out["r"] = run_pipeline(config, **kw)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread, which re-raises or checks it
            out["e"] = e

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(limit)
    assert not th.is_alive(), f"pipeline did not finish within {limit} s"
    return out.get("r"), out.get("e")


def no_pipeline_threads_left() -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not [t for t in threading.enumerate() if t.name.startswith(PIPE_THREADS)]:
            return True
        time.sleep(0.05)
    return False


def reference(config, circuit, backend, p):
    """H, L, A, B_G1 straight from the definitions: full MSMs (no 0/1 split) over the same bases."""
    a, b, c, aux = synthesize_arrays(config, p)
    h = cpu_compute_h(a, b, c)
    bs = backend.bases
    return {
        "h": cpu_msm(bs["h"], h),
        "l": cpu_msm(bs["l"], aux),
        "a": cpu_msm(bs["a"], np.concatenate([circuit.inp, aux[circuit.a_aux_density]])),
        "b_g1": cpu_msm(bs["b_g1"], np.concatenate([circuit.inp[circuit.b_inp_density], aux[circuit.b_aux_density]])),
    }


# ----------------------------------------------------------------------------------------------
# configuration, synthesis, prep_msm
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, exc, match",
    [
        (dict(n=100), ValueError, "power of two"),
        (dict(n=2), ValueError, "PipelineConfig.n"),
        (dict(gw=0), ValueError, "gw"),
        (dict(gw=2.0), TypeError, "gw"),
        (dict(transfer="mapped"), ValueError, "transfer"),
        (dict(lock_scope="wide"), ValueError, "lock_scope"),
        (dict(h2d_stage="early"), ValueError, "PipelineConfig.h2d_stage must be one of .*'early'"),
        (dict(msm_bases="fixed"), ValueError, "PipelineConfig.msm_bases must be one of .*'fixed'"),
        (dict(device="tpu"), ValueError, "device"),
        (dict(transfer="registered"), ValueError, "registered"),
        (dict(density=Density(zero=0.7, one=0.5)), ValueError, "zero \\+"),
        (dict(timeout_s=0), ValueError, "timeout_s"),
        (dict(partitions=0), ValueError, "partitions"),
    ],
)
def test_config_validation(kw, exc, match):
    with pytest.raises(exc, match=match):
        cfg(**kw)


def test_config_defaults_and_names():
    c = PipelineConfig(device="cpu")
    assert c.n == 1 << 23 and c.gw == 2 and c.transfer == "pageable" and c.lock_scope == "coarse"
    assert c.run_name == "pageable-coarse-gw2-n23-cpu" and c.abc_bytes == 3 * (1 << 23) * 32
    assert c.with_(gw=1).gw == 1
    # the H2D stage: upstream's in_lock by default; resident and submit always copy before the mutex
    assert c.h2d_stage == "in_lock" and not c.h2d_pre_lock
    assert c.with_(h2d_stage="pre_lock").h2d_pre_lock and c.with_(h2d_stage="pre_lock").run_name.endswith("-h2d_pre_lock")
    assert c.with_(transfer="resident").h2d_pre_lock and c.with_(lock_scope="submit").h2d_pre_lock
    assert c.msm_bases == "plain" and c.with_(msm_bases="precomputed").run_name.endswith("-msm_precomp")


def test_cpu_backend_runs_precomputed_bases_as_plain(prepared):
    """The CPU reference has no tables: msm_bases="precomputed" gives the plain run's results."""
    plain = run_pipeline(cfg(partitions=2), prepared=prepared)
    pre = run_pipeline(cfg(partitions=2, msm_bases="precomputed"), prepared=prepared)
    assert plain.ok and pre.ok
    for p in range(2):
        for k in ("h", "l", "a", "b_g1"):
            assert np.array_equal(getattr(plain.partitions[p], k), getattr(pre.partitions[p], k)), (p, k)


def test_precomp_windows_rule():
    """H at window_bits(n); the tails at window_bits of their expected significant rows (synthetic), or of all rows (real)."""
    c = PipelineConfig(n=1 << 22, device="cpu")
    sizes = {"h": 1 << 22, "l": 1 << 21, "a": 1 << 21, "b_g1": 1 << 19}
    w = precomp_windows(c, sizes)
    assert w["h"] == msm_precomp.window_bits(1 << 22) == 20
    assert w["l"] == msm_precomp.window_bits(round(c.density.full * (1 << 21)))
    assert set(w) == {"h", "l", "a", "b_g1"} and all(msm_precomp.MIN_C <= v <= msm_precomp.MAX_C for v in w.values())


def test_precomputed_tables_that_do_not_fit_are_refused_in_one_line(monkeypatch):
    """GpuBackend's setup check (no GPU needed: a fake device with 1 GB free): tables + gw x (workspace + a/b/c)."""
    be = object.__new__(GpuBackend)
    be.config = PipelineConfig(n=1 << 22, device="cpu", msm_bases="precomputed")
    be._mont = {nm: types.SimpleNamespace(shape=(size, 24)) for nm, size in
                {"h": 1 << 22, "l": 1 << 21, "a": 1 << 21, "b_g1": 1 << 19}.items()}
    be.cp = None  # nothing of CuPy is needed before the check
    monkeypatch.setattr(msm_precomp, "free_bytes", lambda: 10**9)
    with pytest.raises(ValueError, match=r"msm_bases='precomputed': the tables \(\d+\.\d\d GB at windows .*'h': 20.*1\.00 GB free") as e:
        be._build_tables()
    assert "\n" not in str(e.value)


def test_synthesis_density_canonical_and_deterministic():
    c = cfg(n=1 << 12)
    a, b, c_, aux = synthesize_arrays(c, 3)
    a2, *_ = synthesize_arrays(c, 3)
    a3, *_ = synthesize_arrays(c, 4)
    assert np.array_equal(a, a2) and not np.array_equal(a, a3)
    for arr in (a, b, c_, aux):
        assert all(v < FR.modulus for v in fr_to_ints(arr[:200]))
    zero = (aux == 0).all(1).mean()
    one = ((aux[:, 0] == 1) & (aux[:, 1:] == 0).all(1)).mean()
    assert abs(zero - 0.45) < 0.05 and abs(one - 0.50) < 0.05


def test_prep_msm_split_edge_cases():
    r = FR.modulus
    vals = [0, 1, r - 1, 2, 1, 0, 1 << 200, 1] + [1] * 60 + [0, 5]
    pr = prep_msm(fr_from_ints(vals))
    ones = [i for i, v in enumerate(vals) if v == 1]
    sig = [i for i, v in enumerate(vals) if v not in (0, 1)]
    bits = np.unpackbits(pr.bitmap.view(np.uint8), bitorder="little")
    assert pr.bitmap.dtype == np.uint64 and pr.bitmap.size == 2
    assert list(np.flatnonzero(bits)) == ones and pr.ones == len(ones)
    assert list(pr.sig_indices) == sig and fr_to_ints(pr.sig_scalars) == [vals[i] for i in sig]
    assert splits(pr)  # 4 significant of 70
    dense = prep_msm(fr_from_ints([5, 6, 7, 1]))
    assert not splits(dense)  # more than half significant -> one full MSM, as upstream
    assert prep_msm(fr_from_ints([1])).significant == 0


# ----------------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "gw, scope, transfer, stage",
    [(1, "coarse", "pageable", "in_lock"), (2, "coarse", "pinned_pool", "in_lock"), (2, "narrow", "pageable", "in_lock"), (1, "narrow", "pinned_pool", "in_lock"),
     (2, "coarse", "resident", "in_lock"), (2, "submit", "pinned_pool", "in_lock"), (3, "submit", "pageable", "in_lock"),
     (2, "narrow", "pinned_pool", "pre_lock"), (3, "narrow", "pinned_pool", "pre_lock"), (2, "coarse", "pageable", "pre_lock"), (2, "none", "pinned_pool", "pre_lock")],
)
def test_results_equal_reference(prepared, gw, scope, transfer, stage):
    c = cfg(gw=gw, lock_scope=scope, transfer=transfer, h2d_stage=stage)
    res, err = run_bounded(c, prepared=prepared)
    assert err is None, err
    assert res.ok and res.errors == [] and not res.interrupted
    circuit, backend = prepared
    for p in range(c.partitions):
        ref = reference(c, circuit, backend, p)
        got = res.partitions[p]
        assert got.status == "ok"
        for k in ("h", "l", "a", "b_g1"):
            assert np.array_equal(getattr(got, k), ref[k]), (p, k)
        assert isinstance(got.b_g2, bytes) and len(got.b_g2) == 96
    assert no_pipeline_threads_left()
    if transfer == "pinned_pool":
        st = res.pool_stats
        assert st["checkouts"] == st["checkins"] == 3 * c.partitions and st["buffers_in_use"] == 0
    h2d = res.events[res.events.phase == "h2d"]
    early = c.h2d_pre_lock  # a/b/c copied before the mutex (h2d_stage="pre_lock", resident, submit)
    assert early == (stage == "pre_lock" or transfer == "resident" or scope == "submit")
    want = "pre_lock" if early else "ntt_msm_h"
    assert len(h2d) == c.partitions and h2d["detail"].str.contains(f"stage={want}").all()
    if early:  # the copy inside the partition's pre_lock phase, done before its first mutex_wait begins
        first_wait = res.events[res.events.phase == "mutex_wait"].groupby("partition")["start_ns"].min()
        pre = res.events[res.events.phase == "pre_lock"].set_index("partition")
        for _, r in h2d.iterrows():
            assert r.end_ns <= first_wait[r.partition] and pre.loc[r.partition, "start_ns"] <= r.start_ns <= r.end_ns <= pre.loc[r.partition, "end_ns"]
    held = _intervals(res.events, "mutex_held")
    inside = [any(hs <= s and e <= he and hp == p for hs, he, hp, _ in held) for s, e, p, _ in _intervals(res.events, "h2d")]
    assert all(inside) == (not early) and any(inside) == (not early)
    waits = _intervals(res.events, "gpu_wait")
    assert len(waits) == (c.partitions if scope == "submit" else 0)
    for s, e, p, _ in waits:  # outside the mutex, after the partition's last submission
        assert not any(hs < e and s < he for hs, he, _, _ in held), p
        assert max(he for _, he, hp, _ in held if hp == p) <= s


def test_non_split_path_and_other_density(prepared):
    # 60% full-size values: more than half significant -> no batch add, full "tail" MSM (upstream)
    c = cfg(density=Density(zero=0.2, one=0.2), partitions=1, gw=1)
    circuit, backend = prepare_backend(c)
    res = run_pipeline(c, prepared=(circuit, backend))
    ref = reference(c, circuit, backend, 0)
    for k in ("h", "l", "a", "b_g1"):
        assert np.array_equal(getattr(res.partitions[0], k), ref[k]), k


def test_h_and_l_against_py_ecc():
    """A second, fully independent check at tiny n: py_ecc's affine arithmetic."""
    from py_ecc import bls12_381 as E
    from py_ecc.fields import bls12_381_FQ as FQ

    from zkgpu.arith.field import fq_to_ints

    c = cfg(n=8, aux_ratio=1.0, partitions=1, gw=1)
    circuit, backend = prepare_backend(c)
    res = run_pipeline(c, prepared=(circuit, backend))
    a, b, c_, aux = synthesize_arrays(c, 0)
    h = cpu_compute_h(a, b, c_)

    def to_pt(row):
        x, y = fq_to_ints(row.reshape(2, 6))
        return (FQ(x), FQ(y))

    def msm(points, scalars):
        acc = None
        for i in range(points.shape[0]):
            acc = E.add(acc, E.multiply(to_pt(points[i]), scalars[i])) if acc is not None else E.multiply(to_pt(points[i]), scalars[i])
        return acc

    for key, pts, sc in (("h", backend.bases["h"], fr_to_ints(h)), ("l", backend.bases["l"], fr_to_ints(aux))):
        want = msm(pts, sc)
        got = res.partitions[0].__getattribute__(key)
        assert to_pt(got) == (want[0], want[1]) if want is not None and not E.is_inf(want) else not got.any()


# ----------------------------------------------------------------------------------------------
# logs and the event table
# ----------------------------------------------------------------------------------------------
def test_logs_parse_and_identities(prepared, tmp_path):
    # gw=1: zkgpu.analysis.logs groups CUZK_TIMING lines into partitions exactly only with one worker per
    # GPU (its docstring); the gw=2 runs below check that every line still parses.
    c = cfg(log_path=tmp_path / "run.log", events_path=tmp_path / "ev.parquet", partitions=4, gw=1)
    res = run_pipeline(c, prepared=prepared)
    lines = (tmp_path / "run.log").read_text().splitlines()
    assert lines == res.log_lines
    bad = [x for x in lines if line_kind(x) is None]
    assert not bad, bad[:5]
    text = "\n".join(lines)
    for pat, count in [
        (r"^CUZK_TIMING: prep_msm_ms=\d+$", 4),
        (r"^CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=\d+$", 4),
        (r"^CUZK_NTT_H: ", 4),
        (r"^CUZK_TIMING: mutex_held_ms=\d+ total_start_fn_ms=\d+$", 4),
        (r"^TIMELINE,\d+,GPU_END,", 4),
        (r"partition synthesis complete partition=\d+ synth_ms=\d+ is_pinned=false$", 4),
        (r"FIN_TIMING finalizer partition job_id=\S+ partition=\d+ finish_ms=\d+ drop_res_ms=\d+ lock_wait_ms=\d+ process_ms=\d+ total_ms=\d+$", 4),
        (r"GPU_TIMING hot_path pre-prove overhead worker_id=\d+ partition=\d+ status_ms=\d+ fail_check_ms=\d+ mark_busy_ms=\d+ total_overhead_ms=\d+$", 4),
    ]:
        assert len(re.findall(pat, text, flags=re.M)) == count, pat
    # the parquet file is the normalized event table
    ev = pd.read_parquet(tmp_path / "ev.parquet")
    assert list(ev.columns) == COLUMNS and len(ev) == len(res.events)
    assert set(ev["phase"]) >= {"synthesize", "gpu_queue", "prove", "prep_msm", "b_g2_msm", "mutex_wait", "ntt_msm_h", "h2d", "barrier_wait", "batch_add", "tail_msm", "mutex_held", "finalize", "tracker_lock", "malloc_trim"}
    assert (ev.loc[ev.phase == "h2d", "bytes"] == 3 * c.n * 32).all()
    # round trip through zkgpu.analysis.logs when present
    logs = pytest.importorskip("zkgpu.analysis.logs")
    parsed = logs.parse_lines(lines)
    s = parsed.summary()
    assert s["unknown"] == 0 and s["malformed"] == 0 and s["timeline"] == 4 * 6
    part = logs.partition_table(parsed)
    assert len(part) == 4
    # cuzk identities: gpu_total ~ ntt + barrier + batch + tail (integer ms each)
    for _, r in part.iterrows():
        parts = r["ntt_msm_h_ms"] + r["barrier_wait_ms"] + r["batch_add_ms"] + r["tail_msm_ms"]
        assert abs(r["gpu_total_ms"] - parts) <= 5


def _intervals(ev, phase, **eq):
    sel = ev[ev.phase == phase]
    for k, v in eq.items():
        sel = sel[sel[k] == v]
    return sorted(zip(sel.start_ns, sel.end_ns, sel.partition, sel.worker, strict=True))


def _check_mutex_exclusive(ev):
    for g in ev["gpu"].dropna().unique():
        held = _intervals(ev, "mutex_held", gpu=g)
        for (_, e0, *_), (s1, *_) in itertools.pairwise(held):
            assert e0 <= s1, "mutex_held intervals of one GPU overlap"


@pytest.mark.parametrize("scope", ["coarse", "narrow", "submit"])
def test_mutex_exclusive_and_barrier_scope(prepared, scope):
    c = cfg(lock_scope=scope, partitions=4, gw=2)
    res = run_pipeline(c, prepared=prepared)
    assert [x for x in res.log_lines if line_kind(x) is None] == []
    ev = res.events
    _check_mutex_exclusive(ev)
    held = _intervals(ev, "mutex_held")
    assert len(held) == (4 if scope == "coarse" else 8)
    for s, e, p, _ in _intervals(ev, "barrier_wait"):
        inside = any(hs <= s and e <= he and hp == p for hs, he, hp, _ in held)
        assert inside == (scope == "coarse"), (scope, p)
    for p in range(4):
        pe = ev[ev.partition == p]
        t = {ph: (r.start_ns, r.end_ns) for ph, r in pe.groupby("phase").agg(start_ns=("start_ns", "min"), end_ns=("end_ns", "max")).iterrows()}
        # cuzk order inside the start half
        assert t["ntt_msm_h"][1] <= t["barrier_wait"][0] <= t["barrier_wait"][1] <= t["batch_add"][0] <= t["tail_msm"][0]
        assert t["prep_msm"][1] <= t["barrier_wait"][1]  # the barrier releases only after prep
        assert t["prep_msm"][1] <= t["b_g2_msm"][0]  # b_g2 after prep, same thread
        assert t["synthesize"][1] <= t["gpu_queue"][0] and t["gpu_queue"][1] <= t["prove"][0]
        assert t["finalize"][1] <= t["prove"][1] + 1 and t["tail_msm"][1] <= t["finalize"][0]
    assert (ev["end_ns"] >= ev["start_ns"]).all()


def test_two_emulated_gpus_have_independent_mutexes(prepared):
    res = run_pipeline(cfg(partitions=6, gpus=2, gw=2), prepared=prepared)
    assert res.ok
    ev = res.events
    assert set(ev.loc[ev.phase == "mutex_held", "gpu"]) <= {0, 1}
    _check_mutex_exclusive(ev)


def test_nvtx_balanced_in_a_run(prepared):
    nv = CountingNvtx()
    res = run_pipeline(cfg(partitions=3), prepared=prepared, nvtx=nv)
    assert res.ok and nv.balanced() and nv.pushes > 30


# ----------------------------------------------------------------------------------------------
# reliability
# ----------------------------------------------------------------------------------------------
_INJECTED = RuntimeError("injected fault")


def _raise_at(step, partition, exc=_INJECTED):
    def hook(s, p, w):
        if s == step and p == partition:
            raise exc

    return hook


@pytest.mark.parametrize("step", ["synthesize", "ntt_msm_h", "barrier_wait", "batch_add", "tail_msm", "prep_msm", "b_g2_msm", "finalize", "gpu_wait"])
@pytest.mark.parametrize("scope", ["coarse", "narrow", "submit"])
def test_fault_fails_only_that_partition(prepared, step, scope):
    if step == "gpu_wait" and scope != "submit":
        pytest.skip("gpu_wait exists only with lock_scope='submit'")
    c = cfg(partitions=4, lock_scope=scope, transfer="pinned_pool", fault_hook=_raise_at(step, 1))
    res, err = run_bounded(c, limit=60, prepared=prepared)
    assert err is None, err
    st = {r.partition: r.status for r in res.partitions}
    assert st == {0: "ok", 1: "failed", 2: "ok", 3: "ok"}, (st, res.errors)
    r1 = res.partitions[1]
    assert "injected fault" in r1.error or (isinstance(r1.exception, PrepFailed) and "injected fault" in repr(r1.exception.__cause__))
    assert len(res.errors) == 1 and res.errors[0].startswith("partition 1:")
    assert res.pool_stats["buffers_in_use"] == 0 and res.pool_stats["checkouts"] == res.pool_stats["checkins"]
    _check_mutex_exclusive(res.events)
    assert no_pipeline_threads_left()
    # a failed step still leaves its event (with the error) and the NVTX ranges balanced
    if step not in ("synthesize",):
        e1 = res.events[(res.events.partition == 1) & (res.events.phase == step)]
        assert len(e1) == 1 and "error=RuntimeError" in e1["detail"].iloc[0]


def test_prep_timeout_becomes_an_error_not_a_hang(prepared):
    def slow_prep(s, p, w):
        if s == "prep_msm" and p == 0:
            time.sleep(1.5)

    c = cfg(partitions=2, gw=1, timeout_s=0.3, fault_hook=slow_prep)
    res, err = run_bounded(c, limit=30, prepared=prepared)
    assert err is None, err
    assert res.partitions[0].status == "failed" and isinstance(res.partitions[0].exception, TimeoutError)
    assert "partition 0" in res.partitions[0].error and "prep_msm" in res.partitions[0].error
    assert res.partitions[1].status == "ok"


def test_keyboard_interrupt_stops_cleanly(prepared, tmp_path):
    c = cfg(partitions=8, gw=2, transfer="pinned_pool", queue_depth=2, fault_hook=_raise_at("ntt_msm_h", 2, KeyboardInterrupt()), log_path=tmp_path / "r.log", events_path=tmp_path / "r.parquet")
    res, err = run_bounded(c, limit=60, prepared=prepared)
    assert res is None and isinstance(err, PipelineInterrupted) and isinstance(err, KeyboardInterrupt)
    r = err.result
    assert r.interrupted
    st = [p.status for p in r.partitions]
    assert st[2] == "cancelled" and "cancelled" in st[3:] and st.count("ok") < 8
    assert all(s in ("ok", "cancelled") for s in st)
    assert r.pool_stats["buffers_in_use"] == 0
    assert no_pipeline_threads_left()
    assert (tmp_path / "r.log").read_text().splitlines() == r.log_lines
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == len(r.events)


@pytest.mark.parametrize("step", ["prep_msm", "b_g2_msm"])
def test_keyboard_interrupt_in_the_prep_thread_stops_the_run(prepared, step):
    """Ctrl-C raised in the prep_msm thread (before or after it signals the barrier) stops the run
    like one in a GPU worker: PipelineInterrupted, the partition cancelled, no buffer left out."""
    c = cfg(partitions=6, gw=2, transfer="pinned_pool", queue_depth=2, fault_hook=_raise_at(step, 1, KeyboardInterrupt()))
    res, err = run_bounded(c, limit=60, prepared=prepared)
    assert res is None and isinstance(err, PipelineInterrupted), (res, err)
    r = err.result
    assert r.interrupted and r.partitions[1].status == "cancelled"
    assert all(p.status in ("ok", "cancelled") for p in r.partitions)
    assert r.pool_stats["buffers_in_use"] == 0
    assert no_pipeline_threads_left()


def test_ctrl_c_in_the_main_thread_stops_cleanly(prepared):
    import _thread

    fired = threading.Event()

    def hook(s, p, w):
        if s == "ntt_msm_h" and p == 1 and not fired.is_set():
            fired.set()
            _thread.interrupt_main()  # what Ctrl-C does: KeyboardInterrupt in the main thread

    # enough partitions that a simulated Ctrl-C delivered late (the main thread handles it only
    # when it next runs Python code) still lands before the run could finish. interrupt_main() does nothing
    # while SIGINT is ignored, which an earlier test's library can leave behind in a shared test process
    # (ipykernel's kernel app ignores SIGINT): Python's own handler for the test's duration, as in a fresh process.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(PipelineInterrupted) as ei:
            run_pipeline(cfg(partitions=32, queue_depth=2, fault_hook=hook), prepared=prepared)
    finally:
        signal.signal(signal.SIGINT, old)
    r = ei.value.result
    assert r.interrupted and "cancelled" in [p.status for p in r.partitions]
    assert no_pipeline_threads_left()


def test_existing_files_are_never_truncated(prepared, tmp_path):
    log = tmp_path / "run.log"
    log.write_text("old log\n")
    with pytest.raises(FileExistsError):
        run_pipeline(cfg(log_path=log), prepared=prepared)
    assert log.read_text() == "old log\n"
    ev = tmp_path / "ev.parquet"
    ev.write_bytes(b"old events")
    fresh_log = tmp_path / "fresh.log"
    with pytest.raises(FileExistsError):
        run_pipeline(cfg(log_path=fresh_log, events_path=ev), prepared=prepared)
    assert ev.read_bytes() == b"old events" and not fresh_log.exists()
    # a run that fails in every partition still writes fresh files and touches nothing else
    boom = cfg(log_path=tmp_path / "f.log", events_path=tmp_path / "f.parquet", fault_hook=lambda s, p, w: (_ for _ in ()).throw(RuntimeError("x")) if s == "ntt_msm_h" else None)
    res = run_pipeline(boom, prepared=prepared)
    assert not res.ok and (tmp_path / "f.log").exists() and (tmp_path / "f.parquet").exists()
    assert log.read_text() == "old log\n" and ev.read_bytes() == b"old events"


def test_pool_reuse_with_backpressure(prepared):
    c = cfg(partitions=4, gw=1, synth_workers=1, queue_depth=1, transfer="pinned_pool")
    res = run_pipeline(c, prepared=prepared)
    st = res.pool_stats
    assert res.ok and st["allocations"] == 3 and st["reuses"] == 9 and st["buffers_in_use"] == 0
    assert sum("pinned pool: checkout (reuse)" in x for x in res.log_lines) == 9


@pytest.mark.gpu
@pytest.mark.parametrize("transfer, scope, prep, tails, stage, msm_bases", [
    ("pageable", "coarse", "cpu", 1, "in_lock", "plain"), ("registered", "coarse", "cpu", 1, "in_lock", "plain"),
    ("pinned_pool", "coarse", "cpu", 1, "in_lock", "plain"), ("resident", "coarse", "cpu", 1, "in_lock", "plain"),
    ("pinned_pool", "submit", "gpu", 1, "in_lock", "plain"), ("pinned_pool", "submit", "gpu", 3, "in_lock", "plain"),
    ("pinned_pool", "narrow", "gpu", 1, "pre_lock", "plain"), ("pageable", "coarse", "cpu", 1, "pre_lock", "plain"),
    ("pinned_pool", "narrow", "gpu", 1, "pre_lock", "precomputed"), ("pinned_pool", "submit", "cpu", 3, "in_lock", "precomputed"),
    ("pinned_pool", "submit", "gpu", 1, "in_lock", "precomputed")])  # the last-mile story's last step
def test_gpu_pipeline_matches_cpu_reference(transfer, scope, prep, tails, stage, msm_bases):
    # submit: results deferred on the device, one stream shared by the workers, a/b/c copied before the mutex;
    # h2d_stage="pre_lock": the copy before the mutex on the worker's own stream, its NTTs after it there;
    # msm_bases="precomputed": every G1 MSM over the tables (tails over device rows with prep=gpu, host rows with cpu)
    c = PipelineConfig(n=1 << 8, partitions=4 if scope == "submit" or stage == "pre_lock" else 2, device="gpu", transfer=transfer, gw=2,
                       b_g2_terms=4, timeout_s=120, lock_scope=scope, prep=prep, tail_streams=tails, h2d_stage=stage, msm_bases=msm_bases)
    circuit, backend = prepare_backend(c)
    if msm_bases == "precomputed":  # the tables and the setup benchmark (what the model scales the MSM phases by)
        assert set(backend.setup_details["precomp_windows"]) == {"h", "l", "a", "b_g1"}
        assert set(backend.setup_details["msm_bench"]) == {"h_plain", "h_precomp", "tail_plain", "tail_precomp"}
    res = run_pipeline(c, prepared=(circuit, backend))
    assert res.ok, res.errors
    cpu_bases = type("B", (), {"bases": {k: np.asarray(v.get() if hasattr(v, "get") else v) for k, v in backend.bases.items()}})()
    for p in range(c.partitions):
        ref = reference(c, circuit, cpu_bases, p)
        for k in ("h", "l", "a", "b_g1"):
            assert np.array_equal(getattr(res.partitions[p], k), ref[k]), (p, k)
    assert res.events["gpu_ms"].notna().any()
    from zkgpu.analysis.metrics import detail_value

    h = res.events[(res.events["phase"] == "h2d") & res.events["detail"].str.contains("stage=ntt_msm_h")]
    if c.h2d_pre_lock:  # copied before the mutex, not inside ntt_msm_h: three event-timed copies, outside mutex_held
        assert h.empty
        pre = res.events[(res.events["phase"] == "h2d") & res.events["detail"].str.contains("stage=pre_lock")]
        assert len(pre) == c.partitions and (pre["bytes"] == 3 * c.n * 32).all() and (pre["gpu_ms"] > 0).all()
        held = _intervals(res.events, "mutex_held")
        assert not any(hs < e and s < he and hp == p for s, e, p, _ in _intervals(res.events, "h2d") for hs, he, hp, _ in held)
    else:  # three event-timed copies per partition; the exposed part never exceeds them
        assert len(h) == c.partitions and (h["bytes"] == 3 * c.n * 32).all()
        exposed, copy = detail_value(h, "exposed_ms"), detail_value(h, "stream_ms")
        assert exposed.notna().all() and (exposed >= 0).all() and (exposed <= copy + 1e-3).all()
        assert (h["gpu_ms"] == copy).all()
    ev = res.events
    syncs = {ph: detail_value(ev[ev.phase == ph], "host_syncs") for ph in ("ntt_msm_h", "batch_add", "tail_msm", "gpu_wait")}
    assert syncs["ntt_msm_h"].notna().all() and syncs["tail_msm"].notna().all()
    if scope == "submit":  # the submission never waits (the MSMs keep their sizes on the device); results read in gpu_wait
        assert (syncs["ntt_msm_h"] == 0).all() and (syncs["batch_add"] == 0).all() and (syncs["tail_msm"] == 0).all()
        assert len(syncs["gpu_wait"]) == c.partitions and (syncs["gpu_wait"] >= 1).all()
        # the GPU phases moved to the GPU clock (where the wait began before the work was done) never
        # overlap: one shared stream runs them one after another, in the order the mutex gave. A
        # partition's rows share one anchor, its wait's return, which is later than the work's end by
        # less than the wait's length (the waiting thread may get the GIL back late while the other
        # worker submits; with no host sync in the submission the partitions' kernels run back to
        # back): rows of two partitions may overlap by at most the longer of their gpu_wait phases.
        moved = ev["detail"].str.contains("clock=gpu", na=False)
        waits = ev[ev.phase == "gpu_wait"]
        assert moved.sum() == detail_value(waits, "gpu_clock").sum()
        slack = dict(zip(waits.partition, waits.end_ns - waits.start_ns, strict=True))
        gpu = ev[moved & ev.phase.isin(["ntt_msm_h", "batch_add", "tail_msm"])]
        rows = list(zip(gpu.start_ns, gpu.end_ns, gpu.partition, strict=True))
        for (s0, e0, p0), (s1, e1, p1) in itertools.combinations(rows, 2):  # 20 us: the events' resolution
            assert min(e0, e1) - max(s0, s1) <= 20_000 + (max(slack[p0], slack[p1]) if p0 != p1 else 0), (p0, p1)
    else:  # the phases read their results inside (at least the H computation's end and the H MSM's point)
        assert (syncs["ntt_msm_h"] >= 1).all() and len(syncs["gpu_wait"]) == 0


@pytest.mark.parametrize("density", [Density(), Density(zero=0.1, one=0.1), Density(zero=0.0, one=1.0, a_aux=1.0, b_aux=0.0)])
def test_prep_partition_equals_prep_of_gathered_vectors(density):
    from zkgpu.pipeline.synthesis import make_circuit
    from zkgpu.pipeline.worker import _msm_scalars

    c = cfg(n=1 << 10, density=density, num_inputs=5)
    circuit = make_circuit(c)
    _, _, _, aux = synthesize_arrays(c, 7)
    got = prep_partition(circuit, aux)
    for name, scalars in _msm_scalars(circuit, aux).items():
        want = prep_msm(scalars)
        g = got[name]
        assert (g.n, splits(g), g.ones, g.zeros, g.significant) == (want.n, splits(want), want.ones, want.zeros, want.significant), name
        assert np.array_equal(g.bitmap, want.bitmap) and np.array_equal(g.sig_indices, want.sig_indices)
        assert np.array_equal(g.sig_scalars, want.sig_scalars), name
