"""Issue 22 (reliability round 3): recordings, replay, forecasts, outputs, `zkgpu parse` and the run's bounds.
Everything read from a file is untrusted: checked at the door, refused in one line naming the file and the field;
nothing overwritten, nothing written outside its target, a run that did not finish never read as one that did.
Each case is a row of RELIABILITY.md."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from zkgpu.analysis import model
from zkgpu.app import pipeline_cmd
from zkgpu.app.cli import main
from zkgpu.pipeline.config import MAX_PARTITIONS, MAX_TIMEOUT_S, PipelineConfig


class _Res:
    def __init__(self, r):
        self.returncode, self.stdout, self.stderr = r.exit_code, r.stdout, r.stderr


def _run(args, command=None):
    """The CLI in-process (CliRunner), as a subprocess-like result."""
    return _Res(CliRunner().invoke(pipeline_cmd.main if command == "pipeline" else main, args))


def _cli(args, env=None, cwd=None):
    e = dict(os.environ, **(env or {}))
    e.setdefault("ZKGPU_DISABLE_GPU", "1")
    return subprocess.run([sys.executable, "-m", "zkgpu.app.cli", *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=120)


def _one_line_error(res, *words):
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    err = res.stderr.strip()
    assert "Traceback" not in res.stderr and "\n" not in err, res.stderr
    assert err.startswith("Error: "), err
    for w in words:
        assert w in err, (w, err)


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("args, words", [
    (["--timeout", "1e10"], ["--timeout", "10000000000", f"{MAX_TIMEOUT_S:g}"]),
    (["--timeout", "inf"], ["--timeout", "inf"]),
    (["--timeout", "nan"], ["timeout", "nan"]),
    (["--partitions", "100000000"], ["--partitions", "100000000", str(MAX_PARTITIONS)]),
    (["--partitions", "1e8"], ["--partitions", "1e8"]),
])
def test_pipeline_timeout_and_partitions_are_bounded(args, words):
    _one_line_error(_run(["--device", "cpu", *args], command="pipeline"), *words)


@pytest.mark.parametrize("field, value", [("timeout_s", 1e10), ("timeout_s", math.inf), ("timeout_s", math.nan), ("partitions", MAX_PARTITIONS + 1)])
def test_pipeline_config_refuses_unbounded_values(field, value):
    with pytest.raises(ValueError, match=f"PipelineConfig.{field}"):
        PipelineConfig(device="cpu", n=16, **{field: value})


@pytest.mark.parametrize("kw", [{"max_queue": math.nan}, {"max_queue": math.inf}, {"max_queue": 2.5}, {"max_queue": True}, {"max_queue": "4"},
                                {"jitter": math.nan}, {"jitter": "0.1"}, {"prep_speedup": math.nan}, {"h2d_gbps": math.nan}])
def test_model_refuses_non_finite_parameters(kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name):
        model.simulate(model.ModelParams(prep_msm_ms=100.0, ntt_ms=300.0, batch_add_ms=150.0, tail_msm_ms=50.0, h2d_bytes=2e9, pageable_gbps=2.0,
                                         pinned_gbps=20.0), partitions=4, transfer="pageable", **kw)


def test_zkgpu_data_that_is_a_file_is_one_clear_error(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    res = _cli(["forecast"], env={"ZKGPU_DATA": str(f)})
    _one_line_error(res, "ZKGPU_DATA", str(f), "is a file", "must be a folder")
