// zkgpu: what the kernel modules share -- the grid-stride loop, 128-bit typed loads and stores of field
// elements, the first-bad-index protocol of the validating kernels, and how the host reads constants.
//
// Kernel signatures take typed pointers (const fr_t*, affine_t*, xyzz_t*: fr.cuh, g1.cuh) and index them
// by element; the host passes the device arrays' pointers (CuPy arrays of uint32/uint64 words), so the
// ABI is a plain pointer either way.
//
// Constants and enums shared with the Python host (zkgpu/core/cuda.py: header_defines, header_enum) are
// written once, here in the kernel sources, and read from the source text by the host: a constant as
// `#define NAME <integer>` on one line (decimal or 0x hex, optional u suffix, optional // comment),
// an enum as `enum class name : int { a = 0, b = 1, ... };` with every value explicit. The host never
// restates a value; tests/test_kernels_compile.py checks that what it reads is what the compiler sees.
#pragma once
#include "ff.cuh"

// for i = this thread's first index, stepping by the grid's thread count, while i < n: any grid covers
// all n items (the host picks the grid size for occupancy, not to match n).
#define ZK_GRID_STRIDE(i, n)                                                                       \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (uint64_t)(n); \
         i += (uint64_t)gridDim.x * blockDim.x)

namespace zk {

// x[i] and x[i] = v with 128-bit accesses (one ld/st.global.v4 per 16 bytes) for a Montgomery element
// of a multiple of 4 limbs (fr_t: 2, fq_t: 3); x must be 16-byte aligned, as every CuPy allocation and
// every whole-element offset into it is.
template <class F>
__device__ __forceinline__ F load_v4(const F* x, uint64_t i) {
    static_assert(F::N % 4 == 0, "128-bit accesses need a multiple of 4 limbs");
    const uint4* p = reinterpret_cast<const uint4*>(x + i);
    F r;
#pragma unroll
    for (int k = 0; k < F::N / 4; k++) {
        const uint4 u = p[k];
        r.v[4 * k] = u.x;
        r.v[4 * k + 1] = u.y;
        r.v[4 * k + 2] = u.z;
        r.v[4 * k + 3] = u.w;
    }
    return r;
}
template <class F>
__device__ __forceinline__ void store_v4(F* x, uint64_t i, const F& r) {
    static_assert(F::N % 4 == 0, "128-bit accesses need a multiple of 4 limbs");
    uint4* p = reinterpret_cast<uint4*>(x + i);
#pragma unroll
    for (int k = 0; k < F::N / 4; k++) p[k] = make_uint4(r.v[4 * k], r.v[4 * k + 1], r.v[4 * k + 2], r.v[4 * k + 3]);
}

// The first-bad-index protocol of the validating kernels (fr_first_unreduced, g1_prepare, fq_from_mont,
// prep_classify): the host sets *bad = n before the launch, every thread that finds element i bad calls
// mark_bad(bad, i), and afterwards *bad is the smallest bad index, or n when there is none; the host
// then raises an error naming that index and value.
__device__ __forceinline__ void mark_bad(unsigned long long* bad, uint64_t i) { atomicMin(bad, (unsigned long long)i); }

}  // namespace zk
