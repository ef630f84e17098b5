"""The ``zkgpu bench`` commands under bad input: every bad option is one line naming the value, exit 2, checked
before the GPU and before any folder is made (nothing under the data folder); an unwritable --out is refused
before measuring; a second run never touches the first; every manifest writer records the commit (ZKGPU_COMMIT first, then git) and readers show a missing one as
``unknown``. CPU only: the GPU is faked present so that the argument checks, not the GPU check, answer."""

from __future__ import annotations

import ast
import json
import os
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from zkgpu.app.bench import keycheck as bench_keycheck
from zkgpu.app.bench import msm as bench_msm
from zkgpu.app.bench import ntt as bench_ntt
from zkgpu.app.bench import sppark as bench_sppark
from zkgpu.app.bench import transfer as bench_transfer
from zkgpu.app.cli import main
from zkgpu.core import cuda as _cuda
from zkgpu.core import manifest

ROOT = Path(__file__).resolve().parents[1]

SPPARK = """# SYNTHETIC (format of anchors/sppark-bench; numbers made up)
gpu,SYNTHETIC GPU
ntt,22,dev_fwd,1.0,1.0,1.0,5,-
ntt,24,dev_fwd,10.0,10.0,10.0,5,-
msm,22,devpts_devsc,100.0,100.0,100.0,5,PASS
"""


@pytest.fixture
def inputs(tmp_path):
    """A sppark.txt, a bench-ntt run folder (synthetic rows) and an empty data folder set as ZKGPU_DATA's."""
    sp = tmp_path / "sppark.txt"
    sp.write_text(SPPARK)
    run = tmp_path / "x-bench-ntt"
    run.mkdir()
    pd.DataFrame([dict(log_n=lg, variant="forward-nn", kernel="stagewise", median_ms=0.5 * lg) for lg in (22, 24)]).to_csv(
        run / "ntt.csv", index=False)
    data = tmp_path / "data"
    return {"SP": str(sp), "RUN": str(run), "DATA": data, "tmp": tmp_path}


@pytest.fixture
def fake_gpu(monkeypatch, restore_settings):
    monkeypatch.setattr(_cuda, "gpu_available", lambda: True)


def _run(args, **kw):
    return CliRunner().invoke(main, args, **kw)


def _one_line_error(res, *words):
    assert res.exit_code == 2, (res.exit_code, res.output)
    err = res.stderr.strip()
    assert "Traceback" not in res.output and "\n" not in err and err.startswith("Error: "), res.output
    for w in words:
        assert w in err, (w, err)


BENCH_BAD = [
    (["sppark", "--sppark", "SP", "--ntt-run", "RUN", "--sizes", "-5"], ["--sizes", "'-5'"]),
    (["sppark", "--sppark", "SP", "--ntt-run", "RUN", "--sizes", "22,,24"], ["--sizes", "'22,,24'", "empty"]),
    (["sppark", "--sppark", "SP", "--ntt-run", "RUN", "--sizes", "0"], ["--sizes", "'0'"]),
    (["sppark", "--sppark", "SP", "--ntt-run", "RUN", "--sizes", "99"], ["--sizes", "'99'"]),
    (["sppark", "--sppark", "SP", "--ntt-run", "RUN", "--sizes", "26"], ["--sizes 26", "not measured", "22, 24"]),
    (["sppark", "--sppark", "SP", "--ntt-run", "RUN", "--kernel", "fused"], ["'fused'", "stagewise"]),
    (["ntt", "--min-log", "-5"], ["--min-log", "-5"]),
    (["ntt", "--max-log", "40"], ["--max-log", "40"]),
    (["ntt", "--min-log", "20", "--max-log", "18"], ["20/18"]),
    (["ntt", "--h-min-log", "-1"], ["--h-min-log", "-1"]),
    (["ntt", "--repeat", "0"], ["--repeat", "0"]),
    (["msm", "--sizes", "-5"], ["--sizes", "'-5'"]),
    (["msm", "--repeat", "0"], ["--repeat", "0"]),
    (["msm", "--warmup", "-1"], ["--warmup", "-1"]),
    (["msm", "--window", "99"], ["--window 99", "2..24"]),
    (["msm", "--window", "1"], ["--window 1"]),
    (["msm", "--seed", "-1"], ["--seed", "-1"]),
    (["h2d", "--path", "pageable", "--path", "pageable"], ["--path pageable given twice"]),
    (["prep", "--min-log", "22", "--max-log", "20"], ["--min-log 22", "--max-log 20"]),
    (["prep", "--repeat", "0"], ["--repeat", "0"]),
    (["h2d", "--min-size", "-5"], ["--min-size -5"]),
    (["h2d", "--min-size", "4MiB", "--max-size", "1MiB"], ["--min-size 4MiB", "--max-size 1MiB"]),
    (["h2d", "--max-size", "100000GiB"], ["--max-size 100000GiB", "memory"]),
    (["h2d", "--time-budget", "nan"], ["--time-budget nan"]),
    (["h2d", "--time-budget", "-1"], ["--time-budget -1"]),
    (["h2d", "--verify-max", "lots"], ["--verify-max lots"]),
    (["load", "--levels", "-5"], ["--levels", "'-5'"]),
    (["load", "--levels", "2,x"], ["--levels", "'2,x'"]),
    (["load", "--levels", "1000000"], ["--levels 1000000", "available host memory"]),
    (["load", "--size", "0"], ["--size", "0"]),
    (["prove", "--repeat", "0"], ["--repeat", "0"]),
    (["parse", "--sizes", "-5"], ["--sizes", "'-5'"]),
    (["keycheck", "--repeat", "0"], ["--repeat", "0"]),
    (["keycheck", "--logs", "2,x"], ["--logs", "'2,x'"]),
    (["keycheck", "--logs", "27"], ["--logs", "'27'", "0..26"]),
    (["keycheck", "--logs", "2,5,2"], ["--logs", "size 2 given twice"]),
]


@pytest.mark.parametrize(("args", "words"), BENCH_BAD, ids=[" ".join(a) for a, _ in BENCH_BAD])
def test_bench_bad_options_one_line_nothing_created(inputs, fake_gpu, args, words):
    args = [inputs.get(a, a) for a in args]
    res = _run(["bench", *args], env={"ZKGPU_DATA": str(inputs["DATA"])})
    _one_line_error(res, *words)
    assert not inputs["DATA"].exists()


@pytest.mark.parametrize("cmd", [["ntt"], ["msm"], ["prep"], ["h2d"], ["load"], ["keycheck"], ["sppark", "--sppark", "SP", "--ntt-run", "RUN"]])
def test_bench_out_under_a_file_refused_before_measuring(inputs, fake_gpu, cmd):
    f = inputs["tmp"] / "a-file"
    f.write_text("precious")
    for out in (f, f / "runs"):
        res = _run(["bench", *[inputs.get(a, a) for a in cmd], "--out", str(out)])
        _one_line_error(res, "--out", str(out), "is a file")
    assert f.read_text() == "precious"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_bench_out_read_only_refused(inputs, fake_gpu):
    ro = inputs["tmp"] / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        _one_line_error(_run(["bench", "sppark", "--sppark", inputs["SP"], "--ntt-run", inputs["RUN"], "--out", str(ro)]),
                        "cannot write into")
    finally:
        ro.chmod(0o700)
    assert not any(ro.iterdir())


def test_bench_sppark_empty_out_refused(inputs, fake_gpu):
    _one_line_error(_run(["bench", "sppark", "--sppark", inputs["SP"], "--ntt-run", inputs["RUN"], "--out", " "]), "--out", "folder")


def test_bench_sppark_unreadable_inputs_named(inputs, fake_gpu):
    tmp = inputs["tmp"]
    (tmp / "bin.txt").write_bytes(b"\xff\xfe\x00ntt,22")
    _one_line_error(_run(["bench", "sppark", "--sppark", str(tmp / "bin.txt"), "--ntt-run", inputs["RUN"]]), "bin.txt", "UTF-8")
    (tmp / "cols.txt").write_text("ntt,22,dev_fwd,1.0\nntt,x,dev_fwd,1.0,1.0,1.0,5,-\n")
    _one_line_error(_run(["bench", "sppark", "--sppark", str(tmp / "cols.txt"), "--ntt-run", inputs["RUN"]]), "cols.txt", "'x'")
    for body in ("", "a,b\n1,2\n", "\x00\x01\x02"):
        run = tmp / f"run{len(body)}"
        run.mkdir()
        (run / "ntt.csv").write_text(body)
        _one_line_error(_run(["bench", "sppark", "--sppark", inputs["SP"], "--ntt-run", str(run)]), str(run / "ntt.csv"))
    _one_line_error(_run(["bench", "sppark-table", "--data", str(tmp / "nowhere")]), "nowhere")
    assert not inputs["DATA"].exists()


def test_bench_sppark_second_run_keeps_the_first(inputs, fake_gpu):
    args = ["bench", "sppark", "--sppark", inputs["SP"], "--ntt-run", inputs["RUN"], "--out", str(inputs["DATA"])]
    assert _run(args).exit_code == 0
    (first,) = inputs["DATA"].iterdir()
    before = {p.name: p.read_bytes() for p in first.iterdir()}
    assert _run(args).exit_code == 0
    assert len(list(inputs["DATA"].iterdir())) == 2
    assert {p.name: p.read_bytes() for p in first.iterdir()} == before


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_bench_sppark_stopped_while_writing_leaves_no_folder(inputs, fake_gpu, monkeypatch, stop):
    """Ctrl-C (or a full disk) while the recording is written: the fresh folder goes, the inputs stay."""
    def boom(**kw):
        raise stop("stopped while writing")

    monkeypatch.setattr(bench_sppark, "build_manifest", boom)
    with pytest.raises(stop):
        bench_sppark.write_recording(inputs["SP"], inputs["RUN"], None, base=inputs["DATA"], gpu="g")
    assert inputs["DATA"].is_dir() and not any(inputs["DATA"].iterdir())
    assert Path(inputs["SP"]).read_text() == SPPARK
    res = _run(["bench", "sppark", "--sppark", inputs["SP"], "--ntt-run", inputs["RUN"], "--out", str(inputs["DATA"])])
    assert res.exit_code == (130 if stop is KeyboardInterrupt else 1) and "Traceback" not in res.output
    assert not any(inputs["DATA"].iterdir())


@pytest.mark.parametrize(("cmd", "module", "measure"), [(["msm", "--sizes", "10"], bench_msm, "run_benchmark"),
                                                        (["h2d", "--max-size", "1MiB"], bench_transfer, "bandwidth_sweep"),
                                                        (["keycheck", "--logs", "3"], bench_keycheck, "run_benchmark")],
                         ids=["msm", "h2d", "keycheck"])
def test_bench_msm_and_h2d_stopped_while_measuring_leave_no_folder(inputs, fake_gpu, monkeypatch, cmd, module, measure):
    """Ctrl-C while bench msm / bench h2d measure: they make their run folder only after measuring, so no empty
    folder is left to look like a recording."""
    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, measure, stop)
    res = _run(["bench", *cmd, "--out", str(inputs["DATA"])])
    assert res.exit_code == 130 and "Traceback" not in res.output, res.output
    assert not inputs["DATA"].exists() or not any(inputs["DATA"].iterdir())


# ------------------------------------------------------------------------------------------- commit in manifests


def test_zkgpu_commit_reaches_a_bench_manifest(inputs, restore_settings, monkeypatch):
    monkeypatch.setattr(manifest, "REPO_ROOT", inputs["tmp"])  # a copy without .git, as on a lent GPU machine
    args = ["bench", "sppark", "--sppark", inputs["SP"], "--ntt-run", inputs["RUN"], "--out", str(inputs["DATA"])]
    assert _run(args, env={"ZKGPU_COMMIT": "0123456789abcdef-dirty"}).exit_code == 0
    (run,) = inputs["DATA"].iterdir()
    m = json.loads((run / "manifest.json").read_text())
    assert (m["commit"], m["dirty"]) == ("0123456789abcdef", True) and manifest.commit_label(m) == "0123456789+dirty"


def test_git_commit_when_zkgpu_commit_is_unset(restore_settings):
    manifest.configure(commit=None, dirty=None)
    m = manifest.build_manifest(kind="x")
    assert isinstance(m["commit"], str) and len(m["commit"]) == 40  # this checkout's git HEAD


def _calls(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "settings":
                out.add(f"settings.{f.attr}")
    return out


def test_every_manifest_writer_outside_the_package_applies_the_settings():
    """A script that writes a manifest runs outside the zkgpu command, so it must apply the ZKGPU_* settings itself:
    without that, ZKGPU_COMMIT never reaches the manifest and a copy without .git records ``commit: null`` (the
    msm-variants recordings of 2026-12-01)."""
    for f in sorted((ROOT / "scripts").rglob("*.py")):  # none since issue 23 deleted the one-off scripts
        calls = _calls(ast.parse(f.read_text()))
        if "build_manifest" in calls:
            assert "settings.apply" in calls, f"{f.relative_to(ROOT)} writes a manifest without settings.apply()"


@pytest.mark.parametrize(("m", "want"), [
    ({"commit": "0123456789abcdef"}, "0123456789"),
    ({"commit": "0123456789abcdef", "dirty": True}, "0123456789+dirty"),
    ({"commit": None, "dirty": None}, "unknown"),
    ({}, "unknown"),
    ({"commit": ""}, "unknown"),
    ({"commit": 5}, "unknown"),
    ([], "unknown"),
])
def test_commit_label_tolerates_null(m, want):
    assert manifest.commit_label(m) == want


def test_commit_label_of_every_recording():
    """Every manifest under data/ gets a label (recordings with ``commit: null`` show ``unknown``; data/ is never
    edited by hand)."""
    labels = {p.parent.name: manifest.commit_label(json.loads(p.read_text())) for p in (ROOT / "data").rglob("manifest.json")}
    assert labels and all(lb == "unknown" or 7 <= len(lb.split("+")[0]) <= 10 for lb in labels.values()), labels
    assert labels.get("nvidia-h200-20261201-bench-msm-variants") == "unknown"


# ------------------------------------------------------------------------------------------- Ctrl-C / SIGTERM


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_bench_ntt_cut_off_keeps_its_rows_apart_from_the_recordings(inputs, fake_gpu, monkeypatch, stop):
    """Stopped after the first size (Ctrl-C, SIGTERM, a GPU error): the measured rows stay, with a manifest saying
    so, in a folder renamed ``-interrupted`` that replay does not take for the newest complete bench-ntt run."""
    from zkgpu.analysis import replay

    calls = []

    def fake_run(lo, hi, repeat, **kw):
        calls.append(lo)
        if len(calls) > 1:
            raise stop("stopped at the second size")
        return [dict(log_n=lo, n=1 << lo, variant="forward-nn", kernel="stagewise", median_ms=1.0)]

    monkeypatch.setattr(bench_ntt, "run_benchmark", fake_run)
    res = _run(["bench", "ntt", "--min-log", "10", "--max-log", "12", "--out", str(inputs["DATA"])])
    assert res.exit_code == (130 if stop is KeyboardInterrupt else 1) and "Traceback" not in res.output
    assert "the sizes measured so far are in" in res.stderr
    (kept,) = inputs["DATA"].iterdir()
    assert kept.name.endswith("-bench-ntt" + manifest.INTERRUPTED_SUFFIX)
    assert list(pd.read_csv(kept / "ntt.csv")["log_n"]) == [10]
    m = json.loads((kept / "manifest.json").read_text())
    assert m["complete"] is False and m["interrupted"].startswith(stop.__name__) and m["kernels"] == ["stagewise"]
    assert "candidates" not in m  # the key of the recordings made while zkgpu bench ntt had --candidate (issue 23)
    assert replay.find_benchmarks("ntt", inputs["DATA"]) is None


def test_bench_ntt_recording_with_candidates_still_replays(tmp_path):
    """data/nvidia-h200-20261203-bench-ntt was written while ``zkgpu bench ntt`` had --candidate (deleted in issue 23):
    its manifest's ``candidates`` key and the candidates' rows still load; replay takes it for a complete run of the
    default build, and ``bench sppark`` reads the default build's rows from it (the first of its ``kernels``)."""
    from zkgpu.analysis import replay

    src = ROOT / "data" / "nvidia-h200-20261203-bench-ntt"
    m = json.loads((src / "manifest.json").read_text())
    assert m["candidates"] == {"big-last": {"NTT_BIG_LAST": 1}, "fold": {"NTT_FOLD": 1}, "skip-one-1": {"NTT_SKIP_ONE": 1},
                               "skip-one-2": {"NTT_SKIP_ONE": 2}}
    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(src, data / src.name)
    found = replay.find_benchmarks("ntt", data, where=replay.is_default_ntt_run)
    assert found is not None and found[0].name == src.name
    piv = replay.benchmark_pivot(found[1]["ntt"])
    assert piv is not None and set(piv.columns.get_level_values("kernel")) == {"stagewise", *m["candidates"]}
    assert list(replay.inventory(data)["folder"]) == [src.name]
    sppark = ROOT / "data" / "nvidia-h200-20261201-bench-sppark" / "sppark.txt"
    out = bench_sppark.write_recording(sppark, data / src.name, None, base=tmp_path / "vs", gpu="g")
    vs_m = json.loads((out / "manifest.json").read_text())
    assert vs_m["ntt_kernel"] == "stagewise" and vs_m["zkgpu_runs"]["ntt"]["candidates"] == m["candidates"]
    assert set(pd.read_csv(out / "vs_sppark.csv")["kernel"]) == {"stagewise", *m["candidates"]}


def test_sigterm_as_interrupt_restores_the_handler():
    import signal

    from zkgpu.core.errors import sigterm_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(500):  # the handler runs between bytecodes, at once in practice
            time.sleep(0.01)
    assert signal.getsignal(signal.SIGTERM) == before


def test_sppark_table_readme_not_text_or_not_writable(inputs, monkeypatch):
    bad = inputs["tmp"] / "bin.md"
    bad.write_bytes(b"\x7fELF\xd0\xff" * 10)
    _one_line_error(_run(["bench", "sppark-table", "--readme", str(bad)]), "bin.md", "not a UTF-8 text file")
    readme = inputs["tmp"] / "R.md"
    readme.write_text(f"intro\n{bench_sppark.README_BEGIN}\nold\n{bench_sppark.README_END}\n")

    def refuse(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(bench_sppark.os, "replace", refuse)
    _one_line_error(_run(["bench", "sppark-table", "--readme", str(readme)]), "--readme", "cannot rewrite it")
    assert "old" in readme.read_text() and [p.name for p in inputs["tmp"].iterdir() if p.name.startswith(".")] == []


def test_zkgpu_data_that_is_a_file_is_named(inputs, fake_gpu):
    f = inputs["tmp"] / "data-file"
    f.write_text("x")
    res = _run(["bench", "sppark", "--sppark", inputs["SP"], "--ntt-run", inputs["RUN"]], env={"ZKGPU_DATA": str(f)})
    _one_line_error(res, "the data folder", "ZKGPU_DATA", str(f), "is a file")
