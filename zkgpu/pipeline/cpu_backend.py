"""The CPU :class:`~zkgpu.pipeline.backend.Backend`: reference math on the host (Python-int H, arkworks MSMs)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from zkgpu.arith.curve import g1_from_arkworks, g1_to_arkworks
from zkgpu.arith.field import fr_from_ints, fr_to_ints
from zkgpu.core import optional
from zkgpu.gpu.msm.pippenger import PrepMsm
from zkgpu.gpu.ntt.qap import compute_h_reference
from zkgpu.pipeline.backend import BASE_NAMES, HStart, Stream, fan_out
from zkgpu.pipeline.config import PipelineConfig
from zkgpu.pipeline.points import cpu_g2_msm, cpu_points, g2_bases, scalars_to_arkworks
from zkgpu.pipeline.split import bitmap_indices, prep_partition
from zkgpu.pipeline.synthesis import Circuit

__all__ = ["CpuBackend", "cpu_compute_h"]


def cpu_compute_h(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """H coefficients (n, 4) uint64 from a, b, c (n, 4) by the CPU reference. Raises ValueError: a value >= r."""
    return fr_from_ints(compute_h_reference(fr_to_ints(a), fr_to_ints(b), fr_to_ints(c)))


class CpuBackend:
    """Reference math on the host; thread-safe after :meth:`setup`. :meth:`for_device` gives an emulated GPU sharing the bases."""

    device = "cpu"

    def __init__(self, config: PipelineConfig, circuit: Circuit, device_id: int = 0) -> None:
        self.config, self.circuit = config, circuit
        self.device_id = device_id
        self.bases: dict[str, np.ndarray] = {}
        self._ark_bases: dict[str, list[Any]] = {}
        self._g2: list[Any] = []

    def setup(self) -> None:
        """The bases: deterministic points from ``config.seed`` (arkworks) and the G2 bases, or
        the real circuit's key points (``config.real``)."""
        real = self.config.real
        if real is not None:
            real.setup("cpu")
            self.bases.update(real.bases())
        else:
            sizes = {"h": self.config.n, "l": self.circuit.l_size, "a": self.circuit.a_size, "b_g1": self.circuit.b_size}
            for tag, nm in enumerate(BASE_NAMES):
                self.bases[nm] = cpu_points(sizes[nm], self.config.seed, tag)
            self._g2 = g2_bases(self.config.b_g2_terms, self.config.seed)
        for nm in BASE_NAMES:
            self._ark_bases[nm] = g1_to_arkworks(self.bases[nm], checked=False)  # generated or the key's: valid points

    def for_device(self, gpu: int) -> CpuBackend:
        """The emulated GPU ``gpu``: a shallow copy sharing the bases (set up already when this one is)."""
        if gpu == self.device_id:
            return self
        other = copy.copy(self)
        other.device_id = gpu
        return other

    def bind_thread(self) -> None:
        """CPU: nothing to select."""

    def new_stream(self) -> Stream:
        return None

    def last_transfers(self) -> list[Any]:
        return []

    def h2d(self, host: Sequence[np.ndarray], stream: Stream) -> tuple[list[np.ndarray], int]:
        """CPU: no copy (the "device" arrays are the host arrays); returns the bytes a GPU would move."""
        return list(host), int(sum(x.nbytes for x in host))

    def start_h(self, inputs: Sequence[np.ndarray], stream: Stream) -> HStart:
        """CPU: no copy; the bytes a GPU would move (see :meth:`zkgpu.pipeline.gpu_backend.GpuBackend.start_h`)."""
        return HStart(list(inputs), int(sum(x.nbytes for x in inputs)))

    def finish_h(self, st: HStart, stream: Stream, wait: bool = True) -> np.ndarray:
        """CPU: :func:`cpu_compute_h` (Python ints, at once whatever ``wait``); no copy to expose
        (``copy_ms = exposed_ms = 0``)."""
        st.timing.update(copy_ms=0.0, exposed_ms=0.0)
        return cpu_compute_h(*st.bufs)

    def complete_h(self, st: HStart) -> None:
        """CPU: nothing is deferred."""

    def synchronize(self, stream: Stream) -> None:
        pass

    def mark(self, stream: Stream) -> None:
        """CPU: the work is done when a call returns."""
        return None

    def wait(self, mark: Any) -> None:
        pass

    def ready(self, mark: Any) -> bool:
        return True

    def to_host(self, point: np.ndarray) -> np.ndarray:
        return np.asarray(point, dtype=np.uint64).reshape(1, 12)

    def msm(self, name: str, scalars: np.ndarray, idx: np.ndarray | None, stream: Stream, defer: bool = False) -> np.ndarray:
        """arkworks ``G1Point.multiexp_unchecked`` over ``bases[name]`` (or its rows ``idx``)."""
        pts = self._ark_bases[name]
        if idx is not None:
            pts = [pts[int(i)] for i in idx]
        if len(pts) == 0:
            return np.zeros((1, 12), dtype=np.uint64)
        return g1_from_arkworks([optional.arkworks().G1Point.multiexp_unchecked(pts, scalars_to_arkworks(np.asarray(scalars)))])

    def batch_add(self, name: str, bitmap: np.ndarray, stream: Stream, defer: bool = False) -> np.ndarray:
        """The sum (arkworks) of the bases whose bit is set in ``bitmap``."""
        pts = self._ark_bases[name]
        acc = optional.arkworks().G1Point.identity()
        for i in bitmap_indices(bitmap, len(pts)):
            acc = acc + pts[int(i)]
        return g1_from_arkworks([acc])

    def msm_many(self, jobs: dict[str, tuple[np.ndarray, np.ndarray | None]], stream: Stream, concurrent: bool = False, defer: bool = False) -> dict[str, np.ndarray]:
        """:meth:`msm` of each ``name: (scalars, idx)``; ``concurrent``: on threads (:func:`~zkgpu.pipeline.backend.fan_out`)."""
        return fan_out(lambda nm, j: self.msm(nm, j[0], j[1], stream), jobs, concurrent)

    def batch_add_many(self, jobs: dict[str, np.ndarray], stream: Stream, concurrent: bool = False, defer: bool = False) -> dict[str, np.ndarray]:
        """:meth:`batch_add` of each ``name: bitmap``; ``concurrent``: on threads (:func:`~zkgpu.pipeline.backend.fan_out`)."""
        return fan_out(lambda nm, bm: self.batch_add(nm, bm, stream), jobs, concurrent)

    def b_g2(self, scalars: np.ndarray) -> bytes:
        """:func:`zkgpu.pipeline.points.cpu_g2_msm` over the G2 bases."""
        return cpu_g2_msm(self._g2, scalars)

    def prep(self, aux: np.ndarray, prep: str = "cpu", threads: int | None = None, circuit: Circuit | None = None) -> dict[str, PrepMsm]:
        """:func:`zkgpu.pipeline.split.prep_partition` (``prep`` = ``cpu`` or ``cpu_parallel``)
        with ``circuit`` (default the run's)."""
        return prep_partition(circuit or self.circuit, aux, prep, threads=threads)
