"""The :class:`RealCircuit` protocol: a real Groth16 circuit proven by the pipeline, one witness per partition.

Called at setup (bases), synthesize (a, b, c and witness), ntt_msm_h (:meth:`RealCircuit.h_scalars`), b_g2_msm and
finalize. Implemented by :class:`zkgpu.groth16.workload.SnarkjsCircuit`."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["RealCircuit"]


class RealCircuit(Protocol):
    """A real circuit: ``name``, ``n`` (domain), ``num_inputs`` (with the 1), ``aux_size``, ``constraints``, and bool
    densities ``a_aux_density``, ``b_aux_density`` (aux_size,), ``b_inp_density`` (num_inputs,). Thread-safe after setup.
    """

    name: str
    n: int
    num_inputs: int
    aux_size: int
    constraints: int
    a_aux_density: np.ndarray
    b_inp_density: np.ndarray
    b_aux_density: np.ndarray

    def setup(self, device: str) -> None:
        """Prepare for ``device`` (``"gpu"``: device tables of the H conversion). Called once."""

    def bases(self) -> dict[str, np.ndarray]:
        """The G1 MSM bases ``{"h", "l", "a", "b_g1"}`` (host ``(m, 12)`` uint64), ``a`` and
        ``b_g1`` restricted to the inputs then the aux signals of their densities."""

    def inputs(self, partition: int) -> np.ndarray:
        """``(num_inputs, 4)`` uint64: the first witness values (1, then the public signals) of
        the witness that ``partition`` proves."""

    def synthesize_into(self, partition: int, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Write the partition's a, b, c (``(n, 4)`` uint64 each, zkgpu's domain order) in place;
        return its witness, ``(num_inputs + aux_size, 4)`` uint64 canonical Fr."""

    def h_scalars(self, h: Any, stream: Any) -> Any:
        """The H MSM's scalars from h's n coefficients (canonical; a CuPy array on ``stream``, or
        a numpy array with ``stream`` None); same kind of array out."""

    def b_g2(self, witness: np.ndarray) -> np.ndarray:
        """The B2 G2 MSM of a witness on the CPU: ``(1, 24)`` uint64."""

    def finish(self, partition: int, witness: np.ndarray, msms: dict[str, np.ndarray], b2: np.ndarray) -> Any:
        """The partition's proof from the G1 MSMs (``{"h", "l", "a", "b_g1"}``, ``(1, 12)`` each) and the G2 one."""
