"""Host memory allocators: page-locked (``cudaHostAlloc``) and pageable, behind one protocol.

:class:`HostAllocator` is what :class:`zkgpu.transfer.pinned_pool.PinnedPool` draws its buffers from and what
:func:`zkgpu.transfer.paths.pinned_staging` allocates a one-off staging buffer with:
:class:`CudaHostAllocator` (``cudaHostAlloc(nbytes, cudaHostAllocPortable)`` / ``cudaFreeHost``, as
cuzk's pool: filecoin-project/curio ``extern/cuzk/cuzk-core/src/pinned_pool.rs``) and
:class:`PageableAllocator` (``numpy.empty``, the CPU stand-in). :func:`host_ptr` is the address of a
numpy array's data, as the CUDA runtime calls take it.

Without a GPU, importing works and :meth:`CudaHostAllocator.alloc` raises ``RuntimeError`` (from
:func:`zkgpu.core.cuda.cupy`).
"""

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
    """Page-locked memory from ``cudaHostAlloc(nbytes, flags)`` / ``cudaFreeHost`` (CuPy runtime).

    ``flags`` defaults to ``cudaHostAllocPortable`` (1), as cuzk ``pinned_pool.rs``. The handle is
    the host pointer. ``alloc`` raises RuntimeError without a GPU and CuPy's CUDARuntimeError when
    the driver cannot pin that much memory.
    """

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
