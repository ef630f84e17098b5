// zkgpu: a sparse matrix-vector product over Fr (the Groth16 synthesis step: A.w and B.w from the key's
// coefficients), on a CSR whose rows are cut into segments of at most a few terms (zkgpu/gpu/spmv.py builds it).
//
// Forms: a coefficient is stored as v*R^2 mod r (R = 2^256), the vector w canonical, so one Montgomery product
// coef * w = v*w*R is the Montgomery form of the term, and the sums land in Montgomery form, the form the NTTs
// read. One thread per segment (spmv_segments) bounds a thread's work whatever a row's length; a row of several
// segments writes their partial sums to scratch slots, and one thread per such row adds them (spmv_combine).
#include "common.cuh"
#include "fr.cuh"

using zk::fr_t;

extern "C" {

// Segment s holds terms ptr[s] .. ptr[s+1]-1: out[dest[s]] = sum of coef[k] * w[col[k]] (Montgomery products).
__global__ void spmv_segments(const fr_t* coef, const uint32_t* col, const uint32_t* ptr, const uint32_t* dest,
                              const fr_t* w, fr_t* out, uint64_t nseg) {
    ZK_GRID_STRIDE(s, nseg) {
        fr_t acc = fr_t::zero();
        const uint32_t end = ptr[s + 1];
        for (uint32_t k = ptr[s]; k < end; k++) acc = acc + zk::load_v4(coef, k) * zk::load_v4(w, col[k]);
        zk::store_v4(out, dest[s], acc);
    }
}

// Row g of several segments: out[dest[g]] = out[first[g]] + ... + out[first[g+1]-1] (its segments' slots).
__global__ void spmv_combine(fr_t* out, const uint32_t* first, const uint32_t* dest, uint64_t ngroups) {
    ZK_GRID_STRIDE(g, ngroups) {
        fr_t acc = fr_t::zero();
        const uint32_t end = first[g + 1];
        for (uint32_t k = first[g]; k < end; k++) acc = acc + zk::load_v4(out, k);
        zk::store_v4(out, dest[g], acc);
    }
}

}  // extern "C"
