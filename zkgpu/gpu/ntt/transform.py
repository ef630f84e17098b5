"""Number-theoretic transform (NTT) over BLS12-381 Fr on the GPU (definitions: :mod:`zkgpu.arith.domain`).

:func:`ntt`: host or device ``(n, 4)`` uint64 canonical arrays, natural order; on the device ``check=False,
out=values`` is the trusted path (in place, no range check: the kernels' time). :func:`ntt_inplace`: device arrays in
Montgomery form (or canonical: every product is an element times a Montgomery-form constant, so the form in is the form
out), ``order`` "nn", "nr", "rn" (natural/bit-reversed in, out). :func:`coset_evals_inplace`: H evaluations
-> coset evaluations. Kernels (``kernels/ntt.cu``): radix-2 Gentleman-Sande (DIF) and Cooley-Tukey (DIT) passes of up to
10 stages in shared memory, scalings folded into the first/last pass. Sources: Cooley & Tukey 1965; Gentleman & Sande
1966; sppark ``ntt/``; cuzk ``groth16_ntt_h.cu``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from zkgpu.arith.domain import log2_size, ntt_reference
from zkgpu.arith.field import FR, check_array, fr_from_ints, fr_to_ints
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.fr_device import (
    check_canonical,
    check_device_array,
    device_words,
    to_device_mont,
)
from zkgpu.gpu.ntt import plan as ntt_plan
from zkgpu.gpu.ntt.plan import grid as _grid
from zkgpu.gpu.ntt.plan import passes as _passes
from zkgpu.gpu.ntt.plan import split_tables as _split_tables

__all__ = [
    "ORDERS", "RADIX", "DEFINES", "DEFINE_NAMES", "configure", "radix", "ntt", "ntt_inplace", "coset_evals_inplace",
    "stagewise_passes", "scale_on_bitrev_side", "bitrev_permute", "power_table", "global_passes",
    "settings", "clear_cache",
]

P = FR.modulus
G = FR.generator
ORDERS = ("nn", "nr", "rn")
# read from the kernel sources (zkgpu/core/cuda.py: header_defines / header_enum), never restated here
_MAX_TILE_LOG, _THREADS, _BR_Q = _cuda.header_defines("ntt.cu", "NTT_MAX_TILE_LOG", "NTT_THREADS", "NTT_BR_Q")
_ORDER = _cuda.header_enum("ntt_common.cuh", "ntt_order")  # the butterflies of a pass: nr (DIF), rn (DIT)
_SCALE = _cuda.header_enum("ntt_common.cuh", "scale_mode")  # none, natural, bitrev, constant, h_step, mul_sub
_TILE_COLS = 1  # the most column bits c of a pass's tile (2^24: passes of 8 stages on 512-element tiles)
DEFINE_NAMES = ("ZK_FF_ASM_TAIL", "ZK_PTXAS_O", "NTT_THREADS", "NTT_MIN_BLOCKS", "NTT_R4_MIN_BLOCKS")
"""The ntt.cu build options :func:`configure` accepts: the product's asm tail, ptxas' level, block size, occupancy."""
RADIX: int | None = None
"""Stages per shared-memory round trip: 2 (``ntt_pass``) or 4 (``ntt_pass_r4``); None means 2 (:func:`radix`)."""
DEFINES: dict[str, int] = {}
"""Extra ``-D`` build options of the NTT kernel module (:func:`configure`; names from :data:`DEFINE_NAMES`), e.g.
``{"NTT_MIN_BLOCKS": 4, "NTT_THREADS": 256}``."""


def configure(*, radix: int | None = None, defines: Mapping[str, int] | None = None) -> None:
    """Set the NTT kernel options; None keeps a value (``defines={}`` clears).

    Args:
        radix: 2 or 4. defines: name in :data:`DEFINE_NAMES` -> int, extra ``-D`` options.
    Raises:
        ValueError: radix not 2 or 4, or a bad define (names it)."""
    global RADIX, DEFINES
    if radix is not None:
        _check_radix(radix)
        RADIX = int(radix)
    if defines is not None:
        for key, value in defines.items():
            if key not in DEFINE_NAMES:
                raise ValueError(f"zkgpu.gpu.ntt.transform.configure: unknown NTT build option {key!r} (one of {', '.join(DEFINE_NAMES)})")
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"zkgpu.gpu.ntt.transform.configure: define {key}={value!r} must have an integer value")
        DEFINES = {key: int(value) for key, value in defines.items()}


def _check_radix(value: object) -> None:
    if isinstance(value, bool) or value not in (2, 4):
        raise ValueError(f"zkgpu.gpu.ntt.transform: radix must be 2 or 4, got {value!r}")


def radix() -> int:
    """The radix in use (None: 2). Raises ValueError: not 2 or 4."""
    if RADIX is None:
        return 2
    _check_radix(RADIX)
    return RADIX


def settings() -> dict[str, Any]:
    """``{"radix", "defines"}`` in force (what a benchmark records). Raises ValueError: bad radix."""
    return dict(radix=radix(), defines=dict(_defines()))


# ----------------------------------------------------------------------------------------------
# kernels and their build options
# ----------------------------------------------------------------------------------------------
def _defines() -> tuple[tuple[str, str], ...]:
    """The ``-D`` build options of the NTT module: :data:`DEFINES`."""
    return tuple((k, str(v)) for k, v in DEFINES.items())


def _threads() -> int:
    return int(dict(_defines()).get("NTT_THREADS", _THREADS))


def _kernel(name: str) -> Any:
    """A kernel of ntt.cu built with :data:`DEFINES`."""
    return _cuda.get_kernel("ntt", name, _defines())


def _launch(kern: Any, grid: int, block: int, shared: int, args: tuple) -> None:
    """Launch a pass kernel with ``shared`` bytes of dynamic shared memory."""
    if shared > 48 * 1024:  # beyond the default limit of dynamic shared memory: opt in
        kern.max_dynamic_shared_size_bytes = shared
    kern((grid,), (block,), args, shared_mem=shared)


# ----------------------------------------------------------------------------------------------
# device tables (cached per size and direction)
# ----------------------------------------------------------------------------------------------
def power_table(x: int, bits: int, scale: int = 1) -> Any:
    """``scale * x^i`` mod r for i < 2^bits on the GPU: flat uint32 CuPy, 8 words per element, Montgomery form."""
    cp = _cuda.cupy()
    n = 1 << bits
    lo, hi, S = _split_tables(x, bits, scale)
    out = cp.empty(8 * n, dtype=cp.uint32)
    grid, block = _grid(n)
    _kernel("ntt_build_powers")((grid,), (block,), (out, lo, hi, np.int32(S), np.uint64(n)))
    return out


@_cuda.device_cache
def _twiddles(L: int, inverse: bool) -> Any:
    """tw[h + t] = omega_{2h}^t (Montgomery, flat uint32, n elements) for the forward or inverse root."""
    cp = _cuda.cupy()
    n = 1 << L
    omega = FR.root_of_unity(L)
    if inverse:
        omega = pow(omega, -1, P)
    lo, hi, S = _split_tables(omega, L - 1)
    tw = cp.empty(8 * n, dtype=cp.uint32)
    grid, block = _grid(n)
    _kernel("ntt_build_twiddles")((grid,), (block,), (tw, lo, hi, np.int32(L), np.int32(S), np.uint64(n)))
    return tw


@_cuda.device_cache
def _scale_table(L: int, kind: str, br: bool = False) -> Any:
    """Scaling table of kind 'coset' g^i, 'coset_ninv' g^i/n, 'icoset' g^-i/n or 'ninv' [1/n]; ``br``: bit-reversed."""
    n_inv = pow(1 << L, -1, P)
    if kind == "ninv":
        return to_device_mont([n_inv])
    x, scale = {"coset": (G, 1), "coset_ninv": (G, n_inv)}.get(kind, (pow(G, -1, P), n_inv))
    return bitrev_permute(power_table(x, L, scale)) if br else power_table(x, L, scale)


def scale_on_bitrev_side(L: int, kind: str) -> tuple[Any, int]:
    """(table, scale_mode) scaling the bit-reversed side of a transform by :func:`_scale_table` ``kind``: the
    bit-reversed table read in order."""
    return _scale_table(L, kind, True), _SCALE["natural"]


def clear_cache() -> None:
    """Free the cached twiddle and coset tables (n * 32 bytes each per size and direction)."""
    for table in (_twiddles, _scale_table):
        table.cache_clear()


def _pass_plan(L: int) -> list[tuple[int, int, int]]:
    """(s_lo, k, c) of the passes of a transform of 2^L elements, DIF order (:func:`zkgpu.gpu.ntt.plan.passes`)."""
    return _passes(L, _MAX_TILE_LOG, _TILE_COLS)


def global_passes(L: int, order: str) -> int:
    """Passes over global memory of one transform of 2^L elements in ``order``: ceil(L / 10) butterfly passes, plus
    the bit-reversal pass of "nn" when there is one butterfly pass (with two or more the last one scatters)."""
    npass = len(_pass_plan(L))
    return npass + (1 if order == "nn" and npass == 1 else 0)


# ----------------------------------------------------------------------------------------------
# device API
# ----------------------------------------------------------------------------------------------
def bitrev_permute(d: Any) -> Any:
    """In-place bit-reversal permutation of a device array of n = 2^L Fr elements; returns d."""
    w = device_words(d)
    n = w.size // 8
    L = log2_size(n)
    if L >= 2 * _BR_Q:
        _kernel("ntt_bitrev_tiled")((1 << (L - 2 * _BR_Q),), (1 << (2 * _BR_Q),), (w, np.int32(L)))
    elif L:
        grid, block = _grid(n)
        _kernel("ntt_bitrev")((grid,), (block,), (w, np.int32(L), np.uint64(n)))
    return d


def _scalings(L: int, inverse: bool, coset: bool, dit: bool) -> tuple[Any, int, Any, int]:
    """(pre, pre_mode, post, post_mode) scalings of a transform (None tables with mode none)."""
    none, natural = _SCALE["none"], _SCALE["natural"]
    pre, pre_mode, post, post_mode = None, none, None, none
    if coset and not inverse:
        pre, pre_mode = scale_on_bitrev_side(L, "coset") if dit else (_scale_table(L, "coset"), natural)
    if inverse and not coset:
        post, post_mode = _scale_table(L, "ninv"), _SCALE["constant"]
    if inverse and coset:
        post, post_mode = (_scale_table(L, "icoset"), natural) if dit else scale_on_bitrev_side(L, "icoset")
    return pre, pre_mode, post, post_mode


def ntt_inplace(d: Any, *, inverse: bool = False, coset: bool = False, order: str = "nn", scratch: Any = None) -> Any:
    """NTT in place on the current stream (no sync) of Fr in Montgomery form; returns d.

    Args:
        d: C-contiguous CuPy, n = 2^L elements: ``(n, 4)`` uint64, ``(n, 8)`` or ``(8n,)`` uint32.
        inverse, coset: which transform (inverse includes 1/n).
        order: "nn", "nr" (DIF) or "rn" (DIT); the bit-reversed side holds element bitrev(i) at i.
        scratch: "nn" with two or more passes: a device buffer of n elements to use (overwritten).
    Raises:
        ValueError: bad order, size or scratch size. TypeError: not a CuPy uint32/uint64 array."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    w = device_words(d)
    n = w.size // 8
    L = log2_size(n)
    if L == 0:
        return d  # every variant is the identity on one element
    dit = order == "rn"
    tmp = _scratch(w, scratch) if order == "nn" and len(_pass_plan(L)) > 1 else None
    stagewise_passes(w, L, bool(inverse), dit, *_scalings(L, bool(inverse), bool(coset), dit), nn_scratch=tmp)
    if order == "nn" and tmp is None:
        bitrev_permute(w)
    return d


def _scratch(w: Any, scratch: Any) -> Any:
    """The flat words of ``scratch``, or a fresh buffer from CuPy's pool, of w's size (ValueError: another size)."""
    tmp = _cuda.cupy().empty(w.size, dtype=w.dtype) if scratch is None else device_words(scratch, name="scratch")
    if tmp.size != w.size:
        raise ValueError(f"scratch holds {tmp.size // 8} elements, the transform {w.size // 8}")
    return tmp


def stagewise_passes(w: Any, L: int, inverse: bool, dit: bool, pre: Any, pre_mode: int, post: Any, post_mode: int,
                     aux: tuple[Any, Any] | None = None, nn_scratch: Any = None, only: slice = slice(None)) -> None:
    """Launch the passes of one transform on flat words ``w`` (2^L elements) on the current stream. DIF natural ->
    bit-reversed (``dit``: reverse). pre/post scale at the first load / last store (pre_mode mul_sub: x*aux[0] -
    aux[1]). ``nn_scratch``: DIF written to natural order via a scratch. ``only``: a slice of passes."""
    n = w.size // 8
    tw = _twiddles(L, inverse)
    pre, post = (tw if pre is None else pre), (tw if post is None else post)  # mode 0 ignores the table
    aux1, aux2 = (tw, tw) if aux is None else aux
    passes = _pass_plan(L)
    passes = passes[::-1] if dit else passes
    rad = radix()
    kern = _kernel("ntt_pass_r4" if rad == 4 else "ntt_pass")
    if nn_scratch is not None and (dit or len(passes) < 2):
        raise ValueError("stagewise_passes: nn_scratch needs a DIF transform of two or more passes")
    last = len(passes) - 1
    for i in range(len(passes))[only]:
        s_lo, k, c = passes[i]
        T = 1 << (k + c)
        src = w if nn_scratch is None or i == 0 else nn_scratch
        dst = w if nn_scratch is None or i == last else nn_scratch
        _launch(
            kern, n // T, max(1, min(T // rad, _threads())), ntt_plan.pass_shared_bytes(T),
            (
                src, dst, np.int32(nn_scratch is not None and i == last), tw, np.int32(L), np.int32(s_lo), np.int32(k), np.int32(c), np.int32(_ORDER["rn" if dit else "nr"]),
                pre, np.int32(pre_mode if i == 0 else _SCALE["none"]),
                post, np.int32(post_mode if i == last else _SCALE["none"]), aux1, aux2,
            ),
        )


def coset_evals_inplace(w: Any) -> Any:
    """Evaluations on H -> evaluations on gH in place (iNTT "nr", coset NTT "rn", as cuzk's ``execute_ntts_single``).
    Raises ValueError: a size that is not a power of two."""
    words = device_words(w)
    L = log2_size(words.size // 8)
    if L == 0:
        return w
    none = _SCALE["none"]
    stagewise_passes(words, L, True, False, None, none, None, none, only=slice(0, -1))
    k = _pass_plan(L)[-1][1]
    mid, mid_mode = scale_on_bitrev_side(L, "coset_ninv")
    _launch(_kernel("ntt_pass_pair"), 1 << (L - k), min(1 << (k - 1), _threads()), 96 << k,
            (words, _twiddles(L, True), _twiddles(L, False), np.int32(L), np.int32(k), mid, np.int32(mid_mode)))
    stagewise_passes(words, L, False, True, None, none, None, none, only=slice(1, None))
    return w


def _ntt_device(d: Any, inverse: bool, coset: bool, name: str = "values", *, check: bool = True, out: Any = None) -> Any:
    """The public transform on a device array: canonical in, canonical out, no Montgomery conversion (every product
    in the transform is an element times a Montgomery-form constant, a twiddle or a scale, so mont_mul(x, c*R) = x*c
    keeps x canonical); ``out is d`` transforms in place (no copy, no allocation)."""
    cp = _cuda.cupy()
    check_device_array(d, name=name)
    log2_size(d.shape[0])
    if out is None:
        out = cp.empty(d.shape, dtype=cp.uint64)
    elif out is not d:
        if not _cuda.is_device_array(out):
            raise TypeError(f"out: expected a CuPy array (the input is on the device), got {type(out).__name__}")
        check_device_array(out, name="out")
        if out.shape != d.shape:
            raise ValueError(f"out: expected shape {tuple(d.shape)} (as {name}), got {tuple(out.shape)}")
        if cp.may_share_memory(out, d):
            raise ValueError(f"out overlaps {name} without being {name} itself (give out={name} to transform in place)")
    w = out.view(cp.uint32).reshape(-1)
    if check:
        check_canonical(device_words(d), name)
    if out is not d:
        cp.copyto(out, d)
    ntt_inplace(w, inverse=inverse, coset=coset, order="nn")
    return out


def ntt(values: Any, *, inverse: bool = False, coset: bool = False, check: bool = True, out: Any = None) -> Any:
    """Forward / inverse / coset NTT over Fr, natural order; same kind out as in (host uses the GPU if present).

    Args:
        values: ``(n, 4)`` uint64 canonical, numpy or CuPy, n = 2^L, L <= 32.
        inverse: includes 1/n. coset: on g*H, g = 7.
        check: device input: check every element < r first (one kernel, one sync); False: the caller vouches.
        out: device input: the ``(n, 4)`` uint64 output; ``out=values`` transforms in place. Default: a new array.
    Raises:
        TypeError: not numpy/CuPy or not uint64. ValueError: bad shape or size, an element >= r (first bad index),
        ``out`` for host input, of another shape, or overlapping ``values`` without being it."""
    if _cuda.is_device_array(values):
        return _ntt_device(values, inverse, coset, check=check, out=out)
    if out is not None:
        raise ValueError("out: only for a device (CuPy) input; host input returns a new array")
    if isinstance(values, np.ndarray) and values.ndim == 2:
        log2_size(values.shape[0])  # the size error before any copy of a huge (broadcast) array
    arr = check_array(FR, values)
    log2_size(arr.shape[0])
    if _cuda.gpu_available():
        return _ntt_device(_cuda.cupy().asarray(arr), inverse, coset).get()
    return fr_from_ints(ntt_reference(fr_to_ints(arr), inverse=inverse, coset=coset))
