// zkgpu: Montgomery prime-field arithmetic shared by every kernel.
//
// One template, mont_t<P>, serves both BLS12-381 fields: P gives the limb count N and the
// modulus limbs p(i); every other constant (-p^-1 mod 2^32, R mod p, R^2 mod p, p-2) is
// derived here at compile time from p, so nothing but the modulus itself is written down.
//
// Representation: N little-endian 32-bit limbs, Montgomery form x*R mod p with R = 2^(32N).
// Multiplication is CIOS (coarsely integrated operand scanning) Montgomery multiplication,
// Koc, Acar, Kaliski, "Analyzing and comparing Montgomery multiplication algorithms",
// IEEE Micro 16(3), 1996, section 3; inversion is Fermat's little theorem, x^(p-2).
//
// The header compiles three ways: nvcc, NVRTC (CuPy RawModule) and a plain C++17 host
// compiler (tests/native builds it with g++ to check the arithmetic without a GPU).
#pragma once

#if defined(__CUDACC_RTC__)
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
typedef long long int64_t;
#else
#include <cstdint>
#endif

#if defined(__CUDACC__)
#define ZK_HD __host__ __device__ __forceinline__
#define ZK_HDC __host__ __device__ constexpr
#define ZK_UNROLL _Pragma("unroll")
#else
#define ZK_HD inline
#define ZK_HDC constexpr
#define ZK_UNROLL
#endif

namespace zk {

template <int N>
struct limbs_t {
    uint32_t v[N];
};

// A field for mont_t: its modulus as N little-endian 32-bit limbs (fr.cuh, fq.cuh); every other
// constant is derived from these below.
template <uint32_t... M>
struct modulus_t {
    static constexpr int N = sizeof...(M);
    ZK_HDC static uint32_t p(int i) {
        constexpr uint32_t m[N] = {M...};
        return m[i];
    }
};

// -m0^-1 mod 2^32 for odd m0, by Newton's iteration x <- x(2 - m0 x) (5 steps: 3 -> 96 bits).
ZK_HDC uint32_t neg_inv32(uint32_t m0) {
    uint32_t x = m0;  // correct to 3 bits, since m0*m0 = 1 mod 8 for odd m0
    for (int i = 0; i < 5; i++) x *= 2u - m0 * x;
    return 0u - x;
}

template <class P>
ZK_HDC limbs_t<P::N> modulus_limbs() {
    limbs_t<P::N> m{};
    for (int i = 0; i < P::N; i++) m.v[i] = P::p(i);
    return m;
}

// 2^k mod p, by k modular doublings of 1.
template <class P>
ZK_HDC limbs_t<P::N> pow2_mod(int k) {
    constexpr int N = P::N;
    limbs_t<N> x{};
    x.v[0] = 1;
    for (int s = 0; s < k; s++) {
        limbs_t<N> y{};
        uint32_t carry = 0;
        for (int i = 0; i < N; i++) {
            y.v[i] = (x.v[i] << 1) | carry;
            carry = x.v[i] >> 31;
        }
        bool ge = carry != 0;
        if (!ge) {
            ge = true;  // equal counts as >=
            for (int i = N - 1; i >= 0; i--) {
                if (y.v[i] != P::p(i)) {
                    ge = y.v[i] > P::p(i);
                    break;
                }
            }
        }
        if (ge) {
            uint64_t borrow = 0;
            for (int i = 0; i < N; i++) {
                uint64_t d = (uint64_t)y.v[i] - P::p(i) - borrow;
                y.v[i] = (uint32_t)d;
                borrow = (d >> 63) & 1;
            }
        }
        x = y;
    }
    return x;
}

// p - 2, the Fermat inversion exponent.
template <class P>
ZK_HDC limbs_t<P::N> modulus_minus_two() {
    limbs_t<P::N> e{};
    uint64_t borrow = 2;
    for (int i = 0; i < P::N; i++) {
        uint64_t d = (uint64_t)P::p(i) - borrow;
        e.v[i] = (uint32_t)d;
        borrow = (d >> 63) & 1;
    }
    return e;
}

// The Montgomery product (notes/ff-arith.md has the measurements): device code runs CIOS with the even/odd
// split (mul_evenodd): a*b[i] accumulates the products of the even limbs of a and those of the odd limbs in two
// accumulators, each one unbroken lo/hi carry chain (so the high halves need no second pass), merged once at the
// end; one non-volatile asm statement per chain. The idea of sppark (supranational/sppark: ff/mont_t.cuh,
// mad_n_redc); our own code. Needs a spare top bit in p (r: 255 bits, q: 381 bits in 384). On the H200 1.41x (Fr)
// and 1.72x (Fq) the products/s of the portable CIOS (mul_cios), which host code runs. Both give the same
// canonical result (< p) bit for bit (tests/test_field.py, the emulated kernels against Python ints).
#ifndef ZK_FF_ASM_TAIL
#define ZK_FF_ASM_TAIL 0  // 1: the even/odd product's merge and final subtraction as asm chains (mont_t::eo_tail)
#endif
#if defined(__CUDA_ARCH__)
// One asm statement = one whole carry chain: the condition code never has to survive from one asm
// statement to the next (the compiler does not promise that), and the statements are not volatile,
// so their order is only their data flow. Operands (numbered, N limbs, H = N/2):
//   EO_SHIFT  %0..%N-1 o, %N e0 ("+r"); %N+1..%N+H the odd limbs a[1], a[3], ..; %N+H+1 y:
//             e0 += o[1]; o = o[2..N-1] + y * (a[1], a[3], ..) with the carry of e0 + o[1] as carry-in
//   EO_EVEN   %0..%N-1 e, %N top ("+r"); %N+1..%N+H the even limbs x[0], x[2], ..; %N+H+1 y:
//             e += y * (x[0], x[2], ..), the carry out added to top (a's limbs, or p's as immediates)
//   EO_ODD    %0..%N-1 o ("+r"); %N y; %N+1..%N+H p's odd limbs (immediates): o += y * (p[1], p[3], ..),
//             no carry out (the spare top bit of p bounds o)
#define ZK_ASM_EO_SHIFT_8 \
    "add.cc.u32 %8, %8, %1;\n\t" \
    "madc.lo.cc.u32 %0, %13, %9, %2;\n\t" \
    "madc.hi.cc.u32 %1, %13, %9, %3;\n\t" \
    "madc.lo.cc.u32 %2, %13, %10, %4;\n\t" \
    "madc.hi.cc.u32 %3, %13, %10, %5;\n\t" \
    "madc.lo.cc.u32 %4, %13, %11, %6;\n\t" \
    "madc.hi.cc.u32 %5, %13, %11, %7;\n\t" \
    "madc.lo.cc.u32 %6, %13, %12, 0;\n\t" \
    "madc.hi.u32 %7, %13, %12, 0;\n\t"
#define ZK_ASM_EO_EVEN_8 \
    "mad.lo.cc.u32 %0, %13, %9, %0;\n\t" \
    "madc.hi.cc.u32 %1, %13, %9, %1;\n\t" \
    "madc.lo.cc.u32 %2, %13, %10, %2;\n\t" \
    "madc.hi.cc.u32 %3, %13, %10, %3;\n\t" \
    "madc.lo.cc.u32 %4, %13, %11, %4;\n\t" \
    "madc.hi.cc.u32 %5, %13, %11, %5;\n\t" \
    "madc.lo.cc.u32 %6, %13, %12, %6;\n\t" \
    "madc.hi.cc.u32 %7, %13, %12, %7;\n\t" \
    "addc.u32 %8, %8, 0;\n\t"
#define ZK_ASM_EO_ODD_8 \
    "mad.lo.cc.u32 %0, %8, %9, %0;\n\t" \
    "madc.hi.cc.u32 %1, %8, %9, %1;\n\t" \
    "madc.lo.cc.u32 %2, %8, %10, %2;\n\t" \
    "madc.hi.cc.u32 %3, %8, %10, %3;\n\t" \
    "madc.lo.cc.u32 %4, %8, %11, %4;\n\t" \
    "madc.hi.cc.u32 %5, %8, %11, %5;\n\t" \
    "madc.lo.cc.u32 %6, %8, %12, %6;\n\t" \
    "madc.hi.u32 %7, %8, %12, %7;\n\t"
#define ZK_ASM_EO_SHIFT_12 \
    "add.cc.u32 %12, %12, %1;\n\t" \
    "madc.lo.cc.u32 %0, %19, %13, %2;\n\t" \
    "madc.hi.cc.u32 %1, %19, %13, %3;\n\t" \
    "madc.lo.cc.u32 %2, %19, %14, %4;\n\t" \
    "madc.hi.cc.u32 %3, %19, %14, %5;\n\t" \
    "madc.lo.cc.u32 %4, %19, %15, %6;\n\t" \
    "madc.hi.cc.u32 %5, %19, %15, %7;\n\t" \
    "madc.lo.cc.u32 %6, %19, %16, %8;\n\t" \
    "madc.hi.cc.u32 %7, %19, %16, %9;\n\t" \
    "madc.lo.cc.u32 %8, %19, %17, %10;\n\t" \
    "madc.hi.cc.u32 %9, %19, %17, %11;\n\t" \
    "madc.lo.cc.u32 %10, %19, %18, 0;\n\t" \
    "madc.hi.u32 %11, %19, %18, 0;\n\t"
#define ZK_ASM_EO_EVEN_12 \
    "mad.lo.cc.u32 %0, %19, %13, %0;\n\t" \
    "madc.hi.cc.u32 %1, %19, %13, %1;\n\t" \
    "madc.lo.cc.u32 %2, %19, %14, %2;\n\t" \
    "madc.hi.cc.u32 %3, %19, %14, %3;\n\t" \
    "madc.lo.cc.u32 %4, %19, %15, %4;\n\t" \
    "madc.hi.cc.u32 %5, %19, %15, %5;\n\t" \
    "madc.lo.cc.u32 %6, %19, %16, %6;\n\t" \
    "madc.hi.cc.u32 %7, %19, %16, %7;\n\t" \
    "madc.lo.cc.u32 %8, %19, %17, %8;\n\t" \
    "madc.hi.cc.u32 %9, %19, %17, %9;\n\t" \
    "madc.lo.cc.u32 %10, %19, %18, %10;\n\t" \
    "madc.hi.cc.u32 %11, %19, %18, %11;\n\t" \
    "addc.u32 %12, %12, 0;\n\t"
#define ZK_ASM_EO_ODD_12 \
    "mad.lo.cc.u32 %0, %12, %13, %0;\n\t" \
    "madc.hi.cc.u32 %1, %12, %13, %1;\n\t" \
    "madc.lo.cc.u32 %2, %12, %14, %2;\n\t" \
    "madc.hi.cc.u32 %3, %12, %14, %3;\n\t" \
    "madc.lo.cc.u32 %4, %12, %15, %4;\n\t" \
    "madc.hi.cc.u32 %5, %12, %15, %5;\n\t" \
    "madc.lo.cc.u32 %6, %12, %16, %6;\n\t" \
    "madc.hi.cc.u32 %7, %12, %16, %7;\n\t" \
    "madc.lo.cc.u32 %8, %12, %17, %8;\n\t" \
    "madc.hi.cc.u32 %9, %12, %17, %9;\n\t" \
    "madc.lo.cc.u32 %10, %12, %18, %10;\n\t" \
    "madc.hi.u32 %11, %12, %18, %11;\n\t"
namespace ptx {
template <int N>
struct rows;
#define ZK_W8(t) "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]), "+r"(t[7])
#define ZK_W12(t) ZK_W8(t), "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11])
#define ZK_EVEN8(c, x) c(x, 0), c(x, 2), c(x, 4), c(x, 6)
#define ZK_ODD8(c, x) c(x, 1), c(x, 3), c(x, 5), c(x, 7)
#define ZK_EVEN12(c, x) ZK_EVEN8(c, x), c(x, 8), c(x, 10)
#define ZK_ODD12(c, x) ZK_ODD8(c, x), c(x, 9), c(x, 11)
#define ZK_PN(x, i) "n"(P::p(i))
#define ZK_RR(x, i) "r"(x[i])
// rows<N>: the even/odd chains: eo_shift (e0 += o[1];
// o = o[2..] + y*a_odd), eo_even (e += y*x_even, carry into top), eo_odd (o += m*p_odd, no carry out).
#define ZK_ROWS(N, EVEN, ODD, WN)                                                                  \
    template <>                                                                                               \
    struct rows<N> {                                                                                          \
        __device__ __forceinline__ static void eo_shift(uint32_t* o, uint32_t& e0, const uint32_t* a, uint32_t y) { \
            asm(ZK_ASM_EO_SHIFT_##N : WN(o), "+r"(e0) : ODD(ZK_RR, a), "r"(y));                               \
        }                                                                                                     \
        __device__ __forceinline__ static void eo_even(uint32_t* e, uint32_t& top, const uint32_t* a, uint32_t y) { \
            asm(ZK_ASM_EO_EVEN_##N : WN(e), "+r"(top) : EVEN(ZK_RR, a), "r"(y));                              \
        }                                                                                                     \
        template <class P>                                                                                    \
        __device__ __forceinline__ static void eo_even_p(uint32_t* e, uint32_t& top, uint32_t m) {            \
            asm(ZK_ASM_EO_EVEN_##N : WN(e), "+r"(top) : EVEN(ZK_PN, _), "r"(m));                               \
        }                                                                                                     \
        template <class P>                                                                                    \
        __device__ __forceinline__ static void eo_odd_p(uint32_t* o, uint32_t m) {                            \
            asm(ZK_ASM_EO_ODD_##N : WN(o) : "r"(m), ODD(ZK_PN, _));                                            \
        }                                                                                                     \
    };
ZK_ROWS(8, ZK_EVEN8, ZK_ODD8, ZK_W8)
ZK_ROWS(12, ZK_EVEN12, ZK_ODD12, ZK_W12)
}  // namespace ptx
#endif

template <class P>
struct mont_t {
    static constexpr int N = P::N;
    static constexpr uint32_t INV = neg_inv32(P::p(0));  // -p^-1 mod 2^32
    uint32_t v[N];

    ZK_HD static mont_t zero() {
        mont_t r;
        ZK_UNROLL
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    // 1 in Montgomery form, R mod p.
    ZK_HD static mont_t one() {
        constexpr limbs_t<N> R = pow2_mod<P>(32 * N);
        mont_t r;
        ZK_UNROLL
        for (int i = 0; i < N; i++) r.v[i] = R.v[i];
        return r;
    }
    ZK_HD static mont_t load(const uint32_t* src) {
        mont_t r;
        ZK_UNROLL
        for (int i = 0; i < N; i++) r.v[i] = src[i];
        return r;
    }
    ZK_HD void store(uint32_t* dst) const {
        ZK_UNROLL
        for (int i = 0; i < N; i++) dst[i] = v[i];
    }
    ZK_HD bool is_zero() const {
        uint32_t acc = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    ZK_HD bool operator==(const mont_t& o) const {
        uint32_t acc = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }
    ZK_HD bool operator!=(const mont_t& o) const { return !(*this == o); }

    // r = t - p if t >= p (t given with an extra top word), else t.
    ZK_HD static mont_t reduce_once(const uint32_t* t, uint32_t top) {
        mont_t d;
        uint64_t borrow = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) {
            uint64_t s = (uint64_t)t[i] - P::p(i) - borrow;
            d.v[i] = (uint32_t)s;
            borrow = (s >> 63) & 1;
        }
        // t >= p  <=>  top word set, or no borrow out of the subtraction
        bool take = (top != 0) | (borrow == 0);
        mont_t r;
        ZK_UNROLL
        for (int i = 0; i < N; i++) r.v[i] = take ? d.v[i] : t[i];
        return r;
    }


    ZK_HD friend mont_t operator+(const mont_t& a, const mont_t& b) {
        uint32_t t[N];
        uint64_t carry = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) {
            uint64_t s = (uint64_t)a.v[i] + b.v[i] + carry;
            t[i] = (uint32_t)s;
            carry = s >> 32;
        }
        return reduce_once(t, (uint32_t)carry);
    }
    ZK_HD friend mont_t operator-(const mont_t& a, const mont_t& b) {
        mont_t d;
        uint64_t borrow = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) {
            uint64_t s = (uint64_t)a.v[i] - b.v[i] - borrow;
            d.v[i] = (uint32_t)s;
            borrow = (s >> 63) & 1;
        }
        // on borrow add p back
        uint32_t mask = 0u - (uint32_t)borrow;
        uint64_t carry = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) {
            uint64_t s = (uint64_t)d.v[i] + (P::p(i) & mask) + carry;
            d.v[i] = (uint32_t)s;
            carry = s >> 32;
        }
        return d;
    }
    ZK_HD mont_t operator-() const { return zero() - *this; }
    ZK_HD mont_t dbl() const { return *this + *this; }

    // Portable CIOS Montgomery multiplication (the host's).
    ZK_HD static mont_t mul_cios(const mont_t& a, const mont_t& b) {
        uint32_t t[N + 2];
        ZK_UNROLL
        for (int i = 0; i < N + 2; i++) t[i] = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) {
            uint64_t c = 0;
            ZK_UNROLL
            for (int j = 0; j < N; j++) {
                uint64_t s = (uint64_t)a.v[j] * b.v[i] + t[j] + c;
                t[j] = (uint32_t)s;
                c = s >> 32;
            }
            uint64_t s = (uint64_t)t[N] + c;
            t[N] = (uint32_t)s;
            t[N + 1] = (uint32_t)(s >> 32);
            uint32_t m = t[0] * INV;
            s = (uint64_t)m * P::p(0) + t[0];
            c = s >> 32;
            ZK_UNROLL
            for (int j = 1; j < N; j++) {
                s = (uint64_t)m * P::p(j) + t[j] + c;
                t[j - 1] = (uint32_t)s;
                c = s >> 32;
            }
            s = (uint64_t)t[N] + c;
            t[N - 1] = (uint32_t)s;
            t[N] = t[N + 1] + (uint32_t)(s >> 32);
        }
        return reduce_once(t, t[N]);
    }

#if defined(__CUDA_ARCH__)
    // CIOS with the even/odd split. The running value is T = E + O * 2^32 (N words each):
    // E holds the products of the even limbs of a (lo/hi pairs land on consecutive words, so one carry
    // chain adds a whole row), O those of the odd limbs. After a row's reduction E[0] = 0, and
    // T / 2^32 = E[1..] + O: O becomes the next row's E and E (shifted by two words, E[1] folded into
    // the new E[0]) the next row's O, so the arrays x and y swap roles every row.
    __device__ __forceinline__ static void eo_row(uint32_t* e, uint32_t* o, const mont_t& a, uint32_t bi, bool first) {
        if (first) {
            ZK_UNROLL
            for (int j = 0; j < N; j += 2) {
                e[j] = a.v[j] * bi;
                e[j + 1] = __umulhi(a.v[j], bi);
                o[j] = a.v[j + 1] * bi;
                o[j + 1] = __umulhi(a.v[j + 1], bi);
            }
        } else {
            ptx::rows<N>::eo_shift(o, e[0], a.v, bi);
            ptx::rows<N>::eo_even(e, o[N - 1], a.v, bi);
        }
        const uint32_t m = e[0] * INV;
        ptx::rows<N>::template eo_odd_p<P>(o, m);
        ptx::rows<N>::template eo_even_p<P>(e, o[N - 1], m);
    }
    // The end of mul_evenodd with ZK_FF_ASM_TAIL=1 (issue 13, session s4; a module's build option, 0 by default):
    // r = x + y[1..N-1] as one add chain (no carry out: r < 2p < 2^(32N)), then r - p as one subtract chain whose
    // borrow selects r or r - p. The portable tail (64-bit sums and borrows) costs ~60 instructions for 8 limbs on
    // sm_90 (IADD3 / IADD3.X / two SHF per word, ISETP, SEL), this one ~25. N = 8 (Fr) and 12 (Fq).
    __device__ __forceinline__ static mont_t eo_tail(const uint32_t* x, const uint32_t* y) {
        static_assert(N == 8 || N == 12, "eo_tail: 8 or 12 limbs");
        mont_t r, d;
        uint32_t borrow;
        if constexpr (N == 8) {
            asm("add.cc.u32 %0, %8, %16;\n\t addc.cc.u32 %1, %9, %17;\n\t addc.cc.u32 %2, %10, %18;\n\t"
                "addc.cc.u32 %3, %11, %19;\n\t addc.cc.u32 %4, %12, %20;\n\t addc.cc.u32 %5, %13, %21;\n\t"
                "addc.cc.u32 %6, %14, %22;\n\t addc.u32 %7, %15, 0;"
                : "=r"(r.v[0]), "=r"(r.v[1]), "=r"(r.v[2]), "=r"(r.v[3]), "=r"(r.v[4]), "=r"(r.v[5]), "=r"(r.v[6]),
                  "=r"(r.v[7])
                : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(x[5]), "r"(x[6]), "r"(x[7]),
                  "r"(y[1]), "r"(y[2]), "r"(y[3]), "r"(y[4]), "r"(y[5]), "r"(y[6]), "r"(y[7]));
            asm("sub.cc.u32 %0, %9, %17;\n\t subc.cc.u32 %1, %10, %18;\n\t subc.cc.u32 %2, %11, %19;\n\t"
                "subc.cc.u32 %3, %12, %20;\n\t subc.cc.u32 %4, %13, %21;\n\t subc.cc.u32 %5, %14, %22;\n\t"
                "subc.cc.u32 %6, %15, %23;\n\t subc.cc.u32 %7, %16, %24;\n\t subc.u32 %8, %25, %25;"
                : "=r"(d.v[0]), "=r"(d.v[1]), "=r"(d.v[2]), "=r"(d.v[3]), "=r"(d.v[4]), "=r"(d.v[5]), "=r"(d.v[6]),
                  "=r"(d.v[7]), "=r"(borrow)
                : "r"(r.v[0]), "r"(r.v[1]), "r"(r.v[2]), "r"(r.v[3]), "r"(r.v[4]), "r"(r.v[5]), "r"(r.v[6]),
                  "r"(r.v[7]), "n"(P::p(0)), "n"(P::p(1)), "n"(P::p(2)), "n"(P::p(3)), "n"(P::p(4)), "n"(P::p(5)),
                  "n"(P::p(6)), "n"(P::p(7)), "r"(0u));
        } else {
            asm("add.cc.u32 %0, %12, %24;\n\t addc.cc.u32 %1, %13, %25;\n\t addc.cc.u32 %2, %14, %26;\n\t"
                "addc.cc.u32 %3, %15, %27;\n\t addc.cc.u32 %4, %16, %28;\n\t addc.cc.u32 %5, %17, %29;\n\t"
                "addc.cc.u32 %6, %18, %30;\n\t addc.cc.u32 %7, %19, %31;\n\t addc.cc.u32 %8, %20, %32;\n\t"
                "addc.cc.u32 %9, %21, %33;\n\t addc.cc.u32 %10, %22, %34;\n\t addc.u32 %11, %23, 0;"
                : "=r"(r.v[0]), "=r"(r.v[1]), "=r"(r.v[2]), "=r"(r.v[3]), "=r"(r.v[4]), "=r"(r.v[5]), "=r"(r.v[6]),
                  "=r"(r.v[7]), "=r"(r.v[8]), "=r"(r.v[9]), "=r"(r.v[10]), "=r"(r.v[11])
                : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(x[5]), "r"(x[6]), "r"(x[7]), "r"(x[8]),
                  "r"(x[9]), "r"(x[10]), "r"(x[11]), "r"(y[1]), "r"(y[2]), "r"(y[3]), "r"(y[4]), "r"(y[5]), "r"(y[6]),
                  "r"(y[7]), "r"(y[8]), "r"(y[9]), "r"(y[10]), "r"(y[11]));
            asm("sub.cc.u32 %0, %13, %25;\n\t subc.cc.u32 %1, %14, %26;\n\t subc.cc.u32 %2, %15, %27;\n\t"
                "subc.cc.u32 %3, %16, %28;\n\t subc.cc.u32 %4, %17, %29;\n\t subc.cc.u32 %5, %18, %30;\n\t"
                "subc.cc.u32 %6, %19, %31;\n\t subc.cc.u32 %7, %20, %32;\n\t subc.cc.u32 %8, %21, %33;\n\t"
                "subc.cc.u32 %9, %22, %34;\n\t subc.cc.u32 %10, %23, %35;\n\t subc.cc.u32 %11, %24, %36;\n\t"
                "subc.u32 %12, %37, %37;"
                : "=r"(d.v[0]), "=r"(d.v[1]), "=r"(d.v[2]), "=r"(d.v[3]), "=r"(d.v[4]), "=r"(d.v[5]), "=r"(d.v[6]),
                  "=r"(d.v[7]), "=r"(d.v[8]), "=r"(d.v[9]), "=r"(d.v[10]), "=r"(d.v[11]), "=r"(borrow)
                : "r"(r.v[0]), "r"(r.v[1]), "r"(r.v[2]), "r"(r.v[3]), "r"(r.v[4]), "r"(r.v[5]), "r"(r.v[6]),
                  "r"(r.v[7]), "r"(r.v[8]), "r"(r.v[9]), "r"(r.v[10]), "r"(r.v[11]), "n"(P::p(0)), "n"(P::p(1)),
                  "n"(P::p(2)), "n"(P::p(3)), "n"(P::p(4)), "n"(P::p(5)), "n"(P::p(6)), "n"(P::p(7)), "n"(P::p(8)),
                  "n"(P::p(9)), "n"(P::p(10)), "n"(P::p(11)), "r"(0u));
        }
        ZK_UNROLL
        for (int i = 0; i < N; i++) r.v[i] = (r.v[i] & borrow) | (d.v[i] & ~borrow);  // borrow: r < p, keep r
        return r;
    }
    __device__ __forceinline__ static mont_t mul_evenodd(const mont_t& a, const mont_t& b) {
        static_assert(N % 2 == 0, "the even/odd split needs an even limb count");
        static_assert(P::p(N - 1) < 0x80000000u, "the even/odd split needs a spare top bit in p");
        uint32_t x[N], y[N];
        ZK_UNROLL
        for (int i = 0; i < N; i += 2) {
            eo_row(x, y, a, b.v[i], i == 0);
            eo_row(y, x, a, b.v[i + 1], false);
        }
        // T / 2^32 = y[1..] + x, below 2p < 2^(32N)
#if ZK_FF_ASM_TAIL
        return eo_tail(x, y);
#else
        uint32_t r[N];
        uint64_t c = 0;
        ZK_UNROLL
        for (int j = 0; j < N - 1; j++) {
            c += (uint64_t)x[j] + y[j + 1];
            r[j] = (uint32_t)c;
            c >>= 32;
        }
        r[N - 1] = x[N - 1] + (uint32_t)c;
        return reduce_once(r, 0u);
#endif
    }
#endif

    // Montgomery multiplication a*b*R^-1 mod p (device: mul_evenodd, host: mul_cios).
    ZK_HD friend mont_t operator*(const mont_t& a, const mont_t& b) {
#if defined(__CUDA_ARCH__)
        return mul_evenodd(a, b);
#else
        return mul_cios(a, b);
#endif
    }
    ZK_HD mont_t sqr() const { return *this * *this; }

    // x^e for an exponent of N limbs (little-endian), left-to-right square and multiply.
    ZK_HD mont_t pow(const limbs_t<N>& e) const {
        mont_t r = one();
        for (int i = N - 1; i >= 0; i--) {
            for (int b = 31; b >= 0; b--) {
                r = r.sqr();
                if ((e.v[i] >> b) & 1) r = r * *this;
            }
        }
        return r;
    }
    ZK_HD mont_t pow_u32(uint32_t e) const {
        mont_t r = one();
        for (int b = 31; b >= 0; b--) {
            r = r.sqr();
            if ((e >> b) & 1) r = r * *this;
        }
        return r;
    }
    // Multiplicative inverse by Fermat, x^(p-2); the inverse of 0 is 0.
    ZK_HD mont_t inv() const {
        constexpr limbs_t<N> E = modulus_minus_two<P>();
        return pow(E);
    }
    // Canonical -> Montgomery: x * R^2 * R^-1.
    ZK_HD mont_t to_mont() const {
        constexpr limbs_t<N> R2 = pow2_mod<P>(64 * N);
        mont_t r2;
        ZK_UNROLL
        for (int i = 0; i < N; i++) r2.v[i] = R2.v[i];
        return *this * r2;
    }
    // Montgomery -> canonical: x * 1 * R^-1.
    ZK_HD mont_t from_mont() const {
        mont_t u = zero();
        u.v[0] = 1;
        return *this * u;
    }
    // Is the raw value (canonical or Montgomery) below p?
    ZK_HD bool is_reduced() const {
        uint64_t borrow = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) {
            uint64_t s = (uint64_t)v[i] - P::p(i) - borrow;
            borrow = (s >> 63) & 1;
        }
        return borrow != 0;
    }
};

}  // namespace zk
