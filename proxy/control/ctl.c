// SPDX-License-Identifier: GPL-2.0-or-later
/* ctl.c - `smbsplice ctl [--control PATH] COMMAND [ARG] [--json]`
 *
 * Theory of operation: the client of the control socket (control.c), in
 * the same binary so that an administrator needs no socat. It connects,
 * sends the command as one line, copies the answer to standard output
 * and exits 0, or 1 if the answer is an error (a line starting "error:",
 * or a JSON document with "error"), 2 if the socket cannot be reached.
 *
 * `top` asks twice an interval apart (the daemon rates connections since
 * the previous `top`) and prints the second answer; when standard output
 * is a terminal it goes on asking every interval and redraws the screen
 * until interrupted, like top(1).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "control/control.h"
#include "control/ctl.h"

/* Seconds between the two asks of `top`, and between redraws. */
#define TOP_INTERVAL 1.0
/* Seconds a whole exchange (connect, send, the answer's last byte) may
 * take, unless --timeout says otherwise: a daemon answers in
 * milliseconds, and a peer that trickles a byte a second must not hold
 * the client for ever. */
#define CTL_TIMEOUT 30
/* The longest answer taken: `conns --json` is about 470 bytes a
 * connection, so this holds some 140,000; a peer that sends without end
 * must not fill the memory of root's shell session. */
#define CTL_MAX_ANSWER ((size_t)64 << 20)

/**
 * now_mono() - seconds on the monotonic clock
 *
 * Return: the time, for deadlines that a change of the wall clock must
 * not move.
 */
static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/**
 * left_ms() - milliseconds until @deadline
 * @deadline:	a now_mono() time
 *
 * Return: at least 0.
 */
static int left_ms(double deadline)
{
	double ms = (deadline - now_mono()) * 1000.;

	return ms > 0 ? (int)ms + 1 : 0;
}

/**
 * ctl_connect() - connect to @path and send @line, both by @deadline
 * @path:	the control socket
 * @line:	the command, with its newline
 * @deadline:	a now_mono() time
 *
 * A listener whose backlog is full makes connect() wait, so it gets the
 * time left as SO_SNDTIMEO (Unix sockets honour it for connect()).
 *
 * Return: the socket, non-blocking, or -1 with errno set (ETIMEDOUT when
 * the deadline passed, ENAMETOOLONG for a path sun_path cannot hold).
 */
static int ctl_connect(const char *path, const char *line, double deadline)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int ms = left_ms(deadline), fd, e;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	size_t len = strlen(line);

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (!ms)
		errno = ETIMEDOUT;
	else if (!setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) &&
		 !connect(fd, (struct sockaddr *)&sun, sizeof(sun)) &&
		 send(fd, line, len, MSG_NOSIGNAL) == (ssize_t)len &&
		 !fcntl(fd, F_SETFL, O_NONBLOCK))
		return fd;
	e = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS
		    ? ETIMEDOUT
		    : errno;
	close(fd);
	errno = e ? e : EIO; /* a short send of a line this short */
	return -1;
}

/**
 * read_answer() - read until the daemon closes, by @deadline
 * @fd:		the socket, non-blocking
 * @deadline:	a now_mono() time
 * @len:	set to the answer's length
 *
 * Return: the answer (malloc()ed, NUL-terminated), or NULL with errno
 * set: ETIMEDOUT when the deadline passed first, EFBIG when the answer
 * grew past CTL_MAX_ANSWER.
 */
static char *read_answer(int fd, double deadline, size_t *len)
{
	struct pollfd p = { fd, POLLIN, 0 };
	size_t cap = 65536;
	char *a = malloc(cap), *q;
	ssize_t n;

	*len = 0;
	while (a) {
		if (*len + 1 >= cap) {
			/* Room for CTL_MAX_ANSWER and one byte more: the
			 * byte that tells an answer too long. */
			size_t more = cap * 2 > CTL_MAX_ANSWER
					      ? CTL_MAX_ANSWER + 2
					      : cap * 2;

			if (cap > CTL_MAX_ANSWER) {
				errno = EFBIG;
				break;
			}
			q = realloc(a, more);
			if (!q)
				break;
			a = q;
			cap = more;
		}
		n = recv(fd, a + *len, cap - 1 - *len, 0);
		if (n > 0) {
			*len += (size_t)n;
			continue;
		}
		if (!n) {
			a[*len] = '\0';
			return a;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			break;
		n = poll(&p, 1, left_ms(deadline));
		if (!n)
			errno = ETIMEDOUT;
		if (n <= 0 && (!n || errno != EINTR))
			break;
	}
	n = errno;
	free(a);
	errno = (int)n;
	return NULL;
}

/**
 * ask() - send one command line and read the whole answer
 * @path:	the control socket
 * @line:	the command, with its newline
 * @timeout:	seconds the whole exchange may take
 * @len:	set to the answer's length
 *
 * Return: the answer (malloc()ed, NUL-terminated), or NULL after
 * printing why in one line.
 */
static char *ask(const char *path, const char *line, int timeout, size_t *len)
{
	double deadline = now_mono() + timeout;
	char *a = NULL;
	int fd = ctl_connect(path, line, deadline);

	*len = 0;
	if (fd >= 0) {
		a = read_answer(fd, deadline, len);
		close(fd);
	}
	if (a)
		return a;
	if (errno == ETIMEDOUT)
		fprintf(stderr,
			"smbsplice ctl: %s: no whole answer within %d s (--timeout)\n",
			path, timeout);
	else if (errno == EFBIG)
		fprintf(stderr,
			"smbsplice ctl: %s: answer longer than %zu MiB, refused\n",
			path, CTL_MAX_ANSWER >> 20);
	else
		fprintf(stderr, "smbsplice ctl: %s: %s\n", path,
			strerror(errno));
	return NULL;
}

/**
 * safe_len() - how many bytes at @s make one character fit for a terminal
 * @s:	the answer from there on
 * @n:	bytes left in it, at least 1
 *
 * Printable ASCII, newline and tab, and well-formed UTF-8 outside the C1
 * range (U+0080-U+009F, which a terminal obeys as controls). Overlong
 * forms and surrogates are not well-formed: they are how a filter that
 * only looks at lead bytes gets bypassed.
 *
 * Return: 1-4, or 0 for a byte to escape.
 */
static size_t safe_len(const unsigned char *s, size_t n)
{
	size_t k, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return (s[0] >= 0x20 && s[0] != 0x7f) || s[0] == '\n' ||
		       s[0] == '\t';
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0; /* a stray continuation byte, or overlong */
	k = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (n < k)
		return 0;
	cp = s[0] & (0x7f >> k);
	for (i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((k == 2 && cp < 0xa0) || (k == 3 && cp < 0x800) ||
	    (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

/**
 * put_answer() - write an answer with every control character escaped
 * @a:		the answer
 * @len:	its length
 *
 * Whatever sits at the control path can write here, and what is written
 * here reaches root's terminal, directly or through `| grep` or `less
 * -R`: an ESC would let it set the window title, the clipboard (OSC 52)
 * or worse. So on a terminal or not, every byte that is not newline, tab
 * or part of a printable character is written as \xNN, visibly. The
 * daemon itself never sends such bytes (its JSON escapes them), so a
 * real answer is written unchanged.
 */
static void put_answer(const char *a, size_t len)
{
	const unsigned char *s = (const unsigned char *)a;
	size_t i = 0, run = 0, k;

	while (i + run < len) {
		k = safe_len(s + i + run, len - i - run);
		if (k) {
			run += k;
			continue;
		}
		fwrite(s + i, 1, run, stdout);
		printf("\\x%02x", s[i + run]);
		i += run + 1;
		run = 0;
	}
	fwrite(s + i, 1, run, stdout);
}

/**
 * is_error() - does an answer say the command failed
 * @a:	the answer
 *
 * Return: true if so.
 */
static bool is_error(const char *a)
{
	return !strncmp(a, "error:", 6) || !strncmp(a, "{\"error\"", 8);
}

/**
 * pause_interval() - sleep TOP_INTERVAL seconds
 */
static void pause_interval(void)
{
	struct timespec ts = { (time_t)TOP_INTERVAL,
			       (long)((TOP_INTERVAL - (time_t)TOP_INTERVAL) *
				      1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/**
 * run_top() - `top`: ask twice an interval apart, print the second;
 *	       on a terminal, keep redrawing
 * @path:	the control socket
 * @line:	the command line
 * @timeout:	seconds each ask may take
 * @live:	redraw until interrupted
 *
 * Return: the exit status.
 */
static int run_top(const char *path, const char *line, int timeout, bool live)
{
	size_t len;
	char *a = ask(path, line, timeout, &len);

	if (!a)
		return 2;
	do {
		free(a);
		pause_interval();
		a = ask(path, line, timeout, &len);
		if (!a)
			return 2;
		if (live)
			fputs("\033[H\033[2J", stdout);
		put_answer(a, len);
		fflush(stdout);
	} while (live && !is_error(a));
	len = is_error(a);
	free(a);
	return (int)len;
}

/**
 * usage() - say how to call `smbsplice ctl`
 * @out:	where
 */
static void usage(FILE *out)
{
	fprintf(out,
		"usage: smbsplice ctl [--control PATH] [--timeout SECONDS] COMMAND [ARG] [--json]\n"
		"  PATH defaults to " CONTROL_DEFAULT_PATH ", SECONDS to %d\n"
		"  COMMAND: conns, conn ID, listeners, info, top [N], help,\n"
		"           drain LISTENER, resume LISTENER, kill ID,\n"
		"           kill client ADDR[:PORT], kill backend ADDR[:PORT],\n"
		"           kill user [DOMAIN\\]NAME,\n"
		"           backend LISTENER BACKEND drain|maint|ready\n",
		CTL_TIMEOUT);
}

/**
 * ctl_main() - `smbsplice ctl ...`
 * @argc:	argument count, from "ctl"
 * @argv:	arguments, argv[0] being "ctl"
 *
 * Return: 0, 1 if the daemon answered an error, 2 on bad usage or if the
 * socket could not be reached.
 */
int ctl_main(int argc, char **argv)
{
	const char *path = CONTROL_DEFAULT_PATH;
	char line[256];
	size_t n = 0, len;
	int timeout = CTL_TIMEOUT;
	bool json = false;
	char *a, *end;
	int i;

	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--control") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			long t = strtol(argv[++i], &end, 10);

			if (*end || end == argv[i] || t < 1 || t > 86400) {
				fprintf(stderr,
					"smbsplice ctl: --timeout %s: not a number of seconds from 1 to 86400\n",
					argv[i]);
				return 2;
			}
			timeout = (int)t;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (i == argc) {
		usage(stderr);
		return 2;
	}
	line[0] = '\0';
	for (int j = i; j < argc; j++) {
		if (!strcmp(argv[j], "--json"))
			json = true;
		else
			n += (size_t)snprintf(line + n, sizeof(line) - n,
					      "%s%s", n ? " " : "", argv[j]);
		if (n >= sizeof(line) - 16) {
			fprintf(stderr, "smbsplice ctl: command too long\n");
			return 2;
		}
	}
	snprintf(line + n, sizeof(line) - n, "%s\n", json ? " --json" : "");
	if (!strcmp(argv[i], "top"))
		return run_top(path, line, timeout,
			       !json && isatty(STDOUT_FILENO));
	a = ask(path, line, timeout, &len);
	if (!a)
		return 2;
	put_answer(a, len);
	n = is_error(a);
	free(a);
	return (int)n;
}
