// zkgpu: elementwise Fr kernels over arrays of n elements (fr_t: 8 x uint32 limbs, 32 bytes, little-endian).
// Used for Montgomery conversion, validation and the pointwise steps of the Groth16 H computation
// (cuzk groth16_ntt_h.cu: coeff_wise_mult, sub_mult_with_constant).
#include "common.cuh"
#include "fr.cuh"

using zk::fr_t;

extern "C" {

// Canonical -> Montgomery, in place.
__global__ void fr_to_mont(fr_t* a, uint64_t n) {
    ZK_GRID_STRIDE(i, n) { a[i] = a[i].to_mont(); }
}

// Montgomery -> canonical, in place.
__global__ void fr_from_mont(fr_t* a, uint64_t n) {
    ZK_GRID_STRIDE(i, n) { a[i] = a[i].from_mont(); }
}

// *bad = the index of the first element >= r, or n if none (common.cuh: initialise *bad to n).
__global__ void fr_first_unreduced(const fr_t* a, uint64_t n, unsigned long long* bad) {
    ZK_GRID_STRIDE(i, n) {
        if (!a[i].is_reduced()) zk::mark_bad(bad, i);
    }
}

// out = a + b, a - b, a * b, 1/a (all Montgomery, out may alias a or b).
__global__ void fr_add(const fr_t* a, const fr_t* b, fr_t* out, uint64_t n) {
    ZK_GRID_STRIDE(i, n) { out[i] = a[i] + b[i]; }
}
__global__ void fr_sub(const fr_t* a, const fr_t* b, fr_t* out, uint64_t n) {
    ZK_GRID_STRIDE(i, n) { out[i] = a[i] - b[i]; }
}
__global__ void fr_mul(const fr_t* a, const fr_t* b, fr_t* out, uint64_t n) {
    ZK_GRID_STRIDE(i, n) { out[i] = a[i] * b[i]; }
}
__global__ void fr_inv(const fr_t* a, fr_t* out, uint64_t n) {
    ZK_GRID_STRIDE(i, n) { out[i] = a[i].inv(); }
}
// out = a * c for one Montgomery constant *c.
__global__ void fr_scale(const fr_t* a, const fr_t* c, fr_t* out, uint64_t n) {
    const fr_t k = *c;
    ZK_GRID_STRIDE(i, n) { out[i] = a[i] * k; }
}
// a = (a*b - c) * z, the Groth16 H numerator divided by Z on the coset (*z = 1/(g^N - 1)).
__global__ void fr_mul_sub_scale(fr_t* a, const fr_t* b, const fr_t* c, const fr_t* z, uint64_t n) {
    const fr_t k = *z;
    ZK_GRID_STRIDE(i, n) { a[i] = (a[i] * b[i] - c[i]) * k; }
}

}  // extern "C"
