"""Configuration of the proving pipeline, PoRep's shape scaled by ``n``.

constraints = domain = ``n``, aux = ``aux_ratio * n``, a/b/c ``3 * n * 32`` bytes (PoRep-32GiB: 2^27 domain, aux
130,169,893, 328 inputs; data/reference/README.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from zkgpu.gpu.msm.prep import PREPS
from zkgpu.pipeline.real import RealCircuit

__all__ = ["Density", "PipelineConfig", "TRANSFERS", "LOCK_SCOPES", "H2D_STAGES", "MSM_BASES", "DEVICES", "PREPS", "POOL_SCOPES", "FaultHook",
           "MAX_PARTITIONS", "MAX_TIMEOUT_S"]

TRANSFERS = ("pageable", "registered", "pinned_pool", "resident")

LOCK_SCOPES = ("coarse", "narrow", "none", "submit")
#: where the H2D of a/b/c happens: ``in_lock`` (upstream: inside ntt_msm_h, mutex held) or
#: ``pre_lock`` (before the worker asks for the mutex, on its own stream)
H2D_STAGES = ("in_lock", "pre_lock")
#: the G1 MSMs' bases: ``plain`` (:func:`zkgpu.gpu.msm.pippenger.msm_device`) or ``precomputed`` (shifted-bases tables,
#: :mod:`zkgpu.gpu.msm.precomp` and :mod:`zkgpu.gpu.msm.precomp_rows`)
MSM_BASES = ("plain", "precomputed")
DEVICES = ("gpu", "cpu")
#: with ``transfer="pinned_pool"`` and several GPUs: ``shared`` (cuzk: one engine-level pool; any GPU takes any
#: synthesized partition) or ``per_gpu`` (a pool per GPU; a partition is routed to a GPU when it is synthesized)
POOL_SCOPES = ("shared", "per_gpu")

#: upper bounds of a run: partitions (cuzk proves 10 per PoRep sector; `zkgpu record` has the same bound; this bounds the result table and the run's
#: deadline ``timeout_s * (partitions + 2)``) and seconds per step (a week; the mutex wait ``timeout_s * (4 * gw + 1)``
#: must stay below ``threading.TIMEOUT_MAX``, about 292 years on Linux but 49 days on some platforms)
MAX_PARTITIONS = 10_000
MAX_TIMEOUT_S = 7 * 24 * 3600.0

FaultHook = Callable[[str, int, "int | None"], None]
"""``hook(step, partition, worker)`` called at the start of each pipeline step (worker None for synthesis and
prep); raising injects a fault (tests), ``KeyboardInterrupt`` simulates Ctrl-C."""


@dataclass(frozen=True)
class Density:
    """Witness statistics of the aux assignment: fractions ``zero``, ``one`` (rest uniform < 2^254), and the aux
    positions in the A (``a_aux``) and B (``b_aux``) queries. 0.45/0.50 is an assumption (not published)."""

    zero: float = 0.45
    one: float = 0.50
    a_aux: float = 0.997
    b_aux: float = 0.254

    @property
    def full(self) -> float:
        return 1.0 - self.zero - self.one

    def validate(self) -> None:
        for name in ("zero", "one", "a_aux", "b_aux"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise ValueError(f"Density.{name} must be in [0, 1], got {v!r}")
        if self.zero + self.one > 1.0 + 1e-12:
            raise ValueError(f"Density.zero + Density.one must be <= 1, got {self.zero} + {self.one}")


@dataclass(frozen=True)
class PipelineConfig:
    """One pipeline run.

    Attributes:
        n: constraints = NTT domain size (power of two, 2^2..2^27).
        partitions, synth_workers: partitions to prove; synthesis threads.
        gw, gpus: GPU workers per GPU (sharing one mutex); GPUs (device="cpu": emulated).
        pool_scope: ``shared`` or ``per_gpu`` pinned pools.
        transfer: ``pageable``, ``registered``, ``pinned_pool`` or ``resident`` (copied before the mutex).
        lock_scope: ``coarse`` (upstream), ``narrow``, ``none`` or ``submit`` (:mod:`zkgpu.pipeline.worker`).
        h2d_stage: ``in_lock`` or ``pre_lock`` (:attr:`h2d_pre_lock`: the one a run uses).
        msm_bases: ``plain`` or ``precomputed`` (:class:`zkgpu.gpu.msm.precomp.PrecomputedBases`).
        device: ``gpu`` or ``cpu``. prep: ``cpu``, ``cpu_parallel`` or ``gpu``; prep_threads (0: default).
        tail_streams: 1 or 3. seed: partition p's witness from (seed, p).
        aux_ratio, num_inputs, density, b_g2_terms: the synthetic circuit's shape.
        queue_depth: partitions synthesized but not through the start half (0: 2 * gw * gpus).
        timeout_s: limit of any step or wait, s (mutex wait: ``timeout_s * (4 gw + 1)``).
        run, log_path, events_path, echo: name; outputs created fresh (FileExistsError); echo to stderr.
        fault_hook: :data:`FaultHook` (tests). real: a :class:`~zkgpu.pipeline.real.RealCircuit` or None."""

    n: int = 1 << 23
    partitions: int = 4
    synth_workers: int = 2
    gw: int = 2
    gpus: int = 1
    pool_scope: str = "shared"
    transfer: str = "pageable"
    lock_scope: str = "coarse"
    h2d_stage: str = "in_lock"
    msm_bases: str = "plain"
    device: str = "gpu"
    prep: str = "cpu"
    prep_threads: int = 0
    tail_streams: int = 1
    seed: int = 0
    aux_ratio: float = 0.5
    num_inputs: int = 8
    density: Density = field(default_factory=Density)
    b_g2_terms: int = 64
    queue_depth: int = 0
    timeout_s: float = 300.0
    run: str | None = None
    log_path: Path | None = None
    events_path: Path | None = None
    echo: bool = False
    fault_hook: FaultHook | None = field(default=None, compare=False, repr=False)
    real: RealCircuit | None = field(default=None, compare=False, repr=False)

    @classmethod
    def for_circuit(cls, real: RealCircuit, **kw: Any) -> PipelineConfig:
        """A config that proves ``real`` (its ``n`` and ``num_inputs``; other fields from ``kw``)."""
        return cls(n=real.n, num_inputs=real.num_inputs, real=real, **kw)

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ValueError/TypeError naming the bad setting."""

        def _int(name: str, lo: int, hi: int | None = None) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"PipelineConfig.{name} must be an int, got {type(v).__name__} {v!r}")
            if v < lo or (hi is not None and v > hi):
                raise ValueError(f"PipelineConfig.{name} must be in [{lo}, {hi if hi is not None else 'inf'}], got {v}")

        _int("n", 4, 1 << 27)
        if self.n & (self.n - 1):
            raise ValueError(f"PipelineConfig.n must be a power of two (the NTT domain), got {self.n}")
        _int("partitions", 1, MAX_PARTITIONS)
        _int("synth_workers", 1, 64)
        _int("gw", 1, 8)
        _int("gpus", 1, 16)
        _int("seed", 0)
        _int("num_inputs", 1)
        _int("b_g2_terms", 0)
        _int("queue_depth", 0)
        _int("prep_threads", 0, 256)
        _int("tail_streams", 1, 3)
        for name, allowed in (("transfer", TRANSFERS), ("lock_scope", LOCK_SCOPES), ("h2d_stage", H2D_STAGES), ("msm_bases", MSM_BASES), ("device", DEVICES), ("prep", PREPS), ("pool_scope", POOL_SCOPES)):
            v = getattr(self, name)
            if v not in allowed:
                raise ValueError(f"PipelineConfig.{name} must be one of {allowed}, got {v!r}")
        if not (isinstance(self.aux_ratio, (int, float)) and 0.0 < self.aux_ratio <= 4.0):
            raise ValueError(f"PipelineConfig.aux_ratio must be in (0, 4], got {self.aux_ratio!r}")
        if not isinstance(self.density, Density):
            raise TypeError(f"PipelineConfig.density must be a Density, got {type(self.density).__name__}")
        self.density.validate()
        if not (isinstance(self.timeout_s, (int, float)) and 0 < self.timeout_s <= MAX_TIMEOUT_S):
            raise ValueError(f"PipelineConfig.timeout_s must be a number of seconds in (0, {MAX_TIMEOUT_S:g}], got {self.timeout_s!r}")
        if self.transfer == "registered" and self.device == "cpu":
            raise ValueError("PipelineConfig.transfer='registered' needs device='gpu' (cudaHostRegister); use 'pageable' or 'pinned_pool' on the CPU")
        if self.prep == "gpu" and self.device != "gpu":
            raise ValueError("PipelineConfig.prep='gpu' needs device='gpu'; use prep='cpu' or 'cpu_parallel' on the CPU")
        if self.real is not None and (self.n, self.num_inputs) != (self.real.n, self.real.num_inputs):
            raise ValueError(f"PipelineConfig.n={self.n} and num_inputs={self.num_inputs} must be the circuit's ({self.real.name}: n={self.real.n}, "
                             f"num_inputs={self.real.num_inputs}); use PipelineConfig.for_circuit")
        if self.fault_hook is not None and not callable(self.fault_hook):
            raise TypeError(f"PipelineConfig.fault_hook must be callable, got {type(self.fault_hook).__name__}")

    # ------------------------------------------------------------------------------------------
    @property
    def aux_size(self) -> int:
        """Aux values per partition: the circuit's private signals, else ``aux_ratio * n``."""
        if self.real is not None:
            return self.real.aux_size
        return max(1, int(round(self.aux_ratio * self.n)))

    @property
    def h2d_pre_lock(self) -> bool:
        """Whether a/b/c are copied before the mutex: ``h2d_stage="pre_lock"``, and always with
        ``transfer="resident"`` (the compute-only bound) or ``lock_scope="submit"``."""
        return self.h2d_stage == "pre_lock" or self.transfer == "resident" or self.lock_scope == "submit"

    @property
    def log_n(self) -> int:
        return self.n.bit_length() - 1

    @property
    def abc_bytes(self) -> int:
        """Bytes of a, b, c together (3 * n * 32)."""
        return 3 * self.n * 32

    @property
    def effective_queue_depth(self) -> int:
        return self.queue_depth or 2 * self.gw * self.gpus

    @property
    def run_name(self) -> str:
        prep = "" if self.prep == "cpu" else f"-prep_{self.prep}"
        real = f"-{self.real.name}" if self.real is not None else ""
        stage = "-h2d_pre_lock" if self.h2d_stage == "pre_lock" else ""
        bases = "-msm_precomp" if self.msm_bases == "precomputed" else ""
        gpus = f"-gpus{self.gpus}" if self.gpus > 1 else ""
        pools = "-pool_per_gpu" if self.pool_scope == "per_gpu" and self.transfer == "pinned_pool" else ""
        return self.run or f"{self.transfer}-{self.lock_scope}-gw{self.gw}-n{self.log_n}-{self.device}{gpus}{pools}{prep}{stage}{bases}{real}"

    def with_(self, **changes: Any) -> PipelineConfig:
        """A copy with some fields changed (validated)."""
        return replace(self, **changes)
