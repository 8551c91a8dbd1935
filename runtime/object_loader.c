/* A loader for the relocatable objects LLVM emits for tsjit (ELF64 x86-64, position-
 * independent, small code model), so that a kernel from the disk cache runs without
 * LLVM: loading llvmlite and initializing LLVM was most of what a process with a warm
 * cache spent before its first optimized result.
 *
 * It does what ORC's object linking does for these objects, and no more:
 * - Every allocated section of code or data goes into one private mapping: code (and the
 *   jump stubs below) first, then read-only data and the slots of external addresses,
 *   then writable data, each group on pages of its own. Once relocated, code is made
 *   read+execute and read-only data read-only: no page is ever writable and executable.
 * - Undefined symbols resolve from the caller's table first (the C runtime's functions
 *   and the shared elementwise driver, which the engine knows), else from the process
 *   (libm, CPython's API: dlsym), as the JIT's process-symbol generator does.
 * - An external symbol may lie beyond a 32-bit displacement: a GOT-relative load reads
 *   its address from a slot in the mapping, and a call that cannot reach it directly
 *   goes through a jump stub that reads the same slot (a PLT).
 * - Relocations: R_X86_64_64, PC32, PLT32, PC64, GOTPCREL, GOTPCRELX, REX_GOTPCRELX, 32,
 *   32S (the last two only where the value fits).
 * Anything else (another machine, class or file type, init arrays, TLS, common symbols,
 * other relocations, an unresolved symbol) is refused with the reason, and nothing stays
 * mapped: the engine then links the object with LLVM's JIT. Objects reach this loader
 * only after the disk cache verified them; every offset is bounds-checked anyway, so a
 * malformed object is refused, never followed. Unwind tables (.eh_frame) are not loaded:
 * no unwinder runs through kernels.
 */
#define _GNU_SOURCE
#include "tsjit_object_loader.h"

#include <stdio.h>

#if defined(__linux__) && defined(__x86_64__)
#include <dlfcn.h>
#include <elf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef R_X86_64_GOTPCRELX
#define R_X86_64_GOTPCRELX 41
#define R_X86_64_REX_GOTPCRELX 42
#endif

#define STUB_BYTES 8               /* jmp *slot(%rip) (6 bytes) and two int3 */
#define MAX_MAPPING (256u << 20)   /* kernels are kilobytes: well within rel32 reach */

struct tsjit_object {
    uint8_t *base;
    size_t size;
    size_t n_exports;
    uint64_t *export_addresses;
    uint32_t *export_names;        /* offsets into names */
    char *names;
};

enum group { CODE, READ_ONLY, WRITABLE, GROUPS };

typedef struct {
    const uint8_t *image;          /* an aligned copy of the caller's bytes */
    size_t size;
    const Elf64_Shdr *sections;
    size_t n_sections;
    const Elf64_Sym *symbols;
    size_t n_symbols;
    size_t symtab;                 /* its section index */
    const char *strings;
    size_t strings_size;
    const char *table_names;
    const uint64_t *table_addresses;
    int64_t table_count;
    bool *loaded;                  /* per section */
    size_t *offset;                /* per section: where it is in the mapping */
    int64_t *slot;                 /* per symbol: its address slot, or -1 */
    uint64_t *address;             /* per symbol, once resolved */
    bool *resolved;
    size_t n_slots, slots_at, stubs_at;
    size_t group_start[GROUPS + 1];
    uint8_t *base;
    size_t mapped;
    char *error;
    size_t error_size;
} loader;

static bool fail(loader *l, const char *format, ...) {
    if (l->error_size > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(l->error, l->error_size, format, args);
        va_end(args);
    }
    return false;
}

static size_t align_up(size_t value, size_t alignment) {
    return (value + alignment - 1) & ~(alignment - 1);
}

static bool has_data(const Elf64_Shdr *s) {
    return s->sh_type != SHT_NOBITS && s->sh_type != SHT_NULL;
}

static enum group group_of(const Elf64_Shdr *s) {
    if (s->sh_flags & SHF_EXECINSTR) return CODE;
    return (s->sh_flags & SHF_WRITE) ? WRITABLE : READ_ONLY;
}

static bool read_sections(loader *l) {
    if (l->size < sizeof(Elf64_Ehdr)) return fail(l, "too short for an ELF header");
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)l->image;
    if (memcmp(h->e_ident, ELFMAG, SELFMAG) != 0) return fail(l, "not an ELF file");
    if (h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_ident[EI_DATA] != ELFDATA2LSB ||
        h->e_type != ET_REL || h->e_machine != EM_X86_64)
        return fail(l, "not an ELF64 x86-64 relocatable object");
    if (h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shnum == 0 || h->e_shoff > l->size ||
        h->e_shnum > (l->size - h->e_shoff) / sizeof(Elf64_Shdr) || h->e_shoff % 8 != 0)
        return fail(l, "bad section header table");
    l->sections = (const Elf64_Shdr *)(l->image + h->e_shoff);
    l->n_sections = h->e_shnum;
    for (size_t i = 0; i < l->n_sections; i++) {
        const Elf64_Shdr *s = &l->sections[i];
        if (has_data(s) && (s->sh_offset > l->size || s->sh_size > l->size - s->sh_offset))
            return fail(l, "section %zu lies outside the file", i);
        if (s->sh_size > MAX_MAPPING)
            return fail(l, "section %zu is too large", i);
        if (s->sh_addralign > 4096 || (s->sh_addralign & (s->sh_addralign - 1)))
            return fail(l, "section %zu has alignment %lu", i, (unsigned long)s->sh_addralign);
        if (s->sh_type == SHT_SYMTAB) {
            if (l->symbols != NULL) return fail(l, "two symbol tables");
            if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_offset % 8 != 0 ||
                s->sh_link >= l->n_sections ||
                l->sections[s->sh_link].sh_type != SHT_STRTAB)
                return fail(l, "bad symbol table");
            l->symtab = i;
            l->symbols = (const Elf64_Sym *)(l->image + s->sh_offset);
            l->n_symbols = s->sh_size / sizeof(Elf64_Sym);
        }
    }
    if (l->symbols == NULL) return fail(l, "no symbol table");
    const Elf64_Shdr *strtab = &l->sections[l->sections[l->symtab].sh_link];
    l->strings = (const char *)l->image + strtab->sh_offset;
    l->strings_size = strtab->sh_size;
    if (l->strings_size == 0 || l->strings[l->strings_size - 1] != '\0')
        return fail(l, "unterminated string table");
    return true;
}

static const char *symbol_name(const loader *l, size_t index) {
    size_t at = l->symbols[index].st_name;
    return at < l->strings_size ? l->strings + at : "?";
}

/* Which sections are loaded; what the others are, where that matters. */
static bool classify_sections(loader *l) {
    for (size_t i = 0; i < l->n_sections; i++) {
        const Elf64_Shdr *s = &l->sections[i];
        if (s->sh_flags & SHF_TLS) return fail(l, "thread-local section %zu", i);
        if (s->sh_type == SHT_REL) return fail(l, "REL (not RELA) relocations");
        if (s->sh_type == SHT_RELA &&
            (s->sh_info >= l->n_sections || s->sh_link != l->symtab ||
             s->sh_entsize != sizeof(Elf64_Rela) || s->sh_offset % 8 != 0))
            return fail(l, "bad relocation section %zu", i);
        if (!(s->sh_flags & SHF_ALLOC) || s->sh_type == SHT_X86_64_UNWIND) continue;
        if (s->sh_type != SHT_PROGBITS && s->sh_type != SHT_NOBITS)
            return fail(l, "allocated section %zu of type %u (init arrays?)", i,
                        (unsigned)s->sh_type);
        l->loaded[i] = true;
    }
    return true;
}

#define FOR_EACH_RELOCATION(l, section, r)                                             \
    for (size_t section = 0; section < (l)->n_sections; section++)                     \
        if ((l)->sections[section].sh_type == SHT_RELA &&                              \
            (l)->loaded[(l)->sections[section].sh_info])                              \
            for (const Elf64_Rela *r = (const Elf64_Rela *)((l)->image +               \
                     (l)->sections[section].sh_offset),                                \
                 *r##_end = r + (l)->sections[section].sh_size / sizeof(Elf64_Rela);   \
                 r < r##_end; r++)

static bool is_got_load(uint32_t type) {
    return type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX ||
           type == R_X86_64_REX_GOTPCRELX;
}

/* Slots (and stubs) for the symbols that GOT loads read and for external call targets. */
static bool assign_slots(loader *l) {
    FOR_EACH_RELOCATION(l, section, r) {
        size_t symbol = ELF64_R_SYM(r->r_info);
        uint32_t type = ELF64_R_TYPE(r->r_info);
        if (symbol >= l->n_symbols) return fail(l, "relocation of symbol %zu", symbol);
        bool external = l->symbols[symbol].st_shndx == SHN_UNDEF;
        if ((is_got_load(type) || (type == R_X86_64_PLT32 && external)) &&
            l->slot[symbol] < 0)
            l->slot[symbol] = (int64_t)l->n_slots++;
    }
    return true;
}

static bool lay_out(loader *l) {
    size_t at = 0, page = (size_t)sysconf(_SC_PAGESIZE);
    for (int group = CODE; group < GROUPS; group++) {
        at = align_up(at, page);
        l->group_start[group] = at;
        for (size_t i = 0; i < l->n_sections; i++) {
            const Elf64_Shdr *s = &l->sections[i];
            if (!l->loaded[i] || (int)group_of(s) != group) continue;
            at = align_up(at, s->sh_addralign ? s->sh_addralign : 1);
            l->offset[i] = at;
            at += s->sh_size;
            if (at > MAX_MAPPING) return fail(l, "too large");
        }
        if (group == CODE) {
            at = align_up(at, 16);
            l->stubs_at = at;
            at += l->n_slots * STUB_BYTES;
        } else if (group == READ_ONLY) {
            at = align_up(at, 8);
            l->slots_at = at;
            at += l->n_slots * sizeof(uint64_t);
        }
    }
    l->group_start[GROUPS] = align_up(at, page);
    if (l->group_start[GROUPS] == 0) return fail(l, "nothing to load");
    return true;
}

static bool find_in_table(const loader *l, const char *name, uint64_t *address) {
    const char *entry = l->table_names;
    for (int64_t i = 0; i < l->table_count; i++) {
        if (strcmp(entry, name) == 0) {
            *address = l->table_addresses[i];
            return true;
        }
        entry += strlen(entry) + 1;
    }
    return false;
}

static bool resolve(loader *l, size_t index, uint64_t *address) {
    if (l->resolved[index]) {
        *address = l->address[index];
        return true;
    }
    const Elf64_Sym *s = &l->symbols[index];
    const char *name = symbol_name(l, index);
    uint64_t value = 0;
    if (index == 0) {
        value = 0;
    } else if (s->st_shndx == SHN_UNDEF) {
        if (!find_in_table(l, name, &value)) {
            value = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, name);
            if (value == 0 && ELF64_ST_BIND(s->st_info) != STB_WEAK)
                return fail(l, "unresolved symbol %s", name);
        }
    } else if (s->st_shndx == SHN_ABS) {
        value = s->st_value;
    } else if (s->st_shndx >= SHN_LORESERVE || s->st_shndx >= l->n_sections ||
               !l->loaded[s->st_shndx]) {
        return fail(l, "symbol %s is in no loaded section", name);
    } else {
        if (s->st_value > l->sections[s->st_shndx].sh_size)
            return fail(l, "symbol %s lies outside its section", name);
        value = (uint64_t)(uintptr_t)l->base + l->offset[s->st_shndx] + s->st_value;
    }
    l->address[index] = value;
    l->resolved[index] = true;
    *address = value;
    return true;
}

static bool store32(loader *l, uint8_t *at, int64_t value, bool is_signed) {
    if (is_signed ? (value < INT32_MIN || value > INT32_MAX) : (value < 0 || value > UINT32_MAX))
        return fail(l, "a 32-bit relocation does not reach its target");
    uint32_t word = (uint32_t)value;
    memcpy(at, &word, sizeof word);
    return true;
}

static bool relocate(loader *l) {
    uint64_t *slots = (uint64_t *)(l->base + l->slots_at);
    FOR_EACH_RELOCATION(l, section, r) {
        size_t target = l->sections[section].sh_info;
        size_t symbol = ELF64_R_SYM(r->r_info);
        uint32_t type = ELF64_R_TYPE(r->r_info);
        size_t width = (type == R_X86_64_64 || type == R_X86_64_PC64) ? 8 : 4;
        const Elf64_Shdr *t = &l->sections[target];
        if (t->sh_type == SHT_NOBITS || r->r_offset > t->sh_size ||
            t->sh_size - r->r_offset < width)
            return fail(l, "relocation outside its section");
        uint8_t *at = l->base + l->offset[target] + r->r_offset;
        uint64_t place = (uint64_t)(uintptr_t)at, value;
        if (!resolve(l, symbol, &value)) return false;
        int64_t addend = r->r_addend;
        uint64_t slot = 0, stub = 0;
        if (l->slot[symbol] >= 0) {
            size_t k = (size_t)l->slot[symbol];
            slots[k] = value;
            slot = (uint64_t)(uintptr_t)&slots[k];
            stub = (uint64_t)(uintptr_t)l->base + l->stubs_at + k * STUB_BYTES;
        }
        int64_t relative = (int64_t)(value + (uint64_t)addend - place);
        switch (type) {
        case R_X86_64_NONE:
            break;
        case R_X86_64_64:
        case R_X86_64_PC64: {
            uint64_t word = type == R_X86_64_64 ? value + (uint64_t)addend : (uint64_t)relative;
            memcpy(at, &word, sizeof word);
            break;
        }
        case R_X86_64_PLT32:
            if ((relative < INT32_MIN || relative > INT32_MAX) && stub != 0)
                relative = (int64_t)(stub + (uint64_t)addend - place);
            /* fall through */
        case R_X86_64_PC32:
            if (!store32(l, at, relative, true)) return false;
            break;
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX:
            if (!store32(l, at, (int64_t)(slot + (uint64_t)addend - place), true)) return false;
            break;
        case R_X86_64_32:
        case R_X86_64_32S:
            if (!store32(l, at, (int64_t)(value + (uint64_t)addend), type == R_X86_64_32S))
                return false;
            break;
        default:
            return fail(l, "relocation type %u", (unsigned)type);
        }
    }
    for (size_t k = 0; k < l->n_slots; k++) {   /* jmp *slot_k(%rip); int3; int3 */
        uint8_t *stub = l->base + l->stubs_at + k * STUB_BYTES;
        int32_t displacement = (int32_t)((l->slots_at + k * sizeof(uint64_t)) -
                                         (l->stubs_at + k * STUB_BYTES + 6));
        stub[0] = 0xff;
        stub[1] = 0x25;
        memcpy(stub + 2, &displacement, sizeof displacement);
        stub[6] = stub[7] = 0xcc;
    }
    return true;
}

static bool protect(loader *l) {
    static const int modes[GROUPS] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
    for (int group = CODE; group < GROUPS; group++) {
        size_t start = l->group_start[group], end = l->group_start[group + 1];
        if (end > start && mprotect(l->base + start, end - start, modes[group]) != 0)
            return fail(l, "mprotect failed");
    }
    return true;
}

static bool is_export(const loader *l, size_t i) {
    const Elf64_Sym *s = &l->symbols[i];
    int bind = ELF64_ST_BIND(s->st_info);
    return (bind == STB_GLOBAL || bind == STB_WEAK) && s->st_shndx != SHN_UNDEF &&
           s->st_shndx < l->n_sections && l->loaded[s->st_shndx] &&
           s->st_name != 0 && s->st_name < l->strings_size;
}

static tsjit_object *collect_exports(loader *l) {
    tsjit_object *object = calloc(1, sizeof *object);
    size_t n = 0, name_bytes = 0;
    for (size_t i = 1; i < l->n_symbols; i++)
        if (is_export(l, i)) {
            n++;
            name_bytes += strlen(symbol_name(l, i)) + 1;
        }
    if (object == NULL ||
        !(object->export_addresses = malloc((n + 1) * sizeof(uint64_t))) ||
        !(object->export_names = malloc((n + 1) * sizeof(uint32_t))) ||
        !(object->names = malloc(name_bytes + 1))) {
        if (object) {
            free(object->export_addresses);
            free(object->export_names);
        }
        free(object);
        fail(l, "out of memory");
        return NULL;
    }
    size_t at = 0;
    for (size_t i = 1; i < l->n_symbols; i++) {
        if (!is_export(l, i)) continue;
        uint64_t address;
        resolve(l, i, &address);    /* cannot fail: defined in a loaded section */
        size_t length = strlen(symbol_name(l, i)) + 1;
        memcpy(object->names + at, symbol_name(l, i), length);
        object->export_names[object->n_exports] = (uint32_t)at;
        object->export_addresses[object->n_exports++] = address;
        at += length;
    }
    object->base = l->base;
    object->size = l->mapped;
    return object;
}

tsjit_object *tsjit_object_load(const uint8_t *image, size_t size, const char *names,
                                const uint64_t *addresses, int64_t count, char *error,
                                size_t error_size) {
    loader l = {.size = size, .table_names = names, .table_addresses = addresses,
                .table_count = count, .error = error, .error_size = error_size};
    tsjit_object *object = NULL;
    uint8_t *copy = malloc(size ? size : 1);   /* aligned for the ELF structures */
    if (copy == NULL) {
        fail(&l, "out of memory");
        return NULL;
    }
    memcpy(copy, image, size);
    l.image = copy;
    if (!read_sections(&l)) goto done;
    l.loaded = calloc(l.n_sections, sizeof *l.loaded);
    l.offset = calloc(l.n_sections, sizeof *l.offset);
    l.slot = malloc((l.n_symbols + 1) * sizeof *l.slot);
    l.address = calloc(l.n_symbols + 1, sizeof *l.address);
    l.resolved = calloc(l.n_symbols + 1, sizeof *l.resolved);
    if (!l.loaded || !l.offset || !l.slot || !l.address || !l.resolved) {
        fail(&l, "out of memory");
        goto done;
    }
    memset(l.slot, 0xff, (l.n_symbols + 1) * sizeof *l.slot);   /* -1: no slot */
    if (!classify_sections(&l) || !assign_slots(&l) || !lay_out(&l)) goto done;
    l.mapped = l.group_start[GROUPS];
    void *base = mmap(NULL, l.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    if (base == MAP_FAILED) {
        fail(&l, "mmap of %zu bytes failed", l.mapped);
        goto done;
    }
    l.base = base;
    for (size_t i = 0; i < l.n_sections; i++)
        if (l.loaded[i] && l.sections[i].sh_type == SHT_PROGBITS)
            memcpy(l.base + l.offset[i], l.image + l.sections[i].sh_offset,
                   l.sections[i].sh_size);
    if (relocate(&l) && protect(&l)) object = collect_exports(&l);
    if (object == NULL) munmap(l.base, l.mapped);
done:
    free(copy);
    free(l.loaded);
    free(l.offset);
    free(l.slot);
    free(l.address);
    free(l.resolved);
    return object;
}

uint64_t tsjit_object_address(const tsjit_object *object, const char *name) {
    for (size_t i = 0; i < object->n_exports; i++)
        if (strcmp(object->names + object->export_names[i], name) == 0)
            return object->export_addresses[i];
    return 0;
}

void tsjit_object_unload(tsjit_object *object) {
    if (object == NULL) return;
    munmap(object->base, object->size);
    free(object->export_addresses);
    free(object->export_names);
    free(object->names);
    free(object);
}

#else   /* no ELF x86-64 here: the engine links every object with LLVM's JIT */

tsjit_object *tsjit_object_load(const uint8_t *image, size_t size, const char *names,
                                const uint64_t *addresses, int64_t count, char *error,
                                size_t error_size) {
    (void)image, (void)size, (void)names, (void)addresses, (void)count;
    if (error_size > 0) snprintf(error, error_size, "no object loader on this platform");
    return NULL;
}

uint64_t tsjit_object_address(const tsjit_object *object, const char *name) {
    (void)object, (void)name;
    return 0;
}

void tsjit_object_unload(tsjit_object *object) { (void)object; }

#endif
