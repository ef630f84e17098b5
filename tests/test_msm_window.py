"""The MSM's window rule for sparse (PoRep-like) scalars: zkgpu.gpu.msm.window.

CPU: the significant count against a plain-Python count, the rule's choices, argument errors, and
msm_device's window check (before any GPU work). GPU: ``c="sparse"`` gives the same point as the default
window on PoRep-like and uniform scalars, with one ``msm.window`` host sync.
"""

from __future__ import annotations

import numpy as np
import pytest

from seeding import new_pyrng, new_rng
from zkgpu.app.bench.msm import _porep_scalars as porep_like
from zkgpu.arith.field import FR, fr_random
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm import window as msm_window


def _count_python(sc: np.ndarray) -> int:
    return sum(1 for row in sc if sum(int(v) << (64 * i) for i, v in enumerate(row)) > 1)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 1000])
def test_significant_count_matches_python(n):
    rng = new_rng()
    sc = porep_like(n, rng)
    if n >= 3:  # edge values: 0, 1, 2, r-1, and a value with only a high limb set
        sc[0] = 0
        sc[1] = [1, 0, 0, 0]
        sc[2] = [2, 0, 0, 0]
    if n >= 1000:
        sc[3] = np.array([(FR.modulus - 1) >> (64 * i) & (2**64 - 1) for i in range(4)], dtype=np.uint64)
        sc[4] = [0, 0, 0, 1]
    assert msm_window.significant_count(sc) == _count_python(sc)


def test_sparse_rule_sizes_for_the_significant_scalars():
    rng = new_rng()
    n = 1 << 16
    uniform = fr_random(n, rng)
    uniform[uniform[:, 0] < 2] += np.uint64(2)  # no accidental 0/1 in the low limb alone
    assert msm_window.sparse_window_bits(uniform) == msm_window.window_bits(n)
    sc = porep_like(n, rng)
    k = msm_window.significant_count(sc)
    assert 0.05 * n < k < 0.15 * n
    assert msm_window.sparse_window_bits(sc) == msm_window.window_bits(k) < msm_window.window_bits(n)
    assert msm_window.sparse_window_bits(np.zeros((5, 4), dtype=np.uint64)) == msm_window.window_bits(1)


@pytest.mark.parametrize("bad", [np.zeros((3, 3), dtype=np.uint64), np.zeros((3, 4), dtype=np.int64), np.zeros(4, dtype=np.uint64), [[1, 2, 3, 4]]])
def test_significant_count_rejects_bad_input(bad):
    with pytest.raises(ValueError, match="significant_count: scalars must be"):
        msm_window.significant_count(bad)


@pytest.mark.parametrize("c", [0, 1, 25, "auto", 2.0, True])
def test_msm_device_rejects_bad_window(c):
    with pytest.raises(ValueError, match="window c must be"):
        msm.msm_device(None, np.zeros((1, 4), dtype=np.uint64), c)


def test_msm_reexports_the_window_rule():
    assert msm.window_bits is msm_window.window_bits and msm.num_windows is msm_window.num_windows
    assert msm.signed_digits is msm_window.signed_digits


@pytest.mark.gpu
@pytest.mark.parametrize("lg", [1, 12, 16])
def test_gpu_sparse_window_same_point(lg):
    cp = _cuda.cupy()
    n = 1 << lg
    seed = new_pyrng().randrange(2**64)
    pts = bases.generate_points(n, seed)
    for sc in (porep_like(n, new_rng()), fr_random(n, new_rng())):
        d = cp.asarray(sc)
        ref = cp.asnumpy(msm.msm_device(pts, d))
        before = _cuda.sync_counts().get("msm.window", 0)
        got = cp.asnumpy(msm.msm_device(pts, d, "sparse"))
        assert (got == ref).all(), f"points seed {seed}"
        assert _cuda.sync_counts().get("msm.window", 0) == before + 1
