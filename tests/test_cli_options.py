"""The zkgpu options no other test gives (issue 23: one CLI, every option tested), each checked to reach its API
through CliRunner with the API call captured: CPU only, no run made."""

from __future__ import annotations

import json

from click.testing import CliRunner

from zkgpu.app import pipeline_cmd, record
from zkgpu.app.bench import prep as bench_prep
from zkgpu.app.cli import main


class _StopError(Exception):
    """Raised by a captured API call: the options have arrived, nothing runs (the CLI reports it as an
    internal error)."""


def test_record_quick_no_sweep_no_bench_reach_record(monkeypatch, tmp_path):
    seen: dict = {}

    def fake(**kw):
        seen.update(kw)
        raise _StopError

    monkeypatch.setattr(record, "record", fake)
    res = CliRunner().invoke(main, ["record", "--device", "cpu", "--out", str(tmp_path), "--quick", "--no-sweep", "--no-bench"])
    assert "_StopError" in res.output, res.output
    assert (seen["quick"], seen["sweep"], seen["bench"], seen["device"]) == (True, False, False, "cpu")
    res = CliRunner().invoke(main, ["record", "--device", "cpu", "--out", str(tmp_path)])
    assert (seen["quick"], seen["sweep"], seen["bench"]) == (False, True, True)


def test_pipeline_prep_and_tail_streams_reach_the_config(monkeypatch):
    seen = []

    def fake(cfg):
        seen.append(cfg)
        raise _StopError

    monkeypatch.setattr(pipeline_cmd, "prepare_backend", fake)
    res = CliRunner().invoke(main, ["pipeline", "--device", "cpu", "--log-n", "4", "--partitions", "1",
                                    "--prep", "cpu_parallel", "--tail-streams", "3"])
    assert "_StopError" in res.output, res.output
    assert (seen[0].prep, seen[0].tail_streams, seen[0].n) == ("cpu_parallel", 3, 16)
    res = CliRunner().invoke(main, ["pipeline", "--device", "cpu", "--prep", "fpga"])
    assert res.exit_code == 2 and "fpga" in res.output


def test_bench_prep_threads_reach_the_benchmark_and_its_manifest(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(bench_prep, "run_benchmark", lambda lo, hi, repeat, threads: seen.append((lo, hi, repeat, threads)) or [])
    res = CliRunner().invoke(main, ["bench", "prep", "--min-log", "4", "--max-log", "5", "--repeat", "1", "--threads", "3",
                                    "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert seen == [(4, 5, 1, 3)]
    (run,) = tmp_path.iterdir()
    assert json.loads((run / "manifest.json").read_text())["threads"] == 3
    res = CliRunner().invoke(main, ["bench", "prep", "--threads", "0", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--threads" in res.output


def test_prove_starts_without_pandas_matplotlib_or_the_pipeline():
    """Issue 25: `zkgpu prove` (and its --help) imports what proving needs, not the analysis stack: the CLI
    loads each command's module on first use, settings import their targets only when a variable is set."""
    import subprocess
    import sys

    code = ("import sys\nfrom zkgpu.app.cli import main\ntry:\n    main(['prove', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in ('pandas', 'matplotlib', 'pyarrow')}"
            " | {m for m in sys.modules if m.startswith(('zkgpu.pipeline', 'zkgpu.analysis'))}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "--zkey" in out and "LOADED []" in out, out[-800:]
