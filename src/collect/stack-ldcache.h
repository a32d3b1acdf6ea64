/*
 * The dynamic linker's cache, /etc/ld.so.cache: which shared libraries a program would find by
 * soname. Read as the file glibc's ldconfig writes ("glibc-ld.so.cache1.1", optionally after the
 * old "ld.so-1.7.0" part), with every offset bounds-checked; see docs/stack.md.
 */
#ifndef GPUDOCTOR_STACK_LDCACHE_H
#define GPUDOCTOR_STACK_LDCACHE_H

#include <stddef.h>
#include <stdint.h>

/* Called for each entry: the soname and the path it resolves to, and the entry's flags. */
typedef void (*ldcache_fn)(void *arg, const char *soname, const char *path, uint32_t flags);

/* Flags of an entry: the library type and the architecture it needs. */
#define LDCACHE_FLAG_TYPE_MASK 0x00ffu
#define LDCACHE_FLAG_ELF_LIBC6 0x0003u
#define LDCACHE_FLAG_ARCH_MASK 0xff00u

/* The architecture bits of this machine's own libraries (x86-64, AArch64 ...); 0 = unknown. */
uint32_t ldcache_native_arch(void);

/*
 * Calls fn for every entry of the cache in buf. Returns the number of entries, or -1 with *cause
 * (caller frees) saying what is wrong: not a cache, another byte order, truncated, an offset out
 * of range.
 */
long ldcache_parse(const char *buf, size_t len, ldcache_fn fn, void *arg, char **cause);

#endif
