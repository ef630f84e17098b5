// zkgpu: what ntt.cu's passes share: the butterflies' additions (bf_add, bf_sub, bf_dif_mul), shared-memory
// element access, the orders and pointwise scalings of a pass (enums that zkgpu/gpu/ntt/transform.py reads from
// this file, common.cuh) and the tile geometry of a pass (see ntt.cu's file comment).
#pragma once
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
// by a table tab of Montgomery elements (scale(); h_step is unused since the fused NTT went, tag pre-macro-cut).
enum class scale_mode : int {
    none = 0,      // x
    natural = 1,   // x * tab[g]
    bitrev = 2,    // x * tab[bitrev_L(g)]
    constant = 3,  // x * tab[0]
    h_step = 4,    // (x * aux1[g] - aux2[g]) * tab[0]: the Groth16 H pointwise step
    mul_sub = 5,   // x * aux1[g] - aux2[g]: the same step with its constant folded elsewhere (stagewise pre only)
};

__device__ __forceinline__ uint32_t bitrev(uint32_t i, int L) { return L == 0 ? 0u : (__brev(i) >> (32 - L)); }

// Shared memory holds a tile of T elements, accessed through load_s / store_s (tile elements) and load_t / store_t
// (the tables of a pass, e.g. its twiddles), both by element index u < T:
//   two planes of 16-byte words, limbs 0-3 of element u in word slot(u) of plane 0
//     (bytes [16 slot, 16 slot + 16) of sm) and limbs 4-7 in word slot(u) of plane 1 (16 T bytes further): two 128-bit
//     accesses per element (LDS.128 / STS.128) instead of eight. A 128-bit access is served a quarter warp (8 lanes) at
//     a time, without bank conflicts when the 8 lanes' words differ in their low 3 bits (8 x 16 bytes = the 32 banks).
//     A stage's butterflies on tile bit lb have lanes 8i..8i+7 at tile indexes j that spell tile bits {0..3} minus
//     lb for lb < 3 (bit lb is 0 in j, 1 in its partner), the 3 low bits for lb >= 3. slot(u) = u ^ ((u >> 1) & 7)
//     (slot bit b = u_b ^ u_(b+1) for b < 3, the other bits u's) maps each of these sets of 8, and every run of 8
//     consecutive indexes (the global loads and stores), onto 8 different low-3-bit values (checked for lb = 0..9
//     by tests/test_kernels_emulated.py::test_smem_v4_slots_conflict_free); it keeps bits 3 and up and inverts
//     (u_2 = s_2 ^ u_3, then u_1, u_0), so it permutes each aligned run of 8 indexes: a bijection on [0, T) for T a
//     power of two. load_t / store_t use slot(u) = u: a table's readers take runs of consecutive indexes (any 8
//     consecutive integers differ in their low 3 bits) or the same index (a broadcast).
__device__ __forceinline__ uint32_t smem_slot(uint32_t u) { return u ^ ((u >> 1) & 7u); }
__device__ __forceinline__ fr_t load_sv(const uint32_t* sm, uint32_t T, uint32_t slot) {
    const uint4* p = reinterpret_cast<const uint4*>(sm);
    const uint4 lo = p[slot], hi = p[T + slot];
    fr_t r;
    r.v[0] = lo.x; r.v[1] = lo.y; r.v[2] = lo.z; r.v[3] = lo.w;
    r.v[4] = hi.x; r.v[5] = hi.y; r.v[6] = hi.z; r.v[7] = hi.w;
    return r;
}
__device__ __forceinline__ void store_sv(uint32_t* sm, uint32_t T, uint32_t slot, const fr_t& r) {
    uint4* p = reinterpret_cast<uint4*>(sm);
    p[slot] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
    p[T + slot] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}
__device__ __forceinline__ fr_t load_s(const uint32_t* sm, uint32_t T, uint32_t u) { return load_sv(sm, T, smem_slot(u)); }
__device__ __forceinline__ void store_s(uint32_t* sm, uint32_t T, uint32_t u, const fr_t& r) { store_sv(sm, T, smem_slot(u), r); }
__device__ __forceinline__ fr_t load_t(const uint32_t* sm, uint32_t T, uint32_t u) { return load_sv(sm, T, u); }
__device__ __forceinline__ void store_t(uint32_t* sm, uint32_t T, uint32_t u, const fr_t& r) { store_sv(sm, T, u, r); }
__device__ __forceinline__ fr_t scale(const fr_t& x, const fr_t* tab, scale_mode mode, uint32_t g, int L) {
    if (mode == scale_mode::none) return x;
    uint32_t idx = mode == scale_mode::natural ? g : (mode == scale_mode::bitrev ? bitrev(g, L) : 0u);  // constant: tab[0]
    return x * load_v4(tab, idx);
}

// The additions of the stagewise butterflies (ntt.cu), a, b < r:
//   bf_add(a, b) = a + b mod r, bf_sub(a, b) = a - b mod r: in device code non-volatile asm statements, each one
//     whole carry chain (as ff.cuh's even/odd product): the compiler may interleave them with the products; host
//     code (the emulation) uses fr_t's operators. r < 2^255, so a + b < 2^256 has no carry out of the top word.
//   bf_dif_mul(w, a, b) = (a - b) * w.
static_assert(zk::fr_params::p(7) < 0x80000000u, "bf_add needs 2r < 2^256");
#define ZK_NTT_R8(x) "r"(x.v[0]), "r"(x.v[1]), "r"(x.v[2]), "r"(x.v[3]), "r"(x.v[4]), "r"(x.v[5]), "r"(x.v[6]), "r"(x.v[7])
#define ZK_NTT_W8(x) "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3]), "=r"(x[4]), "=r"(x[5]), "=r"(x[6]), "=r"(x[7])
#define ZK_NTT_P8 "n"(zk::fr_params::p(0)), "n"(zk::fr_params::p(1)), "n"(zk::fr_params::p(2)), "n"(zk::fr_params::p(3)), \
    "n"(zk::fr_params::p(4)), "n"(zk::fr_params::p(5)), "n"(zk::fr_params::p(6)), "n"(zk::fr_params::p(7))
// %0..%7 = %8..%15 OP %16..%23 as one carry chain (OP: add or sub)
#define ZK_NTT_CHAIN8(op)                                                                                     \
    #op ".cc.u32 %0, %8, %16;\n\t" #op "c.cc.u32 %1, %9, %17;\n\t" #op "c.cc.u32 %2, %10, %18;\n\t"            \
    #op "c.cc.u32 %3, %11, %19;\n\t" #op "c.cc.u32 %4, %12, %20;\n\t" #op "c.cc.u32 %5, %13, %21;\n\t"       \
    #op "c.cc.u32 %6, %14, %22;\n\t"
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ fr_t bf_add(const fr_t& a, const fr_t& b) {
    uint32_t t[8], d[8], keep;
    asm(ZK_NTT_CHAIN8(add) "addc.u32 %7, %15, %23;" : ZK_NTT_W8(t) : ZK_NTT_R8(a), ZK_NTT_R8(b));
    // d = t - r; keep = all ones iff that borrows (t < r)
    asm("sub.cc.u32 %0, %9, %17;\n\t subc.cc.u32 %1, %10, %18;\n\t subc.cc.u32 %2, %11, %19;\n\t"
        "subc.cc.u32 %3, %12, %20;\n\t subc.cc.u32 %4, %13, %21;\n\t subc.cc.u32 %5, %14, %22;\n\t"
        "subc.cc.u32 %6, %15, %23;\n\t subc.cc.u32 %7, %16, %24;\n\t subc.u32 %8, %25, %25;"
        : ZK_NTT_W8(d), "=r"(keep)
        : "r"(t[0]), "r"(t[1]), "r"(t[2]), "r"(t[3]), "r"(t[4]), "r"(t[5]), "r"(t[6]), "r"(t[7]), ZK_NTT_P8, "r"(0u));
    fr_t r;
ZK_UNROLL
    for (int i = 0; i < 8; i++) r.v[i] = (t[i] & keep) | (d[i] & ~keep);
    return r;
}
// d = a - b (%0..%7) and mask = all ones on borrow (%8).
__device__ __forceinline__ uint32_t bf_sub_raw(uint32_t* d, const fr_t& a, const fr_t& b) {
    uint32_t mask;
    asm("sub.cc.u32 %0, %9, %17;\n\t subc.cc.u32 %1, %10, %18;\n\t subc.cc.u32 %2, %11, %19;\n\t"
        "subc.cc.u32 %3, %12, %20;\n\t subc.cc.u32 %4, %13, %21;\n\t subc.cc.u32 %5, %14, %22;\n\t"
        "subc.cc.u32 %6, %15, %23;\n\t subc.cc.u32 %7, %16, %24;\n\t subc.u32 %8, %25, %25;"
        : ZK_NTT_W8(d), "=r"(mask) : ZK_NTT_R8(a), ZK_NTT_R8(b), "r"(0u));
    return mask;
}
// r = d + (p & mask), the carry out dropped (d + p wraps back below 2^256 exactly when d wrapped).
__device__ __forceinline__ fr_t bf_add_p(const uint32_t* d, uint32_t mask) {
    fr_t r, pm;
ZK_UNROLL
    for (int i = 0; i < 8; i++) pm.v[i] = zk::fr_params::p(i) & mask;
    asm(ZK_NTT_CHAIN8(add) "addc.u32 %7, %15, %23;" : ZK_NTT_W8(r.v)
        : "r"(d[0]), "r"(d[1]), "r"(d[2]), "r"(d[3]), "r"(d[4]), "r"(d[5]), "r"(d[6]), "r"(d[7]), ZK_NTT_R8(pm));
    return r;
}
__device__ __forceinline__ fr_t bf_sub(const fr_t& a, const fr_t& b) {
    uint32_t d[8];
    const uint32_t mask = bf_sub_raw(d, a, b);
    return bf_add_p(d, mask);
}
#else
ZK_HD fr_t bf_add(const fr_t& a, const fr_t& b) { return a + b; }
ZK_HD fr_t bf_sub(const fr_t& a, const fr_t& b) { return a - b; }
#endif
ZK_HD fr_t bf_dif_mul(const fr_t& w, const fr_t& a, const fr_t& b) {
    return bf_sub(a, b) * w;
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

