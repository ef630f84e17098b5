// zkgpu: BLS12-381 G1, y^2 = x^3 + 4 over Fq: ec.cuh's formulas over fq_t.
//   affine_t  24 uint32 words (x then y, 12 little-endian limbs each); identity all zero
//   xyzz_t    48 words (X, Y, ZZ, ZZZ); identity ZZ = 0
#pragma once
#include "ec.cuh"

namespace zk {
typedef affine_of<fq_t> affine_t;
typedef xyzz_of<fq_t> xyzz_t;
static_assert(sizeof(affine_t) == 96 && sizeof(xyzz_t) == 192, "G1 point layouts: 24 and 48 uint32 words");
}  // namespace zk
