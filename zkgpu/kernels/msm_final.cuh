// zkgpu: the last step of the GPU MSM (zkgpu/gpu/msm/final.py) -- Horner over the window sums, to affine,
// out of Montgomery form -- with the independent Fq products of each group operation spread over the
// lanes of one warp, and the one inversion by the binary extended Euclidean algorithm.
//
// Why: that step is one dependency chain (c doublings per window, one addition per window, one
// inversion), which a single GPU thread runs latency-bound at about 1.4 us per Fq product (12-limb
// Montgomery, every instruction waiting on the one before). It was a fixed ~4.8 ms per MSM on the H200
// (session 3's phase breakdowns), 22% of a 2^22 PoRep-like MSM. The chain's length cannot be cut (the
// top window needs c * (nwin - 1) doublings in a row), but each group operation's products are not one
// chain: dbl-2008-s's 9 products form 3 levels of independent products (2, 4, 3) and add-2008-s's 14
// form 4 levels (6, 2, 3, 3). With the products of a level on different lanes of one warp (the lanes
// run one instruction stream, so the products of a level cost one product's latency), a doubling costs
// 3 product latencies instead of 9 and an addition 4 instead of 14. The inversion is a chain of 380
// squarings by Fermat (fq_t::inv, ec.cuh finv); the binary extended Euclidean algorithm needs only
// shifts, additions and subtractions of 12-limb integers (about 760 halvings and 380 subtractions), each
// a few dozen instructions instead of a ~600-instruction product.
//
// Same results bit for bit as msm_final (msm.cu): the same formulas (EFD dbl-2008-s, add-2008-s, with the
// special cases of ec.cuh) and the same affine point. Both groups: warp_dbl / warp_add are templates over the
// point type; for G2 each Fq2 product is 3 Fq products (Karatsuba), so a level of up to 6 Fq2 products takes
// 18 lanes and still costs one Fq product's latency. On the host (g++: tests/native) the "lanes" are a
// loop, so the emulated kernels check the formulas; the GPU tests check the lanes.
#pragma once
#include "g1.cuh"
#include "g2.cuh"

namespace zk {

#if defined(__CUDA_ARCH__)
__device__ __forceinline__ fq_t fq_shfl(const fq_t& x, int lane) {
    fq_t r;
#pragma unroll
    for (int i = 0; i < 12; i++) r.v[i] = __shfl_sync(0xffffffffu, x.v[i], lane);
    return r;
}
#endif

// r_k = a_k * b_k for k < 6, lane k of the warp computing product k (lanes >= 6 compute product 0 again);
// every lane gets every product. All 32 lanes of the warp must call it together (device). The outputs may
// alias the inputs (every product is taken before any output is written).
ZK_HD void warp_mul6(fq_t& r0, const fq_t& a0, const fq_t& b0, fq_t& r1, const fq_t& a1, const fq_t& b1,
                     fq_t& r2, const fq_t& a2, const fq_t& b2, fq_t& r3, const fq_t& a3, const fq_t& b3,
                     fq_t& r4, const fq_t& a4, const fq_t& b4, fq_t& r5, const fq_t& a5, const fq_t& b5) {
#if defined(__CUDA_ARCH__)
    const unsigned lane = threadIdx.x & 31u;
    fq_t a = a0, b = b0;
#pragma unroll
    for (int i = 0; i < 12; i++) {
        uint32_t x = a0.v[i], y = b0.v[i];
        x = lane == 1 ? a1.v[i] : x;
        y = lane == 1 ? b1.v[i] : y;
        x = lane == 2 ? a2.v[i] : x;
        y = lane == 2 ? b2.v[i] : y;
        x = lane == 3 ? a3.v[i] : x;
        y = lane == 3 ? b3.v[i] : y;
        x = lane == 4 ? a4.v[i] : x;
        y = lane == 4 ? b4.v[i] : y;
        x = lane == 5 ? a5.v[i] : x;
        y = lane == 5 ? b5.v[i] : y;
        a.v[i] = x;
        b.v[i] = y;
    }
    __syncwarp();
    const fq_t p = fmul_ool(a, b);
    const fq_t p0 = fq_shfl(p, 0), p1 = fq_shfl(p, 1), p2 = fq_shfl(p, 2), p3 = fq_shfl(p, 3), p4 = fq_shfl(p, 4),
               p5 = fq_shfl(p, 5);
#else
    const fq_t p0 = a0 * b0, p1 = a1 * b1, p2 = a2 * b2, p3 = a3 * b3, p4 = a4 * b4, p5 = a5 * b5;
#endif
    r0 = p0;
    r1 = p1;
    r2 = p2;
    r3 = p3;
    r4 = p4;
    r5 = p5;
}

// Fewer products: the unused slots repeat product 0 (their results are dropped).
ZK_HD void warp_mul4(fq_t& r0, const fq_t& a0, const fq_t& b0, fq_t& r1, const fq_t& a1, const fq_t& b1,
                     fq_t& r2, const fq_t& a2, const fq_t& b2, fq_t& r3, const fq_t& a3, const fq_t& b3) {
    fq_t d4, d5;
    warp_mul6(r0, a0, b0, r1, a1, b1, r2, a2, b2, r3, a3, b3, d4, a0, b0, d5, a0, b0);
}

// Fq2: r_k = a_k * b_k for k < 6 with the 18 Fq products of the six Karatsuba products (a0 b0, a1 b1,
// (a0 + a1)(b0 + b1)) on lanes 0..17, lane 3k + s computing part s of product k (lanes >= 18 compute lane 0's
// again); as the Fq version otherwise (all 32 lanes call it together; outputs may alias inputs).
ZK_HD void warp_mul6(fq2_t& r0, const fq2_t& a0, const fq2_t& b0, fq2_t& r1, const fq2_t& a1, const fq2_t& b1,
                     fq2_t& r2, const fq2_t& a2, const fq2_t& b2, fq2_t& r3, const fq2_t& a3, const fq2_t& b3,
                     fq2_t& r4, const fq2_t& a4, const fq2_t& b4, fq2_t& r5, const fq2_t& a5, const fq2_t& b5) {
#if defined(__CUDA_ARCH__)
    const unsigned lane = threadIdx.x & 31u;
    const unsigned k = lane < 18 ? lane / 3 : 0, part = lane < 18 ? lane % 3 : 0;
    fq2_t a, b;
#define ZK_PICK2(K, A, B)                    \
    x0 = k == K ? A.c0.v[i] : x0;           \
    x1 = k == K ? A.c1.v[i] : x1;           \
    y0 = k == K ? B.c0.v[i] : y0;           \
    y1 = k == K ? B.c1.v[i] : y1;
#pragma unroll
    for (int i = 0; i < 12; i++) {
        uint32_t x0 = a0.c0.v[i], x1 = a0.c1.v[i], y0 = b0.c0.v[i], y1 = b0.c1.v[i];
        ZK_PICK2(1, a1, b1)
        ZK_PICK2(2, a2, b2)
        ZK_PICK2(3, a3, b3)
        ZK_PICK2(4, a4, b4)
        ZK_PICK2(5, a5, b5)
        a.c0.v[i] = x0;
        a.c1.v[i] = x1;
        b.c0.v[i] = y0;
        b.c1.v[i] = y1;
    }
#undef ZK_PICK2
    const fq_t sa = a.c0 + a.c1, sb = b.c0 + b.c1;
    fq_t x, y;
#pragma unroll
    for (int i = 0; i < 12; i++) {
        x.v[i] = part == 0 ? a.c0.v[i] : (part == 1 ? a.c1.v[i] : sa.v[i]);
        y.v[i] = part == 0 ? b.c0.v[i] : (part == 1 ? b.c1.v[i] : sb.v[i]);
    }
    __syncwarp();
    const fq_t p = fmul_ool(x, y);
    fq2_t q[6];
#pragma unroll
    for (int j = 0; j < 6; j++) {
        const fq_t t0 = fq_shfl(p, 3 * j), t1 = fq_shfl(p, 3 * j + 1), t2 = fq_shfl(p, 3 * j + 2);
        q[j] = fq2_t::make(t0 - t1, t2 - t0 - t1);
    }
    const fq2_t p0 = q[0], p1 = q[1], p2 = q[2], p3 = q[3], p4 = q[4], p5 = q[5];
#else
    const fq2_t p0 = a0 * b0, p1 = a1 * b1, p2 = a2 * b2, p3 = a3 * b3, p4 = a4 * b4, p5 = a5 * b5;
#endif
    r0 = p0;
    r1 = p1;
    r2 = p2;
    r3 = p3;
    r4 = p4;
    r5 = p5;
}

ZK_HD void warp_mul4(fq2_t& r0, const fq2_t& a0, const fq2_t& b0, fq2_t& r1, const fq2_t& a1, const fq2_t& b1,
                     fq2_t& r2, const fq2_t& a2, const fq2_t& b2, fq2_t& r3, const fq2_t& a3, const fq2_t& b3) {
    fq2_t d4, d5;
    warp_mul6(r0, a0, b0, r1, a1, b1, r2, a2, b2, r3, a3, b3, d4, a0, b0, d5, a0, b0);
}

// 2P, EFD dbl-2008-s with a = 0 (as xyzz_t::dbl): levels {V = U^2, xx = X^2}, {W = U V, S = X V,
// ZZ3 = V ZZ, M^2}, {M (S - X3), W Y, ZZZ3 = W ZZZ}.
template <class F>
ZK_HD xyzz_of<F> warp_dbl(const xyzz_of<F>& p) {
    if (p.is_inf()) return p;
    const F U = p.Y.dbl();
    F V, xx, W, S, ZZ, MM, t1, t2, ZZZ;
    warp_mul4(V, U, U, xx, p.X, p.X, t1, U, U, t2, U, U);
    const F M = xx.dbl() + xx;
    warp_mul4(W, U, V, S, p.X, V, ZZ, V, p.ZZ, MM, M, M);
    xyzz_of<F> r;
    r.X = MM - S.dbl();
    warp_mul4(t1, M, S - r.X, t2, W, p.Y, ZZZ, W, p.ZZZ, V, U, U);
    r.Y = t1 - t2;
    r.ZZ = ZZ;
    r.ZZZ = ZZZ;
    return r;
}

// a + b, EFD add-2008-s (as xyzz_t::add, with its special cases): levels {U1, U2, S1, S2, ZZ bZZ,
// ZZZ bZZZ}, {PP = P^2, R^2}, {PPP = P PP, Q = U1 PP, ZZ3}, {R (Q - X3), S1 PPP, ZZZ3}.
template <class F>
ZK_HD xyzz_of<F> warp_add(const xyzz_of<F>& a, const xyzz_of<F>& b) {
    if (b.is_inf()) return a;
    if (a.is_inf()) return b;
    F U1, U2, S1, S2, Z2, Z3;
    warp_mul6(U1, a.X, b.ZZ, U2, b.X, a.ZZ, S1, a.Y, b.ZZZ, S2, b.Y, a.ZZZ, Z2, a.ZZ, b.ZZ, Z3, a.ZZZ, b.ZZZ);
    const F P = U2 - U1, R = S2 - S1;
    if (P.is_zero()) return R.is_zero() ? warp_dbl(a) : xyzz_of<F>::inf();
    F PP, RR, PPP, Q, t1, t2;
    warp_mul4(PP, P, P, RR, R, R, t1, P, P, t2, P, P);
    xyzz_of<F> r;
    warp_mul4(PPP, P, PP, Q, U1, PP, r.ZZ, Z2, PP, t1, P, P);
    r.X = RR - PPP - Q.dbl();
    warp_mul4(t1, R, Q - r.X, t2, S1, PPP, r.ZZZ, Z3, PPP, PP, P, P);
    r.Y = t1 - t2;
    return r;
}

// 1/a in Montgomery form (a = xR -> x^-1 R; 0 -> 0) by the binary extended Euclidean algorithm on the
// raw 12-limb value A = xR: u = A, v = q, x1 = 1, x2 = 0 keep x1 A = u and x2 A = v (mod q); halve u
// (and x1, adding q first when odd) while u is even, the same for v, subtract the smaller of u, v from
// the larger (and x2 from x1 or x1 from x2, mod q), until u or v is 1. That gives A^-1 = x^-1 R^-1;
// two Montgomery conversions (times R^2 / R each) make it x^-1 R. Hankerson, Menezes, Vanstone, Guide to
// Elliptic Curve Cryptography (2004), algorithm 2.22 (binary inversion in F_p), with x1 and x2 kept in
// [0, q). Variable time: for the MSM result only, never for secrets.
ZK_HD bool limbs_is_one(const uint32_t* u) {
    uint32_t acc = u[0] ^ 1u;
    ZK_UNROLL
    for (int i = 1; i < 12; i++) acc |= u[i];
    return acc == 0;
}

// x / 2 mod q for x < q: x >> 1 if x is even, else (x + q) >> 1 (x + q < 2^382 fits the 12 limbs).
ZK_HD void halve_mod_q(uint32_t* x) {
    const uint32_t odd = x[0] & 1u;
    uint64_t carry = 0;
    ZK_UNROLL
    for (int i = 0; i < 12; i++) {
        const uint64_t s = (uint64_t)x[i] + (odd ? fq_params::p(i) : 0u) + carry;
        x[i] = (uint32_t)s;
        carry = s >> 32;
    }
    ZK_UNROLL
    for (int i = 0; i < 11; i++) x[i] = (x[i] >> 1) | (x[i + 1] << 31);
    x[11] = (x[11] >> 1) | ((uint32_t)carry << 31);
}

ZK_HD void shr1(uint32_t* u) {
    ZK_UNROLL
    for (int i = 0; i < 11; i++) u[i] = (u[i] >> 1) | (u[i + 1] << 31);
    u[11] >>= 1;
}

// u >= v as 12-limb integers.
ZK_HD bool limbs_ge(const uint32_t* u, const uint32_t* v) {
    ZK_UNROLL
    for (int i = 11; i >= 0; i--) {
        if (u[i] != v[i]) return u[i] > v[i];
    }
    return true;
}

// u -= v (u >= v).
ZK_HD void limbs_sub(uint32_t* u, const uint32_t* v) {
    uint64_t borrow = 0;
    ZK_UNROLL
    for (int i = 0; i < 12; i++) {
        const uint64_t d = (uint64_t)u[i] - v[i] - borrow;
        u[i] = (uint32_t)d;
        borrow = (d >> 63) & 1;
    }
}

ZK_HD fq_t fq_inv_binary(const fq_t& a) {
    if (a.is_zero()) return a;
    fq_t u = a, v, x1 = fq_t::zero(), x2 = fq_t::zero();
    ZK_UNROLL
    for (int i = 0; i < 12; i++) v.v[i] = fq_params::p(i);
    x1.v[0] = 1;
    while (!limbs_is_one(u.v) && !limbs_is_one(v.v)) {
        while ((u.v[0] & 1u) == 0) {
            shr1(u.v);
            halve_mod_q(x1.v);
        }
        while ((v.v[0] & 1u) == 0) {
            shr1(v.v);
            halve_mod_q(x2.v);
        }
        if (limbs_ge(u.v, v.v)) {
            limbs_sub(u.v, v.v);
            x1 = x1 - x2;  // mod q (fq_t's subtraction works on the raw values)
        } else {
            limbs_sub(v.v, u.v);
            x2 = x2 - x1;
        }
    }
    const fq_t inv = limbs_is_one(u.v) ? x1 : x2;  // A^-1 = x^-1 R^-1 (raw)
    return inv.to_mont().to_mont();                // x^-1 R
}

// 1/a in Fq2 by the norm (as ec.cuh's finv): (c0 - c1 u) / (c0^2 + c1^2), the one Fq inversion binary.
ZK_HD fq2_t fq_inv_binary(const fq2_t& a) {
    const fq_t t = fq_inv_binary(fmul_ool(a.c0, a.c0) + fmul_ool(a.c1, a.c1));
    return fq2_t::make(fmul_ool(a.c0, t), -fmul_ool(a.c1, t));
}

}  // namespace zk
