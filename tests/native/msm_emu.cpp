// CPU emulation of zkgpu/kernels/msm.cu and msm_precomp.cu (and fr_ops.cu, whose fr_first_unreduced checks the MSM's
// scalars): the kernels compiled by g++ with a one-thread grid (emu.h), so each grid-stride loop covers
// every item. tests/test_msm.py drives them through the real host code in zkgpu/msm.py with numpy
// standing in for CuPy, which checks the whole GPU pipeline (digits, sort, chunked buckets, window
// reduction, Horner) without a GPU.
#include "emu.h"
#include "msm.cu"
#include "fr_ops.cu"
#include "msm_precomp.cu"

// Checks of msm_final.cuh's warp-cooperative operations on the host (the "lanes" are a loop here, so these
// check the split of each formula into levels of independent products, not the shuffles: the GPU tests do).
namespace {
zk::xyzz_t emu_scaled(const zk::affine_t& c, const zk::fq_t& zc) {
    zk::affine_t a = c;
    if (a.is_inf()) return zk::xyzz_t::inf();
    a.x = a.x.to_mont();
    a.y = a.y.to_mont();
    zk::fq_t z = zc.to_mont();
    if (z.is_zero()) z = zk::fq_t::one();
    zk::xyzz_t r;
    r.ZZ = z * z;
    r.ZZZ = r.ZZ * z;
    r.X = a.x * r.ZZ;
    r.Y = a.y * r.ZZZ;
    return r;
}
bool emu_same(const zk::xyzz_t& a, const zk::xyzz_t& b) {
    const uint32_t* x = reinterpret_cast<const uint32_t*>(&a);
    const uint32_t* y = reinterpret_cast<const uint32_t*>(&b);
    for (int i = 0; i < 48; i++)
        if (x[i] != y[i]) return false;
    return true;
}
}  // namespace

extern "C" {
// out[i] = fq_inv_binary(in[i]) on Montgomery-form inputs and outputs.
void emu_fq_inv_binary(const zk::fq_t* in, zk::fq_t* out, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) out[i] = zk::fq_inv_binary(in[i]);
}

// For canonical affine a[i], b[i] (identity allowed) in XYZZ scaled by z[2i], z[2i+1]: the number of
// cases where warp_add / warp_dbl differ bit for bit from xyzz_t::add / dbl. Cases: a + b, a + a (the
// doubling case), a + (-a) (the identity), identity + b, a + identity, 2a.
uint64_t emu_warp_mismatches(const zk::affine_t* a, const zk::affine_t* b, const zk::fq_t* z, uint64_t n) {
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        const zk::xyzz_t A = emu_scaled(a[i], z[2 * i]), B = emu_scaled(b[i], z[2 * i + 1]);
        const zk::xyzz_t A2 = emu_scaled(a[i], z[2 * i + 1]);  // the same point, another representation
        const zk::xyzz_t I = zk::xyzz_t::inf();
        const zk::xyzz_t pairs[5][2] = {{A, B}, {A, A2}, {A, A2.neg()}, {I, B}, {A, I}};
        for (const auto& pq : pairs) {
            zk::xyzz_t s = pq[0];
            s.add(pq[1]);
            bad += !emu_same(s, zk::warp_add(pq[0], pq[1]));
        }
        bad += !emu_same(A.dbl(), zk::warp_dbl(A));
        bad += !emu_same(I.dbl(), zk::warp_dbl(I));
    }
    return bad;
}
}  // extern "C"
