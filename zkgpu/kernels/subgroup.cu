// zkgpu: the proving key's points checked on the device, one thread per point: coordinates below q, on the
// curve, and in the prime-order subgroup by the endomorphism tests (Scott, "A note on group membership tests
// for G1, G2 and GT on BLS pairing-friendly curves", ePrint 2021/1130, §6 and §4; Bowe, ePrint 2019/814):
//   G1  P in G1  iff  sigma(P) = -[z^2]P,  sigma(x, y) = (beta x, y), beta a cube root of unity in Fq
//   G2  P in G2  iff  psi(P) = [z]P,       psi(x, y) = (c_x conj(x), c_y conj(y))
// with z = -0xd201000000010000, so [z^2]P = [|z|]([|z|]P) and [z]P = -[|z|]P: both tests compute R by
// double-and-add with k = |z| and compare the endomorphism's image of P with -R. One template over the
// base field (ec.cuh's affine_of / xyzz_of, the MSM's formulas: fq_t for G1, fq2_t for G2); the constants
// (beta; c_x, c_y, Montgomery form) and k come from the host, which derives them from the curve
// (zkgpu/arith/endo.py) and drives the kernels (zkgpu/gpu/subgroup.py).
//
// Input: canonical affine points (the host layouts, g1.cuh / g2.cuh), the identity all zero. Output: one
// point_status byte per point, and the first index of each kind of failure (common.cuh's first-bad-index
// protocol; the host sets first[0] = first[1] = n): first[0] the first point with a coordinate >= q or off
// the curve, first[1] the first point on the curve but outside the subgroup.
//
// The XYZZ formulas are complete by their special cases (ec.cuh), so every point of the curve, whatever its
// order (the 3-torsion point (0, 2), twist points of order 13 ...), gets an exact answer.
#include "common.cuh"
#include "g1.cuh"
#include "g2.cuh"

// The status byte of a point; zkgpu/gpu/subgroup.py reads this enum.
enum class point_status : int { ok = 0, unreduced = 1, off_curve = 2, outside_subgroup = 3 };

namespace zk {

// [k]p for k > 0 (left-to-right double-and-add; the leading zero bits double the identity, a no-op);
// p affine (mixed additions) or XYZZ.
template <class F>
ZK_HD void add_to(xyzz_of<F>& r, const affine_of<F>& p) { r.add_affine(p); }
template <class F>
ZK_HD void add_to(xyzz_of<F>& r, const xyzz_of<F>& p) { r.add(p); }
template <class F, class P>
ZK_HD xyzz_of<F> mul_u64(const P& p, uint64_t k) {
    xyzz_of<F> r = xyzz_of<F>::inf();
    for (int b = 63; b >= 0; b--) {
        r = r.dbl();
        if ((k >> b) & 1) add_to(r, p);
    }
    return r;
}

// Is the XYZZ point r equal to the affine point a (not the identity)?  x = X/ZZ, y = Y/ZZZ.
template <class F>
ZK_HD bool same_point(const xyzz_of<F>& r, const affine_of<F>& a) {
    if (r.is_inf()) return false;
    return (r.X == fmul(a.x, r.ZZ)) & (r.Y == fmul(a.y, r.ZZZ));
}

// G1: sigma(P) and the multiple it is compared with, [|z|]([|z|]P) = [z^2]P; c = {beta}.
ZK_HD affine_of<fq_t> endo_image(const affine_of<fq_t>& a, const fq_t* c) {
    affine_of<fq_t> r;
    r.x = fmul(c[0], a.x);
    r.y = a.y;
    return r;
}
ZK_HD xyzz_of<fq_t> endo_multiple(const affine_of<fq_t>& a, uint64_t k) {
    return mul_u64<fq_t>(mul_u64<fq_t>(a, k), k);
}
// G2: psi(P) and [|z|]P; c = {c_x, c_y}.
ZK_HD affine_of<fq2_t> endo_image(const affine_of<fq2_t>& a, const fq2_t* c) {
    affine_of<fq2_t> r;
    r.x = fmul(c[0], fq2_t::make(a.x.c0, -a.x.c1));
    r.y = fmul(c[1], fq2_t::make(a.y.c0, -a.y.c1));
    return r;
}
ZK_HD xyzz_of<fq2_t> endo_multiple(const affine_of<fq2_t>& a, uint64_t k) { return mul_u64<fq2_t>(a, k); }

// The status of one canonical point: range, curve, then endo_image(P) == -endo_multiple(P).
template <class F>
ZK_HD point_status check_point(affine_of<F> a, const F* c, uint64_t k) {
    if (!(a.x.is_reduced() & a.y.is_reduced())) return point_status::unreduced;
    if (a.is_inf()) return point_status::ok;
    a.x = a.x.to_mont();
    a.y = a.y.to_mont();
    if (!a.on_curve()) return point_status::off_curve;
    return same_point(endo_multiple(a, k), endo_image(a, c).neg()) ? point_status::ok : point_status::outside_subgroup;
}

template <class F>
__device__ __forceinline__ void check_points(const affine_of<F>* pts, uint64_t n, const F* c, uint64_t k,
                                             unsigned char* status, unsigned long long* first) {
    ZK_GRID_STRIDE(i, n) {
        const affine_of<F> a = pts[i];
        const point_status s = check_point(a, c, k);
        status[i] = (unsigned char)s;
        if (s == point_status::unreduced || s == point_status::off_curve) mark_bad(first, i);
        if (s == point_status::outside_subgroup) mark_bad(first + 1, i);
    }
}

}  // namespace zk

extern "C" {
// pts: n canonical G1 points (24 words each); c: beta (Montgomery, 12 words); k = |z|.
__global__ void g1_subgroup_check(const zk::affine_t* pts, uint64_t n, const zk::fq_t* c, uint64_t k,
                                  unsigned char* status, unsigned long long* first) {
    zk::check_points(pts, n, c, k, status, first);
}
// pts: n canonical G2 points (48 words each); c: c_x, c_y (Montgomery, 24 words each); k = |z|.
__global__ void g2_subgroup_check(const zk::g2_affine_t* pts, uint64_t n, const zk::fq2_t* c, uint64_t k,
                                  unsigned char* status, unsigned long long* first) {
    zk::check_points(pts, n, c, k, status, first);
}
}
