/* The memory of fused kernels' fresh outputs: a NumPy memory handler (PyDataMem_Handler,
 * NumPy >= 1.22) that keeps the pages of freed outputs for the next ones.
 *
 * Why: an output whose pages the process does not have costs more than many kernels: the
 * kernel faults in (and the OS zeroes) every page on first touch, ~6 ms for 64 MB with
 * transparent huge pages and ~30 ms with 4 KiB pages, against ~5 ms for a*x+y at 16M
 * float32. glibc maps allocations above its mmap threshold afresh and unmaps them on
 * free, so plain NumPy pays it on every call. A result must still be an ordinary array
 * that owns its memory (base None, OWNDATA, resizable): tsjit/codegen/output_pool.py
 * makes this the current handler only while it allocates a result with np.empty, so the
 * array records this handler and NumPy calls it back when the array is freed (or
 * resized), from any thread and after any number of views came and went.
 *
 * Blocks: every allocation carries a 16-byte header just before the data saying how it
 * was made. Below POOLED_MIN_BYTES it comes from malloc. From there on it is a private
 * anonymous mapping whose data starts RESULT_PAGE_OFFSET bytes into its first page (a
 * cache line boundary, and not at the offset NumPy's own large arrays start at, which
 * makes loads wait on stores to the same page offset, "4K aliasing": bias+relu
 * [1024,1024] took 74.9 us into an output 64 bytes into its page, 66.6-69.7 at 2048).
 * A freed mapping is kept, up to MAX_FREE_BLOCKS and MAX_FREE_BYTES, the oldest unmapped
 * first; an allocation takes the smallest kept block that fits without wasting more than
 * an eighth, else maps a new one. So what dropped results held goes back to the OS beyond
 * that bound, and memory in use is what live results hold.
 */
#define _GNU_SOURCE
#include "tsjit_output_memory.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum {
    HEADER_BYTES = 16,
    RESULT_PAGE_OFFSET = 2048,
    MAX_FREE_BLOCKS = 8,
};
static const size_t POOLED_MIN_BYTES = (size_t)1 << 18;
static const size_t MAX_FREE_BYTES = (size_t)1 << 30;
static const size_t HUGE_PAGE_ADVICE_BYTES = (size_t)4 << 20; /* as NumPy's allocator */
static const uint64_t FROM_MALLOC = 0x7473a11c0c0ffee1ULL;
static const uint64_t FROM_MAPPING = 0x7473a11c0b10c4edULL;

typedef struct {
    uint64_t mapped_bytes; /* the mapping's length (0 for malloc blocks) */
    uint64_t kind;         /* FROM_MALLOC or FROM_MAPPING */
} header;

/* NumPy's structs (ndarraytypes.h), version 1. */
typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} numpy_allocator;

typedef struct {
    char name[127];
    uint8_t version;
    numpy_allocator allocator;
} numpy_handler;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void *free_blocks[MAX_FREE_BLOCKS]; /* data pointers, oldest first */
static size_t free_count;
static size_t free_bytes;
static int64_t live_blocks, live_bytes;   /* mappings held by arrays */

static header *header_of(void *data) { return (header *)((char *)data - HEADER_BYTES); }
static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }
static size_t capacity_of(void *data) {
    return header_of(data)->mapped_bytes - RESULT_PAGE_OFFSET;
}

/* The child of a fork() may inherit the lock held by a thread it does not have. */
static void reset_in_child(void) { pthread_mutex_init(&lock, NULL); }
static void register_atfork(void) { pthread_atfork(NULL, NULL, reset_in_child); }

static void unmap(void *data) {
    munmap((char *)data - RESULT_PAGE_OFFSET, header_of(data)->mapped_bytes);
}

static void *map_block(size_t size) {
    size_t page = page_size();
    size_t bytes = (RESULT_PAGE_OFFSET + size + page - 1) / page * page;
    char *start = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (start == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= HUGE_PAGE_ADVICE_BYTES) madvise(start, bytes, MADV_HUGEPAGE);
#endif
    void *data = start + RESULT_PAGE_OFFSET;
    header_of(data)->mapped_bytes = bytes;
    header_of(data)->kind = FROM_MAPPING;
    return data;
}

/* The smallest kept block holding `size` bytes without wasting more than an eighth. */
static void *take_free_block(size_t size) {
    size_t best = free_count;
    for (size_t i = 0; i < free_count; i++) {
        size_t capacity = capacity_of(free_blocks[i]);
        if (capacity >= size && capacity - size <= size / 8 + page_size() &&
            (best == free_count || capacity < capacity_of(free_blocks[best])))
            best = i;
    }
    if (best == free_count) return NULL;
    void *data = free_blocks[best];
    memmove(&free_blocks[best], &free_blocks[best + 1],
            (free_count - best - 1) * sizeof(void *));
    free_count--;
    free_bytes -= header_of(data)->mapped_bytes;
    return data;
}

static void *allocate(void *ctx, size_t size) {
    (void)ctx;
    if (size < POOLED_MIN_BYTES) {
        char *block = malloc(HEADER_BYTES + (size ? size : 1));
        if (block == NULL) return NULL;
        ((header *)block)->mapped_bytes = 0;
        ((header *)block)->kind = FROM_MALLOC;
        return block + HEADER_BYTES;
    }
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&lock);
    void *data = take_free_block(size);
    pthread_mutex_unlock(&lock);
    if (data == NULL) data = map_block(size);
    if (data == NULL) return NULL;
    pthread_mutex_lock(&lock);
    live_blocks++;
    live_bytes += (int64_t)header_of(data)->mapped_bytes;
    pthread_mutex_unlock(&lock);
    return data;
}

static void release(void *ctx, void *data, size_t size) {
    (void)ctx, (void)size; /* NumPy passes the array's size; the header knows the block's */
    if (data == NULL) return;
    header *h = header_of(data);
    if (h->kind == FROM_MALLOC) {
        free(h);
        return;
    }
    void *unmapped = NULL, *evicted[MAX_FREE_BLOCKS];
    size_t evicted_count = 0;
    pthread_mutex_lock(&lock);
    live_blocks--;
    live_bytes -= (int64_t)h->mapped_bytes;
    if (h->mapped_bytes > MAX_FREE_BYTES) {
        unmapped = data;
    } else {
        while (free_count == MAX_FREE_BLOCKS || free_bytes + h->mapped_bytes > MAX_FREE_BYTES) {
            evicted[evicted_count++] = free_blocks[0];
            free_bytes -= header_of(free_blocks[0])->mapped_bytes;
            memmove(&free_blocks[0], &free_blocks[1], (free_count - 1) * sizeof(void *));
            free_count--;
        }
        free_blocks[free_count++] = data;
        free_bytes += h->mapped_bytes;
    }
    pthread_mutex_unlock(&lock);
    if (unmapped != NULL) unmap(unmapped);
    for (size_t i = 0; i < evicted_count; i++) unmap(evicted[i]);
}

static void *allocate_zeroed(void *ctx, size_t count, size_t item_size) {
    if (item_size != 0 && count > SIZE_MAX / item_size) return NULL;
    size_t size = count * item_size;
    void *data = allocate(ctx, size);
    if (data != NULL) memset(data, 0, size);
    return data;
}

static void *reallocate(void *ctx, void *data, size_t size) {
    if (data == NULL) return allocate(ctx, size);
    header *h = header_of(data);
    if (h->kind == FROM_MALLOC) {
        char *block = realloc(h, HEADER_BYTES + (size ? size : 1));
        return block == NULL ? NULL : block + HEADER_BYTES;
    }
    size_t capacity = capacity_of(data);
    if (size <= capacity && size >= capacity / 2) return data;
    void *moved = allocate(ctx, size);
    if (moved == NULL) return NULL;
    memcpy(moved, data, size < capacity ? size : capacity);
    release(ctx, data, capacity);
    return moved;
}

static numpy_handler handler = {
    "tsjit_output_memory", 1, {NULL, allocate, allocate_zeroed, reallocate, release},
};

const void *tsjit_output_memory_handler(void) { return &handler; }

void tsjit_output_memory_stats(int64_t out[4]) {
    pthread_mutex_lock(&lock);
    out[0] = live_blocks;
    out[1] = live_bytes;
    out[2] = (int64_t)free_count;
    out[3] = (int64_t)free_bytes;
    pthread_mutex_unlock(&lock);
}

void tsjit_output_memory_trim(void) {
    void *evicted[MAX_FREE_BLOCKS];
    pthread_mutex_lock(&lock);
    size_t count = free_count;
    memcpy(evicted, free_blocks, count * sizeof(void *));
    free_count = 0;
    free_bytes = 0;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < count; i++) unmap(evicted[i]);
}
