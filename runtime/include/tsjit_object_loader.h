/* Running cached kernels without LLVM (see runtime/object_loader.c and cpu_identity.c).
 * Called from Python only (tsjit/codegen/object_loader.py and host_key.py), never from
 * generated code. */
#ifndef TSJIT_OBJECT_LOADER_H
#define TSJIT_OBJECT_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "tsjit_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsjit_object tsjit_object;

/* Map the ELF64 x86-64 relocatable object image[0, size) into memory of its own and
 * relocate it. Undefined symbols resolve first from the table of `count` entries: names
 * (each NUL-terminated, one after the other) and their addresses; then from the process
 * (dlsym). On anything it does not handle (another machine or file type, a relocation
 * or section kind it does not know, an unresolved symbol) nothing stays mapped, NULL is
 * returned and `error` (of `error_size` bytes) says why. */
TSJIT_API tsjit_object *tsjit_object_load(const uint8_t *image, size_t size,
                                          const char *names, const uint64_t *addresses,
                                          int64_t count, char *error, size_t error_size);

/* Address of the global symbol `name` the object defines; 0 if it defines none. */
TSJIT_API uint64_t tsjit_object_address(const tsjit_object *object, const char *name);

/* Unmap the object's code and data. */
TSJIT_API void tsjit_object_unload(tsjit_object *object);

/* What LLVM reads to choose the host CPU's name and features (x86 CPUID leaves and the
 * OS-enabled register state), into words[0, capacity); returns the number of words
 * written, 0 where there is no CPUID. Fields that differ between the cores of one
 * machine (APIC ids) are cleared. */
TSJIT_API int64_t tsjit_cpu_identity(uint32_t *words, int64_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* TSJIT_OBJECT_LOADER_H */
