/* Testing aids exported by the tsjit runtime: native tasks that let tests and benchmarks
 * drive tsjit_parallel_for at full speed, without a Python callback (and its GIL) in
 * every chunk. Not part of the kernel ABI. */
#ifndef TSJIT_RUNTIME_TESTING_H
#define TSJIT_RUNTIME_TESTING_H

#include "tsjit_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tsjit_parallel_for over [0, n) with a task that atomically adds 1 to counts[i] for
 * every index it is handed; returns the number of chunks (task calls) that ran. */
TSJIT_API int64_t tsjit_testing_count_indices(int64_t *counts, int64_t n, int64_t grain);

/* Times `reps` back-to-back tsjit_parallel_for calls of a near-empty job, one chunk per
 * thread, whose chunks wait for each other to start: the caller cannot run them all itself,
 * so each call is a real hand-off to the workers. Writes each call's duration in
 * nanoseconds to ns_out[0..reps); returns how many chunks ran on pool workers. */
TSJIT_API int64_t tsjit_testing_time_dispatch(int64_t reps, int64_t *ns_out);

/* TSJIT_CHUNKS_PER_THREAD, which the library was built with. */
TSJIT_API int tsjit_testing_chunks_per_thread(void);

#ifdef __cplusplus
}
#endif

#endif /* TSJIT_RUNTIME_TESTING_H */
