"""Number-theoretic transform (NTT) over the BLS12-381 scalar field Fr, on the GPU with a CPU reference.

Definitions (n = 2^L, omega = ``FR.root_of_unity(L)``, g = 7 the multiplicative generator of Fr, the
arkworks/blst/sppark convention):

* forward NTT: ``X[j] = sum_i c[i] * omega^(i*j)``
* inverse NTT: ``c[i] = n^-1 * sum_j X[j] * omega^(-i*j)``
* forward coset NTT (evaluations on the coset g*H): the NTT of ``c[i] * g^i``
* inverse coset NTT: the inverse NTT, then ``c[i] *= g^-i``

Public API
----------
* :func:`ntt` -- host arrays (numpy uint64 ``(n, 4)``, canonical, natural order) or CuPy arrays of the
  same shape/dtype (device-resident); returns the same kind. Without a GPU it runs the CPU reference.
* :func:`ntt_inplace` -- the device API for the prover pipeline: a CuPy array already in Montgomery
  form, transformed in place, with ``order`` in ``{"nn", "nr", "rn"}`` (natural / bit-reversed,
  input then output). "nr" and "rn" skip the bit-reversal permutation, so the Groth16 H flow runs as in
  cuzk (``groth16_ntt_h.cu``): iNTT "nr" -> coset NTT "rn" -> pointwise -> inverse coset NTT "nn".
* :func:`to_montgomery`, :func:`from_montgomery` -- in-place conversions on the device (fr_ops.cu).
* :func:`ntt_reference` (Python ints, iterative radix-2) and :func:`dft_naive` (O(n^2)).
* ``zkgpu bench ntt`` -- :data:`bench_command`.

GPU algorithms (``algorithm=``, default :data:`ALGORITHM`; both give the same result bit for bit):

* "stagewise" (``zkgpu/kernels/ntt.cu``): radix-2 Gentleman-Sande (DIF, natural -> bit-reversed) and
  Cooley-Tukey (DIT, bit-reversed -> natural) butterflies sharing one twiddle table
  ``tw[h + t] = omega_{2h}^t`` (n entries); up to 10 stages per launch in shared memory (at 2^24: 3
  passes of 8 stages over global memory), one radix-2 stage per shared-memory round trip.
* "fused" (``zkgpu/kernels/ntt_fused.cu``): the same passes, each a radix-2^k sub-transform whose stages
  run in registers (:data:`FUSED_RADIX` elements per thread, log2 of it stages per shared-memory round
  trip); twiddles per :data:`FUSED_OUTER`: by default each butterfly's own from the stagewise table (the
  pass on the low bits uses one 512-entry table), or the four-step split of the DFT (Bailey, J.
  Supercomputing 4, 1990): inner twiddles from the small table and one outer twiddle per element per pass.
  "nn" needs no bit-reversal pass (the first pass writes a scratch buffer, the last scatters back), and
  compute_h shares passes between its transforms (:func:`zkgpu.qap.compute_h_inplace`).

Both build their tables on the GPU and cache them per size, and fuse the coset shift and the 1/n (or
g^-i/n) scaling into the first/last pass; "nn" adds one bit-reversal pass.
References: Cooley & Tukey, Math. Comp. 19 (1965); Gentleman & Sande, AFIPS 1966; sppark
``ntt/`` (radix-2^k passes, NR/RN orders) and cuzk ``groth16_ntt_h.cu`` for the orders used by Groth16.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _cuda
from .errors import CliError
from .field import FR, check_array, fr_from_ints, fr_to_ints, to_ints

__all__ = [
    "ORDERS",
    "RADIX",
    "DEFINES",
    "configure",
    "radix",
    "log2_size",
    "ntt",
    "ntt_inplace",
    "ntt_reference",
    "dft_naive",
    "bitrev_permute",
    "to_montgomery",
    "from_montgomery",
    "check_device_array",
    "device_words",
    "clear_cache",
    "bench_command",
]

P = FR.modulus
G = FR.generator
ORDERS = ("nn", "nr", "rn")
# read from the kernel sources (zkgpu/_cuda.py: header_defines / header_enum), never restated here
_MAX_TILE_LOG, _THREADS, _BR_Q = _cuda.header_defines("ntt.cu", "NTT_MAX_TILE_LOG", "NTT_THREADS", "NTT_BR_Q")
_FUSED_MAXK, _FUSED_THREADS = _cuda.header_defines("ntt_fused.cu", "NTT_FUSED_MAXK", "NTT_FUSED_THREADS")
_ORDER = _cuda.header_enum("ntt_common.cuh", "ntt_order")  # the butterflies of a pass: nr (DIF), rn (DIT)
_SCALE = _cuda.header_enum("ntt_common.cuh", "scale_mode")  # none, natural, bitrev, constant, h_step
_OUTER = _cuda.header_enum("ntt_fused.cu", "outer_mode")  # none, split, table, exact
_BIG_MAXK = 12  # NTT_FUSED_MAXK of the big-tile builds (FUSED_TILE_LOG 11, 12)
ALGORITHMS = ("stagewise", "fused")
ALGORITHM = "stagewise"
"""The default ``algorithm`` of :func:`ntt_inplace` (read at each call; a benchmark's kernel spec,
:func:`kernel_settings`, sets it for a block): "stagewise" (kernel ntt_pass: one radix-2 stage per shared-memory round trip, every twiddle
from an n-entry table) or "fused" (kernels ntt_fused_*: radix-2^k sub-transforms with the stages in
registers, small twiddle tables, one outer twiddle per element per pass; see ntt.cu)."""
FUSED_RADIX = 2
"""Elements per thread in the fused kernels (2, 4 or 8): the stages done in registers per shared-memory
round trip are log2 of it; 2 is the default, the fastest
of the three on the H200 (data/nvidia-h200-20261201-bench-ntt: 2^24 forward 9.2 / 11.5 / 16.4 ms)."""
FUSED_OUTER = "exact"
"""How a fused pass over the index bits [s_lo, s_lo+k), s_lo > 0, gets its twiddles. "exact": every
butterfly loads its own twiddle from the n-entry stagewise table (the stagewise kernel's products, no extra
one). Otherwise inner twiddles from a small table and one outer twiddle per element, a power of omega_m with
m = 2^(s_lo+k): "split" (omega_n^E from two tables of about sqrt(n) entries, one extra product), "table"
(a table of omega_m^e, e < m/2: one load, m/2 * 32 bytes) or "auto" (the table where it has at most
2^_OUTER_TABLE_MAX_LOG entries, so it stays in L2; split tables elsewhere). "exact" is the default: on the
H200 the outer products cost more than the table loads they save (data/nvidia-h200-20261201-bench-ntt)."""
_OUTER_TABLE_MAX_LOG = 19  # 2^19 entries = 16 MiB
FIELD_ARITH: str | None = None
"""Field arithmetic of the NTT kernels when set: "ptx" (carry-chain asm) or "cxx" (portable C++); None
keeps each module's default (kernel specs -ptx / -cxx set it for a benchmark)."""
FUSED_TILE_LOG = 10
"""log2 of the fused passes' tiles (k field bits + c column bits), 1..12; a pass does at most this many
stages. 10 (33 KiB of shared memory per block, 128 threads, several blocks per SM): 2^24 in 3 passes.
11 or 12 (up to 132 KiB, 512 threads, one block per SM; kernels built with NTT_FUSED_MAXK=12): 2^24 in
2 passes. Smaller values (tests) give more passes."""
RADIX: int | None = None
"""Stages per shared-memory round trip in a stagewise pass: 2 (kernel ntt_pass, radix-2) or 4 (ntt_pass_r4,
two radix-2 stages in registers); None (the default) means 2. Read at each call through :func:`radix`
(set it with :func:`configure`; the command line maps ``ZKGPU_NTT_RADIX`` to it). Radix-2 is the default
because it was the faster of the two on the H200 (``zkgpu bench ntt`` with each value; ntt_pass_r4 needs
128 registers, halving the resident threads). Both are tested on the GPU."""
DEFINES: dict[str, int] = {}
"""Extra ``-D`` build options of the NTT kernel modules (:func:`configure`; the command line maps
``ZKGPU_NTT_DEFINES="ZK_NTT_PTX=0,NTT_MIN_BLOCKS=3"`` to it): ``ZK_NTT_PTX`` 0 builds the kernels with
the portable C++ field arithmetic instead of the PTX carry chains (1 the other way; defaults: PTX for
ntt.cu, portable for ntt_fused.cu); ``NTT_THREADS`` / ``NTT_MIN_BLOCKS`` (stagewise) and
``NTT_FUSED_THREADS`` / ``NTT_FUSED_MIN_BLOCKS`` (fused) set the block size and the occupancy target."""


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
                raise ValueError(f"zkgpu.ntt.configure: define {key!r}={value!r} must be a C identifier with an integer value")
        DEFINES = {key: int(value) for key, value in defines.items()}


def _check_radix(value: object) -> None:
    if isinstance(value, bool) or value not in (2, 4):
        raise ValueError(f"zkgpu.ntt: radix must be 2 or 4, got {value!r}")


def radix() -> int:
    """The radix in use: :data:`RADIX`, 2 when None.

    Raises:
        ValueError: RADIX is not 2 or 4 (names the value).
    """
    if RADIX is None:
        return 2
    _check_radix(RADIX)
    return RADIX


# ----------------------------------------------------------------------------------------------
# sizes and validation
# ----------------------------------------------------------------------------------------------
def _defines() -> tuple[tuple[str, str], ...]:
    """The ``-D`` build options of the NTT modules: :data:`DEFINES`, plus ZK_NTT_PTX from
    :data:`FIELD_ARITH` when that is set and DEFINES does not set it."""
    out = [(k, str(v)) for k, v in DEFINES.items()]
    if FIELD_ARITH is not None and "ZK_NTT_PTX" not in DEFINES:
        out.append(("ZK_NTT_PTX", "1" if FIELD_ARITH == "ptx" else "0"))
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
    if shared > 48 * 1024:  # beyond the default limit of dynamic shared memory: opt in
        kern.max_dynamic_shared_size_bytes = shared
    kern((grid,), (block,), args, shared_mem=shared)


def log2_size(n: int) -> int:
    """log2 of an NTT size.

    Raises:
        TypeError: n not an int (a bool or a float). ValueError: n < 1 (empty input), n not a
            power of two, or n > 2^32 (the 2-adicity of Fr).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"NTT size must be an int, got {n!r} ({type(n).__name__})")
    n = int(n)
    if n < 1:
        raise ValueError("NTT of an empty input: need at least 1 element")
    if n & (n - 1):
        raise ValueError(f"NTT size must be a power of two, got {n}")
    L = n.bit_length() - 1
    if L > FR.two_adicity:
        raise ValueError(f"NTT size 2^{L} exceeds the 2-adicity of Fr (2^{FR.two_adicity})")
    return L


def check_device_array(d: Any, *, name: str = "values") -> Any:
    """Validate a CuPy array in the public layout, uint64 ``(n, 4)`` C-contiguous (values not checked).

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
    """The flat uint32 view (8 words per element) of a C-contiguous device array of Fr elements.

    Accepts uint64 ``(n, 4)``, uint32 ``(n, 8)`` or flat uint32 ``(8n,)``; returns a view (no copy).

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


def _first_unreduced_launch(w: Any) -> Any:
    """Queue the search for the first element >= r on the current stream; returns a (1,) uint64
    device array holding its index, or n when every element is canonical (read it after a sync)."""
    cp = _cuda.cupy()
    n = w.size // 8
    out = cp.full((1,), n, dtype=cp.uint64)
    k = _cuda.get_kernel("fr_ops", "fr_first_unreduced")
    _cuda.launch_1d(k, n, (w, np.uint64(n), out))
    return out


def _first_unreduced_device(w: Any) -> int | None:
    bad = int(_first_unreduced_launch(w).get()[0])
    return None if bad >= w.size // 8 else bad


def _raise_unreduced(w: Any, bad: int, name: str) -> None:
    v = to_ints(FR, w[8 * bad : 8 * bad + 8].view(_cuda.cupy().uint64).reshape(1, 4).get())[0]  # unreduced: no range check
    raise ValueError(f"{name}[{bad}] = {v:#x} is not a canonical Fr element (must be < {P:#x})")


def _check_values_device(w: Any, name: str) -> None:
    bad = _first_unreduced_device(w)
    if bad is not None:
        _raise_unreduced(w, bad, name)


# ----------------------------------------------------------------------------------------------
# CPU reference
# ----------------------------------------------------------------------------------------------
def _bitrev_indices(L: int) -> np.ndarray:
    n = 1 << L
    idx = np.arange(n, dtype=np.int64)
    rev = np.zeros(n, dtype=np.int64)
    for b in range(L):
        rev |= ((idx >> b) & 1) << (L - 1 - b)
    return rev


def _powers(x: int, n: int) -> list[int]:
    out, acc = [], 1
    for _ in range(n):
        out.append(acc)
        acc = acc * x % P
    return out


def _as_int_list(values: Sequence[int] | np.ndarray) -> list[int]:
    if isinstance(values, np.ndarray) and values.dtype == np.uint64:
        return fr_to_ints(values)  # checks the layout and the range
    vals = list(values)
    for i, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"values[{i}] is {type(v).__name__}, not an int (no silent truncation)")
        v = vals[i] = int(v)
        if not 0 <= v < P:
            raise ValueError(f"values[{i}] = {v:#x} is not a canonical Fr element (must be < {P:#x})")
    return vals


def ntt_reference(values: Sequence[int] | np.ndarray, *, inverse: bool = False, coset: bool = False) -> list[int]:
    """CPU NTT on Python ints (iterative radix-2 DIF over numpy object arrays), natural order.

    Args:
        values: n canonical Fr elements (Python ints, or a host array ``(n, 4)`` uint64).
        inverse, coset: which of the four transforms (see the module docstring).

    Returns:
        n canonical Python ints.

    Raises:
        ValueError: empty input, size not a power of two or beyond 2^32, a value outside [0, r).
        TypeError: an element that is not an int.
    """
    vals = _as_int_list(values)
    L = log2_size(len(vals))
    n = 1 << L
    x = np.empty(n, dtype=object)  # Python ints
    x[:] = vals
    if coset and not inverse:
        x = x * np.array(_powers(G, n), dtype=object) % P
    omega = FR.root_of_unity(L)
    if inverse:
        omega = pow(omega, -1, P)
    for s in range(L - 1, -1, -1):  # Gentleman-Sande, natural -> bit-reversed
        h = 1 << s
        w = np.array(_powers(pow(omega, n // (2 * h), P), h), dtype=object)
        v = x.reshape(-1, 2, h)
        a = v[:, 0, :].copy()
        b = v[:, 1, :].copy()
        v[:, 0, :] = (a + b) % P
        v[:, 1, :] = (a - b) * w % P
    x = x[_bitrev_indices(L)]
    if inverse:
        n_inv = pow(n, -1, P)
        if coset:
            x = x * np.array(_powers(pow(G, -1, P), n), dtype=object) % P
        x = x * n_inv % P
    return [int(v) for v in x]


def dft_naive(values: Sequence[int], *, inverse: bool = False, coset: bool = False) -> list[int]:
    """O(n^2) DFT straight from the definitions (the check of :func:`ntt_reference`)."""
    vals = [int(v) % P for v in values]
    L = log2_size(len(vals))
    n = 1 << L
    omega = FR.root_of_unity(L)
    if not inverse:
        if coset:
            vals = [v * pow(G, i, P) % P for i, v in enumerate(vals)]
        return [sum(vals[i] * pow(omega, i * j, P) for i in range(n)) % P for j in range(n)]
    oi, n_inv = pow(omega, -1, P), pow(n, -1, P)
    out = [sum(vals[j] * pow(oi, i * j, P) for j in range(n)) * n_inv % P for i in range(n)]
    if coset:
        gi = pow(G, -1, P)
        out = [v * pow(gi, i, P) % P for i, v in enumerate(out)]
    return out


# ----------------------------------------------------------------------------------------------
# device tables (cached per size and direction)
# ----------------------------------------------------------------------------------------------
def _to_device_mont(ints: list[int]) -> Any:
    cp = _cuda.cupy()
    return cp.asarray(fr_from_ints([FR.to_mont(v) for v in ints])).view(cp.uint32).reshape(-1)


def _split_tables(x: int, bits: int, scale: int = 1) -> tuple[Any, Any, int]:
    """lo[j] = x^j (j < 2^S), hi[j] = scale * x^(j*2^S) (j < 2^(bits-S)), on the device, Montgomery."""
    S = (bits + 1) // 2
    lo = _powers(x, 1 << S)
    step = pow(x, 1 << S, P)
    hi = [v * scale % P for v in _powers(step, 1 << (bits - S))]
    return _to_device_mont(lo), _to_device_mont(hi), S


def _grid(n: int, block: int = 256) -> tuple[int, int]:
    return max(1, min((n + block - 1) // block, 65535 * 8)), block


@functools.cache
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


@functools.cache
def _scale_table(L: int, kind: str) -> Any:
    """'coset': g^i; 'coset_ninv': g^i / n; 'icoset': g^-i / n; 'ninv': [1/n] (Montgomery, flat uint32)."""
    cp = _cuda.cupy()
    n = 1 << L
    n_inv = pow(n, -1, P)
    if kind == "ninv":
        return _to_device_mont([n_inv])
    x, scale = {"coset": (G, 1), "coset_ninv": (G, n_inv)}.get(kind, (pow(G, -1, P), n_inv))
    lo, hi, S = _split_tables(x, L, scale)
    out = cp.empty(8 * n, dtype=cp.uint32)
    grid, block = _grid(n)
    _kernel("ntt_build_powers")((grid,), (block,), (out, lo, hi, np.int32(S), np.uint64(n)))
    return out


def _inner_twiddles(inverse: bool) -> Any:
    """itw[i] = omega_{2^MAXK}^i (inverse: omega^-i), i < 2^(MAXK-1): the inner twiddles of every fused pass
    (omega_{2^k} = omega_{2^MAXK}^(2^(MAXK-k)), consistent with FR.root_of_unity at every size)."""
    return _inner_table(inverse, _fused_maxk())


@functools.cache
def _inner_table(inverse: bool, maxk: int) -> Any:
    w = FR.root_of_unity(maxk)
    if inverse:
        w = pow(w, -1, P)
    return _to_device_mont(_powers(w, 1 << (maxk - 1)))


def _outer_twiddles(L: int, m: int, inverse: bool, mode: str, scale: int = 1) -> tuple[Any, Any, int, int]:
    """The outer twiddles of a fused pass with s_lo + k = m (powers of omega_{2^m}), each times ``scale``
    (1/n for the one pass that applies an inverse NTT's 1/n): (olo, ohi, S, omode), omode an outer_mode.

    split: omega_n^E = ohi[E >> S] * olo[E mod 2^S] (2^S + 2^(L-S) entries, E in units of omega_n);
    table: olo[e] = omega_{2^m}^e for e < 2^(m-1), -olo[e - 2^(m-1)] above; exact: the stagewise table.

    Raises:
        ValueError: an unknown mode (:data:`FUSED_OUTER`).
    """
    if mode not in ("split", "table", "auto", "exact"):
        raise ValueError(f"zkgpu.ntt.FUSED_OUTER must be 'exact', 'split', 'table' or 'auto', got {mode!r}")
    if mode == "exact":
        if scale != 1:
            raise ValueError("exact twiddles take no folded factor")
        tw = _twiddles(L, inverse)
        return tw, tw, 0, _OUTER["exact"]
    if mode == "split" or (mode == "auto" and m - 1 > _OUTER_TABLE_MAX_LOG):
        return (*_split_outer(L, inverse, scale), _OUTER["split"])
    t = _outer_table(m, inverse, scale)
    return t, t, 0, _OUTER["table"]


@functools.cache
def _split_outer(L: int, inverse: bool, scale: int = 1) -> tuple[Any, Any, int]:
    omega = FR.root_of_unity(L)
    if inverse:
        omega = pow(omega, -1, P)
    return _split_tables(omega, L, scale)


@functools.cache
def _outer_table(m: int, inverse: bool, scale: int = 1) -> Any:
    """scale * omega_{2^m}^e (inverse: omega^-e) for e < 2^(m-1), Montgomery, flat uint32."""
    cp = _cuda.cupy()
    omega = FR.root_of_unity(m)
    if inverse:
        omega = pow(omega, -1, P)
    half = 1 << (m - 1)
    lo, hi, S = _split_tables(omega, m - 1, scale)
    out = cp.empty(8 * half, dtype=cp.uint32)
    grid, block = _grid(half)
    _kernel("ntt_build_powers")((grid,), (block,), (out, lo, hi, np.int32(S), np.uint64(half)))
    return out


def clear_cache() -> None:
    """Free the cached twiddle and coset tables (n * 32 bytes each per size and direction)."""
    _twiddles.cache_clear()
    _scale_table.cache_clear()
    _inner_table.cache_clear()
    _split_outer.cache_clear()
    _outer_table.cache_clear()


def _passes(L: int, max_tile_log: int = _MAX_TILE_LOG) -> list[tuple[int, int, int]]:
    """(s_lo, k, c) per pass in DIF order (high bits first): as even a split of L into <= 10-bit groups.

    A pass does the stages of index bits [s_lo, s_lo + k) on tiles of 2^(k+c) elements that also span
    the c lowest index bits (runs of 2^c adjacent elements, for coalesced loads)."""
    if L == 0:
        return []
    npass = -(-L // max_tile_log)
    ks = [L // npass + (1 if i < L % npass else 0) for i in range(npass)]
    out, top = [], L
    for k in ks:
        s_lo = top - k
        out.append((s_lo, k, min(s_lo, max_tile_log - k)))
        top = s_lo
    return out


# ----------------------------------------------------------------------------------------------
# device API
# ----------------------------------------------------------------------------------------------
def _fr_inplace(d: Any, kernel: str) -> Any:
    w = device_words(d)
    n = w.size // 8
    if n:
        _cuda.launch_1d(_cuda.get_kernel("fr_ops", kernel), n, (w, np.uint64(n)))
    return d


def to_montgomery(d: Any) -> Any:
    """Canonical -> Montgomery form, in place on a device array of Fr elements; returns d."""
    return _fr_inplace(d, "fr_to_mont")


def from_montgomery(d: Any) -> Any:
    """Montgomery -> canonical form, in place on a device array of Fr elements; returns d."""
    return _fr_inplace(d, "fr_from_mont")


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
        raise ValueError(f"zkgpu.ntt.FUSED_RADIX must be 2, 4 or 8, got {FUSED_RADIX!r}")
    return min(FUSED_RADIX.bit_length() - 1, k)


def _fused_tile_log() -> int:
    if not 1 <= FUSED_TILE_LOG <= 12:
        raise ValueError(f"zkgpu.ntt.FUSED_TILE_LOG must be in 1..12, got {FUSED_TILE_LOG!r}")
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


def _scalings(L: int, inverse: bool, coset: bool, dit: bool) -> tuple[Any, int, Any, int]:
    """(pre, pre_mode, post, post_mode) of a transform, for the stagewise and the fused kernels: the coset
    shift at the first pass's load, 1/n or g^-i/n at the last pass's store (bit-reversed index on the
    bit-reversed side); None tables with mode 0 where nothing is scaled."""
    none, natural, bitrev = _SCALE["none"], _SCALE["natural"], _SCALE["bitrev"]
    pre, pre_mode, post, post_mode = None, none, None, none
    if coset and not inverse:
        pre, pre_mode = _scale_table(L, "coset"), (bitrev if dit else natural)
    if inverse:
        post = _scale_table(L, "icoset" if coset else "ninv")
        post_mode = _SCALE["constant"] if not coset else (natural if dit else bitrev)
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
    tmp = None
    if order == "nn" and last > 0:
        tmp = _cuda.cupy().empty(w.size, dtype=w.dtype) if scratch is None else device_words(scratch, name="scratch")
        if tmp.size != w.size:
            raise ValueError(f"scratch holds {tmp.size // 8} elements, the transform {w.size // 8}")
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


def _resolve_algorithm(algorithm: str | None) -> str:
    algorithm = ALGORITHM if algorithm is None else algorithm
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    return algorithm


def ntt_inplace(
    d: Any, *, inverse: bool = False, coset: bool = False, order: str = "nn", algorithm: str | None = None
) -> Any:
    """NTT in place on the GPU, on Fr elements already in Montgomery form; returns d.

    Launches on CuPy's current stream (use ``with stream:``) and does not synchronise.

    Args:
        d: C-contiguous CuPy array of n = 2^L elements: uint64 ``(n, 4)``, uint32 ``(n, 8)`` or
            flat uint32 ``(8n,)``, Montgomery form (values are not checked).
        inverse, coset: which transform (module docstring); inverse includes the 1/n factor.
        order: "nn" natural -> natural (adds a bit-reversal pass), "nr" natural -> bit-reversed
            (DIF), "rn" bit-reversed -> natural (DIT). In "nr"/"rn" the bit-reversed side holds the
            element of index bitrev(i) at position i.
        algorithm: "stagewise" or "fused" (see :data:`ALGORITHM`, the default when None); both give
            the same result bit for bit.

    Raises:
        ValueError: bad order or algorithm, size not a power of two / empty / beyond 2^32.
        TypeError: not a CuPy uint32/uint64 array.
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    algorithm = _resolve_algorithm(algorithm)
    w = device_words(d)
    n = w.size // 8
    L = log2_size(n)
    if L == 0:
        return d  # every variant is the identity on one element
    if algorithm == "fused":
        _ntt_fused(w, L, bool(inverse), bool(coset), order)
        return d
    dit = order == "rn"
    tw = _twiddles(L, bool(inverse))
    pre, pre_mode, post, post_mode = _scalings(L, bool(inverse), bool(coset), dit)
    pre, post = (tw if pre is None else pre), (tw if post is None else post)  # mode 0 ignores the table
    passes = _passes(L)
    if dit:
        passes = passes[::-1]
    rad = radix()
    kern = _kernel("ntt_pass_r4" if rad == 4 else "ntt_pass")
    nthreads = _threads()
    last = len(passes) - 1
    for i, (s_lo, k, c) in enumerate(passes):
        T = 1 << (k + c)
        kern(
            (n // T,),
            (max(1, min(T // rad, nthreads)),),
            (
                w, tw, np.int32(L), np.int32(s_lo), np.int32(k), np.int32(c), np.int32(_ORDER["rn" if dit else "nr"]),
                pre, np.int32(pre_mode if i == 0 else _SCALE["none"]), post, np.int32(post_mode if i == last else _SCALE["none"]),
            ),
            shared_mem=32 * T,
        )
    if order == "nn":
        bitrev_permute(w)
    return d


def _ntt_device(d: Any, inverse: bool, coset: bool, name: str = "values", algorithm: str | None = None) -> Any:
    cp = _cuda.cupy()
    check_device_array(d, name=name)
    log2_size(d.shape[0])
    out = cp.array(d, dtype=cp.uint64, order="C", copy=True)
    w = out.view(cp.uint32).reshape(-1)
    _check_values_device(w, name)
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
        uint64, canonical. Host input uses the GPU when one is present, else :func:`ntt_reference`.

    Raises:
        TypeError: not a numpy/CuPy array, or dtype other than uint64.
        ValueError: shape not ``(n, 4)``, empty, n not a power of two or beyond 2^32, an element
            >= r (the message names the first bad index), or an unknown algorithm.
    """
    _resolve_algorithm(algorithm)
    if _cuda.is_device_array(values):
        return _ntt_device(values, inverse, coset, algorithm=algorithm)
    if isinstance(values, np.ndarray) and values.ndim == 2:
        log2_size(values.shape[0])  # the size error before any copy of a huge (broadcast) array
    arr = check_array(FR, values)
    log2_size(arr.shape[0])
    if _cuda.gpu_available():
        return _ntt_device(_cuda.cupy().asarray(arr), inverse, coset, algorithm=algorithm).get()
    return fr_from_ints(ntt_reference(fr_to_ints(arr), inverse=inverse, coset=coset))


# ----------------------------------------------------------------------------------------------
# benchmark
# ----------------------------------------------------------------------------------------------
BENCH_VARIANTS: dict[str, dict[str, Any]] = {
    "forward-nr": dict(inverse=False, coset=False, order="nr"),
    "forward-nn": dict(inverse=False, coset=False, order="nn"),
    "inverse-nn": dict(inverse=True, coset=False, order="nn"),
    "coset-nn": dict(inverse=False, coset=True, order="nn"),
    "inverse-coset-nn": dict(inverse=True, coset=True, order="nn"),
    "coset-rn": dict(inverse=False, coset=True, order="rn"),
}


KERNEL_SPECS = tuple(
    "-".join(["stagewise", *parts]) for parts in ([r, a] for r in ("", "r2", "r4") for a in ("", "ptx", "cxx"))
    for parts in [[p for p in parts if p]]
) + tuple(
    "-".join(["fused", *parts])
    for parts in ([r, o, t, a] for r in ("", "r2", "r4", "r8") for o in ("", "exact", "split", "table", "auto")
                  for t in ("", "t12") for a in ("", "ptx", "cxx"))
    for parts in [[p for p in parts if p]]
)
"""Kernel choices of the benchmark: an algorithm, then optionally -rN (stagewise: RADIX 2/4; fused:
FUSED_RADIX 2/4/8), -exact/-split/-table/-auto (fused: FUSED_OUTER), -t12 (fused: FUSED_TILE_LOG 12, 2^24 in two
passes) and -ptx/-cxx (FIELD_ARITH); unstated settings keep their current values."""


@contextlib.contextmanager
def kernel_settings(spec: str):
    """Within the block, :func:`ntt_inplace` and :func:`zkgpu.qap.compute_h_inplace` default to the kernel
    named by ``spec`` (see :data:`KERNEL_SPECS`); the module settings are restored afterwards.

    Raises:
        ValueError: an unknown spec.
    """
    global ALGORITHM, RADIX, FUSED_RADIX, FUSED_OUTER, FUSED_TILE_LOG, FIELD_ARITH
    parts = spec.split("-")
    if parts[0] not in ALGORITHMS or spec not in KERNEL_SPECS:
        raise ValueError(f"unknown NTT kernel {spec!r}; choose from {', '.join(KERNEL_SPECS)}")
    saved = (ALGORITHM, RADIX, FUSED_RADIX, FUSED_OUTER, FUSED_TILE_LOG, FIELD_ARITH)
    try:
        ALGORITHM = parts[0]
        for part in parts[1:]:
            if part in ("ptx", "cxx"):
                FIELD_ARITH = part
            elif part.startswith("t"):
                FUSED_TILE_LOG = int(part[1:])
            elif part.startswith("r"):
                if ALGORITHM == "fused":
                    FUSED_RADIX = int(part[1:])
                else:
                    RADIX = int(part[1:])
            else:
                FUSED_OUTER = part
        yield
    finally:
        ALGORITHM, RADIX, FUSED_RADIX, FUSED_OUTER, FUSED_TILE_LOG, FIELD_ARITH = saved


def _global_passes(L: int, order: str, algorithm: str) -> int:
    tile = _fused_tile_log() if algorithm == "fused" else _MAX_TILE_LOG
    npass = len(_passes(L, tile))
    return npass + (1 if order == "nn" and (algorithm != "fused" or npass == 1) else 0)


def run_benchmark(
    min_log: int = 16, max_log: int = 26, repeat: int = 10, warmup: int = 2, with_compute_h: bool = True,
    kernels: Sequence[str] = ("stagewise",), h_min_log: int = 20, h_max_log: int = 24,
) -> list[dict[str, Any]]:
    """Time every variant of :data:`BENCH_VARIANTS` on device-resident random data (CUDA events) with each
    kernel of ``kernels`` (:data:`KERNEL_SPECS`), plus (``with_compute_h``, sizes h_min_log..h_max_log) the
    whole Groth16 H computation :func:`zkgpu.qap.compute_h_inplace`.

    Returns one row per (log_n, kernel, variant): median/min/max ms, ``kernel`` and ``algorithm``,
    ``radix`` (elements per thread of the fused kernels, or stagewise :data:`RADIX`), ``outer`` (fused
    outer twiddles), mulmods/s (n/2*L butterfly multiplies per NTT) and the effective GB/s of one read and
    one write of the vector per global pass, plus the kernel build options.
    """
    from .qap import compute_h_inplace

    for spec in kernels:
        with kernel_settings(spec):
            pass  # validate every spec before the first measurement
    cp = _cuda.cupy()
    rng = np.random.default_rng()
    rows = []
    for L in range(min_log, max_log + 1):
        n = 1 << L
        host = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
        host[:, 3] >>= np.uint64(2)  # < 2^254 < r: canonical, random enough for timing
        d = cp.asarray(host).view(cp.uint32).reshape(-1)
        del host
        to_montgomery(d)
        for spec in kernels:
            with kernel_settings(spec):
                common = dict(
                    log_n=L, n=n, kernel=spec, algorithm=ALGORITHM,
                    radix=FUSED_RADIX if ALGORITHM == "fused" else radix(),
                    outer=FUSED_OUTER if ALGORITHM == "fused" else "", field_arith=FIELD_ARITH or "default",
                    repeat=repeat, warmup=warmup,
                )
                for name, kw in BENCH_VARIANTS.items():
                    res = _cuda.benchmark(lambda kw=kw: ntt_inplace(d, **kw), warmup=warmup, repeat=repeat)
                    npass = _global_passes(L, kw["order"], ALGORITHM)
                    med = res.median_ms
                    rows.append(
                        dict(
                            common, variant=name, median_ms=med, min_ms=res.min_ms, max_ms=res.max_ms,
                            global_passes=npass, butterfly_mulmods_per_s=(n // 2) * L / (med * 1e-3),
                            effective_GBps=2 * 32 * n * npass / (med * 1e-3) / 1e9,
                        )
                    )
                if with_compute_h and h_min_log <= L <= h_max_log:
                    # the Groth16 H step: 3 iNTT + 3 coset NTT + pointwise + inverse coset NTT
                    e, f = d.copy(), d.copy()
                    res = _cuda.benchmark(lambda: compute_h_inplace(d, e, f), warmup=warmup, repeat=repeat)
                    med = res.median_ms
                    npass = _global_passes(L, "nr", ALGORITHM)
                    rows.append(
                        dict(
                            common, variant="compute_h", median_ms=med, min_ms=res.min_ms, max_ms=res.max_ms,
                            global_passes=7 * npass + 2 - (4 if ALGORITHM == "fused" and npass > 1 else 0),
                            butterfly_mulmods_per_s=7 * (n // 2) * L / (med * 1e-3), effective_GBps=float("nan"),
                        )
                    )
                    del e, f
        del d
        clear_cache()
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def kernel_ratios(rows: Sequence[dict[str, Any]], baseline: str = "stagewise") -> Any:
    """Median-ms ratios of each kernel to ``baseline`` per (log_n, variant), as a pandas DataFrame
    (columns: the kernels other than the baseline; < 1 means faster). Empty when the baseline is absent."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    if df.empty or baseline not in set(df["kernel"]):
        return pd.DataFrame()
    t = df.pivot_table(index=["log_n", "variant"], columns="kernel", values="median_ms", aggfunc="median")
    return t.drop(columns=[baseline]).div(t[baseline], axis=0)


def _bench_command():
    import click

    @click.command("ntt")
    @click.option("--min-log", default=16, show_default=True, help="smallest size, log2")
    @click.option("--max-log", default=26, show_default=True, help="largest size, log2")
    @click.option("--repeat", default=10, show_default=True, help="timed repeats per point (median reported)")
    @click.option("--kernel", "kernels", multiple=True, metavar="SPEC",
                  help="NTT kernel(s) to time, e.g. stagewise, fused, fused-r4-auto-t12, stagewise-cxx (repeatable; "
                       "default: stagewise and fused; zkgpu.ntt.KERNEL_SPECS lists them all)")
    @click.option("--h-min-log", default=20, show_default=True, help="smallest compute_h size, log2")
    @click.option("--h-max-log", default=24, show_default=True, help="largest compute_h size, log2")
    @click.option("--sppark", "sppark_file", default=None, type=click.Path(exists=True, dir_okay=False),
                  help="sppark-bench output (sppark.txt) of the same GPU: also write and print zkgpu/sppark ratios")
    @click.option("--out", "out_base", default=None, help="base folder for the run folder (default data/)")
    def ntt_bench(min_log: int, max_log: int, repeat: int, kernels: tuple[str, ...], h_min_log: int, h_max_log: int,
                  sppark_file: str | None, out_base: str | None) -> None:
        """Fr NTT on the GPU, device-resident, 2^min-log .. 2^max-log: forward/inverse/coset/inverse-coset
        per kernel, and compute_h at 2^h-min-log .. 2^h-max-log; CSV + JSON, and the ratios to stagewise."""
        import pandas as pd

        from .anchors import ntt_vs_sppark, read_sppark, sppark_provenance
        from .manifest import build_manifest, new_run_dir, write_json_new

        kernels = kernels or ("stagewise", "fused")
        for spec in kernels:
            if spec not in KERNEL_SPECS:
                raise click.BadParameter(f"unknown NTT kernel {spec!r} (e.g. stagewise, fused, fused-r4-auto-t12)",
                                         param_hint="--kernel")
            with kernel_settings(spec):
                _fused_tile_log()  # a bad FUSED_TILE_LOG fails here, before any measurement
        sppark = None
        if sppark_file:
            try:
                sppark = read_sppark(sppark_file)
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="--sppark") from None
        if not _cuda.gpu_available():
            raise CliError("no CUDA GPU: the NTT benchmark needs one (GPU benchmarks; without a GPU, replay the recordings: zkgpu report)")
        if not 0 <= min_log <= max_log <= FR.two_adicity:
            raise click.BadParameter(f"need 0 <= min-log <= max-log <= {FR.two_adicity}")
        run_dir = new_run_dir("bench-ntt", base=Path(out_base) if out_base else None)
        rows: list[dict[str, Any]] = []
        for L in range(min_log, max_log + 1):  # ntt.csv grows size by size: a cut-off run keeps what it measured
            rows += run_benchmark(L, L, repeat, kernels=kernels, h_min_log=h_min_log, h_max_log=h_max_log)
            pd.DataFrame(rows).to_csv(run_dir / "ntt.csv", index=False)
        df = pd.DataFrame(rows)
        write_json_new(run_dir / "ntt.json", rows)
        write_json_new(
            run_dir / "manifest.json",
            build_manifest(benchmark="ntt", min_log=min_log, max_log=max_log, repeat=repeat,
                           variants=[*BENCH_VARIANTS, "compute_h"], kernels=list(kernels), h_min_log=h_min_log,
                           h_max_log=h_max_log, radix=radix(), fused_radix=FUSED_RADIX, fused_outer=FUSED_OUTER,
                           fused_tile_log=FUSED_TILE_LOG, kernel_defines=dict(_defines()),
                           timing="CUDA events, median of repeats, warm-up excluded",
                           **({"sppark": sppark_provenance(sppark_file)} if sppark_file else {})),
        )
        table = df.pivot_table(index="log_n", columns=["kernel", "variant"], values="median_ms")
        with pd.option_context("display.width", 250, "display.max_columns", 100):
            click.echo(table.to_string(float_format=lambda v: f"{v:9.3f}"))
            ratios = kernel_ratios(rows)
            if not ratios.empty:
                click.echo("ratio to stagewise (< 1: faster):")
                click.echo(ratios.unstack("variant").to_string(float_format=lambda v: f"{v:6.3f}"))
            if sppark is not None:
                vs = ntt_vs_sppark(rows, sppark)
                vs.to_csv(run_dir / "ntt_vs_sppark.csv", index=False)
                (run_dir / "sppark.txt").write_text(Path(sppark_file).read_text())
                click.echo("zkgpu / sppark, same GPU (< 1: zkgpu faster):")
                click.echo(vs.pivot_table(index="log_n", columns=["variant", "kernel"], values="ratio")
                           .to_string(float_format=lambda v: f"{v:6.3f}"))
        click.echo(f"(median ms, defines {dict(_defines())}) written to {run_dir}")

    return ntt_bench


bench_command = _bench_command()

