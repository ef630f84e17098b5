// zkgpu: the "fused" NTT kernels over BLS12-381 Fr (ntt.py's algorithm="fused"); the tile geometry, the
// scalings and the element layout are those of ntt.cu (ntt_common.cuh).
//
// Built once per register radix: -DNTT_FUSED_R=2, 4 or 8 selects which kernels this module defines (the
// host compiles one module per radix it uses), so each NVRTC build stays small.
// The portable C++ field arithmetic by default (ZK_NTT_PTX=1 selects the PTX carry chains): the compiler can
// interleave its independent products, which the volatile carry-chain asm forbids; measured on the H200 with
// 2 and 4 elements per thread: 9% and 4% faster (mid-session run 2, 2^24).
#ifndef ZK_NTT_PTX
#define ZK_NTT_PTX 0
#endif
#include "ntt_common.cuh"

// =====================================================================================================
// The "fused" algorithm: per pass, a radix-2^k sub-transform whose stages run in registers.
//
// A pass over the index bits [s_lo, s_lo+k) (the "field" f of a global index g, its low bits
// g_low = g mod 2^s_lo) factors each radix-2 stage twiddle omega_{2^(s+1)}^(g mod 2^s) into
//   inner: omega_{2^(t+1)}^(f mod 2^t), t = s - s_lo  (a size-2^k sub-transform, the same for every g_low), and
//   outer: omega_{2^(s+1)}^g_low, which commutes with the later butterflies of the pass and accumulates to one
//          factor per element: omega_{2^(s_lo+k)}^(g_low * bitrev_k(f)) at the storage position (field f).
// (This is the classic four-step/six-step split of the DFT: Bailey, "FFTs in external or hierarchical memory",
// J. Supercomputing 4, 1990; sppark's ntt/kernels also apply one such twiddle per element per pass.)
// DIF (natural -> bit-reversed): sub-transform, then the outer factor; DIT (bit-reversed -> natural), the
// transpose: the outer factor first, then the sub-transform. No outer factor in the pass with s_lo = 0.
//
// Inner twiddles come from one table per direction, itw[i] = omega_{2^MAXK}^i, i < 2^(MAXK-1) (16 KiB,
// L1-resident); outer twiddles from two small tables of powers of omega_n (E = hi * 2^S + lo: one extra
// product) or from a table of omega_m^e, m = 2^(s_lo+k), e < m/2 (one load, a negation above m/2): 2 MiB,
// L2-resident, for the middle pass at 2^24; as large as n/2 entries for the first DIF / last DIT pass.
// Measured on the H200 (data/nvidia-h200-20261201-bench-ntt), that extra product per element per pass costs more
// than it saves; "exact" (outer_mode::exact) instead loads each butterfly's own twiddle from the n-entry stagewise table
// in the passes with s_lo > 0, as the stagewise kernel does, and keeps the inner table for the pass s_lo = 0.
//
// Inside a pass each thread holds R = 2^LR elements of the tile (2^(k+c) elements: the k field bits and c
// column bits, as in ntt_pass) whose field bits form a window of LR bits, and does up to LR stages in
// registers; the tile goes through shared memory only between such rounds (k = 8, LR = 3: 3 rounds, 2
// exchanges). The first round reads global memory and the last writes it, so a pass reads and writes each
// element once. Shared memory is limb-major with one padding word per 32 elements; the 32 lanes of a warp
// are given 5 contiguous tile bits (bank-conflict-free with that padding).
// =====================================================================================================
#ifndef NTT_FUSED_R
#define NTT_FUSED_R 4
#endif
#if NTT_FUSED_R == 2
#define NTT_FUSED_LR 1
#elif NTT_FUSED_R == 4
#define NTT_FUSED_LR 2
#elif NTT_FUSED_R == 8
#define NTT_FUSED_LR 3
#else
#error "NTT_FUSED_R must be 2, 4 or 8"
#endif
#ifndef NTT_FUSED_MAXK
#define NTT_FUSED_MAXK 10  // the largest k of a pass (the inner table has 2^(MAXK-1) entries)
#endif
#ifndef NTT_FUSED_THREADS
#define NTT_FUSED_THREADS 128
#endif
#ifndef NTT_FUSED_MIN_BLOCKS
// register caps at 128 threads: 85 (R = 2, as measured best), 128 (R = 4), 168 (R = 8)
#define NTT_FUSED_MIN_BLOCKS (NTT_FUSED_R == 8 ? 3 : (NTT_FUSED_R == 4 ? 4 : 6))
#endif


__device__ __forceinline__ uint32_t smi(uint32_t u) { return u + (u >> 5); }
__device__ __forceinline__ uint32_t* fused_smem() {
    extern __shared__ uint32_t zk_ntt_smem[];
    return zk_ntt_smem;
}

// Where a fused pass over the bits [s_lo, s_lo+k) gets the twiddles of its butterflies (s_lo > 0; none
// when s_lo = 0). zkgpu/gpu/ntt/transform.py reads this enum (common.cuh).
enum class outer_mode : int {
    none = 0,   // the inner table only
    split = 1,  // outer factor omega_n^E = ohi[E >> oS] * olo[E mod 2^oS]
    table = 2,  // outer factor omega_{2^(s_lo+k)}^e from the table olo
    exact = 3,  // no outer factor: every butterfly's own twiddle from the stagewise table olo
};

struct fpass_t {
    int L, s_lo, k, c;
    const fr_t* itw;                            // inner twiddles of this direction
    outer_mode omode;
    const fr_t *olo, *ohi;
    int oS;
    const fr_t* pre;                            // scaling at the global load (scale())
    scale_mode pre_mode;
    const fr_t* post;                           // scaling at the global store (post_op())
    scale_mode post_mode;
    const fr_t *aux1, *aux2;                    // the tables of scale_mode::h_step
    fr_t* xo;                                   // where the last round stores (x itself, or another buffer)
    int brev;                                   // store element g at bitrev_L(g) (xo != x)
};

__device__ __forceinline__ fr_t outer_twiddle(const fpass_t& p, uint32_t g) {
    const uint32_t g_low = g & ((1u << p.s_lo) - 1);
    const uint32_t f = (g >> p.s_lo) & ((1u << p.k) - 1);
    const int m = p.s_lo + p.k;
    uint32_t E = g_low * bitrev(f, p.k);  // mod 2^32, then mod 2^m (m <= 32): in units of omega_{2^m}
    if (m < 32) E &= (1u << m) - 1;
    if (p.omode == outer_mode::split) {
        E <<= (p.L - m);  // in units of omega_n
        return load_v4(p.ohi, E >> p.oS) * load_v4(p.olo, E & ((1u << p.oS) - 1));
    }
    const uint32_t half = 1u << (m - 1);
    if (E >= half) return -load_v4(p.olo, E - half);
    return load_v4(p.olo, E);
}

__device__ __forceinline__ fr_t post_op(const fpass_t& p, const fr_t& v, uint32_t g) {
    if (p.post_mode == scale_mode::h_step) return (v * load_v4(p.aux1, g) - load_v4(p.aux2, g)) * load_v4(p.post, 0);
    return scale(v, p.post, p.post_mode, g, p.L);
}

// The global side of a pass, once per element: not inlined, so that the R unrolled copies in fused_item
// share one body (a call costs far less than the product it wraps, and NVRTC builds stay small).
__device__ __forceinline__ bool has_outer(const fpass_t& p) {
    return p.omode == outer_mode::split || p.omode == outer_mode::table;
}
__device__ __noinline__ fr_t load_first(const fr_t* x, const fpass_t& p, uint32_t g, bool dit) {
    fr_t a = scale(load_v4(x, g), p.pre, p.pre_mode, g, p.L);
    if (dit && has_outer(p)) a = a * outer_twiddle(p, g);
    return a;
}
__device__ __noinline__ void store_last(const fpass_t& p, uint32_t g, fr_t a, bool dit) {
    if (!dit && has_outer(p)) a = a * outer_twiddle(p, g);
    store_v4(p.xo, p.brev ? bitrev(g, p.L) : g, post_op(p, a, g));
}
__device__ __noinline__ fr_t scale_nt(fr_t v, const fr_t* tab, scale_mode mode, uint32_t g, int L) {
    return scale(v, tab, mode, g, L);
}

// One round on one work item: R = 2^LR elements whose field bits [wlo, wlo+LR) vary, rb <= LR stages on the
// window's low bits. BOTTOM: wlo == 0 with inner twiddles (not outer_mode::exact), so every twiddle index is known at
// compile time and the trivial ones are skipped. With outer_mode::exact each butterfly loads its exact twiddle from the
// stagewise table (no outer factor: the same products as the stagewise kernel). mid: scale applied after the
// stages when the round stores to shared memory (used by the two-transform pass).
template <int LR, bool DIT, bool BOTTOM>
__device__ __forceinline__ void fused_item(fr_t* x, uint32_t* sm, uint32_t Tp, const tile_t& tl, const fpass_t& p,
                                           uint32_t t, int wlo, int rb, bool first, bool last,
                                           const fr_t* mid, scale_mode mid_mode) {
    constexpr int R = 1 << LR;
    const int c = p.c, K = p.k + p.c, w0 = c + wlo, FB = K - LR;
    // lanes -> 5 contiguous tile bits outside the window: [0, 5) if the window starts at >= 5, else just above it
    const int rot = (w0 < 5 && FB >= w0 + 5) ? w0 : 0;
    const uint32_t fbm = (FB >= 32) ? 0xffffffffu : ((1u << FB) - 1);
    const uint32_t fr = rot ? (((t << rot) | (t >> (FB - rot))) & fbm) : t;
    const uint32_t ubase = (fr & ((1u << w0) - 1)) | ((fr >> w0) << (w0 + LR));
    const uint32_t mb = (ubase >> c) & ((1u << wlo) - 1);  // field bits below the window

    fr_t v[R];
#pragma unroll
    for (int e = 0; e < R; e++) {
        const uint32_t u = ubase | ((uint32_t)e << w0);
        if (first) {
            v[e] = load_first(x, p, tl.g(u), DIT);
        } else {
            v[e] = load_s(sm, Tp, smi(u));
        }
    }
    const int sh = NTT_FUSED_MAXK - 1 - wlo;  // inner index = m << (MAXK-1-t), t = wlo + q
#pragma unroll
    for (int qi = 0; qi < LR; qi++) {
        const int q = DIT ? qi : LR - 1 - qi;
        if (q >= rb) continue;
#pragma unroll
        for (int e = 0; e < R; e++) {
            if (e & (1 << q)) continue;
            const int e2 = e | (1 << q);
            const uint32_t me = (uint32_t)(e & ((1 << q) - 1));
            const bool triv = BOTTOM && me == 0;
            fr_t w;
            if (!triv) {
                if (!BOTTOM && p.omode == outer_mode::exact) {  // omega_{2^(s+1)}^(g mod 2^s), s = s_lo + wlo + q, g of element e
                    const int s = p.s_lo + wlo + q;
                    w = load_v4(p.olo, (1u << s) + (tl.g(ubase | ((uint32_t)e << w0)) & ((1u << s) - 1)));
                } else {
                    const uint32_t m = BOTTOM ? me : (mb | (me << wlo));
                    w = load_v4(p.itw, m << (sh - q));
                }
            }
            if (DIT) {
                fr_t b = triv ? v[e2] : v[e2] * w;
                v[e2] = v[e] - b;
                v[e] = v[e] + b;
            } else {
                fr_t a = v[e], b = v[e2];
                v[e] = a + b;
                v[e2] = triv ? a - b : (a - b) * w;
            }
        }
    }
#pragma unroll
    for (int e = 0; e < R; e++) {
        const uint32_t u = ubase | ((uint32_t)e << w0);
        if (last) {
            store_last(p, tl.g(u), v[e], DIT);
        } else if (mid_mode != scale_mode::none) {
            store_s(sm, Tp, smi(u), scale_nt(v[e], mid, mid_mode, tl.g(u), p.L));
        } else {
            store_s(sm, Tp, smi(u), v[e]);
        }
    }
}

// The rounds of one sub-transform on the current tile: DIF full windows from the top, then the rest at the
// bottom; DIT the rest at the bottom first, then full windows upwards.
template <int LR, bool DIT>
__device__ __forceinline__ void fused_rounds(fr_t* x, uint32_t* sm, uint32_t Tp, const tile_t& tl, const fpass_t& p,
                                             bool load_global, bool store_global, const fr_t* mid, scale_mode mid_mode) {
    const int nfull = p.k / LR, rem = p.k % LR, nr = nfull + (rem ? 1 : 0);
    const uint32_t items = 1u << (p.k + p.c - LR);
    for (int i = 0; i < nr; i++) {
        int wlo, rb;
        if (DIT) {
            wlo = rem ? (i == 0 ? 0 : rem + LR * (i - 1)) : LR * i;
            rb = (rem && i == 0) ? rem : LR;
        } else {
            wlo = i < nfull ? p.k - LR * (i + 1) : 0;
            rb = i < nfull ? LR : rem;
        }
        const bool first = load_global && i == 0, last = store_global && i == nr - 1;
        const scale_mode mm = (i == nr - 1) ? mid_mode : scale_mode::none;
        for (uint32_t t = threadIdx.x; t < items; t += blockDim.x) {
            if (wlo == 0 && p.omode != outer_mode::exact) fused_item<LR, DIT, true>(x, sm, Tp, tl, p, t, wlo, rb, first, last, mid, mm);
            else fused_item<LR, DIT, false>(x, sm, Tp, tl, p, t, wlo, rb, first, last, mid, mm);
        }
        __syncthreads();
    }
}

__device__ __forceinline__ tile_t make_tile(const fpass_t& p, uint32_t b) { return tile_t::of(b, p.s_lo, p.k, p.c); }

template <int LR, bool DIT>
__device__ __forceinline__ void fused_pass_body(fr_t* x, const fpass_t& p, uint32_t ntiles) {
    const uint32_t T = 1u << (p.k + p.c), Tp = T + (T >> 5);
    for (uint32_t b = blockIdx.x; b < ntiles; b += gridDim.x)
        fused_rounds<LR, DIT>(x, fused_smem(), Tp, make_tile(p, b), p, true, true, nullptr, scale_mode::none);
}

#define ZK_FUSED_ARGS                                                                                        \
    fr_t *x, fr_t *xo, int brev, const fr_t *itw, outer_mode omode, const fr_t *olo, const fr_t *ohi, int oS, int L, \
        int s_lo, int k, int c, const fr_t *pre, scale_mode pre_mode, const fr_t *post, scale_mode post_mode,    \
        const fr_t *aux1, const fr_t *aux2, uint32_t ntiles
#define ZK_FUSED_PARAMS {L, s_lo, k, c, itw, omode, olo, ohi, oS, pre, pre_mode, post, post_mode, aux1, aux2, xo, brev}
#define ZK_FUSED_KERNEL(NAME, LR, DIT)                                                            \
    __global__ void __launch_bounds__(NTT_FUSED_THREADS, NTT_FUSED_MIN_BLOCKS) NAME(ZK_FUSED_ARGS) { \
        const fpass_t p = ZK_FUSED_PARAMS;                                                        \
        fused_pass_body<LR, DIT>(x, p, ntiles);                                                   \
    }

extern "C" {
// One pass of the fused algorithm: the k stages of the field bits [s_lo, s_lo+k) on tiles of 2^(k+c)
// elements (grid-stride over the ntiles = n / 2^(k+c) tiles; the host launches one block per tile),
// NTT_FUSED_R = 2^LR elements per thread (LR <= k), blockDim <= NTT_FUSED_THREADS, dynamic shared memory
// 32 * (T + T/32) bytes. Reads x, writes xo (x itself, or with brev another buffer, element g going to
// bitrev_L(g): the last DIF pass of an "nn" transform, which then needs no bit-reversal pass).
// omode/olo/ohi/oS: the outer twiddles (outer_mode::none when s_lo = 0). pre/post: the scalings of
// scale_mode (post scale_mode::h_step: (v * aux1[g] - aux2[g]) * post[0], the Groth16 H pointwise step).
ZK_FUSED_KERNEL(ntt_fused_dif, NTT_FUSED_LR, false)
ZK_FUSED_KERNEL(ntt_fused_dit, NTT_FUSED_LR, true)

// Two transforms in one pass on the low k bits (s_lo = c = 0, so no outer twiddles): the inverse DIF
// sub-transform with the inverse inner table itw, then mid[bitrev_L(g)] (scale_mode::bitrev) at position g, then
// the forward DIT sub-transform with itw2. This is the last pass of an inverse NTT "nr" fused with the
// first pass of a coset NTT "rn" (mid = g^i / n), the middle of the Groth16 H computation.
#define ZK_FUSED2_KERNEL(NAME, LR)                                                                          \
    __global__ void __launch_bounds__(NTT_FUSED_THREADS, NTT_FUSED_MIN_BLOCKS)                                \
    NAME(fr_t* x, const fr_t* itw, const fr_t* itw2, const fr_t* mid, int L, int k, uint32_t ntiles) {         \
        fpass_t p = {L, 0, k, 0, itw, outer_mode::none, nullptr, nullptr, 0, nullptr, scale_mode::none,        \
                     nullptr, scale_mode::none, nullptr, nullptr, x, 0};                                       \
        const uint32_t T = 1u << k, Tp = T + (T >> 5);                                                          \
        for (uint32_t b = blockIdx.x; b < ntiles; b += gridDim.x) {                                             \
            const tile_t tl = make_tile(p, b);                                                                  \
            p.itw = itw;                                                                                        \
            fused_rounds<LR, false>(x, fused_smem(), Tp, tl, p, true, false, mid, scale_mode::bitrev);                            \
            p.itw = itw2;                                                                                       \
            fused_rounds<LR, true>(x, fused_smem(), Tp, tl, p, false, true, nullptr, scale_mode::none);                         \
        }                                                                                                       \
    }
ZK_FUSED2_KERNEL(ntt_fused2, NTT_FUSED_LR)
}  // extern "C"
