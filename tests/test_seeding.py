"""The seeded-test machinery (issue 10): a failing test prints its seed, ZKGPU_TEST_SEED replays it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import seeding

HERE = Path(__file__).resolve().parent

PROBE = '''
import seeding

def test_draw(rng, pyrng):
    print("DRAW", int(rng.integers(0, 2**62)), pyrng.getrandbits(40), int(seeding.new_rng().integers(0, 2**62)))
    assert False, "deliberate"
'''


def _run_probe(tmp_path: Path, seed: str | None) -> str:
    for f in ("conftest.py", "seeding.py"):
        shutil.copy(HERE / f, tmp_path / f)
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k != "ZKGPU_TEST_SEED"}
    if seed is not None:
        env["ZKGPU_TEST_SEED"] = seed
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_probe.py")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    return res.stdout


def _draw(out: str) -> str:
    return next(line for line in out.splitlines() if "DRAW" in line)


def test_failing_test_reports_its_seed_and_the_seed_replays(tmp_path):
    first = _run_probe(tmp_path, None)
    session = next(line for line in first.splitlines() if "ZKGPU_TEST_SEED=" in line and "replay" in line)
    seed = session.split("ZKGPU_TEST_SEED=")[1].split()[0]
    again = _run_probe(tmp_path, seed)
    assert _draw(again) == _draw(first)
    other = _run_probe(tmp_path, str(int(seed) + 1))
    assert _draw(other) != _draw(first)


def test_streams_of_one_test_differ_and_repeat(test_seed):
    a, b = seeding.new_rng().integers(0, 2**62, 4), seeding.new_rng().integers(0, 2**62, 4)
    assert not np.array_equal(a, b)
    seeding.start(test_seed)
    assert np.array_equal(seeding.new_rng().integers(0, 2**62, 4), a)
