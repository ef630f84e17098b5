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
// bf_dif_mul (device code: asm carry chains).
//
// Pointwise scalings fused into the first pass's load (pre) and the last pass's store (post), scale_mode
// (ntt_common.cuh): none, natural x[g] *= tab[g], bitrev x[g] *= tab[bitrev_L(g)], constant x[g] *= tab[0].
// The host uses them for the coset shift g^i (pre), and for 1/n or g^-i/n of the inverse (post).
//
// zkgpu/gpu/ntt/transform.py reads NTT_MAX_TILE_LOG, NTT_THREADS and NTT_BR_Q from this file (common.cuh says how).
// The build (issue 13; notes/ntt-kernels.md has each choice's measurement, runs k13-ntt, s3-ntt and s4-ntt; the
// alternatives were deleted after tag pre-macro-cut): the butterflies' additions as non-volatile asm chains, each
// pass's twiddles copied to shared memory first, the tile in 16-byte planes, ptxas -O1 (ZK_PTXAS_O, read by the host:
// zkgpu/core/cuda.py build_options), 128-thread blocks (NTT_THREADS) on tiles of at most 512 elements in the passes on
// high bits (one column bit), the product's merge and final subtraction as asm chains (ZK_FF_ASM_TAIL, ff.cuh), the
// stage on the tile's top bit at the global load / store (24 KiB per 512-element tile), 8 blocks per SM
// (NTT_MIN_BLOCKS: 64 registers), a thread's global loads 2 at a time (NTT_PREFETCH). The candidates NTT_FOLD,
// NTT_BIG_LAST and NTT_SKIP_ONE of session s5 were timed on the H200 and deleted (issue 23; notes/ntt-kernels.md, run
// s5-ntt: none was faster on every transform at every size).
#ifndef ZK_FF_ASM_TAIL
#define ZK_FF_ASM_TAIL 1  // ff.cuh: the even/odd product's merge and final subtraction as asm chains (mont_t::eo_tail)
#endif
#ifndef ZK_PTXAS_O  // read by the host (NVRTC's --ptxas-options=-O<n>); -O3 spills the products' carry predicates
#define ZK_PTXAS_O 1
#endif
#include "ntt_common.cuh"

#define NTT_MAX_TILE_LOG 10  // the largest tile of a pass, log2: 1024 elements = 32 KiB of shared memory
#ifndef NTT_THREADS
#define NTT_THREADS 128  // the most threads per block
#endif
#ifndef NTT_MIN_BLOCKS
#define NTT_MIN_BLOCKS 8  // 8 x 128 threads per SM (a 512-element tile + half its twiddles: 24 KiB): 64 registers
#endif
#ifndef NTT_R4_MIN_BLOCKS
#define NTT_R4_MIN_BLOCKS 2
#endif

// omega_{2h}^(g mod h), h = 2^s.
__device__ __forceinline__ fr_t twiddle(const fr_t* tw, int s, uint32_t g) {
    const uint32_t h = 1u << s;
    return load_v4(tw, h + (g & (h - 1)));
}

// The twiddles of a pass. At local stage q (global s = s_lo + q, tile bit c + q) the twiddle of
// tile element j depends only on u = j mod 2^(c+q) (the column bits and the stage bits below q; the block's base
// bits are fixed), so the tile needs 2^(c+q) of them per stage, 2^c * (2^k - 1) < T in all. They are copied once
// per pass, with the data, into a second shared-memory area of T elements (stage q's at 2^c * (2^q - 1) + u):
// every global load of the pass is issued up front instead of one table load per butterfly and stage, and each
// twiddle is read from global memory once per block instead of once per butterfly.
struct pass_tw_t {
    const fr_t* tw;
    const uint32_t* smt;  // the shared copy
    uint32_t T;
    int s_lo, c;
    __device__ __forceinline__ fr_t at(int s, const tile_t& tl, uint32_t j) const {
        const int q = s - s_lo;
        return load_t(smt, T, (((1u << q) - 1) << c) + (j & ((1u << (c + q)) - 1)));
    }
};
// put(u, get(u)) for u < count, the block's threads taking every blockDim-th u: a thread issues the global loads of
// NTT_PREFETCH items (get) before it stores any of them (put), so the latencies of its loads overlap instead of adding
// up (issue 13, session s4).
#define NTT_PREFETCH 2
template <class Get, class Put>
__device__ __forceinline__ void copy_in(uint32_t count, const Get& get, const Put& put) {
    for (uint32_t u0 = threadIdx.x; u0 < count; u0 += NTT_PREFETCH * blockDim.x) {
        fr_t v[NTT_PREFETCH];
ZK_UNROLL
        for (int i = 0; i < NTT_PREFETCH; i++) {
            const uint32_t u = u0 + i * blockDim.x;
            if (u < count) v[i] = get(u);
        }
ZK_UNROLL
        for (int i = 0; i < NTT_PREFETCH; i++) {
            const uint32_t u = u0 + i * blockDim.x;
            if (u < count) put(u, v[i]);
        }
    }
}
__device__ __forceinline__ void load_pass_twiddles(uint32_t* smt, uint32_t T, const tile_t& tl, const fr_t* tw,
                                                   int s_lo, int k, int c) {
    copy_in(((1u << k) - 1) << c,
            [&](uint32_t v) {
                const int q = 31 - __clz((v >> c) + 1);
                return twiddle(tw, s_lo + q, tl.g(v - (((1u << q) - 1) << c)));
            },
            [&](uint32_t v, const fr_t& w) { store_t(smt, T, v, w); });
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

// One radix-2 stage: global bit s, tile bit lb. At s = 0 every twiddle is 1 (no multiply).
template <bool DIT>
__device__ __forceinline__ void stage_r2(uint32_t* sm, uint32_t T, const tile_t& tl, const pass_tw_t& tw, int s, int lb) {
    const uint32_t hl = 1u << lb;
    for (uint32_t tid = threadIdx.x; tid < (T >> 1); tid += blockDim.x) {
        const uint32_t j = (tid & (hl - 1)) | ((tid >> lb) << (lb + 1));
        fr_t a = load_s(sm, T, j), b = load_s(sm, T, j + hl);
        butterfly_r2<DIT>(a, b, tl, tw, s, j);
        store_s(sm, T, j, a);
        store_s(sm, T, j + hl, b);
    }
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

// The pointwise step at a pass's global load (pre) or store (post): scale() plus scale_mode::mul_sub (pre).
struct pass_io_t {
    const fr_t *pre, *post, *aux1, *aux2;
    scale_mode pre_mode, post_mode;
    int L;
    __device__ __forceinline__ fr_t in(const fr_t* x, uint32_t g) const {
        const fr_t v = load_v4(x, g);
        if (pre_mode == scale_mode::mul_sub) return v * load_v4(aux1, g) - load_v4(aux2, g);
        return scale(v, pre, pre_mode, g, L);
    }
    __device__ __forceinline__ fr_t out(const fr_t& v, uint32_t g) const { return scale(v, post, post_mode, g, L); }
};

// The io stage (issue 13, session s4): a pass does the stage on
// its top tile bit (global bit s, tile bit lb = log2(T) - 1: butterflies (j, j + T/2), j < T/2) at the global load
// (DIF, its first stage) or store (DIT, its last): one shared-memory round trip and one barrier fewer per pass, and
// that stage's T/2 twiddles, each used once per tile, come from the global table into registers instead of through
// shared memory, so the shared twiddle area halves (at 2^24: 48 instead of 64 KiB per 1024-element tile, 4 blocks
// per SM instead of 3). A thread takes its butterflies NB at a time, the global loads of all NB first.
#define NTT_IO_NB 1  // butterflies per thread in flight (2: 80 registers and spills at -O1, ptxas -v)
__device__ __forceinline__ void io_stage_dif(uint32_t* sm, uint32_t T, const tile_t& tl, const fr_t* tw, int s,
                                             const fr_t* x, const pass_io_t& io) {
    const uint32_t H = T >> 1;
    for (uint32_t j0 = threadIdx.x; j0 < H; j0 += NTT_IO_NB * blockDim.x) {
        fr_t a[NTT_IO_NB], b[NTT_IO_NB], w[NTT_IO_NB];
ZK_UNROLL
        for (int i = 0; i < NTT_IO_NB; i++) {
            const uint32_t j = j0 + i * blockDim.x;
            if (j < H) {
                a[i] = io.in(x, tl.g(j));
                b[i] = io.in(x, tl.g(j + H));
                if (s != 0) w[i] = twiddle(tw, s, tl.g(j));
            }
        }
ZK_UNROLL
        for (int i = 0; i < NTT_IO_NB; i++) {
            const uint32_t j = j0 + i * blockDim.x;
            if (j < H) {
                const fr_t t = bf_add(a[i], b[i]);
                store_s(sm, T, j + H, s == 0 ? bf_sub(a[i], b[i]) : bf_dif_mul(w[i], a[i], b[i]));
                store_s(sm, T, j, t);
            }
        }
    }
}
__device__ __forceinline__ void io_stage_dit(const uint32_t* sm, uint32_t T, const tile_t& tl, const fr_t* tw, int s,
                                             fr_t* out, bool brev_out, const pass_io_t& io) {
    const uint32_t H = T >> 1;
    for (uint32_t j0 = threadIdx.x; j0 < H; j0 += NTT_IO_NB * blockDim.x) {
        fr_t w[NTT_IO_NB];
ZK_UNROLL
        for (int i = 0; i < NTT_IO_NB; i++) {
            const uint32_t j = j0 + i * blockDim.x;
            if (j < H && s != 0) w[i] = twiddle(tw, s, tl.g(j));
        }
ZK_UNROLL
        for (int i = 0; i < NTT_IO_NB; i++) {
            const uint32_t j = j0 + i * blockDim.x;
            if (j < H) {
                const fr_t a = load_s(sm, T, j), b = load_s(sm, T, j + H);
                const fr_t bw = s == 0 ? b : b * w[i];
                const uint32_t g0 = tl.g(j), g1 = tl.g(j + H);
                store_v4(out, brev_out ? bitrev(g0, io.L) : g0, io.out(bf_add(a, bw), g0));
                store_v4(out, brev_out ? bitrev(g1, io.L) : g1, io.out(bf_sub(a, bw), g1));
            }
        }
    }
}

template <bool R4>
__device__ __forceinline__ void pass_body(const fr_t* x, fr_t* out, bool brev_out, const fr_t* tw, int s_lo, int k, int c,
                                          ntt_order order, const pass_io_t& io) {
    extern __shared__ uint32_t sm[];
    const uint32_t T = 1u << (k + c);
    const tile_t tl = tile_t::of(blockIdx.x, s_lo, k, c);
    // the stage on the top tile bit at the global load (DIF) / store (DIT), its twiddles from global memory
    const int io_stage = k >= 1 ? 1 : 0;
    const uint32_t Tt = T >> io_stage;  // the shared twiddle area: 2^c (2^(k - io_stage) - 1) < Tt entries
    const pass_tw_t ptw{tw, sm + 8 * T, Tt, s_lo, c};
    load_pass_twiddles(sm + 8 * T, Tt, tl, tw, s_lo, k - io_stage, c);

    if (order == ntt_order::rn) {  // DIT
        copy_in(T, [&](uint32_t u) { return io.in(x, tl.g(u)); }, [&](uint32_t u, const fr_t& v) { store_s(sm, T, u, v); });
        __syncthreads();
        int q = 0;
        for (; R4 && q + 2 <= k - io_stage; q += 2) {  // stages s_lo+q, s_lo+q+1
            stage_r4<true>(sm, T, tl, ptw, s_lo + q, c + q);
            __syncthreads();
        }
        for (; q < k - io_stage; q++) {
            stage_r2<true>(sm, T, tl, ptw, s_lo + q, c + q);
            __syncthreads();
        }
        if (io_stage) {  // the last stage (global bit s_lo+k-1) straight to global memory
            io_stage_dit(sm, T, tl, tw, s_lo + k - 1, out, brev_out, io);
            return;
        }
    } else {  // DIF
        if (io_stage) {  // the first stage (global bit s_lo+k-1) on the way in
            io_stage_dif(sm, T, tl, tw, s_lo + k - 1, x, io);
        } else {
            copy_in(T, [&](uint32_t u) { return io.in(x, tl.g(u)); }, [&](uint32_t u, const fr_t& v) { store_s(sm, T, u, v); });
        }
        __syncthreads();
        int q = k - io_stage;  // stages below s_lo+q remain
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
        store_v4(out, brev_out ? bitrev(g, io.L) : g, io.out(load_s(sm, T, u), g));
    }
}

// The pass shared by an inverse NTT "nr" and the coset NTT "rn" that follows it (compute_h): both have a pass on the
// low k index bits (s_lo = 0, c = 0, tiles of 2^k adjacent elements), so one launch does the inverse DIF stages
// (twiddles tw_inv), the scaling by mid (scale_mode natural or bitrev: g^i/n, i the coefficient's index) and the
// forward DIT stages (tw_fwd) with one load and one store of the tile. Shared memory: 32*T bytes for the tile plus
// 64*T for the two twiddle sets.
__device__ __forceinline__ void pair_body(fr_t* x, const fr_t* tw_inv, const fr_t* tw_fwd, int L, int k,
                                          const fr_t* mid, scale_mode mid_mode) {
    extern __shared__ uint32_t sm[];
    const uint32_t T = 1u << k;
    const tile_t tl = tile_t::of(blockIdx.x, 0, k, 0);
    const pass_tw_t pi{tw_inv, sm + 8 * T, T, 0, 0}, pf{tw_fwd, sm + 16 * T, T, 0, 0};
    load_pass_twiddles(sm + 8 * T, T, tl, tw_inv, 0, k, 0);
    load_pass_twiddles(sm + 16 * T, T, tl, tw_fwd, 0, k, 0);
    copy_in(T, [&](uint32_t u) { return load_v4(x, tl.g(u)); }, [&](uint32_t u, const fr_t& v) { store_s(sm, T, u, v); });
    __syncthreads();
    for (int q = k; q > 0; q--) {
        stage_r2<false>(sm, T, tl, pi, q - 1, q - 1);
        __syncthreads();
    }
    for (uint32_t u = threadIdx.x; u < T; u += blockDim.x) store_s(sm, T, u, scale(load_s(sm, T, u), mid, mid_mode, tl.g(u), L));
    __syncthreads();
    for (int q = 0; q < k; q++) {
        stage_r2<true>(sm, T, tl, pf, q, q);
        __syncthreads();
    }
    for (uint32_t u = threadIdx.x; u < T; u += blockDim.x) store_v4(x, tl.g(u), load_s(sm, T, u));
}

extern "C" {

// k stages (bits [s_lo, s_lo+k)) on tiles of T = 2^(k+c) elements; grid = n/T, any blockDim (the host
// uses min(T/2, NTT_THREADS), or T/4 for ntt_pass_r4), dynamic shared memory = 64*T bytes (the tile and the
// pass's twiddles beside it; 48*T with the io stage).
// order nr: DIF stages from high to low; rn: DIT, low to high. ntt_pass does one radix-2 stage per
// shared-memory round trip;
// ntt_pass_r4 does two (radix-4 in registers), then a radix-2 stage if k is odd. pre may be scale_mode::mul_sub
// (x * aux1[g] - aux2[g], the Groth16 H pointwise step at the load of the final inverse NTT); aux1 and aux2 are
// read only then. The pass reads x and writes out (x itself, or another buffer: each block reads its whole tile
// before it writes any of it, so out may also be aux2); brev_out: element g goes to out[bitrev_L(g)] (the last pass
// of an "nn" transform, which then needs no bit-reversal pass; out must not be x).
__global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS)
ntt_pass(const fr_t* x, fr_t* out, int brev_out, const fr_t* tw, int L, int s_lo, int k, int c, ntt_order order,
         const fr_t* pre, scale_mode pre_mode, const fr_t* post, scale_mode post_mode, const fr_t* aux1, const fr_t* aux2) {
    pass_body<false>(x, out, brev_out, tw, s_lo, k, c, order, pass_io_t{pre, post, aux1, aux2, pre_mode, post_mode, L});
}
__global__ void __launch_bounds__(NTT_THREADS, NTT_R4_MIN_BLOCKS)
ntt_pass_r4(const fr_t* x, fr_t* out, int brev_out, const fr_t* tw, int L, int s_lo, int k, int c, ntt_order order,
            const fr_t* pre, scale_mode pre_mode, const fr_t* post, scale_mode post_mode, const fr_t* aux1, const fr_t* aux2) {
    pass_body<true>(x, out, brev_out, tw, s_lo, k, c, order, pass_io_t{pre, post, aux1, aux2, pre_mode, post_mode, L});
}

// pair_body on tiles of 2^k elements; grid = n / 2^k, blockDim = min(2^(k-1), NTT_THREADS).
__global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS)
ntt_pass_pair(fr_t* x, const fr_t* tw_inv, const fr_t* tw_fwd, int L, int k, const fr_t* mid, scale_mode mid_mode) {
    pair_body(x, tw_inv, tw_fwd, L, k, mid, mid_mode);
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
    __shared__ uint4 sa4[2 * NTT_BR_T], sb4[2 * NTT_BR_T];  // uint4: 16-byte aligned for the tile's 128-bit accesses
    uint32_t *sa = reinterpret_cast<uint32_t*>(sa4), *sb = reinterpret_cast<uint32_t*>(sb4);
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
