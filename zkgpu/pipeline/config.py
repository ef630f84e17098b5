"""Configuration of the two-worker proving pipeline (a scaled-down cuzk engine partition path).

Scaling: one PoRep-32GiB partition has 130,278,869 constraints in a 2^27 domain, aux 130,169,893,
328 inputs (filecoin-project/curio; data/reference/README.md). We keep the *shape* and scale the size
with ``n``: constraints = domain = ``n`` (a power of two), aux = ``aux_ratio * n``, a/b/c are
``3 * n * 32`` bytes. Every phase is linear (or n log n) in n.

Defaults: ``n = 2**23`` (a/b/c 805 MB per partition, 1/16 of PoRep), long enough that launch overheads
are negligible and short enough that a scenario records in seconds. ``aux_ratio = 0.5`` (PoRep: 0.97)
halves the aux work (prep_msm, batch_add, tail_msm) against ntt_msm_h, because our prep_msm (numpy)
is slower per scalar than upstream's C++ while the H200 is faster than upstream's GPU; it keeps the
seed's order of phases (pageable: ntt_msm_h > prep_msm, so barrier_wait ~ 0; pinned pool: prep_msm >
ntt_msm_h, a barrier wait inside the lock). Per-phase times of the recordings:
``data/<gpu>-<date>-record*/`` and notebooks 01, 06.
"""

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
"""``hook(step, partition, worker)`` called at the start of each pipeline step (``synthesize``,
``prep_msm``, ``b_g2_msm``, ``h2d`` (the copy of a/b/c before the mutex, where
:attr:`PipelineConfig.h2d_pre_lock`), ``ntt_msm_h``, ``barrier_wait``, ``batch_add``, ``tail_msm``,
``gpu_wait``, ``finalize``); worker is None for synthesis and for the prep thread. Raising from it injects a
fault (tests); raising ``KeyboardInterrupt`` simulates Ctrl-C."""


@dataclass(frozen=True)
class Density:
    """Witness statistics of the synthesized aux assignment (upstream's PoRep witness, data/reference/README.md).

    Attributes:
        zero: fraction of aux values equal to 0.
        one: fraction equal to 1 (these go to batch_add).
        (the rest, ``1 - zero - one``, are full-size uniform values < 2^254: the tail MSM.)
        a_aux: fraction of aux positions in the A query (PoRep: 129,753,292 / 130,169,893 = 99.7%).
        b_aux: fraction in the B query (PoRep: 33,112,281 / 130,169,893 = 25.4%).

    The PoRep witness is "overwhelmingly boolean" (SHA-256/Poseidon bit decompositions); its
    exact 0/1/full split is not published, so ``zero=0.45, one=0.50`` (5% full-size) is our
    assumption: it makes every split decision true (popcount <= half) as upstream, and the tails
    small next to the batch additions.
    """

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
    """One pipeline run (the modes marked "not upstream" are this project's what-ifs).

    Attributes:
        n: constraints per partition = NTT domain size (power of two, 2^2..2^27); a, b, c are
            (n, 4) uint64 Fr each.
        partitions: partitions to prove (cuzk: 10 per PoRep sector).
        synth_workers: synthesis threads (CPU).
        gw: GPU workers per GPU (cuzk ``gpu_workers_per_device``), sharing one mutex.
        gpus: GPUs, one worker set each (cuzk's engine over a host's GPUs): ``gw`` workers, its own
            mutex, streams and backend (device="gpu": CUDA ordinal g, checked when the run starts;
            device="cpu": N emulated devices). Synthesis is shared; events and TIMELINE carry ``gpu``.
            A partition goes to whichever worker picks it up (cuzk's queue). A GPU failing with
            :class:`~zkgpu.pipeline.sync.DeviceLost` (or a sticky CUDA error) takes no more; the others go on.
        pool_scope: with ``pinned_pool``: ``shared`` (default; cuzk's one engine-level pool, grown to what
            is in flight on all GPUs) or ``per_gpu`` (one pool per GPU; synthesis routes a partition to
            the live GPU with the fewest queued or in flight, and checks a/b/c out of that GPU's pool).
        transfer: H2D path of a/b/c: ``pageable`` (baseline), ``registered`` (cudaHostRegister, Phase 9),
            ``pinned_pool`` (the fix: synthesize into :class:`~zkgpu.transfer.pinned_pool.PinnedPool`
            buffers), ``resident`` (compute-only bound: copied before the mutex; not upstream).
        lock_scope: ``coarse`` (upstream: barrier_wait inside the mutex), ``narrow`` (barrier outside),
            ``none`` (no shared mutex) or ``submit`` (the mutex over the enqueueing only); see
            :mod:`zkgpu.pipeline.worker`. Only ``coarse`` is upstream.
        h2d_stage: ``in_lock`` (upstream: copies inside ntt_msm_h) or ``pre_lock`` (copies before
            the mutex on the worker's stream); ``resident`` and ``submit`` always copy before it
            (:attr:`h2d_pre_lock` is the stage a run uses).
        msm_bases: ``plain`` (upstream: :func:`zkgpu.gpu.msm.pippenger.msm_device`) or ``precomputed``
            (shifted bases built once per base set, :class:`zkgpu.gpu.msm.precomp.PrecomputedBases`,
            ``96 * nwin * n`` bytes each); same results bit for bit; no effect on the CPU backend.
        device: ``gpu`` (CuPy kernels) or ``cpu`` (reference math, same threads/mutex/barrier).
        prep: prep_msm's split of the L, A, B scalars (:mod:`zkgpu.gpu.msm.prep`): ``cpu`` (upstream),
            ``cpu_parallel`` (``prep_threads`` numba threads) or ``gpu`` (needs device="gpu").
        prep_threads: threads of ``cpu_parallel`` (0 = :func:`zkgpu.gpu.msm.prep.default_threads`).
        tail_streams: 1 (upstream: batch additions, then tail MSMs, on the worker's stream) or 3
            (the three of each at once on their own streams).
        seed: base seed; partition p's witness comes from ``(seed, p)``, the bases from ``seed``.
        aux_ratio: aux size / n (PoRep: 130,169,893 / 2^27 = 0.97).
        num_inputs: public inputs incl. the leading 1 (PoRep 328).
        density: :class:`Density`.
        b_g2_terms: size of the scaled-down CPU G2 multiexp (first significant B scalars).
        queue_depth: max partitions synthesized but not yet through the start half (cuzk's
            ``max_gpu_queue_depth``); 0 = 2 * gw * gpus.
        timeout_s: seconds any one step or blocking wait may take (the mutex wait:
            ``timeout_s * (4 * gw + 1)``); a hang fails that partition with ``StageTimeout``.
        run: run name (default derived from the settings).
        log_path / events_path: the cuzk-format log and the Parquet event table, created fresh
            (an existing file: FileExistsError).
        echo: also print each log line to stderr.
        fault_hook: see :data:`FaultHook` (tests).
        real: a real circuit (:class:`~zkgpu.pipeline.real.RealCircuit`): each partition proves one
            of its witnesses; ``n`` and ``num_inputs`` must be the circuit's (:meth:`for_circuit`),
            ``aux_ratio``, ``density`` and ``b_g2_terms`` are unused. None: synthetic partitions.
    """

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
