// sppark's G1 MSM on PoRep-like scalars (45% zero, 45% one, 10% uniform in [0, r)), the distribution of
// zkgpu's `bench msm --scalars porep` rows (zkgpu/app/bench/msm.py, _porep_scalars). Our own driver, a sibling of
// the sppark-bench anchor (shared/anchors/sppark-bench/bench.cu, whose structure it follows): sppark and blst
// (Apache-2.0) are used unmodified from that anchor's vendor/ (#include), its libblst.a is linked. See README.md.
//
// Timed exactly as the anchor's `devpts_devsc` row: msm_t<xyzz_t, jacobian_t, Affine_t, fr_t> with the points
// preloaded (untimed), scalars already on the GPU (dev_ptr_t), wall clock around the whole invoke() with
// cudaDeviceSynchronize before and after (sppark's CPU-side collect included), warm-ups, medians. Every row is
// checked against an exact blst reference (tiled points: the scalars are folded mod r onto the distinct ones).

#include <cuda.h>
#include <ff/bls12-381.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>
typedef jacobian_t<fp_t> point_t;   // the instantiation of sppark's poc/msm-cuda/cuda/pippenger.cu
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>
#include <util/all_gpus.cpp>        // select_gpu(), ngpus()

#ifndef SPPARK_REV                  // set by build.sh: sppark@<commit>
#define SPPARK_REV "?"
#endif
#include <sys/mman.h>
#include <algorithm>
#include <chrono>
#include <cmath>

namespace blst {                    // blst.h's limb_t kept apart from sppark's vect.h one
#include <blst.h>
}
using namespace blst;
static_assert(sizeof(affine_t) == sizeof(blst_p1_affine) && sizeof(point_t) == sizeof(blst_p1), "G1");
static_assert(sizeof(scalar_t) == 32, "Fr");

static const double P_ZERO = 0.45, P_ONE = 0.45;   // zkgpu's _porep_scalars: u < .45 -> 0, u < .90 -> 1
static const char* VARIANT = "devpts_devsc_porep";
static const char* CONTROL = "devpts_devsc_uniform";  // --uniform-control: the same call on uniform scalars

static struct {
    std::vector<int> sizes = {22, 24, 26};   // log2 n, ascending
    int base_lg = 20, reps = 5, warm = 1, deadline_s = 0, seed = 12345, host_only = 0, control = 0;
} opt;
typedef std::chrono::steady_clock clk;
static const clk::time_point t0_run = clk::now();
static double ms_since(clk::time_point t) { return std::chrono::duration<double, std::milli>(clk::now() - t).count(); }
// Never destroyed (see main: sppark's ~thread_pool_t can hang at exit).
static thread_pool_t& pool = *new thread_pool_t;
static int n_fail = 0;
static void verdict(const std::string& what, bool ok)
{   printf("# check %-52s %s\n", what.c_str(), ok ? "PASS" : "FAIL"); n_fail += !ok; fflush(stdout);   }
template<class F> static void setup(const char* what, F fn)
{   auto t = clk::now(); fn(); printf("# setup: %s: %.0f ms\n", what, ms_since(t)); fflush(stdout);   }

// ---------------------------------------------------------------- scalars
struct fr4 { uint64_t w[4]; };      // little-endian limbs: blst_scalar's and sppark's host fr_t layout
static const uint64_t R[4] = { 0xffffffff00000001ULL, 0x53bda402fffe5bfeULL,
                               0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL };   // the group order r
static uint64_t mix64(uint64_t& s)  // splitmix64 step
{
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static bool below_r(const fr4& a)
{   for (int i = 3; i >= 0; i--) if (a.w[i] != R[i]) return a.w[i] < R[i]; return false;   }
// One u in [0,1) (53 bits) per scalar picks zero (u < p0) / one (u < p0 + p1) / uniform; uniform values are
// 255-bit draws rejected while >= r. Each 64K chunk has its own stream: the data do not depend on the thread count.
static void draw_scalars(fr4* out, size_t n, uint64_t seed, double p0, double p1)
{
    const size_t CH = 1 << 16;
    pool.par_map((n + CH - 1) / CH, [&](size_t c) {
        uint64_t s = seed * 0x9fb21c651e98df25ULL ^ (c + 1) * 0xc2b2ae3d27d4eb4fULL;
        for (size_t i = c * CH; i < std::min(n, (c + 1) * CH); i++) {
            double u = (mix64(s) >> 11) * 0x1.0p-53;
            fr4& v = out[i];
            v = fr4{{u >= p0 && u < p0 + p1, 0, 0, 0}};
            if (u >= p0 + p1)
                do { for (auto& w : v.w) w = mix64(s); v.w[3] >>= 1; } while (!below_r(v));
        }
    });
}
template<class T> static T* host_alloc(size_t n)
{
    const size_t A = 2 << 20, sz = (n * sizeof(T) + A - 1) & ~(A - 1);
    T* p = (T*)aligned_alloc(A, sz);
    if (!p) fprintf(stderr, "out of host memory (%zu B)\n", sz), exit(3);
    (void)madvise(p, sz, MADV_HUGEPAGE);
    return p;
}

// ---------------------------------------------------------------- points and blst references
// T distinct G1 points B + i*S (B = b*G, S = s*G, b and s from the seed), then repeated: P_i = base[i mod T].
static void distinct_points(blst_p1_affine* out, size_t T, uint64_t seed)
{
    fr4 k[2];
    for (auto& x : k) { do { for (auto& w : x.w) w = mix64(seed); x.w[3] >>= 1; } while (!below_r(x)); }
    blst_p1 B, S; blst_p1_affine Sa;
    blst_p1_mult(&B, blst_p1_generator(), (const byte*)k[0].w, 255);
    blst_p1_mult(&S, blst_p1_generator(), (const byte*)k[1].w, 255);
    blst_p1_to_affine(&Sa, &S);
    const size_t CH = 1 << 12;
    pool.par_map((T + CH - 1) / CH, [&](size_t c) {
        size_t i0 = c * CH, m = std::min(CH, T - i0);
        std::vector<blst_p1> acc(m);
        uint64_t start[4] = {i0, 0, 0, 0};
        blst_p1_mult(&acc[0], &S, (const byte*)start, 64);
        blst_p1_add_or_double(&acc[0], &acc[0], &B);
        for (size_t j = 1; j < m; j++) blst_p1_add_or_double_affine(&acc[j], &acc[j - 1], &Sa);
        const blst_p1* in[2] = {acc.data(), nullptr};
        blst_p1s_to_affine(out + i0, in, m);
    });
}
static blst_p1 blst_msm(const blst_p1_affine* P, const fr4* s, size_t n)    // chunked over the pool
{
    const size_t per = std::max((size_t)4096, (n + pool.size() - 1) / pool.size()), nc = (n + per - 1) / per;
    std::vector<blst_p1> sums(nc);
    pool.par_map(nc, [&](size_t c) {
        size_t i0 = c * per, m = std::min(per, n - i0);
        std::vector<blst::limb_t> tmp(blst_p1s_mult_pippenger_scratch_sizeof(m) / sizeof(blst::limb_t) + 1);
        const blst_p1_affine* pp[2] = {P + i0, nullptr};
        const byte* sp[2] = {(const byte*)(s + i0), nullptr};
        blst_p1s_mult_pippenger(&sums[c], pp, m, sp, 255, tmp.data());
    });
    for (size_t c = 1; c < nc; c++) blst_p1_add_or_double(&sums[0], &sums[0], &sums[c]);
    return sums[0];
}
// sum_i s_i base[i mod T] == sum_j (sum_k s_{j+kT} mod r) base[j]: fold, then one T-point MSM.
static blst_p1 tiled_ref(const blst_p1_affine* base, size_t T, const fr4* s, size_t n)
{
    size_t m = std::min(T, n);
    std::vector<fr4> col(s, s + m);
    pool.par_map(m, 1024, [&](size_t j) {
        for (size_t i = j + m; i < n; i += m) blst_fr_add((blst_fr*)&col[j], (const blst_fr*)&col[j], (const blst_fr*)&s[i]);
    });
    return blst_msm(base, col.data(), m);
}

// ---------------------------------------------------------------- output
static void row(int lg, const char* var, std::vector<double> t, const char* check)
{
    std::sort(t.begin(), t.end());
    size_t n = t.size();
    if (!n) printf("msm,%d,%s,,,,0,SKIPPED(deadline)\n", lg, var);
    else printf("msm,%d,%s,%.3f,%.3f,%.3f,%zu,%s\n", lg, var,
                n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t[0], t[n - 1], n, check);
    fflush(stdout);
}
static void rust_ok(RustError e, const char* what)
{   if (e.code) fprintf(stderr, "%s: error %d %s\n", what, e.code, e.message ? e.message : ""), exit(4);   }

static void check_distribution(const fr4* s, size_t n)  // the proportions, within 6 standard deviations
{
    size_t zero = 0, one = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        bool hi0 = !(s[i].w[1] | s[i].w[2] | s[i].w[3]);
        zero += hi0 && s[i].w[0] == 0, one += hi0 && s[i].w[0] == 1, bad += !below_r(s[i]);
    }
    double fz = (double)zero / n, fo = (double)one / n, sd = 6 * std::sqrt(0.45 * 0.55 / n);
    printf("# scalars: %zu; zero %.4f, one %.4f, other %.4f (expected %.2f, %.2f, %.2f)\n", n, fz, fo,
           1 - fz - fo, P_ZERO, P_ONE, 1 - P_ZERO - P_ONE);
    verdict("PoRep-like proportions within 6 sigma, all < r", std::fabs(fz - P_ZERO) < sd && std::fabs(fo - P_ONE) < sd && !bad);
}

static int run(int argc, char** argv)
{
    struct { const char* name; int* v; } fopt[] = { {"--host-only", &opt.host_only}, {"--uniform-control", &opt.control} },
                                         iopt[] = {
        {"--base-lg", &opt.base_lg}, {"--reps", &opt.reps},
        {"--warmup", &opt.warm}, {"--deadline-s", &opt.deadline_s}, {"--seed", &opt.seed} };
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        bool known = false;
        for (auto& o : fopt) if (a == o.name) *o.v = known = true;
        for (auto& o : iopt) if (a == o.name && i + 1 < argc) *o.v = atoi(argv[++i]), known = true;
        if (a == "--sizes" && i + 1 < argc) {   // comma-separated log2 sizes
            opt.sizes.clear(), known = true;
            for (char* tok = strtok(argv[++i], ","); tok; tok = strtok(nullptr, ",")) opt.sizes.push_back(atoi(tok));
            std::sort(opt.sizes.begin(), opt.sizes.end());
        }
        if (!known) {
            printf("usage: sppark_porep [--host-only] [--uniform-control] [--sizes 22,24,26]");
            for (auto& o : iopt) printf(" [%s %d]", o.name, *o.v);
            printf("\n  MSM rows %s at 2^sizes; --host-only: data, proportions and blst references only;\n"
                   "  --uniform-control: also rows %s (uniform scalars, the anchor's devpts_devsc setup)\n", VARIANT, CONTROL);
            return a == "--help" || a == "-h" ? 0 : 1;
        }
    }
    if (opt.reps < 1 || opt.warm < 0 || opt.sizes.empty() || opt.sizes[0] < 10 || opt.sizes.back() > 30
        || opt.base_lg < 10 || opt.base_lg > 24)
        return fprintf(stderr, "need reps >= 1, warmup >= 0, sizes in [10, 30], 10 <= base-lg <= 24\n"), 1;
    printf("# sppark_porep: BLS12-381 G1 MSM, PoRep-like scalars; %s; %zu host threads\n", SPPARK_REV, pool.size());
    const gpu_t* gpu = nullptr;
    if (!opt.host_only) {
        int ndev = 0, drv = 0, rt = 0;
        cudaError_t e = cudaGetDeviceCount(&ndev);
        if (e != cudaSuccess || ndev == 0 || ngpus() == 0)
            return printf("no GPU: %s\n", e ? cudaGetErrorString(e) : "none usable by sppark"), 2;
        gpu = &select_gpu(0);
        const cudaDeviceProp& p = gpu->props();
        cudaDriverGetVersion(&drv), cudaRuntimeGetVersion(&rt);
        printf("gpu,%s,cc %d.%d,%d SMs,%.1f GiB,driver %d,runtime %d\n", p.name, p.major, p.minor,
               p.multiProcessorCount, p.totalGlobalMem / 1073741824.0, drv, rt);
        cudaMemPool_t mp; uint64_t keep = UINT64_MAX;   // freed temporaries stay pooled (as the anchor, as cuzk)
        cudaDeviceGetDefaultMemPool(&mp, gpu->cid());
        cudaMemPoolSetAttribute(mp, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    const int hi = opt.sizes.back();
    const size_t N = (size_t)1 << hi, T = std::min((size_t)1 << opt.base_lg, N);
    fr4* sc = host_alloc<fr4>(N);
    fr4* su = opt.control ? host_alloc<fr4>(N) : nullptr;
    blst_p1_affine* pts = host_alloc<blst_p1_affine>(N);
    printf("# host data: %zu scalars; %zu points: P_i = base[i mod %zu]\n", N, N, T);
    setup("PoRep-like scalars", [&]() { draw_scalars(sc, N, opt.seed, P_ZERO, P_ONE); });
    check_distribution(sc, N);
    if (su) setup("uniform scalars (control)", [&]() { draw_scalars(su, N, opt.seed + 2, 0, 0); });
    setup("distinct G1 points (blst)", [&]() { distinct_points(pts, T, opt.seed + 1); });
    setup("tiling", [&]() { pool.par_map(N / T, [&](size_t c) { if (c) memcpy(pts + c * T, pts, T * sizeof(pts[0])); }); });
    bool g1 = true;
    for (size_t i = 0; i < T; i += T / 64 + 1) g1 &= blst_p1_affine_in_g1(&pts[i]);
    verdict("base points in G1 (sample of 64)", g1);
    std::vector<blst_p1> ref(hi + 1), ref_u(hi + 1);
    setup("blst references (folded)", [&]() {
        for (int lg : opt.sizes) ref[lg] = tiled_ref(pts, T, sc, (size_t)1 << lg);
        if (su) for (int lg : opt.sizes) ref_u[lg] = tiled_ref(pts, T, su, (size_t)1 << lg); });
    if (opt.host_only) {            // the fold against direct MSMs where that is cheap
        for (int lg : opt.sizes)
            if (lg <= 18 && ((size_t)1 << lg) > T) {
                blst_p1 direct = blst_msm(pts, sc, (size_t)1 << lg);
                verdict("folded reference == direct blst MSM 2^" + std::to_string(lg), blst_p1_is_equal(&ref[lg], &direct));
            }
        printf("# host-only done, %.1f s; %s\n", ms_since(t0_run) / 1e3, n_fail ? "SOME CHECKS FAILED" : "all checks PASS");
        return n_fail ? 5 : 0;
    }
    const auto P = (const affine_t*)pts;
    const auto S = (const scalar_t*)sc;
    try {
        point_t small;              // 1024 distinct points, the first 1024 PoRep-like scalars
        rust_ok(mult_pippenger<bucket_t>(&small, P, 1024, S, false), "MSM 2^10");
        blst_p1 r10 = blst_msm(pts, sc, 1024);
        verdict("MSM 2^10 (PoRep-like) == blst Pippenger", blst_p1_is_equal(&r10, (const blst_p1*)&small));
        printf("op,lg_n,variant,median_ms,min_ms,max_ms,repeats,check\n");
        typedef msm_t<bucket_t, point_t, affine_t, scalar_t> msm_type;
        // the anchor's devpts_devsc: scalars already on the GPU, wall clock around invoke() between syncs
        auto time_rows = [&](msm_type& msm, const void* host, size_t n, int lg, const blst_p1& r, const char* var) {
            dev_ptr_t<scalar_t> dS{n};
            gpu->HtoD(&dS[0], (const scalar_t*)host, n);
            gpu->sync();            // also waits for the constructor's H2D of the points
            point_t out;
            std::vector<double> t;
            for (int i = 0; i < opt.warm + opt.reps; i++) {
                CUDA_OK(cudaDeviceSynchronize());
                auto ts = clk::now();
                rust_ok(msm.invoke(out, (const affine_t*)nullptr, n, dS, false), var);
                CUDA_OK(cudaDeviceSynchronize());
                if (i >= opt.warm) t.push_back(ms_since(ts));
            }
            bool ok = blst_p1_is_equal(&r, (const blst_p1*)&out);   // the last timed call's result
            n_fail += !ok;
            row(lg, var, t, ok ? "PASS" : "FAIL");
        };
        for (int lg : opt.sizes) {
            if (opt.deadline_s > 0 && ms_since(t0_run) > 1e3 * opt.deadline_s) { row(lg, VARIANT, {}, ""); continue; }
            size_t n = (size_t)1 << lg;
            msm_type msm{P, n};     // points preloaded (untimed)
            time_rows(msm, sc, n, lg, ref[lg], VARIANT);
            if (su) time_rows(msm, su, n, lg, ref_u[lg], CONTROL);
        }
    } catch (const cuda_error& e) {
        return fprintf(stderr, "CUDA error %d: %s\n", e.code(), e.what()), 4;
    }
    printf("# total wall %.1f s; %s\n", ms_since(t0_run) / 1e3, n_fail ? "SOME CHECKS FAILED" : "all checks PASS");
    return n_fail ? 5 : 0;
}

// Every exit leaves through _Exit, past the static destructors: sppark's ~thread_pool_t (util/thread_pool_t.hpp) sets
// `done` without taking the pool's mutex, so a worker between its `!done` check and cvar.wait misses the wake-up and
// join() waits forever. Besides this file's pool, util/all_gpus.cpp deletes every gpu_t (each with its own pool) at
// exit. A bad-flag exit right after start-up hung on this in CI (2 cores); the OS reclaims threads, memory and the
// CUDA context instead.
int main(int argc, char** argv)
{
    int rc = run(argc, argv);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(rc);
}
