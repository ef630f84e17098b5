// zkgpu: G1 and G2 multi-scalar multiplication (Pippenger with signed digits, XYZZ buckets), batch
// addition (cuzk/supraseal batch_add) and deterministic benchmark point generation.
//
// One source, two instantiations: compiled as it is, the kernels work on G1 (g1.cuh); compiled with
// -DZK_MSM_G2=1 the same kernels work on G2 (g2.cuh), the group's point types standing in for affine_t and
// xyzz_t and the point kernels named g2_prepare / g2_generate instead of g1_prepare / g1_generate (every
// other kernel keeps its name; the host picks the module: zkgpu/gpu/msm/group.py).
//
// Host driver: zkgpu/gpu/msm/pippenger.py. Data layouts (g1.cuh, g2.cuh, fr.cuh; uint32 words, little-endian
// limbs; G2 sizes in brackets):
//   affine_t, canonical    : 24 [48] words, x then y (12 [24] limbs each), identity = all zero
//   affine_t, Montgomery   : the same after g1_prepare [g2_prepare] (identity stays all zero)
//   xyzz_t                 : 48 [96] words X, Y, ZZ, ZZZ (Montgomery); identity = ZZ == 0
//   fr_t scalar            : 8 words, canonical
//
// Pippenger pipeline (one call of zkgpu.gpu.msm.pippenger.msm):
//   g1_prepare      check (< q, on curve) and convert points to Montgomery form (g2_prepare)
//   (fr_ops.cu)     fr_first_unreduced: check the scalars (< r)
//   msm_digits      one 64-bit sort key per (window, point): (bucket key << 32) | sign << 31 | index,
//                   bucket key = w * 2^(c-1) + |d| - 1; zero digits and identity points get the
//                   sentinel key 0xffffffff (sorted last and dropped)
//   (CuPy sort)     radix sort of the keys (CUB/thrust)
//   msm_valid_count the number E of non-sentinel keys, by binary search, into device memory
//   seg_count_sorted64, seg_accum_affine_balanced (level 0, default): each thread takes exactly
//                   CHUNK consecutive sorted entries and writes one XYZZ partial (mixed addition)
//                   per run of equal bucket key among them, so all threads do equal work and a
//                   bucket of millions of points is spread over many threads
//   seg_accum_affine (level 0, zkgpu.gpu.msm.pippenger.LEVEL0 "runs"): one thread per chunk of at most CHUNK
//                   entries of one bucket (chunks cut on the host with CuPy)
//   run_chunk_count, round_chunk_starts, seg_accum_xyzz_from (or seg_accum_xyzz: chunk starts by binary
//                   search)  a fixed number of rounds (zkgpu/gpu/msm/reduce.py) over the (key,
//                   XYZZ partial) pairs, still sorted by key: each key's run cut into chunks of at most
//                   CHUNK, one thread per chunk, chunk bounds found on the device
//   short_long_count, short_run_starts, scatter_short_from, gather_long_runs (zkgpu.gpu.msm.reduce.SHORT_FIRST)
//                   the keys with few partials after level 0 summed into their buckets at once (one thread per
//                   key), the long runs gathered for the rounds (which then never copy the short runs' partials)
//   scatter_buckets the thread of each key's first partial sums its last few partials (at most
//                   max(CHUNK, 2) + 1 after the rounds) into the bucket array (empty buckets stay the identity)
//   window_reduce   each thread a contiguous range of buckets: running sum + sum, then
//                   sum_range + offset * running_total (the range's offset times its bucket sum)
//   xyzz_sum_ranges tree sum of the per-thread results of each window
//   msm_final       Horner over windows, to affine, out of Montgomery form (one thread)
//   msm_final_warp  the same on one warp (msm_final.cuh; zkgpu/gpu/msm/final.py picks the variant)
// No kernel needs a count from the host: the grids cover the worst case (sizes from n, c and CHUNK),
// each kernel reads the live count (E, or the partial count = the last prefix-sum entry) from device
// memory and its threads past it exit, so the host queues one MSM without waiting for the GPU.
// The Fq (and Fr) products' merge and final subtraction as asm chains (ff.cuh's mont_t::eo_tail, session s4):
// Fq's product 864 -> 400 SASS instructions on sm_90 (notes/ntt-kernels.md), bit for bit the same results.
#ifndef ZK_FF_ASM_TAIL
#define ZK_FF_ASM_TAIL 1
#endif
#include "common.cuh"
#include "fr.cuh"
#include "g1.cuh"
#include "g2.cuh"
#include "msm_final.cuh"

#ifndef ZK_MSM_G2
#define ZK_MSM_G2 0
#endif
using zk::fq_t;
using zk::fr_t;
using zk::mark_bad;
#if ZK_MSM_G2
typedef zk::g2_affine_t affine_t;
typedef zk::g2_xyzz_t xyzz_t;
#define ZK_POINTS_PREPARE g2_prepare
#define ZK_POINTS_GENERATE g2_generate
#else
using zk::affine_t;
using zk::xyzz_t;
#define ZK_POINTS_PREPARE g1_prepare
#define ZK_POINTS_GENERATE g1_generate
#endif
typedef xyzz_t::field_t field_t;  // fq_t for G1, fq2_t for G2

// The bucket key of a zero digit or an identity point (sorted last, dropped); zkgpu/gpu/msm/pippenger.py reads it.
#define MSM_SENTINEL 0xffffffffu

// The kernels copy each point they add from global memory into a local (const xyzz_t b = in[j]) before
// passing it to the out-of-line group operation, as a reference to the global element would: ptxas then
// keeps the register counts near 160 (3 blocks of 128 threads per SM; zkgpu/gpu/msm/pippenger.py _HEAVY_BLOCK).

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// counts[t] = the number of runs of equal bucket key (the high word) among the sorted 64-bit entries
// [t*L, min((t+1)*L, count)), 0 for a thread past the live count (the grid covers the worst case).
__device__ __forceinline__ void count_runs(const unsigned long long* keys, uint64_t count, uint32_t L,
                                           uint64_t nthreads, uint32_t* counts) {
    ZK_GRID_STRIDE(t, nthreads) {
        const uint64_t lo = t * L;
        if (lo >= count) {
            counts[t] = 0;
            continue;
        }
        const uint64_t hi = lo + L < count ? lo + L : count;
        uint32_t prev = (uint32_t)(keys[lo] >> 32), runs = 1;
        for (uint64_t j = lo + 1; j < hi; j++) {
            const uint32_t k = (uint32_t)(keys[j] >> 32);
            runs += (k != prev);
            prev = k;
        }
        counts[t] = runs;
    }
}

extern "C" {

// Canonical affine -> Montgomery affine; *bad = the smallest index with a coordinate >= q or
// not on the curve (initialise *bad to n). g1_prepare, or g2_prepare under ZK_MSM_G2.
__global__ void ZK_POINTS_PREPARE(const affine_t* in, affine_t* out, uint64_t n, unsigned long long* bad) {
    ZK_GRID_STRIDE(i, n) {
        affine_t a = in[i];
        bool ok = a.x.is_reduced() & a.y.is_reduced();
        if (ok && !a.is_inf()) {
            a.x = a.x.to_mont();
            a.y = a.y.to_mont();
            ok = a.on_curve();
        }
        if (!ok) mark_bad(bad, i);
        out[i] = a;
    }
}

// Fq elements (12 words each) from Montgomery to canonical form in place (snarkjs stores its
// keys' coordinates in Montgomery form); *bad = the smallest index of a value >= q (initialise
// *bad to n; such a value is left as it was).
__global__ void fq_from_mont(fq_t* a, uint64_t n, unsigned long long* bad) {
    ZK_GRID_STRIDE(i, n) {
        const fq_t x = a[i];
        if (!x.is_reduced()) {
            mark_bad(bad, i);
        } else {
            a[i] = x.from_mont();
        }
    }
}

// One sort key per (window w, point i) at keys[w * n + i].
__global__ void msm_digits(const fr_t* scalars, const affine_t* pts, uint64_t n, int c, int nwin,
                           unsigned long long* keys) {
    const uint32_t m = 1u << (c - 1);
    ZK_GRID_STRIDE(i, n) {
        const fr_t s = scalars[i];
        const bool inf = pts[i].is_inf();
        uint32_t carry = 0;
        for (int w = 0; w < nwin; w++) {
            int32_t d = zk::signed_digit(s.v, w, c, carry);
            unsigned long long key;
            if (d == 0 || inf) {
                key = ((unsigned long long)MSM_SENTINEL << 32) | (uint32_t)i;
            } else {
                uint32_t mag = d < 0 ? (uint32_t)(-d) : (uint32_t)d;
                uint32_t bucket = (uint32_t)w * m + mag - 1;
                key = ((unsigned long long)bucket << 32) | ((d < 0 ? 1u : 0u) << 31) | (uint32_t)i;
            }
            keys[(uint64_t)w * n + i] = key;
        }
    }
}

// Level 0: chunk c = sorted entries [cstart[c], cend[c]), all of one bucket key and at most
// CHUNK long (a bucket's run of entries is cut into chunks by the host); out[c] = the sum of
// the chunk's signed affine points in XYZZ (mixed addition), out_keys[c] = its bucket key.
__global__ void seg_accum_affine(const unsigned long long* keys, const unsigned long long* cstart,
                                 const unsigned long long* cend, uint64_t nchunks, const affine_t* pts,
                                 uint32_t* out_keys, xyzz_t* out_pts) {
    ZK_GRID_STRIDE(c, nchunks) {
        uint64_t lo = cstart[c], hi = cend[c];
        xyzz_t acc = xyzz_t::inf();
        for (uint64_t j = lo; j < hi; j++) {
            uint32_t v = (uint32_t)keys[j];
            const affine_t p = pts[v & 0x7fffffffu];
            acc.add_affine((v >> 31) ? p.neg() : p);
        }
        out_keys[c] = (uint32_t)(keys[lo] >> 32);
        out_pts[c] = acc;
    }
}

// The number of valid (non-sentinel) keys E of the sorted keys[0..N): the index of the first key whose
// bucket is MSM_SENTINEL (N if none), found by one thread's binary search and written to *E on the
// device, so that no host read-back sizes the next kernels (they read *E and exit early).
__global__ void msm_valid_count(const unsigned long long* keys, uint64_t N, unsigned long long* E) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    uint64_t lo = 0, hi = N;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if ((uint32_t)(keys[mid] >> 32) == MSM_SENTINEL) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    *E = lo;
}

// Level 0, balanced variant: thread t takes exactly the entries [t*L, min((t+1)*L, *E)) and writes one
// partial per run of equal key inside them (a bucket crossing a thread boundary gets one partial from
// each side; the rounds of seg_accum_xyzz merge them). counts[t] = runs in thread t's range;
// seg_accum_affine_balanced writes them at out[offsets[t] ...] (offsets = exclusive prefix sum of counts,
// offsets[nthreads] = the partial count). Threads with t*L >= *E do nothing.
__global__ void seg_count_sorted64(const unsigned long long* keys, const unsigned long long* E, uint32_t L,
                                   uint64_t nthreads, uint32_t* counts) {
    count_runs(keys, *E, L, nthreads, counts);
}

__global__ void seg_accum_affine_balanced(const unsigned long long* keys, const unsigned long long* Ep, uint32_t L,
                                          uint64_t nthreads, const unsigned long long* offsets, const affine_t* pts,
                                          uint32_t* out_keys, xyzz_t* out_pts) {
    const uint64_t E = *Ep;
    ZK_GRID_STRIDE(t, nthreads) {
        const uint64_t lo = t * L;
        if (lo >= E) break;
        const uint64_t hi = lo + L < E ? lo + L : E;
        uint64_t seg = offsets[t];
        uint32_t cur = (uint32_t)(keys[lo] >> 32);
        xyzz_t acc = xyzz_t::inf();
        for (uint64_t j = lo; j < hi; j++) {
            unsigned long long e = keys[j];
            uint32_t k = (uint32_t)(e >> 32), v = (uint32_t)e;
            if (k != cur) {
                out_keys[seg] = cur;
                out_pts[seg] = acc;
                seg++;
                cur = k;
                acc = xyzz_t::inf();
            }
            const affine_t p = pts[v & 0x7fffffffu];
            acc.add_affine((v >> 31) ? p.neg() : p);
        }
        out_keys[seg] = cur;
        out_pts[seg] = acc;
    }
}

// A reduction round over (key, XYZZ partial) pairs sorted by key, *count of them live, kmax the worst
// case: each key's run of x partials is cut into ceil(x/L) chunks of at most L, one thread per chunk
// (the "runs" scheme of level 0, with every size on the device), so a round leaves ceil(x/L) partials
// per key, no thread adds more than L - 1 points however long a bucket is, and a round over keys with a
// few partials each has one thread per key (zkgpu/gpu/msm/reduce.py bounds the rounds).
// The end (one past the last index) of the run of keys[lo]'s key that contains lo, lo < count: galloping
// from lo with steps step, 2 step, 4 step, ... while the key holds, then a binary search of the last gap,
// so a run of x entries costs O(log x) loads.
__device__ __forceinline__ uint64_t run_end(const uint32_t* keys, uint64_t count, uint64_t lo, uint64_t step) {
    const uint32_t k = keys[lo];
    while (lo + step < count && keys[lo + step] == k) {
        lo += step;
        step *= 2;
    }
    uint64_t hi = lo + step < count ? lo + step : count;  // hi == count or keys[hi] != k
    while (hi - lo > 1) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (keys[mid] == k) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return hi;
}

// run_chunk_count: counts[j] = ceil(x/L) at the first partial j of each run of x, 0 elsewhere (and past
// *count); the run's end by a galloping then binary search from j, so a long run costs O(log x).
__global__ void run_chunk_count(const uint32_t* keys, const unsigned long long* countp, uint32_t L, uint64_t kmax,
                                uint32_t* counts) {
    const uint64_t count = *countp;
    ZK_GRID_STRIDE(j, kmax) {
        uint32_t chunks = 0;
        if (j < count && (j == 0 || keys[j - 1] != keys[j])) {
            const uint64_t hi = run_end(keys, count, j, 1);
            chunks = (uint32_t)((hi - j + L - 1) / L);
        }
        counts[j] = chunks;
    }
}

// The sum of the chunk of a round that starts at partial `start` (at most L partials of its key) into
// out[t]: seg_accum_xyzz and seg_accum_xyzz_from.
__device__ __forceinline__ void accum_chunk(const uint32_t* keys, uint64_t count, uint32_t L, uint64_t start, uint64_t t,
                                            const xyzz_t* pts, uint32_t* out_keys, xyzz_t* out_pts) {
    const uint64_t end = start + L < count ? start + L : count;
    const uint32_t k = keys[start];
    xyzz_t acc = pts[start];
    for (uint64_t j = start + 1; j < end && keys[j] == k; j++) {
        const xyzz_t b = pts[j];
        acc.add(b);
    }
    out_keys[t] = k;
    out_pts[t] = acc;
}

// Chunk t of the round (offsets = exclusive prefix sum of run_chunk_count's counts, kmax + 1 entries,
// offsets[kmax] = the chunk count): the run starts at the last j with offsets[j] <= t (binary search;
// counts are nonzero only at run starts), the chunk at j + (t - offsets[j]) * L; its sum goes to out[t].
__global__ void seg_accum_xyzz(const uint32_t* keys, const unsigned long long* countp, uint32_t L, uint64_t kmax,
                               const unsigned long long* offsets, uint64_t nchunks_max, const xyzz_t* pts,
                               uint32_t* out_keys, xyzz_t* out_pts) {
    const uint64_t count = *countp, nchunks = offsets[kmax];
    ZK_GRID_STRIDE(t, nchunks_max) {
        if (t >= nchunks) break;
        uint64_t lo = 0, hi = kmax;  // offsets[lo] <= t < offsets[hi]
        while (hi - lo > 1) {
            const uint64_t mid = lo + (hi - lo) / 2;
            if (offsets[mid] <= t) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        accum_chunk(keys, count, L, lo + (t - offsets[lo]) * L, t, pts, out_keys, out_pts);
    }
}

// The chunk starts of a round written out instead of searched: the thread of each run's first partial j
// (offsets[j + 1] > offsets[j], the counts of run_chunk_count) writes starts[offsets[j] + i] = j + i * L
// for each of its run's chunks i (one write per chunk; the longest run, the PoRep-like ones' bucket, has
// about n / L^2 chunks in the first round). Threads j < kmax, the worst case.
__global__ void round_chunk_starts(const unsigned long long* offsets, uint32_t L, uint64_t kmax,
                                   unsigned long long* starts) {
    ZK_GRID_STRIDE(j, kmax) {
        const uint64_t o = offsets[j], chunks = offsets[j + 1] - o;
        for (uint64_t i = 0; i < chunks; i++) starts[o + i] = j + i * L;
    }
}

// seg_accum_xyzz with chunk t's start read from round_chunk_starts' table: no search, one load.
__global__ void seg_accum_xyzz_from(const uint32_t* keys, const unsigned long long* countp, uint32_t L, uint64_t kmax,
                                    const unsigned long long* offsets, uint64_t nchunks_max,
                                    const unsigned long long* starts, const xyzz_t* pts, uint32_t* out_keys,
                                    xyzz_t* out_pts) {
    const uint64_t count = *countp, nchunks = offsets[kmax];
    ZK_GRID_STRIDE(t, nchunks_max) {
        if (t >= nchunks) break;
        accum_chunk(keys, count, L, starts[t], t, pts, out_keys, out_pts);
    }
}

// Short runs first (zkgpu/gpu/msm/reduce.py SHORT_FIRST), over the level-0 partials (sorted by key, *countp live,
// kmax the worst case): a key with at most Lf partials (Lf = the rounds' chunk + 1, what scatter_buckets adds;
// uniform scalars' keys have 1 to 3) is summed into its bucket at once by one thread of scatter_short_from, so
// the rounds never copy its partials; a longer run (a bucket of many points: the PoRep-like ones) is gathered
// for the rounds (gather_long_runs). short_long_count writes, at each key's first partial j, (1 << 32) for a
// short run or the run's length for a long one (0 everywhere else): one exclusive prefix sum of these gives
// both the short runs' ranks (high word) and the long partials' offsets (low word; the host checks kmax < 2^32).
__global__ void short_long_count(const uint32_t* keys, const unsigned long long* countp, uint32_t Lf, uint64_t kmax,
                                 unsigned long long* packed) {
    const uint64_t count = *countp;
    ZK_GRID_STRIDE(j, kmax) {
        unsigned long long v = 0;
        if (j < count && (j == 0 || keys[j - 1] != keys[j])) {
            const uint32_t k = keys[j];
            if (j + Lf < count && keys[j + Lf] == k) {  // longer than Lf: its length by galloping + binary search
                v = run_end(keys, count, j + Lf, Lf) - j;
            } else {
                v = 1ull << 32;
            }
        }
        packed[j] = v;
    }
}

// starts[r] = the first partial of the r-th short run (r = the high word of the prefix sum at it).
__global__ void short_run_starts(const unsigned long long* offsets, uint64_t kmax, unsigned long long* starts) {
    ZK_GRID_STRIDE(j, kmax) {
        const uint64_t r = offsets[j] >> 32;
        if ((offsets[j + 1] >> 32) > r) starts[r] = j;
    }
}

// One thread per short run t (< offsets[kmax] >> 32; the grid covers nmax, the worst case): the run's partials
// (at most Lf) summed into its bucket, so each warp's lanes all add (a thread per partial would leave most
// lanes idle where keys have several partials).
__global__ void scatter_short_from(const uint32_t* keys, const xyzz_t* pts, const unsigned long long* countp,
                                   const unsigned long long* offsets, uint64_t kmax, uint64_t nmax,
                                   const unsigned long long* starts, xyzz_t* buckets) {
    const uint64_t count = *countp, nshort = offsets[kmax] >> 32;
    ZK_GRID_STRIDE(t, nmax) {
        if (t >= nshort) break;
        const uint64_t j = starts[t];
        const uint32_t k = keys[j];
        xyzz_t acc = pts[j];
        for (uint64_t i = j + 1; i < count && keys[i] == k; i++) {
            const xyzz_t b = pts[i];
            acc.add(b);
        }
        buckets[k] = acc;
    }
}

// The long runs' partials gathered in order (the low words of short_long_count's prefix sum, kmax + 1 entries:
// the low word at kmax = how many): output p comes from the run whose low word <= p is the last (binary
// search; the long lengths are nonzero only at long runs' first partials), partial j + (p - low(offsets[j])).
// Threads p < cap, the worst case; those past the total exit.
__global__ void gather_long_runs(const uint32_t* keys, const xyzz_t* pts, const unsigned long long* offsets,
                                 uint64_t kmax, uint64_t cap, uint32_t* out_keys, xyzz_t* out_pts) {
    const uint64_t total = offsets[kmax] & 0xffffffffull;
    ZK_GRID_STRIDE(p, cap) {
        if (p >= total) break;
        uint64_t lo = 0, hi = kmax;  // low(offsets[lo]) <= p < low(offsets[hi])
        while (hi - lo > 1) {
            const uint64_t mid = lo + (hi - lo) / 2;
            if ((offsets[mid] & 0xffffffffull) <= p) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        const uint64_t src = lo + (p - (offsets[lo] & 0xffffffffull));
        out_keys[p] = keys[src];
        out_pts[p] = pts[src];
    }
}

// The last pass: the thread of the first partial of each key sums that key's partials (a few, bounded by
// the rounds before) into its bucket; buckets zero-filled beforehand (identity), *count partials live,
// the grid covers the worst case kmax.
__global__ void scatter_buckets(const uint32_t* keys, const xyzz_t* pts, const unsigned long long* countp,
                                uint64_t kmax, xyzz_t* buckets) {
    const uint64_t count = *countp;
    ZK_GRID_STRIDE(j, kmax) {
        if (j >= count) break;
        const uint32_t k = keys[j];
        if (j > 0 && keys[j - 1] == k) continue;
        xyzz_t acc = pts[j];
        for (uint64_t i = j + 1; i < count && keys[i] == k; i++) {
            const xyzz_t b = pts[i];
            acc.add(b);
        }
        buckets[k] = acc;
    }
}

// Window w, thread t (g = w*T + t) covers buckets k = t*R+1 .. min((t+1)*R, m) (bucket k of window
// w at index w*m + k - 1). With the running sum from the top, acc = sum (k - t*R) B_k and
// run = sum B_k; the thread's share of sum_k k*B_k is acc + (t*R) * run. The top window (w = nwin - 1)
// stops at bucket mtop: its digits of scalars < 2^255 are at most 2^(255 - c(nwin-1)) (zkgpu/gpu/msm/pippenger.py
// passes min(m, that); the buckets above it are empty), so its threads above mtop add nothing.
__global__ void window_reduce(const xyzz_t* buckets, uint32_t nwin, uint32_t m, uint32_t T, uint32_t R,
                              uint32_t mtop, xyzz_t* partials) {
    ZK_GRID_STRIDE(g, (uint64_t)nwin * T) {
        uint32_t w = (uint32_t)(g / T), t = (uint32_t)(g % T);
        const uint64_t mw = w + 1 == nwin ? mtop : m;
        uint64_t lo = (uint64_t)t * R + 1;
        uint64_t hi = (uint64_t)(t + 1) * R < mw ? (uint64_t)(t + 1) * R : mw;
        xyzz_t run = xyzz_t::inf(), acc = xyzz_t::inf();
        for (uint64_t k = hi; k >= lo; k--) {
            const xyzz_t b = buckets[(uint64_t)w * m + k - 1];
            run.add(b);
            acc.add(run);
        }
        acc.add(run.mul_u32(t * R));
        partials[g] = acc;
    }
}

// out[t] = sum of in[t*K .. min((t+1)*K, count)) (XYZZ).
__global__ void xyzz_sum_ranges(const xyzz_t* in, uint64_t count, uint32_t K, xyzz_t* out) {
    uint64_t nout = (count + K - 1) / K;
    ZK_GRID_STRIDE(t, nout) {
        uint64_t lo = t * K, hi = lo + K < count ? lo + K : count;
        xyzz_t acc = in[lo];
        for (uint64_t j = lo + 1; j < hi; j++) {
            const xyzz_t b = in[j];
            acc.add(b);
        }
        out[t] = acc;
    }
}

// One thread: *out = sum_w 2^(c*w) S_w by Horner, then affine and canonical.
__global__ void msm_final(const xyzz_t* window_sums, uint32_t nwin, uint32_t c, affine_t* out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    xyzz_t acc = xyzz_t::inf();
    for (int w = (int)nwin - 1; w >= 0; w--) {
        for (uint32_t b = 0; b < c; b++) acc = acc.dbl();
        const xyzz_t s = window_sums[w];
        acc.add(s);
    }
    affine_t a = acc.to_affine();
    a.x = a.x.from_mont();
    a.y = a.y.from_mont();
    *out = a;
}

// msm_final with the group operations' independent Fq products on the lanes of one warp (msm_final.cuh:
// a doubling 3 product latencies instead of 9, an addition 4 instead of 14) and, with binary_inv != 0, the
// inversion by the binary extended Euclidean algorithm instead of Fermat. Launch exactly one warp (one
// block of 32 threads); every lane holds the same accumulator, lane 0 writes *out.
__global__ void msm_final_warp(const xyzz_t* window_sums, uint32_t nwin, uint32_t c, uint32_t binary_inv,
                               affine_t* out) {
    if (blockIdx.x != 0 || threadIdx.x >= 32) return;
    xyzz_t acc = xyzz_t::inf();
    for (int w = (int)nwin - 1; w >= 0; w--) {
        for (uint32_t b = 0; b < c; b++) acc = zk::warp_dbl(acc);
        const xyzz_t s = window_sums[w];
        acc = zk::warp_add(acc, s);
    }
    affine_t a = affine_t::inf();
    if (!acc.is_inf()) {
        const field_t zz3 = zk::fmul_ool(acc.ZZ, acc.ZZZ);
        const field_t J = binary_inv ? zk::fq_inv_binary(zz3) : zk::finv(zz3);  // 1/(ZZ*ZZZ)
        field_t izz, izzz, d2, d3;
        zk::warp_mul4(izz, J, acc.ZZZ, izzz, J, acc.ZZ, d2, J, J, d3, J, J);  // 1/ZZ, 1/ZZZ
        zk::warp_mul4(a.x, acc.X, izz, a.y, acc.Y, izzz, d2, J, J, d3, J, J);
        a.x = a.x.from_mont();
        a.y = a.y.from_mont();
    }
    if (threadIdx.x == 0) *out = a;
}

// Batch addition: out[t] = sum of the Montgomery affine points i in [t*K, (t+1)*K) whose bit
// (bit i % 64 of word i / 64, LSB first) is set.
__global__ void batch_add_ranges(const affine_t* pts, uint64_t n, const unsigned long long* bitmap, uint32_t K,
                                 xyzz_t* out) {
    uint64_t nout = (n + K - 1) / K;
    ZK_GRID_STRIDE(t, nout) {
        uint64_t lo = t * K, hi = lo + K < n ? lo + K : n;
        xyzz_t acc = xyzz_t::inf();
        for (uint64_t i = lo; i < hi; i++) {
            if ((bitmap[i >> 6] >> (i & 63)) & 1ull) {
                const affine_t p = pts[i];
                acc.add_affine(p);
            }
        }
        out[t] = acc;
    }
}

// Deterministic benchmark points: thread t computes k_t*G (k_t = splitmix64(seed + t), 0 -> 1)
// by double-and-add, then writes P_{t*per + j} = k_t*G + j*D (j < per, index < n), canonical
// affine. *G_mont and *D_mont are Montgomery affine. zkgpu.gpu.msm.bases.generate_points_cpu computes the same
// points on the host. g1_generate, or g2_generate under ZK_MSM_G2.
__global__ void ZK_POINTS_GENERATE(uint64_t n, uint32_t per, uint64_t seed, const affine_t* G_mont, const affine_t* D_mont,
                            affine_t* out) {
    uint64_t nthreads = (n + per - 1) / per;
    const affine_t G = *G_mont, D = *D_mont;
    ZK_GRID_STRIDE(t, nthreads) {
        uint64_t k = splitmix64(seed + t);
        if (k == 0) k = 1;
        xyzz_t acc = xyzz_t::inf();
        for (int b = 63; b >= 0; b--) {
            acc = acc.dbl();
            if ((k >> b) & 1) acc.add_affine(G);
        }
        for (uint32_t j = 0; j < per; j++) {
            uint64_t i = t * per + j;
            if (i >= n) break;
            affine_t a = acc.to_affine();
            a.x = a.x.from_mont();
            a.y = a.y.from_mont();
            out[i] = a;
            acc.add_affine(D);
        }
    }
}

}  // extern "C"
