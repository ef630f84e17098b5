"""The two-worker proving pipeline (a scaled-down cuzk engine partition path).

Public API::

    from zkgpu.pipeline import PipelineConfig, run_pipeline
    res = run_pipeline(PipelineConfig(n=1 << 8, partitions=3, device="cpu", transfer="pinned_pool"))
    res.events        # event table (zkgpu.core.events schema)
    res.log_lines     # cuzk-format log lines (CUZK_TIMING, CUZK_NTT_H, TIMELINE, GPU_TIMING, FIN_TIMING, ...)
    res.partitions    # PartitionResult per partition: H, L, A, B_G1 points, B_G2, status, error

Modules: :mod:`.config` (settings and scaling), :mod:`.synthesis` (synthetic witness),
:mod:`.backend` (the :class:`~zkgpu.pipeline.backend.Backend` protocol the worker calls),
:mod:`.cpu_backend` and :mod:`.gpu_backend` (its two implementations), :mod:`.points` (host G1/G2
points, arkworks), :mod:`.split` (prep_msm of a partition, the split decision), :mod:`.worker`
(start half, barrier, mutex, finalizer), :mod:`.runner` (threads, queues, make_backend, run_pipeline).
"""

from zkgpu.pipeline.config import DEVICES, LOCK_SCOPES, POOL_SCOPES, TRANSFERS, Density, PipelineConfig
from zkgpu.pipeline.runner import PipelineInterrupted, PipelineResult, prepare_backend, run_pipeline
from zkgpu.pipeline.sync import DeviceLost
from zkgpu.pipeline.worker import PartitionResult

__all__ = [
    "DEVICES",
    "DeviceLost",
    "LOCK_SCOPES",
    "POOL_SCOPES",
    "TRANSFERS",
    "Density",
    "PipelineConfig",
    "PipelineInterrupted",
    "PipelineResult",
    "PartitionResult",
    "prepare_backend",
    "run_pipeline",
]
