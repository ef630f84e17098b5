// CPU emulation of zkgpu/kernels/msm.cu: the kernels compiled by g++ with a one-thread grid
// (blockIdx = threadIdx = 0, blockDim = gridDim = 1), so each grid-stride loop covers every
// item. tests/test_msm.py drives them through the real host code in zkgpu/msm.py with numpy
// standing in for CuPy, which checks the whole GPU pipeline (digits, sort, chunked buckets,
// window reduction, Horner) without a GPU.
#include <cstdint>
#define __global__
#define __device__
#define __forceinline__ inline
struct zk_dim3 {
    unsigned x;
};
static const zk_dim3 blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
static inline unsigned long long atomicMin(unsigned long long* a, unsigned long long v) {
    unsigned long long old = *a;
    if (v < old) *a = v;
    return old;
}
#include "msm.cu"
