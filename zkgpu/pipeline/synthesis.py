"""Partition synthesis: a, b, c and the aux assignment of one partition.

With ``config.real`` (:mod:`zkgpu.pipeline.real`) synthesis is the real circuit's QAP evaluation
of the partition's witness. Otherwise it is synthetic, *not* a real circuit: a, b, c are uniform values in [0, 2^254) (hence canonical Fr) and
satisfy nothing in particular (a*b != c in general): the pipeline only needs their size and the
H computation ``compute_h(a, b, c)`` (iNTT, coset NTT x3, (a*b - c) * Z^-1, inverse coset NTT) is
defined for any input, and its result is checked against the reference on the same input. The
aux assignment has the PoRep shape of notes/cuzk-pipeline.md §1.3 (mostly 0 and 1, a minority of
full-size values; fractions in :class:`~zkgpu.pipeline.config.Density`), which is what makes
prep_msm, batch_add and the tail MSMs behave as upstream.

Everything is derived from ``(config.seed, partition)`` with numpy's PCG64 in vectorised chunks,
written straight into the destination arrays (first touch by synthesis, as bellperson's
``enforce()`` pushes; for the pinned pool, straight into the pinned buffers).

The circuit structure (density bitmaps, public inputs) depends only on ``config.seed`` and is
the same for every partition, as for PoRep.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from zkgpu.pipeline.config import PipelineConfig

__all__ = ["Circuit", "make_circuit", "partition_circuit", "fill_fr", "fill_aux", "synthesize_into", "synthesize_arrays", "FR_TOP_MASK"]

FR_TOP_MASK = np.uint64((1 << 62) - 1)
"""Top-limb mask: values < 2^254 < r (r ~ 0.45 * 2^256), so every value is canonical Fr."""

_CHUNK = 1 << 16  # rows per vectorised chunk (bounds temporaries to 2 MiB)


@dataclass(frozen=True)
class Circuit:
    """Per-run circuit structure (cuzk ``Assignment`` densities).

    Attributes:
        inp: (num_inputs, 4) uint64, inp[0] = 1 (Groth16's constant input).
        a_aux_density: (aux_size,) bool, aux positions in the A query.
        b_inp_density: (num_inputs,) bool (PoRep: only input 0 is in B).
        b_aux_density: (aux_size,) bool.
    """

    n: int
    aux_size: int
    inp: np.ndarray
    a_aux_density: np.ndarray
    b_inp_density: np.ndarray
    b_aux_density: np.ndarray

    @property
    def l_size(self) -> int:
        return self.aux_size

    @property
    def a_size(self) -> int:
        return int(self.inp.shape[0] + self.a_aux_density.sum())

    @property
    def b_size(self) -> int:
        return int(self.b_inp_density.sum() + self.b_aux_density.sum())


def make_circuit(config: PipelineConfig) -> Circuit:
    """The circuit structure of a run (depends on ``config.seed``, n, aux_ratio, density), or that
    of ``config.real`` (its densities; ``inp`` = partition 0's inputs, see :func:`partition_circuit`)."""
    if config.real is not None:
        rc = config.real
        return _frozen(Circuit(config.n, rc.aux_size, rc.inputs(0), rc.a_aux_density, rc.b_inp_density, rc.b_aux_density))
    rng = np.random.default_rng([config.seed, 0xC1C])
    aux = config.aux_size
    inp = np.empty((config.num_inputs, 4), dtype=np.uint64)
    fill_fr(inp, rng)
    inp[0] = (1, 0, 0, 0)
    a_den = rng.random(aux) < config.density.a_aux
    b_den = rng.random(aux) < config.density.b_aux
    b_inp = np.zeros(config.num_inputs, dtype=bool)
    b_inp[0] = True
    return _frozen(Circuit(config.n, aux, inp, a_den, b_inp, b_den))


def _frozen(c: Circuit) -> Circuit:
    for arr in (c.inp, c.a_aux_density, c.b_inp_density, c.b_aux_density):
        arr.setflags(write=False)
    return c


def partition_circuit(config: PipelineConfig, circuit: Circuit, partition: int) -> Circuit:
    """The structure that ``partition`` is proven with: ``circuit`` itself, or for a real circuit
    the same densities with that partition's public inputs (its witness's)."""
    if config.real is None:
        return circuit
    inp = config.real.inputs(partition)
    if np.array_equal(inp, circuit.inp):
        return circuit
    return _frozen(replace(circuit, inp=np.array(inp)))


def fill_fr(out: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Fill ``out`` ((m, 4) uint64, C-contiguous) with uniform values in [0, 2^254), in place."""
    if out.ndim != 2 or out.shape[1] != 4 or out.dtype != np.uint64:
        raise ValueError(f"expected an (m, 4) uint64 array, got shape {out.shape} dtype {out.dtype}")
    m = out.shape[0]
    for i in range(0, m, _CHUNK):
        j = min(m, i + _CHUNK)
        out[i:j] = rng.integers(0, 2**64, size=(j - i, 4), dtype=np.uint64)
        out[i:j, 3] &= FR_TOP_MASK
    return out


def fill_aux(out: np.ndarray, rng: np.random.Generator, zero: float, one: float) -> np.ndarray:
    """Fill ``out`` ((m, 4) uint64) with an aux assignment: 0 with probability ``zero``, 1 with
    probability ``one``, otherwise uniform in [0, 2^254). In place, vectorised per chunk."""
    fill_fr(out, rng)
    m = out.shape[0]
    for i in range(0, m, _CHUNK):
        j = min(m, i + _CHUNK)
        u = rng.random(j - i)
        blk = out[i:j]
        z = u < zero
        o = (u >= zero) & (u < zero + one)
        blk[z] = 0
        blk[o] = (1, 0, 0, 0)
    return out


def synthesize_into(config: PipelineConfig, partition: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, aux: np.ndarray) -> np.ndarray | None:
    """Write partition ``partition``'s a, b, c ((n, 4) each) and aux ((aux_size, 4)) in place.

    Returns:
        None (synthetic), or for ``config.real`` the partition's witness ((num_inputs + aux_size, 4)
        uint64: :meth:`~zkgpu.pipeline.real.RealCircuit.synthesize_into`, the QAP evaluation),
        whose private part is written to aux.

    Raises:
        ValueError: a buffer of the wrong shape or dtype.
    """
    for name, arr, rows in (("a", a, config.n), ("b", b, config.n), ("c", c, config.n), ("aux", aux, config.aux_size)):
        if not isinstance(arr, np.ndarray) or arr.shape != (rows, 4) or arr.dtype != np.uint64:
            raise ValueError(f"synthesis buffer {name} must be ({rows}, 4) uint64, got {getattr(arr, 'shape', None)} {getattr(arr, 'dtype', type(arr).__name__)}")
    if config.real is not None:
        w = config.real.synthesize_into(partition, a, b, c)
        aux[:] = w[config.num_inputs :]
        return w
    rng = np.random.default_rng([config.seed, 1, partition])
    fill_fr(a, rng)
    fill_fr(b, rng)
    fill_fr(c, rng)
    fill_aux(aux, rng, config.density.zero, config.density.one)
    return None


def synthesize_arrays(config: PipelineConfig, partition: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fresh (a, b, c, aux) for a partition (tests and references)."""
    a, b, c = (np.empty((config.n, 4), dtype=np.uint64) for _ in range(3))
    aux = np.empty((config.aux_size, 4), dtype=np.uint64)
    synthesize_into(config, partition, a, b, c, aux)
    return a, b, c, aux
