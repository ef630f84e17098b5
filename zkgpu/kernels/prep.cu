// prep_msm on the GPU: supraseal's split of an MSM's scalar vector (cuzk groth16_cuda.cu:509-840,
// one circuit) into an exactly-one bitmap, dropped zeros and the compacted significant scalars.
//
// Input: canonical Fr scalars, 4 little-endian uint64 limbs each (host layout of zkgpu.field),
// read either directly (element j = src[offset + j]) or through a selection (element j =
// src[sel[j]]: the density-filtered A and B vectors, inputs first, of one partition).
//
// prep_classify: one thread per element; warp ballots build the bitmap 32 bits at a time (bit j of
// the uint64 word j/64 = bit j%32 of the uint32 word j/32, little-endian) and count the ones and the
// significant elements (one atomicAdd per warp); sig[j] = 1 for a significant element; the smallest
// index of an element >= r goes to *bad (atomicMin; the host raises the reference's ValueError).
// The significant positions are then an inclusive scan of sig (CuPy cumsum, CUB), and
// prep_compact scatters each significant element's index and limbs to its position, so the
// compacted order is the index order, as the CPU reference (numpy flatnonzero) gives.
// no #include: NVRTC (how zkgpu compiles kernels, zkgpu/_cuda.py) has no host headers

typedef unsigned long long u64;

// r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001, limbs little-endian
__device__ __forceinline__ bool geq_r(u64 x0, u64 x1, u64 x2, u64 x3) {
    const u64 r0 = 0xffffffff00000001ull, r1 = 0x53bda402fffe5bfeull, r2 = 0x3339d80809a1d805ull,
              r3 = 0x73eda753299d7d48ull;
    if (x3 != r3) return x3 > r3;
    if (x2 != r2) return x2 > r2;
    if (x1 != r1) return x1 > r1;
    return x0 >= r0;
}

__device__ __forceinline__ u64 row_of(const long long* sel, int use_sel, u64 offset, u64 j) {
    return use_sel ? (u64)sel[j] : offset + j;
}

extern "C" __global__ void prep_classify(const u64* __restrict__ src, const long long* __restrict__ sel, int use_sel,
                                         u64 offset, u64 n, unsigned int* __restrict__ bitmap32,
                                         unsigned char* __restrict__ sig, u64* __restrict__ counts,
                                         u64* __restrict__ bad) {
    const unsigned lane = threadIdx.x & 31u;
    // base is a multiple of blockDim.x (a multiple of 32): every warp covers one aligned 32-bit word
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < n; base += (u64)gridDim.x * blockDim.x) {
        const u64 j = base + threadIdx.x;
        bool one = false, s = false;
        if (j < n) {
            const u64* x = src + 4 * row_of(sel, use_sel, offset, j);
            const u64 x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
            const bool small = ((x1 | x2 | x3) == 0) && x0 <= 1;
            one = small && x0 == 1;
            s = !small;
            sig[j] = s ? 1 : 0;
            if (geq_r(x0, x1, x2, x3)) atomicMin(bad, j);
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

extern "C" __global__ void prep_compact(const u64* __restrict__ src, const long long* __restrict__ sel, int use_sel,
                                        u64 offset, u64 n, const unsigned char* __restrict__ sig,
                                        const long long* __restrict__ pos, long long* __restrict__ sig_idx,
                                        u64* __restrict__ sig_scalars) {
    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (u64)gridDim.x * blockDim.x) {
        if (!sig[j]) continue;
        const u64 o = (u64)(pos[j] - 1);
        const u64* x = src + 4 * row_of(sel, use_sel, offset, j);
        sig_idx[o] = (long long)j;
        u64* y = sig_scalars + 4 * o;
        y[0] = x[0];
        y[1] = x[1];
        y[2] = x[2];
        y[3] = x[3];
    }
}
