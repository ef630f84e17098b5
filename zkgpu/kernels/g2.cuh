// zkgpu: BLS12-381 G2, y^2 = x^3 + 4(u + 1) over Fq2 (fq2.cuh): ec.cuh's formulas over fq2_t.
//   g2_affine_t  48 uint32 words (x.c0, x.c1, y.c0, y.c1, 12 little-endian limbs each); identity all zero
//   g2_xyzz_t    96 words (X, Y, ZZ, ZZZ, each c0 then c1); identity ZZ = 0
// The host layout (zkgpu/arith/curve.py) is the same bytes as (n, 24) uint64, canonical.
#pragma once
#include "ec.cuh"

namespace zk {
typedef affine_of<fq2_t> g2_affine_t;
typedef xyzz_of<fq2_t> g2_xyzz_t;
static_assert(sizeof(g2_affine_t) == 192 && sizeof(g2_xyzz_t) == 384, "G2 point layouts: 48 and 96 uint32 words");
}  // namespace zk
