"""Fr NTT: the CPU reference against the naive DFT, properties, bad input, an emulation of the GPU pass
schedule in Python, and (marked gpu) the kernels against the reference on fresh random inputs."""

from __future__ import annotations

import contextlib
import random

import numpy as np
import pytest

from seeding import new_pyrng, new_rng
from zkgpu.app.bench.ntt import bench_command
from zkgpu.arith.domain import bitrev_indices, dft_naive, log2_size, ntt_reference
from zkgpu.arith.field import FR, fr_from_ints, fr_random, fr_to_ints
from zkgpu.gpu.fr_device import from_montgomery, to_montgomery
from zkgpu.gpu.ntt import transform as N

P = FR.modulus
G = FR.generator
VARIANTS = [(False, False), (True, False), (False, True), (True, True)]
VIDS = ["forward", "inverse", "coset", "inverse-coset"]


def rand_ints(n: int, rng: random.Random) -> list[int]:
    return [rng.randrange(P) for _ in range(n)]


@pytest.fixture
def rng() -> random.Random:
    return new_pyrng()


# ---------------------------------------------------------------- CPU reference
@pytest.mark.parametrize("log_n", range(0, 7))
@pytest.mark.parametrize("inverse,coset", VARIANTS, ids=VIDS)
def test_reference_matches_naive_dft(log_n, inverse, coset, rng):
    x = rand_ints(1 << log_n, rng)
    assert ntt_reference(x, inverse=inverse, coset=coset) == dft_naive(x, inverse=inverse, coset=coset)


def test_naive_dft_definition_small():
    # n = 2: X = (c0 + c1, c0 - c1); coset: (c0 + 7 c1, c0 - 7 c1)
    assert dft_naive([3, 5]) == [8, (3 - 5) % P]
    assert dft_naive([3, 5], coset=True) == [3 + 35, (3 - 35) % P]
    assert FR.root_of_unity(1) == P - 1


@pytest.mark.parametrize("log_n", [1, 5, 10])
def test_reference_properties(log_n, rng):
    n = 1 << log_n
    x, y = rand_ints(n, rng), rand_ints(n, rng)
    for inverse, coset in VARIANTS:
        fwd = ntt_reference(x, inverse=inverse, coset=coset)
        assert ntt_reference(fwd, inverse=not inverse, coset=coset) == x
    a, b = rng.randrange(P), rng.randrange(P)
    lin = ntt_reference([(a * u + b * v) % P for u, v in zip(x, y, strict=True)])
    fx, fy = ntt_reference(x), ntt_reference(y)
    assert lin == [(a * u + b * v) % P for u, v in zip(fx, fy, strict=True)]


def test_reference_edge_values():
    for v in (0, 1, P - 1):
        for log_n in (0, 1, 3):
            x = [v] * (1 << log_n)
            for inverse, coset in VARIANTS:
                assert ntt_reference(x, inverse=inverse, coset=coset) == dft_naive(x, inverse=inverse, coset=coset)
    # delta -> all ones; constant -> n * delta
    assert ntt_reference([1, 0, 0, 0]) == [1, 1, 1, 1]
    assert ntt_reference([1, 1, 1, 1]) == [4, 0, 0, 0]
    assert ntt_reference([5]) == [5]
    assert ntt_reference([5], inverse=True, coset=True) == [5]


def test_reference_accepts_host_array(rng):
    x = rand_ints(8, rng)
    assert ntt_reference(fr_from_ints(x)) == ntt_reference(x)


# ---------------------------------------------------------------- public API on the host (CPU path without a GPU)
def test_ntt_host_roundtrip_types(rng):
    x = fr_from_ints(rand_ints(16, rng))
    for inverse, coset in VARIANTS:
        y = N.ntt(x, inverse=inverse, coset=coset)
        assert isinstance(y, np.ndarray) and y.dtype == np.uint64 and y.shape == (16, 4)
        assert fr_to_ints(y) == ntt_reference(fr_to_ints(x), inverse=inverse, coset=coset)


@pytest.mark.parametrize(
    "bad,exc,match",
    [
        (np.zeros((0, 4), dtype=np.uint64), ValueError, "empty"),
        (np.zeros((3, 4), dtype=np.uint64), ValueError, "power of two"),
        (np.zeros((12, 4), dtype=np.uint64), ValueError, "power of two"),
        (np.zeros((4, 4), dtype=np.uint32), TypeError, "uint64"),
        (np.zeros((4, 4), dtype=np.int64), TypeError, "uint64"),
        (np.zeros((4, 6), dtype=np.uint64), ValueError, "shape"),
        (np.zeros(16, dtype=np.uint64), ValueError, "shape"),
        ([1, 2, 3, 4], TypeError, "numpy"),
    ],
)
def test_ntt_bad_input(bad, exc, match):
    with pytest.raises(exc, match=match):
        N.ntt(bad)


@pytest.mark.parametrize("value", [P, P + 1, 2**256 - 1])
def test_ntt_rejects_unreduced_naming_index(value):
    x = fr_from_ints([0] * 8)
    x[5] = np.array([(value >> (64 * i)) & (2**64 - 1) for i in range(4)], dtype=np.uint64)
    with pytest.raises(ValueError, match=r"\[5\]"):
        N.ntt(x)
    with pytest.raises(ValueError, match=r"\[5\]"):
        ntt_reference(fr_to_ints(x))


def test_size_beyond_two_adicity():
    with pytest.raises(ValueError, match="2-adicity"):
        log2_size(1 << 33)
    with pytest.raises(ValueError, match="empty"):
        log2_size(0)
    assert log2_size(1 << 32) == 32


def test_bad_order():
    with pytest.raises(ValueError, match="order"):
        N.ntt_inplace(None, order="rr")


# ---------------------------------------------------------------- emulation of the GPU schedule
def _emulate(x: list[int], L: int, inverse: bool, coset: bool, order: str, max_tile_log: int, radix: int = 2) -> list[int]:
    """Python replay of ntt.cu's pass kernels (ntt_pass / ntt_pass_r4): the same index arithmetic,
    stage order and fused scalings, with the passes ntt_inplace launches."""
    n = 1 << L
    omega = FR.root_of_unity(L)
    if inverse:
        omega = pow(omega, -1, P)
    tw = [1] * n
    for i in range(1, n):
        lh = i.bit_length() - 1
        tw[i] = pow(omega, (i - (1 << lh)) << (L - 1 - lh), P)
    def rev(g):
        return int(format(g, f"0{L}b")[::-1], 2) if L else 0

    dit = order == "rn"
    n_inv = pow(n, -1, P)
    pre_tab = [pow(G, i, P) for i in range(n)]
    post_tab = [pow(G, -i, P) * n_inv % P for i in range(n)] if coset else [n_inv]
    pre_mode = (2 if dit else 1) if (coset and not inverse) else 0
    post_mode = (3 if not coset else (1 if dit else 2)) if inverse else 0

    def scale(v, tab, mode, g):
        if mode == 0:
            return v
        return v * tab[g if mode == 1 else (rev(g) if mode == 2 else 0)] % P

    def twid(s, g):
        h = 1 << s
        return tw[h + (g & (h - 1))]

    x = list(x)
    passes = N._passes(L, max_tile_log)
    if dit:
        passes = passes[::-1]
    for pi, (s_lo, k, c) in enumerate(passes):
        T = 1 << (k + c)
        midbits = s_lo - c
        for b in range(n // T):
            base = ((b & ((1 << midbits) - 1)) << c) | ((b >> midbits) << (s_lo + k))
            def gidx(u, base=base, c=c, s_lo=s_lo):
                return base | (u & ((1 << c) - 1)) | ((u >> c) << s_lo)

            sm = [scale(x[gidx(u)], pre_tab, pre_mode if pi == 0 else 0, gidx(u)) for u in range(T)]

            def r2(s, lb, sm=sm, T=T, gidx=gidx):
                hl = 1 << lb
                for tid in range(T // 2):
                    j = (tid & (hl - 1)) | ((tid >> lb) << (lb + 1))
                    a, bb = sm[j], sm[j + hl]
                    w = 1 if s == 0 else twid(s, gidx(j))
                    if dit:
                        bb = bb * w % P
                        sm[j], sm[j + hl] = (a + bb) % P, (a - bb) % P
                    else:
                        sm[j], sm[j + hl] = (a + bb) % P, (a - bb) * w % P

            def r4(s, lb, sm=sm, T=T, gidx=gidx):
                h1, h2 = 1 << lb, 2 << lb
                for tid in range(T // 4):
                    j0 = (tid & (h1 - 1)) | ((tid >> lb) << (lb + 2))
                    g0, g1 = gidx(j0), gidx(j0 + h1)
                    x0, x1, x2, x3 = sm[j0], sm[j0 + h1], sm[j0 + h2], sm[j0 + h1 + h2]
                    w = 1 if s == 0 else twid(s, g0)
                    if not dit:
                        y0, y1 = (x0 + x2) % P, (x1 + x3) % P
                        y2, y3 = (x0 - x2) * twid(s + 1, g0) % P, (x1 - x3) * twid(s + 1, g1) % P
                        x0, x1, x2, x3 = (y0 + y1) % P, (y0 - y1) * w % P, (y2 + y3) % P, (y2 - y3) * w % P
                    else:
                        b1, b3 = x1 * w % P, x3 * w % P
                        y0, y1, y2, y3 = (x0 + b1) % P, (x0 - b1) % P, (x2 + b3) % P, (x2 - b3) % P
                        b2, b3 = y2 * twid(s + 1, g0) % P, y3 * twid(s + 1, g1) % P
                        x0, x2, x1, x3 = (y0 + b2) % P, (y0 - b2) % P, (y1 + b3) % P, (y1 - b3) % P
                    sm[j0], sm[j0 + h1], sm[j0 + h2], sm[j0 + h1 + h2] = x0, x1, x2, x3

            if dit:
                q = 0
                while radix == 4 and q + 2 <= k:
                    r4(s_lo + q, c + q)
                    q += 2
                while q < k:
                    r2(s_lo + q, c + q)
                    q += 1
            else:
                q = k
                while radix == 4 and q >= 2:
                    r4(s_lo + q - 2, c + q - 2)
                    q -= 2
                while q > 0:
                    r2(s_lo + q - 1, c + q - 1)
                    q -= 1
            for u in range(T):
                x[gidx(u)] = scale(sm[u], post_tab, post_mode if pi == len(passes) - 1 else 0, gidx(u))
    if order == "nn":
        x = _emulate_bitrev(x, L)
    return x


def _emulate_bitrev(x: list[int], L: int, q: int = N._BR_Q) -> list[int]:
    """Python replay of ntt_bitrev_tiled (L >= 2q) / ntt_bitrev, in place."""
    x = list(x)
    def r(v, bits):
        return int(format(v, f"0{bits}b")[::-1], 2) if bits else 0

    if L < 2 * q:
        for i in range(1 << L):
            if i < r(i, L):
                x[i], x[r(i, L)] = x[r(i, L)], x[i]
        return x
    for mid in range(1 << (L - 2 * q)):
        rmid = r(mid, L - 2 * q)
        if mid > rmid:
            continue
        def idx(hi, m, lo):
            return (hi << (L - q)) | (m << q) | lo

        sa = [x[idx(t >> q, mid, t & ((1 << q) - 1))] for t in range(1 << 2 * q)]
        sb = [x[idx(t >> q, rmid, t & ((1 << q) - 1))] for t in range(1 << 2 * q)]
        for t in range(1 << 2 * q):
            hi, lo = t >> q, t & ((1 << q) - 1)
            src = (r(lo, q) << q) | r(hi, q)
            if mid != rmid:
                x[idx(hi, rmid, lo)] = sa[src]
                x[idx(hi, mid, lo)] = sb[src]
            else:
                x[idx(hi, mid, lo)] = sa[src]
    return x


@pytest.mark.parametrize("L", [0, 1, 7, 8, 9, 11, 12])
def test_bitrev_emulation(L):
    x = list(range(1 << L))
    assert _emulate_bitrev(x, L) == [int(format(i, f"0{L}b")[::-1], 2) if L else 0 for i in range(1 << L)]


@pytest.mark.parametrize("radix", [2, 4])
@pytest.mark.parametrize("L,max_tile_log", [(1, 10), (3, 10), (5, 2), (7, 3), (8, 3), (9, 4), (6, 10), (9, 10)])
@pytest.mark.parametrize("inverse,coset", VARIANTS, ids=VIDS)
def test_gpu_schedule_emulation(L, max_tile_log, inverse, coset, radix, rng):
    n = 1 << L
    x = rand_ints(n, rng)
    ref = ntt_reference(x, inverse=inverse, coset=coset)
    rev = [int(format(i, f"0{L}b")[::-1], 2) for i in range(n)]
    assert _emulate(x, L, inverse, coset, "nn", max_tile_log, radix) == ref
    assert _emulate(x, L, inverse, coset, "nr", max_tile_log, radix) == [ref[rev[i]] for i in range(n)]
    assert _emulate([x[rev[i]] for i in range(n)], L, inverse, coset, "rn", max_tile_log, radix) == ref


def test_passes_cover_all_bits():
    for L in range(0, 33):
        ps = N._passes(L)
        bits = sorted(b for s_lo, k, _ in ps for b in range(s_lo, s_lo + k))
        assert bits == list(range(L))
        for s_lo, k, c in ps:
            assert k + c <= 10 and c <= s_lo
    assert len(N._passes(24)) == 3
    assert [k for _, k, _ in N._passes(22)] == [8, 7, 7]
    assert N._passes(22, 10, 1) == [(14, 8, 1), (7, 7, 1), (0, 7, 0)]


# ---------------------------------------------------------------- GPU
def _cp():
    from zkgpu.core.cuda import cupy

    return cupy()


def _dev_random(n: int, seed: int):
    """Fresh random canonical Fr elements (top limb < 2^62 < r's top limb), on the device."""
    x = np.random.default_rng(seed).integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    x[:, 3] >>= np.uint64(2)
    return _cp().asarray(x)


@pytest.fixture(params=[2, 4])
def radix(request, monkeypatch):
    """Run a GPU test with each pass kernel (ntt_pass, ntt_pass_r4)."""
    monkeypatch.setattr(N, "RADIX", request.param)
    return request.param


# ---------------------------------------------------------------- the kernels, emulated on the CPU
@pytest.fixture
def emu(monkeypatch):
    """zkgpu.gpu.ntt.transform's device path with the kernels of ntt.cu built by g++ (tests/native/ntt_emu.cpp) and numpy
    standing in for CuPy; the table caches are cleared around it."""
    from native import NumpyAsCupy, emulated_kernel, load

    from zkgpu.core import cuda as _cuda
    from zkgpu.gpu.ntt import qap

    N.clear_cache()
    qap._z_inv_device.cache_clear()
    qap._icoset_zinv_table.cache_clear()
    monkeypatch.setattr(_cuda, "cupy", lambda: NumpyAsCupy())
    monkeypatch.setattr(N, "_kernel", lambda name: emulated_kernel(load("ntt_emu"), name))
    monkeypatch.setattr(N, "_BR_Q", 16)  # ntt_bitrev_tiled needs 256 threads: the grid-stride ntt_bitrev
    yield
    N.clear_cache()
    qap._z_inv_device.cache_clear()
    qap._icoset_zinv_table.cache_clear()


def _mont_words(x: list[int]) -> np.ndarray:
    return fr_from_ints([FR.to_mont(v) for v in x]).view(np.uint32).reshape(-1)


def _from_mont_words(w: np.ndarray) -> list[int]:
    return [FR.from_mont(v) for v in fr_to_ints(w.view(np.uint64).reshape(-1, 4))]


def _each_kernel(monkeypatch):
    """Yield each radix with its pass kernel in use (one Python reference serves them all)."""
    for r in (2, 4):
        monkeypatch.setattr(N, "RADIX", r)
        yield f"radix{r}"


@pytest.mark.gpu
@pytest.mark.parametrize("inverse,coset", VARIANTS, ids=VIDS)
def test_gpu_all_small_sizes(inverse, coset, monkeypatch):
    for L in range(0, 19):
        x = fr_random(1 << L)
        want = ntt_reference(fr_to_ints(x), inverse=inverse, coset=coset)
        for kid in _each_kernel(monkeypatch):
            assert fr_to_ints(N.ntt(x, inverse=inverse, coset=coset)) == want, (f"2^{L}", kid)


@pytest.mark.gpu
@pytest.mark.parametrize("order", ["nr", "rn", "nn"])
@pytest.mark.parametrize("inverse,coset", VARIANTS, ids=VIDS)
def test_gpu_orders_device_api(order, inverse, coset, monkeypatch):
    cp = _cp()
    for L in (1, 2, 4, 8, 9, 11, 13, 16):
        n = 1 << L
        x = fr_random(n, new_rng())
        xi = fr_to_ints(x)
        ref = ntt_reference(xi, inverse=inverse, coset=coset)
        rev = bitrev_indices(L)
        inp = x[rev] if order == "rn" else x
        want = [ref[r] for r in rev] if order == "nr" else ref
        for kid in _each_kernel(monkeypatch):
            d = cp.asarray(inp)
            to_montgomery(d)
            N.ntt_inplace(d, inverse=inverse, coset=coset, order=order)
            from_montgomery(d)
            assert fr_to_ints(d.get()) == want, (order, L, kid)


@pytest.mark.gpu
def test_gpu_device_in_device_out_and_edges():
    cp = _cp()
    for v in (0, 1, P - 1):
        for L in (0, 1, 5):
            x = fr_from_ints([v] * (1 << L))
            for inverse, coset in VARIANTS:
                d = N.ntt(cp.asarray(x), inverse=inverse, coset=coset)
                assert isinstance(d, cp.ndarray) and d.dtype == cp.uint64 and d.shape == x.shape
                assert fr_to_ints(d.get()) == ntt_reference([v] * (1 << L), inverse=inverse, coset=coset)
    d = cp.asarray(fr_from_ints([1, 2, 3, 4]))
    before = d.copy()
    N.ntt(d)
    assert bool((d == before).all()), "ntt() must not modify its input"


@pytest.mark.gpu
def test_gpu_trusted_path_in_place_and_out(rng):
    """ntt(check=False, out=values) transforms in place, out=other writes there and keeps the input; both equal the
    reference, canonical in and out (random values, 0, 1, r-1; sizes 1, 2^5, 2^11)."""
    cp = _cp()
    for L in (0, 5, 11):
        ints = [rng.randrange(P) for _ in range(1 << L)]
        ints[:3] = [0, 1, P - 1][: len(ints)]
        for inverse, coset in VARIANTS:
            want = ntt_reference(ints, inverse=inverse, coset=coset)
            d = cp.asarray(fr_from_ints(ints))
            assert N.ntt(d, inverse=inverse, coset=coset, check=False, out=d) is d
            assert fr_to_ints(d.get()) == want, (L, inverse, coset)
            d = cp.asarray(fr_from_ints(ints))
            o = cp.empty_like(d)
            assert N.ntt(d, inverse=inverse, coset=coset, out=o) is o
            assert fr_to_ints(o.get()) == want and fr_to_ints(d.get()) == ints, (L, inverse, coset)


@pytest.mark.gpu
def test_gpu_bad_out():
    cp = _cp()
    d = cp.asarray(fr_from_ints([1, 2, 3, 4, 5, 6, 7, 8]))
    with pytest.raises(ValueError, match="shape"):
        N.ntt(d, out=cp.empty((4, 4), dtype=cp.uint64))
    with pytest.raises(TypeError, match="uint64"):
        N.ntt(d, out=cp.empty((8, 8), dtype=cp.uint32))
    with pytest.raises(ValueError, match="overlaps"):
        N.ntt(d[:4], out=d[2:6])
    with pytest.raises(TypeError, match="out: expected a CuPy array"):
        N.ntt(d, out=np.empty((8, 4), dtype=np.uint64))


def test_out_is_for_device_input_only():
    with pytest.raises(ValueError, match="out: only for a device"):
        N.ntt(fr_from_ints([1, 2]), out=np.empty((2, 4), dtype=np.uint64))


@pytest.mark.gpu
def test_gpu_bad_device_input():
    cp = _cp()
    x = fr_from_ints([0] * 8)
    x[6, 3] = np.uint64(0xFFFFFFFFFFFFFFFF)
    with pytest.raises(ValueError, match=r"values\[6\]"):
        N.ntt(cp.asarray(x))
    with pytest.raises(ValueError, match="power of two"):
        N.ntt(cp.zeros((6, 4), dtype=cp.uint64))
    with pytest.raises(ValueError, match="empty"):
        N.ntt(cp.zeros((0, 4), dtype=cp.uint64))
    with pytest.raises(TypeError, match="uint64"):
        N.ntt(cp.zeros((4, 4), dtype=cp.uint32))
    with pytest.raises(ValueError, match="shape"):
        N.ntt(cp.zeros((4, 5), dtype=cp.uint64))


def _residue_sums(x: np.ndarray, s: int) -> list[int]:
    """S_t = sum_{i = t mod 2^s} x_i mod r, by uint64 sums of the 32-bit limb columns."""
    n = x.shape[0]
    w = x.view(np.uint32).reshape(n >> s, 1 << s, 8).sum(axis=0, dtype=np.uint64)
    return [sum(int(w[t, k]) << (32 * k) for k in range(8)) % P for t in range(1 << s)]


@pytest.mark.gpu
@pytest.mark.parametrize("L", [20, 23, 24, 26])
def test_gpu_large_spot_checks(L, radix):
    """Outputs at j = m*n/2^s equal NTT_{2^s} of the residue-class sums (each depends on every input);
    inverse likewise; round trips for all variants."""
    cp = _cp()
    s = 10
    n = 1 << L
    x = _dev_random(n, new_pyrng().getrandbits(32))
    xh = x.get()
    S = _residue_sums(xh, s)
    for inverse in (False, True):
        y = N.ntt(x, inverse=inverse).get()
        want = ntt_reference(S, inverse=inverse)
        if inverse:  # ntt_reference(inverse) divides by 2^s; the size-n inverse divides by n
            want = [v * pow(n >> s, -1, P) % P for v in want]
        got = fr_to_ints(y[:: n >> s])
        assert got == want, f"2^{L} inverse={inverse}"
        del y
    for coset in (False, True):
        y = N.ntt(x, coset=coset)
        z = N.ntt(y, inverse=True, coset=coset)
        assert bool((z == x).all()), f"2^{L} round trip coset={coset}"
        del y, z
    cp.get_default_memory_pool().free_all_blocks()


BUILDS = {  # id -> (RADIX, zkgpu.gpu.ntt.transform.DEFINES)
    "r4": (4, {}),
    "o3-b4-w256-portable-tail": (2, {"ZK_PTXAS_O": 3, "NTT_MIN_BLOCKS": 4, "NTT_THREADS": 256, "ZK_FF_ASM_TAIL": 0}),
}
"""Builds that must equal the default one bit for bit: radix 4, and the remaining tuning options together. Each build
costs the GPU run a module compile and ~10 s. The variants removed after tag pre-macro-cut, and the candidates NTT_FOLD,
NTT_BIG_LAST and NTT_SKIP_ONE deleted in issue 23 (notes/ntt-kernels.md, run s5-ntt), had their own builds here."""


def _edge_words(n: int, seed: int) -> np.ndarray:
    """n elements whose Montgomery words are 0, 1, r-1 or r-2 (seeded mix): a - b at its extremes in the butterflies."""
    pick = np.random.default_rng(seed).integers(0, 4, size=n)
    return fr_from_ints([(0, 1, P - 1, P - 2)[i] for i in pick])


@pytest.mark.gpu
@pytest.mark.parametrize("variant", list(BUILDS))
def test_gpu_builds_equal_default(variant):
    """Every transform of a build equals the default build bit for bit: sizes 2^1..2^13 in every order, on random and
    on edge words; 2^20 and 2^24 natural order on random words; compute_h at 2^14."""
    from zkgpu.gpu.ntt.qap import compute_h_inplace

    r, defines = BUILDS[variant]

    @contextlib.contextmanager
    def build():
        saved = (N.RADIX, N.DEFINES)
        N.configure(radix=r, defines=defines)
        try:
            yield
        finally:
            N.RADIX, N.DEFINES = saved

    cp = _cp()
    seed = int(new_rng().integers(2**32))
    cases = [(L, order, edge) for L in range(1, 14) for order in N.ORDERS for edge in (False, True)]
    cases += [(20, "nn", False), (24, "nn", False)]
    cp.random.seed(seed)
    for L, order, edge in cases:
        if edge:
            x = cp.asarray(_edge_words(1 << L, seed + L))
        else:  # random words below 2^30 each (< r), drawn on the device
            x = cp.random.randint(0, 1 << 30, size=(1 << L, 8), dtype=cp.uint32).view(cp.uint64)
        for inverse, coset in VARIANTS:
            want = x.copy()
            N.ntt_inplace(want, inverse=inverse, coset=coset, order=order)
            got = x.copy()
            with build():
                N.ntt_inplace(got, inverse=inverse, coset=coset, order=order)
            assert bool((got == want).all()), (variant, L, order, edge, inverse, coset)
            del want, got
        del x
    abc = [_dev_random(1 << 14, seed + i) for i in range(3)]
    for d in abc:
        to_montgomery(d)
    want = [d.copy() for d in abc]
    compute_h_inplace(*want)
    with build():
        compute_h_inplace(*abc)
    assert bool((abc[0] == want[0]).all()), (variant, "compute_h")
    N.clear_cache()
    cp.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
def test_gpu_arbitrary_positions_horner_2_20():
    n = 1 << 20
    x = fr_random(n, new_rng())
    xi = fr_to_ints(x)
    omega = FR.root_of_unity(20)
    for coset in (False, True):
        y = N.ntt(x, coset=coset)
        for j in (1, 777_777, n - 1):
            pt = pow(omega, j, P) * (G if coset else 1) % P
            acc = 0
            for c in reversed(xi):
                acc = (acc * pt + c) % P
            assert fr_to_ints(y[j : j + 1])[0] == acc, (coset, j)


def test_reference_rejects_non_int_elements():
    from zkgpu.gpu.ntt.qap import compute_h_reference

    with pytest.raises(TypeError, match=r"values\[0\]"):
        ntt_reference([1.5, 2])
    with pytest.raises(TypeError):
        compute_h_reference([1.7], [1], [1])


def test_size_error_before_copying_a_huge_broadcast_array():
    huge = np.broadcast_to(np.zeros((1, 4), np.uint64), (2**33, 4))
    with pytest.raises(ValueError, match="2-adicity"):
        N.ntt(huge)


def test_bench_cli_has_no_build_choice():
    """zkgpu bench ntt times the default build only: --kernel (removed after tag pre-macro-cut) and --candidate (issue
    23) are no longer options."""
    from click.testing import CliRunner

    for opt, value in (("--candidate", "fold"), ("--kernel", "stagewise")):
        res = CliRunner().invoke(bench_command, [opt, value])
        assert res.exit_code == 2 and f"No such option '{opt}'" in res.output


def test_bench_rows_of_the_default_build(emu, monkeypatch):
    """run_benchmark times every transform and compute_h with the build options in force (emulated kernels, a stand-in
    timer that records them): one row per variant, kernel stagewise, no defines."""
    from types import SimpleNamespace

    from native import NumpyAsCupy

    from zkgpu.app.bench import ntt as bench_ntt
    from zkgpu.core import cuda as _cuda

    fake = NumpyAsCupy()
    fake.get_default_memory_pool = lambda: SimpleNamespace(free_all_blocks=lambda: None)
    monkeypatch.setattr(_cuda, "cupy", lambda: fake)
    monkeypatch.setattr(bench_ntt, "to_montgomery", lambda d: d)
    seen = []

    def timer(fn, warmup, repeat):
        fn()
        seen.append(dict(N.DEFINES))
        return SimpleNamespace(median_ms=1.0, min_ms=0.5, max_ms=2.0)

    monkeypatch.setattr(_cuda, "benchmark", timer)
    monkeypatch.setattr(_cuda, "is_device_array", lambda a: isinstance(a, np.ndarray))  # the fake's arrays are numpy's
    monkeypatch.setattr(N, "check_canonical", lambda w, name: None)  # fr_device's kernels are not emulated here
    rows = bench_ntt.run_benchmark(11, 11, repeat=1, warmup=0, h_min_log=11, h_max_log=11)
    variants = [*bench_ntt.BENCH_VARIANTS, *bench_ntt.API_VARIANTS, "compute_h"]
    assert [(r["kernel"], r["variant"]) for r in rows] == [("stagewise", v) for v in variants]
    assert seen == [{}] * len(variants)
    assert {r["defines"] for r in rows} == {""}
    assert {r["global_passes"] for r in rows if r["variant"] == "compute_h"} == {11}  # 3 x (2 + 2 - 1) + 2


@pytest.mark.parametrize("L", [0, 3, 11])
def test_public_device_path_is_canonical_emulated(L, emu, monkeypatch, rng):
    """ntt() on a device array skips the Montgomery conversions: canonical in, canonical out, equal to the reference
    (ntt.cu's kernels built by g++; random values with 0, 1 and r-1), in place (check=False, out=values) and into out."""
    from zkgpu.core import cuda as _cuda

    monkeypatch.setattr(_cuda, "is_device_array", lambda a: isinstance(a, np.ndarray))
    monkeypatch.setattr(N, "check_canonical", lambda w, name: None)
    ints = [rng.randrange(P) for _ in range(1 << L)]
    ints[:3] = [0, 1, P - 1][: len(ints)]
    for inverse, coset in VARIANTS:
        want = ntt_reference(ints, inverse=inverse, coset=coset)
        d = fr_from_ints(ints)
        assert N.ntt(d, inverse=inverse, coset=coset, check=False, out=d) is d
        assert fr_to_ints(d) == want, (L, inverse, coset)
        d = fr_from_ints(ints)
        assert fr_to_ints(N.ntt(d, inverse=inverse, coset=coset)) == want and fr_to_ints(d) == ints, (L, inverse, coset)


def test_queued_times_order(monkeypatch):
    """queued_times_ms queues GPU work (the pad, scaled in place) before each start event and calls fn between the
    start and end events of its own repeat (a stand-in for CuPy records the order)."""
    from types import SimpleNamespace

    from zkgpu.app.bench import ntt as bench_ntt
    from zkgpu.core import cuda as _cuda

    log: list[str] = []

    class Event:
        def record(self, stream):
            log.append("record")

        def synchronize(self):
            log.append("sync")

    class Pad:
        def __imul__(self, other):
            log.append("pad")
            return self

    fake = SimpleNamespace(cuda=SimpleNamespace(get_current_stream=lambda: "s", Event=Event,
                                                get_elapsed_time=lambda a, b: 0.5))
    monkeypatch.setattr(_cuda, "cupy", lambda: fake)
    assert bench_ntt.queued_times_ms(lambda: log.append("fn"), 2, Pad()) == [0.5, 0.5]
    assert log == ["pad", "record", "fn", "record", "sync"] * 2


@pytest.mark.gpu
def test_gpu_bench_queued_rows():
    """run_benchmark(queued=True) adds queued_median_ms to every transform's row: positive, and not above the plain
    median by more than noise (it leaves out the host's launch preparation); the public call's rows follow, unqueued."""
    from zkgpu.app.bench.ntt import API_VARIANTS, BENCH_VARIANTS, run_benchmark

    rows = run_benchmark(12, 12, repeat=3, warmup=1, with_compute_h=False, queued=True)
    assert [r["variant"] for r in rows] == [*BENCH_VARIANTS, *API_VARIANTS]
    kernels = rows[: len(BENCH_VARIANTS)]
    assert all(0 < r["queued_median_ms"] <= 2 * r["median_ms"] for r in kernels)


@pytest.mark.parametrize("bits", [0, 1, 5, 9])
def test_power_table_emulated(bits, emu, rng):
    """power_table (kernel ntt_build_powers from two split tables) equals scale * x^i for every i < 2^bits."""
    x, scale = rng.randrange(P), rng.randrange(1, P)
    for s in (1, scale):
        want = [s * pow(x, i, P) % P for i in range(1 << bits)]
        assert _from_mont_words(N.power_table(x, bits, s)) == want


@pytest.mark.parametrize("L", [1, 6, 11])
def test_coset_evals_emulated(L, emu, rng):
    """coset_evals_inplace (iNTT "nr" then coset NTT "rn", their passes on the low bits as one) equals the coset NTT
    of the inverse NTT."""
    x = rand_ints(1 << L, rng)
    w = _mont_words(x)
    assert N.coset_evals_inplace(w) is w
    assert _from_mont_words(w) == ntt_reference(ntt_reference(x, inverse=True), coset=True)


def test_global_passes_and_settings(monkeypatch):
    """Passes over memory per transform (the bench's effective-bandwidth denominator) and the recorded settings."""
    assert [N.global_passes(L, "nr") for L in (1, 10, 11, 20, 24, 30)] == [1, 1, 2, 2, 3, 3]
    assert N.global_passes(24, "nn") == 3  # the last pass scatters
    assert N.global_passes(8, "nn") == 2  # one pass: the bit-reversal pass follows
    assert N.settings() == {"radix": 2, "defines": {}}
    monkeypatch.setattr(N, "RADIX", 4)
    monkeypatch.setattr(N, "DEFINES", {"NTT_MIN_BLOCKS": 4})
    assert N.settings() == {"radix": 4, "defines": {"NTT_MIN_BLOCKS": "4"}}


def test_build_options_ptxas_level():
    """ZK_PTXAS_O reaches NVRTC as --ptxas-options=-O<n>, from the defines or from a module's
    own `#define ZK_PTXAS_O <n>` line; other modules and other values get none, a bad value a clear error."""
    from zkgpu.core.cuda import build_options, header_defines

    assert "--ptxas-options=-O1" in build_options("ntt", (("ZK_PTXAS_O", "1"),))
    assert "-DZK_PTXAS_O=1" in build_options("ntt", (("ZK_PTXAS_O", "1"),))
    assert not any(o.startswith("--ptxas") for o in build_options("msm"))
    try:
        (level,) = header_defines("ntt.cu", "ZK_PTXAS_O")
        want = [f"--ptxas-options=-O{level}"]
    except LookupError:
        want = []
    assert [o for o in build_options("ntt") if o.startswith("--ptxas")] == want
    with pytest.raises(ValueError, match="ZK_PTXAS_O"):
        build_options("ntt", (("ZK_PTXAS_O", "4"),))
