/* blst's G2 Pippenger (blst_p2s_mult_pippenger) on all of the host's cores: the CPU anchor of zkgpu's G2 MSM.
 *
 * Our own harness (anchors/blst-g2/README.md); blst is used unmodified, linked from the sppark-bench anchor's
 * vendored copy. The n points are split into one contiguous range per thread, each thread runs
 * blst_p2s_mult_pippenger over its range (255-bit scalars, its own scratch allocated before the timing), and the
 * main thread sums the partial results (blst_p2_add_or_double). Timed: the threads' Pippenger and the sum, by
 * CLOCK_MONOTONIC, after --warmup untimed calls; the median of --reps calls is reported.
 *
 * Inputs, the same as zkgpu's (so that its tests can compare results bit for bit):
 *   point i = (k_t + j * 2^64) * G2, t = i / 32, j = i % 32, k_t = splitmix64(seed + t) (0 -> 1): zkgpu.gpu.msm.bases
 *             generate_points(n, seed, group="g2"); made here with one 64-bit multiplication per 32 points, then
 *             additions of 2^64 G2, on all threads, outside the timing;
 *   scalar i  = 4 little-endian 64-bit words splitmix64(sseed + 4 i + w), w = 0..3, the top word masked to 62 bits
 *             (so every scalar is < 2^254 < r).
 * Self-check (every size, outside the timing): the result equals (sum_i s_i a_i mod r) G2 with a_i the points'
 * discrete logs, computed with blst's scalar arithmetic mod r. --print writes the result in zkgpu's G2 host
 * layout (x.c0, x.c1, y.c0, y.c1, 48 little-endian bytes each, hex; the identity all zero).
 *
 * Output, CSV on stdout: blst_g2,<log2_n>,<n>,<threads>,<median_ms>,<min_ms>,<max_ms>,<reps>,<check>
 * Exit codes: 0 ok, 1 usage, 3 out of memory, 5 check failed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blst.h"

#define PER 32 /* points per generated block, as zkgpu.gpu.msm.bases */

static uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_g2: out of memory (%zu bytes)\n", n);
        exit(3);
    }
    return p;
}

/* the 32-byte little-endian discrete log of point i */
static void point_dlog(uint8_t out[32], uint64_t seed, size_t i) {
    uint64_t k = splitmix64(seed + i / PER);
    if (k == 0) k = 1;
    memset(out, 0, 32);
    for (int b = 0; b < 8; b++) out[b] = (uint8_t)(k >> (8 * b));
    uint64_t j = i % PER; /* + j * 2^64: bytes 8..15 */
    for (int b = 0; b < 8; b++) out[8 + b] = (uint8_t)(j >> (8 * b));
}

typedef struct {
    blst_p2_affine *pts;
    size_t n, t0, t1; /* blocks [t0, t1) */
    uint64_t seed;
    const blst_p2 *D;
} gen_job;

static void *gen_thread(void *arg) {
    gen_job *g = arg;
    blst_p2 blk[PER];
    const blst_p2 *ptrs[PER];
    for (size_t t = g->t0; t < g->t1; t++) {
        uint8_t k[32];
        point_dlog(k, g->seed, t * PER);
        blst_p2 acc;
        blst_p2_mult(&acc, blst_p2_generator(), k, 64);
        size_t cnt = 0;
        for (size_t j = 0; j < PER && t * PER + j < g->n; j++, cnt++) {
            blk[j] = acc;
            ptrs[j] = &blk[j];
            blst_p2_add_or_double(&acc, &acc, g->D);
        }
        blst_p2s_to_affine(g->pts + t * PER, ptrs, cnt);
    }
    return NULL;
}

static void gen_points(blst_p2_affine *pts, size_t n, uint64_t seed, int threads) {
    uint8_t two64[32] = {0};
    two64[8] = 1;
    blst_p2 D;
    blst_p2_mult(&D, blst_p2_generator(), two64, 65);
    size_t blocks = (n + PER - 1) / PER;
    pthread_t th[threads];
    gen_job jobs[threads];
    for (int i = 0; i < threads; i++) {
        jobs[i] = (gen_job){pts, n, blocks * i / threads, blocks * (i + 1) / threads, seed, &D};
        pthread_create(&th[i], NULL, gen_thread, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
}

static void gen_scalars(uint8_t *sc, size_t n, uint64_t sseed) {
    for (size_t i = 0; i < n; i++) {
        for (int w = 0; w < 4; w++) {
            uint64_t v = splitmix64(sseed + 4 * i + w);
            if (w == 3) v &= 0x3fffffffffffffffull;
            for (int b = 0; b < 8; b++) sc[32 * i + 8 * w + b] = (uint8_t)(v >> (8 * b));
        }
    }
}

typedef struct {
    const blst_p2_affine *pts;
    const uint8_t *sc;
    size_t n;
    limb_t *scratch;
    blst_p2 out;
} msm_job;

static void *msm_thread(void *arg) {
    msm_job *m = arg;
    const blst_p2_affine *pp[2] = {m->pts, NULL}; /* points[1] == NULL: points[0] is a contiguous array */
    const byte *sp[2] = {m->sc, NULL};
    if (m->n == 0) {
        memset(&m->out, 0, sizeof(m->out));
        return NULL;
    }
    blst_p2s_mult_pippenger(&m->out, pp, m->n, sp, 255, m->scratch);
    return NULL;
}

/* the multi-threaded MSM: one contiguous range per thread, partial results summed */
static void msm_mt(blst_p2 *ret, msm_job *jobs, int threads) {
    pthread_t th[threads];
    for (int i = 1; i < threads; i++) pthread_create(&th[i], NULL, msm_thread, &jobs[i]);
    msm_thread(&jobs[0]);
    for (int i = 1; i < threads; i++) pthread_join(th[i], NULL);
    *ret = jobs[0].out;
    for (int i = 1; i < threads; i++) blst_p2_add_or_double(ret, ret, &jobs[i].out);
}

static int check(const blst_p2 *got, const uint8_t *sc, size_t n, uint64_t seed) {
    blst_scalar acc, a, s, t;
    memset(&acc, 0, sizeof(acc));
    for (size_t i = 0; i < n; i++) {
        uint8_t k[32];
        point_dlog(k, seed, i);
        blst_scalar_from_lendian(&a, k);
        blst_scalar_from_lendian(&s, sc + 32 * i);
        if (!blst_sk_mul_n_check(&t, &a, &s)) return 0;
        if (!blst_sk_add_n_check(&acc, &acc, &t)) return 0; /* false also when the sum is 0 mod r */
    }
    uint8_t kb[32];
    blst_lendian_from_scalar(kb, &acc);
    blst_p2 want;
    blst_p2_mult(&want, blst_p2_generator(), kb, 255);
    return blst_p2_is_equal(got, &want);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(void) {
    fprintf(stderr,
            "usage: bench_g2 [--sizes 16,17,...] [--threads N (0: all online CPUs)] [--reps 5] [--warmup 1]\n"
            "                [--seed 1] [--scalar-seed 2] [--deadline-s 0 (no new size after it; 0: none)] [--print]\n");
}

int main(int argc, char **argv) {
    const char *sizes = "16,17,18,19,20,21,22";
    int threads = 0, reps = 5, warmup = 1, print = 0;
    uint64_t seed = 1, sseed = 2;
    double deadline_s = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--print")) {
            print = 1;
            continue;
        }
        if (!strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!v) {
            fprintf(stderr, "bench_g2: %s needs a value\n", a);
            usage();
            return 1;
        }
        char *end = NULL;
        if (!strcmp(a, "--sizes")) sizes = v, end = (char *)v + strlen(v);
        else if (!strcmp(a, "--threads")) threads = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--reps")) reps = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--warmup")) warmup = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, &end, 0);
        else if (!strcmp(a, "--scalar-seed")) sseed = strtoull(v, &end, 0);
        else if (!strcmp(a, "--deadline-s")) deadline_s = strtod(v, &end);
        else {
            fprintf(stderr, "bench_g2: unknown option %s\n", a);
            usage();
            return 1;
        }
        if (!end || *end || threads < 0 || threads > 4096 || reps < 1 || warmup < 0 || deadline_s < 0) {
            fprintf(stderr, "bench_g2: bad value %s for %s\n", v, a);
            return 1;
        }
        i++;
    }
    if (threads == 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    int logs[64], nlogs = 0;
    for (const char *p = sizes; *p;) {
        char *end;
        long lg = strtol(p, &end, 10);
        if (end == p || lg < 0 || lg > 28 || nlogs == 64 || (*end && *end != ',')) {
            fprintf(stderr, "bench_g2: --sizes must be comma-separated log2 sizes in 0..28, got %s\n", sizes);
            return 1;
        }
        logs[nlogs++] = (int)lg;
        p = *end ? end + 1 : end;
    }
    printf("# bench_g2: blst_p2s_mult_pippenger, %d threads (points split in contiguous ranges), 255-bit scalars, "
           "reps %d, warmup %d, seed %llu, scalar seed %llu\n",
           threads, reps, warmup, (unsigned long long)seed, (unsigned long long)sseed);
    printf("kind,log2_n,n,threads,median_ms,min_ms,max_ms,reps,check\n");
    fflush(stdout);
    const double t_start = now_ms();
    int failed = 0;
    for (int li = 0; li < nlogs; li++) {
        if (deadline_s > 0 && now_ms() - t_start > 1e3 * deadline_s) {
            printf("# bench_g2: deadline of %.0f s passed, sizes from 2^%d on left out\n", deadline_s, logs[li]);
            break;
        }
        const size_t n = (size_t)1 << logs[li];
        blst_p2_affine *pts = xmalloc(n * sizeof(blst_p2_affine));
        uint8_t *sc = xmalloc(32 * n);
        const double tg = now_ms();
        gen_points(pts, n, seed, threads);
        gen_scalars(sc, n, sseed);
        const int T = (size_t)threads > n ? (int)n : threads;
        msm_job jobs[T];
        for (int i = 0; i < T; i++) {
            const size_t lo = n * i / T, hi = n * (i + 1) / T;
            jobs[i] = (msm_job){.pts = pts + lo, .sc = sc + 32 * lo, .n = hi - lo,
                                .scratch = xmalloc(blst_p2s_mult_pippenger_scratch_sizeof(hi - lo))};
        }
        printf("# 2^%d: inputs made in %.0f ms\n", logs[li], now_ms() - tg);
        blst_p2 r;
        for (int w = 0; w < warmup; w++) msm_mt(&r, jobs, T);
        double *ms = xmalloc(sizeof(double) * reps);
        for (int k = 0; k < reps; k++) {
            const double t0 = now_ms();
            msm_mt(&r, jobs, T);
            ms[k] = now_ms() - t0;
        }
        const int ok = check(&r, sc, n, seed);
        failed |= !ok;
        qsort(ms, reps, sizeof(double), cmp_double);
        const double med = reps % 2 ? ms[reps / 2] : (ms[reps / 2 - 1] + ms[reps / 2]) / 2;
        printf("blst_g2,%d,%zu,%d,%.3f,%.3f,%.3f,%d,%s\n", logs[li], n, T, med, ms[0], ms[reps - 1], reps, ok ? "ok" : "FAILED");
        if (print) {
            blst_p2_affine a;
            blst_p2_to_affine(&a, &r);
            uint8_t b[48];
            printf("# result 2^%d ", logs[li]);
            const blst_fp *f[4] = {&a.x.fp[0], &a.x.fp[1], &a.y.fp[0], &a.y.fp[1]};
            for (int c = 0; c < 4; c++) {
                blst_lendian_from_fp(b, f[c]);
                for (int j = 0; j < 48; j++) printf("%02x", b[j]);
            }
            printf("\n");
        }
        fflush(stdout);
        for (int i = 0; i < T; i++) free(jobs[i].scratch);
        free(ms);
        free(sc);
        free(pts);
    }
    return failed ? 5 : 0;
}
