// SPDX-License-Identifier: GPL-2.0
/*
 * smbread - synchronous SMB reader at a fixed request size, for benchmarks.
 *
 *   smbread URL USER PASSWORD REQSIZE SECONDS [--encrypt]
 *
 * Theory of operation: one libsmbclient context is set up for SMB3 only,
 * with signing/encryption as asked and nothing that could hide round trips
 * (libsmbclient has no read cache or readahead of its own; the only cache
 * it keeps is of server connections, which we want). The file is opened
 * and read REQSIZE bytes at a time with smbc_read(), which is synchronous:
 * for REQSIZE up to the negotiated max read size, one call is one SMB2
 * READ on the wire, so the time a call takes is the latency of one request
 * at queue depth one. The offset wraps to 0 before a read would cross the
 * end of the file, so every request is full-sized and none is spent on
 * hitting EOF. Each call is timed with CLOCK_MONOTONIC into a buffer that
 * is allocated and faulted in before the clock starts; after SECONDS the
 * throughput and latency summary is printed as one line.
 *
 * The port goes in the URL (smb://127.0.0.1:445/share/file): libsmbclient
 * parses it and connects to that port only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libsmbclient.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 2M samples of 8 bytes: 16 MiB, more than a loopback run can fill. */
#define MAX_SAMPLES  2000000UL
#define NSEC_PER_SEC 1000000000ULL

struct opts {
	const char *url;
	const char *user;
	const char *pass;
	size_t reqsize;
	double secs;
	int encrypt;
};

struct results {
	uint64_t *lat_ns; /* first MAX_SAMPLES latencies */
	uint64_t reads;	  /* all timed reads, may exceed MAX_SAMPLES */
	uint64_t bytes;
	uint64_t sum_ns;
	uint64_t max_ns;
	uint64_t elapsed_ns;
};

/**
 * die() - report a failure and exit
 * @what: what was being done when it failed
 *
 * Takes errno as it is on entry, so it must be called before anything
 * else can overwrite it.
 *
 * Return: does not return.
 */
static void __attribute__((noreturn)) die(const char *what)
{
	int err = errno;

	fprintf(stderr, "smbread: %s: %s\n", what, strerror(err));
	exit(1);
}

/**
 * usage() - report bad command line arguments and exit
 * @what: which argument was bad
 *
 * Return: does not return.
 */
static void __attribute__((noreturn)) usage(const char *what)
{
	errno = EINVAL;
	fprintf(stderr,
		"smbread: %s: %s (usage: smbread URL USER PASSWORD REQSIZE SECONDS [--encrypt])\n",
		what, strerror(errno));
	exit(1);
}

/**
 * now_ns() - read the monotonic clock
 *
 * Return: nanoseconds since an arbitrary fixed point.
 */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/**
 * parse_args() - fill in the options from the command line
 * @o: options to fill in
 * @argc: argument count from main()
 * @argv: argument vector from main()
 *
 * Return: nothing; exits on a bad command line.
 */
static void parse_args(struct opts *o, int argc, char **argv)
{
	unsigned long long size;
	char *end;

	if (argc != 6 && argc != 7)
		usage("wrong number of arguments");
	o->url = argv[1];
	o->user = argv[2];
	o->pass = argv[3];

	errno = 0;
	size = strtoull(argv[4], &end, 10);
	/* smbc_read() returns ssize_t, so the size must fit in one. */
	if (errno || end == argv[4] || *end || size == 0 || size > SSIZE_MAX)
		usage("bad REQSIZE");
	o->reqsize = size;

	errno = 0;
	o->secs = strtod(argv[5], &end);
	if (errno || end == argv[5] || *end || !(o->secs > 0))
		usage("bad SECONDS");

	o->encrypt = 0;
	if (argc == 7) {
		if (strcmp(argv[6], "--encrypt"))
			usage("unknown option");
		o->encrypt = 1;
	}
}

/**
 * copy_str() - copy into a fixed buffer handed to us by libsmbclient
 * @dst: destination buffer
 * @len: its size, as libsmbclient passes it (an int)
 * @src: string to copy
 *
 * Return: nothing; truncates silently, which at worst fails the login.
 */
static void copy_str(char *dst, int len, const char *src)
{
	if (len > 0)
		snprintf(dst, (size_t)len, "%s", src);
}

/**
 * auth_fn() - supply the credentials given on the command line
 * @ctx: the context, carrying our options as its user data
 * @srv: server name (unused: there is only one server)
 * @shr: share name (unused)
 * @wg: workgroup buffer, left as libsmbclient filled it
 * @wglen: size of @wg
 * @un: user name buffer
 * @unlen: size of @un
 * @pw: password buffer
 * @pwlen: size of @pw
 *
 * Return: nothing.
 */
static void auth_fn(SMBCCTX *ctx, const char *srv, const char *shr, char *wg,
		    int wglen, char *un, int unlen, char *pw, int pwlen)
{
	const struct opts *o = smbc_getOptionUserData(ctx);

	(void)srv;
	(void)shr;
	(void)wg;
	(void)wglen;
	copy_str(un, unlen, o->user);
	copy_str(pw, pwlen, o->pass);
}

/**
 * setup_context() - create the libsmbclient context and make it current
 * @o: options; must outlive the context, as auth_fn() reads it
 *
 * Return: nothing; exits on failure.
 */
static void setup_context(struct opts *o)
{
	SMBCCTX *ctx;

	ctx = smbc_new_context();
	if (!ctx)
		die("smbc_new_context");

	smbc_setDebug(ctx, 0);
	smbc_setOptionUserData(ctx, o);
	smbc_setFunctionAuthDataWithContext(ctx, auth_fn);
	/*
	 * A failed login must fail the run, not quietly fall back to a
	 * guest session; and Kerberos would only add a failed round trip.
	 */
	smbc_setOptionNoAutoAnonymousLogin(ctx, 1);
	smbc_setOptionUseKerberos(ctx, 0);
	smbc_setOptionFallbackAfterKerberos(ctx, 1);

	/* Pin the dialect so that runs compare like with like. */
	if (!smbc_setOptionProtocols(ctx, "SMB3_00", "SMB3_11")) {
		errno = EINVAL;
		die("smbc_setOptionProtocols");
	}
	smbc_setOptionSmbEncryptionLevel(ctx,
					 o->encrypt ? SMBC_ENCRYPTLEVEL_REQUIRE
						    : SMBC_ENCRYPTLEVEL_NONE);

	if (!smbc_init_context(ctx))
		die("smbc_init_context");
	smbc_set_context(ctx);
}

/**
 * open_file() - open the file to read and learn its size
 * @o: options
 * @size: set to the file size
 *
 * The connection, session setup and tree connect all happen here, so
 * none of them lands in the timed loop.
 *
 * Return: the libsmbclient file descriptor; exits on failure.
 */
static int open_file(const struct opts *o, off_t *size)
{
	struct stat st;
	int fd;

	fd = smbc_open(o->url, O_RDONLY, 0);
	if (fd < 0)
		die("smbc_open");
	if (smbc_fstat(fd, &st) < 0)
		die("smbc_fstat");
	/* A shorter file could only ever give short reads. */
	if (st.st_size < (off_t)o->reqsize) {
		errno = EINVAL;
		die("file is smaller than REQSIZE");
	}
	*size = st.st_size;
	return fd;
}

/**
 * alloc_faulted() - allocate memory and fault it in
 * @len: bytes to allocate
 *
 * Page faults on first touch would otherwise be charged to the first
 * reads of the timed loop.
 *
 * Return: the memory; exits on failure.
 */
static void *alloc_faulted(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len)) {
		errno = ENOMEM;
		die("posix_memalign");
	}
	memset(p, 0, len);
	return p;
}

/**
 * rewind_file() - go back to the start of the file
 * @fd: libsmbclient file descriptor
 *
 * A seek only moves libsmbclient's own offset: no request is sent.
 *
 * Return: nothing; exits on failure.
 */
static void rewind_file(int fd)
{
	if (smbc_lseek(fd, 0, SEEK_SET) < 0)
		die("smbc_lseek");
}

/**
 * record() - account for one completed read
 * @r: results to update
 * @ns: how long the read took
 * @got: bytes it returned
 *
 * Mean and max cover every read; the percentile only the stored ones.
 *
 * Return: nothing.
 */
static void record(struct results *r, uint64_t ns, size_t got)
{
	if (r->reads < MAX_SAMPLES)
		r->lat_ns[r->reads] = ns;
	r->reads++;
	r->bytes += got;
	r->sum_ns += ns;
	if (ns > r->max_ns)
		r->max_ns = ns;
}

/**
 * read_loop() - read REQSIZE at a time until the time is up
 * @o: options
 * @fd: libsmbclient file descriptor, positioned at 0
 * @size: file size
 * @r: results to fill in; lat_ns must already be allocated
 *
 * Only the smbc_read() call itself is inside the timed window; the clock
 * reading that ends one read also decides whether to start another.
 *
 * Return: nothing; exits on failure.
 */
static void read_loop(const struct opts *o, int fd, off_t size,
		      struct results *r)
{
	uint64_t limit = (uint64_t)(o->secs * NSEC_PER_SEC);
	char *buf = alloc_faulted(o->reqsize);
	uint64_t start, t0, t1;
	off_t off = 0;
	ssize_t got;

	start = now_ns();
	t1 = start;
	while (t1 - start < limit) {
		if (off + (off_t)o->reqsize > size) {
			rewind_file(fd);
			off = 0;
		}
		t0 = now_ns();
		got = smbc_read(fd, buf, o->reqsize);
		t1 = now_ns();
		if (got < 0)
			die("smbc_read");
		if (got == 0) {
			/* The file shrank under us; at 0 it is empty. */
			if (off == 0) {
				errno = ENODATA;
				die("smbc_read returned EOF at offset 0");
			}
			rewind_file(fd);
			off = 0;
			continue;
		}
		record(r, t1 - t0, (size_t)got);
		off += got;
	}
	r->elapsed_ns = t1 - start;
	free(buf);
}

/**
 * cmp_u64() - qsort() comparator for uint64_t
 * @a: first element
 * @b: second element
 *
 * Return: negative, zero or positive as @a is below, equal to or above @b.
 */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/**
 * percentile_ns() - nearest-rank percentile of the stored latencies
 * @r: results; its stored samples are sorted in place
 * @pct: percentile, 0 < pct <= 100
 *
 * Return: the latency in nanoseconds, or 0 if there are no samples.
 */
static uint64_t percentile_ns(struct results *r, double pct)
{
	size_t n = r->reads < MAX_SAMPLES ? r->reads : MAX_SAMPLES;
	size_t rank;

	if (!n)
		return 0;
	qsort(r->lat_ns, n, sizeof(*r->lat_ns), cmp_u64);
	rank = (size_t)ceil(pct / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	return r->lat_ns[rank - 1];
}

/**
 * report() - print the one-line summary
 * @o: options
 * @r: results; its samples get sorted
 *
 * Return: nothing.
 */
static void report(const struct opts *o, struct results *r)
{
	double secs = (double)r->elapsed_ns / NSEC_PER_SEC;
	double mean = r->reads ? (double)r->sum_ns / r->reads : 0;
	uint64_t p99 = percentile_ns(r, 99.0);

	printf("smbread reqsize=%zu secs=%.2f reads=%" PRIu64
	       " mib_s=%.1f mean_us=%.1f p99_us=%.1f max_us=%.1f\n",
	       o->reqsize, secs, r->reads,
	       secs > 0 ? (double)r->bytes / (1024.0 * 1024.0) / secs : 0,
	       mean / 1000.0, (double)p99 / 1000.0, (double)r->max_ns / 1000.0);
}

/**
 * main() - set up, read for the given time, report
 * @argc: argument count
 * @argv: argument vector
 *
 * Return: 0 on success; 1 on any failure, after a line on stderr.
 */
int main(int argc, char **argv)
{
	struct results r = { 0 };
	struct opts o;
	off_t size;
	int fd;

	parse_args(&o, argc, argv);
	r.lat_ns = alloc_faulted(MAX_SAMPLES * sizeof(*r.lat_ns));
	setup_context(&o);
	fd = open_file(&o, &size);
	read_loop(&o, fd, size, &r);
	if (smbc_close(fd) < 0)
		die("smbc_close");
	report(&o, &r);
	if (fflush(stdout))
		die("writing to stdout");
	free(r.lat_ns);
	return 0;
}
