"""Partition synthesis: a, b, c and the aux assignment (a real circuit's, or a synthetic stand-in).

Synthetic: a, b, c uniform in [0, 2^254), aux of :class:`~zkgpu.pipeline.config.Density`. Words from SplitMix64's output
function (Steele, Lea & Flood, OOPSLA 2014) of ``key + (i + 1) * 0x9E3779B97F4A7C15``, one key per (seed, partition,
stream); numba and NumPy give the same words."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from zkgpu.core import optional
from zkgpu.pipeline.config import PipelineConfig

__all__ = ["Circuit", "make_circuit", "partition_circuit", "fill_fr", "fill_aux", "stream_key", "fill_fr_counter",
           "fill_aux_counter", "warm_up_synthesis", "synthesize_into", "synthesize_arrays", "FR_TOP_MASK", "SYNTH_STREAMS"]

FR_TOP_MASK = np.uint64((1 << 62) - 1)
"""Top-limb mask: values < 2^254 < r (r ~ 0.45 * 2^256), so every value is canonical Fr."""

_CHUNK = 1 << 16  # rows per vectorised chunk of the rng fills (bounds their temporaries to 2 MiB)

# SplitMix64 (Steele, Lea & Flood 2014; Vigna's splitmix64.c): the Weyl increment and the output mix
_GAMMA = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_MASK64 = (1 << 64) - 1

#: the counter streams of one partition (:func:`stream_key`'s ``stream``)
SYNTH_STREAMS = {"a": 1, "b": 2, "c": 3, "aux": 4, "aux_select": 5}


def _mix_int(z: int) -> int:
    z = ((z ^ (z >> 30)) * _M1) & _MASK64
    z = ((z ^ (z >> 27)) * _M2) & _MASK64
    return z ^ (z >> 31)


def stream_key(seed: int, partition: int, stream: int) -> int:
    """The 64-bit key of one counter stream: SplitMix64 outputs chained over (seed, partition,
    stream), so nearby inputs give unrelated keys. Integers >= 0 (taken modulo 2^64)."""
    if min(seed, partition, stream) < 0:
        raise ValueError(f"stream_key needs seed, partition, stream >= 0, got {seed}, {partition}, {stream}")
    k = 0x5A4B47505553594E  # "ZKGPUSYN"
    for v in (seed, partition, stream):
        k = _mix_int((k ^ (v & _MASK64)) + _GAMMA & _MASK64)
    return k


@dataclass(frozen=True)
class Circuit:
    """Per-run circuit structure: ``inp`` (num_inputs, 4) (inp[0] = 1), bool densities ``a_aux_density``,
    ``b_inp_density``, ``b_aux_density``."""

    n: int
    aux_size: int
    inp: np.ndarray
    a_aux_density: np.ndarray
    b_inp_density: np.ndarray
    b_aux_density: np.ndarray

    @property
    def l_size(self) -> int:
        return self.aux_size

    @property
    def a_size(self) -> int:
        return int(self.inp.shape[0] + self.a_aux_density.sum())

    @property
    def b_size(self) -> int:
        return int(self.b_inp_density.sum() + self.b_aux_density.sum())


def make_circuit(config: PipelineConfig) -> Circuit:
    """The circuit structure of a run (depends on ``config.seed``, n, aux_ratio, density), or that
    of ``config.real`` (its densities; ``inp`` = partition 0's inputs, see :func:`partition_circuit`)."""
    if config.real is not None:
        rc = config.real
        return _frozen(Circuit(config.n, rc.aux_size, rc.inputs(0), rc.a_aux_density, rc.b_inp_density, rc.b_aux_density))
    rng = np.random.default_rng([config.seed, 0xC1C])
    aux = config.aux_size
    inp = np.empty((config.num_inputs, 4), dtype=np.uint64)
    fill_fr(inp, rng)
    inp[0] = (1, 0, 0, 0)
    a_den = rng.random(aux) < config.density.a_aux
    b_den = rng.random(aux) < config.density.b_aux
    b_inp = np.zeros(config.num_inputs, dtype=bool)
    b_inp[0] = True
    return _frozen(Circuit(config.n, aux, inp, a_den, b_inp, b_den))


def _frozen(c: Circuit) -> Circuit:
    for arr in (c.inp, c.a_aux_density, c.b_inp_density, c.b_aux_density):
        arr.setflags(write=False)
    return c


def partition_circuit(config: PipelineConfig, circuit: Circuit, partition: int) -> Circuit:
    """The structure that ``partition`` is proven with: ``circuit`` itself, or for a real circuit
    the same densities with that partition's public inputs (its witness's)."""
    if config.real is None:
        return circuit
    inp = config.real.inputs(partition)
    if np.array_equal(inp, circuit.inp):
        return circuit
    return _frozen(replace(circuit, inp=np.array(inp)))


def _check_rows(out: np.ndarray) -> None:
    if not isinstance(out, np.ndarray) or out.ndim != 2 or out.shape[1] != 4 or out.dtype != np.uint64 or not out.flags.c_contiguous:
        raise ValueError(f"expected a C-contiguous (m, 4) uint64 array, got shape {getattr(out, 'shape', None)} "
                         f"dtype {getattr(out, 'dtype', type(out).__name__)}")
    if not out.flags.writeable:
        raise ValueError(f"expected a writeable (m, 4) uint64 array, got a read-only one of shape {out.shape}")


def fill_fr(out: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Fill ``out`` ((m, 4) uint64, C-contiguous) with uniform values in [0, 2^254) from ``rng``,
    in place (the circuit's public inputs; a stateful generator, chunk by chunk)."""
    _check_rows(out)
    m = out.shape[0]
    for i in range(0, m, _CHUNK):
        j = min(m, i + _CHUNK)
        out[i:j] = rng.integers(0, 2**64, size=(j - i, 4), dtype=np.uint64)
        out[i:j, 3] &= FR_TOP_MASK
    return out


def fill_aux(out: np.ndarray, rng: np.random.Generator, zero: float, one: float) -> np.ndarray:
    """Fill ``out`` (m, 4) uint64 in place: 0 w.p. ``zero``, 1 w.p. ``one``, else uniform in [0, 2^254)."""
    fill_fr(out, rng)
    m = out.shape[0]
    for i in range(0, m, _CHUNK):
        j = min(m, i + _CHUNK)
        u = rng.random(j - i)
        blk = out[i:j]
        z = u < zero
        o = (u >= zero) & (u < zero + one)
        blk[z] = 0
        blk[o] = (1, 0, 0, 0)
    return out


# --------------------------------------------------------------------------- counter-based fill


@functools.lru_cache(maxsize=1)
def _nb() -> tuple[Any, Any] | None:
    """The numba fills ``(fr, aux)`` (compiled on first use, cached on disk by numba), or None without numba."""
    numba = optional.numba()
    if numba is None:
        return None
    gamma, m1, m2, top = np.uint64(_GAMMA), np.uint64(_M1), np.uint64(_M2), FR_TOP_MASK
    s30, s27, s31, s11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
    one64 = np.uint64(1)
    inv53 = 1.0 / 9007199254740992.0

    @numba.njit(nogil=True, cache=True, inline="always")
    def mix(z):
        z = (z ^ (z >> s30)) * m1
        z = (z ^ (z >> s27)) * m2
        return z ^ (z >> s31)

    @numba.njit(nogil=True, cache=True)
    def fr(out, key):
        c = key
        for r in range(out.shape[0]):
            for k in range(4):
                c += gamma
                out[r, k] = mix(c)
            out[r, 3] &= top

    @numba.njit(nogil=True, cache=True)
    def aux(out, key, sel_key, zero, zero_one):
        c = key
        s = sel_key
        for r in range(out.shape[0]):
            s += gamma
            u = float(mix(s) >> s11) * inv53
            if u < zero:
                out[r, 0] = 0
                out[r, 1] = 0
                out[r, 2] = 0
                out[r, 3] = 0
                c += gamma * np.uint64(4)
            elif u < zero_one:
                out[r, 0] = one64
                out[r, 1] = 0
                out[r, 2] = 0
                out[r, 3] = 0
                c += gamma * np.uint64(4)
            else:
                for k in range(4):
                    c += gamma
                    out[r, k] = mix(c)
                out[r, 3] &= top

    return fr, aux


_NP_WORDS = 1 << 15  # words per NumPy chunk: 256 KiB per array, so the passes below stay in cache


@functools.lru_cache(maxsize=1)
def _ramp() -> np.ndarray:
    """(i + 1) * gamma for i < :data:`_NP_WORDS` (uint64, wrapping), read-only."""
    r = np.arange(1, _NP_WORDS + 1, dtype=np.uint64) * np.uint64(_GAMMA)
    r.setflags(write=False)
    return r


def _words_np(key: int, start: int, out: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """``out[i]`` = word ``start + i`` of stream ``key`` (SplitMix64, NumPy), in place; ``tmp`` is scratch."""
    np.add(_ramp()[: out.shape[0]], np.uint64((key + start * _GAMMA) & _MASK64), out=out)
    for shift, mul in ((30, _M1), (27, _M2), (31, 0)):
        np.right_shift(out, np.uint64(shift), out=tmp)
        np.bitwise_xor(out, tmp, out=out)
        if mul:
            np.multiply(out, np.uint64(mul), out=out)
    return out


def _use_numba(impl: str) -> bool:
    if impl not in ("auto", "numba", "numpy"):
        raise ValueError(f"impl must be 'auto', 'numba' or 'numpy', got {impl!r}")
    if impl == "numba" and _nb() is None:
        raise RuntimeError("impl='numba' needs numba: pip install 'zkgpu[cpu-parallel]' (or impl='numpy')")
    return impl != "numpy" and _nb() is not None


def fill_fr_counter(out: np.ndarray, key: int, *, impl: str = "auto") -> np.ndarray:
    """Fill ``out`` (m, 4) uint64 with uniform values < 2^254 from counter stream ``key``; ``impl`` numba/numpy/auto.
    Raises ValueError: a bad array or ``impl``. RuntimeError: ``impl="numba"`` without numba."""
    _check_rows(out)
    key = int(key) & _MASK64
    if _use_numba(impl):
        nb = _nb()
        assert nb is not None
        nb[0](out, np.uint64(key))
        return out
    flat = out.reshape(-1)  # C-contiguous: a view
    tmp = np.empty(_NP_WORDS, dtype=np.uint64)
    for i in range(0, flat.shape[0], _NP_WORDS):  # _NP_WORDS is a multiple of 4: chunks start at limb 0
        j = min(flat.shape[0], i + _NP_WORDS)
        _words_np(key, i, flat[i:j], tmp[: j - i])
        flat[i + 3 : j : 4] &= FR_TOP_MASK
    return out


def fill_aux_counter(out: np.ndarray, key: int, select_key: int, zero: float, one: float, *, impl: str = "auto") -> np.ndarray:
    """Fill ``out`` (m, 4) uint64 with an aux assignment (0, 1 or :func:`fill_fr_counter` rows, selected by
    ``select_key``). Raises ValueError: a bad array, ``impl``, or fractions outside [0, 1] / summing over 1."""
    _check_rows(out)
    if not (0.0 <= zero <= 1.0 and 0.0 <= one <= 1.0 and zero + one <= 1.0 + 1e-12):
        raise ValueError(f"fill_aux_counter needs zero, one in [0, 1] with zero + one <= 1, got {zero!r}, {one!r}")
    key, select_key = int(key) & _MASK64, int(select_key) & _MASK64
    zero_one = float(zero) + float(one)
    if _use_numba(impl):
        nb = _nb()
        assert nb is not None
        nb[1](out, np.uint64(key), np.uint64(select_key), float(zero), zero_one)
        return out
    fill_fr_counter(out, key, impl="numpy")
    m = out.shape[0]
    w, tmp = np.empty(_NP_WORDS, dtype=np.uint64), np.empty(_NP_WORDS, dtype=np.uint64)
    for i in range(0, m, _NP_WORDS):
        j = min(m, i + _NP_WORDS)
        u = (_words_np(select_key, i, w[: j - i], tmp[: j - i]) >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
        blk = out[i:j]
        blk[u < zero] = 0
        blk[(u >= zero) & (u < zero_one)] = (1, 0, 0, 0)
    return out


def warm_up_synthesis() -> None:
    """Compile the numba fills (or load them from numba's disk cache) outside any timed phase; nothing without numba."""
    if _nb() is not None:
        tiny = np.empty((2, 4), dtype=np.uint64)
        fill_fr_counter(tiny, 1)
        fill_aux_counter(tiny, 1, 2, 0.5, 0.25)


def synthesize_into(config: PipelineConfig, partition: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, aux: np.ndarray,
                    *, impl: str = "auto") -> np.ndarray | None:
    """Write partition ``partition``'s a, b, c (n, 4) and aux (aux_size, 4) in place. Returns None, or with
    ``config.real`` the witness ((num_inputs + aux_size, 4) uint64). Raises ValueError: bad buffer."""
    for name, arr, rows in (("a", a, config.n), ("b", b, config.n), ("c", c, config.n), ("aux", aux, config.aux_size)):
        if not isinstance(arr, np.ndarray) or arr.shape != (rows, 4) or arr.dtype != np.uint64:
            raise ValueError(f"synthesis buffer {name} must be ({rows}, 4) uint64, got {getattr(arr, 'shape', None)} {getattr(arr, 'dtype', type(arr).__name__)}")
    if config.real is not None:
        w = config.real.synthesize_into(partition, a, b, c)
        aux[:] = w[config.num_inputs :]
        return w
    for name, arr in (("a", a), ("b", b), ("c", c)):
        fill_fr_counter(arr, stream_key(config.seed, partition, SYNTH_STREAMS[name]), impl=impl)
    fill_aux_counter(aux, stream_key(config.seed, partition, SYNTH_STREAMS["aux"]),
                     stream_key(config.seed, partition, SYNTH_STREAMS["aux_select"]), config.density.zero, config.density.one, impl=impl)
    return None


def synthesize_arrays(config: PipelineConfig, partition: int, *, impl: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fresh (a, b, c, aux) for a partition (tests and references)."""
    a, b, c = (np.empty((config.n, 4), dtype=np.uint64) for _ in range(3))
    aux = np.empty((config.aux_size, 4), dtype=np.uint64)
    synthesize_into(config, partition, a, b, c, aux, impl=impl)
    return a, b, c, aux
