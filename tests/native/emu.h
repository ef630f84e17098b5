// The CUDA built-ins that the kernels use, for g++ (tests/native/*_emu.cpp): a grid of one-thread blocks
// (threadIdx = 0, blockDim = 1, so every block-stride loop covers all items and __syncthreads is a no-op),
// replayed block by block by the caller through zk_emu_grid (blockIdx, gridDim; by default one block, so a
// grid-stride loop covers every item in one call).
#pragma once
#include <cstdint>
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__
struct zk_dim3 {
    unsigned x;
};
zk_dim3 blockIdx = {0}, gridDim = {1};
static const zk_dim3 threadIdx = {0}, blockDim = {1};
struct uint4 {
    unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
static inline unsigned __brev(unsigned v) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((v >> i) & 1u) << (31 - i);
    return r;
}
static inline int __clz(unsigned v) { return v ? __builtin_clz(v) : 32; }
static inline void __syncthreads() {}
static inline unsigned long long atomicMin(unsigned long long* a, unsigned long long v) {
    unsigned long long old = *a;
    if (v < old) *a = v;
    return old;
}
extern "C" void zk_emu_grid(unsigned block, unsigned grid) {
    blockIdx.x = block;
    gridDim.x = grid;
}
