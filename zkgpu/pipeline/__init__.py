"""The two-worker proving pipeline (a scaled-down cuzk engine partition path).

``run_pipeline(PipelineConfig(...))`` returns ``events`` (event table), ``log_lines`` (cuzk-format) and ``partitions``
(:class:`~zkgpu.pipeline.worker.PartitionResult` each)."""

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
