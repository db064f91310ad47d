// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * filetimes.so - an LD_PRELOAD shim that logs when a program connects and
 * when it opens the files of interest, for timing smbclient file by file
 *
 *   FILETIMES_OUT=LOG FILETIMES_PREFIX=office- \
 *   LD_PRELOAD=/path/to/filetimes.so smbclient ... -c 'mget *'
 *
 * Theory of operation: bench.py's office workloads time smbclient's mget
 * and mput per file. smbclient prints a rate for each file, but from a
 * millisecond clock (a 5 KiB file shows as 1 ms or as 0), and strace -e
 * openat, which would timestamp each file's local open, stops the client
 * twice per traced call: on a busy two-core machine that made mget of
 * 1,000 files 10-15% slower. This shim costs a clock_gettime() and one
 * write() per record, and nothing for calls it does not record.
 *
 * It appends one line per event to LOG (opened O_APPEND at start, so a
 * wrapper such as nsenter that execs the client leaves no stray records):
 *
 *   c SEC.NSEC         connect() on an AF_INET or AF_INET6 socket
 *   o SEC.NSEC NAME    open(), openat() or fopen() (and their 64 forms) of a
 *                      path whose last component starts with FILETIMES_PREFIX,
 *                      stamped before the call
 *   x SEC.NSEC         the process exits through exit() or main's return
 *
 * Times are CLOCK_MONOTONIC, the clock of Python's time.monotonic(). A
 * program that opens files through glibc's internal calls (not the
 * exported symbols) goes unrecorded; smbclient imports open and fopen.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int out_fd = -1;
static const char *prefix;
static size_t prefix_len;

static void stamp(char kind, const char *name)
{
	struct timespec ts;
	char line[600];
	int n;

	if (out_fd < 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof(line), "%c %lld.%09ld%s%.500s\n", kind,
		     (long long)ts.tv_sec, ts.tv_nsec, name ? " " : "",
		     name ? name : "");
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!write(out_fd, line, (size_t)n);
}

static void note_open(const char *path)
{
	const char *base;

	if (out_fd < 0 || !prefix_len || !path)
		return;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, prefix, prefix_len) == 0)
		stamp('o', base);
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static int needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

__attribute__((constructor)) static void filetimes_init(void)
{
	const char *out = getenv("FILETIMES_OUT");

	prefix = getenv("FILETIMES_PREFIX");
	prefix_len = prefix ? strlen(prefix) : 0;
	if (out && *out)
		out_fd = REAL(open)(
			out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

__attribute__((destructor)) static void filetimes_exit(void)
{
	stamp('x', NULL);
}

int open(const char *path, int flags, ...)
{
	static __typeof__(&open) real;
	mode_t mode = 0;

	if (needs_mode(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!real)
		real = REAL(open);
	note_open(path);
	return real(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	static __typeof__(&open64) real;
	mode_t mode = 0;

	if (needs_mode(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!real)
		real = REAL(open64);
	note_open(path);
	return real(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	static __typeof__(&openat) real;
	mode_t mode = 0;

	if (needs_mode(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!real)
		real = REAL(openat);
	note_open(path);
	return real(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	static __typeof__(&openat64) real;
	mode_t mode = 0;

	if (needs_mode(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!real)
		real = REAL(openat64);
	note_open(path);
	return real(dirfd, path, flags, mode);
}

FILE *fopen(const char *path, const char *mode)
{
	static __typeof__(&fopen) real;

	if (!real)
		real = REAL(fopen);
	note_open(path);
	return real(path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	static __typeof__(&fopen64) real;

	if (!real)
		real = REAL(fopen64);
	note_open(path);
	return real(path, mode);
}

/* With _GNU_SOURCE, glibc declares the address as a transparent union */
int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
	static __typeof__(&connect) real;
	const struct sockaddr *sa = addr.__sockaddr__;

	if (!real)
		real = REAL(connect);
	if (sa && len >= sizeof(sa->sa_family) &&
	    (sa->sa_family == AF_INET || sa->sa_family == AF_INET6))
		stamp('c', NULL);
	return real(fd, addr, len);
}
