"""Fr elements on the GPU: the device layout, its checks and the Montgomery conversions, shared by every device
kernel module so a bad array fails the same way everywhere.

Layout: a C-contiguous CuPy array, uint64 ``(n, 4)`` (canonical or Montgomery ``x * 2^256 mod r``), or the same
bytes as uint32 ``(n, 8)`` / flat ``(8n,)``. Kernels: ``zkgpu/kernels/fr_ops.cu``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zkgpu.arith.field import FR, fr_from_ints, not_canonical, to_ints
from zkgpu.core import cuda as _cuda

__all__ = [
    "check_device_array",
    "device_words",
    "first_unreduced_launch",
    "first_unreduced",
    "raise_unreduced",
    "check_canonical",
    "DeferredCheck",
    "to_montgomery",
    "from_montgomery",
    "to_device_mont",
]


def check_device_array(d: Any, *, name: str = "values") -> Any:
    """Validate a CuPy array in the public layout, uint64 ``(n, 4)`` C-contiguous (values not checked); returns d.

    Raises:
        TypeError: dtype other than uint64.
        ValueError: shape other than ``(n, 4)`` or not C-contiguous.
    """
    cp = _cuda.cupy()
    if d.dtype != cp.uint64:
        raise TypeError(f"{name}: expected dtype uint64 (shape (n, 4)), got {d.dtype}")
    if d.ndim != 2 or d.shape[1] != FR.limbs:
        raise ValueError(f"{name}: expected shape (n, 4) for Fr, got {tuple(d.shape)}")
    if not d.flags.c_contiguous:
        raise ValueError(f"{name}: device array must be C-contiguous")
    return d


def device_words(d: Any, *, name: str = "values") -> Any:
    """The flat uint32 view (no copy) of a C-contiguous device Fr array: uint64 ``(n, 4)``, uint32 ``(n, 8)`` or ``(8n,)``.

    Raises:
        TypeError: not a CuPy array of uint32/uint64.
        ValueError: not C-contiguous, or size not a multiple of 32 bytes.
    """
    cp = _cuda.cupy()
    if not isinstance(d, cp.ndarray):
        raise TypeError(f"{name}: expected a CuPy array, got {type(d).__name__}")
    if d.dtype not in (cp.uint32, cp.uint64):
        raise TypeError(f"{name}: expected uint32 or uint64 limbs, got {d.dtype}")
    if not d.flags.c_contiguous:
        raise ValueError(f"{name}: device array must be C-contiguous")
    if d.nbytes % 32:
        raise ValueError(f"{name}: {d.nbytes} bytes is not a whole number of 32-byte Fr elements")
    return d.view(cp.uint32).reshape(-1)


def first_unreduced_launch(w: Any) -> Any:
    """Queue the search for the first element ``>= r`` of the flat words ``w`` (:func:`device_words`) on
    the current stream, without a host sync (kernel ``fr_first_unreduced``).

    Returns:
        a CuPy ``(1,)`` uint64 array that holds, once the stream gets there, the index of the first
        element ``>= r``, or n when every element is canonical.
    """
    cp = _cuda.cupy()
    n = w.size // 8
    out = cp.full((1,), n, dtype=cp.uint64)
    _cuda.launch_1d(_cuda.get_kernel("fr_ops", "fr_first_unreduced"), n, (w, np.uint64(n), out))
    return out


def first_unreduced(w: Any) -> int | None:
    """Index of the first element ``>= r`` of the flat words ``w``, or None (syncs the current stream).

    The device counterpart of :func:`zkgpu.arith.field.first_unreduced`."""
    bad = int(_cuda.read_back(first_unreduced_launch(w), "fr_check")[0])
    return None if bad >= w.size // 8 else bad


def raise_unreduced(w: Any, bad: int, name: str) -> None:
    """Raise the ValueError of :func:`zkgpu.arith.field.not_canonical` for element ``bad`` of the flat words ``w``
    (its value read back from the device as it is, unreduced)."""
    cp = _cuda.cupy()
    value = to_ints(FR, cp.asnumpy(w[8 * bad : 8 * bad + 8].view(cp.uint64).reshape(1, 4)))[0]
    raise not_canonical(FR, name, bad, value)


class DeferredCheck:
    """Value checks queued without a host sync (:func:`zkgpu.gpu.ntt.qap.prepare_input`, the scalar check
    of :func:`zkgpu.gpu.msm.pippenger.msm_device`); :meth:`raise_if_bad` reads them once the stream work is done
    (one small read-back each, counted as ``deferred_check`` by :func:`zkgpu.core.cuda.count_sync`)."""

    def __init__(self) -> None:
        self._items: list[tuple[str, Any, Any]] = []

    def add(self, name: str, words: Any, out: Any) -> None:
        """Queue the check of the flat words ``words`` (8 per element) whose result ``out`` (from
        :func:`first_unreduced_launch`) names the first element ``>= r``, or n."""
        self._items.append((name, words, out))

    def raise_if_bad(self) -> None:
        """Raises: ValueError naming the first element >= r of the first bad input, as the
        immediate checks do."""
        for name, words, out in self._items:
            bad = int(_cuda.read_back(out, "deferred_check")[0])
            if bad < words.size // 8:
                raise_unreduced(words, bad, name)
        self._items.clear()


def check_canonical(w: Any, name: str) -> None:
    """Check every element of the flat words ``w`` is ``< r`` (one kernel, one sync).

    Raises:
        ValueError: ``name[i] = 0x... is not a canonical Fr element``, i the first bad index.
    """
    bad = first_unreduced(w)
    if bad is not None:
        raise_unreduced(w, bad, name)


def _fr_inplace(d: Any, kernel: str) -> Any:
    w = device_words(d)
    n = w.size // 8
    if n:
        _cuda.launch_1d(_cuda.get_kernel("fr_ops", kernel), n, (w, np.uint64(n)))
    return d


def to_montgomery(d: Any) -> Any:
    """Canonical -> Montgomery form, in place on a device array of Fr elements (:func:`device_words`
    layouts) on the current stream; returns d. Values are not checked (see :func:`check_canonical`)."""
    return _fr_inplace(d, "fr_to_mont")


def from_montgomery(d: Any) -> Any:
    """Montgomery -> canonical form, in place on a device array of Fr elements; returns d."""
    return _fr_inplace(d, "fr_from_mont")


def to_device_mont(ints: list[int]) -> Any:
    """Python ints (taken mod r) -> a new flat uint32 device array (8 words each) in Montgomery form."""
    cp = _cuda.cupy()
    return cp.asarray(fr_from_ints([FR.to_mont(v) for v in ints])).view(cp.uint32).reshape(-1)
