"""The :class:`Backend` protocol the worker calls, and what both backends share.

Implementations: :class:`~zkgpu.pipeline.cpu_backend.CpuBackend` (reference math) and
:class:`~zkgpu.pipeline.gpu_backend.GpuBackend`. Points (m, 12) uint64 affine, scalars and a/b/c/h (n, 4) uint64
canonical Fr; :data:`Array` numpy (cpu) or CuPy (gpu); :data:`Stream` CuPy or None. Times ms, sizes bytes."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar

import numpy as np

from zkgpu.core import cuda as _cuda
from zkgpu.pipeline.split import Prep
from zkgpu.pipeline.synthesis import Circuit

__all__ = ["Array", "Stream", "Backend", "HStart", "BASE_NAMES", "fan_out", "malloc_trim"]

Array: TypeAlias = Any
"""numpy.ndarray on the CPU backend, cupy.ndarray on the GPU backend (CuPy is optional: untyped)."""
Stream: TypeAlias = Any
"""cupy.cuda.Stream on the GPU backend, None on the CPU backend."""

BASE_NAMES = ("h", "l", "a", "b_g1")
"""The G1 base vectors of one circuit, in the order their seeds are derived: the H, L, A and B_G1 MSMs."""


@dataclass
class HStart:
    """The H computation between ``start_h`` and ``finish_h``: ``bufs``, ``nbytes`` copied, ``transfers``, and
    ``timing`` (ms: ``copy_ms``, ``exposed_ms``, ``hidden_ms``, ``kernel_ms``, :func:`zkgpu.core.events.h2d_overlap`).
    """

    bufs: list[Array]
    nbytes: int
    transfers: list[Any] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    # GPU only: the reference event, then per vector (copy end event, kernel end event, copy ms or
    # None); the deferred value check and the device inputs it reads
    ref: Any = field(default=None, repr=False)
    marks: list[tuple[Any, Any, float | None]] = field(default_factory=list, repr=False)
    check: Any = field(default=None, repr=False)
    inputs: list[Array] = field(default_factory=list, repr=False)


class Backend(Protocol):
    """The pipeline's device interface: ``device``, ``device_id``, ``bases`` (``{name: (m, 12) uint64}``). Thread-safe
    after :meth:`setup` (one stream per worker thread)."""

    device: str
    device_id: int
    bases: dict[str, Array]

    def for_device(self, gpu: int) -> Backend:
        """The backend of GPU ``gpu`` (``self`` for its own ``device_id``), set up when this one is (the GPU's
        own bases on that device; the CPU's emulated devices share this one's)."""

    def bind_thread(self) -> None:
        """Make this backend's device the calling thread's current one (GPU: ``cupy.cuda.Device(i).use()``;
        CPU: nothing)."""

    def setup(self) -> None:
        """Make or take (``config.real``) the bases and allocate what timed partitions must not; once, before any partition."""

    def new_stream(self) -> Stream:
        """A fresh non-blocking stream for one GPU worker (None on the CPU)."""

    def h2d(self, host: Sequence[np.ndarray], stream: Stream) -> tuple[list[Array], int]:
        """Copy a, b, c ((n, 4) uint64 each) to the device by ``config.transfer``; returns the
        device arrays and the bytes moved. The per-copy results are then :meth:`last_transfers`."""

    def last_transfers(self) -> list[Any]:
        """The :class:`zkgpu.transfer.paths.TransferResult` of this thread's last copies (empty on the CPU)."""

    def start_h(self, inputs: Sequence[Array], stream: Stream) -> HStart:
        """Start the H computation from a, b, c (host arrays, copied, or device arrays): the
        copies and the queued coset NTTs. Finish with :meth:`finish_h`."""

    def finish_h(self, st: HStart, stream: Stream, wait: bool = True) -> Array:
        """Finish H and fill ``st.timing``: h (n, 4) uint64 canonical. ``wait=False``: only queue (see
        :meth:`complete_h`). Raises ValueError naming the first a/b/c value >= r."""

    def complete_h(self, st: HStart) -> None:
        """After ``finish_h(..., wait=False)`` and a wait past its work: the deferred value checks
        (ValueError naming the first a/b/c value >= r) and ``st.timing``. A no-op otherwise."""

    def synchronize(self, stream: Stream) -> None:
        """Wait for everything queued on ``stream``."""

    def mark(self, stream: Stream) -> Any:
        """A marker after everything queued on ``stream`` so far (a timed CUDA event; None on the CPU)."""

    def wait(self, mark: Any) -> None:
        """Block until the work before ``mark`` (from :meth:`mark`) is done."""

    def ready(self, mark: Any) -> bool:
        """Whether the work before ``mark`` is already done (no wait; True on the CPU)."""

    def to_host(self, point: Array) -> np.ndarray:
        """A (1, 12) point returned with ``defer=True``, on the host (a D2H copy; call after :meth:`wait`)."""

    def msm(self, name: str, scalars: Array, idx: np.ndarray | None, stream: Stream, defer: bool = False) -> Array:
        """MSM of ``scalars`` (m, 4) over ``bases[name]`` (or rows ``idx``): (1, 12) on the host, or on the device (``defer``)."""

    def batch_add(self, name: str, bitmap: Array, stream: Stream, defer: bool = False) -> Array:
        """Sum of the rows of ``bases[name]`` whose bit is set in ``bitmap`` (uint64 words, LSB
        first); the (1, 12) point on the host (``defer``: as :meth:`msm`)."""

    def msm_many(self, jobs: dict[str, tuple[Array, np.ndarray | None]], stream: Stream, concurrent: bool = False, defer: bool = False) -> dict[str, Array]:
        """:meth:`msm` of each ``name: (scalars, idx)``; ``concurrent``: the calls overlap."""

    def batch_add_many(self, jobs: dict[str, Array], stream: Stream, concurrent: bool = False, defer: bool = False) -> dict[str, Array]:
        """:meth:`batch_add` of each ``name: bitmap``; ``concurrent``: the calls overlap."""

    def b_g2(self, scalars: Array) -> bytes:
        """The scaled-down CPU B_G2 multiexp (:func:`zkgpu.pipeline.points.cpu_g2_msm`), 96 bytes compressed."""

    def prep(self, aux: np.ndarray, prep: str = "cpu", threads: int | None = None, circuit: Circuit | None = None) -> Mapping[str, Prep]:
        """prep_msm of a partition's aux for ``{"l", "a", "b_g1"}``. Raises ValueError: a scalar >= r or unknown ``prep``."""


# --------------------------------------------------------------------------------------------
# several small GPU calls at once (batch_add x3, tail MSM x3)
# --------------------------------------------------------------------------------------------
_FAN_POOL: ThreadPoolExecutor | None = None
_FAN_LOCK = threading.Lock()
_J = TypeVar("_J")


def _fan_pool() -> ThreadPoolExecutor:
    global _FAN_POOL
    with _FAN_LOCK:
        if _FAN_POOL is None:
            _FAN_POOL = ThreadPoolExecutor(max_workers=12, thread_name_prefix="zkgpu-fan")
        return _FAN_POOL


def fan_out(fn: Callable[[str, _J], Any], jobs: dict[str, _J], concurrent: bool) -> dict[str, Any]:
    """``{name: fn(name, job)}``, on a shared pool if ``concurrent``; re-raises the first error after all end."""
    if not concurrent or len(jobs) <= 1:
        return {nm: fn(nm, job) for nm, job in jobs.items()}

    def counted(nm: str, job: _J) -> Any:  # the pool thread's host syncs, for the caller's count
        before = _cuda.sync_counts()
        try:
            return fn(nm, job)
        finally:
            after = _cuda.sync_counts()
            for k, v in after.items():
                if v != before.get(k, 0):
                    counted_syncs.append((k, v - before.get(k, 0)))

    counted_syncs: list[tuple[str, int]] = []
    futs = {nm: _fan_pool().submit(counted, nm, job) for nm, job in jobs.items()}
    errors = [f.exception() for f in futs.values()]
    for k, v in counted_syncs:
        _cuda.count_sync(k, v)
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return {nm: f.result() for nm, f in futs.items()}


# --------------------------------------------------------------------------------------------
# malloc_trim
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _libc_trim() -> Any | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        fn = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def malloc_trim() -> bool | None:
    """glibc ``malloc_trim(0)`` (cuzk ``engine.rs:456-492``, after every partition). Returns whether
    memory was released, or None where unavailable (non-glibc)."""
    fn = _libc_trim()
    if fn is None:
        return None
    return bool(fn(0))
