// zkgpu: the BLS12-381 quadratic extension Fq2 = Fq[u] / (u^2 + 1), the base field of G2.
//
// An fq2_t is c0 + c1 u with c0, c1 fq_t (fq.cuh: mont_t over q), each in Montgomery form on the device;
// 24 uint32 words, c0 then c1 (the order of arkworks' Fp2 serialisation and of zkgpu/arith/curve.py's
// G2 host layout). The non-residue is u^2 = -1 (q = 3 mod 4, so -1 is not a square in Fq); no other
// constant is needed: the curve constant of G2 (ec.cuh) is built from one() as Fq's are.
//
// Here: the additive operations, the Montgomery conversions and the range check, which act on c0 and c1
// alone, and the plain product (Karatsuba, 3 Fq products) for host code. The products the group formulas
// use (out of line, one per module) are ec.cuh's fmul / fsqr / finv overloads.
// Source of the tower: draft-irtf-cfrg-pairing-friendly-curves-11 §4.2.1 (BLS12_381: Fp2 = Fp[u]/(u^2+1)).
#pragma once
#include "fq.cuh"

namespace zk {

struct fq2_t {
    fq_t c0, c1;

    ZK_HD static fq2_t make(const fq_t& a, const fq_t& b) {
        fq2_t r;
        r.c0 = a;
        r.c1 = b;
        return r;
    }
    ZK_HD static fq2_t zero() { return make(fq_t::zero(), fq_t::zero()); }
    ZK_HD static fq2_t one() { return make(fq_t::one(), fq_t::zero()); }
    ZK_HD bool is_zero() const { return c0.is_zero() & c1.is_zero(); }
    ZK_HD bool operator==(const fq2_t& o) const { return (c0 == o.c0) & (c1 == o.c1); }
    ZK_HD bool operator!=(const fq2_t& o) const { return !(*this == o); }
    ZK_HD friend fq2_t operator+(const fq2_t& a, const fq2_t& b) { return make(a.c0 + b.c0, a.c1 + b.c1); }
    ZK_HD friend fq2_t operator-(const fq2_t& a, const fq2_t& b) { return make(a.c0 - b.c0, a.c1 - b.c1); }
    ZK_HD fq2_t operator-() const { return make(-c0, -c1); }
    ZK_HD fq2_t dbl() const { return make(c0.dbl(), c1.dbl()); }
    // (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u.
    ZK_HD friend fq2_t operator*(const fq2_t& a, const fq2_t& b) {
        const fq_t t0 = a.c0 * b.c0, t1 = a.c1 * b.c1, t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        return make(t0 - t1, t2 - t0 - t1);
    }
    ZK_HD fq2_t to_mont() const { return make(c0.to_mont(), c1.to_mont()); }
    ZK_HD fq2_t from_mont() const { return make(c0.from_mont(), c1.from_mont()); }
    // Both coordinates' raw values below q.
    ZK_HD bool is_reduced() const { return c0.is_reduced() & c1.is_reduced(); }
};

static_assert(sizeof(fq2_t) == 96, "an fq2_t is 24 uint32 words, c0 then c1");

}  // namespace zk
