// zkgpu: what the NTT modules share (ntt.cu, ntt_fused.cu): Fr with the PTX carry chains (ZK_NTT_PTX=0
// selects the portable C++ arithmetic), shared-memory element access, the orders and pointwise scalings
// of a pass (enums that zkgpu/ntt.py reads from this file, common.cuh) and the tile geometry of a pass
// (see ntt.cu's file comment).
#pragma once
#define ZK_FF_PTX_DEFAULT 1
#if defined(ZK_NTT_PTX) ? ZK_NTT_PTX : ZK_FF_PTX_DEFAULT
#define ZK_FF_PTX 1
#endif
#include "common.cuh"
#include "fr.cuh"

using zk::fr_t;
using zk::load_v4;
using zk::store_v4;

// The butterflies of a pass (sppark calls the orders InputOutputOrder): DIF (Gentleman-Sande), natural
// in, bit-reversed out; DIT (Cooley-Tukey), bit-reversed in, natural out. ntt.py makes "nn" from nr and
// a bit-reversal pass.
enum class ntt_order : int { nr = 0, rn = 1 };

// The pointwise scaling of an element x at global index g when a pass loads it (pre) or stores it (post),
// by a table tab of Montgomery elements (scale(); h_step only as the post of a fused pass, post_op()).
enum class scale_mode : int {
    none = 0,      // x
    natural = 1,   // x * tab[g]
    bitrev = 2,    // x * tab[bitrev_L(g)]
    constant = 3,  // x * tab[0]
    h_step = 4,    // (x * aux1[g] - aux2[g]) * tab[0]: the Groth16 H pointwise step
};

__device__ __forceinline__ uint32_t bitrev(uint32_t i, int L) { return L == 0 ? 0u : (__brev(i) >> (32 - L)); }

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
__device__ __forceinline__ fr_t scale(const fr_t& x, const fr_t* tab, scale_mode mode, uint32_t g, int L) {
    if (mode == scale_mode::none) return x;
    uint32_t idx = mode == scale_mode::natural ? g : (mode == scale_mode::bitrev ? bitrev(g, L) : 0u);
    return x * load_v4(tab, idx);
}

// The tile of a pass: tile element u <-> global index g(u) (see ntt.cu's file comment). Tile b of the pass over
// the bits [s_lo, s_lo+k) with c column bits holds the 2^(k+c) elements whose other index bits spell b.
struct tile_t {
    uint32_t base, cmask;
    int c, s_lo;
    __device__ __forceinline__ uint32_t g(uint32_t u) const { return base | (u & cmask) | ((u >> c) << s_lo); }
    __device__ __forceinline__ static tile_t of(uint32_t b, int s_lo, int k, int c) {
        const int midbits = s_lo - c;
        tile_t tl;
        tl.base = ((b & ((1u << midbits) - 1)) << c) | ((b >> midbits) << (s_lo + k));
        tl.cmask = (1u << c) - 1;
        tl.c = c;
        tl.s_lo = s_lo;
        return tl;
    }
};

