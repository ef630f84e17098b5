// prep_msm on the GPU: supraseal's split of an MSM's scalar vector (cuzk groth16_cuda.cu:509-840,
// one circuit) into an exactly-one bitmap, dropped zeros and the compacted significant scalars.
//
// Input: canonical Fr scalars (fr_t: the host's 4 little-endian uint64 limbs are its 8 uint32 limbs),
// read either directly (element j = src[offset + j]) or through a selection (element j =
// src[sel[j]]: the density-filtered A and B vectors, inputs first, of one partition).
//
// prep_classify: one thread per element; warp ballots build the bitmap 32 bits at a time (bit j of
// the uint64 word j/64 = bit j%32 of the uint32 word j/32, little-endian) and count the ones and the
// significant elements (one atomicAdd per warp); sig[j] = 1 for a significant element; the smallest
// index of an element >= r goes to *bad (common.cuh's first-bad-index protocol; the host raises the
// reference's ValueError).
// The significant positions are then an inclusive scan of sig (CuPy cumsum, CUB), and
// prep_compact scatters each significant element's index and limbs to its position, so the
// compacted order is the index order, as the CPU reference (numpy flatnonzero) gives.
#include "common.cuh"
#include "fr.cuh"

using zk::fr_t;
typedef unsigned long long u64;

__device__ __forceinline__ u64 row_of(const long long* sel, int use_sel, u64 offset, u64 j) {
    return use_sel ? (u64)sel[j] : offset + j;
}

extern "C" __global__ void prep_classify(const fr_t* __restrict__ src, const long long* __restrict__ sel, int use_sel,
                                         u64 offset, u64 n, unsigned int* __restrict__ bitmap32,
                                         unsigned char* __restrict__ sig, u64* __restrict__ counts,
                                         u64* __restrict__ bad) {
    const unsigned lane = threadIdx.x & 31u;
    // base is a multiple of blockDim.x (a multiple of 32): every warp covers one aligned 32-bit word
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < n; base += (u64)gridDim.x * blockDim.x) {
        const u64 j = base + threadIdx.x;
        bool one = false, s = false;
        if (j < n) {
            const fr_t x = zk::load_v4(src, row_of(sel, use_sel, offset, j));
            uint32_t high = 0;  // limbs 1..7
#pragma unroll
            for (int k = 1; k < 8; k++) high |= x.v[k];
            const bool small = high == 0 && x.v[0] <= 1;
            one = small && x.v[0] == 1;
            s = !small;
            sig[j] = s ? 1 : 0;
            if (!x.is_reduced()) zk::mark_bad(bad, j);
        }
        const unsigned b1 = __ballot_sync(0xffffffffu, one);
        const unsigned bs = __ballot_sync(0xffffffffu, s);
        if (lane == 0 && j < n) {
            bitmap32[j >> 5] = b1;
            if (b1) atomicAdd(counts, (u64)__popc(b1));
            if (bs) atomicAdd(counts + 1, (u64)__popc(bs));
        }
    }
}

extern "C" __global__ void prep_compact(const fr_t* __restrict__ src, const long long* __restrict__ sel, int use_sel,
                                        u64 offset, u64 n, const unsigned char* __restrict__ sig,
                                        const long long* __restrict__ pos, long long* __restrict__ sig_idx,
                                        fr_t* __restrict__ sig_scalars) {
    ZK_GRID_STRIDE(j, n) {
        if (!sig[j]) continue;
        const u64 o = (u64)(pos[j] - 1);
        sig_idx[o] = (long long)j;
        zk::store_v4(sig_scalars, o, zk::load_v4(src, row_of(sel, use_sel, offset, j)));
    }
}
