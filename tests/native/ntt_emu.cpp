// CPU emulation of zkgpu/kernels/ntt.cu: the kernels compiled by g++ with one thread per block
// (threadIdx = 0, blockDim = 1, so each block-stride loop covers every item and __syncthreads is a
// no-op) and the grid replayed block by block by the caller (zk_emu_grid sets blockIdx and gridDim).
// tests/test_ntt.py drives them through the real host code in zkgpu/ntt.py and zkgpu/qap.py with numpy
// standing in for CuPy, which checks the index arithmetic, round schedule, twiddles and fused scalings
// of the kernels without a GPU. Not emulated: the stagewise ntt_pass kernels (they index by blockIdx
// without a grid-stride loop; their Python replay is in tests/test_ntt.py).
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
uint32_t sm[8 * 33 * 1024], zk_ntt_smem[8 * 33 * 1024];  // dynamic shared memory of one block
#include "ntt.cu"
#include "ntt_fused.cu"  // for the NTT_FUSED_R given on the command line
extern "C" void zk_emu_grid(unsigned block, unsigned grid) {
    blockIdx.x = block;
    gridDim.x = grid;
}
