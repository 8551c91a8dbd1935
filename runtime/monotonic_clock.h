/* The clock the pool spins against and the testing aids time with (internal). */
#ifndef TSJIT_MONOTONIC_CLOCK_H
#define TSJIT_MONOTONIC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* TSJIT_MONOTONIC_CLOCK_H */
