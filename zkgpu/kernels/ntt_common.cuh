// zkgpu: what the NTT modules share (ntt.cu, ntt_fused.cu): Fr with the PTX carry chains (ZK_NTT_PTX=0
// selects the portable C++ arithmetic), global and shared-memory element access, the pointwise scalings
// and the tile geometry of a pass (see ntt.cu's file comment).
#pragma once
#define ZK_FF_PTX_DEFAULT 1
#if defined(ZK_NTT_PTX) ? ZK_NTT_PTX : ZK_FF_PTX_DEFAULT
#define ZK_FF_PTX 1
#endif
#include "fr.cuh"

using zk::fr_t;

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

