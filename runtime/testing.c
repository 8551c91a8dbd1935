/* Native tasks for tests and benchmarks of the pool (see tsjit_runtime_testing.h). */
#define _POSIX_C_SOURCE 200809L
#include "tsjit_runtime_testing.h"
#include "monotonic_clock.h"

#include <pthread.h>
#include <stdatomic.h>

struct count_job {
    _Atomic int64_t *counts;
    _Atomic int64_t chunks;
};

static void count_task(void *ctx, int64_t begin, int64_t end) {
    struct count_job *job = ctx;
    for (int64_t i = begin; i < end; i++)
        atomic_fetch_add_explicit(&job->counts[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&job->chunks, 1, memory_order_relaxed);
}

int64_t tsjit_testing_count_indices(int64_t *counts, int64_t n, int64_t grain) {
    struct count_job job = {.counts = (_Atomic int64_t *)counts};
    tsjit_parallel_for(count_task, &job, n, grain);
    return atomic_load(&job.chunks);
}

/* Each chunk waits until every chunk of the call has started (or a second has passed),
   so the caller cannot run the whole job itself: the time is a real hand-off. */
struct rendezvous_job {
    pthread_t caller;
    int64_t chunks;
    _Atomic int64_t started;
    _Atomic int64_t worker_chunks;
};

static void rendezvous_task(void *ctx, int64_t begin, int64_t end) {
    (void)begin;
    (void)end;
    struct rendezvous_job *job = ctx;
    if (!pthread_equal(pthread_self(), job->caller))
        atomic_fetch_add_explicit(&job->worker_chunks, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&job->started, 1, memory_order_acq_rel);
    int64_t give_up = monotonic_ns() + 1000000000;
    while (atomic_load_explicit(&job->started, memory_order_acquire) < job->chunks &&
           monotonic_ns() < give_up) {
    }
}

int64_t tsjit_testing_time_dispatch(int64_t reps, int64_t *ns_out) {
    int threads = tsjit_get_num_threads();
    struct rendezvous_job job = {.caller = pthread_self(), .chunks = threads};
    for (int64_t r = 0; r < reps; r++) {
        atomic_store(&job.started, 0);
        int64_t start = monotonic_ns();
        tsjit_parallel_for(rendezvous_task, &job, threads, 1);
        ns_out[r] = monotonic_ns() - start;
    }
    return atomic_load(&job.worker_chunks);
}

int tsjit_testing_chunks_per_thread(void) { return TSJIT_CHUNKS_PER_THREAD; }
