"""Issue 10, CLI and inputs: every error one line on stderr naming the value and the fix, exit 2,
no traceback, nothing created before the checks pass; environment tunables checked where used;
SIGTERM during a recording; replay skips unusable manifests; conversions refuse silent casts.
Each case is a row of RELIABILITY.md."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from zkgpu import pipeline
from zkgpu.analysis import replay
from zkgpu.app import cli, record
from zkgpu.app import pipeline_cmd as pipeline_main
from zkgpu.app.bench import msm as bench_msm
from zkgpu.app.bench import ntt as bench_ntt
from zkgpu.app.cli import main
from zkgpu.arith import curve, domain
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.ntt import transform as ntt

ROOT = Path(__file__).resolve().parent.parent


def _cli(args, env=None, cwd=None, module=("-m", "zkgpu.app.cli")):
    e = dict(os.environ, **(env or {}))
    e.setdefault("ZKGPU_DISABLE_GPU", "1")
    return subprocess.run([sys.executable, *module, *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=120)


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    """In-process CLI calls see no GPU, also on the H200 (the "no GPU" paths are under test)."""
    monkeypatch.setattr(record, "gpu_available", lambda: False)
    monkeypatch.setattr(pipeline_main, "gpu_available", lambda: False)


class _Res:
    def __init__(self, r):
        self.returncode, self.stdout, self.stderr = r.exit_code, r.stdout, r.stderr


def _run(args, command=None):
    """The CLI in-process (CliRunner), as a subprocess-like result."""
    return _Res(CliRunner().invoke(pipeline_main.main if command == "pipeline" else main, args))


def _one_line_error(res, *words):
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    err = res.stderr.strip()
    assert "Traceback" not in res.stderr and "\n" not in err, res.stderr
    assert err.startswith("Error: "), err
    for w in words:
        assert w in err, (w, err)


RECORD_BAD = [
    (["--n", "0"], ["n", "got 0"]),
    (["--n", "24"], ["power of two", "24"]),
    (["--n", "-8"], ["-8"]),
    (["--partitions", "0"], ["partitions", "got 0"]),
    (["--queue-depth", "-1"], ["queue_depth", "-1"]),
    (["--synth-workers", "0"], ["synth_workers", "0"]),
    (["--device", "gpu"], ["--device cpu"]),
    (["--device", "tpu"], ["--device", "tpu"]),
    (["--n", "abc"], ["--n", "abc"]),
    (["--host-load", "-1"], ["--host-load", "-1"]),
    (["--device", "cpu", "--host-load", "100000"], ["--host-load 100000", "available host memory"]),  # 48.8 TiB: was OOM-killed
    (["--scenario", "nope"], ["--scenario", "nope"]),
    (["--device", "cpu", "--partitions", "1000000000"], ["partitions=1000000000", "more than 10000"]),
    (["--device", "cpu", "--synth-workers", "100000"], ["synth_workers=100000", "more than 64"]),
    (["--device", "cpu", "--queue-depth", "100000"], ["queue_depth=100000", "more than 256"]),
]


@pytest.mark.parametrize(("args", "words"), RECORD_BAD)
def test_record_bad_options_one_line_nothing_created(tmp_path, args, words):
    out = tmp_path / "runs"
    res = _run(["record", "--out", str(out), *args])
    _one_line_error(res, *words)
    assert not out.exists()


def test_record_out_is_a_file(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    _one_line_error(_run(["record", "--device", "cpu", "--out", str(f)]), str(f), "folder")


PARSE_BAD = [
    (["nonexistent.log"], ["nonexistent.log"]),
    (["LOG", "--out", "events.txt"], [".parquet or .csv"]),
    (["LOG", "--out", "s.csv", "--partitions-out", "s.csv"], ["same file"]),
    (["LOG", "--out", "LOG.csv"], ["exists"]),
    (["LOG", "--rows", "-1"], ["--rows"]),
    (["LOG", "--out", "dangling.csv"], ["exists"]),
]


@pytest.mark.parametrize(("args", "words"), PARSE_BAD)
def test_parse_bad_options_one_line(tmp_path, args, words):
    log = tmp_path / "a.log"
    log.write_text("CUZK_TIMING: prep_msm_ms=5\n")
    (tmp_path / "a.log.csv").write_text("precious")
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "nowhere")
    args = [str(log) if a == "LOG" else str(log) + ".csv" if a == "LOG.csv" else (str(tmp_path / a) if a.endswith((".csv", ".txt", ".log")) else a) for a in args]
    before = sorted(p.name for p in tmp_path.iterdir())
    _one_line_error(_run(["parse", *args]), *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "a.log.csv").read_text() == "precious"


PIPELINE_BAD = [
    ([], ["--device cpu"]),
    (["--device", "cpu", "--log-n", "-1"], ["--log-n", "-1"]),
    (["--device", "cpu", "--log-n", "40"], ["--log-n", "40"]),
    (["--device", "cpu", "--partitions", "0"], ["--partitions"]),
    (["--device", "cpu", "--transfer", "registered"], ["registered", "device='gpu'"]),
    (["--device", "cpu", "--timeout", "0"], ["--timeout"]),
    (["--device", "cpu", "--gw", "9"], ["--gw", "9"]),
    (["--device", "cpu", "--h2d-stage", "early"], ["--h2d-stage", "early"]),
]


@pytest.mark.parametrize(("args", "words"), PIPELINE_BAD)
def test_python_m_pipeline_bad_options_one_line(args, words):
    _one_line_error(_run(args, "pipeline"), *words)


def test_python_m_pipeline_out_under_a_file(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("a file\n")
    small = ["--device", "cpu", "--log-n", "4", "--partitions", "1", "--transfer", "pageable"]
    _one_line_error(_run([*small, "--out", str(f / "sub")], "pipeline"), "--out", "is a file, not a folder")


def test_python_m_pipeline_failed_partitions_exit_non_zero(tmp_path):
    """ok=False is exit 1 with one stderr line per failed partition. The steps must outlast the
    watchdog's 50 ms look: at 2^11 the CPU reference's synthesis and H computation take hundreds of
    ms, so a 1 ns timeout always catches one (at 2^8 a whole run took 30-70 ms and could finish
    between two looks: exit 0 now and then)."""
    args = ["--device", "cpu", "--log-n", "11", "--partitions", "2", "--transfer", "pageable", "--timeout", "1e-9"]
    res = _run(args, "pipeline")
    assert res.returncode == 1, (res.returncode, res.stderr)
    import re

    m = re.search(r"Error: (\d+) partition\(s\) did not prove", res.stderr)
    assert m and int(m.group(1)) >= 1, res.stderr  # how many beat a 1 ns watchdog depends on the load
    lines = re.findall(r"^pageable-coarse\S*: partition \d+ (?:failed|cancelled) at \S+: \S", res.stderr, re.M)
    assert len(lines) == int(m.group(1)), res.stderr


def test_python_m_pipeline_copies_before_the_mutex(tmp_path):
    args = ["--device", "cpu", "--log-n", "4", "--partitions", "2", "--transfer", "pinned_pool", "--scope", "narrow", "--h2d-stage", "pre_lock", "--out", str(tmp_path)]
    res = _run(args, "pipeline")
    assert res.returncode == 0, res.stderr
    assert "pinned_pool-narrow-gw2-n4-cpu-h2d_pre_lock" in res.stdout


def test_python_m_pipeline_msm_bases(tmp_path):
    # the CPU reference computes the same sums: precomputed bases run as plain there, under their own run name
    args = ["--device", "cpu", "--log-n", "4", "--partitions", "1", "--transfer", "pinned_pool", "--msm-bases", "precomputed", "--out", str(tmp_path)]
    res = _run(args, "pipeline")
    assert res.returncode == 0, res.stderr
    assert "pinned_pool-coarse-gw2-n4-cpu-msm_precomp" in res.stdout
    bad = _run(["--device", "cpu", "--msm-bases", "fixed"], "pipeline")
    assert bad.returncode == 2 and "'fixed' is not one of 'plain', 'precomputed'" in bad.stderr and "Traceback" not in bad.stderr


def test_python_m_pipeline_out_folders_unique_within_a_second(tmp_path):
    args = ["--device", "cpu", "--log-n", "4", "--partitions", "1", "--transfer", "pageable", "--out", str(tmp_path)]
    for _ in range(2):
        res = _run(args, "pipeline")
        assert res.returncode == 0, res.stderr
    assert len(list(tmp_path.iterdir())) == 2


def test_python_m_pipeline_without_gpu_subprocess():
    _one_line_error(_cli([], module=("-m", "zkgpu.app.cli", "pipeline")), "--device cpu")


def test_python_m_pipeline_cpu_default_is_small_and_talks():
    res = _cli(["--device", "cpu", "--partitions", "1", "--transfer", "pageable"], module=("-m", "zkgpu.app.cli", "pipeline"))
    assert res.returncode == 0, res.stderr
    assert "n=2^10" in res.stderr and "running pageable-coarse-gw2-n10-cpu" in res.stderr
    assert "summary" in res.stdout


@pytest.mark.parametrize("value", [7, "4", True])
def test_bad_ntt_radix_is_refused_up_front(value, monkeypatch):
    """A bad radix: configure refuses it naming the value; set directly, only the NTT calls raise."""
    monkeypatch.setattr(ntt, "RADIX", None)
    with pytest.raises(ValueError, match=f"radix must be 2 or 4, got {value!r}"):
        ntt.configure(radix=value)
    assert ntt.radix() == 2
    ntt.configure(radix=4)
    assert ntt.radix() == 4
    monkeypatch.setattr(ntt, "RADIX", value)
    with pytest.raises(ValueError, match=f"radix must be 2 or 4, got {value!r}"):
        ntt.radix()


def test_bad_msm_chunk_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(msm, "CHUNK", msm.CHUNK)
    with pytest.raises(ValueError, match="chunk .* must be a positive integer, got 'lots'"):
        msm.configure(chunk="lots")
    monkeypatch.setattr(msm, "CHUNK", 0)
    with pytest.raises(ValueError, match="must be a positive integer, got 0"):
        msm._chunk_size()


def test_bench_parse_bad_sizes_and_csv(tmp_path):
    _one_line_error(_run(["bench", "parse", "--sizes", "abc"]), "--sizes")
    _one_line_error(_run(["bench", "parse", "--sizes", "0"]), "--sizes")
    _one_line_error(_run(["bench", "parse", "--sizes", "100000000000"]), "--sizes 100000000000", "at most 10000000")
    _one_line_error(_run(["bench", "parse", "--sizes", "500", "--out", str(tmp_path / "bp.txt")]), "bp.txt", ".csv")
    (tmp_path / "x.csv").write_text("a file\n")
    _one_line_error(_run(["bench", "parse", "--sizes", "500", "--out", str(tmp_path / "x.csv" / "bp.csv")]), "is a file, not a folder")
    res = CliRunner().invoke(main, ["bench", "parse", "--sizes", "500,1000"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("lines,bytes,parse_s") and len(lines) == 3


def test_bench_msm_bad_sizes_named_before_the_gpu_check(tmp_path):
    # parsed before the GPU check: named on any machine, and no run folder is made for them
    for bad in ("x", "0", "40", "22,-3"):
        _one_line_error(_run(["bench", "msm", "--sizes", bad, "--out", str(tmp_path)]), "--sizes", repr(bad))
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("cmd", [["bench", "h2d"], ["bench", "msm"], ["bench", "ntt"], ["bench", "load"]])
def test_gpu_benchmarks_without_gpu_one_line(cmd):
    _one_line_error(_cli(cmd), "GPU")  # a subprocess with ZKGPU_DISABLE_GPU=1 (also on the H200)


def test_internal_errors_are_one_line_without_traceback(monkeypatch):
    def boom(as_json):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli.info, "callback", boom)
    res = CliRunner().invoke(main, ["info"])
    assert res.exit_code == 1 and "internal error ZeroDivisionError" in res.output and "Traceback" not in res.output


# ------------------------------------------------------------------ record: interruptions, MSM rows


def _raise_at(step, partition, exc):
    def hook(s, p, w):
        if s == step and p == partition:
            raise exc

    return hook


def test_interrupt_inside_a_scenario_is_in_the_manifest(tmp_path, monkeypatch):
    real = pipeline.run_pipeline

    def wrapped(cfg, **kw):
        if cfg.run == "pinned_pool":
            cfg = cfg.with_(fault_hook=_raise_at("ntt_msm_h", 1, KeyboardInterrupt("signal 15")))
        return real(cfg, **kw)

    monkeypatch.setattr(pipeline, "run_pipeline", wrapped)
    with pytest.raises(KeyboardInterrupt):
        record.record(out=tmp_path, device="cpu", n=32, partitions=3, scenarios=["baseline", "pinned_pool", "pinned_gw1"], repeats=1)
    (run_dir,) = tmp_path.iterdir()
    rec = replay.Recording.open(run_dir)
    cut = rec.scenario("pinned_pool")
    assert "interrupted" in cut and cut["log"] == "logs/pinned_pool.log" and cut["events"] == "events/pinned_pool.parquet"
    assert cut["partition_status"]["1"] == "cancelled" and (run_dir / cut["log"]).is_file()
    assert "not run" in rec.scenario("pinned_gw1")["skipped"]


@pytest.mark.slow
def test_sigterm_during_record_writes_the_manifest(tmp_path):
    out = tmp_path / "runs"
    env = dict(os.environ, ZKGPU_DISABLE_GPU="1")
    proc = subprocess.Popen([sys.executable, "-m", "zkgpu.app.cli", "record", "--device", "cpu", "--n", "256", "--partitions", "400", "--repeats", "1", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(out.glob("*/logs/baseline.log")):
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    (run_dir,) = out.iterdir()
    m = json.loads((run_dir / "manifest.json").read_text())
    assert "signal 15" in m["interrupted"]
    base = m["scenarios"]["baseline"]
    assert "interrupted" in base and base["log"] == "logs/baseline.log", base
    assert "Traceback" not in err


def test_record_benchmarks_write_msm_rows(tmp_path, monkeypatch):
    """record's MSM benchmark calls zkgpu.app.bench.msm.run_benchmark (no look-up that can silently skip it)."""
    calls = []

    def fake(min_log, max_log, repeat):
        calls.append((min_log, max_log, repeat))
        return [{"log2_n": lg, "mode": "device", "scalars": "uniform", "median_ms": float(lg)} for lg in range(min_log, max_log + 1)]

    monkeypatch.setattr(bench_msm, "run_benchmark", fake)
    monkeypatch.setattr(bench_ntt, "run_benchmark", lambda min_log, max_log, repeat: [{"log_n": min_log, "median_ms": 1.0}])
    notes: list[str] = []
    out = record._benchmarks(tmp_path, False, notes)
    assert out == {"ntt": "bench/ntt.csv", "msm": "bench/msm.csv"} and not notes
    df = pd.read_csv(tmp_path / "bench/msm.csv")
    assert df["log2_n"].tolist() == list(range(12, 21)) and calls == [(12, 20, 10)]


@pytest.mark.gpu
def test_msm_run_benchmark_rows_on_the_gpu():
    rows = bench_msm.run_benchmark(min_log=10, max_log=11, repeat=2, phases=True)
    modes = {(r["log2_n"], r["mode"], r["scalars"]) for r in rows}
    assert {(10, "device", "uniform"), (10, "pinned_h2d", "uniform"), (11, "device", "porep")} <= modes
    assert all(r["median_ms"] > 0 for r in rows)


@pytest.mark.gpu
def test_gpu_record_has_msm_benchmark_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(record, "gpu_available", lambda: True)  # undo the autouse no_gpu fixture
    monkeypatch.setitem(record.BENCHMARKS, "ntt", (bench_ntt, (10, 11), (10, 11)))  # small: a seconds-long test
    monkeypatch.setitem(record.BENCHMARKS, "msm", (bench_msm, (10, 11), (10, 11)))
    run_dir = record.record(out=tmp_path, device="gpu", n=1 << 12, partitions=2, quick=True, scenarios=["baseline"], sweep=False)
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["benchmarks"]["msm"] == "bench/msm.csv", m["notes"]
    df = pd.read_csv(run_dir / "bench/msm.csv")
    assert set(df["log2_n"]) == {10, 11} and (df["median_ms"] > 0).all()


# ------------------------------------------------------------------ replay, conversions


@pytest.mark.parametrize("content", ["[]", '{"scenarios": []}', '{"scenarios": {"a": 3}}', '{"environment": "x"}', "not json", "\xff\xfe"])
def test_replay_skips_unusable_manifests_with_a_warning(tmp_path, content):
    good = tmp_path / "cpu-20260101-record"
    shutil_copy_manifest(good)
    bad = tmp_path / "cpu-20260102-record"
    bad.mkdir()
    (bad / "manifest.json").write_bytes(content.encode("latin-1"))
    with pytest.warns(UserWarning, match=str(bad)):
        recs = replay.find_recordings(tmp_path)
    assert [r.path for r in recs] == [good]


def shutil_copy_manifest(d: Path) -> None:
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"kind": "record", "device": "cpu", "date_utc": "2026-01-01", "scenarios": {}, "environment": {}}))


@pytest.mark.parametrize("arr", [np.zeros((1, 12), dtype=np.float64), np.zeros((1, 12), dtype=np.int64), [[0] * 12], np.zeros((1, 12), dtype=np.uint32)])
def test_g1_to_ints_refuses_silent_conversions(arr):
    with pytest.raises(TypeError, match="uint64"):
        curve.g1_to_ints(arr)


def test_g1_to_ints_shape():
    with pytest.raises(ValueError, match=r"\(n, 12\)"):
        curve.g1_to_ints(np.zeros((2, 6), dtype=np.uint64))


def test_parse_a_fifo_and_an_output_under_a_file(tmp_path):
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    _one_line_error(_run(["parse", str(fifo)]), "not a regular file")
    log = tmp_path / "a.log"
    log.write_text("CUZK_TIMING: prep_msm_ms=5\n")
    _one_line_error(_run(["parse", str(log), "--out", str(log / "e.csv")]), "is a file, not a folder")


def test_record_run_folder_cannot_be_created(tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(record, "new_run_dir", refuse)
    _one_line_error(_run(["record", "--device", "cpu", "--out", str(tmp_path / "x")]), "cannot create the run folder", "Permission denied")


def test_record_with_only_skipped_scenarios_is_refused(tmp_path):
    out = tmp_path / "runs"
    _one_line_error(_run(["record", "--device", "cpu", "--scenario", "registered", "--out", str(out)]), "registered", "needs a GPU")
    assert not out.exists()


def test_report_bad_mode_and_unknown_notebook(monkeypatch):
    monkeypatch.setenv("ZKGPU_MODE", "bogus")
    _one_line_error(_run(["report"]), "ZKGPU_MODE", "bogus", "--mode replay")
    monkeypatch.delenv("ZKGPU_MODE")
    _one_line_error(_run(["report", "--only", "zzz"]), "--only zzz", "01_symptom")


@pytest.mark.parametrize("arr", [np.zeros((1, 12), dtype=np.float64), np.zeros((1, 12), dtype=np.int64), np.zeros((1, 6), dtype=np.uint64)])
def test_g1_to_arkworks_unchecked_still_refuses_casts(arr):
    with pytest.raises(TypeError, match="uint64"):
        curve.g1_to_arkworks(arr, checked=False)


@pytest.mark.parametrize("args", [[], ["bench"]])
def test_a_group_without_command_prints_its_help(args):
    res = _run(args)
    assert res.returncode in (0, 2) and "Usage:" in res.stderr + res.stdout and "Commands:" in res.stderr + res.stdout
    assert "Error:" not in res.stderr


# ---- zkgpu prove: outputs checked before proving, bad input exits 2 (break1 items 1, 2, 12)

FIXTURE = ROOT / "zkgpu" / "groth16" / "fixtures"


def _prove_args(tmp_path, **over):
    a = {"--zkey": str(FIXTURE / "circuit.zkey"), "--wtns": str(FIXTURE / "circuit.wtns"),
         "--proof": str(tmp_path / "p.json"), "--public": str(tmp_path / "pub.json"), "--device": "cpu"}  # fmt: skip
    a.update(over)
    return ["prove", *[x for kv in a.items() for x in kv if kv[1] is not None]]


@pytest.mark.parametrize(
    "over, words",
    [
        ({"--public": "SAME"}, ["--public", "is the same file as --proof"]),
        ({"--timings": "SAME"}, ["--timings", "is the same file as --proof"]),
        ({"--proof": "EXISTS"}, ["--proof", "exists", "never overwrites"]),
        ({"--public": "UNDERFILE"}, ["--public", "is a file, not a folder"]),
    ],
)
def test_prove_outputs_checked_before_proving(tmp_path, over, words):
    (tmp_path / "exists.json").write_text("keep\n")
    (tmp_path / "f").write_text("a file\n")
    sub = {"SAME": str(tmp_path / "p.json"), "EXISTS": str(tmp_path / "exists.json"), "UNDERFILE": str(tmp_path / "f" / "pub.json")}
    over = {k: sub[v] for k, v in over.items()}
    if "--proof" in over:
        over["--public"] = str(tmp_path / "pub.json")
    before = sorted(p.name for p in tmp_path.iterdir())
    _one_line_error(_run(_prove_args(tmp_path, **over)), *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "exists.json").read_text() == "keep\n"


def test_prove_bad_inputs_exit_2(tmp_path):
    _one_line_error(_run(_prove_args(tmp_path, **{"--zkey": str(FIXTURE / "circuit.wtns")})), "zkey")
    _one_line_error(_run(_prove_args(tmp_path, **{"--device": "gpu"})), "--device cpu")
    zk = bytearray((FIXTURE / "circuit.zkey").read_bytes())
    (tmp_path / "cut.zkey").write_bytes(bytes(zk[: len(zk) // 2]))
    _one_line_error(_run(_prove_args(tmp_path, **{"--zkey": str(tmp_path / "cut.zkey")})))
    assert not (tmp_path / "p.json").exists()
    _one_line_error(_run(["bench", "prove", "--circuit", "nonsense-5", "--device", "cpu"]), "nonsense-5")


def test_prove_verify_refuses_a_corrupted_witness(tmp_path):
    """A flipped witness byte: without --verify the proof is written (as snarkjs does; RELIABILITY.md
    says so); with --verify it is refused with exit 2 and nothing is written."""
    w = bytearray((FIXTURE / "circuit.wtns").read_bytes())
    w[210] ^= 0x01
    (tmp_path / "bad.wtns").write_bytes(bytes(w))
    res = _run(_prove_args(tmp_path, **{"--wtns": str(tmp_path / "bad.wtns"), "--verify": None}) + ["--verify", "--seed", "1"])
    _one_line_error(res, "does not verify", "bad.wtns")
    assert not (tmp_path / "p.json").exists() and not (tmp_path / "pub.json").exists()
    ok = _run(_prove_args(tmp_path) + ["--verify", "--seed", "1"])
    assert ok.returncode == 0, ok.stderr


def test_parse_second_output_fails_first_is_removed(tmp_path, monkeypatch):
    """--partitions-out cannot be written after --out was (e.g. /proc/x.csv passes the folder check
    as root): the first table is removed, so it is all outputs or none (break1 item 7)."""
    from zkgpu.app import parse_cmd as parse_cli

    log = tmp_path / "a.log"
    log.write_text("CUZK_TIMING: prep_msm_ms=5\n")
    real = parse_cli.write_table

    def second_fails(df, target):
        if target.endswith("p2.csv"):
            raise parse_cli.CliError(f"cannot write {target}: Permission denied (choose another path)")
        real(df, target)

    monkeypatch.setattr(parse_cli, "write_table", second_fails)
    res = _run(["parse", str(log), "--rows", "0", "--out", str(tmp_path / "p1.csv"), "--partitions-out", str(tmp_path / "p2.csv")])
    _one_line_error(res, "p2.csv")
    assert not (tmp_path / "p1.csv").exists() and not (tmp_path / "p2.csv").exists()


def test_host_load_beyond_available_memory_refused_before_allocating(monkeypatch):
    from zkgpu.transfer import hostload

    monkeypatch.setattr(hostload, "available_memory_bytes", lambda: 1 << 30)
    load = hostload.HostMemoryLoad(3, buffer_bytes=256 << 20)  # 1.5 GiB > 1 GiB
    with pytest.raises(MemoryError, match=r"3 threads x 2 x 268435456 bytes = 1.5 GiB, more than the 1.0 GiB"):
        load.start()
    assert not load._workers


# ---- library inputs that were silently truncated or gave the wrong error (break1 items 8, 17)


def test_library_refuses_silent_truncation():
    from zkgpu.arith import field
    from zkgpu.gpu.msm import prep

    g = curve.generator()
    with pytest.raises(TypeError, match="1.5"):
        curve.g1_mul(g, [1.5])
    with pytest.raises(TypeError, match="True"):
        curve.g1_mul(g, [True])
    s = field.fr_from_ints([0, 7])
    with pytest.raises(TypeError, match="float"):
        prep.prep_msm(s, sel=np.array([1.9]))
    with pytest.raises(ValueError, match="chunk"):
        prep.prep_msm(s, chunk=-1)
    with pytest.raises(ValueError, match="not a canonical Fr element"):
        field.fr_to_ints(np.full((1, 4), 2**64 - 1, np.uint64))
    with pytest.raises(ValueError):
        field.fq_to_ints(np.full((1, 6), 2**64 - 1, np.uint64))


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: msm.signed_digits(5, 0), ValueError, "window size c"),
        (lambda: msm.signed_digits(-1, 4), ValueError, "[0, 2^255)"),
        (lambda: msm.num_windows(0), ValueError, "window size c"),
        (lambda: msm.window_bits(-1), ValueError, "-1"),
        (lambda: domain.log2_size(True), TypeError, "True"),
        (lambda: domain.log2_size(4.0), TypeError, "4.0"),
    ],
)
def test_msm_ntt_helpers_check_their_arguments(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


@pytest.mark.parametrize(("value", "on"), [("0", False), ("false", False), ("OFF", False), ("no", False), ("1", True), ("true", True), ("yes", True)])
def test_zkgpu_debug_zero_is_off(restore_settings, value, on):
    """break1 item 14: ZKGPU_DEBUG=0 turned debug on (any non-empty value)."""
    from zkgpu.app import settings
    from zkgpu.core import errors

    errors.configure(debug=not on)
    settings.apply({"ZKGPU_DEBUG": value})
    assert errors.debug_enabled() is on
    settings.apply({"ZKGPU_DEBUG": ""})  # empty: unset, nothing changes
    assert errors.debug_enabled() is on
    with pytest.raises(TypeError, match="debug must be a bool"):
        errors.configure(debug=value)


def test_bench_parse_checks_free_space(monkeypatch):
    import shutil as _shutil

    monkeypatch.setattr(_shutil, "disk_usage", lambda p: _shutil._ntuple_diskusage(10**9, 10**9 - 1000, 1000))
    _one_line_error(_run(["bench", "parse", "--sizes", "1000000"]), "--sizes 1000000", "GB free", "TMPDIR")


def test_bench_parse_sigterm_removes_its_temporary_log(tmp_path):
    """break1 item 4: the synthetic log was left in $TMPDIR after SIGTERM."""
    e = dict(os.environ, TMPDIR=str(tmp_path), ZKGPU_DISABLE_GPU="1")
    p = subprocess.Popen([sys.executable, "-m", "zkgpu.app.cli", "bench", "parse", "--sizes", "5000000"], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(tmp_path.rglob("*.log")) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert any(tmp_path.rglob("*.log")), "the synthetic log never appeared"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert list(tmp_path.iterdir()) == [], list(tmp_path.rglob("*"))


def test_record_out_empty_refused_and_zkgpu_data_honoured(tmp_path, monkeypatch, restore_settings):
    """break1 items 15, 16: --out '' wrote into the working folder; ZKGPU_DATA was ignored."""
    monkeypatch.chdir(tmp_path)
    _one_line_error(_run(["record", "--device", "cpu", "--out", ""]), "out=''", "empty")
    assert list(tmp_path.iterdir()) == []
    from zkgpu.app import settings
    from zkgpu.core.manifest import new_run_dir

    settings.apply({"ZKGPU_DATA": str(tmp_path / "data")})
    d = new_run_dir("record", gpu="cpu")
    assert d.parent == tmp_path / "data"


def test_report_out_checked_before_any_notebook(tmp_path, monkeypatch):
    from zkgpu.app import report as report_mod

    monkeypatch.setattr(report_mod, "run_report", lambda **kw: pytest.fail("a notebook ran"))
    f = tmp_path / "a-file"
    f.write_text("precious")
    _one_line_error(_run(["report", "--mode", "replay", "--out", str(f)]), "--out", "is a file, not a folder")
    _one_line_error(_run(["report", "--mode", "replay", "--out", str(f / "sub")]), "--out", "is a file, not a folder")
    _one_line_error(_run(["report", "--mode", "replay", "--out", ""]), "--out ''")
    assert f.read_text() == "precious"
