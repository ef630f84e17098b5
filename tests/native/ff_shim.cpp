// Host build of zkgpu/kernels/*.cuh for the CPU tests: the same arithmetic the GPU runs,
// compiled by g++ and called through ctypes (tests/native/__init__.py builds it).
#include <cstddef>
#include "fr.cuh"
#include "fq.cuh"

template <class F>
static void binop(const F* a, const F* b, F* out, size_t n, int op) {
    for (size_t i = 0; i < n; i++) {
        F x = a[i], y = b[i], r;
        switch (op) {
            case 0: r = x + y; break;
            case 1: r = x - y; break;
            case 2: r = x * y; break;
            case 3: r = x.inv(); break;
            case 4: r = x.to_mont(); break;
            case 5: r = x.from_mont(); break;
            case 6: r = -x; break;
            case 7: r = x.sqr(); break;
            default: r = F::one(); break;
        }
        out[i] = r;
    }
}

extern "C" {
void fr_binop(const zk::fr_t* a, const zk::fr_t* b, zk::fr_t* out, size_t n, int op) { binop(a, b, out, n, op); }
void fq_binop(const zk::fq_t* a, const zk::fq_t* b, zk::fq_t* out, size_t n, int op) { binop(a, b, out, n, op); }
uint32_t fr_inv32() { return zk::fr_t::INV; }
uint32_t fq_inv32() { return zk::fq_t::INV; }
}
