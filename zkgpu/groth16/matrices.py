"""The proving key's A and B matrices as one sparse matrix over Fr, and synthesis on it: ``a = A.w``, ``b = B.w``,
``c = a * b`` (snarkjs's ``groth16 prove``: the key holds no C matrix).

:func:`key_matrices` builds the CSR (:class:`zkgpu.arith.sparse.FrCsr`, ``2n`` rows: A's constraint c at row c,
B's at n + c); :func:`evaluate_host` multiplies it on the CPU, :func:`evaluate_device` on the GPU in Montgomery
form, as :func:`zkgpu.gpu.ntt.qap.compute_h_inplace` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zkgpu.arith.sparse import FrCsr, csr_from_coo, fr_limbs, fr_mul, spmv
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.spmv import DeviceCsr, fr_mul_device, new_buffer, spmv_into, upload_csr
from zkgpu.groth16.formats import ZKey

__all__ = ["KeyMatrices", "key_matrices", "evaluate_host", "evaluate_device"]


@dataclass
class KeyMatrices:
    """A key's A and B matrices (module docstring).

    Attributes:
        domain_size: n. n_vars: the witness length.
        csr: ``2n x n_vars``: rows ``0..n-1`` A, ``n..2n-1`` B (constraint order, snarkjs's).
        device: the device copy (:meth:`upload`), or None.
    """

    domain_size: int
    n_vars: int
    csr: FrCsr
    device: DeviceCsr | None = None

    def upload(self, order: np.ndarray | None = None) -> DeviceCsr:
        """Copy the matrix to the device once, on the current stream, synchronised; ``order`` (``(n,)`` permutation,
        default identity) sends constraint c's evaluations to index ``order[c]``.

        Raises:
            ValueError: ``order`` not a permutation of ``0..n-1``.
        """
        if self.device is None:
            n = self.domain_size
            o = np.arange(n, dtype=np.int64) if order is None else np.asarray(order).astype(np.int64)
            if o.shape != (n,):
                raise ValueError(f"order must have the domain's {n} entries, got shape {o.shape}")
            self.device = upload_csr(self.csr, dest=np.concatenate([o, n + o]), out_rows=3 * n)
            _cuda.cupy().cuda.get_current_stream().synchronize()
        return self.device


def coefficient_limbs(zkey: ZKey) -> np.ndarray:
    """The key's coefficient values as ``(m, 4)`` uint64 canonical Fr (``zkey.coef_values``: an array of that form,
    or Python ints)."""
    return fr_limbs(zkey.coef_values, name="coefficient")


def key_matrices(zkey: ZKey) -> KeyMatrices:
    """The key's A and B matrices as one CSR (module docstring); numpy, vectorised (one stable sort of the terms).

    Raises:
        ValueError: a coefficient naming a matrix other than 0 or 1, a constraint >= n or a signal >= n_vars (the
            reader checks these; a hand-built key may not).
    """
    n = zkey.domain_size
    m = np.asarray(zkey.coef_matrix).astype(np.int64)
    bad = np.flatnonzero((m < 0) | (m > 1))
    if bad.size:
        raise ValueError(f"{zkey.path}: coefficient {int(bad[0])} names matrix {int(m[bad[0]])} (must be 0 = A or 1 = B)")
    cons = np.asarray(zkey.coef_constraint).astype(np.int64)
    bad = np.flatnonzero(cons >= n)
    if bad.size:
        raise ValueError(f"{zkey.path}: coefficient {int(bad[0])} names constraint {int(cons[bad[0]])}, outside the domain of {n}")
    csr = csr_from_coo(m * n + cons, zkey.coef_signal, coefficient_limbs(zkey), 2 * n, zkey.n_vars)
    return KeyMatrices(n, zkey.n_vars, csr)


def evaluate_host(km: KeyMatrices, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a, b, c on the CPU from ``w`` (``(n_vars, 4)`` uint64 canonical Fr): three ``(n, 4)`` uint64 canonical arrays
    in constraint order (views of one ``(3n, 4)`` array).

    Raises:
        ValueError / TypeError: a witness of another length, dtype or shape, or a value >= r.
    """
    n = km.domain_size
    out = np.empty((3 * n, 4), dtype=np.uint64)
    spmv(km.csr, w, out=out[: 2 * n])
    fr_mul(out[:n], out[n : 2 * n], out=out[2 * n :], check=False)  # spmv's output: canonical
    return out[:n], out[n : 2 * n], out[2 * n :]


def evaluate_device(km: KeyMatrices, w: Any, *, check: bool = True) -> tuple[Any, Any, Any]:
    """a, b, c on the GPU, on the current stream (no host sync unless ``check``, which verifies every witness value is
    below r). ``w``: ``(n_vars, 4)`` uint64 canonical Fr, numpy or CuPy.

    Returns:
        three ``(n, 4)`` uint64 CuPy arrays in **Montgomery form**, indexed by the upload's ``order`` (views of one
        buffer).

    Raises:
        ValueError: not uploaded; as :func:`zkgpu.gpu.spmv.spmv_into`.
    """
    if km.device is None:
        raise ValueError("evaluate_device: the key's matrices are not on the device (KeyMatrices.upload)")
    n = km.domain_size
    cp = _cuda.cupy()
    wd = w if _cuda.is_device_array(w) else cp.asarray(np.ascontiguousarray(w))
    buf = spmv_into(km.device, wd, new_buffer(km.device), check=check)
    a, b, c = buf[:n], buf[n : 2 * n], buf[2 * n : 3 * n]
    fr_mul_device(a, b, c)
    return a, b, c
