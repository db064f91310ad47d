// SPDX-License-Identifier: GPL-2.0-or-later
/* alloc.c - handing freed memory back to the kernel
 *
 * Theory of operation: free() gives memory back to the allocator, not to
 * the kernel. jemalloc returns unused pages on its own only after a decay
 * time, and only when some thread next calls into it, so a worker that
 * freed its spare buffers and then went idle would keep them resident for
 * good. After the pools are trimmed, this asks the allocator to return
 * what is free now: every jemalloc arena is purged, or glibc's heap is
 * trimmed.
 *
 * Under AddressSanitizer it does nothing. ASan replaces malloc() but not
 * malloc_trim(), so the call would reach glibc's allocator, which nothing
 * else uses in such a build and which is therefore not yet set up: the
 * first malloc_trim() sets it up, binding the calling thread to glibc's
 * main arena without counting it, and two workers trimming at once did
 * so twice. A worker then failed glibc's own check at exit ("malloc
 * assertion failure in __malloc_arena_thread_freeres"), or worse.
 */
#include "config.h"

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#else
#include <malloc.h>
#endif

#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define UNDER_ASAN 1
#elif defined(__has_feature) /* clang */
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#include "core/alloc.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

/**
 * alloc_release_free_memory() - return free heap pages to the kernel
 */
void alloc_release_free_memory(void)
{
#if defined(HAVE_JEMALLOC)
	mallctl("arena." STR(MALLCTL_ARENAS_ALL) ".purge", NULL, NULL, NULL, 0);
#elif !defined(UNDER_ASAN)
	malloc_trim(0);
#endif
}

/**
 * alloc_name() - which allocator this build uses, for `info`
 *
 * Return: "jemalloc", "AddressSanitizer" or "glibc".
 */
const char *alloc_name(void)
{
#if defined(HAVE_JEMALLOC)
	return "jemalloc";
#elif defined(UNDER_ASAN)
	return "AddressSanitizer";
#else
	return "glibc";
#endif
}
