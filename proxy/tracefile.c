// SPDX-License-Identifier: GPL-2.0-or-later
/* tracefile.c - the --trace capture file: one writer, many workers
 *
 * Theory of operation: workers make small records (a synthesized IP and
 * TCP header and a frame's first bytes, trace.c) and must never wait for
 * a disk. So a record is copied into a ring under a mutex held for the
 * copy alone, and a writer thread of its own takes records out and hands
 * them to libpcap (pcap_dump(), to a file opened with pcap_open_dead() for
 * raw IP, LINKTYPE_RAW). A record that does not fit in the ring is
 * dropped and counted, never waited for.
 *
 * The writer wakes once per batch, not per record, since a wake-up is a
 * futex() call on each side and a record is only a few hundred bytes: a
 * worker signals only when the ring was empty (the writer may be asleep
 * on it) or has just passed a quarter full (the writer may be gathering),
 * and a writer woken from an empty ring lets records gather for GATHER_MS
 * before it takes them out, up to BATCH_BYTES per hold of the lock. A
 * writer with a backlog takes the next batch at once. No wake-up can be
 * lost: the writer tests the ring under the lock before each wait, the
 * sleep on an empty ring ends with the first record's signal, and the
 * gathering sleep is bounded by GATHER_MS whatever happens. On stop the
 * writer takes every record left; workers queue no more once @stop is set.
 *
 * The writer counts the file's length itself rather than asking stdio (an
 * ftell() per record is an lseek() per record). It flushes the file about
 * once a second, while busy and after a second idle, so that a capture read
 * while smbsplice runs is about a second behind. Past --trace-max bytes it
 * rotates: FILE.8 becomes FILE.9 (the tenth file is deleted), ..., FILE
 * becomes FILE.1, and a new FILE is begun. tracefile_reopen() (SIGHUP,
 * SIGUSR1) makes it reopen FILE after the next record, appending when
 * FILE still exists and starting it afresh when logrotate moved it away.
 * The file is opened at start, before smbsplice gives up root; rotating
 * and reopening happen as --user, which must be able to write the
 * directory.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pcap/pcap.h>

#include "log.h"
#include "tracefile.h"

/* Bytes of records the ring holds: a second of a busy gateway's headers. */
#define RING_BYTES (4u << 20)
/* Older files kept when rotating: FILE.1 to FILE.9. */
#define KEEP_FILES 9
/* The snapshot length the file header declares; no record is longer. */
#define FILE_SNAPLEN 65535
/* Woken from an empty ring, the writer lets records gather this long
 * before taking them: one wake-up per batch. The ring cannot overflow
 * meanwhile for want of a writer, since a worker that takes it past a
 * quarter full ends the gathering at once. */
#define GATHER_MS 20
/* Bytes of records the writer takes out of the ring per hold of the lock:
 * a copy of a few microseconds, so that a worker queueing a record waits
 * no longer than that for the lock. */
#define BATCH_BYTES (64u << 10)
/* On disk, each record is a pcap record header and the bytes. */
#define PCAP_REC_HDR 16u
/* The file's stdio buffer: one write() per this many bytes of records. */
#define FILE_BUF_BYTES (64u << 10)

/**
 * struct rec_hdr - a record's header in the ring
 * @sec:	timestamp, seconds
 * @usec:	and microseconds
 * @caplen:	bytes that follow
 * @len:	bytes the packet had (the file's orig_len)
 */
struct rec_hdr {
	uint32_t sec, usec, caplen, len;
};

/* A record that fits in a batch is within the file's declared snaplen. */
_Static_assert(BATCH_BYTES - sizeof(struct rec_hdr) <= FILE_SNAPLEN,
	       "a batch could hold a record longer than the snaplen");

/**
 * struct trace_file - the process's capture file and its writer
 * @lock:	guards the ring, @stop and @reopen
 * @more:	signalled when the first record comes into an empty ring, when
 *		the ring passes a quarter full, and when the writer must stop
 *		or reopen; waits on it are timed on CLOCK_MONOTONIC
 * @ring:	records, @RING_BYTES long
 * @head:	where the next record goes
 * @tail:	where the writer reads next
 * @used:	bytes in the ring
 * @stop:	the writer must drain and exit
 * @reopen:	the writer must reopen the file
 * @written:	records written (counter any thread reads)
 * @dropped:	records dropped, the ring being full (likewise)
 * @pcap:	the dead handle the dumper belongs to
 * @dumper:	the open file, NULL when it could not be reopened
 * @size:	its length in bytes, counted by the writer
 * @flushed:	when the writer last flushed it (CLOCK_MONOTONIC_COARSE, s)
 * @iobuf:	its stdio buffer; one file is open at a time
 * @path:	FILE
 * @max:	--trace-max bytes, 0 for no rotation
 * @thread:	the writer
 * @running:	@thread was started
 */
static struct trace_file {
	pthread_mutex_t lock;
	pthread_cond_t more;
	uint8_t *ring;
	size_t head, tail, used;
	bool stop, reopen;
	uint64_t written, dropped;
	pcap_t *pcap;
	pcap_dumper_t *dumper;
	uint64_t size;
	time_t flushed;
	char iobuf[FILE_BUF_BYTES];
	char path[256];
	uint64_t max;
	pthread_t thread;
	bool running;
} tf = { .lock = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER };

/**
 * tracefile_enabled() - is --trace on
 *
 * Return: true once tracefile_open() succeeded.
 */
bool tracefile_enabled(void)
{
	return tf.ring != NULL;
}

/**
 * open_dumper() - open FILE for records, appending to it if it exists
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int open_dumper(char *err, size_t errlen)
{
	int64_t at;

	tf.dumper = pcap_dump_open_append(tf.pcap, tf.path);
	if (!tf.dumper) {
		snprintf(err, errlen, "--trace %s: %s", tf.path,
			 pcap_geterr(tf.pcap));
		return -1;
	}
	/* The one ftell(): from here on the writer counts. */
	at = pcap_dump_ftell64(tf.dumper);
	tf.size = at > 0 ? (uint64_t)at : 0;
	/* stdio would write() every st_blksize (4 KiB) of records, each a
	 * trip through the filesystem; a larger buffer makes that one per
	 * 64 KiB. The flush first: the header was written or read, and a
	 * buffer is best changed on an empty stream (glibc's setvbuf()
	 * would flush, but C leaves it undefined after I/O). */
	pcap_dump_flush(tf.dumper);
	setvbuf(pcap_dump_file(tf.dumper), tf.iobuf, _IOFBF, sizeof(tf.iobuf));
	return 0;
}

/**
 * tracefile_open() - open the capture file, at start
 * @path:	FILE
 * @max:	rotate past this many bytes; 0 never
 * @err:	buffer for one line saying why it cannot be
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
int tracefile_open(const char *path, uint64_t max, char *err, size_t errlen)
{
	pthread_condattr_t ca;

	/* The writer's timed waits on the monotonic clock: a step of the
	 * wall clock must not stretch a GATHER_MS wait into minutes. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&tf.more, &ca);
	pthread_condattr_destroy(&ca);
	snprintf(tf.path, sizeof(tf.path), "%s", path);
	tf.max = max;
	tf.pcap = pcap_open_dead(DLT_RAW, FILE_SNAPLEN);
	tf.ring = malloc(RING_BYTES);
	if (!tf.pcap || !tf.ring) {
		snprintf(err, errlen, "--trace: out of memory");
		goto fail;
	}
	if (open_dumper(err, errlen))
		goto fail;
	return 0;
fail:
	if (tf.pcap)
		pcap_close(tf.pcap);
	free(tf.ring);
	tf.pcap = NULL;
	tf.ring = NULL;
	return -1;
}

/**
 * tracefile_put() - queue a record for the file
 * @ts:		when
 * @data:	the packet's first bytes
 * @caplen:	how many
 * @len:	how long the packet was
 *
 * Called by workers; never blocks on the file. Once the file is closed
 * a record is dropped (counted) rather than queued. So is a record that,
 * with its header, would not fit in one of the writer's batches (none
 * does, trace.c keeps them under 600 bytes): the writer takes whole
 * records only, and one it could never take would stop it for good.
 */
void tracefile_put(const struct timespec *ts, const void *data, uint32_t caplen,
		   uint32_t len)
{
	struct rec_hdr h = { (uint32_t)ts->tv_sec,
			     (uint32_t)(ts->tv_nsec / 1000), caplen, len };
	size_t need = sizeof(h) + caplen, first, was;
	const uint8_t *parts[2] = { (const uint8_t *)&h, data };
	size_t lens[2] = { sizeof(h), caplen };

	pthread_mutex_lock(&tf.lock);
	if (!tf.ring || tf.stop || RING_BYTES - tf.used < need ||
	    need > BATCH_BYTES) {
		pthread_mutex_unlock(&tf.lock);
		__atomic_add_fetch(&tf.dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int i = 0; i < 2; i++) {
		first = RING_BYTES - tf.head < lens[i] ? RING_BYTES - tf.head
						       : lens[i];
		memcpy(tf.ring + tf.head, parts[i], first);
		memcpy(tf.ring, parts[i] + first, lens[i] - first);
		tf.head = (tf.head + lens[i]) % RING_BYTES;
	}
	was = tf.used;
	tf.used += need;
	/* The writer sleeps only on an empty ring, or while it lets a batch
	 * gather: wake it for the first record and when the batch is
	 * large, not for each record (a futex call each). */
	if (!was || (was < RING_BYTES / 4 && tf.used >= RING_BYTES / 4))
		pthread_cond_signal(&tf.more);
	pthread_mutex_unlock(&tf.lock);
}

/**
 * ring_take() - copy bytes out of the ring
 * @to:		where
 * @n:		how many; the ring holds them
 *
 * Called with the lock held.
 */
static void ring_take(void *to, size_t n)
{
	size_t first = RING_BYTES - tf.tail < n ? RING_BYTES - tf.tail : n;

	memcpy(to, tf.ring + tf.tail, first);
	memcpy((uint8_t *)to + first, tf.ring, n - first);
	tf.tail = (tf.tail + n) % RING_BYTES;
	tf.used -= n;
}

/**
 * rotate() - FILE becomes FILE.1, and so on; a new FILE is begun
 *
 * A rename that fails (the directory is not writable by --user) is
 * logged; the writer then keeps appending to FILE rather than lose
 * records.
 */
static void rotate(void)
{
	char from[sizeof(tf.path) + 8], to[sizeof(tf.path) + 8], err[512];

	pcap_dump_close(tf.dumper);
	tf.dumper = NULL;
	for (int i = KEEP_FILES; i >= 1; i--) {
		snprintf(from, sizeof(from), i > 1 ? "%s.%d" : "%s", tf.path,
			 i - 1);
		snprintf(to, sizeof(to), "%s.%d", tf.path, i);
		if (rename(from, to) && errno != ENOENT)
			log_warn(
				"--trace: cannot rename %s to %s: %s; the file grows past --trace-max",
				from, to, strerror(errno));
	}
	if (open_dumper(err, sizeof(err)))
		log_err("%s; records are dropped until a reopen (SIGHUP, SIGUSR1) succeeds",
			err);
}

/**
 * write_one() - hand one record to libpcap
 * @h:		its header
 * @data:	its bytes
 */
static void write_one(const struct rec_hdr *h, const uint8_t *data)
{
	struct pcap_pkthdr ph = { .caplen = h->caplen, .len = h->len };

	ph.ts.tv_sec = h->sec;
	ph.ts.tv_usec = h->usec;
	if (!tf.dumper) {
		__atomic_add_fetch(&tf.dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	pcap_dump((u_char *)tf.dumper, &ph, data);
	__atomic_add_fetch(&tf.written, 1, __ATOMIC_RELAXED);
	tf.size += PCAP_REC_HDR + h->caplen;
	if (tf.max && tf.size >= tf.max)
		rotate();
}

/**
 * reopen() - close FILE and open it again (it may have been moved away)
 */
static void reopen(void)
{
	char err[512];

	if (tf.dumper)
		pcap_dump_close(tf.dumper);
	tf.dumper = NULL;
	if (open_dumper(err, sizeof(err)))
		log_err("%s; records are dropped until a reopen succeeds", err);
}

/**
 * deadline() - a time this far ahead on the condition variable's clock
 * @ms:	milliseconds
 *
 * Return: the time, on CLOCK_MONOTONIC (tracefile_open()).
 */
static struct timespec deadline(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += ms % 1000 * 1000000;
	t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

/**
 * coarse_secs() - seconds on a cheap monotonic clock
 *
 * The coarse clock is read from the vDSO without a system call, and a
 * second's resolution is all the flush needs.
 *
 * Return: CLOCK_MONOTONIC_COARSE, in whole seconds.
 */
static time_t coarse_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

/**
 * take_batch() - take whole records out of the ring
 * @to:		where, BATCH_BYTES long
 *
 * Called with the lock held. Takes records while the next one fits in
 * @to; no record with its header is longer than BATCH_BYTES
 * (tracefile_put()), so a ring that holds records always gives at least
 * one.
 *
 * Return: bytes taken.
 */
static size_t take_batch(uint8_t *to)
{
	struct rec_hdr h;
	size_t n = 0, first;

	while (tf.used) {
		/* Peek at the header: take the record only if it fits. */
		first = RING_BYTES - tf.tail < sizeof(h) ? RING_BYTES - tf.tail
							 : sizeof(h);
		memcpy(&h, tf.ring + tf.tail, first);
		memcpy((uint8_t *)&h + first, tf.ring, sizeof(h) - first);
		if (n + sizeof(h) + h.caplen > BATCH_BYTES)
			break;
		ring_take(to + n, sizeof(h) + h.caplen);
		n += sizeof(h) + h.caplen;
	}
	return n;
}

/**
 * write_batch() - hand a batch of records to libpcap
 * @p:	the records, as take_batch() left them
 * @n:	their bytes
 */
static void write_batch(const uint8_t *p, size_t n)
{
	struct rec_hdr h;

	for (size_t off = 0; off < n; off += sizeof(h) + h.caplen) {
		memcpy(&h, p + off, sizeof(h));
		write_one(&h, p + off + sizeof(h));
	}
}

/**
 * writer_main() - the writer thread
 * @arg:	unused
 *
 * Return: NULL, once told to stop and the ring is empty.
 */
static void *writer_main(void *arg)
{
	static uint8_t batch[BATCH_BYTES];
	struct timespec until;
	bool reopen_now, slept;
	size_t n;

	(void)arg;
	/* So that top -H and perf name it. */
	pthread_setname_np(pthread_self(), "trace-writer");
	pthread_mutex_lock(&tf.lock);
	for (;;) {
		slept = false;
		while (!tf.used && !tf.stop && !tf.reopen) {
			slept = true;
			until = deadline(1000);
			if (pthread_cond_timedwait(&tf.more, &tf.lock,
						   &until) == ETIMEDOUT &&
			    tf.dumper) {
				pthread_mutex_unlock(&tf.lock);
				pcap_dump_flush(tf.dumper);
				tf.flushed = coarse_secs();
				pthread_mutex_lock(&tf.lock);
			}
		}
		/* Woken by a first record: let the batch gather. The workers
		 * signal again only if it passes a quarter of the ring; with
		 * a backlog (!slept) there is nothing to wait for. */
		if (slept && tf.used < RING_BYTES / 4 && !tf.stop &&
		    !tf.reopen) {
			until = deadline(GATHER_MS);
			pthread_cond_timedwait(&tf.more, &tf.lock, &until);
		}
		reopen_now = tf.reopen;
		tf.reopen = false;
		if (!tf.used && tf.stop)
			break;
		n = take_batch(batch);
		pthread_mutex_unlock(&tf.lock);
		if (reopen_now)
			reopen();
		write_batch(batch, n);
		/* A writer that never runs dry never times out: flush here
		 * too, once per second of the coarse clock, so the file is
		 * about a second behind at most. */
		if (n && tf.dumper && coarse_secs() != tf.flushed) {
			pcap_dump_flush(tf.dumper);
			tf.flushed = coarse_secs();
		}
		pthread_mutex_lock(&tf.lock);
	}
	pthread_mutex_unlock(&tf.lock);
	return NULL;
}

/**
 * tracefile_start() - start the writer thread
 *
 * Return: 0, or -1 after logging why.
 */
int tracefile_start(void)
{
	sigset_t all, old;
	int err;

	if (!tracefile_enabled())
		return 0;
	/* Signals are the main thread's business. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&tf.thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		log_err("--trace: cannot start its writer thread: %s",
			strerror(err));
		return -1;
	}
	tf.running = true;
	return 0;
}

/**
 * tracefile_reopen() - reopen FILE once the writer next runs
 */
void tracefile_reopen(void)
{
	if (!tracefile_enabled())
		return;
	pthread_mutex_lock(&tf.lock);
	tf.reopen = true;
	pthread_cond_signal(&tf.more);
	pthread_mutex_unlock(&tf.lock);
}

/**
 * tracefile_counts() - records written and dropped, for /metrics
 * @written:	set to the records written
 * @dropped:	set to the records dropped
 */
void tracefile_counts(uint64_t *written, uint64_t *dropped)
{
	*written = __atomic_load_n(&tf.written, __ATOMIC_RELAXED);
	*dropped = __atomic_load_n(&tf.dropped, __ATOMIC_RELAXED);
}

/**
 * tracefile_close() - write what is queued, close the file, stop the writer
 *
 * Every record tracefile_put() accepted is in the file when this returns:
 * the writer drains the ring before it exits, and records put after
 * @stop are refused and counted as dropped.
 */
void tracefile_close(void)
{
	uint8_t *ring = tf.ring;

	if (!tracefile_enabled())
		return;
	if (tf.running) {
		pthread_mutex_lock(&tf.lock);
		tf.stop = true;
		pthread_cond_signal(&tf.more);
		pthread_mutex_unlock(&tf.lock);
		pthread_join(tf.thread, NULL);
		tf.running = false;
	}
	if (tf.dumper)
		pcap_dump_close(tf.dumper);
	pcap_close(tf.pcap);
	tf.dumper = NULL;
	tf.pcap = NULL;
	/* As before tracefile_open(), so that it may be called again (the
	 * unit test does): a late tracefile_put() finds no ring, under the
	 * lock, and drops its record. The counters are kept for a last
	 * scrape. */
	pthread_mutex_lock(&tf.lock);
	tf.ring = NULL;
	tf.head = tf.tail = tf.used = 0;
	tf.stop = tf.reopen = false;
	pthread_mutex_unlock(&tf.lock);
	free(ring);
	tf.size = 0;
	tf.flushed = 0;
}
