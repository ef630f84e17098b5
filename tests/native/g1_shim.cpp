// Host build of zkgpu/kernels/g1.cuh for the CPU tests: the same XYZZ/affine formulas and digit
// recoding the GPU runs, compiled by g++ and called through ctypes (tests/test_curve.py).
// Points cross the boundary canonical (affine_t: 24 uint32, x then y), scalars as fr_t (8 uint32 limbs);
// ctypes passes the numpy arrays' pointers.
#include <cstddef>
#include "fr.cuh"
#include "g1.cuh"

using zk::affine_t;
using zk::fq_t;
using zk::fr_t;
using zk::xyzz_t;

static affine_t load_canonical(const affine_t& p) {
    affine_t a = p;
    if (a.is_inf()) return a;
    a.x = a.x.to_mont();
    a.y = a.y.to_mont();
    return a;
}

static void store_canonical(const xyzz_t& p, affine_t* out) {
    affine_t a = p.to_affine();
    a.x = a.x.from_mont();
    a.y = a.y.from_mont();
    *out = a;
}

// The same point with a non-trivial XYZZ representation: X = x z^2, Y = y z^3, ZZ = z^2, ZZZ = z^3.
static xyzz_t scaled(const affine_t& a, const fq_t& zc) {
    if (a.is_inf()) return xyzz_t::inf();
    fq_t z = zc.to_mont();
    if (z.is_zero()) z = fq_t::one();
    xyzz_t r;
    r.ZZ = z * z;
    r.ZZZ = r.ZZ * z;
    r.X = a.x * r.ZZ;
    r.Y = a.y * r.ZZZ;
    return r;
}

extern "C" {

// op 0: a + b (madd-2008-s), 1: a + b (add-2008-s on scaled XYZZ inputs), 2: 2a (dbl-2008-s on
// scaled a), 3: 2a (mdbl-2008-s), 4: k * a (double-and-add), 5: -a + b (madd), 6: to_affine only.
void g1_op(const affine_t* a, const affine_t* b, const fq_t* z1, const fq_t* z2, uint32_t k, affine_t* out, size_t n,
           int op) {
    for (size_t i = 0; i < n; i++) {
        affine_t A = load_canonical(a[i]), B = load_canonical(b[i]);
        xyzz_t r;
        switch (op) {
            case 0: r = xyzz_t::from_affine(A); r.add_affine(B); break;
            case 1: r = scaled(A, z1[i]); r.add(scaled(B, z2[i])); break;
            case 2: r = scaled(A, z1[i]).dbl(); break;
            case 3: r = xyzz_t::mdbl(A); break;
            case 4: r = scaled(A, z1[i]).mul_u32(k); break;
            case 5: r = xyzz_t::from_affine(A.neg()); r.add_affine(B); break;
            default: r = scaled(A, z1[i]); break;
        }
        store_canonical(r, out + i);
    }
}

// Running sum of n points by mixed addition (the bucket accumulation order).
void g1_sum_affine(const affine_t* pts, size_t n, affine_t* out) {
    xyzz_t acc = xyzz_t::inf();
    for (size_t i = 0; i < n; i++) acc.add_affine(load_canonical(pts[i]));
    store_canonical(acc, out);
}

// 1 if on the curve (or the identity), else 0; coordinates must be < q.
void g1_on_curve(const affine_t* pts, size_t n, uint8_t* out) {
    for (size_t i = 0; i < n; i++) out[i] = load_canonical(pts[i]).on_curve() ? 1 : 0;
}

// Signed digits of n scalars, out[i * nwin + w]; returns the number of scalars whose final carry
// was not 0 (must be 0 for scalars < 2^255).
int g1_digits(const fr_t* scalars, size_t n, int c, int32_t* out) {
    int nwin = zk::num_windows(c), bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t carry = 0;
        for (int w = 0; w < nwin; w++) out[i * nwin + w] = zk::signed_digit(scalars[i].v, w, c, carry);
        bad += carry != 0;
    }
    return bad;
}

int g1_num_windows(int c) { return zk::num_windows(c); }
}
