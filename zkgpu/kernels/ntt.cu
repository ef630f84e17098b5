// zkgpu: radix-2 NTT over BLS12-381 Fr, several stages per launch in shared memory.
//
// Layout: n = 2^L elements, 8 x uint32 limbs each (32 bytes), Montgomery form, in place.
//
// Butterflies (both use the SAME twiddle, w = omega_{2h}^(j mod h), h = 2^s, for the pair (j, j+h)):
//   DIF, Gentleman-Sande (natural -> bit-reversed), stages s = L-1 .. 0:
//       (a, b) -> (a + b, (a - b) * w)
//   DIT, Cooley-Tukey (bit-reversed -> natural), stages s = 0 .. L-1:
//       (a, b) -> (a + b*w, a - b*w)
// Twiddle table: tw[h + t] = omega_{2h}^t for h = 1, 2, 4, .., n/2 and t < h (n entries, tw[0] unused),
// built on the GPU by ntt_build_twiddles from two small host tables (omega^e = hi[e>>S] * lo[e&mask]).
//
// One launch of ntt_pass does k consecutive stages (global index bits [s_lo, s_lo+k)) for a tile of
// 2^(k+c) elements: the k stage bits plus the c lowest index bits (c = 0 when s_lo = 0), so each
// block reads runs of 2^c adjacent elements (coalesced), as in the radix-2^k passes of sppark's
// ntt/kernels and the "several stages in shared memory" scheme of Govindaraju et al., "High
// performance discrete Fourier transforms on graphics processors", SC'08. At 2^24 this is three
// passes of 8 stages over global memory.
//
// Pointwise scalings fused into the first pass's load (pre) and the last pass's store (post):
//   mode 0: none; 1: x[g] *= tab[g]; 2: x[g] *= tab[bitrev_L(g)]; 3: x[g] *= tab[0].
// The host uses them for the coset shift g^i (pre), and for 1/n or g^-i/n of the inverse (post).
#define ZK_FF_PTX_DEFAULT 1
#if defined(ZK_NTT_PTX) ? ZK_NTT_PTX : ZK_FF_PTX_DEFAULT
#define ZK_FF_PTX 1
#endif
#include "fr.cuh"

using zk::fr_t;

#define NTT_MAX_TILE_LOG 10  // 1024 elements = 32 KiB of shared memory per block
#ifndef NTT_THREADS
#define NTT_THREADS 256  // threads per block (the host reads this value from ntt.py's _THREADS)
#endif
#ifndef NTT_MIN_BLOCKS
#define NTT_MIN_BLOCKS 4  // 4 x 256 threads per SM: caps registers at 64 per thread
#endif
#ifndef NTT_R4_MIN_BLOCKS
#define NTT_R4_MIN_BLOCKS 2
#endif

__device__ __forceinline__ uint32_t bitrev(uint32_t i, int L) { return L == 0 ? 0u : (__brev(i) >> (32 - L)); }

__device__ __forceinline__ fr_t load_g(const uint32_t* x, uint64_t i) {
    const uint4* p = reinterpret_cast<const uint4*>(x + 8 * i);
    uint4 u0 = p[0], u1 = p[1];
    fr_t r;
    r.v[0] = u0.x; r.v[1] = u0.y; r.v[2] = u0.z; r.v[3] = u0.w;
    r.v[4] = u1.x; r.v[5] = u1.y; r.v[6] = u1.z; r.v[7] = u1.w;
    return r;
}
__device__ __forceinline__ void store_g(uint32_t* x, uint64_t i, const fr_t& r) {
    uint4* p = reinterpret_cast<uint4*>(x + 8 * i);
    p[0] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
    p[1] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}
// Shared memory is limb-major (sm[limb * T + u]) so that consecutive elements fall in consecutive banks.
__device__ __forceinline__ fr_t load_s(const uint32_t* sm, uint32_t T, uint32_t u) {
    fr_t r;
#pragma unroll
    for (int i = 0; i < 8; i++) r.v[i] = sm[i * T + u];
    return r;
}
__device__ __forceinline__ void store_s(uint32_t* sm, uint32_t T, uint32_t u, const fr_t& r) {
#pragma unroll
    for (int i = 0; i < 8; i++) sm[i * T + u] = r.v[i];
}
__device__ __forceinline__ fr_t scale(const fr_t& x, const uint32_t* tab, int mode, uint32_t g, int L) {
    if (mode == 0) return x;
    uint32_t idx = mode == 1 ? g : (mode == 2 ? bitrev(g, L) : 0u);
    return x * load_g(tab, idx);
}

// The tile of a pass: tile element u <-> global index g(u) (see the file comment).
struct tile_t {
    uint32_t base, cmask;
    int c, s_lo;
    __device__ __forceinline__ uint32_t g(uint32_t u) const { return base | (u & cmask) | ((u >> c) << s_lo); }
};

// omega_{2h}^(g mod h), h = 2^s.
__device__ __forceinline__ fr_t twiddle(const uint32_t* tw, int s, uint32_t g) {
    const uint32_t h = 1u << s;
    return load_g(tw, h + (g & (h - 1)));
}

// One radix-2 stage: global bit s, tile bit lb. At s = 0 every twiddle is 1 (no multiply).
template <bool DIT>
__device__ __forceinline__ void stage_r2(uint32_t* sm, uint32_t T, const tile_t& tl, const uint32_t* tw, int s, int lb) {
    const uint32_t hl = 1u << lb;
    for (uint32_t tid = threadIdx.x; tid < (T >> 1); tid += blockDim.x) {
        const uint32_t j = (tid & (hl - 1)) | ((tid >> lb) << (lb + 1));
        fr_t a = load_s(sm, T, j), b = load_s(sm, T, j + hl);
        if (s == 0) {
            store_s(sm, T, j, a + b);
            store_s(sm, T, j + hl, a - b);
        } else if (DIT) {
            b = b * twiddle(tw, s, tl.g(j));
            store_s(sm, T, j, a + b);
            store_s(sm, T, j + hl, a - b);
        } else {
            store_s(sm, T, j, a + b);
            store_s(sm, T, j + hl, (a - b) * twiddle(tw, s, tl.g(j)));
        }
    }
}

// Two stages in registers (global bits s and s+1, tile bits lb and lb+1) on quads
// x0 = j0, x1 = j0 + 2^lb, x2 = j0 + 2^(lb+1), x3 = j0 + 2^lb + 2^(lb+1).
// DIF: stage s+1 on (x0,x2),(x1,x3), then stage s on (x0,x1),(x2,x3); DIT the other way round.
template <bool DIT>
__device__ __forceinline__ void stage_r4(uint32_t* sm, uint32_t T, const tile_t& tl, const uint32_t* tw, int s, int lb) {
    const uint32_t h1 = 1u << lb, h2 = 2u << lb;
    for (uint32_t tid = threadIdx.x; tid < (T >> 2); tid += blockDim.x) {
        const uint32_t j0 = (tid & (h1 - 1)) | ((tid >> lb) << (lb + 2));
        const uint32_t g0 = tl.g(j0), g1 = tl.g(j0 + h1);
        fr_t x0 = load_s(sm, T, j0), x1 = load_s(sm, T, j0 + h1);
        fr_t x2 = load_s(sm, T, j0 + h2), x3 = load_s(sm, T, j0 + h1 + h2);
        if (!DIT) {
            fr_t y0 = x0 + x2, y1 = x1 + x3;
            fr_t y2 = (x0 - x2) * twiddle(tw, s + 1, g0);
            fr_t y3 = (x1 - x3) * twiddle(tw, s + 1, g1);
            if (s == 0) {
                x0 = y0 + y1; x1 = y0 - y1; x2 = y2 + y3; x3 = y2 - y3;
            } else {
                const fr_t w = twiddle(tw, s, g0);
                x0 = y0 + y1; x1 = (y0 - y1) * w; x2 = y2 + y3; x3 = (y2 - y3) * w;
            }
        } else {
            fr_t y0, y1, y2, y3;
            if (s == 0) {
                y0 = x0 + x1; y1 = x0 - x1; y2 = x2 + x3; y3 = x2 - x3;
            } else {
                const fr_t w = twiddle(tw, s, g0);
                fr_t b = x1 * w;
                y0 = x0 + b; y1 = x0 - b;
                b = x3 * w;
                y2 = x2 + b; y3 = x2 - b;
            }
            fr_t b = y2 * twiddle(tw, s + 1, g0);
            x0 = y0 + b; x2 = y0 - b;
            b = y3 * twiddle(tw, s + 1, g1);
            x1 = y1 + b; x3 = y1 - b;
        }
        store_s(sm, T, j0, x0);
        store_s(sm, T, j0 + h1, x1);
        store_s(sm, T, j0 + h2, x2);
        store_s(sm, T, j0 + h1 + h2, x3);
    }
}

template <bool R4>
__device__ __forceinline__ void pass_body(uint32_t* x, const uint32_t* tw, int L, int s_lo, int k, int c, int dit,
                                          const uint32_t* pre, int pre_mode, const uint32_t* post, int post_mode) {
    extern __shared__ uint32_t sm[];
    const uint32_t T = 1u << (k + c);
    const uint32_t b = blockIdx.x;
    const int midbits = s_lo - c;
    tile_t tl;
    tl.base = ((b & ((1u << midbits) - 1)) << c) | ((b >> midbits) << (s_lo + k));
    tl.cmask = (1u << c) - 1;
    tl.c = c;
    tl.s_lo = s_lo;

    for (uint32_t u = threadIdx.x; u < T; u += blockDim.x) {
        const uint32_t g = tl.g(u);
        store_s(sm, T, u, scale(load_g(x, g), pre, pre_mode, g, L));
    }
    __syncthreads();

    if (dit) {
        int q = 0;
        for (; R4 && q + 2 <= k; q += 2) {  // stages s_lo+q, s_lo+q+1
            stage_r4<true>(sm, T, tl, tw, s_lo + q, c + q);
            __syncthreads();
        }
        for (; q < k; q++) {
            stage_r2<true>(sm, T, tl, tw, s_lo + q, c + q);
            __syncthreads();
        }
    } else {
        int q = k;  // stages below s_lo+q remain
        for (; R4 && q >= 2; q -= 2) {  // stages s_lo+q-1, s_lo+q-2
            stage_r4<false>(sm, T, tl, tw, s_lo + q - 2, c + q - 2);
            __syncthreads();
        }
        for (; q > 0; q--) {
            stage_r2<false>(sm, T, tl, tw, s_lo + q - 1, c + q - 1);
            __syncthreads();
        }
    }

    for (uint32_t u = threadIdx.x; u < T; u += blockDim.x) {
        const uint32_t g = tl.g(u);
        store_g(x, g, scale(load_s(sm, T, u), post, post_mode, g, L));
    }
}

extern "C" {

// k stages (bits [s_lo, s_lo+k)) on tiles of T = 2^(k+c) elements; grid = n/T, any blockDim (the host
// uses min(T/2, NTT_THREADS), or T/4 for ntt_pass_r4), dynamic shared memory = 32*T bytes.
// dit = 0: DIF stages from high to low; dit = 1: DIT, low to high. ntt_pass does one radix-2 stage per
// shared-memory round trip; ntt_pass_r4 does two (radix-4 in registers), then a radix-2 stage if k is odd.
__global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS)
ntt_pass(uint32_t* x, const uint32_t* tw, int L, int s_lo, int k, int c, int dit,
         const uint32_t* pre, int pre_mode, const uint32_t* post, int post_mode) {
    pass_body<false>(x, tw, L, s_lo, k, c, dit, pre, pre_mode, post, post_mode);
}
__global__ void __launch_bounds__(NTT_THREADS, NTT_R4_MIN_BLOCKS)
ntt_pass_r4(uint32_t* x, const uint32_t* tw, int L, int s_lo, int k, int c, int dit,
            const uint32_t* pre, int pre_mode, const uint32_t* post, int post_mode) {
    pass_body<true>(x, tw, L, s_lo, k, c, dit, pre, pre_mode, post, post_mode);
}

// tw[i] for 1 <= i < n: i = h + t (h the top bit of i) -> omega_n^(t * n/(2h)) = hi[e >> S] * lo[e & (2^S-1)].
// lo[j] = omega^j (j < 2^S), hi[j] = omega^(j*2^S), both Montgomery. tw[0] = 1.
__global__ void ntt_build_twiddles(uint32_t* tw, const uint32_t* lo, const uint32_t* hi, int L, int S, uint64_t n) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        if (i == 0) {
            store_g(tw, 0, fr_t::one());
            continue;
        }
        const int lh = 31 - __clz((uint32_t)i);
        const uint32_t t = (uint32_t)i - (1u << lh);
        const uint32_t e = t << (L - 1 - lh);
        store_g(tw, i, load_g(hi, e >> S) * load_g(lo, e & ((1u << S) - 1)));
    }
}

// out[i] = hi[i >> S] * lo[i & (2^S-1)] for i < n (powers of one element, possibly times a constant
// folded into hi by the host).
__global__ void ntt_build_powers(uint32_t* out, const uint32_t* lo, const uint32_t* hi, int S, uint64_t n) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        store_g(out, i, load_g(hi, i >> S) * load_g(lo, i & ((1u << S) - 1)));
    }
}

// In-place bit-reversal permutation for L >= 2*NTT_BR_Q, by tiles: write i = (hi, mid, lo) with q-bit hi
// and lo; bitrev(i) = (rev lo, rev mid, rev hi). Block `mid` (with mid <= rev mid) loads the 2^q x 2^q
// elements (hi, mid, lo) and (hi, rev mid, lo) -- runs of 2^q adjacent elements -- and writes each
// tile to the other row transposed, again in runs of 2^q. blockDim = 2^(2q) = 256, grid = 2^(L-2q).
#define NTT_BR_Q 4
__global__ void __launch_bounds__(256) ntt_bitrev_tiled(uint32_t* x, int L) {
    __shared__ uint32_t sa[8 * 256], sb[8 * 256];
    const int q = NTT_BR_Q;
    const uint32_t mid = blockIdx.x;
    const uint32_t rmid = bitrev(mid, L - 2 * q);
    if (mid > rmid) return;
    const uint32_t tid = threadIdx.x, hi = tid >> q, lo = tid & ((1u << q) - 1);
    const uint32_t i_a = (hi << (L - q)) | (mid << q) | lo;   // row mid
    const uint32_t i_b = (hi << (L - q)) | (rmid << q) | lo;  // row rev(mid)
    store_s(sa, 256, tid, load_g(x, i_a));
    if (mid != rmid) store_s(sb, 256, tid, load_g(x, i_b));
    __syncthreads();
    // position (hi, m, lo) receives the old element (rev lo, rev m, rev hi)
    const uint32_t src = (bitrev(lo, q) << q) | bitrev(hi, q);
    if (mid != rmid) {
        store_g(x, i_b, load_s(sa, 256, src));
        store_g(x, i_a, load_s(sb, 256, src));
    } else {
        store_g(x, i_a, load_s(sa, 256, src));
    }
}

// In-place bit-reversal permutation of n = 2^L elements (any L; used for small L).
__global__ void ntt_bitrev(uint32_t* x, int L, uint64_t n) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t r = bitrev((uint32_t)i, L);
        if (i < r) {
            fr_t a = load_g(x, i), b = load_g(x, r);
            store_g(x, i, b);
            store_g(x, r, a);
        }
    }
}

}  // extern "C"

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
// L1-resident); outer twiddles omega_n^E from two small tables (E = hi * 2^S + lo: one extra product) or from
// a table of omega_n^e, e < n/2 (one load, a negation for E >= n/2).
//
// Inside a pass each thread holds R = 2^LR elements of the tile (2^(k+c) elements: the k field bits and c
// column bits, as in ntt_pass) whose field bits form a window of LR bits, and does up to LR stages in
// registers; the tile goes through shared memory only between such rounds (k = 8, LR = 3: 3 rounds, 2
// exchanges). The first round reads global memory and the last writes it, so a pass reads and writes each
// element once. Shared memory is limb-major with one padding word per 32 elements; the 32 lanes of a warp
// are given 5 contiguous tile bits (bank-conflict-free with that padding).
// =====================================================================================================
#ifndef NTT_FUSED_MAXK
#define NTT_FUSED_MAXK 10  // the largest k of a pass (the inner table has 2^(MAXK-1) entries)
#endif
#ifndef NTT_FUSED_THREADS
#define NTT_FUSED_THREADS 128
#endif
#ifndef NTT_FUSED_MIN_BLOCKS
#define NTT_FUSED_MIN_BLOCKS 4
#endif

__device__ __forceinline__ uint32_t smi(uint32_t u) { return u + (u >> 5); }

struct fpass_t {
    int L, s_lo, k, c;
    const uint32_t* itw;                        // inner twiddles of this direction
    int omode;                                  // outer twiddles: 0 none, 1 split tables (olo, ohi, oS), 2 half table olo
    const uint32_t *olo, *ohi;
    int oS;
    const uint32_t* pre;                        // scaling at the global load (modes of scale())
    int pre_mode;
    const uint32_t* post;                       // scaling at the global store; mode 4: (v * aux1 - aux2) * post[0]
    int post_mode;
    const uint32_t *aux1, *aux2;
};

__device__ __forceinline__ fr_t outer_twiddle(const fpass_t& p, uint32_t g) {
    const uint32_t g_low = g & ((1u << p.s_lo) - 1);
    const uint32_t f = (g >> p.s_lo) & ((1u << p.k) - 1);
    const int m = p.s_lo + p.k;
    uint32_t E = g_low * bitrev(f, p.k);  // mod 2^32, then mod 2^m (m <= 32)
    if (m < 32) E &= (1u << m) - 1;
    E <<= (p.L - m);                      // in units of omega_n
    if (p.omode == 1) return load_g(p.ohi, E >> p.oS) * load_g(p.olo, E & ((1u << p.oS) - 1));
    const uint32_t half = 1u << (p.L - 1);
    if (E >= half) return -load_g(p.olo, E - half);
    return load_g(p.olo, E);
}

__device__ __forceinline__ fr_t post_op(const fpass_t& p, const fr_t& v, uint32_t g) {
    if (p.post_mode == 4) return (v * load_g(p.aux1, g) - load_g(p.aux2, g)) * load_g(p.post, 0);
    return scale(v, p.post, p.post_mode, g, p.L);
}

// One round on one work item: R = 2^LR elements whose field bits [wlo, wlo+LR) vary, rb <= LR stages on the
// window's low bits. BOTTOM: wlo == 0, so every inner twiddle index is known at compile time (and the
// trivial ones are skipped). mid: scale applied after the stages when the round stores to shared memory
// (used by the two-transform pass).
template <int LR, bool DIT, bool BOTTOM>
__device__ __forceinline__ void fused_item(uint32_t* x, uint32_t* sm, uint32_t Tp, const tile_t& tl, const fpass_t& p,
                                           uint32_t t, int wlo, int rb, bool first, bool last,
                                           const uint32_t* mid, int mid_mode) {
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
            const uint32_t g = tl.g(u);
            fr_t a = scale(load_g(x, g), p.pre, p.pre_mode, g, p.L);
            if (DIT && p.omode) a = a * outer_twiddle(p, g);
            v[e] = a;
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
                const uint32_t m = BOTTOM ? me : (mb | (me << wlo));
                w = load_g(p.itw, m << (sh - q));
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
            const uint32_t g = tl.g(u);
            fr_t a = v[e];
            if (!DIT && p.omode) a = a * outer_twiddle(p, g);
            store_g(x, g, post_op(p, a, g));
        } else {
            fr_t a = v[e];
            if (mid_mode) a = scale(a, mid, mid_mode, tl.g(u), p.L);
            store_s(sm, Tp, smi(u), a);
        }
    }
}

// The rounds of one sub-transform on the current tile: DIF full windows from the top, then the rest at the
// bottom; DIT the rest at the bottom first, then full windows upwards.
template <int LR, bool DIT>
__device__ __forceinline__ void fused_rounds(uint32_t* x, uint32_t* sm, uint32_t Tp, const tile_t& tl, const fpass_t& p,
                                             bool load_global, bool store_global, const uint32_t* mid, int mid_mode) {
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
        const int mm = (i == nr - 1) ? mid_mode : 0;
        for (uint32_t t = threadIdx.x; t < items; t += blockDim.x) {
            if (wlo == 0) fused_item<LR, DIT, true>(x, sm, Tp, tl, p, t, wlo, rb, first, last, mid, mm);
            else fused_item<LR, DIT, false>(x, sm, Tp, tl, p, t, wlo, rb, first, last, mid, mm);
        }
        __syncthreads();
    }
}

__device__ __forceinline__ tile_t make_tile(const fpass_t& p, uint32_t b) {
    const int midbits = p.s_lo - p.c;
    tile_t tl;
    tl.base = ((b & ((1u << midbits) - 1)) << p.c) | ((b >> midbits) << (p.s_lo + p.k));
    tl.cmask = (1u << p.c) - 1;
    tl.c = p.c;
    tl.s_lo = p.s_lo;
    return tl;
}

template <int LR, bool DIT>
__device__ __forceinline__ void fused_pass_body(uint32_t* x, const fpass_t& p, uint32_t ntiles) {
    extern __shared__ uint32_t zk_ntt_smem[];
    const uint32_t T = 1u << (p.k + p.c), Tp = T + (T >> 5);
    for (uint32_t b = blockIdx.x; b < ntiles; b += gridDim.x)
        fused_rounds<LR, DIT>(x, zk_ntt_smem, Tp, make_tile(p, b), p, true, true, nullptr, 0);
}

#define ZK_FUSED_ARGS                                                                                          \
    uint32_t *x, const uint32_t *itw, int omode, const uint32_t *olo, const uint32_t *ohi, int oS, int L, int s_lo, \
        int k, int c, const uint32_t *pre, int pre_mode, const uint32_t *post, int post_mode, const uint32_t *aux1, \
        const uint32_t *aux2, uint32_t ntiles
#define ZK_FUSED_PARAMS {L, s_lo, k, c, itw, omode, olo, ohi, oS, pre, pre_mode, post, post_mode, aux1, aux2}
#define ZK_FUSED_KERNEL(NAME, LR, DIT)                                                            \
    __global__ void __launch_bounds__(NTT_FUSED_THREADS, NTT_FUSED_MIN_BLOCKS) NAME(ZK_FUSED_ARGS) { \
        const fpass_t p = ZK_FUSED_PARAMS;                                                        \
        fused_pass_body<LR, DIT>(x, p, ntiles);                                                   \
    }

extern "C" {
// One pass of the fused algorithm: the k stages of the field bits [s_lo, s_lo+k) on tiles of 2^(k+c)
// elements (grid-stride over the ntiles = n / 2^(k+c) tiles; the host launches one block per tile),
// 2^LR elements per thread (LR <= k), blockDim <= NTT_FUSED_THREADS, dynamic shared memory
// 32 * (T + T/32) bytes. omode/olo/ohi/oS: the outer twiddles (0 when s_lo = 0). pre/post: the scalings
// of scale() (post mode 4: (v * aux1[g] - aux2[g]) * post[0], the Groth16 H pointwise step).
ZK_FUSED_KERNEL(ntt_fused_dif_r2, 1, false)
ZK_FUSED_KERNEL(ntt_fused_dit_r2, 1, true)
ZK_FUSED_KERNEL(ntt_fused_dif_r4, 2, false)
ZK_FUSED_KERNEL(ntt_fused_dit_r4, 2, true)
ZK_FUSED_KERNEL(ntt_fused_dif_r8, 3, false)
ZK_FUSED_KERNEL(ntt_fused_dit_r8, 3, true)

// Two transforms in one pass on the low k bits (s_lo = c = 0, so no outer twiddles): the inverse DIF
// sub-transform with the inverse inner table itw, then mid[bitrev_L(g)] (mid_mode 2) at position g, then
// the forward DIT sub-transform with itw2. This is the last pass of an inverse NTT "nr" fused with the
// first pass of a coset NTT "rn" (mid = g^i / n), the middle of the Groth16 H computation.
#define ZK_FUSED2_KERNEL(NAME, LR)                                                                          \
    __global__ void __launch_bounds__(NTT_FUSED_THREADS, NTT_FUSED_MIN_BLOCKS)                                \
    NAME(uint32_t* x, const uint32_t* itw, const uint32_t* itw2, const uint32_t* mid, int L, int k, uint32_t ntiles) { \
        extern __shared__ uint32_t zk_ntt_smem[];                                                              \
        fpass_t p = {L, 0, k, 0, itw, 0, nullptr, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, nullptr};      \
        const uint32_t T = 1u << k, Tp = T + (T >> 5);                                                          \
        for (uint32_t b = blockIdx.x; b < ntiles; b += gridDim.x) {                                             \
            const tile_t tl = make_tile(p, b);                                                                  \
            p.itw = itw;                                                                                        \
            fused_rounds<LR, false>(x, zk_ntt_smem, Tp, tl, p, true, false, mid, 2);                            \
            p.itw = itw2;                                                                                       \
            fused_rounds<LR, true>(x, zk_ntt_smem, Tp, tl, p, false, true, nullptr, 0);                         \
        }                                                                                                       \
    }
ZK_FUSED2_KERNEL(ntt_fused2_r2, 1)
ZK_FUSED2_KERNEL(ntt_fused2_r4, 2)
ZK_FUSED2_KERNEL(ntt_fused2_r8, 3)
}  // extern "C"
