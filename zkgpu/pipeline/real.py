"""What the pipeline asks of a real Groth16 circuit: the :class:`RealCircuit` protocol.

With ``PipelineConfig(real=...)`` every partition proves one witness of a real circuit instead of
synthetic a/b/c: the pipeline keeps its threads, phases and event names (synthesize, prep_msm,
b_g2_msm, ntt_msm_h with h2d/ntt/h_msm, barrier_wait, batch_add, tail_msm, finalize) and calls
the circuit at five points:

* **setup** (once, before any partition): :meth:`RealCircuit.setup`, and :meth:`RealCircuit.bases`
  become the backend's MSM bases (H, L, A, B_G1: the proving key's points) in place of generated ones;
* **synthesize**: :meth:`RealCircuit.synthesize_into` writes the QAP's a, b, c (zkgpu's domain
  order) into the partition's buffers (pageable or pinned) and returns the witness, whose private
  part is the partition's aux (the L, A, B scalars of prep_msm, batch_add and tail_msm);
* **ntt_msm_h**: after the H computation (cuzk's coset-by-7 convention, on the backend),
  :meth:`RealCircuit.h_scalars` turns h's coefficients into the scalars of the key's H points
  (inside the ``ntt`` phase), which the H MSM then uses;
* **b_g2_msm** (prep thread, after prep_msm): :meth:`RealCircuit.b_g2`, the full G2 MSM on the CPU;
* **finalize**: :meth:`RealCircuit.finish` assembles the proof from the MSMs.

The implementation for snarkjs keys and circom witnesses is
:class:`zkgpu.groth16.workload.SnarkjsCircuit` (a producer above the pipeline: the pipeline only
knows this protocol). Shapes: points ``(m, 12)`` / ``(1, 12)`` uint64 affine G1, ``(1, 24)`` G2;
a/b/c/h and scalars ``(n, 4)`` uint64 canonical Fr.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["RealCircuit"]


class RealCircuit(Protocol):
    """A real circuit proven by the pipeline, one witness per partition (module docstring).

    Attributes:
        name: the circuit's name (run names, manifests).
        n: the NTT domain size (a power of two): the pipeline's ``n``.
        num_inputs: 1 + public signals (the leading 1 included): the pipeline's ``num_inputs``.
        aux_size: private signals: the pipeline's aux size (the L MSM's length).
        constraints: the circuit's constraints (<= n), for manifests.
        a_aux_density, b_aux_density: ``(aux_size,)`` bool, the private signals with a nonzero
            A (B) point; b_inp_density: ``(num_inputs,)`` bool, likewise for B over the inputs.

    Thread safety: after :meth:`setup`, every method may be called from several threads at once.
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
        """The partition's proof from the G1 MSMs (``{"h", "l", "a", "b_g1"}``, ``(1, 12)``
        each) and the G2 one."""
