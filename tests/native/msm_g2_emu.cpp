// CPU emulation of zkgpu/kernels/msm.cu's G2 instantiation (-DZK_MSM_G2=1: the same kernels over g2.cuh's
// points) and fr_ops.cu, as msm_emu.cpp is for G1: tests/test_msm_g2.py drives them through the real host code
// of zkgpu/gpu/msm/pippenger.py with numpy standing in for CuPy. Also the G2 group operations one by one
// (g2_op) and the warp-split formulas of msm_final.cuh over Fq2 (the "lanes" are a loop on the host).
#define ZK_MSM_G2 1
#include "emu.h"
#include "msm.cu"
#include "fr_ops.cu"

using zk::fq2_t;
using zk::g2_affine_t;
using zk::g2_xyzz_t;

namespace {
g2_affine_t g2_load(const g2_affine_t& p) {
    g2_affine_t a = p;
    if (a.is_inf()) return a;
    a.x = a.x.to_mont();
    a.y = a.y.to_mont();
    return a;
}
void g2_store(const g2_xyzz_t& p, g2_affine_t* out) {
    g2_affine_t a = p.to_affine();
    a.x = a.x.from_mont();
    a.y = a.y.from_mont();
    *out = a;
}
// The same point with a non-trivial XYZZ representation: X = x z^2, Y = y z^3, ZZ = z^2, ZZZ = z^3.
g2_xyzz_t g2_scaled(const g2_affine_t& a, const fq2_t& zc) {
    if (a.is_inf()) return g2_xyzz_t::inf();
    fq2_t z = zc.to_mont();
    if (z.is_zero()) z = fq2_t::one();
    g2_xyzz_t r;
    r.ZZ = z * z;
    r.ZZZ = r.ZZ * z;
    r.X = a.x * r.ZZ;
    r.Y = a.y * r.ZZZ;
    return r;
}
bool g2_same(const g2_xyzz_t& a, const g2_xyzz_t& b) {
    const uint32_t* x = reinterpret_cast<const uint32_t*>(&a);
    const uint32_t* y = reinterpret_cast<const uint32_t*>(&b);
    for (int i = 0; i < 96; i++)
        if (x[i] != y[i]) return false;
    return true;
}
}  // namespace

extern "C" {
// Canonical G2 points in and out (48 uint32 words each). op 0: a + b (madd-2008-s), 1: a + b (add-2008-s on
// scaled XYZZ inputs), 2: 2a (dbl-2008-s on scaled a), 3: 2a (mdbl-2008-s), 4: k * a (double-and-add),
// 5: -a + b (madd), 6: to_affine of scaled a only.
void g2_op(const g2_affine_t* a, const g2_affine_t* b, const fq2_t* z1, const fq2_t* z2, uint32_t k, g2_affine_t* out,
           uint64_t n, int op) {
    for (uint64_t i = 0; i < n; i++) {
        const g2_affine_t A = g2_load(a[i]), B = g2_load(b[i]);
        g2_xyzz_t r;
        switch (op) {
            case 0: r = g2_xyzz_t::from_affine(A); r.add_affine(B); break;
            case 1: r = g2_scaled(A, z1[i]); r.add(g2_scaled(B, z2[i])); break;
            case 2: r = g2_scaled(A, z1[i]).dbl(); break;
            case 3: r = g2_xyzz_t::mdbl(A); break;
            case 4: r = g2_scaled(A, z1[i]).mul_u32(k); break;
            case 5: r = g2_xyzz_t::from_affine(A.neg()); r.add_affine(B); break;
            default: r = g2_scaled(A, z1[i]); break;
        }
        g2_store(r, out + i);
    }
}

// 1 if on y^2 = x^3 + 4(u + 1) (or the identity), else 0; canonical coordinates < q.
void g2_on_curve(const g2_affine_t* pts, uint64_t n, uint8_t* out) {
    for (uint64_t i = 0; i < n; i++) out[i] = g2_load(pts[i]).on_curve() ? 1 : 0;
}

// Canonical Fq2 elements: op 0: a * b, 1: a^2, 2: 1/a (ec.cuh finv), 3: 1/a (msm_final.cuh fq_inv_binary).
void fq2_op(const fq2_t* a, const fq2_t* b, fq2_t* out, uint64_t n, int op) {
    for (uint64_t i = 0; i < n; i++) {
        const fq2_t x = a[i].to_mont(), y = b[i].to_mont();
        fq2_t r;
        switch (op) {
            case 0: r = zk::fmul(x, y); break;
            case 1: r = zk::fsqr(x); break;
            case 2: r = zk::finv(x); break;
            default: r = zk::fq_inv_binary(x); break;
        }
        out[i] = r.from_mont();
    }
}

// As msm_emu.cpp's emu_warp_mismatches, over G2: the cases where warp_add / warp_dbl differ bit for bit
// from g2_xyzz_t::add / dbl (a + b, a + a, a + (-a), identity + b, a + identity, 2a, 2 * identity).
uint64_t emu_g2_warp_mismatches(const g2_affine_t* a, const g2_affine_t* b, const fq2_t* z, uint64_t n) {
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        const g2_affine_t A0 = g2_load(a[i]), B0 = g2_load(b[i]);
        const g2_xyzz_t A = g2_scaled(A0, z[2 * i]), B = g2_scaled(B0, z[2 * i + 1]);
        const g2_xyzz_t A2 = g2_scaled(A0, z[2 * i + 1]);
        const g2_xyzz_t I = g2_xyzz_t::inf();
        const g2_xyzz_t pairs[5][2] = {{A, B}, {A, A2}, {A, A2.neg()}, {I, B}, {A, I}};
        for (const auto& pq : pairs) {
            g2_xyzz_t s = pq[0];
            s.add(pq[1]);
            bad += !g2_same(s, zk::warp_add(pq[0], pq[1]));
        }
        bad += !g2_same(A.dbl(), zk::warp_dbl(A));
        bad += !g2_same(I.dbl(), zk::warp_dbl(I));
    }
    return bad;
}
}  // extern "C"
