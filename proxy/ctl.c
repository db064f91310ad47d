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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "control.h"
#include "ctl.h"

/* Seconds between the two asks of `top`, and between redraws. */
#define TOP_INTERVAL 1.0
/* Seconds the client waits for an answer at most. */
#define CTL_TIMEOUT 30

/**
 * ask() - send one command line and read the whole answer
 * @path:	the control socket
 * @line:	the command, with its newline
 * @len:	set to the answer's length
 *
 * Return: the answer (malloc()ed, NUL-terminated), or NULL after
 * printing why.
 */
static char *ask(const char *path, const char *line, size_t *len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CTL_TIMEOUT };
	size_t cap = 65536;
	char *p = malloc(cap);
	ssize_t n;
	int fd;

	*len = 0;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!p || fd < 0)
		goto fail;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    send(fd, line, strlen(line), MSG_NOSIGNAL) < 0)
		goto fail;
	for (;;) {
		if (*len + 1 >= cap) {
			char *q = realloc(p, cap *= 2);

			if (!q)
				goto fail;
			p = q;
		}
		n = recv(fd, p + *len, cap - 1 - *len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (!n)
			break;
		*len += (size_t)n;
	}
	p[*len] = '\0';
	close(fd);
	return p;
fail:
	fprintf(stderr, "smbsplice ctl: %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(p);
	return NULL;
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
 * @live:	redraw until interrupted
 *
 * Return: the exit status.
 */
static int run_top(const char *path, const char *line, bool live)
{
	size_t len;
	char *a = ask(path, line, &len);

	if (!a)
		return 2;
	do {
		free(a);
		pause_interval();
		a = ask(path, line, &len);
		if (!a)
			return 2;
		if (live)
			fputs("\033[H\033[2J", stdout);
		fwrite(a, 1, len, stdout);
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
		"usage: smbsplice ctl [--control PATH] COMMAND [ARG] [--json]\n"
		"  PATH defaults to " CONTROL_DEFAULT_PATH "\n"
		"  COMMAND: conns, conn ID, listeners, drain LISTENER,\n"
		"           resume LISTENER, kill ID, top [N], help\n");
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
	bool json = false;
	char *a;
	int i;

	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--control") && i + 1 < argc) {
			path = argv[++i];
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
		return run_top(path, line, !json && isatty(STDOUT_FILENO));
	a = ask(path, line, &len);
	if (!a)
		return 2;
	fwrite(a, 1, len, stdout);
	n = is_error(a);
	free(a);
	return (int)n;
}
