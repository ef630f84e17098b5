// zkgpu: Montgomery-product microbenchmark and check kernels for the ZK_FF_MUL variants of ff.cuh (issue 13).
// Driver: scripts/ff_microbench.py (timing, JSON); tests/test_ff_variants.py checks every variant against
// Python ints. Build one module per variant: -DZK_FF_MUL=<n> (-DZK_FF_PTX=1 -DZK_FF_MUL=0: the volatile
// PTX chains the stagewise NTT used before issue 13). Layout: elements of N uint32 limbs, little-endian,
// in Montgomery form (any value < p; the product of two is a*b*R^-1 mod p, canonical, < p).
//
//   <f>_mul_check(a, b, out, n)     out[i] = a[i] * b[i]            (f = fr, fq)
//   <f>_sqr_check(a, out, n)        out[i] = a[i].sqr()
//   <f>_mul_bench(x, y, out, n, iters)  each of n threads runs ZK_BENCH_ILP independent chains
//                                   x_k <- x_k * y_k, iters times (dependent within a chain), and stores
//                                   the chains' product, so nothing is optimised away:
//                                   n * iters * ZK_BENCH_ILP products
//   <f>_sqr_bench(x, out, n, iters) the same with x_k <- x_k.sqr()
#include "fq.cuh"
#include "fr.cuh"

#ifndef ZK_BENCH_ILP
#define ZK_BENCH_ILP 2
#endif

template <class F>
__device__ __forceinline__ F ld(const uint32_t* p, uint64_t i) {
    return F::load(p + (uint64_t)F::N * i);
}

template <class F>
__device__ __forceinline__ void mul_check(const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) (ld<F>(a, i) * ld<F>(b, i)).store(out + (uint64_t)F::N * i);
}

template <class F>
__device__ __forceinline__ void sqr_check(const uint32_t* a, uint32_t* out, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ld<F>(a, i).sqr().store(out + (uint64_t)F::N * i);
}

// x, y: n * ZK_BENCH_ILP elements each (chain k of thread i at index k * n + i, coalesced).
template <class F, bool SQR>
__device__ __forceinline__ void bench(const uint32_t* x, const uint32_t* y, uint32_t* out, uint64_t n, uint32_t iters) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F acc[ZK_BENCH_ILP], mul[ZK_BENCH_ILP];
#pragma unroll
    for (int k = 0; k < ZK_BENCH_ILP; k++) {
        acc[k] = ld<F>(x, k * n + i);
        if (!SQR) mul[k] = ld<F>(y, k * n + i);
    }
#pragma unroll 1
    for (uint32_t it = 0; it < iters; it++) {
#pragma unroll
        for (int k = 0; k < ZK_BENCH_ILP; k++) acc[k] = SQR ? acc[k].sqr() : acc[k] * mul[k];
    }
    F r = acc[0];
#pragma unroll
    for (int k = 1; k < ZK_BENCH_ILP; k++) r = r + acc[k];
    r.store(out + (uint64_t)F::N * i);
}

#define ZK_FF_BENCH_KERNELS(f, F)                                                                           \
    extern "C" __global__ void f##_mul_check(const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) { \
        mul_check<F>(a, b, out, n);                                                                          \
    }                                                                                                       \
    extern "C" __global__ void f##_sqr_check(const uint32_t* a, uint32_t* out, uint64_t n) {                \
        sqr_check<F>(a, out, n);                                                                             \
    }                                                                                                       \
    extern "C" __global__ void f##_mul_bench(const uint32_t* x, const uint32_t* y, uint32_t* out, uint64_t n, \
                                             uint32_t iters) {                                               \
        bench<F, false>(x, y, out, n, iters);                                                                \
    }                                                                                                       \
    extern "C" __global__ void f##_sqr_bench(const uint32_t* x, uint32_t* out, uint64_t n, uint32_t iters) { \
        bench<F, true>(x, x, out, n, iters);                                                                 \
    }

ZK_FF_BENCH_KERNELS(fr, zk::fr_t)
ZK_FF_BENCH_KERNELS(fq, zk::fq_t)
