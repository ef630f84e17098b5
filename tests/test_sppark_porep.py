"""anchors/sppark-porep (sppark's MSM on PoRep-like scalars): it builds here with nvcc against the sppark-bench anchor,
and its host side (the scalar distribution, the blst references, the fold of tiled points) runs on the CPU.

Needs nvcc and a copy of the anchor (``.anchors/sppark-bench`` or ``../shared/anchors/sppark-bench``); skipped otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from zkgpu.analysis.anchors import read_sppark, sppark_provenance
from zkgpu.app.bench.msm import _porep_scalars
from zkgpu.core.cuda import gpu_available

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "anchors" / "sppark-porep"
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
ANCHOR = next((p for p in (ROOT / ".anchors" / "sppark-bench", ROOT.parent / "shared" / "anchors" / "sppark-bench")
               if (p / "vendor" / "sppark").is_dir()), None)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sppark_porep"), pytest.mark.skipif(NVCC is None or ANCHOR is None, reason="needs nvcc and the sppark-bench anchor")]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(anchor dir with libblst.a, build dir holding sppark_porep): the anchor's own blst library when built, else a
    writable copy of the anchor built by its build.sh (about 30 s here)."""
    anchor = ANCHOR
    assert anchor is not None
    if not (anchor / "build" / "blst" / "libblst.a").exists():
        anchor = tmp_path_factory.mktemp("anchor") / "sppark-bench"
        shutil.copytree(ANCHOR, anchor)
        for p in [anchor, *anchor.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)
    build = tmp_path_factory.mktemp("porep-build")
    env = dict(os.environ, SPPARK_BENCH=str(anchor), BUILD=str(build), NVCC=str(NVCC))
    r = subprocess.run(["bash", str(DRIVER / "build.sh")], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (build / "sppark_porep").exists() and "compiled in" in r.stdout
    r = subprocess.run(["bash", str(DRIVER / "build.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "up to date" in r.stdout  # idempotent
    return anchor, build


def _run(build: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(build / "sppark_porep"), *args], capture_output=True, text=True, timeout=timeout)


def test_host_only_checks_pass(built):
    """Host-only: the proportions, the base points in G1, and the folded reference == a direct blst MSM at 2^15, 2^18."""
    r = _run(built[1], "--host-only", "--sizes", "18,11,15", "--base-lg", "14")
    assert r.returncode == 0, r.stdout + r.stderr
    checks = re.findall(r"^# check (.+?)\s+(PASS|FAIL)$", r.stdout, re.M)
    assert [c for c, v in checks if v != "PASS"] == []
    assert sum("folded reference == direct blst MSM" in c for c, _ in checks) == 2  # 2^15 and 2^18 (> 2^14 distinct)
    assert "all checks PASS" in r.stdout


def test_distribution_matches_zkgpu(built):
    """The driver's PoRep-like draws and zkgpu's _porep_scalars have the same proportions (45% 0, 45% 1, 10% other);
    the values differ (separate generators)."""
    r = _run(built[1], "--host-only", "--sizes", "18", "--base-lg", "18")
    m = re.search(r"# scalars: (\d+); zero ([\d.]+), one ([\d.]+), other ([\d.]+)", r.stdout)
    assert r.returncode == 0 and m, r.stdout
    n, driver = int(m[1]), np.array([float(m[2]), float(m[3]), float(m[4])])
    sc = _porep_scalars(n, np.random.default_rng(7))
    hi0 = (sc[:, 1:] == 0).all(axis=1)
    zk = np.array([(hi0 & (sc[:, 0] == 0)).mean(), (hi0 & (sc[:, 0] == 1)).mean()])
    zk = np.append(zk, 1 - zk.sum())
    tol = 6 * np.sqrt(0.45 * 0.55 / n) * np.sqrt(2)  # two independent samples
    assert np.abs(driver - zk).max() < tol and np.abs(driver - [0.45, 0.45, 0.10]).max() < tol
    assert re.search(r"P_ZERO = 0\.45, P_ONE = 0\.45", (DRIVER / "bench_porep.cu").read_text())


def test_bad_flags(built):
    """Each bad flag exits 1 at once, 20 times over: an early exit once hung in the thread pool's destructor (a lost
    wake-up in sppark's ~thread_pool_t) on a 2-core machine."""
    for _ in range(20):
        for args in (["--sizes", "9"], ["--reps", "0"], ["--base-lg", "25"], ["--frobnicate"]):
            r = _run(built[1], *args, timeout=30)
            assert r.returncode == 1, args
    r = _run(built[1], "--help")
    assert r.returncode == 0 and "devpts_devsc_porep" in r.stdout


@pytest.mark.skipif(gpu_available(), reason="on a GPU it measures")
def test_run_sh_without_gpu(built, tmp_path):
    """run.sh: the provenance header and exit code 2 without a GPU, its output written to $OUT/sppark_porep.txt."""
    anchor, build = built
    env = dict(os.environ, OUT=str(tmp_path), SPPARK_BENCH=str(anchor), BUILD=str(build))
    r = subprocess.run(["bash", str(DRIVER / "run.sh"), "--sizes", "12"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    out = tmp_path / "sppark_porep.txt"
    assert out.read_text() == r.stdout and "no GPU" in r.stdout
    p = sppark_provenance(out)
    assert p["vendor"]["sppark"] == "17278d74295392f9813f009300b257a688422b7a" and "PoRep-like" in p["revision"]
    with pytest.raises(ValueError, match="no sppark-bench result rows"):
        read_sppark(out)
