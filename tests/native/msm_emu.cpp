// CPU emulation of zkgpu/kernels/msm.cu and msm_precomp.cu (and fr_ops.cu, whose fr_first_unreduced checks the MSM's
// scalars): the kernels compiled by g++ with a one-thread grid (emu.h), so each grid-stride loop covers
// every item. tests/test_msm.py drives them through the real host code in zkgpu/msm.py with numpy
// standing in for CuPy, which checks the whole GPU pipeline (digits, sort, chunked buckets, window
// reduction, Horner) without a GPU.
#include "emu.h"
#include "msm.cu"
#include "fr_ops.cu"
#include "msm_precomp.cu"
