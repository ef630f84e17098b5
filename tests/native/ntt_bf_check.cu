// Check kernel for ntt_common.cuh's butterfly additions (tests/test_kernels_emulated.py runs its sm_90 PTX in the
// interpreter tests/ptxemu.py, built with and without -DZK_FF_ASM_TAIL=1): for element i of a, b, w
// (8 words each), out[3i] = bf_add(a, b), out[3i+1] = bf_sub(a, b), out[3i+2] = bf_dif_mul(w, a, b).
// Word-by-word loads and stores (the interpreter's subset).
#include "ntt_common.cuh"

__device__ __forceinline__ fr_t ld8(const uint32_t* p, uint64_t i) {
    fr_t r;
    for (int k = 0; k < 8; k++) r.v[k] = p[8 * i + k];
    return r;
}
__device__ __forceinline__ void st8(uint32_t* p, uint64_t i, const fr_t& r) {
    for (int k = 0; k < 8; k++) p[8 * i + k] = r.v[k];
}

extern "C" __global__ void ntt_bf_check(const uint32_t* a, const uint32_t* b, const uint32_t* w, uint32_t* out, uint64_t n) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const fr_t x = ld8(a, i), y = ld8(b, i);
        st8(out, 3 * i, bf_add(x, y));
        st8(out, 3 * i + 1, bf_sub(x, y));
        st8(out, 3 * i + 2, bf_dif_mul(ld8(w, i), x, y));
    }
}
