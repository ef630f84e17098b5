"""The Groth16 H polynomial h = (A*B - C)/Z, Z = X^N - 1, on the GPU with a CPU reference.

As cuzk ``groth16_ntt_h.cu`` and bellman: iNTT of a, b, c; coset NTT (g = 7); H_j = (A_j B_j - C_j)/(g^N - 1); inverse
coset NTT. GPU orders: iNTT "nr", coset NTT "rn", inverse coset "nn"; the constants ride on the passes' loads and
stores. Inputs of length m are zero-padded to N = the next power of two (or 2^log_n)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zkgpu.arith.domain import log2_size, ntt_reference
from zkgpu.arith.field import FR, check_array, fr_from_ints, fr_to_ints
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.fr_device import (
    DeferredCheck,
    check_canonical,
    check_device_array,
    device_words,
    first_unreduced_launch,
    from_montgomery,
    to_device_mont,
    to_montgomery,
)
from zkgpu.gpu.ntt.transform import (
    bitrev_permute,
    coset_evals_inplace,
    global_passes,
    ntt_inplace,
    power_table,
    stagewise_passes,
)

__all__ = [
    "domain_log_size",
    "z_inv_on_coset",
    "compute_h",
    "compute_h_inplace",
    "compute_h_reference",
    "prepare_input",
    "DeferredCheck",
    "combine_h_inplace",
]

P = FR.modulus
_SCALE = _cuda.header_enum("ntt_common.cuh", "scale_mode")  # the pointwise steps of a pass (ntt.cu)


def domain_log_size(lengths: Sequence[int], log_n: int | None = None) -> int:
    """log2 of the domain: next power of two >= max(lengths), or log_n. Raises ValueError: empty, too small, > 2-adicity."""
    m = max(lengths)
    if min(lengths) < 1:
        raise ValueError("compute_h: a, b and c must each hold at least one element")
    if log_n is None:
        log_n = (m - 1).bit_length()
    if log_n < 0 or (1 << log_n) < m:
        raise ValueError(f"compute_h: domain 2^{log_n} is smaller than the input length {m}")
    return log2_size(1 << log_n)


def z_inv_on_coset(log_n: int) -> int:
    """(g^N - 1)^-1 mod r: 1/Z(X) at every point of the coset g*H, N = 2^log_n."""
    return pow(pow(FR.generator, 1 << log_n, P) - 1, -1, P)


def compute_h_reference(
    a: Sequence[int], b: Sequence[int], c: Sequence[int], *, log_n: int | None = None
) -> list[int]:
    """CPU reference: the N coefficients of h (ints). Raises ValueError: empty, value outside [0, r), bad size; TypeError."""
    L = domain_log_size([len(a), len(b), len(c)], log_n)
    n = 1 << L
    evals = []
    for v in (a, b, c):
        vals = list(v)  # ntt_reference validates: ints in [0, r), no silent truncation
        coeffs = ntt_reference(vals + [0] * (n - len(vals)), inverse=True)
        evals.append(ntt_reference(coeffs, coset=True))
    zi = z_inv_on_coset(L)
    hc = [(x * y - z) * zi % P for x, y, z in zip(*evals, strict=True)]
    return ntt_reference(hc, inverse=True, coset=True)


@_cuda.device_cache
def _z_inv_device(log_n: int) -> Any:
    return to_device_mont([z_inv_on_coset(log_n)])


def compute_h_inplace(a: Any, b: Any, c: Any, *, timings: dict[str, float] | None = None) -> Any:
    """H on three device buffers of N = 2^L Fr in Montgomery form (overwritten); ``a`` receives h. Launches on the
    current stream; ``timings`` (syncs) gets ``ntt_ms``, ``pointwise_ms``, ``intt_ms``, ``total_ms``. Raises ValueError:
    sizes differ or are not a power of two."""
    cp = _cuda.cupy()
    wa, wb, wc = (device_words(x, name=nm) for x, nm in ((a, "a"), (b, "b"), (c, "c")))
    if not wa.size == wb.size == wc.size:
        raise ValueError(f"compute_h_inplace: a, b, c sizes differ ({wa.size // 8}, {wb.size // 8}, {wc.size // 8})")
    n = wa.size // 8
    L = log2_size(n)
    ev = [cp.cuda.Event() for _ in range(4)] if timings is not None else None
    if ev:
        ev[0].record()
    for w in (wa, wb, wc):
        coset_evals_inplace(w)
    if ev:
        ev[1].record()
    if L == 0:
        _mul_sub_scale(wa, wb, wc, L)
    if ev:
        ev[2].record()
    if L:
        _h_inverse(wa, wb, wc, L)
    if ev and timings is not None:
        ev[3].record()
        ev[3].synchronize()
        timings.update(
            ntt_ms=cp.cuda.get_elapsed_time(ev[0], ev[1]),
            pointwise_ms=cp.cuda.get_elapsed_time(ev[1], ev[2]),
            intt_ms=cp.cuda.get_elapsed_time(ev[2], ev[3]),
            total_ms=cp.cuda.get_elapsed_time(ev[0], ev[3]),
        )
    return a


def _compute_h_device(a: Any, b: Any, c: Any, log_n: int | None, timings: dict | None) -> Any:
    for x, nm in ((a, "a"), (b, "b"), (c, "c")):
        check_device_array(x, name=nm)
    L = domain_log_size([a.shape[0], b.shape[0], c.shape[0]], log_n)
    n = 1 << L
    bufs = [prepare_input(x, n, name=nm) for x, nm in ((a, "a"), (b, "b"), (c, "c"))]
    compute_h_inplace(*bufs, timings=timings)
    return from_montgomery(bufs[0])


def prepare_input(x: Any, n: int, *, name: str = "x", deferred: DeferredCheck | None = None) -> Any:
    """A fresh ``(n, 4)`` uint64 device buffer: ``x`` ((m, 4) canonical, m <= n) zero-padded, in Montgomery form. The
    range check syncs, unless queued on ``deferred`` (call ``raise_if_bad()`` later; keep ``x`` alive). Raises
    ValueError: an element >= r (first bad index) or m > n. TypeError: bad dtype."""
    cp = _cuda.cupy()
    check_device_array(x, name=name)
    if x.shape[0] > n:
        raise ValueError(f"{name} has {x.shape[0]} elements, more than the domain size {n}")
    words = device_words(x, name=name)
    if deferred is None:
        check_canonical(words, name)
    else:
        deferred.add(name, words, first_unreduced_launch(words))
    buf = cp.zeros((n, 4), dtype=cp.uint64)
    buf[: x.shape[0]] = x
    to_montgomery(buf)
    return buf


@_cuda.device_cache
def _icoset_zinv_table(log_n: int) -> Any:
    """g^-i * Z^-1 / N at entry bitrev(i), i < N (Montgomery, flat uint32, on the device): the scaling of the
    bit-reversed side (zkgpu.gpu.ntt.transform.scale_on_bitrev_side)."""
    n_inv = pow(1 << log_n, -1, P)
    return bitrev_permute(power_table(pow(FR.generator, -1, P), log_n, n_inv * z_inv_on_coset(log_n) % P))


def _h_inverse(wa: Any, wb: Any, wc: Any, log_n: int, scatter: bool = True) -> None:
    """a <- inverse coset NTT of (a*b - c)/Z, natural order, one transform (``scatter``: c is scratch)."""
    tmp = wc if scatter and global_passes(log_n, "nr") > 1 else None
    stagewise_passes(wa, log_n, True, False, None, _SCALE["mul_sub"], _icoset_zinv_table(log_n), _SCALE["natural"],
                     aux=(wb, wc), nn_scratch=tmp)
    if tmp is None:
        bitrev_permute(wa)


def _mul_sub_scale(wa: Any, wb: Any, wc: Any, log_n: int) -> None:
    n = 1 << log_n
    _cuda.launch_1d(_cuda.get_kernel("fr_ops", "fr_mul_sub_scale"), n, (wa, wb, wc, _z_inv_device(log_n), np.uint64(n)))


def combine_h_inplace(a: Any, b: Any, c: Any) -> Any:
    """a <- h from coset evaluations (:func:`~zkgpu.gpu.ntt.transform.coset_evals_inplace`); b, c unchanged. Raises
    ValueError: sizes differ or are not a power of two."""
    wa, wb, wc = (device_words(x, name=nm) for x, nm in ((a, "a"), (b, "b"), (c, "c")))
    if not wa.size == wb.size == wc.size:
        raise ValueError(f"combine_h_inplace: a, b, c sizes differ ({wa.size // 8}, {wb.size // 8}, {wc.size // 8})")
    L = log2_size(wa.size // 8)
    if L:
        _h_inverse(wa, wb, wc, L, scatter=False)
        return a
    _mul_sub_scale(wa, wb, wc, L)
    ntt_inplace(wa, inverse=True, coset=True, order="nn")
    return a


def compute_h(
    a: Any, b: Any, c: Any, *, log_n: int | None = None, stream: Any = None, timings: dict[str, float] | None = None,
) -> Any:
    """The N coefficients of h from evaluations a, b, c: ``(N, 4)`` uint64 canonical, same kind as the inputs.

    Args:
        a, b, c: canonical Fr ``(m, 4)`` uint64, all numpy or all CuPy; zero-padded to N.
        log_n: domain size (default: next power of two). stream: CuPy stream. timings: as :func:`compute_h_inplace`.
    Raises:
        TypeError: mixed host/device or bad dtype. ValueError: bad shape, empty, element >= r, bad domain."""
    dev = [_cuda.is_device_array(x) for x in (a, b, c)]
    if any(dev) and not all(dev):
        raise TypeError("compute_h: a, b, c must all be host (numpy) or all device (CuPy) arrays")
    if all(dev):
        if stream is None:
            return _compute_h_device(a, b, c, log_n, timings)
        with stream:
            return _compute_h_device(a, b, c, log_n, timings)
    ha, hb, hc = (check_array(FR, x, name=nm) for x, nm in ((a, "a"), (b, "b"), (c, "c")))
    domain_log_size([ha.shape[0], hb.shape[0], hc.shape[0]], log_n)
    if _cuda.gpu_available():
        cp = _cuda.cupy()
        return compute_h(
            cp.asarray(ha), cp.asarray(hb), cp.asarray(hc), log_n=log_n, stream=stream, timings=timings
        ).get()
    return fr_from_ints(compute_h_reference(fr_to_ints(ha), fr_to_ints(hb), fr_to_ints(hc), log_n=log_n))
