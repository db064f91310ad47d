// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heapcensus.so - an LD_PRELOAD shim that counts a program's live heap
 * bytes by the code that allocated them, for bench.py's quicfield part
 *
 *   HEAPCENSUS_OUT=FILE LD_PRELOAD=/path/to/heapcensus.so smbsplice ...
 *   kill -s RTMIN+3 PID      # FILE is replaced by the census
 *
 * Theory of operation: quicfield measures what an idle QUIC session
 * costs in resident memory, which says how much but not whose. This shim
 * says whose: every malloc(), calloc() and realloc() is recorded with its
 * size and the return address of the call (the code that called the
 * allocator: libngtcp2's ngtcp2_mem wrappers, libgnutls, the program),
 * free() and realloc() forget it, and on SIGRTMIN+3 the live bytes and
 * blocks are written per call site, one line each:
 *
 *   ADDRESS BYTES BLOCKS
 *
 * ADDRESS is a hexadecimal return address; the reader maps it to a
 * library with the process's /proc/PID/maps (quicfield.py does), so the
 * handler itself needs no dladdr() and no stdio, neither of which may be
 * called from a signal handler. The census is written to FILE.tmp (mode
 * 0600) and renamed to FILE, so a reader that waits for FILE reads it
 * whole. Two censuses, before and after N more
 * sessions are opened, divided by N, give each library's heap bytes per
 * session. These are allocated bytes: pages an allocation never touched
 * are not resident, so a library's share of the resident figure can be
 * smaller.
 *
 * Bounds: TRACK live blocks and SITES call sites are recorded; once
 * either is full, later ones are not, and the census's first line says
 * "overflow" so the reader refuses it rather than under-count. Blocks
 * from memalign(), posix_memalign() and aligned_alloc() are not seen, and
 * their free() finds nothing to forget. calloc() before the real one is
 * found (dlsym() may call it) is served from a small static buffer that
 * free() ignores.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRACK (1u << 21)
#define SITES 4096u
#define TOMB  ((void *)1)

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void **blk;	   /* TRACK open-addressed slots: the block */
static uint32_t *blk_site; /* its call site's index in site[] */
static size_t *blk_len;	   /* its size */
static void *site[SITES];
static long site_bytes[SITES], site_blocks[SITES];
static int overflow;

static char boot[65536];
static size_t boot_used;

static size_t slot_of(const void *p)
{
	return (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull % TRACK);
}

static uint32_t site_of(void *ra)
{
	uint32_t h = (uint32_t)(((uintptr_t)ra * 0x9e3779b97f4a7c15ull) >> 52) %
		     SITES;

	for (uint32_t i = 0; i < SITES; i++, h = (h + 1) % SITES)
		if (!site[h] || site[h] == ra) {
			site[h] = ra;
			return h;
		}
	overflow = 1;
	return UINT32_MAX;
}

static void remember(void *p, size_t n, void *ra)
{
	size_t h;
	uint32_t s;

	if (!p || !blk)
		return;
	pthread_mutex_lock(&lock);
	s = site_of(ra);
	h = slot_of(p);
	for (size_t i = 0; s != UINT32_MAX && i < TRACK;
	     i++, h = (h + 1) % TRACK)
		if (!blk[h] || blk[h] == TOMB) {
			blk[h] = p;
			blk_site[h] = s;
			blk_len[h] = n;
			site_bytes[s] += (long)n;
			site_blocks[s]++;
			pthread_mutex_unlock(&lock);
			return;
		}
	overflow = 1;
	pthread_mutex_unlock(&lock);
}

static void forget(void *p)
{
	size_t h;

	if (!p || !blk)
		return;
	pthread_mutex_lock(&lock);
	h = slot_of(p);
	for (size_t i = 0; blk[h] && i < TRACK; i++, h = (h + 1) % TRACK)
		if (blk[h] == p) {
			site_bytes[blk_site[h]] -= (long)blk_len[h];
			site_blocks[blk_site[h]]--;
			blk[h] = TOMB;
			break;
		}
	pthread_mutex_unlock(&lock);
}

static void put(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* The census, from the signal: open(), snprintf() of numbers and
 * write() only. It reads the counters without the lock (the handler may
 * have interrupted their holder); the program is idle when asked. */
static void census(int sig)
{
	const char *out = getenv("HEAPCENSUS_OUT");
	static char tmp[4096];
	char line[96];
	int fd, n;

	(void)sig;
	if (!out ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp", out) >= (int)sizeof(tmp))
		return;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%s\n",
		     overflow ? "overflow" : "census");
	put(fd, line, (size_t)n);
	for (uint32_t i = 0; i < SITES; i++)
		if (site[i] && site_blocks[i]) {
			n = snprintf(line, sizeof(line), "%lx %ld %ld\n",
				     (unsigned long)(uintptr_t)site[i],
				     site_bytes[i], site_blocks[i]);
			put(fd, line, (size_t)n);
		}
	close(fd);
	rename(tmp, out);
}

static void find_real(void)
{
	if (real_malloc)
		return;
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
}

void *malloc(size_t n)
{
	void *p;

	find_real();
	p = real_malloc(n);
	remember(p, n, __builtin_return_address(0));
	return p;
}

void *calloc(size_t a, size_t b)
{
	void *p;

	if (!real_calloc) {
		size_t n = (a * b + 15) & ~(size_t)15;

		if (boot_used + n > sizeof(boot))
			return NULL;
		p = boot + boot_used;
		boot_used += n;
		return p;
	}
	p = real_calloc(a, b);
	remember(p, a * b, __builtin_return_address(0));
	return p;
}

void *realloc(void *q, size_t n)
{
	void *p;

	find_real();
	p = real_realloc(q, n);
	if (p || !n)
		forget(q);
	remember(p, n, __builtin_return_address(0));
	return p;
}

void free(void *q)
{
	if ((char *)q >= boot && (char *)q < boot + sizeof(boot))
		return;
	find_real();
	forget(q);
	real_free(q);
}

__attribute__((constructor)) static void start(void)
{
	find_real();
	blk = real_calloc(TRACK, sizeof(*blk));
	blk_site = real_calloc(TRACK, sizeof(*blk_site));
	blk_len = real_calloc(TRACK, sizeof(*blk_len));
	if (!blk || !blk_site || !blk_len)
		blk = NULL;
	signal(SIGRTMIN + 3, census);
}
