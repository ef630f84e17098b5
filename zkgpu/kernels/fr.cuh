// zkgpu: the BLS12-381 scalar field Fr, r = 0x73eda753...00000001 (255 bits, 8 x 32-bit limbs).
// Only the modulus is written here; ff.cuh derives every other constant from it, and
// tests/test_field.py checks these limbs against zkgpu.arith.field.FR.
#pragma once
#include "ff.cuh"

namespace zk {
typedef modulus_t<0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u, 0x09a1d805u, 0x3339d808u, 0x299d7d48u,
                  0x73eda753u> fr_params;
typedef mont_t<fr_params> fr_t;
static_assert(sizeof(fr_t) == 32, "an fr_t* indexes 32-byte elements, the host's (n, 4) uint64 rows");
}  // namespace zk
