"""The Groth16 H polynomial (the quotient (A*B - C)/Z of the QAP), on the GPU with a CPU reference.

Given the evaluations a, b, c of the constraint polynomials on the domain H = <omega> of size
N = 2^L, the prover needs h = (A*B - C) / Z, Z(X) = X^N - 1. As in cuzk (``groth16_ntt_h.cu``,
``execute_ntts_single`` and ``execute_ntt_msm_h``) and bellman/bellperson:

1. for each of a, b, c: inverse NTT (evaluations -> coefficients), then a forward NTT on the coset
   g*H (g = 7), i.e. evaluations at g*omega^j;
2. on the coset Z is the constant g^N - 1, so ``H_j = (A_j*B_j - C_j) * (g^N - 1)^-1``;
3. inverse coset NTT of H -> the N coefficients of h.

On the GPU the orders are the cuzk ones (no bit-reversal pass until the last step): iNTT "nr",
coset NTT "rn", pointwise, inverse coset NTT "nn". Every constant rides on a product that happens anyway:
the iNTT's 1/N on the coset shift (one table g^i/N at the coset NTT's load), the pointwise a*b - c at the load of the final inverse NTT (no pass of its own), and 1/Z with g^-i/N in one
table at its store, which scatters to the bit-reversed places (c as scratch); 7 transforms, no bit-reversal
pass, 5 products per element besides the butterflies (before: 9, and a pointwise pass ``fr_mul_sub_scale`` of
fr_ops.cu, which now runs only at N = 1).

Inputs of length m <= N are zero-padded to N = the next power of two >= max(m) (or 2^log_n if
given), as cuzk pads ``abc_size`` to the domain size.
"""

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
    """log2 of the domain: the next power of two >= max(lengths), or log_n if given.

    Raises:
        ValueError: an empty input, log_n too small for the inputs, or beyond the 2-adicity.
    """
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
    """CPU reference on Python ints (via :func:`zkgpu.arith.domain.ntt_reference`): the N coefficients of h.

    Raises:
        ValueError: empty input, a value outside [0, r), or a bad domain size. TypeError: an
        element that is not an int.
    """
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
    """The H computation on three device buffers of N = 2^L Fr elements in Montgomery form.

    a, b and c (CuPy, C-contiguous, 32*N bytes each, see :func:`zkgpu.gpu.fr_device.device_words`) are
    overwritten (b and c hold scratch data afterwards); a receives the N coefficients of h (Montgomery form). Launches on CuPy's current
    stream; synchronises only when ``timings`` is given, which is then filled with CUDA-event times
    in ms: ``ntt_ms`` (3 iNTT + 3 coset NTT), ``pointwise_ms``, ``intt_ms`` (inverse coset NTT),
    ``total_ms``. For N > 1 the pointwise step runs in the inverse coset NTT's first pass, so
    ``pointwise_ms`` is 0 and ``intt_ms`` includes it.

    Raises:
        ValueError: sizes differ or are not a power of two.
    """
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
    """A fresh ``(n, 4)`` uint64 device buffer holding ``x`` (canonical Fr, ``(m, 4)`` CuPy, m <= n)
    zero-padded to n and converted to Montgomery form, on the current stream.

    The check that every element is < r syncs the stream, unless ``deferred`` is given: then it is
    only queued (no host wait, so copies and kernels of other streams keep flowing) and
    ``deferred.raise_if_bad()`` must be called after the stream's work is done; ``x`` must stay
    alive until then.

    Raises:
        ValueError: an element >= r (first bad index named; with ``deferred``, from
        ``raise_if_bad``) or m > n. TypeError: bad dtype.
    """
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
    """a <- the inverse coset NTT of (a*b - c) / Z, natural order, in one transform: the pointwise a*b - c at the first
    pass's load (scale_mode mul_sub), the constant 1/Z folded with the coset factor g^-i/N into one table at the last
    pass's store (h is linear in the pointwise values). With ``scatter`` (two or more passes) c is the scratch buffer
    and the last pass stores in natural order; otherwise a bit-reversal pass follows and b, c are left as they were."""
    tmp = wc if scatter and global_passes(log_n, "nr") > 1 else None
    stagewise_passes(wa, log_n, True, False, None, _SCALE["mul_sub"], _icoset_zinv_table(log_n), _SCALE["natural"],
                     aux=(wb, wc), nn_scratch=tmp)
    if tmp is None:
        bitrev_permute(wa)


def _mul_sub_scale(wa: Any, wb: Any, wc: Any, log_n: int) -> None:
    n = 1 << log_n
    _cuda.launch_1d(_cuda.get_kernel("fr_ops", "fr_mul_sub_scale"), n, (wa, wb, wc, _z_inv_device(log_n), np.uint64(n)))


def combine_h_inplace(a: Any, b: Any, c: Any) -> Any:
    """The second half of the H computation on coset evaluations (from :func:`zkgpu.gpu.ntt.transform.coset_evals_inplace`):
    a <- (a*b - c) * Z^-1 on the coset, then the inverse coset NTT of a, on the current stream.
    a receives the N coefficients of h (Montgomery form); b and c are left as they were.

    Raises:
        ValueError: sizes differ or are not a power of two.
    """
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
    """Coefficients of the Groth16 H polynomial from the evaluations a, b, c (module docstring).

    Args:
        a, b, c: canonical Fr vectors, all numpy uint64 ``(m, 4)`` host arrays or all CuPy arrays of
            that shape/dtype; lengths may differ and are zero-padded to N.
        log_n: domain size 2^log_n (default: next power of two >= the longest input).
        stream: a CuPy stream to launch on (device path); default the current stream.
        timings: optional dict filled with sub-timings in ms (see :func:`compute_h_inplace`).

    Returns:
        h, shape ``(N, 4)`` uint64 canonical, of the same kind as the inputs. Host inputs use the GPU
        when one is present, else :func:`compute_h_reference`.

    Raises:
        TypeError: mixed host/device inputs, or bad dtype.
        ValueError: bad shape, empty input, an element >= r (first bad index named), bad domain.
    """
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
