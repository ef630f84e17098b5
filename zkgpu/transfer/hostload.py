"""Host memory-bandwidth load: threads streaming copies through DRAM, measured, to copy "under load".

A pageable H2D copy is one thread's memcpy, which slows when other threads keep DRAM busy (cuzk's synthesis does; ours
is lighter). :class:`HostMemoryLoad` supplies that contention and counts it."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["HostMemoryLoad", "LoadStats", "available_memory_bytes", "check_count", "DEFAULT_BUFFER_BYTES"]

MIB = 1 << 20
DEFAULT_BUFFER_BYTES = 256 * MIB
"""Per-thread buffer (two of them per thread): far above any CPU's last-level cache."""
_CHUNK_BYTES = 32 * MIB  # copy granularity: bounds the stop latency to one 32 MiB copy


def check_count(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int >= ``minimum``. Raises TypeError (non-int, bool) or ValueError (below), naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


@dataclass(frozen=True)
class LoadStats:
    """A load's work over an interval: threads, buffer_bytes, seconds, traffic_bytes (read + written), gbps (1e9 B/s)."""

    threads: int
    buffer_bytes: int
    seconds: float
    traffic_bytes: int
    gbps: float


def available_memory_bytes() -> int | None:
    """The host's available memory in bytes (``MemAvailable`` of ``/proc/meminfo``; elsewhere free
    pages x page size from ``os.sysconf``), or None when neither can be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


class HostMemoryLoad:
    """Background DRAM traffic from ``threads`` copy loops between two ``buffer_bytes`` buffers; a context manager.

    Args:
        threads: >= 0 (0: the no-load control). buffer_bytes: a multiple of 4096 (default 256 MiB).
    Raises:
        TypeError/ValueError: a bad count. RuntimeError: start on a running load; stop re-raises a thread's error."""

    def __init__(self, threads: int, buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> None:
        self.threads = check_count("threads", threads, 0)
        self.buffer_bytes = check_count("buffer_bytes", buffer_bytes, 4096)
        if self.buffer_bytes % 4096:
            raise ValueError(f"buffer_bytes must be a multiple of 4096, got {buffer_bytes}")
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self._moved = [0] * self.threads  # per-thread counters: one writer each, no lock needed
        self._errors: list[BaseException] = []
        self._running = False

    # -- control --------------------------------------------------------------------------
    def start(self) -> HostMemoryLoad:
        """Allocate and touch the buffers, start the threads. Raises RuntimeError: already running. MemoryError: threads
        x 2 x buffer_bytes exceeds available memory."""
        if self._running:
            raise RuntimeError("HostMemoryLoad.start(): already running")
        need, avail = 2 * self.threads * self.buffer_bytes, available_memory_bytes()
        if avail is not None and need > avail:
            raise MemoryError(f"{self.threads} threads x 2 x {self.buffer_bytes} bytes = {need / 2**30:.1f} GiB, "
                              f"more than the {avail / 2**30:.1f} GiB of available host memory")
        self._stop.clear()
        self._errors.clear()
        self._moved = [0] * self.threads
        buffers = []
        for _ in range(self.threads):
            src = np.empty(self.buffer_bytes, dtype=np.uint8)
            dst = np.empty(self.buffer_bytes, dtype=np.uint8)
            src.fill(0x5A)  # first touch here, not in the measured interval
            dst.fill(0)
            buffers.append((src, dst))
        self._workers = []
        try:
            for i, (src, dst) in enumerate(buffers):
                t = threading.Thread(target=self._loop, args=(i, src, dst), name=f"zkgpu-hostload-{i}", daemon=True)
                t.start()
                self._workers.append(t)
        except BaseException:  # a thread that cannot start, or Ctrl-C: stop the ones already running
            self._stop.set()
            for t in self._workers:
                t.join()
            self._workers = []
            raise
        self._running = True
        self._t_start = time.perf_counter()
        return self

    def stop(self) -> LoadStats:
        """Stop every thread, free the buffers and return the stats since :meth:`start`."""
        if not self._running:
            return LoadStats(self.threads, self.buffer_bytes, 0.0, 0, 0.0)
        stats = self.since((self._t_start, 0))
        self._stop.set()
        for t in self._workers:
            t.join()
        self._workers = []
        self._running = False
        if self._errors:
            raise RuntimeError(f"a host load thread failed: {self._errors[0]!r}") from self._errors[0]
        return stats

    def __enter__(self) -> HostMemoryLoad:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.stop()
            return
        try:  # the body's exception wins; a load failure is attached to it as a note
            self.stop()
        except RuntimeError as load_exc:
            exc.add_note(f"also: {load_exc}")

    @property
    def running(self) -> bool:
        return self._running

    # -- measurement ----------------------------------------------------------------------
    def snapshot(self) -> tuple[float, int]:
        """``(perf_counter seconds, traffic bytes so far)``: the start of an interval for :meth:`since`."""
        return time.perf_counter(), sum(self._moved)

    def since(self, mark: tuple[float, int]) -> LoadStats:
        """Traffic from ``mark`` (a :meth:`snapshot`) until now."""
        t0, b0 = mark
        dt = time.perf_counter() - t0
        moved = sum(self._moved) - b0
        gbps = moved / dt / 1e9 if dt > 0 else 0.0
        return LoadStats(self.threads, self.buffer_bytes, dt, int(moved), gbps)

    def _loop(self, i: int, src: np.ndarray, dst: np.ndarray) -> None:
        n = src.size
        try:
            while not self._stop.is_set():
                for lo in range(0, n, _CHUNK_BYTES):
                    hi = min(n, lo + _CHUNK_BYTES)
                    np.copyto(dst[lo:hi], src[lo:hi])  # releases the GIL
                    self._moved[i] += 2 * (hi - lo)
                    if self._stop.is_set():
                        break
        except BaseException as exc:  # noqa: BLE001 - kept and re-raised by stop() in the caller's thread
            self._errors.append(exc.with_traceback(None))  # no frames: the buffers can be freed
