"""zkgpu.gpu.msm.prep: every prep_msm variant against the reference (zkgpu.gpu.msm.pippenger.prep_msm) on seeded random and
edge-case inputs, the selection form against gathering, the pipeline's prep settings end to end."""

from __future__ import annotations

import numpy as np
import pytest

from zkgpu.app.bench.prep import porep_like_scalars
from zkgpu.arith.field import FR
from zkgpu.gpu.msm import prep
from zkgpu.gpu.msm.pippenger import prep_msm as reference
from zkgpu.pipeline import Density, PipelineConfig, prepare_backend, run_pipeline
from zkgpu.pipeline.split import prep_partition, selections, splits
from zkgpu.pipeline.synthesis import make_circuit, synthesize_arrays
from zkgpu.pipeline.worker import _msm_scalars

numba_only = pytest.mark.skipif(not prep.numba_available(), reason="numba not installed (extra cpu-parallel)")

R_LIMBS = [(FR.modulus >> (64 * i)) & ((1 << 64) - 1) for i in range(4)]


def _rows(values) -> np.ndarray:
    return np.array(values, dtype=np.uint64).reshape(-1, 4)


def cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(12)
    sig = rng.integers(0, 2**64, size=(200, 4), dtype=np.uint64)
    sig[:, 3] &= np.uint64((1 << 62) - 1)
    sig[:, 1] |= np.uint64(1)  # never 0 or 1
    r_minus_1 = _rows([R_LIMBS[0] - 1, *R_LIMBS[1:]])
    return {
        "porep_1000": porep_like_scalars(1000, seed=3),  # not a multiple of 64 or of a chunk
        "porep_4096": porep_like_scalars(4096, seed=4),
        "all_zero": np.zeros((300, 4), dtype=np.uint64),
        "all_one": np.tile(_rows([1, 0, 0, 0]), (130, 1)),
        "all_significant": sig,
        "n1_zero": _rows([0, 0, 0, 0]),
        "n1_one": _rows([1, 0, 0, 0]),
        "n1_sig": _rows([2, 0, 0, 0]),
        "n0": np.zeros((0, 4), dtype=np.uint64),
        "n64": porep_like_scalars(64, seed=5),
        "n65": porep_like_scalars(65, seed=6),
        # looks like 1 or 0 in limb 0 but not above; the largest canonical value
        "near_small": _rows([[1, 1, 0, 0], [0, 0, 0, 1], [1, 0, 1, 0], *r_minus_1.tolist()]),
    }


CASES = cases()


def _assert_same_proof_parts(got, ref) -> None:
    """Both runs ok, and every partition's h, l, a, b_g1, b_g2 equal bit for bit (names partition and part)."""
    assert ref.ok and got.ok, (ref.errors, got.errors)
    assert len(got.partitions) == len(ref.partitions)
    for p in range(len(ref.partitions)):
        for k in ("h", "l", "a", "b_g1", "b_g2"):
            assert np.array_equal(getattr(got.partitions[p], k), getattr(ref.partitions[p], k)), (p, k)


def assert_same(got, want) -> None:
    assert (got.n, got.ones, got.zeros, got.significant) == (want.n, want.ones, want.zeros, want.significant)
    assert got.bitmap.dtype == want.bitmap.dtype and np.array_equal(got.bitmap, want.bitmap)
    assert got.sig_indices.dtype == want.sig_indices.dtype and np.array_equal(got.sig_indices, want.sig_indices)
    assert got.sig_scalars.shape == want.sig_scalars.shape and np.array_equal(got.sig_scalars, want.sig_scalars)


def test_prep_msm_on_the_host_is_its_own_host_copy():
    """PrepMsm holds host (numpy) or device (CuPy) arrays; to_host() of a host split is the split itself."""
    p = reference(CASES["porep_1000"])
    assert not p.on_device and p.to_host() is p


def bad_input() -> np.ndarray:
    x = porep_like_scalars(300, seed=9)
    x[170] = R_LIMBS  # r itself
    x[250] = (2**64 - 1,) * 4
    return x


def reference_error(x: np.ndarray) -> str:
    with pytest.raises(ValueError) as e:
        reference(x)
    return str(e.value)


# ---------------------------------------------------------------------------------------- cpu_parallel


@numba_only
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("threads, chunk", [(1, 64), (3, 64), (2, 128), (4, prep.CHUNK)])
def test_cpu_parallel_equals_reference(name, threads, chunk):
    x = CASES[name]
    assert_same(prep.prep_msm_parallel(x, threads=threads, chunk=chunk), reference(x))
    assert_same(prep.prep_msm(x, "cpu_parallel", threads=threads, chunk=chunk), reference(x))


@pytest.mark.parametrize("name", ["porep_1000", "all_zero", "n1_one"])
def test_cpu_entry_point_is_the_reference(name):
    assert_same(prep.prep_msm(CASES[name], "cpu"), reference(CASES[name]))


@numba_only
def test_cpu_parallel_selection_with_head_equals_gathering():
    rng = np.random.default_rng(1)
    src = porep_like_scalars(3000, seed=2)
    head = porep_like_scalars(7, seed=8)
    head[0] = (1, 0, 0, 0)
    sel = np.concatenate([[0, 3, 6], 7 + np.sort(rng.choice(3000, 1111, replace=False))])
    want = reference(np.concatenate([head, src])[sel])
    assert_same(prep.prep_msm_parallel(src, sel=sel, head=head, threads=3, chunk=64), want)
    assert_same(prep.prep_msm_parallel(src, sel=sel[3:] - 7, threads=2, chunk=128), reference(src[sel[3:] - 7]))


@numba_only
def test_cpu_parallel_errors_match_the_reference():
    x = bad_input()
    with pytest.raises(ValueError) as e:
        prep.prep_msm_parallel(x, threads=3, chunk=64)
    assert str(e.value) == reference_error(x)  # the first bad index (170), with its value
    for bad, exc in ((x.astype(np.int64), TypeError), (x[:, :3], ValueError), ([[1, 0, 0, 0]], TypeError)):
        with pytest.raises(exc):
            prep.prep_msm_parallel(bad)
    for kw, match in ((dict(chunk=100), "multiple of 64"), (dict(chunk=0), "multiple of 64"), (dict(threads=0), "threads"),
                      (dict(sel=np.array([0, 5000])), "outside"), (dict(head=x[:2]), "head needs sel")):
        with pytest.raises(ValueError, match=match):
            prep.prep_msm_parallel(CASES["porep_1000"], **kw)
    with pytest.raises(ValueError, match="prep must be one of"):
        prep.prep_msm(CASES["n1_one"], "fpga")


def test_default_threads_configure(monkeypatch):
    """prep.configure(threads=) sets the default; configure(threads=None) restores min(8, CPUs)."""
    monkeypatch.setattr(prep, "_THREADS", None)
    auto = prep.default_threads()
    assert 1 <= auto <= 8
    prep.configure(threads=5)
    assert prep.default_threads() == 5
    for bad in (0, -1, True, 2.0, "3"):
        with pytest.raises(ValueError, match="threads must be an int >= 1"):
            prep.configure(threads=bad)
    assert prep.default_threads() == 5  # a refused value leaves the setting as it was
    prep.configure(threads=None)
    assert prep.default_threads() == auto


# ---------------------------------------------------------------------------------------- pipeline


def _cfg(**kw) -> PipelineConfig:
    base = dict(n=1 << 6, partitions=3, device="cpu", synth_workers=2, gw=2, timeout_s=20.0, b_g2_terms=4)
    base.update(kw)
    return PipelineConfig(**base)


@numba_only
@pytest.mark.parametrize("density", [Density(), Density(zero=0.1, one=0.1), Density(zero=0.0, one=1.0, a_aux=1.0, b_aux=0.0)])
def test_prep_partition_cpu_parallel_equals_cpu(density):
    c = _cfg(n=1 << 10, density=density, num_inputs=5)
    circuit = make_circuit(c)
    _, _, _, aux = synthesize_arrays(c, 7)
    got = prep_partition(circuit, aux, "cpu_parallel", threads=2)
    for name, scalars in _msm_scalars(circuit, aux).items():
        want = reference(scalars)
        g = got[name]
        assert (g.n, splits(g), g.ones, g.zeros, g.significant) == (want.n, splits(want), want.ones, want.zeros, want.significant), name
        assert np.array_equal(g.bitmap, want.bitmap) and np.array_equal(g.sig_indices, want.sig_indices)
        assert np.array_equal(g.sig_scalars, want.sig_scalars), name
    with pytest.raises(ValueError, match="GpuBackend.prep"):
        prep_partition(circuit, aux, "gpu")


def test_selections_are_the_msm_vectors():
    c = _cfg(n=1 << 8, num_inputs=4)
    circuit = make_circuit(c)
    _, _, _, aux = synthesize_arrays(c, 1)
    full = np.concatenate([circuit.inp, aux])
    a_sel, b_sel = selections(circuit)
    vec = _msm_scalars(circuit, aux)
    assert np.array_equal(full[a_sel], vec["a"]) and np.array_equal(full[b_sel], vec["b_g1"])
    assert selections(circuit)[0] is a_sel  # cached


@pytest.mark.parametrize("kw, match", [(dict(prep="fast"), "prep"), (dict(prep="gpu"), "needs device='gpu'"), (dict(prep_threads=-1), "prep_threads"),
                                       (dict(tail_streams=4), "tail_streams"), (dict(lock_scope="all"), "lock_scope")])
def test_config_rejects_bad_prep(kw, match):
    with pytest.raises(ValueError, match=match):
        _cfg(**kw)


@numba_only
@pytest.mark.parametrize("scope", ["coarse", "narrow"])
def test_pipeline_cpu_parallel_gives_the_same_proof_parts(scope):
    base = _cfg(lock_scope=scope, transfer="pinned_pool")
    prepared = prepare_backend(base)
    ref = run_pipeline(base, prepared=prepared)
    par = run_pipeline(base.with_(prep="cpu_parallel", prep_threads=2), prepared=prepared)
    _assert_same_proof_parts(par, ref)
    pm = par.events[par.events.phase == "prep_msm"]
    assert len(pm) == base.partitions and pm["detail"].str.contains("prep=cpu_parallel").all()
    assert par.events["run"].iloc[0].endswith("prep_cpu_parallel")


@pytest.mark.parametrize("kw", [dict(lock_scope="none"), dict(tail_streams=3), dict(lock_scope="none", tail_streams=3, gw=3)])
def test_pipeline_without_shared_mutex_or_with_concurrent_tails_gives_the_same_proof_parts(kw):
    base = _cfg(transfer="pinned_pool")
    prepared = prepare_backend(base)
    ref = run_pipeline(base, prepared=prepared)
    free = run_pipeline(base.with_(**kw), prepared=prepared)
    _assert_same_proof_parts(free, ref)
    held = free.events[free.events.phase == "mutex_held"]
    assert len(held) == base.partitions  # one private lock interval per partition, as coarse


# ---------------------------------------------------------------------------------------- gpu


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_gpu_equals_reference(name):
    x = CASES[name]
    assert_same(prep.prep_msm(x, "gpu"), reference(x))
    assert_same(prep.prep_msm_device(x).to_host(), reference(x))


@pytest.mark.gpu
def test_gpu_selection_offset_and_errors():
    import cupy as cp

    rng = np.random.default_rng(5)
    src = porep_like_scalars(5000, seed=2)
    sel = np.sort(rng.choice(5000, 2222, replace=False))
    d = cp.asarray(src)
    assert_same(prep.prep_msm_device(d, sel=cp.asarray(sel)).to_host(), reference(src[sel]))
    assert_same(prep.prep_msm_device(d, offset=7).to_host(), reference(src[7:]))
    assert_same(prep.prep_msm_device(d, offset=7, n=100).to_host(), reference(src[7:107]))
    s = cp.cuda.Stream(non_blocking=True)
    assert_same(prep.prep_msm_device(d, stream=s).to_host(), reference(src))
    x = bad_input()
    with pytest.raises(ValueError) as e:
        prep.prep_msm_device(cp.asarray(x))
    assert str(e.value) == reference_error(x)
    with pytest.raises(ValueError, match="offset"):
        prep.prep_msm_device(d, offset=6000)


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [dict(prep="cpu_parallel"), dict(prep="gpu"), dict(prep="gpu", tail_streams=3),
                                dict(prep="gpu", tail_streams=3, lock_scope="none")])
def test_gpu_pipeline_prep_variants_match_cpu_prep(kw):
    if kw["prep"] == "cpu_parallel" and not prep.numba_available():
        pytest.skip("numba not installed")
    base = PipelineConfig(n=1 << 10, partitions=3, device="gpu", transfer="pinned_pool", lock_scope="narrow", gw=2,
                          b_g2_terms=4, timeout_s=120)
    prepared = prepare_backend(base)
    ref = run_pipeline(base, prepared=prepared)
    got = run_pipeline(base.with_(**kw), prepared=prepared)
    _assert_same_proof_parts(got, ref)
