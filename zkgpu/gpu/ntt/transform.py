"""Number-theoretic transform (NTT) over the BLS12-381 scalar field Fr on the GPU.

The transforms (forward, inverse, coset, inverse coset; n = 2^L, omega = ``FR.root_of_unity(L)``, coset
generator g = 7) are defined in :mod:`zkgpu.arith.domain`, which holds their CPU references
(:func:`zkgpu.arith.domain.ntt_reference`, :func:`zkgpu.arith.domain.dft_naive`). Public API:

* :func:`ntt` -- host arrays (numpy uint64 ``(n, 4)``, canonical, natural order) or CuPy arrays of the
  same shape/dtype (device-resident); returns the same kind. Without a GPU it runs the CPU reference. On the
  device, ``check=False, out=values`` is the trusted path: in place, no range check, the kernels' time.
* :func:`ntt_inplace` -- the device API for the prover pipeline: a CuPy array already in Montgomery
  form, transformed in place, with ``order`` in ``{"nn", "nr", "rn"}`` (natural / bit-reversed,
  input then output). "nr" and "rn" skip the bit-reversal permutation, so the Groth16 H flow runs as in
  cuzk (``groth16_ntt_h.cu``): iNTT "nr" -> coset NTT "rn" -> pointwise -> inverse coset NTT "nn".
* :func:`coset_evals_inplace` -- evaluations on H -> evaluations on the coset gH (iNTT "nr", coset NTT
  "rn"), the first step of the Groth16 H computation (:mod:`zkgpu.gpu.ntt.qap`).
* :func:`global_passes`, :func:`settings` -- what a benchmark records (``zkgpu bench ntt``).
* :func:`power_table` -- ``scale * x^i`` for i < 2^bits, built on the GPU. Fr vectors on the device
  (layouts, value checks, Montgomery form) go through :mod:`zkgpu.gpu.fr_device`.

The kernels (``zkgpu/kernels/ntt.cu``): radix-2 Gentleman-Sande (DIF, natural -> bit-reversed) and
Cooley-Tukey (DIT, bit-reversed -> natural) butterflies sharing one twiddle table ``tw[h + t] = omega_{2h}^t``
(n entries, built on the GPU and cached per size); up to 10 stages per launch in shared memory (at 2^24: 3
passes of 8 stages over global memory). The coset shift and the 1/n (or g^-i/n) scaling ride on the first/last
pass; the scalings on the bit-reversed side read bit-reversed tables in order; "nn" of two or more passes goes
through a scratch buffer whose last pass stores to the bit-reversed places (one pass: a bit-reversal pass follows).
The other variants (a fused radix-2^k NTT, PTX or portable additions, warp-shuffle stages ...) were removed after
tag pre-macro-cut; notes/ntt-kernels.md has their measurements.
References: Cooley & Tukey, Math. Comp. 19 (1965); Gentleman & Sande, AFIPS 1966; sppark
``ntt/`` (radix-2^k passes, NR/RN orders) and cuzk ``groth16_ntt_h.cu`` for the orders used by Groth16.
"""

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
"""The build options of ntt.cu that :func:`configure` accepts (``defines=``): the product's asm tail (ff.cuh), ptxas'
level (zkgpu.core.cuda.build_options), block size and occupancy targets. The candidates NTT_FOLD, NTT_BIG_LAST and
NTT_SKIP_ONE were timed on the H200 and deleted (issue 23; notes/ntt-kernels.md, run s5-ntt)."""
RADIX: int | None = None
"""Stages per shared-memory round trip in a pass: 2 (kernel ntt_pass, radix-2) or 4 (ntt_pass_r4, two radix-2 stages in
registers); None (the default) means 2. Read at each call through :func:`radix` (set it with :func:`configure`).
Radix-2 is the default because it was the faster of the two on the H200 (``zkgpu bench ntt`` with each value;
ntt_pass_r4 needs 128 registers, halving the resident threads). Both are tested on the GPU."""
DEFINES: dict[str, int] = {}
"""Extra ``-D`` build options of the NTT kernel module (:func:`configure`; names from :data:`DEFINE_NAMES`), e.g.
``{"NTT_MIN_BLOCKS": 4, "NTT_THREADS": 256}``."""


def configure(*, radix: int | None = None, defines: Mapping[str, int] | None = None) -> None:
    """Set the NTT kernel options (:data:`RADIX`, :data:`DEFINES`); an argument left None keeps its
    current value (``defines={}`` clears the build options).

    Args:
        radix: 2 or 4, stages per shared-memory round trip.
        defines: macro name (one of :data:`DEFINE_NAMES`) -> integer value, extra ``-D`` options of the NTT build.

    Raises:
        ValueError: radix not 2 or 4, or a define that is not one of :data:`DEFINE_NAMES` with an integer value
            (the message names it).
    """
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
    """The radix in use: :data:`RADIX`, 2 when None.

    Raises:
        ValueError: RADIX is not 2 or 4 (names the value).
    """
    if RADIX is None:
        return 2
    _check_radix(RADIX)
    return RADIX


def settings() -> dict[str, Any]:
    """The kernel settings in force (what a benchmark records): ``radix`` (:func:`radix`) and ``defines`` (the kernel
    build options, name -> value).

    Raises:
        ValueError: a bad radix (names the value).
    """
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
    """``scale * x^i`` mod r for i < 2^bits, built on the GPU (kernel ``ntt_build_powers``:
    ``lo[i mod 2^S] * hi[i >> S]`` from two tables of about 2^(bits/2) entries made on the host).

    Returns:
        a new flat uint32 CuPy array, 8 words per element, Montgomery form.
    """
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
    """'coset': g^i; 'coset_ninv': g^i / n; 'icoset': g^-i / n; 'ninv': [1/n] (Montgomery, flat uint32); with
    ``br`` bit-reversed (entry i holds the power of bitrev_L(i)): scale_mode natural then reads it in order where
    bitrev would gather 32 bytes from across the table per element."""
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
    """(pre, pre_mode, post, post_mode) of a transform: the coset shift at the first pass's load, 1/n or g^-i/n at the
    last pass's store (bit-reversed tables on the bit-reversed side); None tables with mode none where nothing is
    scaled."""
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
    """NTT in place on the GPU, on Fr elements in Montgomery form (or canonical: each product is an element times a
    Montgomery-form constant, so the form in is the form out); returns d.

    Launches on CuPy's current stream (use ``with stream:``) and does not synchronise.

    Args:
        d: C-contiguous CuPy array of n = 2^L elements: uint64 ``(n, 4)``, uint32 ``(n, 8)`` or
            flat uint32 ``(8n,)``, Montgomery form (values are not checked).
        inverse, coset: which transform (module docstring); inverse includes the 1/n factor.
        order: "nn" natural -> natural (the last pass scatters, or a bit-reversal pass), "nr" natural -> bit-reversed
            (DIF), "rn" bit-reversed -> natural (DIT). In "nr"/"rn" the bit-reversed side holds the
            element of index bitrev(i) at position i.
        scratch: "nn" of two or more passes only (ignored otherwise): a device buffer of n elements (any
            :func:`zkgpu.gpu.fr_device.device_words` layout) that the first pass writes instead of a fresh one from
            CuPy's pool; its contents are overwritten.

    Raises:
        ValueError: bad order, size not a power of two / empty / beyond 2^32, a scratch buffer of another size.
        TypeError: not a CuPy uint32/uint64 array.
    """
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
    """The passes of one transform (kernel ntt_pass, or ntt_pass_r4 with :data:`RADIX` 4) on the flat words w of 2^L
    elements, on the current stream: DIF, natural -> bit-reversed (DIT with ``dit``: the other way), with the inverse
    root's twiddles if ``inverse`` (no 1/n: that is in the scalings). pre/post (tables, or None) and their modes
    (scale_mode values) scale at the first pass's load and the last pass's store; pre_mode mul_sub
    loads x * aux[0][g] - aux[1][g] (``aux``: two buffers of 2^L elements). ``nn_scratch`` (flat words of 2^L
    elements; DIF with two or more passes): the first pass writes it, the last one writes w in natural order (element g
    to bitrev_L(g)); it may be aux[1], which the first pass reads before it writes the same places. ``only``: the
    passes to launch, a slice of the transform's passes in the order they run (the others belong to a pair pass)."""
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
    """Evaluations on the domain -> evaluations on the coset gH, in place on the current stream:
    inverse NTT (natural in, bit-reversed out) then coset NTT (bit-reversed in, natural out), as
    upstream's ``execute_ntts_single`` (``filecoin-project/curio:
    extern/supraseal-c2/cuda/groth16_ntt_h.cu`` lines 41-62). ``w``: N Fr in Montgomery form
    (:func:`zkgpu.gpu.fr_device.device_words` layout). Returns ``w``.

    The inverse NTT's 1/n and the coset shift g^i are one scaling, by g^i/n, and the two transforms' passes on the low
    bits run as one launch (kernel ntt_pass_pair, g^i/n between): 2*ceil(L/10) - 1 passes over memory.

    Raises:
        ValueError: a size that is not a power of two.
    """
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
    """Forward / inverse / coset NTT over Fr, natural order in and out (module docstring).

    Args:
        values: numpy uint64 ``(n, 4)`` canonical host array, or a CuPy array of the same
            shape/dtype on the device; n = 2^L with 0 <= L <= 32 (as memory allows).
        inverse: inverse transform (includes the 1/n factor).
        coset: on the coset g*H, g = 7 (forward: NTT of c[i]*g^i; inverse: iNTT then *g^-i).
        check: device input only: check every element is < r first (one kernel and one host sync). ``check=False``
            is the trusted path: the caller vouches for the values; a value >= r then gives a wrong result, not an error.
        out: device input only: the output array, uint64 ``(n, 4)`` C-contiguous; ``out=values`` transforms in
            place (the kernels' time: no copy, no allocation). Default: a new array.

    Returns:
        The same kind of array (host in -> host out, device in -> device out), shape ``(n, 4)``
        uint64, canonical. Host input uses the GPU when one is present, else
        :func:`zkgpu.arith.domain.ntt_reference`.

    Raises:
        TypeError: not a numpy/CuPy array, or dtype other than uint64.
        ValueError: shape not ``(n, 4)``, empty, n not a power of two or beyond 2^32, an element
            >= r (the message names the first bad index); ``out`` given for host input, of another shape, or
            overlapping ``values`` without being it.
    """
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
