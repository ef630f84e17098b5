// CPU emulation of zkgpu/kernels/subgroup.cu (the key points' range, curve and endomorphism subgroup checks):
// the kernels compiled by g++ with a one-thread grid (emu.h), driven by zkgpu.gpu.subgroup's real host code
// with numpy standing in for CuPy (tests/test_subgroup.py).
#include "emu.h"
#include "subgroup.cu"
