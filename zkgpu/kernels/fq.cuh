// zkgpu: the BLS12-381 base field Fq, q = 0x1a0111ea...ffffaaab (381 bits, 12 x 32-bit limbs),
// the same template as Fr (ff.cuh); tests/test_field.py checks these limbs against zkgpu.arith.field.FQ.
#pragma once
#include "ff.cuh"

namespace zk {
typedef modulus_t<0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu,
                  0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau> fq_params;
typedef mont_t<fq_params> fq_t;
static_assert(sizeof(fq_t) == 48, "an fq_t is 12 uint32 limbs, no padding");
}  // namespace zk
