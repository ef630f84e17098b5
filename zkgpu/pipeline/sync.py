"""The pipeline's synchronisation: GPU mutex, prep barrier, the limits of their waits and the failures of a step."""

from __future__ import annotations

import threading
import time

from zkgpu.pipeline.config import PipelineConfig

__all__ = ["Cancelled", "PrepFailed", "StageTimeout", "DeviceLost", "STICKY_CUDA_ERRORS", "is_device_failure", "PrepBarrier", "GpuMutex", "mutex_wait_limit_s", "watchdog_limit_s"]


class Cancelled(Exception):  # noqa: N818 - the name is written into results and logs ("Cancelled: ..."), which recordings keep
    """The run's stop event was set (KeyboardInterrupt or shutdown) while this step waited."""


class PrepFailed(RuntimeError):  # noqa: N818 - the name is written into results and logs ("PrepFailed: ..."), which recordings keep
    """The prep_msm thread failed; ``__cause__`` is its exception."""


class StageTimeout(TimeoutError):  # noqa: N818 - the name is written into results and logs ("StageTimeout: ..."), which recordings keep
    """A step did not return within ``timeout_s``; the watchdog releases what its partition held."""

    def __init__(self, message: str, *, partition: int, stage: str) -> None:
        super().__init__(message)
        self.partition = partition
        self.stage = stage


class DeviceLost(RuntimeError):  # noqa: N818 - the name is written into results and logs, as the others
    """The GPU itself failed: its worker set stops, the run goes on on the others."""


#: CUDA errors that leave the context unusable ("sticky"; the same numbers in the runtime's cudaError_t and
#: the driver's CUresult): devices unavailable 46, uncorrectable ECC 214, illegal address 700, launch timeout
#: 702, device-side assert 710, hardware stack error 714, illegal instruction 715, misaligned address 716,
#: invalid address space 717, invalid PC 718, launch failure 719. Not sticky, so not a lost device: an
#: invalid launch configuration, out of memory.
STICKY_CUDA_ERRORS = frozenset({46, 214, 700, 702, 710, 714, 715, 716, 717, 718, 719})


def is_device_failure(e: BaseException | None) -> bool:
    """Whether ``e`` (or its cause) is :class:`DeviceLost` or a sticky CUDA error (:data:`STICKY_CUDA_ERRORS`)."""
    seen = 0
    while e is not None and seen < 8:
        if isinstance(e, DeviceLost):
            return True
        if type(e).__name__ in ("CUDARuntimeError", "CUDADriverError") and getattr(e, "status", None) in STICKY_CUDA_ERRORS:
            return True
        e, seen = e.__cause__, seen + 1
    return False


def mutex_wait_limit_s(config: PipelineConfig) -> float:
    """Longest mutex wait, s: ``timeout_s * (4 * gw + 1)``."""
    return config.timeout_s * (4 * config.gw + 1)


def watchdog_limit_s(config: PipelineConfig, step: str) -> float:
    """Watchdog limit of ``step``, s: ``timeout_s``, or a second past a self-limiting wait's own limit."""
    if step == "mutex_wait":
        return mutex_wait_limit_s(config) + 1.0
    if step == "barrier_wait":
        return 2 * config.timeout_s + 1.0
    return config.timeout_s


_POLL_S = 0.02


class PrepBarrier:
    """sppark's ``semaphore_t``: the prep thread :meth:`notify` s without blocking, the GPU thread :meth:`wait` s."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._count = 0
        self._aborted: BaseException | None = None

    def notify(self) -> None:
        with self._cv:
            self._count += 1
            self._cv.notify_all()

    def abort(self, error: BaseException | None = None) -> None:
        with self._cv:
            if self._aborted is None:
                self._aborted = error or RuntimeError("barrier aborted")
            self._cv.notify_all()

    def wait(self, timeout_s: float, stop: threading.Event, partition: int | None = None) -> None:
        """Block until notified. Raises PrepFailed (aborted), Cancelled (stop), TimeoutError."""
        deadline = _now() + timeout_s
        with self._cv:
            while True:
                if self._aborted is not None:
                    if isinstance(self._aborted, KeyboardInterrupt):  # Ctrl-C in the prep thread stops the run
                        raise self._aborted
                    raise PrepFailed(f"prep_msm thread failed: {self._aborted!r}") from self._aborted
                if self._count > 0:
                    self._count -= 1
                    return
                if stop.is_set():
                    raise Cancelled("stopped while waiting at the prep_msm barrier")
                left = deadline - _now()
                if left <= 0:
                    raise TimeoutError(f"partition {partition}: barrier_wait exceeded timeout_s={timeout_s} (prep_msm did not notify)")
                self._cv.wait(min(left, _POLL_S))


_now = time.monotonic


class GpuMutex:
    """The per-GPU mutex (cuzk ``engine.rs``): not re-entrant, bounded stop-aware acquire, :meth:`force_release`."""

    def __init__(self, gpu: int) -> None:
        self.gpu = gpu
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.partition: int | None = None
        self._holder: int | None = None  # thread ident of the holder
        self._meta = threading.Lock()

    def acquire(self, worker: int, timeout_s: float, stop: threading.Event, partition: int | None = None) -> None:
        """Take the mutex for ``worker``. Raises RuntimeError (re-entry), Cancelled (run stopped) or TimeoutError."""
        if self.owner == worker and self._holder == threading.get_ident():
            raise RuntimeError(f"worker {worker} already holds the mutex of gpu {self.gpu} (partition {self.partition}); it is not re-entrant")
        deadline = _now() + timeout_s
        while not self.lock.acquire(timeout=_POLL_S):  # wakes at once on release; polls stop
            if stop.is_set():
                raise Cancelled("stopped while waiting for the GPU mutex")
            if _now() > deadline:
                raise TimeoutError(f"partition {partition}: mutex_wait on gpu {self.gpu} exceeded {timeout_s:g} s (held by worker {self.owner}, partition {self.partition})")
        with self._meta:
            self.owner, self.partition, self._holder = worker, partition, threading.get_ident()

    def release(self) -> bool:
        """Release it if the calling thread holds it. Returns False (and does nothing) when the
        watchdog force-released it meanwhile."""
        with self._meta:
            if self._holder != threading.get_ident():
                return False
            self.owner = self.partition = self._holder = None
            self.lock.release()
            return True

    def force_release(self, partition: int) -> bool:
        """Release the mutex if ``partition`` holds it (watchdog, for a hung step). Returns whether it did."""
        with self._meta:
            if self._holder is None or self.partition != partition:
                return False
            self.owner = self.partition = self._holder = None
            self.lock.release()
            return True
