"""Configuration of the two-worker proving pipeline (a scaled-down cuzk engine partition path).

Scaling (upstream's sizes: filecoin-project/curio, extern/supraseal-c2 and the cuzk engine; data/reference/README.md): one PoRep-32GiB
partition has 130,278,869 constraints in a 2^27 domain, aux 130,169,893, 328 inputs. We keep
the *shape* and scale the size with ``n`` (constraints = domain = ``n``, a power of two; aux =
``aux_ratio * n``; a/b/c are ``3 * n * 32`` bytes). Every phase is linear (or n log n) in n, so
per-partition times scale by about 2x per step of log2(n).

Default ``n = 2**23`` (a/b/c 3 x 256 MiB = 805 MB per partition, 1/16 of PoRep). Measured on the
H200 at n = 2^22 (``data/nvidia-h200-20261129-record-2``, 8 synthesis threads, 8 host-load threads,
medians per partition, ms):

=================  ===============  ================
phase              pageable         pinned_pool
=================  ===============  ================
synthesize         790              600
ntt_msm_h          185              87
  H2D share        58% (3.3 GB/s)   4.7% (42 GB/s)
prep_msm           404              373
batch_add          13               13
tail_msm           38               38
barrier_wait       0                100
=================  ===============  ================

Every phase is linear (or n log n) in n, so the default 2^23 takes about twice these, about a second
of GPU-side work per partition: long enough that launch overheads are negligible, short enough that a
16-partition scenario records in seconds. The H200's 16-core host cannot synthesize faster than
about one 2^22 partition per ~75-100 ms with 8 threads, so larger n only lengthens recordings.

Proportions. The seed's order is ntt_msm_h (pageable) > prep_msm > batch_add > tail_msm, and after the
fix prep_msm > ntt_msm_h (the barrier wait appears inside the lock). Our prep_msm is numpy (5-10x
slower per scalar than upstream's C++) while the H200 is faster than the RTX 5070 Ti, so at PoRep's
aux/constraints ratio prep_msm would dwarf everything. The default ``aux_ratio = 0.5`` halves the aux
work (prep_msm, batch_add, tail_msm) relative to ntt_msm_h. A worker reaches the barrier only after
its mutex_wait and ntt_msm_h, so in the pageable baseline prep_msm (404 ms) is done by then and the
barrier wait is ~0, as in the seed; with the pinned pool it is not (100 ms inside the lock at gw=2).
If a recording shows barrier_wait in the pageable baseline, lower ``aux_ratio``; if the pinned pool
shows none, raise it. Set ``aux_ratio=0.97`` for the PoRep shape. batch_add < tail_msm here because
our bases are device-resident, whereas upstream's batch_add streams 34.5 GB of SRS points over PCIe.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from zkgpu.gpu.msm.prep import PREPS
from zkgpu.pipeline.real import RealCircuit

__all__ = ["Density", "PipelineConfig", "TRANSFERS", "LOCK_SCOPES", "H2D_STAGES", "MSM_BASES", "DEVICES", "PREPS", "POOL_SCOPES", "FaultHook"]

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
    """One pipeline run.

    Attributes:
        n: constraints per partition = NTT domain size (power of two, 2^2..2^27); a, b, c are
            (n, 4) uint64 Fr each.
        partitions: partitions to prove (cuzk: 10 per PoRep sector).
        synth_workers: synthesis threads (CPU).
        gw: GPU workers per GPU (cuzk ``gpu_workers_per_device``, default 2), sharing one mutex.
        gpus: number of GPUs, one worker set each (cuzk's engine over a host's GPUs): ``gw`` workers,
            its own mutex, streams and backend (device="gpu": CUDA ordinal g, checked against the
            devices present when the run starts; device="cpu": N emulated devices over the same
            math). Synthesis is shared; events and TIMELINE lines carry the GPU (``gpu``). A partition
            goes to whichever worker picks it up, as the cuzk queue does (``pool_scope="per_gpu"``:
            to the GPU chosen when it is synthesized). A GPU that fails with :class:`~zkgpu.pipeline.sync.DeviceLost`
            (or a sticky CUDA error) takes no more partitions; the others go on.
        pool_scope: with ``transfer="pinned_pool"``: ``shared`` (default; cuzk's one engine-level pool,
            ``PinnedPool`` grows to what is in flight on all GPUs, so no GPU waits for buffers another
            holds idle, and pinned memory under unified addressing is DMA-able by every GPU) or
            ``per_gpu`` (one pool per GPU: synthesis routes partition p to the live GPU with the fewest
            partitions queued or in flight and checks a/b/c out of that GPU's pool; for a NUMA host
            where each GPU's buffers should stay on its socket, and to measure the difference).
        transfer: H2D path of a/b/c: ``pageable`` (baseline: np.empty per partition),
            ``registered`` (Phase 9: cudaHostRegister the pageable arrays, then async copy),
            ``pinned_pool`` (the fix: synthesize into PinnedPool buffers), ``resident``
            (compute-only bound: a/b/c are copied (pageable) *before* the worker takes the
            mutex, so ntt_msm_h finds them on the device and moves 0 bytes; the copy is an
            ``h2d`` event outside the mutex with ``stage=pre_lock``; not an upstream mode).
        lock_scope: ``coarse`` (upstream: barrier_wait inside the mutex) or ``narrow`` (barrier
            outside: release the mutex after ntt_msm_h, wait for prep_msm, re-take it for
            batch_add + tail_msm), or ``none`` (no shared mutex: the workers of a GPU run their
            kernels concurrently on their own streams; upstream's mutex guards a 16 GB card's
            memory, which an H200 does not need; not an upstream mode), or ``submit`` (as narrow,
            but the mutex covers only the enqueueing of the GPU phases on the GPU's one shared
            stream; a/b/c are copied before the mutex, and the wait for the kernels, the deferred
            checks and the results' D2H come after its release, in ``gpu_wait``; see
            :mod:`zkgpu.pipeline.worker`; not an upstream mode).
        h2d_stage: ``in_lock`` (upstream: a/b/c are copied inside ntt_msm_h, the mutex held) or
            ``pre_lock`` (the worker copies them by ``transfer``'s path on its own stream *before*
            it asks for the mutex, an ``h2d`` event with ``stage=pre_lock``; its DMA overlaps the
            other worker's kernels, and ntt_msm_h finds them on the device; its kernels follow the
            copy on the same stream; not an upstream mode). ``transfer="resident"`` and
            ``lock_scope="submit"`` always copy before the mutex, whatever this says
            (:attr:`h2d_pre_lock` is the stage a run uses).
        msm_bases: ``plain`` (upstream: each G1 MSM is :func:`zkgpu.gpu.msm.pippenger.msm_device` over the bases, one
            bucket set per window) or ``precomputed`` (the GPU backend's ``setup`` builds a table of
            shifted bases ``2^(c*w) P_i`` per base set (H, L, A, B_G1; :class:`zkgpu.gpu.msm.precomp.PrecomputedBases`,
            ``96 * nwin * n`` bytes each) and every G1 MSM runs one bucket set over it
            (:func:`zkgpu.gpu.msm.precomp.msm_precomputed`; the tails over their rows ``idx`` with
            :func:`zkgpu.gpu.msm.precomp_rows.msm_precomputed_rows`). Same results bit for bit. The CPU
            backend computes the same sums either way (its reference MSM), so ``precomputed`` is
            accepted there and changes nothing. Not an upstream default (sppark offers it).
        device: ``gpu`` (CuPy kernels) or ``cpu`` (reference math, same threads/mutex/barrier).
        prep: how the prep_msm thread splits the L, A, B scalars (:mod:`zkgpu.gpu.msm.prep`): ``cpu``
            (numpy, one thread, as upstream's prep_msm with one circuit), ``cpu_parallel``
            (``prep_threads`` threads over chunks, numba, the GIL released) or ``gpu`` (kernels on
            the prep thread's own stream; aux is copied to the device there; needs device="gpu").
            Not an upstream mode except ``cpu``.
        prep_threads: threads of ``cpu_parallel`` (0 = :func:`zkgpu.gpu.msm.prep.default_threads`).
        tail_streams: 1 (upstream): the three batch additions, then the three tail MSMs, one after
            another on the worker's stream; 3: the three of each at once, each on its own stream
            from a thread (they are independent, small and latency-bound). Not an upstream mode.
        seed: base seed; partition p's witness comes from ``(seed, p)``, the bases from ``seed``.
        aux_ratio: aux size / n (PoRep: 130,169,893 / 2^27 = 0.97; default 0.5, see above).
        num_inputs: public inputs incl. the leading 1 (PoRep 328).
        density: :class:`Density`.
        b_g2_terms: size of the scaled-down CPU G2 multiexp (first significant B scalars).
        queue_depth: max partitions synthesized but not yet through the start half (cuzk's
            memory-budget backpressure / ``max_gpu_queue_depth``); 0 = 2 * gw * gpus.
        timeout_s: limit (seconds) for any one step (synthesize, prep_msm, ntt_msm_h, ..., the
            run's watchdog) or blocking wait (barrier, queue, joins; the mutex wait gets
            ``timeout_s * (4 * gw + 1)``); a hang becomes a ``TimeoutError`` (``StageTimeout``)
            in that partition's result instead of a hung run.
        run: run name (default derived from the settings).
        log_path / events_path: where the cuzk-format log and the Parquet event table go
            (created fresh; existing files are never touched: FileExistsError).
        echo: also print each log line to stderr.
        fault_hook: see :data:`FaultHook` (tests).
        real: a real circuit (:class:`~zkgpu.pipeline.real.RealCircuit`, e.g.
            :class:`zkgpu.groth16.workload.SnarkjsCircuit`): each partition proves one of its
            witnesses with its key's points as bases, and its result carries the proof; ``n`` and
            ``num_inputs`` must be the circuit's (:meth:`for_circuit` sets them), ``aux_ratio``,
            ``density`` and ``b_g2_terms`` are then unused (the circuit's own sizes and densities,
            the full B2 MSM). None: synthetic partitions.
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
        _int("partitions", 1)
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
        if not (isinstance(self.timeout_s, (int, float)) and self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise ValueError(f"PipelineConfig.timeout_s must be a positive number of seconds, got {self.timeout_s!r}")
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
