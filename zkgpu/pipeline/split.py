"""prep_msm of one partition on the host, and upstream's split decision (supraseal
``groth16_cuda.cu:509-840``, notes/cuzk-pipeline.md §1.6).

Each of the L, A and B_G1 MSMs gets one prep_msm result: :class:`zkgpu.gpu.msm.pippenger.PrepMsm` (host arrays)
or with CuPy arrays (``prep="gpu"``, ``PrepMsm.on_device``). Its fields:
``n`` (scalars), ``bitmap`` (``(ceil(n/64),)`` uint64, bit i set iff scalar i == 1, LSB first),
``ones``, ``zeros``, ``sig_scalars`` (``(m, 4)`` uint64 canonical Fr, neither 0 nor 1),
``sig_indices`` (``(m,)`` int64) and ``significant`` (m). :func:`splits` is upstream's decision
between batch_add over the ones + a tail MSM over the significant scalars and one full MSM.
"""

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
    """Upstream's split decision (``groth16_cuda.cu:641-659``): True when ``significant <= n // 2``
    (batch_add over the ones + tail MSM over the significant scalars), False for one full MSM over
    all scalars."""
    return p.significant <= p.n // 2


def selections(circuit: Circuit) -> tuple[np.ndarray, np.ndarray]:
    """Row indices into ``[circuit.inp; aux]`` of the A and B scalar vectors (int64, ascending):
    A = every input then the aux rows in ``a_aux_density``; B = the inputs in ``b_inp_density``
    then the aux rows in ``b_aux_density`` (notes/cuzk-pipeline.md §1.6). Cached per circuit (the
    structure is fixed for a run)."""
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
    """prep_msm of one partition for the L, A and B MSMs on the host, as upstream's pass 1
    (``groth16_cuda.cu:514-659``).

    ``prep="cpu_parallel"``: :func:`zkgpu.gpu.msm.prep.prep_msm_parallel` (``threads`` threads) over aux
    for L and over :func:`selections` of ``[inputs; aux]`` for A and B (the filtered vectors are
    never gathered). ``prep="cpu"``: one numpy pass over aux: :func:`zkgpu.gpu.msm.pippenger.prep_msm` classifies
    every aux scalar once (validating it; ones bitmap, significant indices) and is the L split;
    the A and B splits are the same classification restricted to the density-filtered positions
    (inputs first, then aux where ``a_aux_density`` / ``b_aux_density`` is set), packed compactly
    by position in the filtered base list, as upstream packs a_bits / b_bits.

    Args:
        circuit: the partition's structure (inputs, densities).
        aux: (aux_size, 4) uint64 canonical Fr.
        prep: ``cpu`` or ``cpu_parallel``.
        threads: threads of ``cpu_parallel`` (None: :func:`zkgpu.gpu.msm.prep.default_threads`).

    Returns:
        ``{"l": PrepMsm, "a": PrepMsm, "b_g1": PrepMsm}``; each equals :func:`zkgpu.gpu.msm.pippenger.prep_msm`
        of the gathered scalar vector (tested), without gathering the 0/1 majority.

    Raises:
        ValueError: a scalar >= r, or ``prep`` not ``cpu`` / ``cpu_parallel`` (``gpu`` is
        :meth:`zkgpu.pipeline.gpu_backend.GpuBackend.prep`).
    """
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
