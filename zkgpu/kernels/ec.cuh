// zkgpu: BLS12-381 G1 and G2 point arithmetic, one set of formulas templated over the base field F:
// G1 is y^2 = x^3 + 4 over Fq (F = fq_t, fq.cuh), G2 is y^2 = x^3 + 4(u + 1) over Fq2 (F = fq2_t, fq2.cuh);
// both short Weierstrass with a = 0. g1.cuh and g2.cuh name the two instantiations (affine_t, xyzz_t and
// g2_affine_t, g2_xyzz_t).
//
// Two representations, all coordinates in Montgomery form:
//   affine_of<F>  (x, y); the identity (point at infinity) is (0, 0), which is on neither curve (b != 0),
//                 so the encoding is unambiguous (zkgpu/arith/curve.py documents the host layouts).
//   xyzz_of<F>    "XYZZ" / Jacobian-extended coordinates (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ and
//                 ZZ^3 = ZZZ^2; the identity is ZZ = 0 (an all-zero xyzz is the identity, so
//                 zero-filled device memory is a valid array of identities).
//
// Formulas: the Explicit-Formulas Database (EFD), "Short Weierstrass curves, XYZZ coordinates",
// https://hyperelliptic.org/EFD/g1p/auto-shortw-xyzz.html :
//   add-2008-s  (XYZZ + XYZZ, 12M + 2S), madd-2008-s (XYZZ + affine, 8M + 2S),
//   dbl-2008-s  (2 * XYZZ, 6M + 3S with a = 0), mdbl-2008-s (2 * affine, 4M + 3S here).
// They hold over any field (M, S: products in F; an Fq2 product is 3 Fq products, Karatsuba). The EFD
// formulas are incomplete: P + P (they give P = R = 0) and P + (-P) (P = 0, R != 0) and the identity are
// handled explicitly below. Doubling never meets a 2-torsion point (y = 0) in the order-r subgroups the
// MSM takes its points from (r odd).
//
// Scalars for Pippenger are decomposed into signed window digits (signed_digit below): window w
// of c bits plus the carry from window w-1; a value above 2^(c-1) becomes value - 2^c with a
// carry of 1 into window w+1, so digits lie in [-2^(c-1), 2^(c-1)] and only 2^(c-1) buckets per
// window are needed (Booth-style recoding, as in sppark msm/pippenger.cuh and cuzk).
//
// Compiles under nvcc, NVRTC and g++ (tests/native/g1_shim.cpp and g2_shim.cpp test it on the CPU).
#pragma once
#include "fq.cuh"
#include "fq2.cuh"

// The group operations are emitted once per module (not inlined at every call site): with
// 12-limb Montgomery products fully unrolled, inlining them everywhere makes NVRTC/ptxas take
// minutes per module and blows the register budget.
#if defined(__CUDACC__)
#define ZK_EC_OP __host__ __device__ __noinline__
#else
#define ZK_EC_OP inline
#endif
#ifndef ZK_G1_INLINE_MUL
#define ZK_G1_INLINE_MUL 0
#endif

namespace zk {

// One out-of-line Fq product per module (fmul_ool), used by the inversion always and by the
// group operations unless ZK_G1_INLINE_MUL=1 (then their products are inlined: faster code,
// longer NVRTC compile).
#if defined(__CUDACC__)
__device__ __noinline__ fq_t fq_mul_dev(const fq_t a, const fq_t b) { return a * b; }
#endif
ZK_HD fq_t fmul_ool(const fq_t& a, const fq_t& b) {
#if defined(__CUDA_ARCH__)
    return fq_mul_dev(a, b);
#else
    return a * b;
#endif
}
#if ZK_G1_INLINE_MUL
ZK_HD fq_t fmul(const fq_t& a, const fq_t& b) { return a * b; }
#else
ZK_HD fq_t fmul(const fq_t& a, const fq_t& b) { return fmul_ool(a, b); }
#endif
ZK_HD fq_t fsqr(const fq_t& a) { return fmul(a, a); }

// a^(q-2) = 1/a (Fermat, 0 -> 0) through fmul: the same as fq_t::inv without inlining the
// product hundreds of times.
ZK_EC_OP fq_t finv(const fq_t& a) {
    constexpr limbs_t<12> E = modulus_minus_two<fq_params>();
    fq_t r = fq_t::one();
    for (int i = 11; i >= 0; i--) {
        for (int b = 31; b >= 0; b--) {
            r = fmul_ool(r, r);
            if ((E.v[i] >> b) & 1) r = fmul_ool(r, a);
        }
    }
    return r;
}

// The Fq2 products of the group formulas (fq2.cuh), out of line as Fq's: Karatsuba over fmul (3 Fq products,
// an Fq2 square 2), the inverse by the norm, 1/(c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2), one Fq inversion.
ZK_EC_OP fq2_t fmul(const fq2_t& a, const fq2_t& b) {
    const fq_t t0 = fmul(a.c0, b.c0), t1 = fmul(a.c1, b.c1), t2 = fmul(a.c0 + a.c1, b.c0 + b.c1);
    return fq2_t::make(t0 - t1, t2 - t0 - t1);
}
ZK_HD fq2_t fmul_ool(const fq2_t& a, const fq2_t& b) { return fmul(a, b); }
// (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u.
ZK_EC_OP fq2_t fsqr(const fq2_t& a) {
    const fq_t t = fmul(a.c0, a.c1);
    return fq2_t::make(fmul(a.c0 + a.c1, a.c0 - a.c1), t.dbl());
}
ZK_EC_OP fq2_t finv(const fq2_t& a) {
    const fq_t t = finv(fsqr(a.c0) + fsqr(a.c1));
    return fq2_t::make(fmul(a.c0, t), -fmul(a.c1, t));
}

// The curve constant b of y^2 = x^3 + b, in Montgomery form, by the base field: 4 for G1 and 4(u + 1) for G2
// (draft-irtf-cfrg-pairing-friendly-curves-11 §4.2.1), built from one() as the rest.
ZK_HD fq_t curve_b(const fq_t*) { return fq_t::one().dbl().dbl(); }
ZK_HD fq2_t curve_b(const fq2_t*) {
    const fq_t four = fq_t::one().dbl().dbl();
    return fq2_t::make(four, four);
}

template <class F>
struct affine_of {
    typedef F field_t;
    F x, y;
    ZK_HD bool is_inf() const { return x.is_zero() & y.is_zero(); }
    ZK_HD static affine_of inf() {
        affine_of r;
        r.x = F::zero();
        r.y = F::zero();
        return r;
    }
    ZK_HD affine_of neg() const {
        affine_of r;
        r.x = x;
        r.y = -y;  // 0 - 0 = 0 keeps the identity
        return r;
    }
    // y^2 == x^3 + b (Montgomery form, curve_b), or the identity.
    ZK_HD bool on_curve() const {
        if (is_inf()) return true;
        return fsqr(y) == fmul(fsqr(x), x) + curve_b(&x);
    }
};

// The part add-2008-s and madd-2008-s share, inside a member of xyzz_of<F>, from this point's U1, S1 and the
// other's U2, S2: P = U2 - U1, R = S2 - S1. P = 0 is the case the EFD formulas do not cover: *this = DBL
// (R = 0, the same point) or the identity (R != 0), and the member returns. Otherwise X and Y become
// X3 = R^2 - PPP - 2 U1 PP and R (U1 PP - X3) - S1 PPP, and PP = P^2, PPP = P^3 are left for the ZZ/ZZZ
// update. A macro, not a function: as a (force-inlined) function it cost the MSM kernels 10-30 more
// registers each under ptxas (sm_90), one resident block of 128 threads per SM fewer.
#define ZK_XYZZ_ADD_XY(U1, S1, U2, S2, DBL) \
    F P = U2 - U1;                           \
    F R = S2 - S1;                           \
    if (P.is_zero()) {                       \
        if (R.is_zero()) *this = DBL;        \
        else *this = inf();                  \
        return;                              \
    }                                        \
    F PP = fsqr(P);                          \
    F PPP = fmul(P, PP);                     \
    F Q = fmul(U1, PP);                      \
    F X3 = fsqr(R) - PPP - Q.dbl();          \
    Y = fmul(R, Q - X3) - fmul(S1, PPP);     \
    X = X3;

// Device arrays of points are affine_of<F>* (x then y) and xyzz_of<F>* (X, Y, ZZ, ZZZ): for G1 24 and 48
// uint32 words (12 little-endian limbs per coordinate), for G2 48 and 96 (24 per coordinate, c0 then c1);
// the host allocates them as (n, words) uint32 arrays.
template <class F>
struct xyzz_of {
    typedef F field_t;
    typedef affine_of<F> affine_t;
    typedef xyzz_of xyzz_t;
    F X, Y, ZZ, ZZZ;

    ZK_HD bool is_inf() const { return ZZ.is_zero(); }
    ZK_HD static xyzz_t inf() {
        xyzz_t r;
        r.X = F::zero();
        r.Y = F::zero();
        r.ZZ = F::zero();
        r.ZZZ = F::zero();
        return r;
    }
    ZK_HD static xyzz_t from_affine(const affine_t& a) {
        if (a.is_inf()) return inf();
        xyzz_t r;
        r.X = a.x;
        r.Y = a.y;
        r.ZZ = F::one();
        r.ZZZ = F::one();
        return r;
    }
    ZK_HD xyzz_t neg() const {
        xyzz_t r = *this;
        r.Y = -Y;
        return r;
    }

    // EFD mdbl-2008-s: 2 * (x, y) for an affine input (ZZ = ZZZ = 1).
    ZK_EC_OP static xyzz_t mdbl(const affine_t& a) {
        if (a.is_inf()) return inf();
        xyzz_t r;
        F U = a.y.dbl();
        F V = fsqr(U);
        F W = fmul(U, V);
        F S = fmul(a.x, V);
        F xx = fsqr(a.x);
        F M = xx.dbl() + xx;
        r.X = fsqr(M) - S.dbl();
        r.Y = fmul(M, S - r.X) - fmul(W, a.y);
        r.ZZ = V;
        r.ZZZ = W;
        return r;
    }

    // EFD dbl-2008-s with a = 0.
    ZK_EC_OP xyzz_t dbl() const {
        if (is_inf()) return *this;
        xyzz_t r;
        F U = Y.dbl();
        F V = fsqr(U);
        F W = fmul(U, V);
        F S = fmul(X, V);
        F xx = fsqr(X);
        F M = xx.dbl() + xx;
        r.X = fsqr(M) - S.dbl();
        r.Y = fmul(M, S - r.X) - fmul(W, Y);
        r.ZZ = fmul(V, ZZ);
        r.ZZZ = fmul(W, ZZZ);
        return r;
    }

    // EFD madd-2008-s: *this + a (a affine), complete by the special cases.
    ZK_EC_OP void add_affine(const affine_t& a) {
        if (a.is_inf()) return;
        if (is_inf()) {
            *this = from_affine(a);
            return;
        }
        F U2 = fmul(a.x, ZZ);
        F S2 = fmul(a.y, ZZZ);
        ZK_XYZZ_ADD_XY(X, Y, U2, S2, mdbl(a))
        ZZ = fmul(ZZ, PP);
        ZZZ = fmul(ZZZ, PPP);
    }

    // EFD add-2008-s: *this + b, complete by the special cases.
    ZK_EC_OP void add(const xyzz_t& b) {
        if (b.is_inf()) return;
        if (is_inf()) {
            *this = b;
            return;
        }
        F U1 = fmul(X, b.ZZ);
        F U2 = fmul(b.X, ZZ);
        F S1 = fmul(Y, b.ZZZ);
        F S2 = fmul(b.Y, ZZZ);
        ZK_XYZZ_ADD_XY(U1, S1, U2, S2, dbl())
        ZZ = fmul(fmul(ZZ, b.ZZ), PP);
        ZZZ = fmul(fmul(ZZZ, b.ZZZ), PPP);
    }

    // x = X/ZZ, y = Y/ZZZ with one Fermat inversion of ZZ*ZZZ; the identity gives (0, 0).
    ZK_EC_OP affine_t to_affine() const {
        if (is_inf()) return affine_t::inf();
        F J = finv(fmul(ZZ, ZZZ));  // 1/(ZZ*ZZZ)
        affine_t r;
        r.x = fmul(X, fmul(J, ZZZ));  // X/ZZ
        r.y = fmul(Y, fmul(J, ZZ));   // Y/ZZZ
        return r;
    }

    // k * (*this) for an unsigned 32-bit k, left-to-right double-and-add.
    ZK_EC_OP xyzz_t mul_u32(uint32_t k) const {
        xyzz_t r = inf();
        for (int b = 31; b >= 0; b--) {
            r = r.dbl();
            if ((k >> b) & 1) r.add(*this);
        }
        return r;
    }
};

// Number of c-bit signed windows for 255-bit scalars: c * nwin >= 256, so the carry out of the
// top window is always 0 for scalars < r < 2^255 (the top window's value is at most 2^(c-1)).
ZK_HD int num_windows(int c) { return (256 + c - 1) / c; }

// Signed digit of window w (c bits, 1 <= c <= 31) of a 256-bit scalar s (8 little-endian uint32
// limbs), given the carry from window w-1 (updated in place). Windows must be visited in order
// w = 0, 1, ... with carry starting at 0. Returns d in [-2^(c-1), 2^(c-1)]; the scalar equals
// sum_w d_w * 2^(c*w) when the final carry is 0.
ZK_HD int32_t signed_digit(const uint32_t* s, int w, int c, uint32_t& carry) {
    int bit = w * c;
    uint32_t v = 0;
    if (bit < 256) {
        int limb = bit >> 5, sh = bit & 31;
        uint64_t lo = s[limb];
        uint64_t hi = (limb + 1 < 8) ? (uint64_t)s[limb + 1] : 0;
        uint64_t both = lo | (hi << 32);
        v = (uint32_t)((both >> sh) & ((1ull << c) - 1));
    }
    v += carry;
    uint32_t half = 1u << (c - 1);
    if (v > half) {
        carry = 1;
        return (int32_t)v - (int32_t)(1u << c);
    }
    carry = 0;
    return (int32_t)v;
}

}  // namespace zk
