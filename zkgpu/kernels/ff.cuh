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

    // CIOS Montgomery multiplication: a*b*R^-1 mod p.
    ZK_HD friend mont_t operator*(const mont_t& a, const mont_t& b) {
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
