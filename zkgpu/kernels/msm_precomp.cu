// zkgpu: the G1 MSM over precomputed shifted bases (one bucket set for all windows).
//
// Host driver: zkgpu/gpu/msm/precomp.py. Layouts as in msm.cu (g1.cuh): affine_t Montgomery (24 uint32
// words, identity all zero), xyzz_t (48 words), fr_t scalars canonical (8 words).
//
// With c-bit signed windows (nwin = ceil(256 / c)) the table holds, for n bases P_i,
//   table[w * n + i] = 2^(c*w) * P_i          (affine, Montgomery form; w < nwin)
// so sum_i s_i P_i = sum_i sum_w d_{i,w} 2^(c*w) P_i = sum_{(w,i)} d_{i,w} table[w*n + i]: every window's
// digit indexes a table point into ONE set of 2^(c-1) buckets. The MSM then is one Pippenger window over
// nwin * n points: no per-window bucket sets, no Horner doublings (the fixed-base precomputation of
// Brickell-Gordon-McCurley-Wilson 1992 applied to Pippenger's buckets). The kernels here:
//   msm_precomp_table   the table, one thread per base: c doublings per window (XYZZ), to affine with
//                       one inversion per group of PRECOMP_GROUP windows (Montgomery's batch trick)
//   msm_precomp_digits  one 64-bit sort key per (window, base) at keys[w*n + i]:
//                       bucket << 32 | sign << 31 | (w*n + i), bucket = |d| - 1 < 2^(c-1); zero digits and
//                       identity bases get the sentinel bucket MSM_SENTINEL (as msm.cu: sorted last, dropped)
// Everything after the digits is msm.cu's (devsort, msm_valid_count, the balanced level 0 with the table
// as the point array, the rounds, scatter_buckets, window_reduce with one window, xyzz_sum_ranges,
// msm_final with nwin = 1 and c = 0: the sum to affine, no doublings).
// The Fq (and Fr) products' merge and final subtraction as asm chains (ff.cuh's mont_t::eo_tail, session s4):
// Fq's product 864 -> 400 SASS instructions on sm_90 (notes/ntt-kernels.md), bit for bit the same results.
#ifndef ZK_FF_ASM_TAIL
#define ZK_FF_ASM_TAIL 1
#endif
#include "common.cuh"
#include "fr.cuh"
#include "g1.cuh"

// The bucket key of a zero digit or an identity base: the same value as msm.cu's (zkgpu/gpu/msm/precomp.py
// checks that they agree), so that msm.cu's reduction kernels drop these keys.
#define MSM_SENTINEL 0xffffffffu
// Windows converted to affine per inversion in msm_precomp_table (local memory: 240 bytes per window).
#define PRECOMP_GROUP 8

// The sort key of signed digit d of table point `at` (< 2^31): bucket |d| - 1, the sign, the table index; a zero
// digit or an identity point gets msm.cu's sentinel bucket (sorted last, dropped).
__device__ __forceinline__ unsigned long long precomp_key(int32_t d, bool inf, uint64_t at) {
    if (d == 0 || inf) return ((unsigned long long)MSM_SENTINEL << 32) | (uint32_t)(at & 0x7fffffffu);
    const uint32_t mag = d < 0 ? (uint32_t)(-d) : (uint32_t)d;
    return ((unsigned long long)(mag - 1) << 32) | ((d < 0 ? 1u : 0u) << 31) | (uint32_t)at;
}

extern "C" {

// table[w*n + i] = 2^(c*w) * pts[i] for w < nwin (pts Montgomery affine; identity rows stay zero).
__global__ void msm_precomp_table(const zk::affine_t* pts, uint64_t n, int c, int nwin, zk::affine_t* table) {
    using zk::affine_t;
    using zk::fq_t;
    using zk::xyzz_t;
    ZK_GRID_STRIDE(i, n) {
        const affine_t p = pts[i];
        table[i] = p;
        if (p.is_inf()) {  // no 2-torsion on E(Fq) (odd order), so a doubled point is never the identity
            for (int w = 1; w < nwin; w++) table[(uint64_t)w * n + i] = p;
            continue;
        }
        xyzz_t cur = xyzz_t::from_affine(p);
        for (int w0 = 1; w0 < nwin; w0 += PRECOMP_GROUP) {
            const int g = nwin - w0 < PRECOMP_GROUP ? nwin - w0 : PRECOMP_GROUP;
            xyzz_t q[PRECOMP_GROUP];
            fq_t prefix[PRECOMP_GROUP];  // prefix[j] = d_0 ... d_{j-1}, d_j = ZZ_j * ZZZ_j
            fq_t acc = fq_t::one();
            for (int j = 0; j < g; j++) {
                for (int b = 0; b < c; b++) cur = cur.dbl();
                q[j] = cur;
                prefix[j] = acc;
                acc = fmul(acc, fmul(cur.ZZ, cur.ZZZ));
            }
            fq_t inv = zk::finv(acc);  // 1 / (d_0 ... d_{g-1})
            for (int j = g - 1; j >= 0; j--) {
                const fq_t J = fmul(inv, prefix[j]);  // 1 / d_j
                inv = fmul(inv, fmul(q[j].ZZ, q[j].ZZZ));
                affine_t a;
                a.x = fmul(q[j].X, fmul(J, q[j].ZZZ));  // X / ZZ
                a.y = fmul(q[j].Y, fmul(J, q[j].ZZ));   // Y / ZZZ
                table[(uint64_t)(w0 + j) * n + i] = a;
            }
        }
    }
}

// One sort key per (window w, base i) at keys[w*n + i] for the one-bucket-set layout (above); pts = the
// table's first n rows (the bases themselves), for the identity test.
__global__ void msm_precomp_digits(const zk::fr_t* scalars, const zk::affine_t* pts, uint64_t n, int c, int nwin,
                                   unsigned long long* keys) {
    ZK_GRID_STRIDE(i, n) {
        const zk::fr_t s = scalars[i];
        const bool inf = pts[i].is_inf();
        uint32_t carry = 0;
        for (int w = 0; w < nwin; w++) {
            const int32_t d = zk::signed_digit(s.v, w, c, carry);
            const uint64_t at = (uint64_t)w * n + i;  // < 2^31 (the host checks nwin * n)
            const unsigned long long key = precomp_key(d, inf, at);
            keys[at] = key;
        }
    }
}

// Row selection (host driver: zkgpu/gpu/msm/precomp_rows.py): the MSM over the bases P_idx[j], j < m, of the
// table without gathering it. One thread per selected row j: scalar j, base row r = idx[j]; window w's key
// at keys[w*m + j] indexes the table point w*n + r. A row outside [0, n) reads nothing and gets the
// sentinel (the host checks the rows where it can, zkgpu/gpu/msm/precomp_rows.py).
__global__ void msm_precomp_rows_digits(const zk::fr_t* scalars, const long long* idx, const zk::affine_t* pts, uint64_t n,
                                        uint64_t m, int c, int nwin, unsigned long long* keys) {
    ZK_GRID_STRIDE(j, m) {
        const long long r = idx[j];
        const bool ok = r >= 0 && (uint64_t)r < n;
        const uint64_t row = ok ? (uint64_t)r : 0;
        const zk::fr_t s = scalars[j];
        const bool inf = !ok || pts[row].is_inf();
        uint32_t carry = 0;
        for (int w = 0; w < nwin; w++) {
            const int32_t d = zk::signed_digit(s.v, w, c, carry);
            const uint64_t at = (uint64_t)w * n + row;  // < 2^31 (the host checks nwin * n)
            const unsigned long long key = precomp_key(d, inf, at);
            keys[(uint64_t)w * m + j] = key;
        }
    }
}

}  // extern "C"
