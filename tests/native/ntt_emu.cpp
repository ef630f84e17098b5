// CPU emulation of zkgpu/kernels/ntt.cu: the kernels compiled by g++ with one thread per block (emu.h)
// and the grid replayed block by block by the caller (zk_emu_grid sets blockIdx and gridDim).
// tests/test_ntt.py and tests/test_kernels_emulated.py (ntt_pass, ntt_pass_r4, ntt_pass_pair) drive
// them through the real host code in zkgpu/gpu/ntt/transform.py and qap.py with numpy standing in for CuPy,
// which checks the index arithmetic, round schedule, twiddles and scalings of the kernels without a GPU.
#include "emu.h"
uint32_t sm[8 * 33 * 1024];  // dynamic shared memory of one block
#include "ntt.cu"
