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
// The butterflies' additions and the DIF difference-times-twiddle are ntt_common.cuh's bf_add, bf_sub and
// bf_dif_mul (-DZK_NTT_ASM=1: asm carry chains; -DZK_NTT_LAZY=1: the difference unreduced into the product).
//
// Pointwise scalings fused into the first pass's load (pre) and the last pass's store (post), scale_mode
// (ntt_common.cuh): none, natural x[g] *= tab[g], bitrev x[g] *= tab[bitrev_L(g)], constant x[g] *= tab[0].
// The host uses them for the coset shift g^i (pre), and for 1/n or g^-i/n of the inverse (post).
//
// zkgpu/ntt.py reads NTT_MAX_TILE_LOG, NTT_THREADS, NTT_BR_Q and NTT_SMEM_TW from this file (common.cuh says how);
// it passes -DNTT_THREADS=... only where its build options set another value.
// The default build (issue 13; notes/ntt-kernels.md, run k13-ntt): the butterflies' additions as non-volatile asm
// chains (ZK_NTT_ASM), each pass's twiddles in shared memory (NTT_SMEM_TW), 3 blocks per SM (NTT_MIN_BLOCKS).
#ifndef ZK_NTT_PTX
#define ZK_NTT_PTX 0
#endif
#ifndef ZK_NTT_ASM
#define ZK_NTT_ASM 1
#endif
#include "ntt_common.cuh"

#define NTT_MAX_TILE_LOG 10  // the largest tile of a pass, log2: 1024 elements = 32 KiB of shared memory
#ifndef NTT_THREADS
#define NTT_THREADS 256  // the most threads per block
#endif
#ifndef NTT_MIN_BLOCKS
#define NTT_MIN_BLOCKS 3  // 3 x 256 threads per SM (the shared memory of 3 tiles and their twiddles): 85 registers
#endif
#ifndef NTT_R4_MIN_BLOCKS
#define NTT_R4_MIN_BLOCKS 2
#endif

#ifndef NTT_SMEM_TW
#define NTT_SMEM_TW 1  // 1: a pass first copies its tile's twiddles into shared memory (load_pass_twiddles)
#endif

// omega_{2h}^(g mod h), h = 2^s.
__device__ __forceinline__ fr_t twiddle(const fr_t* tw, int s, uint32_t g) {
    const uint32_t h = 1u << s;
    return load_v4(tw, h + (g & (h - 1)));
}

// The twiddles of a pass (NTT_SMEM_TW=1). At local stage q (global s = s_lo + q, tile bit c + q) the twiddle of
// tile element j depends only on u = j mod 2^(c+q) (the column bits and the stage bits below q; the block's base
// bits are fixed), so the tile needs 2^(c+q) of them per stage, 2^c * (2^k - 1) < T in all. They are copied once
// per pass, with the data, into a second shared-memory area of T elements (stage q's at 2^c * (2^q - 1) + u):
// every global load of the pass is issued up front instead of one table load per butterfly and stage, and each
// twiddle is read from global memory once per block instead of once per butterfly.
struct pass_tw_t {
    const fr_t* tw;
    const uint32_t* smt;  // the shared copy (NTT_SMEM_TW=1)
    uint32_t T;
    int s_lo, c;
    __device__ __forceinline__ fr_t at(int s, const tile_t& tl, uint32_t j) const {
#if NTT_SMEM_TW
        const int q = s - s_lo;
        return load_s(smt, T, (((1u << q) - 1) << c) + (j & ((1u << (c + q)) - 1)));
#else
        return twiddle(tw, s, tl.g(j));
#endif
    }
};
__device__ __forceinline__ void load_pass_twiddles(uint32_t* smt, uint32_t T, const tile_t& tl, const fr_t* tw,
                                                   int s_lo, int k, int c) {
    const uint32_t count = ((1u << k) - 1) << c;
    for (uint32_t v = threadIdx.x; v < count; v += blockDim.x) {
        const int q = 31 - __clz((v >> c) + 1);
        const uint32_t u = v - (((1u << q) - 1) << c);
        store_s(smt, T, v, twiddle(tw, s_lo + q, tl.g(u)));
    }
}

// The butterfly (j, j + 2^lb) of a radix-2 stage on (a, b) in registers.
template <bool DIT>
__device__ __forceinline__ void butterfly_r2(fr_t& a, fr_t& b, const tile_t& tl, const pass_tw_t& tw, int s, uint32_t j) {
    if (s == 0) {
        const fr_t t = bf_add(a, b);
        b = bf_sub(a, b);
        a = t;
    } else if (DIT) {
        const fr_t bw = b * tw.at(s, tl, j);
        b = bf_sub(a, bw);
        a = bf_add(a, bw);
    } else {
        const fr_t t = bf_add(a, b);
        b = bf_dif_mul(tw.at(s, tl, j), a, b);
        a = t;
    }
}

// One radix-2 stage: global bit s, tile bit lb. At s = 0 every twiddle is 1 (no multiply). NTT_ILP=2: a thread
// loads two butterflies (tid and tid + blockDim) before computing either, so their products can interleave
// (the shared-memory stores of one would otherwise have to precede the loads of the next).
#ifndef NTT_ILP
#define NTT_ILP 1
#endif
template <bool DIT>
__device__ __forceinline__ void stage_r2(uint32_t* sm, uint32_t T, const tile_t& tl, const pass_tw_t& tw, int s, int lb) {
    const uint32_t hl = 1u << lb;
#if NTT_ILP == 2
    for (uint32_t tid = threadIdx.x; tid < (T >> 1); tid += 2 * blockDim.x) {
        const uint32_t tid2 = tid + blockDim.x;
        const bool two = tid2 < (T >> 1);
        const uint32_t j = (tid & (hl - 1)) | ((tid >> lb) << (lb + 1));
        const uint32_t j2 = (tid2 & (hl - 1)) | ((tid2 >> lb) << (lb + 1));
        fr_t a = load_s(sm, T, j), b = load_s(sm, T, j + hl), a2, b2;
        if (two) {
            a2 = load_s(sm, T, j2);
            b2 = load_s(sm, T, j2 + hl);
        }
        butterfly_r2<DIT>(a, b, tl, tw, s, j);
        if (two) butterfly_r2<DIT>(a2, b2, tl, tw, s, j2);
        store_s(sm, T, j, a);
        store_s(sm, T, j + hl, b);
        if (two) {
            store_s(sm, T, j2, a2);
            store_s(sm, T, j2 + hl, b2);
        }
    }
#else
    for (uint32_t tid = threadIdx.x; tid < (T >> 1); tid += blockDim.x) {
        const uint32_t j = (tid & (hl - 1)) | ((tid >> lb) << (lb + 1));
        fr_t a = load_s(sm, T, j), b = load_s(sm, T, j + hl);
        butterfly_r2<DIT>(a, b, tl, tw, s, j);
        store_s(sm, T, j, a);
        store_s(sm, T, j + hl, b);
    }
#endif
}

// Two stages in registers (global bits s and s+1, tile bits lb and lb+1) on quads
// x0 = j0, x1 = j0 + 2^lb, x2 = j0 + 2^(lb+1), x3 = j0 + 2^lb + 2^(lb+1).
// DIF: stage s+1 on (x0,x2),(x1,x3), then stage s on (x0,x1),(x2,x3); DIT the other way round.
template <bool DIT>
__device__ __forceinline__ void stage_r4(uint32_t* sm, uint32_t T, const tile_t& tl, const pass_tw_t& tw, int s, int lb) {
    const uint32_t h1 = 1u << lb, h2 = 2u << lb;
    for (uint32_t tid = threadIdx.x; tid < (T >> 2); tid += blockDim.x) {
        const uint32_t j0 = (tid & (h1 - 1)) | ((tid >> lb) << (lb + 2));
        const uint32_t g0 = j0, g1 = j0 + h1;  // tile indexes of the twiddles (pass_tw_t::at)
        fr_t x0 = load_s(sm, T, j0), x1 = load_s(sm, T, j0 + h1);
        fr_t x2 = load_s(sm, T, j0 + h2), x3 = load_s(sm, T, j0 + h1 + h2);
        if (!DIT) {
            fr_t y0 = bf_add(x0, x2), y1 = bf_add(x1, x3);
            fr_t y2 = bf_dif_mul(tw.at(s + 1, tl, g0), x0, x2);
            fr_t y3 = bf_dif_mul(tw.at(s + 1, tl, g1), x1, x3);
            if (s == 0) {
                x0 = bf_add(y0, y1); x1 = bf_sub(y0, y1); x2 = bf_add(y2, y3); x3 = bf_sub(y2, y3);
            } else {
                const fr_t w = tw.at(s, tl, g0);
                x0 = bf_add(y0, y1); x1 = bf_dif_mul(w, y0, y1); x2 = bf_add(y2, y3); x3 = bf_dif_mul(w, y2, y3);
            }
        } else {
            fr_t y0, y1, y2, y3;
            if (s == 0) {
                y0 = bf_add(x0, x1); y1 = bf_sub(x0, x1); y2 = bf_add(x2, x3); y3 = bf_sub(x2, x3);
            } else {
                const fr_t w = tw.at(s, tl, g0);
                fr_t b = x1 * w;
                y0 = bf_add(x0, b); y1 = bf_sub(x0, b);
                b = x3 * w;
                y2 = bf_add(x2, b); y3 = bf_sub(x2, b);
            }
            fr_t b = y2 * tw.at(s + 1, tl, g0);
            x0 = bf_add(y0, b); x2 = bf_sub(y0, b);
            b = y3 * tw.at(s + 1, tl, g1);
            x1 = bf_add(y1, b); x3 = bf_sub(y1, b);
        }
        store_s(sm, T, j0, x0);
        store_s(sm, T, j0 + h1, x1);
        store_s(sm, T, j0 + h2, x2);
        store_s(sm, T, j0 + h1 + h2, x3);
    }
}

template <bool R4>
__device__ __forceinline__ void pass_body(fr_t* x, const fr_t* tw, int L, int s_lo, int k, int c, ntt_order order,
                                          const fr_t* pre, scale_mode pre_mode, const fr_t* post, scale_mode post_mode) {
    extern __shared__ uint32_t sm[];
    const uint32_t T = 1u << (k + c);
    const tile_t tl = tile_t::of(blockIdx.x, s_lo, k, c);
    const pass_tw_t ptw{tw, sm + 8 * T, T, s_lo, c};
#if NTT_SMEM_TW
    load_pass_twiddles(sm + 8 * T, T, tl, tw, s_lo, k, c);
#endif

    for (uint32_t u = threadIdx.x; u < T; u += blockDim.x) {
        const uint32_t g = tl.g(u);
        store_s(sm, T, u, scale(load_v4(x, g), pre, pre_mode, g, L));
    }
    __syncthreads();

    if (order == ntt_order::rn) {  // DIT
        int q = 0;
        for (; R4 && q + 2 <= k; q += 2) {  // stages s_lo+q, s_lo+q+1
            stage_r4<true>(sm, T, tl, ptw, s_lo + q, c + q);
            __syncthreads();
        }
        for (; q < k; q++) {
            stage_r2<true>(sm, T, tl, ptw, s_lo + q, c + q);
            __syncthreads();
        }
    } else {  // DIF
        int q = k;  // stages below s_lo+q remain
        for (; R4 && q >= 2; q -= 2) {  // stages s_lo+q-1, s_lo+q-2
            stage_r4<false>(sm, T, tl, ptw, s_lo + q - 2, c + q - 2);
            __syncthreads();
        }
        for (; q > 0; q--) {
            stage_r2<false>(sm, T, tl, ptw, s_lo + q - 1, c + q - 1);
            __syncthreads();
        }
    }

    for (uint32_t u = threadIdx.x; u < T; u += blockDim.x) {
        const uint32_t g = tl.g(u);
        store_v4(x, g, scale(load_s(sm, T, u), post, post_mode, g, L));
    }
}

extern "C" {

// k stages (bits [s_lo, s_lo+k)) on tiles of T = 2^(k+c) elements; grid = n/T, any blockDim (the host
// uses min(T/2, NTT_THREADS), or T/4 for ntt_pass_r4), dynamic shared memory = 32*T bytes (64*T with
// NTT_SMEM_TW=1: the pass's twiddles beside the tile).
// order nr: DIF stages from high to low; rn: DIT, low to high. ntt_pass does one radix-2 stage per
// shared-memory round trip; ntt_pass_r4 does two (radix-4 in registers), then a radix-2 stage if k is odd.
__global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS)
ntt_pass(fr_t* x, const fr_t* tw, int L, int s_lo, int k, int c, ntt_order order,
         const fr_t* pre, scale_mode pre_mode, const fr_t* post, scale_mode post_mode) {
    pass_body<false>(x, tw, L, s_lo, k, c, order, pre, pre_mode, post, post_mode);
}
__global__ void __launch_bounds__(NTT_THREADS, NTT_R4_MIN_BLOCKS)
ntt_pass_r4(fr_t* x, const fr_t* tw, int L, int s_lo, int k, int c, ntt_order order,
            const fr_t* pre, scale_mode pre_mode, const fr_t* post, scale_mode post_mode) {
    pass_body<true>(x, tw, L, s_lo, k, c, order, pre, pre_mode, post, post_mode);
}

// tw[i] for 1 <= i < n: i = h + t (h the top bit of i) -> omega_n^(t * n/(2h)) = hi[e >> S] * lo[e & (2^S-1)].
// lo[j] = omega^j (j < 2^S), hi[j] = omega^(j*2^S), both Montgomery. tw[0] = 1.
__global__ void ntt_build_twiddles(fr_t* tw, const fr_t* lo, const fr_t* hi, int L, int S, uint64_t n) {
    ZK_GRID_STRIDE(i, n) {
        if (i == 0) {
            store_v4(tw, 0, fr_t::one());
            continue;
        }
        const int lh = 31 - __clz((uint32_t)i);
        const uint32_t t = (uint32_t)i - (1u << lh);
        const uint32_t e = t << (L - 1 - lh);
        store_v4(tw, i, load_v4(hi, e >> S) * load_v4(lo, e & ((1u << S) - 1)));
    }
}

// out[i] = hi[i >> S] * lo[i & (2^S-1)] for i < n (powers of one element, possibly times a constant
// folded into hi by the host).
__global__ void ntt_build_powers(fr_t* out, const fr_t* lo, const fr_t* hi, int S, uint64_t n) {
    ZK_GRID_STRIDE(i, n) {
        store_v4(out, i, load_v4(hi, i >> S) * load_v4(lo, i & ((1u << S) - 1)));
    }
}

// In-place bit-reversal permutation for L >= 2*NTT_BR_Q, by tiles: write i = (hi, mid, lo) with q-bit hi
// and lo; bitrev(i) = (rev lo, rev mid, rev hi). Block `mid` (with mid <= rev mid) loads the 2^q x 2^q
// elements (hi, mid, lo) and (hi, rev mid, lo) -- runs of 2^q adjacent elements -- and writes each
// tile to the other row transposed, again in runs of 2^q. blockDim = 2^(2q) = 256, grid = 2^(L-2q).
#define NTT_BR_Q 4
#define NTT_BR_T (1 << (2 * NTT_BR_Q))
__global__ void __launch_bounds__(NTT_BR_T) ntt_bitrev_tiled(fr_t* x, int L) {
    __shared__ uint32_t sa[8 * NTT_BR_T], sb[8 * NTT_BR_T];
    const int q = NTT_BR_Q;
    const uint32_t mid = blockIdx.x;
    const uint32_t rmid = bitrev(mid, L - 2 * q);
    if (mid > rmid) return;
    const uint32_t tid = threadIdx.x, hi = tid >> q, lo = tid & ((1u << q) - 1);
    const uint32_t i_a = (hi << (L - q)) | (mid << q) | lo;   // row mid
    const uint32_t i_b = (hi << (L - q)) | (rmid << q) | lo;  // row rev(mid)
    store_s(sa, NTT_BR_T, tid, load_v4(x, i_a));
    if (mid != rmid) store_s(sb, NTT_BR_T, tid, load_v4(x, i_b));
    __syncthreads();
    // position (hi, m, lo) receives the old element (rev lo, rev m, rev hi)
    const uint32_t src = (bitrev(lo, q) << q) | bitrev(hi, q);
    if (mid != rmid) {
        store_v4(x, i_b, load_s(sa, NTT_BR_T, src));
        store_v4(x, i_a, load_s(sb, NTT_BR_T, src));
    } else {
        store_v4(x, i_a, load_s(sa, NTT_BR_T, src));
    }
}

// In-place bit-reversal permutation of n = 2^L elements (any L; used for small L).
__global__ void ntt_bitrev(fr_t* x, int L, uint64_t n) {
    ZK_GRID_STRIDE(i, n) {
        const uint32_t r = bitrev((uint32_t)i, L);
        if (i < r) {
            fr_t a = load_v4(x, i), b = load_v4(x, r);
            store_v4(x, i, b);
            store_v4(x, r, a);
        }
    }
}

}  // extern "C"
