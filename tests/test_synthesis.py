"""The synthetic partition fill (zkgpu.pipeline.synthesis): counter-based SplitMix64 words, the
numba loop equal to the NumPy fallback, determinism per (seed, partition), the Density fractions."""

from __future__ import annotations

import numpy as np
import pytest

from zkgpu.arith.field import FR, fr_to_ints
from zkgpu.core import optional
from zkgpu.pipeline import synthesis as syn
from zkgpu.pipeline.config import Density, PipelineConfig

IMPLS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(not optional.has("numba"), reason="numba not installed"))]


def _splitmix64_reference(state: int, count: int) -> list[int]:
    """Vigna's splitmix64.c, stateful, on Python ints: state += gamma; mix(state)."""
    out, m = [], (1 << 64) - 1
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & m
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        out.append(z ^ (z >> 31))
    return out


def cfg(**kw):
    return PipelineConfig(**{"n": 1 << 10, "device": "cpu", **kw})


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("rows", [1, 3, 70_001])  # 70_001: more than one NumPy chunk (2^16 rows), not a multiple of it
def test_fill_fr_counter_is_splitmix64_with_the_top_limb_masked(impl, rows):
    key = syn.stream_key(7, 3, 1)
    out = syn.fill_fr_counter(np.empty((rows, 4), np.uint64), key, impl=impl)
    k = min(rows, 5)
    want = np.array(_splitmix64_reference(key, 4 * k), dtype=np.uint64).reshape(k, 4)
    want[:, 3] &= syn.FR_TOP_MASK
    assert np.array_equal(out[:k], want)
    last = np.array(_splitmix64_reference((key + (rows - 1) * 4 * 0x9E3779B97F4A7C15) % (1 << 64), 4), dtype=np.uint64)
    last[3] &= syn.FR_TOP_MASK
    assert np.array_equal(out[-1], last)
    assert (out[:, 3] >> np.uint64(62) == 0).all()


@pytest.mark.skipif(not optional.has("numba"), reason="numba not installed")
@pytest.mark.parametrize("density", [Density(), Density(zero=0.0, one=0.0), Density(zero=1.0, one=0.0), Density(zero=0.0, one=1.0), Density(zero=0.3, one=0.3)])
@pytest.mark.parametrize("n", [4, 8, 1 << 17])
def test_numba_and_numpy_synthesis_give_the_same_arrays(density, n):
    c = cfg(n=n, density=density, aux_ratio=1.0)
    for got, want in zip(syn.synthesize_arrays(c, 5, impl="numba"), syn.synthesize_arrays(c, 5, impl="numpy"), strict=True):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("impl", IMPLS)
def test_synthesis_is_a_function_of_seed_and_partition_and_canonical(impl):
    c = cfg(n=1 << 12)
    x = syn.synthesize_arrays(c, 3, impl=impl)
    assert all(np.array_equal(p, q) for p, q in zip(x, syn.synthesize_arrays(c, 3, impl=impl), strict=True))
    other_partition, other_seed = syn.synthesize_arrays(c, 4, impl=impl), syn.synthesize_arrays(cfg(n=1 << 12, seed=1), 3, impl=impl)
    for i in range(4):
        assert not np.array_equal(x[i], other_partition[i]) and not np.array_equal(x[i], other_seed[i])
    assert not np.array_equal(x[0], x[1]) and not np.array_equal(x[1], x[2])  # a, b, c: distinct streams
    for arr in x:
        assert all(v < FR.modulus for v in fr_to_ints(arr[:300]))


@pytest.mark.parametrize("impl", IMPLS)
def test_aux_fractions_follow_the_density(impl):
    c = cfg(n=1 << 16, density=Density(zero=0.3, one=0.6))
    aux = syn.synthesize_arrays(c, 0, impl=impl)[3]
    zero = (aux == 0).all(1).mean()
    one = ((aux[:, 0] == 1) & (aux[:, 1:] == 0).all(1)).mean()
    assert abs(zero - 0.3) < 0.01 and abs(one - 0.6) < 0.01
    full = aux[~((aux[:, 1:] == 0).all(1) & (aux[:, 0] <= 1))]
    assert len(full) > 0.08 * len(aux) and (full[:, 3] >> np.uint64(62) == 0).all()
    # the top limb of the full-size rows spans [0, 2^62): uniform, not clustered
    assert 0.4 < (full[:, 3] >> np.uint64(61)).mean() < 0.6


def test_stream_keys_differ_and_bad_input_is_refused():
    keys = {syn.stream_key(s, p, k) for s in range(3) for p in range(50) for k in syn.SYNTH_STREAMS.values()}
    assert len(keys) == 3 * 50 * len(syn.SYNTH_STREAMS)
    with pytest.raises(ValueError, match="partition"):
        syn.stream_key(0, -1, 1)
    with pytest.raises(ValueError, match=r"C-contiguous \(m, 4\) uint64.*\(4, 3\)"):
        syn.fill_fr_counter(np.empty((4, 3), np.uint64), 1)
    with pytest.raises(ValueError, match="C-contiguous"):
        syn.fill_fr_counter(np.empty((8, 4), np.uint64)[::2], 1)
    with pytest.raises(ValueError, match="impl must be"):
        syn.fill_fr_counter(np.empty((8, 4), np.uint64), 1, impl="gpu")
    with pytest.raises(ValueError, match="zero, one"):
        syn.fill_aux_counter(np.empty((8, 4), np.uint64), 1, 2, 0.7, 0.7)
    ro = np.zeros((8, 4), np.uint64)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        syn.fill_fr_counter(ro, 1)


def test_numba_impl_without_numba_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(syn, "_nb", lambda: None)
    with pytest.raises(RuntimeError, match="impl='numba' needs numba"):
        syn.fill_fr_counter(np.empty((2, 4), np.uint64), 1, impl="numba")
    out = syn.fill_fr_counter(np.empty((2, 4), np.uint64), 1)  # auto falls back to NumPy
    assert out[0, 0] == np.uint64(_splitmix64_reference(1, 1)[0])
    syn.warm_up_synthesis()  # nothing to compile
