// CPU emulation of zkgpu/kernels/spmv.cu (the synthesis step's sparse product) and fr_ops.cu (the Montgomery
// conversions and the pointwise product it is used with): the kernels compiled by g++ with a one-thread grid
// (emu.h), driven by zkgpu.gpu.spmv's real host code with numpy standing in for CuPy (tests/test_spmv.py).
#include "emu.h"
#include "fr_ops.cu"
#include "spmv.cu"
