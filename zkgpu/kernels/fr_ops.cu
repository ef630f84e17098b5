// zkgpu: elementwise Fr kernels over arrays of n elements, 8 x uint32 limbs each (32 bytes),
// little-endian. Used for Montgomery conversion, validation and the pointwise steps of the
// Groth16 H computation (cuzk groth16_ntt_h.cu: coeff_wise_mult, sub_mult_with_constant).
#include "fr.cuh"

using zk::fr_t;

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (uint64_t)gridDim.x * blockDim.x)

extern "C" {

// Canonical -> Montgomery, in place.
__global__ void fr_to_mont(uint32_t* a, uint64_t n) {
    GRID_STRIDE(i, n) { fr_t::load(a + 8 * i).to_mont().store(a + 8 * i); }
}

// Montgomery -> canonical, in place.
__global__ void fr_from_mont(uint32_t* a, uint64_t n) {
    GRID_STRIDE(i, n) { fr_t::load(a + 8 * i).from_mont().store(a + 8 * i); }
}

// Index of the first element >= r, or n if none (out must be initialised to n).
__global__ void fr_first_unreduced(const uint32_t* a, uint64_t n, unsigned long long* out) {
    GRID_STRIDE(i, n) {
        if (!fr_t::load(a + 8 * i).is_reduced()) atomicMin(out, (unsigned long long)i);
    }
}

// out = a + b, a - b, a * b (all Montgomery, out may alias a or b).
__global__ void fr_add(const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) {
    GRID_STRIDE(i, n) { (fr_t::load(a + 8 * i) + fr_t::load(b + 8 * i)).store(out + 8 * i); }
}
__global__ void fr_sub(const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) {
    GRID_STRIDE(i, n) { (fr_t::load(a + 8 * i) - fr_t::load(b + 8 * i)).store(out + 8 * i); }
}
__global__ void fr_mul(const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) {
    GRID_STRIDE(i, n) { (fr_t::load(a + 8 * i) * fr_t::load(b + 8 * i)).store(out + 8 * i); }
}
__global__ void fr_inv(const uint32_t* a, uint32_t* out, uint64_t n) {
    GRID_STRIDE(i, n) { fr_t::load(a + 8 * i).inv().store(out + 8 * i); }
}
// out = a * c for one Montgomery constant c (8 limbs).
__global__ void fr_scale(const uint32_t* a, const uint32_t* c, uint32_t* out, uint64_t n) {
    fr_t k = fr_t::load(c);
    GRID_STRIDE(i, n) { (fr_t::load(a + 8 * i) * k).store(out + 8 * i); }
}
// a = (a*b - c) * z, the Groth16 H numerator divided by Z on the coset (z = 1/(g^N - 1)).
__global__ void fr_mul_sub_scale(uint32_t* a, const uint32_t* b, const uint32_t* c, const uint32_t* z, uint64_t n) {
    fr_t k = fr_t::load(z);
    GRID_STRIDE(i, n) {
        fr_t x = fr_t::load(a + 8 * i) * fr_t::load(b + 8 * i) - fr_t::load(c + 8 * i);
        (x * k).store(a + 8 * i);
    }
}

}  // extern "C"
