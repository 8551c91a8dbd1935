/* The memory handler for fused kernels' fresh outputs (see runtime/output_memory.c).
 * Called from Python only (tsjit/codegen/output_pool.py), never from generated code. */
#ifndef TSJIT_OUTPUT_MEMORY_H
#define TSJIT_OUTPUT_MEMORY_H

#include <stdint.h>

#include "tsjit_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The PyDataMem_Handler struct (NumPy's layout, version 1) that a "mem_handler" capsule
 * points to. */
TSJIT_API const void *tsjit_output_memory_handler(void);

/* out = {mappings held by arrays, their bytes, mappings kept free, their bytes}. */
TSJIT_API void tsjit_output_memory_stats(int64_t out[4]);

/* Unmap every mapping kept free. */
TSJIT_API void tsjit_output_memory_trim(void);

#ifdef __cplusplus
}
#endif

#endif /* TSJIT_OUTPUT_MEMORY_H */
