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
 * A record in the ring is a small head (the message's length, the
 * fields', the level), the message and its journal fields; the writer
 * makes of it what its destination takes, so that the choice is made at
 * one place, when the line goes out.
 *
 * With --syslog the lines go to syslog(3), each with its level's
 * priority, instead of standard error. syslog(3) drops every line, without
 * a word, when nothing listens on /dev/log (a container, a chroot, a
 * syslogd not yet started): a start that fails would say nothing at all.
 * So log_use_syslog() first connects to /dev/log itself, as syslog(3)
 * would; if that fails, one line on standard error says why, and the log
 * stays there. SIGUSR1 (log_reopen()) looks again, either way.
 *
 * When standard error is journald's stream (JOURNAL_STREAM names its
 * device and inode), each record goes as one datagram to journald's
 * native socket: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER and the fields the
 * caller gave (log_fields(): a connection's number, client, listener),
 * which `journalctl FIELD=value` selects by. The fields are encoded only
 * then; log.c knows nothing of what they mean. The socket is a datagram
 * one, sent to from the writer thread, so a stalled journald stalls no
 * worker, as with standard error. A record it does not take (no socket,
 * journald gone for good) goes to standard error, starting with its
 * priority, "<4>" for a warning, which journald's stream takes off and
 * keeps as the entry's PRIORITY: the line is not lost, and `journalctl -p
 * warning` still finds it.
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
#include <endian.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "common/log.h"
#include "common/ring.h"

/* The longest message, and the most bytes of journal fields a line has. */
#define LINE_MAX_LEN 1024
#define FIELDS_MAX   512
/* journald's native socket: datagrams of fields. */
#define JOURNAL_SOCKET "/run/systemd/journal/socket"
/* Bytes of queued lines, each with the ring's 4-byte length: some two
 * thousand lines. */
#define RING_SIZE (256u << 10)

int log_verbosity;

/* The word every line starts with; smbsplice-wanem, which shares this
 * file, sets its own. */
const char *log_ident = "smbsplice";

static const char *const level_word[] = { "error", "warning", "info", "debug" };
static const int level_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
static const char *const level_tag[] = { "<3>", "<4>", "<6>", "<7>" };
static const char *const level_field[] = { "PRIORITY=3\n", "PRIORITY=4\n",
					   "PRIORITY=6\n", "PRIORITY=7\n" };

/**
 * struct rec_head - what comes before a record's message, in the ring and
 *		     in a record written directly
 * @msg_len:	bytes of the message, which follow, without a newline
 * @fld_len:	bytes of journal fields after the message, already in the
 *		native protocol's form; 0 unless journald's socket is used
 * @lvl:	severity
 */
struct rec_head {
	uint16_t msg_len, fld_len;
	uint8_t lvl;
};

#define REC_MAX (sizeof(struct rec_head) + LINE_MAX_LEN + FIELDS_MAX)
/* A record as a line of text: the tag, the program, the level word. */
#define TEXT_LINE_MAX (LINE_MAX_LEN + 64)

/* Syslog was asked for (--syslog); lines go to syslog(3) rather than
 * standard error while it answers. The writer thread reads to_syslog; the
 * main thread sets it. */
static bool want_syslog;
static bool to_syslog;

/* Standard error is journald's: lines carry their priority; and if its
 * native socket answered, records go there with their fields
 * (journal_native, journal_fd). Decided once, on the first line, by
 * journal_check(); journal_fd is then the writer's (or, while the ring is
 * not running, the one thread's that logs). */
static bool to_journal, journal_native;
static int journal_fd = -1;
static pthread_once_t journal_once = PTHREAD_ONCE_INIT;

/**
 * journal_connect() - a datagram socket connected to journald's
 *
 * Return: the descriptor, or -1 if nothing listens there.
 */
static int journal_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX,
				  .sun_path = JOURNAL_SOCKET };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/**
 * journal_check() - is standard error the stream journald gave us, and
 * does its native socket answer
 *
 * systemd sets JOURNAL_STREAM to "DEVICE:INODE" of the stream it connects
 * standard error to; a child whose standard error was redirected since
 * inherits the variable but not the stream, so both must match. Only
 * then is the native socket tried: a program run by hand on a machine
 * with journald keeps writing to its terminal.
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
	if (to_journal)
		journal_fd = journal_connect();
	journal_native = journal_fd >= 0;
}

/* Lines waiting for the writer thread (common/ring.c), and the writer's
 * copy of them; the lines as text are made in sink_text, written with one
 * write() per 64 KiB. The buffers are static so that logging needs no
 * allocation, ever. */
static struct ring ring = RING_INITIALIZER;
static char ring_buf[RING_SIZE], ring_batch[RING_SIZE];
static char sink_text[64u << 10];

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
 * field_put() - one journal field in the native protocol's form
 * @p:		where
 * @room:	bytes there
 * @name:	the field's name: capitals, digits and '_'
 * @v:		its value
 * @vlen:	the value's length
 *
 * A value without a newline is NAME=value; one with a newline is the
 * binary form: the name, a newline, the length as 64-bit little endian,
 * the value.
 *
 * Return: the bytes written, 0 if the field does not fit.
 */
static size_t field_put(char *p, size_t room, const char *name, const char *v,
			size_t vlen)
{
	size_t nlen = strlen(name), n = nlen + 1 + vlen + 1;
	uint64_t le = htole64(vlen);
	bool bin = memchr(v, '\n', vlen);

	if (bin)
		n += sizeof(le);
	if (n > room)
		return 0;
	memcpy(p, name, nlen);
	p[nlen] = bin ? '\n' : '=';
	p += nlen + 1;
	if (bin) {
		memcpy(p, &le, sizeof(le));
		p += sizeof(le);
	}
	memcpy(p, v, vlen);
	p[vlen] = '\n';
	return n;
}

/**
 * journal_send() - send one record to journald's native socket
 * @h:		its head
 * @msg:	its message, then its fields
 *
 * A send that fails for want of a listener is tried once more on a new
 * connection: journald may have restarted.
 *
 * Return: 0 if sent, -1 if the record must go elsewhere.
 */
static int journal_send(const struct rec_head *h, const char *msg)
{
	bool bin = memchr(msg, '\n', h->msg_len);
	uint64_t le = htole64(h->msg_len);
	struct iovec iov[] = {
		{ (void *)level_field[h->lvl], strlen(level_field[h->lvl]) },
		{ "SYSLOG_IDENTIFIER=", 18 },
		{ (void *)log_ident, strlen(log_ident) },
		{ "\n", 1 },
		{ bin ? "MESSAGE\n" : "MESSAGE=", 8 },
		{ &le, bin ? sizeof(le) : 0 },
		{ (void *)msg, h->msg_len },
		{ "\n", 1 },
		{ (void *)(msg + h->msg_len), h->fld_len },
	};
	struct msghdr mh = { .msg_iov = iov,
			     .msg_iovlen = sizeof(iov) / sizeof(iov[0]) };

	for (int tries = 0; tries < 2; tries++) {
		if (sendmsg(journal_fd, &mh, MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno != ECONNREFUSED && errno != ENOTCONN &&
		    errno != ENOENT)
			return -1;
		close(journal_fd);
		journal_fd = journal_connect();
		if (journal_fd < 0)
			return -1;
	}
	return -1;
}

/**
 * text_line() - a record as the line written to standard error
 * @t:		where, TEXT_LINE_MAX bytes
 * @h:		the record's head
 * @msg:	its message
 *
 * Return: the line's length, its newline included.
 */
static size_t text_line(char *t, const struct rec_head *h, const char *msg)
{
	int k = snprintf(t, TEXT_LINE_MAX, "%s%s: %s: %.*s\n",
			 to_journal ? level_tag[h->lvl] : "", log_ident,
			 level_word[h->lvl], (int)h->msg_len, msg);

	if (k < 0)
		return 0;
	if (k >= TEXT_LINE_MAX) {
		k = TEXT_LINE_MAX - 1;
		t[k - 1] = '\n';
	}
	return (size_t)k;
}

/**
 * out() - write records where the log goes
 * @p:		records, each its head, message and fields
 * @n:		their length
 * @text:	where lines for standard error are made
 * @size:	its size, at least TEXT_LINE_MAX
 *
 * A record that journald's socket does not take goes to standard error
 * with its priority: a line is not lost for want of the socket.
 */
static void out(const char *p, size_t n, char *text, size_t size)
{
	const char *end = p + n, *msg;
	struct rec_head h;
	size_t t = 0;

	while ((size_t)(end - p) >= sizeof(h)) {
		memcpy(&h, p, sizeof(h));
		msg = p + sizeof(h);
		p = msg + h.msg_len + h.fld_len;
		if (__atomic_load_n(&to_syslog, __ATOMIC_RELAXED)) {
			syslog(level_prio[h.lvl], "%.*s", (int)h.msg_len, msg);
			continue;
		}
		if (journal_fd >= 0 && !journal_send(&h, msg))
			continue;
		if (size - t < TEXT_LINE_MAX) {
			write_all(text, t);
			t = 0;
		}
		t += text_line(text + t, &h, msg);
	}
	write_all(text, t);
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
 * make_rec() - one record: its head, its message, its journal fields
 * @rec:	buffer of REC_MAX bytes
 * @lvl:	severity
 * @f:		fields for the journal, ended by a NULL name; or NULL
 * @suffix:	appended to the message, or NULL
 * @fmt:	printf format of the message
 * @ap:		its arguments
 *
 * Fields are encoded only when journald's socket takes them.
 *
 * Return: the record's length.
 */
static size_t make_rec(char *rec, enum log_level lvl, const struct log_field *f,
		       const char *suffix, const char *fmt, va_list ap)
{
	struct rec_head h = { .lvl = (uint8_t)lvl };
	char *msg = rec + sizeof(h), *fp;
	int m;

	pthread_once(&journal_once, journal_check);
	m = vsnprintf(msg, LINE_MAX_LEN, fmt, ap);
	h.msg_len = m < 0 ? 0 : m >= LINE_MAX_LEN ? LINE_MAX_LEN - 1 : m;
	if (suffix && h.msg_len < LINE_MAX_LEN - 1) {
		m = snprintf(msg + h.msg_len, LINE_MAX_LEN - h.msg_len, "%s",
			     suffix);
		if (m > 0)
			h.msg_len = h.msg_len + m >= LINE_MAX_LEN
					    ? LINE_MAX_LEN - 1
					    : h.msg_len + m;
	}
	for (fp = msg + h.msg_len; journal_native && f && f->name; f++) {
		size_t k = field_put(fp, FIELDS_MAX - h.fld_len, f->name,
				     f->value, strlen(f->value));

		h.fld_len += k;
		fp += k;
	}
	memcpy(rec, &h, sizeof(h));
	return sizeof(h) + h.msg_len + h.fld_len;
}

/**
 * emit() - hand a record to the writer, or write it now
 * @rec:	the record
 * @n:		its length
 */
static void emit(const char *rec, size_t n)
{
	char text[TEXT_LINE_MAX];

	/* A full ring drops the line (counted, and said by the writer);
	 * only a ring that is not running has it written here. */
	if (ring_put(&ring, rec, n) == -EPIPE)
		out(rec, n, text, sizeof(text));
}

/**
 * vlog() - make a record and write it
 * @lvl:	severity
 * @f:		journal fields, or NULL
 * @suffix:	appended to the message, or NULL
 * @fmt:	printf format
 * @ap:		its arguments
 */
static void vlog(enum log_level lvl, const struct log_field *f,
		 const char *suffix, const char *fmt, va_list ap)
{
	char rec[REC_MAX];

	emit(rec, make_rec(rec, lvl, f, suffix, fmt, ap));
}

/**
 * log_at() - write one log line
 * @lvl:	severity; debug lines are dropped unless -v was given
 * @fmt:	printf format of the message, without a newline
 */
void log_at(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if (lvl == LOG_LVL_DEBUG && log_verbosity < 1)
		return;
	va_start(ap, fmt);
	vlog(lvl, NULL, NULL, fmt, ap);
	va_end(ap);
}

/**
 * log_fields() - write one log line that has fields for the journal
 * @f:		the fields, ended by one with a NULL name; names are
 *		capitals, digits and '_', not starting with '_'
 * @lvl:	severity; debug lines are dropped unless -v was given
 * @fmt:	printf format of the message, without a newline
 *
 * The fields go to journald only, where `journalctl NAME=value` selects
 * the line; the message must say what they say for every other reader.
 * Fields that do not fit in FIELDS_MAX bytes are left off.
 */
void log_fields(const struct log_field *f, enum log_level lvl, const char *fmt,
		...)
{
	va_list ap;

	if (lvl == LOG_LVL_DEBUG && log_verbosity < 1)
		return;
	va_start(ap, fmt);
	vlog(lvl, f, NULL, fmt, ap);
	va_end(ap);
}

/**
 * log_limited() - write a line of a kind that is rate limited
 * @l:		the kind's limit, one per call site and thread
 * @f:		journal fields as log_fields() takes them, or NULL
 * @lvl:	severity
 * @fmt:	printf format of the message
 */
void log_limited(struct log_limit *l, const struct log_field *f,
		 enum log_level lvl, const char *fmt, ...)
{
	char note[80] = "";
	struct timespec now;
	va_list ap;

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
	vlog(lvl, f, *note ? note : NULL, fmt, ap);
	va_end(ap);
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
 * rec_printf() - make a record of the log's own
 * @rec:	buffer of REC_MAX bytes
 * @lvl:	severity
 * @fmt:	printf format of the message
 *
 * Return: the record's length.
 */
static size_t rec_printf(char *rec, enum log_level lvl, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = make_rec(rec, lvl, NULL, NULL, fmt, ap);
	va_end(ap);
	return n;
}

/**
 * ring_sink() - the writer thread's part: write queued records out
 * @arg:	unused
 * @p:		whole records, in the order they were logged
 * @n:		their length
 * @dropped:	lines dropped since the last note, all logged after @p's
 */
static void ring_sink(void *arg, const void *p, size_t n, unsigned long dropped)
{
	char note[REC_MAX];

	if (n)
		out(p, n, sink_text, sizeof(sink_text));
	if (dropped)
		out(note,
		    rec_printf(
			    note, LOG_LVL_WARN,
			    "%lu log lines dropped: standard error was not read fast enough",
			    dropped),
		    sink_text, sizeof(sink_text));
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
