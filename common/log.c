// SPDX-License-Identifier: GPL-2.0-or-later
/* log.c - one line per event on standard error, never blocking a worker
 *
 * Theory of operation: the daemon runs under systemd or a terminal, both of
 * which timestamp and collect standard error, so a line is a level word and
 * the message. Standard error can be a pipe whose reader stalls (journald
 * under load, a terminal that is scrolled back); a worker that wrote to it
 * directly would stall with it, and every connection of that worker too.
 *
 * So once log_start() has run, a line is formatted by its thread and
 * appended to a ring (common/ring.c, shared with the --trace writer), and
 * its writer thread drains the ring to standard error, every line queued
 * at the time in one write(). The writer takes lines as soon as they come:
 * a person watching the log waits for no batch. A line that does not fit
 * in the ring is dropped and counted, never waited for; once the lines
 * queued before it are out, a line of the writer's says how many were
 * lost. Before log_start() and after log_stop(), lines are written
 * directly, each with a single write() so lines never interleave.
 *
 * Lines that could repeat once per client (log_rate()) are rate limited per
 * call site and thread: a burst, then silence until the window ends, and a
 * count of what was suppressed in the next line that gets through. A
 * caller whose kind of line may never come again takes the count with
 * log_limit_expired() and says it in a line of its own.
 *
 * With --syslog the same lines go to syslog(3), each with its level's
 * priority, instead of standard error. syslog(3) drops every line, without
 * a word, when nothing listens on /dev/log (a container, a chroot, a
 * syslogd not yet started): a start that fails would say nothing at all.
 * So log_use_syslog() first connects to /dev/log itself, as syslog(3)
 * would; if that fails, one line on standard error says why, and the log
 * stays there. SIGUSR1 (log_reopen()) looks again, either way. When standard
 * error is journald's stream (JOURNAL_STREAM names its device and inode), each
 * line starts with its priority, "<4>" for a warning, which journald takes off
 * and keeps as the entry's PRIORITY: `journalctl -p warning` then finds it.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "common/log.h"
#include "common/ring.h"

#define LINE_MAX_LEN 1024
/* Bytes of queued lines, each with the ring's 4-byte length: some two
 * thousand lines. */
#define RING_SIZE (256u << 10)

int log_verbosity;

/* The word every line starts with; wanem, which shares this file, sets
 * its own. */
const char *log_ident = "smbsplice";

static const char *const level_word[] = { "error", "warning", "info", "debug" };
static const int level_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

/* Syslog was asked for (--syslog); lines go to syslog(3) rather than
 * standard error while it answers. The writer thread reads to_syslog; the
 * main thread sets it. */
static bool want_syslog;
static bool to_syslog;

/* Standard error is journald's: lines carry their priority. Decided once,
 * on the first line, by journal_check(). */
static bool to_journal;
static pthread_once_t journal_once = PTHREAD_ONCE_INIT;

/**
 * journal_check() - is standard error the stream journald gave us
 *
 * systemd sets JOURNAL_STREAM to "DEVICE:INODE" of the stream it connects
 * standard error to; a child whose standard error was redirected since
 * inherits the variable but not the stream, so both must match.
 */
static void journal_check(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	to_journal = v && sscanf(v, "%llu:%llu", &dev, &ino) == 2 &&
		     !fstat(STDERR_FILENO, &st) &&
		     (unsigned long long)st.st_dev == dev &&
		     (unsigned long long)st.st_ino == ino;
}

/**
 * line_head() - how a line begins: its priority for journald, if it is
 * listening, then the program and the level word
 * @line:	where to write
 * @len:	its size
 * @lvl:	severity
 *
 * Return: the length written.
 */
static int line_head(char *line, size_t len, enum log_level lvl)
{
	pthread_once(&journal_once, journal_check);
	if (to_journal && !__atomic_load_n(&to_syslog, __ATOMIC_RELAXED))
		return snprintf(line, len, "<%d>%s: %s: ", level_prio[lvl],
				log_ident, level_word[lvl]);
	return snprintf(line, len, "%s: %s: ", log_ident, level_word[lvl]);
}

/* Lines waiting for the writer thread (common/ring.c), and the writer's
 * copy of them: every line queued is written with one write(). The ring
 * is static so that logging needs no allocation, ever. */
static struct ring ring = RING_INITIALIZER;
static char ring_buf[RING_SIZE], ring_batch[RING_SIZE];

/**
 * write_all() - write bytes to standard error, retrying short writes
 * @p:	the bytes
 * @n:	how many
 */
static void write_all(const char *p, size_t n)
{
	ssize_t k;

	while (n) {
		k = write(STDERR_FILENO, p, n);
		if (k <= 0)
			return; /* nowhere left to report it */
		p += k;
		n -= (size_t)k;
	}
}

/**
 * syslog_lines() - send formatted lines to syslog, each at its level
 * @p:	lines as format_line() makes them, "smbsplice: LEVEL: message\n"
 * @n:	their length
 */
static void syslog_lines(const char *p, size_t n)
{
	const char *end = p + n, *nl, *msg;
	int prio;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		prio = LOG_INFO;
		msg = p;
		for (int l = 0; l < 4; l++) {
			size_t w = strlen(level_word[l]);

			if ((size_t)(nl - p) > 13 + w &&
			    !memcmp(p + 11, level_word[l], w) &&
			    p[11 + w] == ':') {
				prio = level_prio[l];
				msg = p + 13 + w;
				break;
			}
		}
		syslog(prio, "%.*s", (int)(nl - msg), msg);
	}
}

/**
 * out() - write lines where the log goes
 * @p:	the lines
 * @n:	their length
 */
static void out(const char *p, size_t n)
{
	if (__atomic_load_n(&to_syslog, __ATOMIC_RELAXED))
		syslog_lines(p, n);
	else
		write_all(p, n);
}

/**
 * syslog_probe() - does anything take lines on /dev/log
 *
 * Connects as syslog(3) does: a datagram socket, else a stream one.
 *
 * Return: 0, or the errno of the connect that failed.
 */
static int syslog_probe(void)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, r, e = 0;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", _PATH_LOG);
	for (unsigned i = 0; i < 2; i++) {
		fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return errno;
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
		e = r ? errno : 0;
		close(fd);
		if (e != EPROTOTYPE)
			break;
	}
	return e;
}

/**
 * syslog_switch() - send lines to syslog if it answers, else to standard
 *		     error, and say so when that changes or syslog is missing
 * @first:	the first look: syslog being missing is said even though
 *		lines were going to standard error already
 */
static void syslog_switch(bool first)
{
	int e = syslog_probe();
	bool was = __atomic_load_n(&to_syslog, __ATOMIC_RELAXED);

	if (!e) {
		openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
		__atomic_store_n(&to_syslog, true, __ATOMIC_RELAXED);
		if (!was && !first)
			log_at(LOG_LVL_INFO,
			       "syslog answers on %s again: "
			       "the log goes there from now on",
			       _PATH_LOG);
		return;
	}
	__atomic_store_n(&to_syslog, false, __ATOMIC_RELAXED);
	closelog();
	if (was || first)
		log_at(LOG_LVL_WARN,
		       "syslog is unavailable (%s: %s): the log goes to standard error; SIGUSR1 looks again",
		       _PATH_LOG, strerror(e));
}

/**
 * log_use_syslog() - send the log to syslog(3) from now on, if it answers
 *
 * If nothing takes lines on /dev/log, they stay on standard error, where
 * one line says why: a start that fails must still say why it failed.
 */
void log_use_syslog(void)
{
	want_syslog = true;
	syslog_switch(true);
}

/**
 * log_reopen() - reopen the log, for log rotation (SIGUSR1)
 *
 * Standard error belongs to whoever started smbsplice, so only the syslog
 * connection is reopened: with --syslog, /dev/log is looked at again, and
 * the log goes back to syslog, or falls back to standard error, with a
 * line saying so.
 */
void log_reopen(void)
{
	if (!want_syslog)
		return;
	closelog();
	syslog_switch(false);
}

/**
 * format_line() - the text of one line, with its newline
 * @line:	buffer of LINE_MAX_LEN bytes
 * @lvl:	severity
 * @fmt:	printf format
 * @ap:		its arguments
 * @suffix:	appended before the newline, or NULL
 *
 * Return: the line's length.
 */
static size_t format_line(char *line, enum log_level lvl, const char *fmt,
			  va_list ap, const char *suffix)
{
	int n, m;

	n = line_head(line, LINE_MAX_LEN, lvl);
	m = vsnprintf(line + n, LINE_MAX_LEN - n - 1, fmt, ap);
	n += m < 0 ? 0 : m;
	if (suffix && n < LINE_MAX_LEN - 2)
		n += snprintf(line + n, LINE_MAX_LEN - n - 1, "%s", suffix);
	if (n > LINE_MAX_LEN - 2)
		n = LINE_MAX_LEN - 2;
	line[n++] = '\n';
	return (size_t)n;
}

/**
 * emit() - hand a formatted line to the writer, or write it now
 * @line:	the line
 * @n:		its length
 */
static void emit(const char *line, size_t n)
{
	/* A full ring drops the line (counted, and said by the writer);
	 * only a ring that is not running has it written here. */
	if (ring_put(&ring, line, n) == -EPIPE)
		out(line, n);
}

/**
 * log_at() - write one log line
 * @lvl:	severity; debug lines are dropped unless -v was given
 * @fmt:	printf format of the message, without a newline
 */
void log_at(enum log_level lvl, const char *fmt, ...)
{
	char line[LINE_MAX_LEN];
	va_list ap;
	size_t n;

	if (lvl == LOG_LVL_DEBUG && log_verbosity < 1)
		return;
	va_start(ap, fmt);
	n = format_line(line, lvl, fmt, ap, NULL);
	va_end(ap);
	emit(line, n);
}

/**
 * log_limited() - write a line of a kind that is rate limited
 * @l:		the kind's limit, one per call site and thread
 * @lvl:	severity
 * @fmt:	printf format of the message
 */
void log_limited(struct log_limit *l, enum log_level lvl, const char *fmt, ...)
{
	char line[LINE_MAX_LEN], note[80] = "";
	struct timespec now;
	va_list ap;
	size_t n;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec - l->window >= LOG_LIMIT_WINDOW) {
		l->window = now.tv_sec;
		l->sent = 0;
	}
	if (l->sent >= LOG_LIMIT_BURST) {
		l->dropped++;
		return;
	}
	l->sent++;
	if (l->dropped)
		snprintf(note, sizeof(note),
			 " (and %lu more like it suppressed)", l->dropped);
	l->dropped = 0;
	va_start(ap, fmt);
	n = format_line(line, lvl, fmt, ap, *note ? note : NULL);
	va_end(ap);
	emit(line, n);
}

/**
 * log_limit_expired() - lines suppressed in a window that is over
 * @l:	the kind's limit, in the calling thread
 *
 * Return: how many lines of the kind were suppressed, if their window has
 * ended, and 0 otherwise. The count is taken: the next line of the kind
 * that gets through no longer reports it, so the caller must.
 */
unsigned long log_limit_expired(struct log_limit *l)
{
	struct timespec now;
	unsigned long n;

	if (!l->dropped)
		return 0;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec - l->window < LOG_LIMIT_WINDOW)
		return 0;
	n = l->dropped;
	l->dropped = 0;
	return n;
}

/**
 * ring_sink() - the writer thread's part: write queued lines out
 * @arg:	unused
 * @p:		whole lines, in the order they were logged
 * @n:		their length
 * @dropped:	lines dropped since the last note, all logged after @p's
 */
static void ring_sink(void *arg, const void *p, size_t n, unsigned long dropped)
{
	char note[128];
	int k;

	if (n)
		out(p, n);
	if (dropped) {
		k = line_head(note, sizeof(note), LOG_LVL_WARN);
		k += snprintf(
			note + k, sizeof(note) - (size_t)k,
			"%lu log lines dropped: standard error was not read fast enough\n",
			dropped);
		out(note, (size_t)k);
	}
}

/**
 * log_start() - from now on, write through the writer thread
 *
 * The thread is started with every signal blocked, so that signals reach
 * the main thread alone.
 *
 * Return: 0, or -1 if the thread could not be started (lines are then
 * written directly, as before).
 */
int log_start(void)
{
	const struct ring_cfg cfg = {
		.buf = ring_buf,
		.size = sizeof(ring_buf),
		.batch = ring_batch,
		.batch_size = sizeof(ring_batch),
		.sink = ring_sink,
	};

	if (ring_open(&ring, &cfg))
		return -1;
	if (ring_start(&ring)) {
		ring_stop(&ring);
		return -1;
	}
	return 0;
}

/**
 * log_stop() - write out every queued line and end the writer thread
 *
 * Call it when no other thread logs any more.
 */
void log_stop(void)
{
	ring_stop(&ring);
}

/**
 * log_dropped() - lines dropped since start because the ring was full
 *
 * Return: the count.
 */
uint64_t log_dropped(void)
{
	return ring_dropped(&ring);
}
