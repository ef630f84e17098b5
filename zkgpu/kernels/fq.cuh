// zkgpu: the BLS12-381 base field Fq, q = 0x1a0111ea...ffffaaab (381 bits, 12 x 32-bit limbs).
// Same template as Fr (ff.cuh); tests/test_field.py checks these limbs against zkgpu.field.FQ.
#pragma once
#include "ff.cuh"

namespace zk {
struct fq_params {
    static constexpr int N = 12;
    ZK_HDC static uint32_t p(int i) {
        constexpr uint32_t m[12] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu,
                                    0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u,
                                    0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
        return m[i];
    }
};
typedef mont_t<fq_params> fq_t;
}  // namespace zk
