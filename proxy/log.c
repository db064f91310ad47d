// SPDX-License-Identifier: GPL-2.0-or-later
/* log.c - one line per event on standard error
 *
 * Theory of operation: the daemon is meant to run under systemd or a
 * terminal, both of which timestamp and collect standard error, so a line is
 * a level word and the message, written with a single write so lines from
 * one process never interleave.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "log.h"

int log_verbosity;

static const char *const level_word[] = { "error", "warning", "info", "debug" };

/**
 * log_at() - write one log line
 * @lvl:	severity; debug lines are dropped unless -v was given
 * @fmt:	printf format of the message, without a newline
 */
void log_at(enum log_level lvl, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n, m;

	if (lvl == LOG_LVL_DEBUG && log_verbosity < 1)
		return;
	n = snprintf(line, sizeof(line), "smbsplice: %s: ", level_word[lvl]);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	n += m < 0 ? 0 : m;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		return; /* nowhere left to report it */
}
