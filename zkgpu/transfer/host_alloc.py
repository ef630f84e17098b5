"""Host memory allocators behind one protocol: page-locked (``cudaHostAlloc``) and pageable (``numpy.empty``)."""

from __future__ import annotations

import ctypes
from typing import Any, Protocol

import numpy as np

from zkgpu.core import cuda as _cuda

__all__ = ["HostAllocator", "CudaHostAllocator", "PageableAllocator", "host_ptr", "CUDA_HOST_ALLOC_PORTABLE"]

#: ``cudaHostAllocPortable`` (cuda_runtime_api.h; cuzk's flag), written here so that the module
#: imports without CuPy.
CUDA_HOST_ALLOC_PORTABLE = 1


def host_ptr(arr: np.ndarray) -> int:
    """The address of the first byte of a numpy array's data (``__array_interface__``)."""
    return int(arr.__array_interface__["data"][0])


class HostAllocator(Protocol):
    """What :class:`zkgpu.transfer.pinned_pool.PinnedPool` needs: ``alloc(nbytes) -> (uint8 array of >= nbytes, handle)``,
    ``free(handle)``, and ``pinned`` (whether its memory is page-locked)."""

    pinned: bool

    def alloc(self, nbytes: int) -> tuple[np.ndarray, Any]: ...

    def free(self, handle: Any) -> None: ...


def _array_at(ptr: int, nbytes: int) -> np.ndarray:
    """A 1-D uint8 numpy array over ``nbytes`` at address ``ptr`` (does not own the memory)."""
    return np.frombuffer((ctypes.c_ubyte * nbytes).from_address(ptr), dtype=np.uint8)


class CudaHostAllocator:
    """``cudaHostAlloc(nbytes, flags)`` / ``cudaFreeHost`` (flags default portable); the handle is the pointer.
    ``alloc`` raises RuntimeError without a GPU, CUDARuntimeError when pinning fails."""

    pinned = True

    def __init__(self, flags: int = CUDA_HOST_ALLOC_PORTABLE) -> None:
        self.flags = flags

    def alloc(self, nbytes: int) -> tuple[np.ndarray, int]:
        cp = _cuda.cupy()
        ptr = int(cp.cuda.runtime.hostAlloc(nbytes, self.flags))
        return _array_at(ptr, nbytes), ptr

    def free(self, handle: int) -> None:
        _cuda.cupy().cuda.runtime.freeHost(handle)


class PageableAllocator:
    """Ordinary pageable numpy memory (``numpy.empty``): the CPU stand-in for :class:`CudaHostAllocator`."""

    pinned = False

    def alloc(self, nbytes: int) -> tuple[np.ndarray, Any]:
        arr = np.empty(nbytes, dtype=np.uint8)
        return arr, arr

    def free(self, handle: Any) -> None:
        pass  # numpy frees it when the last reference goes
