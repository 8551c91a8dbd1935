/* How fast can this machine read two 64 MiB float32 arrays?  The memory bound of issue 9's
 * mean-squared-error loss (np.mean((a - b) ** 2), 16M elements), measured outside tsjit.
 *
 *     gcc -O3 -march=native -pthread bench/read_ceiling.c -o /tmp/read_ceiling
 *     /tmp/read_ceiling [rounds]            # or under `chrt -f 10` for a quiet machine
 *
 * Every pattern computes sum((a - b)^2) (its result is printed, so nothing is optimized
 * away); the patterns run interleaved, round after round, and the table gives each one's
 * median and fastest time.  What varies:
 *   - threads: 1 or 2, each reading a static half, or 256 KiB chunks dealt round robin;
 *   - independent vector accumulators: 1, 4, 8, 16;
 *   - software prefetch of both streams 256 B to 4 KiB ahead;
 *   - where the arrays start: 2 MiB aligned, or 16 bytes past it (NumPy's large arrays
 *     start 16 bytes into their mmap'ed block);
 *   - transparent huge pages: madvise(MADV_HUGEPAGE) or MADV_NOHUGEPAGE;
 *   - first touch: the arrays written by the main thread, or each half by its reader;
 *   - NumPy's summation order as tsjit computes it (pairwise blocks of 128): the whole
 *     1024-element node into a stack buffer, then its 8 blocks reduced (tsjit's kernel), or
 *     one block at a time straight into its accumulator.
 * Threads are created per call, as a pool's wake-up costs about as much (~0.1 ms).
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define N (16u << 20)
#define NODE 1024
#define CHUNK (256u << 10)

typedef struct {
    const char *name;
    int threads, accumulators, prefetch, chunked, layout; /* layout: 0 direct, 1 node, 2 block */
    int offset16, hugepages, own_touch;
} Pattern;

typedef struct { const Pattern *p; const float *a, *b; int t; double sum; } Task;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float lanes(__m256 v) {
    float t[8];
    _mm256_storeu_ps(t, v);
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

static __m256 square_diff(const float *a, const float *b) {
    __m256 d = _mm256_sub_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(b));
    return _mm256_mul_ps(d, d);
}

#define DIRECT(K)                                                                        \
    static double direct##K(const float *a, const float *b, size_t lo, size_t hi, int pf) { \
        __m256 acc[K];                                                                   \
        for (int k = 0; k < K; k++) acc[k] = _mm256_setzero_ps();                        \
        for (size_t i = lo; i < hi; i += 8 * K) {                                        \
            if (pf)                                                                      \
                for (int l = 0; l < 32 * K; l += 64) {                                   \
                    _mm_prefetch((const char *)(a + i) + pf + l, _MM_HINT_T0);           \
                    _mm_prefetch((const char *)(b + i) + pf + l, _MM_HINT_T0);           \
                }                                                                        \
            for (int k = 0; k < K; k++) {                                                \
                __m256 d = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8 * k),                 \
                                         _mm256_loadu_ps(b + i + 8 * k));                \
                acc[k] = _mm256_fmadd_ps(d, d, acc[k]);                                  \
            }                                                                            \
        }                                                                                \
        __m256 s = acc[0];                                                               \
        for (int k = 1; k < K; k++) s = _mm256_add_ps(s, acc[k]);                        \
        return lanes(s);                                                                 \
    }
DIRECT(1)
DIRECT(4)
DIRECT(8)
DIRECT(16)

/* tsjit's node: its 1024 squares into a buffer, then 8 blocks of 128, chains interleaved */
static double node_buffer(const float *a, const float *b, size_t lo, size_t hi) {
    float buffer[NODE] __attribute__((aligned(32)));
    double total = 0;
    for (size_t s = lo; s < hi; s += NODE) {
        for (int i = 0; i < NODE; i += 8) _mm256_store_ps(buffer + i, square_diff(a + s + i, b + s + i));
        __m256 acc[8];
        for (int k = 0; k < 8; k++) acc[k] = _mm256_load_ps(buffer + 128 * k);
        for (int g = 1; g < 16; g++)
            for (int k = 0; k < 8; k++) acc[k] = _mm256_add_ps(acc[k], _mm256_load_ps(buffer + 128 * k + 8 * g));
        float block[8];
        for (int k = 0; k < 8; k++) block[k] = lanes(acc[k]);
        total += ((block[0] + block[1]) + (block[2] + block[3])) + ((block[4] + block[5]) + (block[6] + block[7]));
    }
    return total;
}

/* the same order, one block of 128 at a time straight into its accumulator */
static double block_direct(const float *a, const float *b, size_t lo, size_t hi) {
    double total = 0;
    for (size_t s = lo; s < hi; s += NODE) {
        float block[8];
        for (int k = 0; k < 8; k++) {
            const float *x = a + s + 128 * k, *y = b + s + 128 * k;
            __m256 acc = square_diff(x, y);
            for (int g = 1; g < 16; g++) acc = _mm256_add_ps(acc, square_diff(x + 8 * g, y + 8 * g));
            block[k] = lanes(acc);
        }
        total += ((block[0] + block[1]) + (block[2] + block[3])) + ((block[4] + block[5]) + (block[6] + block[7]));
    }
    return total;
}

static double run_range(const Pattern *p, const float *a, const float *b, size_t lo, size_t hi) {
    if (p->layout == 1) return node_buffer(a, b, lo, hi);
    if (p->layout == 2) return block_direct(a, b, lo, hi);
    switch (p->accumulators) {
    case 1: return direct1(a, b, lo, hi, p->prefetch);
    case 4: return direct4(a, b, lo, hi, p->prefetch);
    case 16: return direct16(a, b, lo, hi, p->prefetch);
    default: return direct8(a, b, lo, hi, p->prefetch);
    }
}

static void *work(void *arg) {
    Task *task = arg;
    const Pattern *p = task->p;
    task->sum = 0;
    if (p->chunked) {
        for (size_t lo = (size_t)CHUNK * task->t; lo < N; lo += (size_t)CHUNK * p->threads)
            task->sum += run_range(p, task->a, task->b, lo, lo + CHUNK < N ? lo + CHUNK : N);
    } else {
        size_t half = N / p->threads;
        task->sum = run_range(p, task->a, task->b, half * task->t, half * (task->t + 1));
    }
    return NULL;
}

static double timed(const Pattern *p, const float *a, const float *b, double *sum) {
    Task tasks[2];
    pthread_t worker;
    double start = now();
    for (int t = 0; t < p->threads; t++) tasks[t] = (Task){p, a, b, t, 0};
    if (p->threads > 1) pthread_create(&worker, NULL, work, &tasks[1]);
    work(&tasks[0]);
    if (p->threads > 1) pthread_join(worker, NULL);
    *sum = tasks[0].sum + (p->threads > 1 ? tasks[1].sum : 0);
    return now() - start;
}

/* two arrays of N floats for a layout: [offset16][hugepages][own_touch] */
static float *arrays[2][2][2][2];

static void *touch_half(void *arg) {
    float **pair = arg;
    for (size_t i = N / 2; i < N; i++) pair[0][i] = (float)(i % 1000) * 1e-3f, pair[1][i] = (float)(i % 777) * 1e-3f;
    return NULL;
}

static void allocate(int offset16, int hugepages, int own_touch) {
    float **pair = arrays[offset16][hugepages][own_touch];
    for (int k = 0; k < 2; k++) {
        size_t bytes = (size_t)N * 4 + (4u << 20);
        char *base = aligned_alloc(2u << 20, bytes);
        madvise(base, bytes, hugepages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        pair[k] = (float *)(base + (2u << 20) + (offset16 ? 16 : 0));
    }
    size_t first = own_touch ? N / 2 : N;
    for (size_t i = 0; i < first; i++) pair[0][i] = (float)(i % 1000) * 1e-3f, pair[1][i] = (float)(i % 777) * 1e-3f;
    if (own_touch) {
        pthread_t other;
        pthread_create(&other, NULL, touch_half, pair);
        pthread_join(other, NULL);
    }
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
    static const Pattern patterns[] = {
        /* name                          thr acc  pf chunk layout off16 huge own */
        {"1 thread, 8 acc",                1, 8,    0, 0, 0, 1, 1, 0},
        {"1 thread, 8 acc, pf 1 KiB",      1, 8, 1024, 0, 0, 1, 1, 0},
        {"1 thread, tsjit node order",     1, 8,    0, 0, 1, 1, 1, 0},
        {"1 thread, block order",          1, 8,    0, 0, 2, 1, 1, 0},
        {"2 threads, 1 acc",               2, 1,    0, 0, 0, 1, 1, 0},
        {"2 threads, 4 acc",               2, 4,    0, 0, 0, 1, 1, 0},
        {"2 threads, 8 acc",               2, 8,    0, 0, 0, 1, 1, 0},
        {"2 threads, 16 acc",              2, 16,   0, 0, 0, 1, 1, 0},
        {"2 threads, 8 acc, pf 256 B",     2, 8,  256, 0, 0, 1, 1, 0},
        {"2 threads, 8 acc, pf 1 KiB",     2, 8, 1024, 0, 0, 1, 1, 0},
        {"2 threads, 8 acc, pf 4 KiB",     2, 8, 4096, 0, 0, 1, 1, 0},
        {"2 threads, 8 acc, 256K chunks",  2, 8,    0, 1, 0, 1, 1, 0},
        {"2 threads, 8 acc, 2M aligned",   2, 8,    0, 0, 0, 0, 1, 0},
        {"2 threads, 8 acc, 4K pages",     2, 8,    0, 0, 0, 1, 0, 0},
        {"2 threads, 8 acc, own touch",    2, 8,    0, 0, 0, 1, 1, 1},
        {"2 threads, tsjit node order",    2, 8,    0, 0, 1, 1, 1, 0},
        {"2 threads, block order",         2, 8,    0, 0, 2, 1, 1, 0},
    };
    enum { COUNT = sizeof patterns / sizeof *patterns, MAX_ROUNDS = 200 };
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 30;
    for (int c = 0; c < COUNT; c++) {
        const Pattern *p = &patterns[c];
        if (!arrays[p->offset16][p->hugepages][p->own_touch][0]) allocate(p->offset16, p->hugepages, p->own_touch);
    }
    static double seconds[COUNT][MAX_ROUNDS];
    double sums[COUNT];
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < COUNT; c++) {
            const Pattern *p = &patterns[c];
            float **pair = arrays[p->offset16][p->hugepages][p->own_touch];
            seconds[c][r] = timed(p, pair[0], pair[1], &sums[c]);
        }
    printf("sum((a - b)^2) over two %u-element float32 arrays (%u MiB read), %d interleaved rounds\n",
           N, 8 * N >> 20, rounds);
    printf("%-32s %16s %16s %14s\n", "pattern", "median", "fastest", "sum");
    for (int c = 0; c < COUNT; c++) {
        qsort(seconds[c], rounds, sizeof(double), by_value);
        double median = seconds[c][rounds / 2], fastest = seconds[c][0];
        printf("%-32s %6.2f ms %4.1f GB/s %5.2f ms %4.1f GB/s %14.6g\n", patterns[c].name, median * 1e3,
               8.0 * N / median / 1e9, fastest * 1e3, 8.0 * N / fastest / 1e9, sums[c]);
    }
    return 0;
}
