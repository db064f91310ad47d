// SPDX-License-Identifier: GPL-2.0
/*
 * splicecp.c - copy a file through splice(2) or sendfile(2), in the guest.
 *
 * Theory of operation: cp and dd move data with read and write, which is
 * not the only way a cifs mount is driven. `splicecp splice SRC DST` moves
 * SRC to DST through a pipe (SRC -> pipe -> DST, 1 MiB at a time), which
 * exercises the file systems' splice_read and splice_write paths;
 * `splicecp sendfile SRC DST` uses sendfile(2), which the kernel runs as a
 * splice through an internal pipe. A short transfer is continued, never
 * taken for the end; an error or a premature end fails with the call that
 * failed named. Linked statically: the guest's root has no libc of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1 << 20)

/**
 * drain() - move @n bytes from the pipe @rd to @out.
 * @rd: the pipe's read end.
 * @out: the destination.
 * @n: bytes in the pipe.
 *
 * Return: 0, or -1 after naming the error.
 */
static int drain(int rd, int out, ssize_t n)
{
	while (n > 0) {
		ssize_t m = splice(rd, NULL, out, NULL, n, SPLICE_F_MOVE);

		if (m <= 0) {
			perror("splice to destination");
			return -1;
		}
		n -= m;
	}
	return 0;
}

/**
 * main() - splicecp splice|sendfile SRC DST.
 * @argc: argument count.
 * @argv: the mode, SRC and DST.
 *
 * Return: 0 when DST holds all of SRC, 1 on an error, 2 on bad usage.
 */
int main(int argc, char **argv)
{
	int use_sendfile, in, out, p[2];
	struct stat st;
	off_t left;

	if (argc != 4 || (strcmp(argv[1], "splice") && strcmp(argv[1], "sendfile"))) {
		fprintf(stderr, "usage: splicecp splice|sendfile SRC DST\n");
		return 2;
	}
	use_sendfile = !strcmp(argv[1], "sendfile");
	in = open(argv[2], O_RDONLY);
	out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || fstat(in, &st) || pipe(p)) {
		perror("splicecp");
		return 1;
	}
	fcntl(p[1], F_SETPIPE_SZ, CHUNK);
	for (left = st.st_size; left > 0;) {
		size_t want = left > CHUNK ? CHUNK : left;
		ssize_t n;

		if (use_sendfile)
			n = sendfile(out, in, NULL, want);
		else
			n = splice(in, NULL, p[1], NULL, want, SPLICE_F_MOVE);
		if (n <= 0) {
			fprintf(stderr, "%s: %s\n", argv[1], n ? strerror(errno) : "source ended early");
			return 1;
		}
		left -= n;
		if (!use_sendfile && drain(p[0], out, n))
			return 1;
	}
	if (close(out)) {
		perror("close");
		return 1;
	}
	return 0;
}
