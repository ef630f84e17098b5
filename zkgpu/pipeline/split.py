"""prep_msm of one partition on the host, and upstream's split decision (supraseal ``groth16_cuda.cu:509-840``)."""

from __future__ import annotations

import threading
from typing import TypeAlias

import numpy as np

from zkgpu.gpu.msm.pippenger import PrepMsm, prep_msm
from zkgpu.gpu.msm.prep import prep_msm_parallel
from zkgpu.pipeline.synthesis import Circuit

__all__ = ["Prep", "splits", "selections", "prep_partition", "bitmap_indices"]

Prep: TypeAlias = PrepMsm
"""One MSM's prep_msm result, on the host (:class:`~zkgpu.gpu.msm.pippenger.PrepMsm`) or the device
(:class:`~zkgpu.gpu.msm.pippenger.PrepMsm` holding CuPy arrays)."""

_SEL_LOCK = threading.Lock()
_SEL_CACHE: dict[int, tuple[Circuit, np.ndarray, np.ndarray]] = {}


def splits(p: Prep) -> bool:
    """Upstream's split decision: True (batch_add + tail MSM) when ``significant <= n // 2``, else one full MSM."""
    return p.significant <= p.n // 2


def selections(circuit: Circuit) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``[inputs; aux]`` of the A and B vectors (int64 ascending), by the densities; cached per circuit."""
    with _SEL_LOCK:
        hit = _SEL_CACHE.get(id(circuit))
        if hit is not None and hit[0] is circuit:
            return hit[1], hit[2]
        k = circuit.inp.shape[0]
        a_sel = np.concatenate([np.arange(k), k + np.flatnonzero(circuit.a_aux_density)]).astype(np.int64)
        b_sel = np.concatenate([np.flatnonzero(circuit.b_inp_density), k + np.flatnonzero(circuit.b_aux_density)]).astype(np.int64)
        if len(_SEL_CACHE) >= 4:
            _SEL_CACHE.clear()
        _SEL_CACHE[id(circuit)] = (circuit, a_sel, b_sel)
        return a_sel, b_sel


def _pack_bits(mask: np.ndarray) -> np.ndarray:
    words = (mask.size + 63) // 64
    buf = np.zeros(words * 8, dtype=np.uint8)
    packed = np.packbits(mask, bitorder="little")
    buf[: packed.size] = packed
    return buf.view("<u8").astype(np.uint64)


def prep_partition(circuit: Circuit, aux: np.ndarray, prep: str = "cpu", *, threads: int | None = None) -> dict[str, PrepMsm]:
    """prep_msm of one partition for L, A, B_G1 on the host: ``{"l", "a", "b_g1"}`` of PrepMsm, without gathering.

    Args:
        aux: (aux_size, 4) uint64 canonical Fr. prep: ``cpu`` or ``cpu_parallel`` (``threads``).
    Raises:
        ValueError: a scalar >= r, or another ``prep``."""
    if prep == "cpu_parallel":
        a_sel, b_sel = selections(circuit)
        return {
            "l": prep_msm_parallel(aux, threads=threads),
            "a": prep_msm_parallel(aux, sel=a_sel, head=circuit.inp, threads=threads),
            "b_g1": prep_msm_parallel(aux, sel=b_sel, head=circuit.inp, threads=threads),
        }
    if prep != "cpu":
        raise ValueError(f"prep_partition runs prep='cpu' or 'cpu_parallel' on the host, got {prep!r} (prep='gpu': GpuBackend.prep)")
    lp = prep_msm(aux)
    m = aux.shape[0]
    one_aux = np.unpackbits(lp.bitmap.view(np.uint8), bitorder="little")[:m].astype(bool)
    sig_aux = np.zeros(m, dtype=bool)
    sig_aux[lp.sig_indices] = True
    ip = prep_msm(circuit.inp)
    k = circuit.inp.shape[0]
    one_inp = np.unpackbits(ip.bitmap.view(np.uint8), bitorder="little")[:k].astype(bool)
    sig_inp = np.zeros(k, dtype=bool)
    sig_inp[ip.sig_indices] = True
    out = {"l": lp}
    for name, inp_mask, aux_mask in (("a", np.ones(k, dtype=bool), circuit.a_aux_density), ("b_g1", circuit.b_inp_density, circuit.b_aux_density)):
        inp_idx = np.flatnonzero(inp_mask)
        aux_idx = np.flatnonzero(aux_mask)
        ones = np.concatenate([one_inp[inp_idx], one_aux[aux_idx]])
        sig = np.concatenate([sig_inp[inp_idx], sig_aux[aux_idx]])
        size = ones.size
        sig_pos = np.flatnonzero(sig).astype(np.int64)
        n_in = inp_idx.size
        head, tail = sig_pos[sig_pos < n_in], sig_pos[sig_pos >= n_in]
        sig_scalars = np.concatenate([circuit.inp[inp_idx[head]], aux[aux_idx[tail - n_in]]]).reshape(-1, 4)
        n_ones = int(ones.sum())
        out[name] = PrepMsm(n=size, bitmap=_pack_bits(ones), ones=n_ones, zeros=size - n_ones - int(sig_pos.size),
                            sig_scalars=np.ascontiguousarray(sig_scalars), sig_indices=sig_pos)
    return out


def bitmap_indices(bitmap: np.ndarray, size: int) -> np.ndarray:
    """Indices (int64, ascending) of the set bits (LSB first) of a uint64 word bitmap, below ``size``."""
    bits = np.unpackbits(np.ascontiguousarray(bitmap, dtype="<u8").view(np.uint8), bitorder="little")[:size]
    return np.flatnonzero(bits)
