/* tsjit native runtime: the functions JIT-compiled kernels call at run time.
 *
 * This is a fixed ABI: tsjit's LLVM code generator declares these functions itself and
 * links against the addresses that tsjit/runtime.py hands to the JIT, so a change here
 * is a change to every generated kernel.
 */
#ifndef TSJIT_RUNTIME_H
#define TSJIT_RUNTIME_H

#include <stdint.h>

#if defined(_WIN32)
#define TSJIT_API __declspec(dllexport)
#else
#define TSJIT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel body: processes items [begin, end) of the job described by ctx. */
typedef void (*tsjit_task_fn)(void *ctx, int64_t begin, int64_t end);

/* A job has at most this many chunks per thread that may run it. */
#define TSJIT_CHUNKS_PER_THREAD 8

/* Run fn over [0, n) split into contiguous chunks of at least `grain` items across the
 * pool (the calling thread participates); return when all chunks are done. The threads
 * claim chunks one at a time, up to TSJIT_CHUNKS_PER_THREAD per thread free to run the
 * job, so any chunk may run on any thread: fn must give the same result wherever its
 * items run. Threads that other callers' kernels are running on count against the thread
 * budget: the job is split over those still free. Runs fn(ctx, 0, n) inline when n <= grain,
 * with one thread, when no other thread is free, when called from inside a task
 * (nesting), or when another thread's job occupies the pool. n <= 0 does nothing. */
TSJIT_API void tsjit_parallel_for(tsjit_task_fn fn, void *ctx, int64_t n, int64_t grain);

/* The thread budget: threads running tsjit_parallel_for jobs at once, callers included.
 * n >= 1 (smaller values mean 1). Default: the number of CPUs this process may run on
 * (tsjit/runtime.py sets it from TSJIT_NUM_THREADS or OMP_NUM_THREADS when loading). */
TSJIT_API void tsjit_set_num_threads(int n);
TSJIT_API int tsjit_get_num_threads(void);

/* Interrupting long kernels (Ctrl-C). tsjit_watch_interrupts() puts a hook in front of
 * the process's SIGINT handler (again, if Python's signal.signal replaced it; never over
 * SIG_IGN or SIG_DFL); the hook raises the flag tsjit_interrupt_pending() reads, then
 * calls the handler it displaced, so Python sees the signal as usual. Kernels check the
 * flag between blocks and stop early; the Python side clears it before it lets Python
 * handle the signal. */
TSJIT_API void tsjit_watch_interrupts(void);
TSJIT_API int tsjit_interrupt_pending(void);
TSJIT_API void tsjit_clear_interrupt(void);

#ifdef __cplusplus
}
#endif

#endif /* TSJIT_RUNTIME_H */
