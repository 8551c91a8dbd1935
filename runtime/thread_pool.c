/* The thread pool behind tsjit_parallel_for.
 *
 * Kernels are launched from an interpreter loop, often microseconds apart, so a dispatch
 * must cost about a microsecond, not the ~20 us of a condition-variable round trip.
 * Hence:
 *   - after a job, workers spin on the job word for SPIN_NS before sleeping on a condvar,
 *     so back-to-back launches find them awake;
 *   - chunks are claimed, not assigned: the caller publishes the job, then claims chunks
 *     like any worker. A worker that is asleep or descheduled never delays a job; it
 *     wakes up to find no chunk left.
 *   - a job has up to TSJIT_CHUNKS_PER_THREAD chunks per thread that may run it, not one: on
 *     cores shared with other processes a thread that is descheduled mid-job holds up the
 *     job only until its current chunk ends, while the others claim the rest (with one
 *     chunk per thread, the job waited for the slower thread's whole half).
 *   - the job word packs (generation, chunk count, next chunk) into one 64-bit atomic, so
 *     one compare-and-swap both claims a chunk and proves the job is still the current one:
 *     a worker that wakes late cannot claim a chunk of a job that has already finished.
 *
 * The thread budget (tsjit_set_num_threads) bounds the threads running kernels, callers
 * included, so that several Python threads launching kernels at once do not oversubscribe
 * the cores: `running` counts the callers inside tsjit_parallel_for and the workers inside
 * a job. A caller splits its job only over the threads that are free (the budget less the
 * others running); a worker joins a job only while `running` is below the budget, and
 * spins for the next one only then (else it sleeps, leaving the core to the callers).
 * One job runs at a time. A caller that finds the pool busy (another Python thread's
 * kernel), or no thread free, or that is itself inside a task (nesting), runs its job
 * inline: a caller always runs, so a kernel never waits for another thread's.
 *
 * fork(): the child inherits none of the workers; an atfork handler forgets them and
 * re-creates the locks, and the child's first parallel job starts a new pool. Forking
 * from inside a task (while a job is in flight in the forking thread) is not supported:
 * that job's chunks claimed by vanished workers would never finish in the child.
 *
 * Interpreter exit: workers are never joined at exit; they block no exit path and die
 * with the process.
 */
#define _GNU_SOURCE
#include "tsjit_runtime.h"
#include "monotonic_clock.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

enum {
    MAX_THREADS = 1024, /* TSJIT_CHUNKS_PER_THREAD times this fits the job word's 16 bits */
    YIELD_AFTER_SPINS = 4096,    /* caller waiting for other threads' chunks */
};
_Static_assert(MAX_THREADS * TSJIT_CHUNKS_PER_THREAD <= 0xffff, "a chunk count is 16 bits");
static const int64_t SPIN_NS = 20000; /* how long an idle worker stays awake */

/* ---- the job word: generation (32 bits) | chunk count (16) | next chunk (16) ---- */

static inline uint64_t job_word(uint32_t generation, uint32_t count, uint32_t next) {
    return ((uint64_t)generation << 32) | ((uint64_t)count << 16) | next;
}
static inline uint32_t job_generation(uint64_t word) { return (uint32_t)(word >> 32); }
static inline uint32_t job_count(uint64_t word) { return (uint32_t)(word >> 16) & 0xffffu; }
static inline uint32_t job_next(uint64_t word) { return (uint32_t)word & 0xffffu; }

struct pool {
    _Alignas(64) _Atomic uint64_t job;
    _Alignas(64) _Atomic uint32_t chunks_done;
    /* The current job's body; written by the dispatching thread before it publishes the
       job word, read by whoever claims a chunk, and stable until all chunks are done. */
    _Alignas(64) tsjit_task_fn fn;
    void *ctx;
    int64_t n;

    pthread_mutex_t dispatch_lock; /* held by the thread whose job the pool runs */
    pthread_mutex_t sleep_lock;
    pthread_cond_t wake;
    _Atomic int sleepers;
    _Atomic bool stopping;
    _Atomic int running; /* callers in tsjit_parallel_for + workers in a job */

    pthread_t *workers; /* guarded by dispatch_lock */
    int num_workers;    /* threads actually running */
    int wanted_workers; /* what they were started for; differs only if pthread_create failed */

    _Atomic int num_threads;
};

static struct pool pool = {
    .dispatch_lock = PTHREAD_MUTEX_INITIALIZER,
    .sleep_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static _Thread_local bool inside_task;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int clamp_threads(long n) {
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static int available_cpus(void) {
#ifdef __linux__
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) return CPU_COUNT(&cpus);
#endif
    return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* Only the forking thread exists in the child: forget the workers and re-create the
   locks, which threads that are gone may have held. */
static void reset_pool_in_child(void) {
    pool.workers = NULL;
    pool.num_workers = 0;
    pool.wanted_workers = 0;
    atomic_store(&pool.sleepers, 0);
    atomic_store(&pool.stopping, false);
    atomic_store(&pool.running, 0); /* the parent's other callers are not in the child */
    pthread_mutex_init(&pool.dispatch_lock, NULL);
    pthread_mutex_init(&pool.sleep_lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
}

static void init_pool(void) {
    atomic_store(&pool.num_threads, clamp_threads(available_cpus()));
    pthread_atfork(NULL, NULL, reset_pool_in_child);
}

void tsjit_set_num_threads(int n) {
    pthread_once(&pool_once, init_pool);
    atomic_store(&pool.num_threads, clamp_threads(n));
}

int tsjit_get_num_threads(void) {
    pthread_once(&pool_once, init_pool);
    return atomic_load(&pool.num_threads);
}

/* ---- running chunks ---- */

static void run_chunk(uint32_t index, uint32_t count) {
    int64_t base = pool.n / count, extra = pool.n % count;
    int64_t begin = index * base + (index < extra ? index : extra);
    int64_t end = begin + base + (index < extra ? 1 : 0);
    pool.fn(pool.ctx, begin, end);
}

/* Claim and run chunks of job `generation` until none is left. */
static void run_claimed_chunks(uint32_t generation) {
    uint64_t word = atomic_load_explicit(&pool.job, memory_order_acquire);
    while (job_generation(word) == generation && job_next(word) < job_count(word)) {
        if (atomic_compare_exchange_weak_explicit(&pool.job, &word, word + 1,
                                                  memory_order_acq_rel,
                                                  memory_order_acquire)) {
            run_chunk(job_next(word), job_count(word));
            atomic_fetch_add_explicit(&pool.chunks_done, 1, memory_order_release);
            word += 1;
        }
    }
}

/* ---- workers ---- */

/* Count this worker as running if that stays within the budget. */
static bool enter_budget(void) {
    int threads = atomic_load_explicit(&pool.num_threads, memory_order_relaxed);
    int running = atomic_load(&pool.running);
    while (running < threads)
        if (atomic_compare_exchange_weak(&pool.running, &running, running + 1)) return true;
    return false;
}

static bool over_budget(void) {
    return atomic_load_explicit(&pool.running, memory_order_relaxed) >=
           atomic_load_explicit(&pool.num_threads, memory_order_relaxed);
}

/* Wait until a job newer than `seen` is published; false when the pool is stopping. */
static bool wait_for_job(uint32_t seen, uint32_t *generation) {
    int64_t deadline = monotonic_ns() + SPIN_NS;
    for (unsigned spins = 1;; spins++) {
        *generation = job_generation(atomic_load_explicit(&pool.job, memory_order_acquire));
        if (*generation != seen) return true;
        if (atomic_load_explicit(&pool.stopping, memory_order_relaxed)) return false;
        cpu_relax();
        if (spins % 256 == 0 && (monotonic_ns() > deadline || over_budget())) break;
    }
    /* Sleep. sleepers and job are both seq_cst: either the dispatcher sees this sleeper
       and broadcasts under sleep_lock, or this re-check sees its job. */
    pthread_mutex_lock(&pool.sleep_lock);
    atomic_fetch_add(&pool.sleepers, 1);
    while ((*generation = job_generation(atomic_load(&pool.job))) == seen &&
           !atomic_load(&pool.stopping))
        pthread_cond_wait(&pool.wake, &pool.sleep_lock);
    atomic_fetch_sub(&pool.sleepers, 1);
    pthread_mutex_unlock(&pool.sleep_lock);
    return *generation != seen;
}

static void *worker_main(void *generation_at_start) {
    uint32_t seen = (uint32_t)(uintptr_t)generation_at_start;
    uint32_t generation;
    inside_task = true; /* a parallel_for inside a task on a worker runs inline */
    while (wait_for_job(seen, &generation)) {
        if (enter_budget()) {
            run_claimed_chunks(generation);
            atomic_fetch_sub(&pool.running, 1);
        }
        seen = generation;
    }
    return NULL;
}

static void wake_sleepers(void) {
    pthread_mutex_lock(&pool.sleep_lock);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.sleep_lock);
}

static void stop_workers(void) {
    atomic_store(&pool.stopping, true);
    wake_sleepers();
    for (int i = 0; i < pool.num_workers; i++) pthread_join(pool.workers[i], NULL);
    free(pool.workers);
    pool.workers = NULL;
    pool.num_workers = 0;
    atomic_store(&pool.stopping, false);
}

/* Workers block all signals: Python expects its handlers to run on the main thread. */
static void start_workers(int count) {
    pool.wanted_workers = count;
    pool.workers = calloc((size_t)count, sizeof *pool.workers);
    if (pool.workers == NULL) return;
    uint32_t generation = job_generation(atomic_load(&pool.job));
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    while (pool.num_workers < count &&
           pthread_create(&pool.workers[pool.num_workers], NULL, worker_main,
                          (void *)(uintptr_t)generation) == 0)
        pool.num_workers++;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

/* ---- dispatch ---- */

static void run_inline(tsjit_task_fn fn, void *ctx, int64_t n) {
    bool outer = inside_task;
    inside_task = true;
    fn(ctx, 0, n);
    inside_task = outer;
}

static void run_job(tsjit_task_fn fn, void *ctx, int64_t n, uint32_t count) {
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    atomic_store_explicit(&pool.chunks_done, 0, memory_order_relaxed);
    uint32_t generation = job_generation(atomic_load(&pool.job)) + 1;
    atomic_store(&pool.job, job_word(generation, count, 0));
    if (atomic_load(&pool.sleepers) > 0) wake_sleepers();

    inside_task = true;
    run_claimed_chunks(generation);
    inside_task = false;

    for (unsigned spins = 1;
         atomic_load_explicit(&pool.chunks_done, memory_order_acquire) != count; spins++) {
        cpu_relax();
        if (spins >= YIELD_AFTER_SPINS) sched_yield();
    }
}

void tsjit_parallel_for(tsjit_task_fn fn, void *ctx, int64_t n, int64_t grain) {
    if (n <= 0) return;
    if (inside_task) { /* nested: this thread is already counted as running */
        run_inline(fn, ctx, n);
        return;
    }
    int threads = tsjit_get_num_threads();
    int free_threads = threads - atomic_fetch_add(&pool.running, 1);
    int64_t chunks = n / (grain > 1 ? grain : 1);
    if (chunks > (int64_t)free_threads * TSJIT_CHUNKS_PER_THREAD)
        chunks = (int64_t)free_threads * TSJIT_CHUNKS_PER_THREAD;
    if (free_threads <= 1 || chunks <= 1 ||
        pthread_mutex_trylock(&pool.dispatch_lock) != 0) {
        run_inline(fn, ctx, n);
    } else {
        if (pool.wanted_workers != threads - 1) {
            stop_workers();
            start_workers(threads - 1);
        }
        run_job(fn, ctx, n, (uint32_t)chunks);
        pthread_mutex_unlock(&pool.dispatch_lock);
    }
    atomic_fetch_sub(&pool.running, 1);
}
