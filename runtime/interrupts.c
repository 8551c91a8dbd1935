/* Ctrl-C for long native kernels (see tsjit_runtime.h).
 *
 * A fused kernel runs with the GIL released, possibly on several threads, so it cannot ask
 * Python whether a signal is pending (PyErr_CheckSignals needs the GIL and the main
 * thread). Instead this hook sits in front of the process's SIGINT handler: it raises a
 * flag that kernels read between blocks, then calls the handler it replaced (Python's),
 * so Python still records the signal and runs its own handler afterwards: by default that
 * raises KeyboardInterrupt, and a handler the user installed runs as it would have.
 *
 * The hook is installed and re-checked by tsjit_watch_interrupts(), which long jobs call:
 * signal.signal() from Python re-installs Python's C handler over it, and the next long
 * job puts the hook back in front. Nothing is hooked while SIGINT is ignored or has its
 * default action (there is no Python handler to defer to then).
 */
#define _POSIX_C_SOURCE 200809L
#include "tsjit_runtime.h"

#include <signal.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>

static _Atomic int pending;
static struct sigaction chained; /* the handler the hook calls after raising the flag */

static void hook(int sig, siginfo_t *info, void *context) {
    atomic_store_explicit(&pending, 1, memory_order_relaxed);
    if (chained.sa_flags & SA_SIGINFO)
        chained.sa_sigaction(sig, info, context);
    else if (chained.sa_handler != SIG_IGN && chained.sa_handler != SIG_DFL)
        chained.sa_handler(sig);
}

int tsjit_interrupt_pending(void) {
    return atomic_load_explicit(&pending, memory_order_relaxed);
}

void tsjit_clear_interrupt(void) {
    atomic_store_explicit(&pending, 0, memory_order_relaxed);
}

void tsjit_watch_interrupts(void) {
    struct sigaction current;
    if (sigaction(SIGINT, NULL, &current) != 0) return;
    if (current.sa_flags & SA_SIGINFO) {
        if (current.sa_sigaction == hook) return;
    } else if (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL) {
        return;
    }
    struct sigaction ours = current;
    ours.sa_flags |= SA_SIGINFO;
    ours.sa_sigaction = hook;
    /* The hook may run (on another thread) while `chained` is rewritten: block SIGINT
       around the swap on this thread and publish `chained` before the hook. */
    sigset_t block, previous;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &previous);
    chained = current;
    atomic_thread_fence(memory_order_seq_cst);
    sigaction(SIGINT, &ours, NULL);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}
