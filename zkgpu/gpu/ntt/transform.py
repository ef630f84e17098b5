"""Number-theoretic transform (NTT) over the BLS12-381 scalar field Fr on the GPU.

The transforms (forward, inverse, coset, inverse coset; n = 2^L, omega = ``FR.root_of_unity(L)``, coset
generator g = 7) are defined in :mod:`zkgpu.arith.domain`, which holds their CPU references
(:func:`zkgpu.arith.domain.ntt_reference`, :func:`zkgpu.arith.domain.dft_naive`). Public API:

* :func:`ntt` -- host arrays (numpy uint64 ``(n, 4)``, canonical, natural order) or CuPy arrays of the
  same shape/dtype (device-resident); returns the same kind. Without a GPU it runs the CPU reference.
* :func:`ntt_inplace` -- the device API for the prover pipeline: a CuPy array already in Montgomery
  form, transformed in place, with ``order`` in ``{"nn", "nr", "rn"}`` (natural / bit-reversed,
  input then output). "nr" and "rn" skip the bit-reversal permutation, so the Groth16 H flow runs as in
  cuzk (``groth16_ntt_h.cu``): iNTT "nr" -> coset NTT "rn" -> pointwise -> inverse coset NTT "nn".
* :func:`coset_evals_inplace` -- evaluations on H -> evaluations on the coset gH (iNTT "nr", coset NTT
  "rn"), the first step of the Groth16 H computation (:mod:`zkgpu.gpu.ntt.qap`).
* :func:`global_passes`, :func:`settings` -- what a benchmark records (``zkgpu bench ntt``).
* :func:`power_table` -- ``scale * x^i`` for i < 2^bits, built on the GPU. Fr vectors on the device
  (layouts, value checks, Montgomery form) go through :mod:`zkgpu.gpu.fr_device`.

GPU algorithms (``algorithm=``, default :data:`ALGORITHM`; both give the same result bit for bit):

* "stagewise" (``zkgpu/kernels/ntt.cu``): radix-2 Gentleman-Sande (DIF, natural -> bit-reversed) and
  Cooley-Tukey (DIT, bit-reversed -> natural) butterflies sharing one twiddle table
  ``tw[h + t] = omega_{2h}^t`` (n entries); up to 10 stages per launch in shared memory (at 2^24: 3
  passes of 8 stages over global memory), one radix-2 stage per shared-memory round trip.
* "fused" (``zkgpu/kernels/ntt_fused.cu``): the same passes as radix-2^k sub-transforms in registers
  (:data:`FUSED_RADIX`, :data:`FUSED_OUTER`; the four-step split: Bailey, J. Supercomputing 4, 1990).

Both build their tables on the GPU and cache them per size, and fuse the coset shift and the 1/n (or
g^-i/n) scaling into the first/last pass; "nn" of two or more passes goes through a scratch buffer whose last pass
stores to the bit-reversed places (stagewise: NTT_NN_SCATTER, :func:`host_option`), otherwise it adds one bit-reversal pass.
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
    from_montgomery,
    to_device_mont,
    to_montgomery,
)
from zkgpu.gpu.ntt import plan as ntt_plan
from zkgpu.gpu.ntt.plan import grid as _grid
from zkgpu.gpu.ntt.plan import inner_table as _inner_table
from zkgpu.gpu.ntt.plan import passes as _passes
from zkgpu.gpu.ntt.plan import split_outer as _split_outer
from zkgpu.gpu.ntt.plan import split_tables as _split_tables

__all__ = [
    "ORDERS", "ALGORITHMS", "RADIX", "DEFINES", "configure", "radix", "ntt", "ntt_inplace", "coset_evals_inplace",
    "stagewise_passes", "host_option", "scale_on_bitrev_side", "bitrev_permute", "power_table", "global_passes",
    "settings", "resolve_algorithm", "clear_cache",
]

P = FR.modulus
G = FR.generator
ORDERS = ("nn", "nr", "rn")
# read from the kernel sources (zkgpu/core/cuda.py: header_defines / header_enum), never restated here
_MAX_TILE_LOG, _THREADS, _BR_Q, _SMEM_TW = _cuda.header_defines("ntt.cu", "NTT_MAX_TILE_LOG", "NTT_THREADS", "NTT_BR_Q",
                                                                "NTT_SMEM_TW")
_HOST_OPTIONS = ("NTT_SCALE_BR", "NTT_NN_SCATTER", "NTT_PAIR", "NTT_TILE_COLS", "NTT_FOLD", "NTT_BIG_LAST")  # host_option()
_HOST_DEFAULTS = dict(zip(_HOST_OPTIONS, _cuda.header_defines("ntt.cu", *_HOST_OPTIONS), strict=True))
_FUSED_MAXK, _FUSED_THREADS = _cuda.header_defines("ntt_fused.cu", "NTT_FUSED_MAXK", "NTT_FUSED_THREADS")
_ORDER = _cuda.header_enum("ntt_common.cuh", "ntt_order")  # the butterflies of a pass: nr (DIF), rn (DIT)
_SCALE = _cuda.header_enum("ntt_common.cuh", "scale_mode")  # none, natural, bitrev, constant, h_step
_OUTER = _cuda.header_enum("ntt_fused.cu", "outer_mode")  # none, split, table, exact
_BIG_MAXK = 12  # NTT_FUSED_MAXK of the big-tile builds (FUSED_TILE_LOG 11, 12)
ALGORITHMS = ("stagewise", "fused")
ALGORITHM = "stagewise"
"""The default ``algorithm`` of :func:`ntt_inplace` (read at each call; a benchmark's kernel spec,
:func:`zkgpu.app.bench.ntt.kernel_settings`, sets it for a block): "stagewise" (kernel ntt_pass: one radix-2 stage per
shared-memory round trip, each pass's twiddles copied from an n-entry table into shared memory) or "fused" (kernels
ntt_fused_*: radix-2^k sub-transforms with the stages in registers, small twiddle tables, one outer twiddle per
element per pass; see ntt.cu)."""
FUSED_RADIX = 2
"""Elements per thread in the fused kernels (2, 4 or 8): the stages done in registers per shared-memory round trip are
log2 of it; 2 is the default, the fastest of the three on the H200 (data/nvidia-h200-20261201-bench-ntt: 2^24 forward
9.2 / 11.5 / 16.4 ms)."""
FUSED_OUTER = "exact"
"""How a fused pass over the index bits [s_lo, s_lo+k), s_lo > 0, gets its twiddles. "exact": every butterfly loads its
own twiddle from the n-entry stagewise table (the stagewise kernel's products, no extra one). Otherwise inner
twiddles from a small table and one outer twiddle per element, a power of omega_m with m = 2^(s_lo+k): "split"
(omega_n^E from two tables of about sqrt(n) entries, one extra product), "table" (a table of omega_m^e, e < m/2: one
load, m/2 * 32 bytes) or "auto" (the table where it has at most 2^_OUTER_TABLE_MAX_LOG entries, so it stays in L2;
split tables elsewhere). "exact" is the default: on the H200 the outer products cost more than the table loads they
save (data/nvidia-h200-20261201-bench-ntt)."""
_OUTER_TABLE_MAX_LOG = 19  # 2^19 entries = 16 MiB
FIELD_ARITH: str | None = None
"""Additions of the NTT kernels when set (the product is ff.cuh's ZK_FF_MUL in every case): "ptx" (volatile asm,
ZK_NTT_PTX=1), "cxx" (portable C++) or "asm" (stagewise: non-volatile asm chains, ZK_NTT_ASM=1; fused: portable).
None keeps each module's default (kernel specs -ptx / -cxx / -asm set it for a benchmark)."""
FIELD_ARITHS = ("ptx", "cxx", "asm")
FUSED_TILE_LOG = 10
"""log2 of the fused passes' tiles (k field bits + c column bits), 1..12; a pass does at most this many stages. 10 (33
KiB of shared memory per block, 128 threads, several blocks per SM): 2^24 in 3 passes. 11 or 12 (up to 132 KiB, 512
threads, one block per SM; kernels built with NTT_FUSED_MAXK=12): 2^24 in 2 passes. Smaller values (tests) give more
passes."""
RADIX: int | None = None
"""Stages per shared-memory round trip in a stagewise pass: 2 (kernel ntt_pass, radix-2) or 4 (ntt_pass_r4, two radix-2
stages in registers); None (the default) means 2. Read at each call through :func:`radix` (set it with
:func:`configure`). Radix-2 is the default because it was the faster
of the two on the H200 (``zkgpu bench ntt`` with each value; ntt_pass_r4 needs 128 registers, halving the resident
threads). Both are tested on the GPU."""
DEFINES: dict[str, int] = {}
"""Extra ``-D`` build options of the NTT kernel modules (:func:`configure`, e.g.
``defines={"ZK_NTT_PTX": 0, "NTT_MIN_BLOCKS": 3}``): ``ZK_NTT_PTX`` 0 builds the kernels with the portable
C++ additions instead of the volatile PTX chains (1 the other way; default 0 in both modules); ``ZK_NTT_ASM`` 1
(stagewise; the default) the butterflies' additions as non-volatile asm chains; ``ZK_NTT_LAZY`` 1 (stagewise) the DIF
difference unreduced into its twiddle product (ntt_common.cuh says why that is exact); ``NTT_SMEM_TW`` 1 (stagewise;
the default) a pass's twiddles copied to shared memory once per pass (ntt.cu's load_pass_twiddles); ``NTT_ILP`` 2 two
radix-2 butterflies per thread in flight; ``NTT_THREADS`` / ``NTT_MIN_BLOCKS`` / ``NTT_R4_MIN_BLOCKS`` (stagewise)
and ``NTT_FUSED_THREADS`` / ``NTT_FUSED_MIN_BLOCKS`` (fused) set the block size and the occupancy target;
``NTT_SHFL`` (stagewise radix-2) the stages on the tile bits below 6 in registers with warp shuffles: 1 every pass, 2
the DIT passes, 0 none (the default: the final side-by-side measured 2 about 9% slower on every transform);
``NTT_SCALE_BR`` 0 (host only) gathered scalings (:func:`host_option`); the rest: zkgpu.app.bench.ntt.KERNEL_SPEC_PARTS."""


def configure(*, radix: int | None = None, defines: Mapping[str, int] | None = None) -> None:
    """Set the NTT kernel options (:data:`RADIX`, :data:`DEFINES`); an argument left None keeps its
    current value (``defines={}`` clears the build options).

    Args:
        radix: 2 or 4, stages per shared-memory round trip of the stagewise kernel.
        defines: macro name -> integer value, extra ``-D`` options of every NTT kernel build.

    Raises:
        ValueError: radix not 2 or 4, or a define that is not a C identifier with an integer value
            (the message names it).
    """
    global RADIX, DEFINES
    if radix is not None:
        _check_radix(radix)
        RADIX = int(radix)
    if defines is not None:
        for key, value in defines.items():
            if not (isinstance(key, str) and key.isidentifier()) or isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"zkgpu.gpu.ntt.transform.configure: define {key!r}={value!r} must be a C identifier with an integer value")
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
    """The kernel settings in force (what a benchmark records): ``algorithm`` (:data:`ALGORITHM`),
    ``radix`` (:func:`radix`), ``fused_radix``, ``fused_outer``, ``fused_tile_log``, ``field_arith``
    (None: each module's default) and ``defines`` (the kernel build options, name -> value).

    Raises:
        ValueError: a bad radix or :data:`FUSED_TILE_LOG` (names the value).
    """
    return dict(algorithm=ALGORITHM, radix=radix(), fused_radix=FUSED_RADIX, fused_outer=FUSED_OUTER,
                fused_tile_log=_fused_tile_log(), field_arith=FIELD_ARITH, defines=dict(_defines()))


# ----------------------------------------------------------------------------------------------
# kernels and their build options
# ----------------------------------------------------------------------------------------------
def _defines() -> tuple[tuple[str, str], ...]:
    """The ``-D`` build options of the NTT modules: :data:`DEFINES`, plus ZK_NTT_PTX from
    :data:`FIELD_ARITH` when that is set and DEFINES does not set it."""
    out = [(k, str(v)) for k, v in DEFINES.items()]
    if FIELD_ARITH is not None and FIELD_ARITH not in FIELD_ARITHS:
        raise ValueError(f"zkgpu.gpu.ntt.transform.FIELD_ARITH must be one of {FIELD_ARITHS} or None, got {FIELD_ARITH!r}")
    if FIELD_ARITH is not None:  # each choice sets both macros, whatever the headers' defaults
        for name, value in (("ZK_NTT_PTX", FIELD_ARITH == "ptx"), ("ZK_NTT_ASM", FIELD_ARITH == "asm")):
            if name not in DEFINES:
                out.append((name, str(int(value))))
    return tuple(out)


def _threads() -> int:
    return int(dict(_defines()).get("NTT_THREADS", _THREADS))


def _kernel(name: str) -> Any:
    return _cuda.get_kernel("ntt", name, _defines())


def _fused_maxk() -> int:
    """NTT_FUSED_MAXK of the fused modules: the largest sub-transform, the header's (10) or, for big
    tiles, 12."""
    return _FUSED_MAXK if _fused_tile_log() <= _FUSED_MAXK else _BIG_MAXK


def _fused_threads(lr: int) -> int:
    """Threads per block of the fused kernels (NTT_FUSED_THREADS; :data:`DEFINES` may set it): the header's
    (128) for tiles up to 2^10; for the big tiles (one block per SM) 512, or 256 with 8 elements per thread."""
    default = _FUSED_THREADS if _fused_maxk() == _FUSED_MAXK else (512 if lr <= 2 else 256)
    return int(dict(_defines()).get("NTT_FUSED_THREADS", default))


def _fused_defines(lr: int) -> tuple[tuple[str, str], ...]:
    """The build options of the fused module with 2^lr elements per thread."""
    out = [*_defines(), ("NTT_FUSED_R", str(1 << lr))]
    if _fused_maxk() != _FUSED_MAXK:
        given = dict(out)
        out += [("NTT_FUSED_MAXK", str(_fused_maxk()))]
        out += [(k, v) for k, v in (("NTT_FUSED_THREADS", str(_fused_threads(lr))), ("NTT_FUSED_MIN_BLOCKS", "1"))
                if k not in given]
    return tuple(out)


def _fused_kernel(name: str, lr: int) -> Any:
    """A kernel of ntt_fused.cu built for 2^lr elements per thread (one module per build option set)."""
    return _cuda.get_kernel("ntt_fused", name, _fused_defines(lr))


def _launch_fused(kern: Any, grid: int, block: int, shared: int, args: tuple) -> None:
    """Launch a pass kernel (stagewise or fused) with ``shared`` bytes of dynamic shared memory."""
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


def host_option(name: str) -> int:
    """A host-only build option of the stagewise NTT in force (:data:`DEFINES`, else ntt.cu's default): NTT_SCALE_BR 1,
    scalings on the bit-reversed side from bit-reversed tables read in order (0: gathered); NTT_NN_SCATTER 1, "nn" of 2+
    passes through a scratch buffer whose last pass stores to the bit-reversed places (0: in place and a bit-reversal pass);
    NTT_PAIR 1, :func:`coset_evals_inplace` with the iNTT's last pass and the coset NTT's first as one launch (0: two);
    NTT_TILE_COLS 1, the most column bits c of a pass's tile (10: c = 2 at 2^24); NTT_FOLD 0, an inverse's 1/n at its last
    pass's store (1: in its last DIF pass's twiddles, scale_mode fold); NTT_BIG_LAST 0, uneven passes larger first (1: last)."""
    return int(dict(_defines()).get(name, _HOST_DEFAULTS[name]))


def scale_on_bitrev_side(L: int, kind: str) -> tuple[Any, int]:
    """(table, scale_mode) scaling the bit-reversed side of a transform by :func:`_scale_table` ``kind`` (NTT_SCALE_BR)."""
    br = host_option("NTT_SCALE_BR")
    return (_scale_table(L, kind, True), _SCALE["natural"]) if br else (_scale_table(L, kind), _SCALE["bitrev"])


def _inner_twiddles(inverse: bool) -> Any:
    """itw[i] = omega_{2^MAXK}^i (inverse: omega^-i), i < 2^(MAXK-1): the inner twiddles of every fused pass
    (omega_{2^k} = omega_{2^MAXK}^(2^(MAXK-k)), consistent with FR.root_of_unity at every size)."""
    return _inner_table(inverse, _fused_maxk())


def _outer_twiddles(L: int, m: int, inverse: bool, mode: str, scale: int = 1) -> tuple[Any, Any, int, int]:
    """The outer twiddles of a fused pass with s_lo + k = m (powers of omega_{2^m}), each times ``scale``
    (1/n for the one pass that applies an inverse NTT's 1/n): (olo, ohi, S, omode), omode an outer_mode.

    split: omega_n^E = ohi[E >> S] * olo[E mod 2^S] (2^S + 2^(L-S) entries, E in units of omega_n);
    table: olo[e] = omega_{2^m}^e for e < 2^(m-1), -olo[e - 2^(m-1)] above; exact: the stagewise table.

    Raises:
        ValueError: an unknown mode (:data:`FUSED_OUTER`).
    """
    if mode not in ("split", "table", "auto", "exact"):
        raise ValueError(f"zkgpu.gpu.ntt.transform.FUSED_OUTER must be 'exact', 'split', 'table' or 'auto', got {mode!r}")
    if mode == "exact":
        if scale != 1:
            raise ValueError("exact twiddles take no folded factor")
        tw = _twiddles(L, inverse)
        return tw, tw, 0, _OUTER["exact"]
    if mode == "split" or (mode == "auto" and m - 1 > _OUTER_TABLE_MAX_LOG):
        return (*_split_outer(L, inverse, scale), _OUTER["split"])
    t = _outer_table(m, inverse, scale)
    return t, t, 0, _OUTER["table"]


@_cuda.device_cache
def _outer_table(m: int, inverse: bool, scale: int = 1) -> Any:
    """scale * omega_{2^m}^e (inverse: omega^-e) for e < 2^(m-1), Montgomery, flat uint32."""
    omega = FR.root_of_unity(m)
    if inverse:
        omega = pow(omega, -1, P)
    return power_table(omega, m - 1, scale)


def clear_cache() -> None:
    """Free the cached twiddle and coset tables (n * 32 bytes each per size and direction)."""
    for table in (_twiddles, _scale_table, _inner_table, _split_outer, _outer_table, ntt_plan.fold_table):
        table.cache_clear()


def global_passes(L: int, order: str, algorithm: str | None = None) -> int:
    """Passes over global memory of one transform of 2^L elements in ``order`` with ``algorithm``
    (default :data:`ALGORITHM`): ceil(L / tile) butterfly passes (tile: 10 bits, fused
    :data:`FUSED_TILE_LOG`), plus the bit-reversal pass of "nn" (folded into the first and last passes when there
    are two or more: fused always, stagewise with NTT_NN_SCATTER).

    Raises:
        ValueError: an unknown algorithm or a bad :data:`FUSED_TILE_LOG`.
    """
    algorithm = resolve_algorithm(algorithm)
    tile = _fused_tile_log() if algorithm == "fused" else _MAX_TILE_LOG
    npass = len(_passes(L, tile))
    return npass + (1 if order == "nn" and (npass == 1 or (algorithm != "fused" and not host_option("NTT_NN_SCATTER"))) else 0)


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


def _fused_lr(k: int) -> int:
    if FUSED_RADIX not in (2, 4, 8):
        raise ValueError(f"zkgpu.gpu.ntt.transform.FUSED_RADIX must be 2, 4 or 8, got {FUSED_RADIX!r}")
    return min(FUSED_RADIX.bit_length() - 1, k)


def _fused_tile_log() -> int:
    if not 1 <= FUSED_TILE_LOG <= 12:
        raise ValueError(f"zkgpu.gpu.ntt.transform.FUSED_TILE_LOG must be in 1..12, got {FUSED_TILE_LOG!r}")
    return FUSED_TILE_LOG


def _fused_geometry(n: int, k: int, c: int) -> tuple[int, int, int, int]:
    """(lr, grid, block, shared bytes) of a fused pass on tiles of 2^(k+c) elements."""
    lr = _fused_lr(k)
    T = 1 << (k + c)
    return lr, n // T, max(1, min(T >> lr, _fused_threads(lr))), 32 * (T + (T >> 5))


def _fused_pass(
    w: Any, L: int, s_lo: int, k: int, c: int, *, dit: bool, inverse: bool,
    pre: Any = None, pre_mode: int = _SCALE["none"], post: Any = None, post_mode: int = _SCALE["none"],
    post_op: tuple | None = None,
    out: Any = None, brev_out: bool = False, outer_scale: int = 1,
) -> None:
    """Launch one fused pass (kernel ntt_fused_dif / ntt_fused_dit) reading the flat words w of n = 2^L
    elements and writing ``out`` (default w itself; with ``brev_out``, element g to bitrev_L(g) of out,
    which must then be another buffer). pre/post and their modes: scale_mode scalings (:func:`_scalings`);
    ``post_op = (zinv, b, c)`` instead stores (x * b - c) * zinv (scale_mode h_step, the Groth16 H
    pointwise step). ``outer_scale``: a factor folded into the outer twiddles (s_lo > 0)."""
    n = w.size // 8
    itw = _inner_twiddles(inverse)
    aux1 = aux2 = None
    if post_op is not None:
        if post_mode != _SCALE["none"]:
            raise ValueError("post_op needs a transform without a final scaling")
        post, aux1, aux2 = post_op
        post_mode = _SCALE["h_step"]
    if s_lo:
        olo, ohi, S, omode = _outer_twiddles(L, s_lo + k, inverse, FUSED_OUTER, outer_scale)
    else:
        olo, ohi, S, omode = itw, itw, 0, _OUTER["none"]
    lr, grid, block, shared = _fused_geometry(n, k, c)
    some = itw  # a valid pointer for the unused table arguments
    _launch_fused(
        _fused_kernel("ntt_fused_dit" if dit else "ntt_fused_dif", lr), grid, block, shared,
        (
            w, w if out is None else out, np.int32(1 if brev_out else 0), itw, np.int32(omode), olo, ohi, np.int32(S),
            np.int32(L), np.int32(s_lo), np.int32(k), np.int32(c),
            some if pre is None else pre, np.int32(pre_mode), some if post is None else post, np.int32(post_mode),
            some if aux1 is None else aux1, some if aux2 is None else aux2, np.uint32(grid),
        ),
    )


def _fused_pair_pass(words: Any, L: int, k: int) -> None:
    """The pass shared by an inverse NTT "nr" and the coset NTT "rn" after it, on the low k index bits
    (kernel ntt_fused2: inverse sub-transform, g^i/n at the bit-reversed index, forward sub-transform)."""
    n = words.size // 8
    lr, grid, block, shared = _fused_geometry(n, k, 0)
    _launch_fused(
        _fused_kernel("ntt_fused2", lr), grid, block, shared,
        (words, _inner_twiddles(True), _inner_twiddles(False), _scale_table(L, "coset_ninv"),
         np.int32(L), np.int32(k), np.uint32(grid)),
    )


def _scalings(L: int, inverse: bool, coset: bool, dit: bool, fold: bool = False) -> tuple[Any, int, Any, int]:
    """(pre, pre_mode, post, post_mode) of a transform, for the stagewise and the fused kernels: the coset
    shift at the first pass's load, 1/n or g^-i/n at the last pass's store (bit-reversed index on the
    bit-reversed side; ``fold`` and DIF: 1/n in the last pass's twiddles); None tables with mode 0 where nothing is scaled."""
    none, natural = _SCALE["none"], _SCALE["natural"]
    pre, pre_mode, post, post_mode = None, none, None, none
    if coset and not inverse:
        pre, pre_mode = scale_on_bitrev_side(L, "coset") if dit else (_scale_table(L, "coset"), natural)
    if inverse and not coset:
        post, post_mode = (ntt_plan.fold_table(L), _SCALE["fold"]) if fold and not dit else (_scale_table(L, "ninv"), _SCALE["constant"])
    if inverse and coset:
        post, post_mode = (_scale_table(L, "icoset"), natural) if dit else scale_on_bitrev_side(L, "icoset")
    return pre, pre_mode, post, post_mode


def _ntt_fused(
    w: Any, L: int, inverse: bool, coset: bool, order: str, *, post_op: tuple | None = None, scratch: Any = None
) -> None:
    """The fused algorithm (module docstring): ceil(L/10) passes. "nn" with more than one pass: the first
    pass writes a scratch buffer (``scratch``, n elements, or a fresh one from CuPy's pool), the last one
    writes w back at the bit-reversed positions, so no bit-reversal pass is needed; with one pass, the
    bit-reversal kernel follows. post_op = (zinv, b, c): the last pass stores (x * b - c) * zinv instead
    (scale_mode h_step)."""
    dit = order == "rn"
    pre, pre_mode, post, post_mode = _scalings(L, inverse, coset, dit)
    passes = _passes(L, _fused_tile_log())
    if dit:
        passes = passes[::-1]
    last = len(passes) - 1
    top = last if dit else 0  # the pass with outer twiddles on the high bits
    outer_scale = 1
    if inverse and not coset and last > 0 and FUSED_OUTER != "exact":  # 1/n folded into the outer twiddles
        outer_scale, post, post_mode = pow(1 << L, -1, P), None, _SCALE["none"]
    tmp = _scratch(w, scratch) if order == "nn" and last > 0 else None
    src = w
    for i, (s_lo, k, c) in enumerate(passes):
        kw: dict[str, Any] = {}
        if i == 0:
            kw.update(pre=pre, pre_mode=pre_mode)
        if i == last:
            kw.update(post=post, post_mode=post_mode, post_op=post_op)
        if i == top:
            kw.update(outer_scale=outer_scale)
        if tmp is not None and i == 0:
            kw.update(out=tmp)
        elif tmp is not None and i == last:
            kw.update(out=w, brev_out=True)
        _fused_pass(src, L, s_lo, k, c, dit=dit, inverse=inverse, **kw)
        if tmp is not None and i == 0:
            src = tmp
    if order == "nn" and tmp is None:
        bitrev_permute(w)


def resolve_algorithm(algorithm: str | None) -> str:
    """``algorithm``, or :data:`ALGORITHM` when None, checked.

    Raises:
        ValueError: not one of :data:`ALGORITHMS`.
    """
    algorithm = ALGORITHM if algorithm is None else algorithm
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    return algorithm


def ntt_inplace(
    d: Any, *, inverse: bool = False, coset: bool = False, order: str = "nn", algorithm: str | None = None,
    scratch: Any = None,
) -> Any:
    """NTT in place on the GPU, on Fr elements already in Montgomery form; returns d.

    Launches on CuPy's current stream (use ``with stream:``) and does not synchronise.

    Args:
        d: C-contiguous CuPy array of n = 2^L elements: uint64 ``(n, 4)``, uint32 ``(n, 8)`` or
            flat uint32 ``(8n,)``, Montgomery form (values are not checked).
        inverse, coset: which transform (module docstring); inverse includes the 1/n factor.
        order: "nn" natural -> natural (the last pass scatters, or a bit-reversal pass), "nr" natural -> bit-reversed
            (DIF), "rn" bit-reversed -> natural (DIT). In "nr"/"rn" the bit-reversed side holds the
            element of index bitrev(i) at position i.
        algorithm: "stagewise" or "fused" (see :data:`ALGORITHM`, the default when None); both give
            the same result bit for bit.
        scratch: "nn" of two or more passes only (ignored otherwise; stagewise with NTT_NN_SCATTER): a device
            buffer of n elements (any :func:`zkgpu.gpu.fr_device.device_words` layout) that the first pass writes
            instead of a fresh one from CuPy's pool; its contents are overwritten.

    Raises:
        ValueError: bad order or algorithm, size not a power of two / empty / beyond 2^32, a scratch
            buffer of another size.
        TypeError: not a CuPy uint32/uint64 array.
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    algorithm = resolve_algorithm(algorithm)
    w = device_words(d)
    n = w.size // 8
    L = log2_size(n)
    if L == 0:
        return d  # every variant is the identity on one element
    if algorithm == "fused":
        _ntt_fused(w, L, bool(inverse), bool(coset), order, scratch=scratch)
        return d
    dit = order == "rn"
    tmp = _scratch(w, scratch) if order == "nn" and host_option("NTT_NN_SCATTER") and len(_passes(L)) > 1 else None
    stagewise_passes(w, L, bool(inverse), dit, *_scalings(L, bool(inverse), bool(coset), dit, bool(host_option("NTT_FOLD"))), nn_scratch=tmp)
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
    """The passes of one stagewise transform (kernel ntt_pass, or ntt_pass_r4 with :data:`RADIX` 4; the last, radix-2 DIF
    with post mode fold: ntt_pass_fold) on the flat words w of 2^L elements, on the current stream: DIF, natural -> bit-
    reversed (DIT with ``dit``: the other way), with the inverse root's twiddles if ``inverse`` (no 1/n: that is in the
    scalings). pre/post (tables, or None) and their modes (scale_mode values) scale at the first pass's load and the last
    pass's store (fold: 1/n in the last DIF pass's twiddles, ntt_plan.fold_table); pre_mode mul_sub
    loads x * aux[0][g] - aux[1][g] (``aux``: two buffers of 2^L elements). ``nn_scratch`` (flat words of 2^L
    elements; DIF with two or more passes): the first pass writes it, the last one writes w in natural order (element g
    to bitrev_L(g)); it may be aux[1], which the first pass reads before it writes the same places. ``only``: the
    passes to launch, a slice of the transform's passes in the order they run (the others belong to a pair pass)."""
    n = w.size // 8
    tw = _twiddles(L, inverse)
    pre, post = (tw if pre is None else pre), (tw if post is None else post)  # mode 0 ignores the table
    aux1, aux2 = (tw, tw) if aux is None else aux
    passes = _passes(L, _MAX_TILE_LOG, host_option("NTT_TILE_COLS"), host_option("NTT_BIG_LAST"))
    passes = passes[::-1] if dit else passes
    rad = radix()
    kern = _kernel("ntt_pass_r4" if rad == 4 else "ntt_pass")
    last_kern = _kernel("ntt_pass_fold") if post_mode == _SCALE["fold"] and rad == 2 and not dit else kern
    defs = dict(_defines())  # the build options, for the passes' shared memory (ntt_plan.pass_shared_bytes)
    if nn_scratch is not None and (dit or len(passes) < 2):
        raise ValueError("stagewise_passes: nn_scratch needs a DIF transform of two or more passes")
    last = len(passes) - 1
    for i in range(len(passes))[only]:
        s_lo, k, c = passes[i]
        T = 1 << (k + c)
        src = w if nn_scratch is None or i == 0 else nn_scratch
        dst = w if nn_scratch is None or i == last else nn_scratch
        _launch_fused(
            last_kern if i == last else kern, n // T, max(1, min(T // rad, _threads())), ntt_plan.pass_shared_bytes(T, defs),
            (
                src, dst, np.int32(nn_scratch is not None and i == last), tw, np.int32(L), np.int32(s_lo), np.int32(k), np.int32(c), np.int32(_ORDER["rn" if dit else "nr"]),
                pre, np.int32(pre_mode if i == 0 else _SCALE["none"]),
                post, np.int32(post_mode if i == last else _SCALE["none"]), aux1, aux2,
            ),
        )


def coset_evals_inplace(w: Any, *, algorithm: str | None = None, post_op: tuple | None = None) -> Any:
    """Evaluations on the domain -> evaluations on the coset gH, in place on the current stream:
    inverse NTT (natural in, bit-reversed out) then coset NTT (bit-reversed in, natural out), as
    upstream's ``execute_ntts_single`` (``filecoin-project/curio:
    extern/supraseal-c2/cuda/groth16_ntt_h.cu`` lines 41-62). ``w``: N Fr in Montgomery form
    (:func:`zkgpu.gpu.fr_device.device_words` layout). Returns ``w``.

    Raises:
        ValueError: a size that is not a power of two, an unknown algorithm, or ``post_op`` where it
            cannot apply (stagewise, or a transform of one pass).

    Stagewise: the inverse NTT's 1/n and the coset shift g^i are one scaling, by g^i/n at the coset NTT's load; with
    NTT_PAIR (:func:`host_option`) the two transforms' passes on the low bits run as one (kernel ntt_pass_pair, g^i/n between).
    With ``algorithm="fused"`` the two transforms share their pass on the low index bits (kernel
    ntt_fused2_*: the inverse sub-transform, the factor g^i/n, the forward sub-transform), so the pair
    makes 2*ceil(L/10) - 1 passes over memory instead of 2*ceil(L/10). ``post_op = (zinv, b, c)`` (fused
    only, more than one pass): the last pass stores (w * b - c) * zinv, the Groth16 pointwise step."""
    algorithm = resolve_algorithm(algorithm)
    words = device_words(w)
    L = log2_size(words.size // 8)
    if algorithm != "fused":
        if post_op is not None:
            raise ValueError("coset_evals_inplace: post_op needs algorithm='fused'")
        none = _SCALE["none"]  # the iNTT's 1/n rides on the coset shift: one product per element by g^i/n
        if L and host_option("NTT_PAIR"):
            stagewise_passes(words, L, True, False, None, none, None, none, only=slice(0, -1))
            k = _passes(L, big_last=host_option("NTT_BIG_LAST"))[-1][1]
            mid, mid_mode = scale_on_bitrev_side(L, "coset_ninv")
            shared = (96 if int(dict(_defines()).get("NTT_SMEM_TW", _SMEM_TW)) else 32) << k
            _launch_fused(_kernel("ntt_pass_pair"), 1 << (L - k), min(1 << (k - 1), _threads()), shared,
                          (words, _twiddles(L, True), _twiddles(L, False), np.int32(L), np.int32(k), mid, np.int32(mid_mode)))
            stagewise_passes(words, L, False, True, None, none, None, none, only=slice(1, None))
        elif L:
            stagewise_passes(words, L, True, False, None, none, None, none)
            stagewise_passes(words, L, False, True, *scale_on_bitrev_side(L, "coset_ninv"), None, none)
        return w
    if L == 0:
        if post_op is not None:
            raise ValueError("coset_evals_inplace: post_op needs more than one pass")
        return w
    passes = _passes(L, _fused_tile_log())  # DIF order: the last one has s_lo = c = 0
    if post_op is not None and len(passes) < 2:
        raise ValueError("coset_evals_inplace: post_op needs more than one pass")
    for s_lo, k, c in passes[:-1]:  # the inverse NTT "nr" up to its last pass
        _fused_pass(words, L, s_lo, k, c, dit=False, inverse=True)
    _fused_pair_pass(words, L, passes[-1][1])
    dit_passes = passes[::-1][1:]
    for i, (s_lo, k, c) in enumerate(dit_passes):  # the coset NTT "rn" after its first pass
        last = post_op is not None and i == len(dit_passes) - 1
        _fused_pass(words, L, s_lo, k, c, dit=True, inverse=False, post_op=post_op if last else None)
    return w


def _ntt_device(d: Any, inverse: bool, coset: bool, name: str = "values", algorithm: str | None = None) -> Any:
    cp = _cuda.cupy()
    check_device_array(d, name=name)
    log2_size(d.shape[0])
    out = cp.array(d, dtype=cp.uint64, order="C", copy=True)
    w = out.view(cp.uint32).reshape(-1)
    check_canonical(w, name)
    to_montgomery(w)
    ntt_inplace(w, inverse=inverse, coset=coset, order="nn", algorithm=algorithm)
    from_montgomery(w)
    return out


def ntt(values: Any, *, inverse: bool = False, coset: bool = False, algorithm: str | None = None) -> Any:
    """Forward / inverse / coset NTT over Fr, natural order in and out (module docstring).

    Args:
        values: numpy uint64 ``(n, 4)`` canonical host array, or a CuPy array of the same
            shape/dtype on the device; n = 2^L with 0 <= L <= 32 (as memory allows).
        inverse: inverse transform (includes the 1/n factor).
        coset: on the coset g*H, g = 7 (forward: NTT of c[i]*g^i; inverse: iNTT then *g^-i).
        algorithm: the GPU kernels, "stagewise" or "fused" (default :data:`ALGORITHM`).

    Returns:
        The same kind of array (host in -> host out, device in -> device out), shape ``(n, 4)``
        uint64, canonical. Host input uses the GPU when one is present, else
        :func:`zkgpu.arith.domain.ntt_reference`.

    Raises:
        TypeError: not a numpy/CuPy array, or dtype other than uint64.
        ValueError: shape not ``(n, 4)``, empty, n not a power of two or beyond 2^32, an element
            >= r (the message names the first bad index), or an unknown algorithm.
    """
    resolve_algorithm(algorithm)
    if _cuda.is_device_array(values):
        return _ntt_device(values, inverse, coset, algorithm=algorithm)
    if isinstance(values, np.ndarray) and values.ndim == 2:
        log2_size(values.shape[0])  # the size error before any copy of a huge (broadcast) array
    arr = check_array(FR, values)
    log2_size(arr.shape[0])
    if _cuda.gpu_available():
        return _ntt_device(_cuda.cupy().asarray(arr), inverse, coset, algorithm=algorithm).get()
    return fr_from_ints(ntt_reference(fr_to_ints(arr), inverse=inverse, coset=coset))
