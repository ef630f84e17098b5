// Device-wide LSD radix sort of 64-bit keys on a caller's stream, for zkgpu/gpu/msm/devsort.py (ctypes).
//
// A thin extern "C" wrapper over CUB's cub::DeviceRadixSort::SortKeys (the double-buffer form:
// about n keys of auxiliary storage, the caller's second buffer, and a few KiB of temporary
// storage; CUB picks Merrill & Grimshaw's single-pass "onesweep" LSD radix sort on sm_90), built by
// nvcc into a shared library (never by NVRTC: CUB's host-side dispatch needs the CUDA runtime).
// Nothing here waits for the device: the sorted buffer's index (0 = keys, 1 = alt) is known on
// the host when the launches are queued, since it depends only on the number of passes.
//
// The CUDA runtime is linked statically (nvcc's default, -cudart static): the library then needs
// only the driver (libcuda.so), not a libcudart.so of the same version as CuPy's. A runtime, static
// or shared, works in the device's primary context, the one CuPy uses, so CuPy's device pointers
// and stream handles (cudaStream_t == CUstream) are valid here. The runtime's current device is
// per runtime instance and thread, so each call sets the caller's device first and restores the
// previous one after. Built with -fvisibility=hidden: only the zk_devsort_* functions are exported,
// so CUB's template instances and caches here never bind to those of another CUB user in the process
// (CuPy's), whatever their CCCL version.
#include <cstddef>
#include <cstdint>

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

namespace {

// Item counts cross the ABI as 64 bits; below 2^32 the sort runs with CUB's 32-bit offsets (its
// tuned onesweep policy for them), above with 64-bit offsets.
using count_t = unsigned long long;

template <typename N>
cudaError_t sort(void* temp, size_t& bytes, cub::DoubleBuffer<uint64_t>& buf, N n, int begin_bit, int end_bit,
                 cudaStream_t stream) {
    return cub::DeviceRadixSort::SortKeys(temp, bytes, buf, n, begin_bit, end_bit, stream);
}

cudaError_t sort_n(void* temp, size_t& bytes, cub::DoubleBuffer<uint64_t>& buf, count_t n, int begin_bit,
                   int end_bit, cudaStream_t stream) {
    if (n <= 0xffffffffull) return sort(temp, bytes, buf, (unsigned int)n, begin_bit, end_bit, stream);
    return sort(temp, bytes, buf, n, begin_bit, end_bit, stream);
}

struct device_guard {
    int prev = -1;
    cudaError_t err = cudaSuccess;
    explicit device_guard(int device) {
        err = cudaGetDevice(&prev);
        if (err == cudaSuccess && prev != device) err = cudaSetDevice(device);
    }
    ~device_guard() {
        int now = -1;
        if (prev >= 0 && cudaGetDevice(&now) == cudaSuccess && now != prev) cudaSetDevice(prev);
    }
};

}  // namespace

#define ZK_EXPORT __attribute__((visibility("default")))

extern "C" {

// ABI version of this file's functions; zkgpu/gpu/msm/devsort.py checks it after loading the library.
ZK_EXPORT int zk_devsort_abi(void) { return 1; }

// Bytes of temporary storage the sort of n keys over bits [begin_bit, end_bit) needs on `device`
// (no device work, no synchronisation). Returns a cudaError_t (0 = success).
ZK_EXPORT int zk_devsort_temp_bytes(count_t n, int begin_bit, int end_bit, int device, size_t* bytes) {
    device_guard g(device);
    if (g.err != cudaSuccess) return (int)g.err;
    cub::DoubleBuffer<uint64_t> buf(nullptr, nullptr);
    size_t b = 0;
    cudaError_t e = sort_n(nullptr, b, buf, n, begin_bit, end_bit, (cudaStream_t)0);
    *bytes = b;
    return (int)e;
}

// Sort n uint64 keys by bits [begin_bit, end_bit) (stable: equal keys keep their order), queued on
// `stream`. `keys` holds the input, `alt` is a second buffer of n keys; both are overwritten.
// *selector = 0 when the sorted keys end up in `keys`, 1 when in `alt`. `temp` holds temp_bytes
// from zk_devsort_temp_bytes. Returns a cudaError_t (0 = success; launch errors included).
ZK_EXPORT int zk_devsort_keys(void* temp, size_t temp_bytes, uint64_t* keys, uint64_t* alt, count_t n, int begin_bit,
                    int end_bit, void* stream, int device, int* selector) {
    device_guard g(device);
    if (g.err != cudaSuccess) return (int)g.err;
    cub::DoubleBuffer<uint64_t> buf(keys, alt);
    cudaError_t e = sort_n(temp, temp_bytes, buf, n, begin_bit, end_bit, (cudaStream_t)stream);
    if (e == cudaSuccess) e = cudaPeekAtLastError();
    *selector = buf.selector;
    return (int)e;
}

// The runtime's message for a cudaError_t returned above.
ZK_EXPORT const char* zk_devsort_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }

}  // extern "C"
