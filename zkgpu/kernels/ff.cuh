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

// Optional PTX carry-chain arithmetic (device code only, opt-in): a module that defines ZK_FF_PTX
// before including this header gets add/sub/mul built from add.cc/addc/sub.cc/subc and
// mad.lo.cc/madc.hi.cc chains, which keep the carries in the condition-code register instead of
// 64-bit temporaries. The algorithm (CIOS, one row of a*b[i] then one reduction row per limb) is the
// same as the portable path below; only the instruction selection differs. Host builds and
// modules without the macro use the portable C++ code.
#if defined(__CUDA_ARCH__) && defined(ZK_FF_PTX)
#define ZK_USE_PTX 1
namespace ptx {
__device__ __forceinline__ uint32_t add_cc(uint32_t a, uint32_t b) { uint32_t r; asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ __forceinline__ uint32_t addc_cc(uint32_t a, uint32_t b) { uint32_t r; asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ __forceinline__ uint32_t addc(uint32_t a, uint32_t b) { uint32_t r; asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ __forceinline__ uint32_t sub_cc(uint32_t a, uint32_t b) { uint32_t r; asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ __forceinline__ uint32_t subc_cc(uint32_t a, uint32_t b) { uint32_t r; asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ __forceinline__ uint32_t subc(uint32_t a, uint32_t b) { uint32_t r; asm volatile("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ __forceinline__ uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { uint32_t r; asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
__device__ __forceinline__ uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { uint32_t r; asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
__device__ __forceinline__ uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) { uint32_t r; asm volatile("mad.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
__device__ __forceinline__ uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { uint32_t r; asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
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

#if defined(ZK_USE_PTX)
    // a + b mod p with carry chains (a, b < p).
    __device__ __forceinline__ static mont_t add_ptx(const mont_t& a, const mont_t& b) {
        uint32_t t[N], d[N];
        t[0] = ptx::add_cc(a.v[0], b.v[0]);
        ZK_UNROLL
        for (int i = 1; i < N; i++) t[i] = ptx::addc_cc(a.v[i], b.v[i]);
        uint32_t top = ptx::addc(0u, 0u);
        d[0] = ptx::sub_cc(t[0], P::p(0));
        ZK_UNROLL
        for (int i = 1; i < N; i++) d[i] = ptx::subc_cc(t[i], P::p(i));
        uint32_t keep = ptx::subc(top, 0u);  // all ones iff t < p (borrow out and no top word)
        mont_t r;
        ZK_UNROLL
        for (int i = 0; i < N; i++) r.v[i] = (t[i] & keep) | (d[i] & ~keep);
        return r;
    }
    // a - b mod p: subtract, then add p back under the borrow mask.
    __device__ __forceinline__ static mont_t sub_ptx(const mont_t& a, const mont_t& b) {
        uint32_t d[N];
        d[0] = ptx::sub_cc(a.v[0], b.v[0]);
        ZK_UNROLL
        for (int i = 1; i < N; i++) d[i] = ptx::subc_cc(a.v[i], b.v[i]);
        uint32_t mask = ptx::subc(0u, 0u);  // all ones on borrow
        mont_t r;
        r.v[0] = ptx::add_cc(d[0], P::p(0) & mask);
        ZK_UNROLL
        for (int i = 1; i < N - 1; i++) r.v[i] = ptx::addc_cc(d[i], P::p(i) & mask);
        r.v[N - 1] = ptx::addc(d[N - 1], P::p(N - 1) & mask);
        return r;
    }
    // CIOS with carry chains: per limb b[i], t += a*b[i] (a low-half chain and a high-half chain),
    // m = t[0]*(-p^-1), t += m*p (two chains), t >>= 32. t < 2p throughout, final conditional subtract.
    __device__ __forceinline__ static mont_t mul_ptx(const mont_t& a, const mont_t& b) {
        uint32_t t[N + 2];
        ZK_UNROLL
        for (int i = 0; i < N + 2; i++) t[i] = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b.v[i];
            t[0] = ptx::mad_lo_cc(a.v[0], bi, t[0]);
            ZK_UNROLL
            for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(a.v[j], bi, t[j]);
            t[N] = ptx::addc_cc(t[N], 0u);
            t[N + 1] = ptx::addc(t[N + 1], 0u);
            t[1] = ptx::mad_hi_cc(a.v[0], bi, t[1]);
            ZK_UNROLL
            for (int j = 1; j < N; j++) t[j + 1] = ptx::madc_hi_cc(a.v[j], bi, t[j + 1]);
            t[N + 1] = ptx::addc(t[N + 1], 0u);

            const uint32_t m = t[0] * INV;
            // p0 == 1 (Fr): m*p0 = m, so the low word is an add (t[0] + m = 0 mod 2^32, carry iff
            // t[0] != 0) and the high word is 0 (the high chain starts at limb 1). Folded at compile time.
            if (P::p(0) == 1u) {
                t[0] = ptx::add_cc(t[0], m);
            } else {
                t[0] = ptx::mad_lo_cc(m, P::p(0), t[0]);
            }
            ZK_UNROLL
            for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(m, P::p(j), t[j]);
            t[N] = ptx::addc_cc(t[N], 0u);
            t[N + 1] = ptx::addc(t[N + 1], 0u);
            if (P::p(0) == 1u) {
                t[2] = ptx::mad_hi_cc(m, P::p(1), t[2]);
            } else {
                t[1] = ptx::mad_hi_cc(m, P::p(0), t[1]);
                t[2] = ptx::madc_hi_cc(m, P::p(1), t[2]);
            }
            ZK_UNROLL
            for (int j = 2; j < N; j++) t[j + 1] = ptx::madc_hi_cc(m, P::p(j), t[j + 1]);
            t[N + 1] = ptx::addc(t[N + 1], 0u);
            ZK_UNROLL
            for (int j = 0; j <= N; j++) t[j] = t[j + 1];
            t[N + 1] = 0;
        }
        return reduce_once(t, t[N]);
    }
#endif

    ZK_HD friend mont_t operator+(const mont_t& a, const mont_t& b) {
#if defined(ZK_USE_PTX)
        return add_ptx(a, b);
#else
        uint32_t t[N];
        uint64_t carry = 0;
        ZK_UNROLL
        for (int i = 0; i < N; i++) {
            uint64_t s = (uint64_t)a.v[i] + b.v[i] + carry;
            t[i] = (uint32_t)s;
            carry = s >> 32;
        }
        return reduce_once(t, (uint32_t)carry);
#endif
    }
    ZK_HD friend mont_t operator-(const mont_t& a, const mont_t& b) {
#if defined(ZK_USE_PTX)
        return sub_ptx(a, b);
#else
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
#endif
    }
    ZK_HD mont_t operator-() const { return zero() - *this; }
    ZK_HD mont_t dbl() const { return *this + *this; }

    // CIOS Montgomery multiplication: a*b*R^-1 mod p.
    ZK_HD friend mont_t operator*(const mont_t& a, const mont_t& b) {
#if defined(ZK_USE_PTX)
        return mul_ptx(a, b);
#else
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
