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
 */
#include "config.h"

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#else
#include <malloc.h>
#endif

#include "alloc.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

/**
 * alloc_release_free_memory() - return free heap pages to the kernel
 */
void alloc_release_free_memory(void)
{
#ifdef HAVE_JEMALLOC
	mallctl("arena." STR(MALLCTL_ARENAS_ALL) ".purge", NULL, NULL, NULL, 0);
#else
	malloc_trim(0);
#endif
}
