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

extern "C" {

// k stages (bits [s_lo, s_lo+k)) on tiles of T = 2^(k+c) elements; blockDim.x = min(T/2, NTT_THREADS)
// (each thread does T/2/blockDim.x butterflies per stage), grid = n/T, dynamic shared memory = 32*T
// bytes. dit = 0: DIF stages from high to low; dit = 1: DIT, low to high.
__global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS)
ntt_pass(uint32_t* x, const uint32_t* tw, int L, int s_lo, int k, int c, int dit,
         const uint32_t* pre, int pre_mode, const uint32_t* post, int post_mode) {
    extern __shared__ uint32_t sm[];
    const uint32_t T = 1u << (k + c);
    const uint32_t nt = blockDim.x;
    const uint32_t b = blockIdx.x;
    const int midbits = s_lo - c;
    const uint32_t cmask = (1u << c) - 1;
    // global index of tile element u
    const uint32_t base = ((b & ((1u << midbits) - 1)) << c) | ((b >> midbits) << (s_lo + k));
    auto gidx = [&](uint32_t u) -> uint32_t { return base | (u & cmask) | ((u >> c) << s_lo); };

    for (uint32_t u = threadIdx.x; u < T; u += nt) {
        const uint32_t g = gidx(u);
        store_s(sm, T, u, scale(load_g(x, g), pre, pre_mode, g, L));
    }
    __syncthreads();

    for (int q = 0; q < k; q++) {
        const int s = dit ? s_lo + q : s_lo + k - 1 - q;  // global stage bit
        const int lb = c + (s - s_lo);                     // its bit in the tile
        const uint32_t hl = 1u << lb;
        const uint32_t h = 1u << s;
        for (uint32_t tid = threadIdx.x; tid < (T >> 1); tid += nt) {
            const uint32_t j = (tid & (hl - 1)) | ((tid >> lb) << (lb + 1));
            const uint32_t t = gidx(j) & (h - 1);
            const fr_t w = load_g(tw, h + t);
            fr_t a = load_s(sm, T, j), bb = load_s(sm, T, j + hl);
            if (dit) {
                bb = bb * w;
                store_s(sm, T, j, a + bb);
                store_s(sm, T, j + hl, a - bb);
            } else {
                store_s(sm, T, j, a + bb);
                store_s(sm, T, j + hl, (a - bb) * w);
            }
        }
        __syncthreads();
    }

    for (uint32_t u = threadIdx.x; u < T; u += nt) {
        const uint32_t g = gidx(u);
        store_g(x, g, scale(load_s(sm, T, u), post, post_mode, g, L));
    }
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

// In-place bit-reversal permutation of n = 2^L elements.
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
