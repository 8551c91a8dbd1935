/* The host CPU as LLVM sees it, without LLVM (see tsjit_object_loader.h).
 *
 * LLVM chooses the CPU name and feature set it compiles for (getHostCPUName,
 * getHostCPUFeatures) from CPUID and XGETBV alone. The disk cache's key needs what
 * determines that choice in a process that has not loaded LLVM: these words. They are
 * the raw leaves LLVM reads (vendor, family/model/stepping, the feature leaves, the brand
 * string, the register state the OS enables), not a feature list of our own, so no
 * feature LLVM will learn of later can be missed; the per-core APIC id is cleared.
 */
#include "tsjit_object_loader.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

static const uint32_t LEAVES[][2] = {   /* {leaf, subleaf} */
    {0x0, 0},  {0x1, 0},  {0x7, 0},  {0x7, 1},  {0xd, 1},  {0x14, 0},  {0x19, 0},
    {0x24, 0}, {0x80000000, 0}, {0x80000001, 0}, {0x80000002, 0}, {0x80000003, 0},
    {0x80000004, 0}, {0x80000008, 0},
};

int64_t tsjit_cpu_identity(uint32_t *words, int64_t capacity) {
    int64_t n = 0;
    const int64_t leaves = (int64_t)(sizeof LEAVES / sizeof LEAVES[0]);
    if (capacity < leaves * 4 + 2) return 0;
    unsigned max_basic = __get_cpuid_max(0, 0), max_extended = __get_cpuid_max(0x80000000, 0);
    unsigned ecx1 = 0;
    for (int64_t i = 0; i < leaves; i++) {
        unsigned leaf = LEAVES[i][0], regs[4] = {0, 0, 0, 0};
        unsigned max = leaf & 0x80000000u ? max_extended : max_basic;
        if (leaf <= max) __cpuid_count(leaf, LEAVES[i][1], regs[0], regs[1], regs[2], regs[3]);
        if (leaf == 1) {
            regs[1] &= 0x00ffffffu;      /* EBX[31:24]: this core's initial APIC id */
            ecx1 = regs[2];
        }
        for (int r = 0; r < 4; r++) words[n++] = regs[r];
    }
    unsigned xcr0_low = 0, xcr0_high = 0;
    if (ecx1 & (1u << 27)) /* OSXSAVE: XGETBV is available */
        __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    words[n++] = xcr0_low;
    words[n++] = xcr0_high;
    return n;
}

#else

int64_t tsjit_cpu_identity(uint32_t *words, int64_t capacity) {
    (void)words;
    (void)capacity;
    return 0;
}

#endif
