"""The synthesis step's sparse product over Fr: the host CSR and its numba product (zkgpu.arith.sparse), the device
kernels (zkgpu/kernels/spmv.cu) built by g++ (tests/native/spmv_emu.cpp) and driven by zkgpu.gpu.spmv's real host
code with numpy standing in for CuPy, and the key's matrices (zkgpu.groth16.matrices) against the Python-int
synthesis (prover.evaluate_qap_reference) on the committed fixture and on random keys; on a GPU the device product
against the CPU one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from native import NumpyAsCupy, emulated_kernel, load

from zkgpu.arith import sparse as S
from zkgpu.arith.field import FR, fr_from_ints, fr_to_ints
from zkgpu.core import cuda as _cuda
from zkgpu.core import optional
from zkgpu.gpu import spmv as G
from zkgpu.gpu.fr_device import from_montgomery
from zkgpu.groth16 import matrices as M
from zkgpu.groth16 import prover as PR
from zkgpu.groth16.formats import Witness, ZKey, read_wtns, read_zkey

P = FR.modulus
FIXTURE = Path(__file__).resolve().parent.parent / "zkgpu" / "groth16" / "fixtures"
EDGE = [0, 1, 2, P - 1, P - 2]


def _random_coo(pyrng, n_rows: int, n_cols: int, nnz: int, long_row: int | None = None, long_len: int = 0):
    """nnz random terms (half their coefficients from EDGE), plus ``long_len`` terms in row ``long_row``."""
    rows = [pyrng.randrange(n_rows) for _ in range(nnz)] + ([long_row] * long_len if long_row is not None else [])
    cols = [pyrng.randrange(n_cols) for _ in rows]
    vals = [pyrng.choice(EDGE) if pyrng.random() < 0.5 else pyrng.randrange(P) for _ in rows]
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), vals


def _vector(pyrng, n: int) -> list[int]:
    return [pyrng.choice(EDGE) if pyrng.random() < 0.3 else pyrng.randrange(P) for _ in range(n)]


IMPLS = ["python", pytest.param("numba", marks=pytest.mark.skipif(not optional.has("numba"), reason="numba not installed"))]


@pytest.fixture(params=IMPLS)
def impl(request, monkeypatch):
    """The compiled loops (numba) or the Python-int fallback."""
    if request.param == "python":
        monkeypatch.setattr(S, "_kernels", lambda: None)
    return request.param


# ----------------------------------------------------------------------------- host CSR


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 5, 40), (7, 1, 12), (40, 30, 0), (300, 50, 900), (9000, 700, 6000)])
def test_spmv_against_python_ints(shape, impl, pyrng):
    """Random matrices (edge coefficients 0, 1, 2, r-1, r-2 among random ones, empty rows, one row of 200 terms, more
    rows than numba's 4096-row chunk) times random vectors with edge entries."""
    n_rows, n_cols, nnz = shape
    rows, cols, vals = _random_coo(pyrng, n_rows, n_cols, nnz, long_row=n_rows // 2 if nnz else None, long_len=200 if nnz else 0)
    csr = S.csr_from_coo(rows, cols, vals, n_rows, n_cols)
    w = _vector(pyrng, n_cols)
    got = S.spmv(csr, fr_from_ints(w))
    assert fr_to_ints(got) == S.spmv_reference(csr, w)
    ref = [0] * n_rows
    for r, c, v in zip(rows.tolist(), cols.tolist(), vals, strict=True):
        ref[r] = (ref[r] + v * w[c]) % P
    assert fr_to_ints(got) == ref


def test_spmv_signals_and_coefficients_at_the_edges(impl):
    """Every coefficient in {0, 1, 2, r-1, r-2} times every signal in {0, 1, 2, r-1, r-2}, one per row, and their sum
    in one row (additions and subtractions that wrap)."""
    k = len(EDGE)
    rows = list(range(k * k)) + [k * k] * (k * k)
    cols = [i % k for i in range(k * k)] * 2
    vals = [EDGE[i // k] for i in range(k * k)] * 2
    csr = S.csr_from_coo(np.array(rows), np.array(cols), vals, k * k + 1, k)
    got = fr_to_ints(S.spmv(csr, fr_from_ints(EDGE)))
    want = [EDGE[i // k] * EDGE[i % k] % P for i in range(k * k)]
    assert got == want + [sum(want) % P]


def test_fr_mul_pointwise(impl, pyrng):
    a, b = _vector(pyrng, 5000) + EDGE, _vector(pyrng, 5000) + EDGE[::-1]
    assert fr_to_ints(S.fr_mul(fr_from_ints(a), fr_from_ints(b))) == [x * y % P for x, y in zip(a, b, strict=True)]
    x = fr_from_ints(a)
    assert fr_to_ints(S.fr_mul(x, x, out=x)) == [v * v % P for v in a]
    with pytest.raises(ValueError, match="a has 2 elements, b 1"):
        S.fr_mul(fr_from_ints([1, 2]), fr_from_ints([1]))
    assert fr_to_ints(S.fr_mul(fr_from_ints(a), fr_from_ints(b), check=False)) == [x * y % P for x, y in zip(a, b, strict=True)]
    with pytest.raises(TypeError, match="b must be a"):
        S.fr_mul(fr_from_ints([1]), np.zeros((1, 4), dtype=np.int64), check=False)


def test_val_mont(impl, pyrng):
    vals = _vector(pyrng, 50)
    csr = S.csr_from_coo(np.arange(50), np.zeros(50, dtype=np.int64), vals, 50, 1)
    assert fr_to_ints(csr.val_mont()) == [FR.to_mont(v) for v in vals]


def test_csr_from_coo_layout_and_errors():
    csr = S.csr_from_coo(np.array([2, 0, 2, 0]), np.array([1, 0, 0, 1]), [5, 6, 1, P - 1], 4, 2)
    assert csr.row_ptr.tolist() == [0, 2, 2, 4, 4]
    assert csr.col.tolist() == [0, 1, 1, 0]  # stable: a row's terms keep their order
    assert fr_to_ints(csr.val) == [6, P - 1, 5, 1] and csr.kind.tolist() == [0, 2, 0, 1]
    with pytest.raises(ValueError, match="term 1 has row 4, outside 0..3"):
        S.csr_from_coo(np.array([0, 4]), np.array([0, 0]), [1, 1], 4, 2)
    with pytest.raises(ValueError, match="term 0 has column -1"):
        S.csr_from_coo(np.array([0]), np.array([-1]), [1], 4, 2)
    with pytest.raises(ValueError, match="2 rows, 1 cols and 2 values differ"):
        S.csr_from_coo(np.array([0, 1]), np.array([0]), [1, 1], 4, 2)
    with pytest.raises(ValueError, match=r"values\[1\]"):
        S.csr_from_coo(np.array([0, 1]), np.array([0, 0]), _with_r_at_1(), 4, 2)
    assert fr_to_ints(S.fr_limbs([np.uint64(3), 5, P - 1])) == [3, 5, P - 1]
    with pytest.raises(ValueError, match="negative or does not fit"):
        S.csr_from_coo(np.array([0]), np.array([0]), [-1], 4, 2)
    with pytest.raises(ValueError, match="n_rows must be an int >= 0, got -1"):
        S.csr_from_coo(np.array([], dtype=np.int64), np.array([], dtype=np.int64), [], -1, 2)
    with pytest.raises(TypeError, match="rows must be a 1-D integer array"):
        S.csr_from_coo(np.array([0.5]), np.array([0]), [1], 4, 2)
    with pytest.raises(ValueError, match="the vector has 3 entries, the matrix 2 columns"):
        S.spmv(csr, fr_from_ints([1, 2, 3]))


def _with_r_at_1() -> np.ndarray:
    """``(2, 4)`` uint64: 1, then r (not canonical)."""
    x = fr_from_ints([1, 0])
    x[1] = np.frombuffer(P.to_bytes(32, "little"), dtype="<u8")
    return x


# ----------------------------------------------------------------------------- keys


def _random_key(pyrng, log_n: int, n_vars: int, per_row: int) -> tuple[ZKey, Witness]:
    """A key-shaped object (only what the synthesis reads) with random A and B coefficients, some constraints empty,
    one constraint with many terms, and a witness with edge values."""
    n = 1 << log_n
    m, c, s, v = [], [], [], []
    for mat in (0, 1):
        for con in range(n):
            k = 0 if pyrng.random() < 0.2 else pyrng.randrange(1, per_row + 1)
            if con == n // 3 and mat == 0:
                k = 150
            for _ in range(k):
                m.append(mat), c.append(con), s.append(pyrng.randrange(n_vars))
                v.append(pyrng.choice(EDGE[1:]) if pyrng.random() < 0.5 else pyrng.randrange(P))
    u32 = lambda x: np.array(x, dtype=np.uint32)  # noqa: E731
    zk = SimpleNamespace(path=Path("random.zkey"), n_vars=n_vars, domain_size=n, log_n=log_n, coef_matrix=u32(m),
                         coef_constraint=u32(c), coef_signal=u32(s), coef_value=v, coef_values=v)  # fmt: skip
    w = [1] + _vector(pyrng, n_vars - 1)
    return zk, Witness(Path("random.wtns"), fr_from_ints(w))  # type: ignore[return-value]


def _fixture():
    return read_zkey(FIXTURE / "circuit.zkey"), read_wtns(FIXTURE / "circuit.wtns")


def test_evaluate_qap_fixture_against_python_ints(impl):
    zk, w = _fixture()
    for got, want in zip(PR.evaluate_qap(zk, w), PR.evaluate_qap_reference(zk, w), strict=True):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("log_n", [0, 1, 5, 13])
def test_evaluate_qap_random_keys(log_n, impl, pyrng):
    zk, w = _random_key(pyrng, log_n, n_vars=1 + pyrng.randrange(1, 60), per_row=4 if log_n < 13 else 2)
    km = M.key_matrices(zk)
    for got, want in zip(PR.evaluate_qap(zk, w, matrices=km), PR.evaluate_qap_reference(zk, w), strict=True):
        assert np.array_equal(got, want)


def test_key_matrices_errors(pyrng):
    zk, w = _random_key(pyrng, 2, 5, 2)
    zk.coef_matrix = zk.coef_matrix.copy()
    zk.coef_matrix[1] = 2
    with pytest.raises(ValueError, match="coefficient 1 names matrix 2"):
        M.key_matrices(zk)
    zk, w = _random_key(pyrng, 2, 5, 2)
    zk.coef_constraint = zk.coef_constraint.copy()
    zk.coef_constraint[0] = 4
    with pytest.raises(ValueError, match="coefficient 0 names constraint 4, outside the domain of 4"):
        M.key_matrices(zk)
    with pytest.raises(ValueError, match="the witness has 3 signals"):
        PR.evaluate_qap(zk, Witness(Path("w.wtns"), fr_from_ints([1, 2, 3])))


# ----------------------------------------------------------------------------- the kernels, emulated


class _EmuCupy(NumpyAsCupy):
    cuda = SimpleNamespace(get_current_stream=lambda: SimpleNamespace(synchronize=lambda: None))


@pytest.fixture
def emulated(monkeypatch):
    """spmv.cu and fr_ops.cu compiled by g++, numpy standing in for CuPy."""
    lib = load("spmv_emu")
    monkeypatch.setattr(_cuda, "cupy", _EmuCupy)
    monkeypatch.setattr(_cuda, "is_device_array", lambda x: isinstance(x, np.ndarray))
    monkeypatch.setattr(_cuda, "get_kernel", lambda module, name, defines=(): emulated_kernel(lib, name))


def _from_device(d) -> list[int]:
    return [FR.from_mont(v) for v in fr_to_ints(np.ascontiguousarray(d))]


@pytest.mark.parametrize("segment", [1, 2, 16, 1000])
@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 3, 50), (40, 30, 0), (300, 50, 700), (257, 20, 300)])
def test_spmv_kernels_emulated(segment, shape, emulated, pyrng):
    """Random matrices (as above: empty rows, a row of 200 terms, edge values) into a permuted, larger output region:
    each row at its ``dest``, every other output row 0; segment lengths from 1 term to whole rows."""
    n_rows, n_cols, nnz = shape
    rows, cols, vals = _random_coo(pyrng, n_rows, n_cols, nnz, long_row=n_rows - 1 if nnz else None, long_len=200 if nnz else 0)
    csr = S.csr_from_coo(rows, cols, vals, n_rows, n_cols)
    out_rows = n_rows + 7
    dest = np.array(pyrng.sample(range(out_rows), n_rows))
    w = _vector(pyrng, n_cols)
    dcsr = G.upload_csr(csr, dest=dest, out_rows=out_rows, segment=segment)
    got = _from_device(G.spmv_device(dcsr, fr_from_ints(w)))
    want = [0] * out_rows
    for i, v in enumerate(S.spmv_reference(csr, w)):
        want[int(dest[i])] = v
    assert got == want
    assert dcsr.n_seg == sum(-(-int(x) // segment) for x in np.diff(csr.row_ptr))


def test_spmv_device_errors(emulated):
    csr = S.csr_from_coo(np.array([0, 1]), np.array([0, 1]), [3, 4], 2, 2)
    with pytest.raises(ValueError, match="dest repeats"):
        G.upload_csr(csr, dest=np.array([1, 1]))
    with pytest.raises(ValueError, match=r"dest\[1\] = 5 is outside 0..2"):
        G.upload_csr(csr, dest=np.array([0, 5]), out_rows=3)
    with pytest.raises(ValueError, match="segment must be an int >= 1, got 0"):
        G.upload_csr(csr, segment=0)
    d = G.upload_csr(csr)
    with pytest.raises(ValueError, match="w has 3 entries, the matrix 2 columns"):
        G.spmv_device(d, fr_from_ints([1, 2, 3]))
    with pytest.raises(ValueError, match=r"w\[1\]"):
        G.spmv_device(d, _with_r_at_1())
    with pytest.raises(ValueError, match="buf has 1 rows, the matrix needs 2"):
        G.spmv_into(d, fr_from_ints([1, 2]), np.zeros((1, 4), dtype=np.uint64))
    with pytest.raises(ValueError, match="sizes differ"):
        G.fr_mul_device(np.zeros((2, 4), np.uint64), np.zeros((2, 4), np.uint64), np.zeros((1, 4), np.uint64))


def _check_device_qap(zk, w, a, b, c):
    order = PR.snarkjs_order(zk.log_n)
    for d, want in zip((a, b, c), PR.evaluate_qap_reference(zk, w), strict=True):
        vals = _from_device(d)
        assert [vals[int(order[j])] for j in range(zk.domain_size)] == fr_to_ints(want)


def test_evaluate_device_fixture_emulated(emulated):
    """The prover's device synthesis (key_matrices_for: zkgpu's NTT order) on the committed fixture: a, b, c in
    Montgomery form at zkgpu's indices, equal to the Python-int synthesis."""
    zk, w = _fixture()
    km = PR.key_matrices_for(zk, "gpu")
    _check_device_qap(zk, w, *M.evaluate_device(km, w.values))
    assert km.upload() is km.device  # uploaded once


@pytest.mark.parametrize("log_n", [0, 3, 9])
def test_evaluate_device_random_keys_emulated(log_n, emulated, pyrng):
    zk, w = _random_key(pyrng, log_n, n_vars=1 + pyrng.randrange(1, 40), per_row=40)
    km = PR.key_matrices_for(zk, "gpu")
    _check_device_qap(zk, w, *M.evaluate_device(km, w.values))


def test_evaluate_device_needs_upload(pyrng):
    zk, _ = _random_key(pyrng, 2, 5, 2)
    with pytest.raises(ValueError, match="not on the device"):
        M.evaluate_device(M.key_matrices(zk), fr_from_ints([1] * 5))


# ----------------------------------------------------------------------------- on the GPU


@pytest.mark.gpu
@pytest.mark.parametrize("log_n", [0, 4, 12])
def test_evaluate_device_against_cpu_gpu(log_n, pyrng):
    zk, w = _random_key(pyrng, log_n, n_vars=1 + pyrng.randrange(1, 500), per_row=40)
    km = PR.key_matrices_for(zk, "gpu")
    a, b, c = M.evaluate_device(km, w.values)
    order = PR.snarkjs_order(log_n)
    for d, want in zip((a, b, c), PR.evaluate_qap(zk, w), strict=True):
        assert np.array_equal(from_montgomery(d.copy()).get()[order], want), f"2^{log_n}"


@pytest.mark.gpu
def test_prover_gpu_synthesis_matches_cpu_gpu():
    """A Prover on the GPU (matrices resident, synthesis straight into the H computation's buffers) gives the CPU
    path's proof for the same r and s, twice (the second proof reuses the matrices)."""
    zk, w = _fixture()
    pv = PR.Prover(zk, device="gpu")
    cpu = PR.prove(zk, w, device="cpu", seed=3)
    for i in range(2):
        g = pv.prove(w, seed=3)
        assert np.array_equal(g.a, cpu.a) and np.array_equal(g.b, cpu.b) and np.array_equal(g.c, cpu.c)
        assert ("key_matrices" in g.timings_ms) == (i == 0) and "synthesis" in g.timings_ms
