// SPDX-License-Identifier: GPL-2.0-or-later
/* tracefile.c - the --trace capture file: one writer, many workers
 *
 * Theory of operation: workers make small records (a synthesized IP and
 * TCP header and a frame's first bytes, trace.c) and must never wait for
 * a disk. So a record is copied into a ring under a mutex held for the
 * copy alone, and a writer thread of its own takes records out and
 * writes them to a pcap file of raw IP (LINKTYPE_RAW). A record that
 * does not fit in the ring is dropped and counted, never waited for. The
 * ring's records are laid out as the pcap format's are (struct rec_hdr),
 * so the writer hands them to stdio as they are, after a file header of
 * its own: libpcap opens files by name only, and this one must be opened
 * as below.
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
 *
 * A trace holds every SMB2 header, with the names of shares and files,
 * so it is readable by its owner only: created 0600; one that exists with
 * group or other bits is refused (a reader may hold it open already),
 * one narrower is made 0600. It is opened once smbsplice runs as --user
 * (main.c), with that user's rights, so that starting, rotating and reopening
 * are done by one identity, the one that owns the file. Rotation needs the
 * directory writable by that user, and anyone who may write the directory may
 * plant a name there: a symbolic link (O_NOFOLLOW refuses it) or a hard link to
 * a file elsewhere (refused when the file has more than one link). A file that
 * is not a regular one, or not owned by the user smbsplice runs as, is refused
 * too, each with one line saying what to remove. The directory is opened once,
 * at start, and every later open and rename is made in it (openat, renameat): a
 * parent swapped for a symbolic link afterwards cannot send them elsewhere.
 * Were the file opened as root, a link planted by --user would have root write
 * (and chown) a file that user could not touch.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <pcap/pcap.h>

#include "common/log.h"
#include "observe/tracefile.h"

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
/* The pcap file format's magic for microsecond timestamps, in the
 * writer's byte order, and its number for raw IPv4 and IPv6 (DLT_RAW,
 * libpcap's name for it, has a different value on some systems). */
#define PCAP_MAGIC_USEC 0xa1b2c3d4u
#define LINKTYPE_RAW	101u
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

/* The file header begin_file() writes is the format's 24 bytes. */
_Static_assert(sizeof(struct pcap_file_header) == 24,
	       "struct pcap_file_header is not the pcap format's");

/* A record in the ring is a record on disk. */
_Static_assert(sizeof(struct rec_hdr) == PCAP_REC_HDR,
	       "the ring's record header is not the pcap format's");

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
 * @file:	the open file, NULL when it could not be reopened
 * @size:	its length in bytes, counted by the writer
 * @flushed:	when the writer last flushed it (CLOCK_MONOTONIC_COARSE, s)
 * @iobuf:	its stdio buffer; one file is open at a time
 * @path:	FILE
 * @name:	its last component, in @path
 * @dirfd:	its directory, opened once (O_PATH): every open and rename
 *		is made in it, whatever its path comes to name later
 * @max:	--trace-max bytes, 0 for no rotation
 * @rotate_broken: FILE could not be renamed; no rotation is tried, and
 *		no record written past @max, until the next reopen
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
	FILE *file;
	uint64_t size;
	time_t flushed;
	char iobuf[FILE_BUF_BYTES];
	char path[256];
	const char *name;
	int dirfd;
	uint64_t max;
	bool rotate_broken;
	pthread_t thread;
	bool running;
} tf = { .lock = PTHREAD_MUTEX_INITIALIZER,
	 .more = PTHREAD_COND_INITIALIZER,
	 .dirfd = -1 };

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
 * say_not_owner() - the file belongs to someone else: one line saying so
 * @uid:	its owner
 * @err:	buffer for the line
 * @errlen:	its size
 */
static void say_not_owner(uid_t uid, char *err, size_t errlen)
{
	snprintf(
		err, errlen,
		"--trace %s: owned by uid %u, not by uid %u that smbsplice runs as (--user); remove it, or chown it",
		tf.path, (unsigned)uid, (unsigned)geteuid());
}

/**
 * check_file() - is the file just opened one the trace may go to
 * @fd:		it
 * @st:		filled in with its fstat()
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int check_file(int fd, struct stat *st, char *err, size_t errlen)
{
	if (fstat(fd, st)) {
		snprintf(err, errlen, "--trace %s: %s", tf.path,
			 strerror(errno));
	} else if (!S_ISREG(st->st_mode)) {
		snprintf(
			err, errlen,
			"--trace %s: not a regular file; give --trace another name, or remove it",
			tf.path);
	} else if (st->st_nlink != 1) {
		snprintf(
			err, errlen,
			"--trace %s: the file has %lu hard links, and a trace takes a file with one (another name could be any file of its owner's); remove it",
			tf.path, (unsigned long)st->st_nlink);
	} else if (st->st_uid != geteuid()) {
		say_not_owner(st->st_uid, err, errlen);
	} else if (st->st_mode & 077) {
		/* Whoever opened it while it was readable keeps the fd, and
		 * would read every record appended: a chmod cannot take
		 * that back. */
		snprintf(
			err, errlen,
			"--trace %s: mode %04o lets other users read it, and one who opened it would read every record added; move it away or remove it, and a new one is made 0600",
			tf.path, (unsigned)(st->st_mode & 07777));
	} else if ((st->st_mode & 07777) != 0600 && fchmod(fd, 0600)) {
		snprintf(err, errlen,
			 "--trace %s: cannot make it mode 0600: %s", tf.path,
			 strerror(errno));
	} else {
		return 0;
	}
	return -1;
}

/**
 * begin_file() - write a new file's header, or check an old one's
 * @fd:		the file, open for reading and appending
 * @size:	its length
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Records are appended only to a file that this writer could have begun:
 * a pcap file of raw IP in this machine's byte order, with this snaplen.
 *
 * Return: 0, or -1 with @err set.
 */
static int begin_file(int fd, off_t size, char *err, size_t errlen)
{
	struct pcap_file_header want = { .magic = PCAP_MAGIC_USEC,
					 .version_major = PCAP_VERSION_MAJOR,
					 .version_minor = PCAP_VERSION_MINOR,
					 .snaplen = FILE_SNAPLEN,
					 .linktype = LINKTYPE_RAW },
				have;
	ssize_t n;

	if (!size) {
		n = write(fd, &want, sizeof(want));
		if (n == (ssize_t)sizeof(want))
			return 0;
		snprintf(err, errlen, "--trace %s: cannot write to it: %s",
			 tf.path, n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	n = pread(fd, &have, sizeof(have), 0);
	if (n == (ssize_t)sizeof(have) && have.magic == want.magic &&
	    have.version_major == want.version_major &&
	    have.snaplen == want.snaplen && have.linktype == want.linktype)
		return 0;
	snprintf(
		err, errlen,
		"--trace %s: not a trace smbsplice could append to (pcap, raw IP, snaplen %u); move it away",
		tf.path, FILE_SNAPLEN);
	return -1;
}

/**
 * open_file() - open FILE for records, appending to it if it exists
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Opened with the rights of the user smbsplice runs as, never through a
 * symbolic link, and kept only if check_file() accepts it. O_NONBLOCK so
 * that a FIFO planted there cannot hold the writer in open(); it is then
 * refused as not a regular file.
 *
 * Return: 0, or -1 with @err set.
 */
static int open_file(char *err, size_t errlen)
{
	struct stat st;
	int fd, e;

	fd = openat(tf.dirfd, tf.name,
		    O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
			    O_NOCTTY | O_NONBLOCK,
		    0600);
	if (fd < 0) {
		e = errno;
		/* fstatat() only to say why: nothing is decided on it. */
		if (e == ELOOP)
			snprintf(
				err, errlen,
				"--trace %s: a symbolic link, which a trace is never written through (whoever may write the directory could point it anywhere); remove it",
				tf.path);
		else if (e == EACCES &&
			 !fstatat(tf.dirfd, tf.name, &st,
				  AT_SYMLINK_NOFOLLOW) &&
			 st.st_uid != geteuid())
			say_not_owner(st.st_uid, err, errlen);
		else
			snprintf(
				err, errlen, "--trace %s: %s%s", tf.path,
				strerror(e),
				e == EACCES
					? " (it is opened as the user smbsplice runs as, --user, who must be able to write the directory)"
					: "");
		return -1;
	}
	*err = '\0';
	if (check_file(fd, &st, err, errlen) ||
	    begin_file(fd, st.st_size, err, errlen) ||
	    !(tf.file = fdopen(fd, "a"))) {
		if (!*err)
			snprintf(err, errlen, "--trace %s: %s", tf.path,
				 strerror(errno));
		close(fd);
		return -1;
	}
	tf.size = st.st_size ? (uint64_t)st.st_size
			     : sizeof(struct pcap_file_header);
	/* stdio would write() every st_blksize (4 KiB) of records, each a
	 * trip through the filesystem; a larger buffer makes that one per
	 * 64 KiB. Set before the first I/O on the stream, as C asks. */
	setvbuf(tf.file, tf.iobuf, _IOFBF, sizeof(tf.iobuf));
	return 0;
}

/**
 * open_dir() - open FILE's directory, once, for every later open and rename
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * O_NOFOLLOW on FILE covers its last component only: were FILE opened
 * by its path each time, whoever may write a parent directory could swap
 * a component for a symbolic link and have the next rotation, rename and
 * reopen made in another directory. The directory is resolved once, at
 * start, as the operator named it, and held.
 *
 * Return: 0, or -1 with @err set.
 */
static int open_dir(char *err, size_t errlen)
{
	char dir[sizeof(tf.path)];
	char *slash = strrchr(tf.path, '/');

	tf.name = slash ? slash + 1 : tf.path;
	if (!*tf.name) {
		snprintf(err, errlen,
			 "--trace %s: names a directory, not a file", tf.path);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%.*s",
		 slash ? (int)(slash == tf.path ? 1 : slash - tf.path) : 1,
		 slash ? tf.path : ".");
	tf.dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (tf.dirfd < 0) {
		snprintf(err, errlen, "--trace %s: its directory %s: %s",
			 tf.path, dir, strerror(errno));
		return -1;
	}
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
	if (open_dir(err, errlen))
		return -1;
	tf.ring = malloc(RING_BYTES);
	if (!tf.ring) {
		snprintf(err, errlen, "--trace: out of memory");
		return -1;
	}
	if (open_file(err, errlen)) {
		free(tf.ring);
		tf.ring = NULL;
		close(tf.dirfd);
		tf.dirfd = -1;
		return -1;
	}
	return 0;
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
 * A rename of an older file that fails is logged, once per rotation. If
 * FILE itself cannot be renamed (the directory is not writable by
 * --user), rotation is broken until the next reopen: said once, and the
 * records past --trace-max are dropped and counted rather than written,
 * since the limit is a promise about disk use. Nothing is retried per
 * record: each try would be a line, a close and an open.
 */
static void rotate(void)
{
	char from[sizeof(tf.path) + 8], to[sizeof(tf.path) + 8], err[512];
	int e;

	for (int i = KEEP_FILES; i >= 1; i--) {
		snprintf(from, sizeof(from), i > 1 ? "%s.%d" : "%s", tf.name,
			 i - 1);
		snprintf(to, sizeof(to), "%s.%d", tf.name, i);
		if (!renameat(tf.dirfd, from, tf.dirfd, to) || errno == ENOENT)
			continue;
		e = errno;
		if (i > 1) {
			log_warn("--trace %s: cannot rename %s to %s: %s",
				 tf.path, from, to, strerror(e));
			continue;
		}
		tf.rotate_broken = true;
		log_err("--trace %s: cannot rename %s to %s: %s; records past --trace-max are dropped (smbsplice_trace_dropped_total) until a reopen (SIGHUP, SIGUSR1): let --user write the directory",
			tf.path, from, to, strerror(e));
		return;
	}
	fclose(tf.file);
	tf.file = NULL;
	if (open_file(err, sizeof(err)))
		log_err("%s; records are dropped until a reopen (SIGHUP, SIGUSR1) succeeds",
			err);
}

/**
 * write_one() - hand one record to stdio
 * @rec:	its header and bytes, as on disk
 * @caplen:	how many bytes follow the header
 *
 * A record stdio could not take (ENOSPC, EIO) is counted as dropped, not
 * written.
 */
static void write_one(const uint8_t *rec, uint32_t caplen)
{
	bool full = tf.max && tf.size >= tf.max;

	/* Rotated when the next record comes, so that one after a reopen
	 * of a full FILE is not written before rotation is tried. */
	if (tf.file && full && !tf.rotate_broken) {
		rotate();
		full = tf.max && tf.size >= tf.max;
	}
	if (!tf.file || (full && tf.rotate_broken) ||
	    fwrite(rec, PCAP_REC_HDR + caplen, 1, tf.file) != 1) {
		__atomic_add_fetch(&tf.dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&tf.written, 1, __ATOMIC_RELAXED);
	tf.size += PCAP_REC_HDR + caplen;
}

/**
 * reopen() - close FILE and open it again (it may have been moved away)
 */
static void reopen(void)
{
	char err[512];

	if (tf.file)
		fclose(tf.file);
	tf.file = NULL;
	tf.rotate_broken = false; /* tried again at the next --trace-max */
	if (open_file(err, sizeof(err)))
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
 * write_batch() - hand a batch of records to stdio
 * @p:	the records, as take_batch() left them
 * @n:	their bytes
 */
static void write_batch(const uint8_t *p, size_t n)
{
	struct rec_hdr h;

	for (size_t off = 0; off < n; off += sizeof(h) + h.caplen) {
		memcpy(&h, p + off, sizeof(h));
		write_one(p + off, h.caplen);
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
			    tf.file) {
				pthread_mutex_unlock(&tf.lock);
				fflush(tf.file);
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
		if (n && tf.file && coarse_secs() != tf.flushed) {
			fflush(tf.file);
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
	if (tf.file)
		fclose(tf.file);
	tf.file = NULL;
	close(tf.dirfd);
	tf.dirfd = -1;
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
	tf.rotate_broken = false;
}
