// SPDX-License-Identifier: GPL-2.0-or-later
/* tracefile.c - the --trace capture file: one writer, many workers
 *
 * Theory of operation: workers make small records (a synthesized IP and
 * TCP header and a frame's first bytes, trace.c) and must never wait for
 * a disk. So a record is copied into a ring (common/ring.c, shared with
 * the log's writer), and the ring's writer thread takes records out and
 * writes them to a pcap file of raw IP (LINKTYPE_RAW). A record that
 * does not fit in the ring is dropped and counted, never waited for. The
 * ring's records are laid out as the pcap format's are (struct rec_hdr),
 * so the writer hands them to stdio as they are, after a file header of
 * its own: libpcap opens files by name only, and this one must be opened
 * as below.
 *
 * The writer wakes once per batch, not per record, since a wake-up is a
 * futex() call on each side and a record is only a few hundred bytes
 * (ring.c says how): woken from an empty ring, it lets records gather for
 * GATHER_MS before it takes them out, up to BATCH_BYTES per hold of the
 * ring's lock. On stop the writer takes every record left; workers queue
 * no more once the ring is stopping.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <pcap/pcap.h>

#include "common/log.h"
#include "common/ring.h"
#include "observe/tracefile.h"

/* Bytes of records the ring holds (each with the ring's 4-byte length): a
 * second of a busy gateway's headers. */
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
/* Bytes of records the writer takes out of the ring per hold of its lock:
 * a copy of a few microseconds, so that a worker queueing a record waits
 * no longer than that for the lock. The longest record the ring takes. */
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
 * @ring:	records waiting for the writer, and the writer
 * @buf:	@ring's bytes, @RING_BYTES of them, while --trace is on
 * @batch:	the writer's copy of the records it writes next
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
 *
 * All but @ring, @buf and the counters are the writer's alone once it
 * runs: the ring's hooks, below, are called on its thread.
 */
static struct trace_file {
	struct ring ring;
	uint8_t *buf;
	uint8_t batch[BATCH_BYTES];
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
} tf = { .ring = RING_INITIALIZER, .dirfd = -1 };

/**
 * tracefile_enabled() - is --trace on
 *
 * Return: true once tracefile_open() succeeded.
 */
bool tracefile_enabled(void)
{
	return tf.buf != NULL;
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

static void write_batch(void *arg, const void *p, size_t n,
			unsigned long dropped);
static void flush_idle(void *arg);
static void reopen(void *arg);

/**
 * tracefile_open() - open the capture file, at start
 * @path:	FILE
 * @max:	rotate past this many bytes; 0 never
 * @err:	buffer for one line saying why it cannot be
 * @errlen:	its size
 *
 * Records are queued from now on, and written once tracefile_start() has
 * started the writer.
 *
 * Return: 0, or -1 with @err set.
 */
int tracefile_open(const char *path, uint64_t max, char *err, size_t errlen)
{
	struct ring_cfg cfg = {
		.size = RING_BYTES,
		.batch = tf.batch,
		.batch_size = sizeof(tf.batch),
		/* So that top -H and perf name it. */
		.thread_name = "trace-writer",
		.gather_ms = GATHER_MS,
		.idle_ms = 1000, /* a second idle: flush */
		.sink = write_batch,
		.idle = flush_idle,
		.reopen = reopen,
	};

	snprintf(tf.path, sizeof(tf.path), "%s", path);
	tf.max = max;
	if (open_dir(err, errlen))
		return -1;
	cfg.buf = malloc(RING_BYTES);
	if (!cfg.buf) {
		snprintf(err, errlen, "--trace: out of memory");
	} else if (!open_file(err, errlen)) {
		/* Cannot fail: tracefile_close() left the ring closed,
		 * and cfg is sound. */
		ring_open(&tf.ring, &cfg);
		tf.buf = cfg.buf;
		return 0;
	}
	free(cfg.buf);
	close(tf.dirfd);
	tf.dirfd = -1;
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
	const struct iovec parts[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)data, .iov_len = caplen },
	};

	/* Refused when closed, full or too long alike: counted here. */
	if (ring_putv(&tf.ring, parts, 2))
		__atomic_add_fetch(&tf.dropped, 1, __ATOMIC_RELAXED);
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
 * @arg:	unused
 *
 * The ring's reopen hook: called on the writer's thread after
 * tracefile_reopen(), before it writes the records it took with the
 * request.
 */
static void reopen(void *arg)
{
	char err[512];

	(void)arg;
	if (tf.file)
		fclose(tf.file);
	tf.file = NULL;
	tf.rotate_broken = false; /* tried again at the next --trace-max */
	if (open_file(err, sizeof(err)))
		log_err("%s; records are dropped until a reopen succeeds", err);
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
 * flush_idle() - flush the file after a second without records
 * @arg:	unused
 *
 * The ring's idle hook, on the writer's thread.
 */
static void flush_idle(void *arg)
{
	(void)arg;
	if (!tf.file)
		return;
	fflush(tf.file);
	tf.flushed = coarse_secs();
}

/**
 * write_batch() - hand a batch of records to stdio
 * @arg:	unused
 * @p:		whole records, as tracefile_put() queued them
 * @n:		their bytes
 * @dropped:	records the ring refused; tracefile_put() counted them
 *
 * The ring's sink, on the writer's thread.
 */
static void write_batch(void *arg, const void *p, size_t n,
			unsigned long dropped)
{
	const uint8_t *rec = p;
	struct rec_hdr h;

	(void)arg;
	(void)dropped;
	for (size_t off = 0; off < n; off += sizeof(h) + h.caplen) {
		memcpy(&h, rec + off, sizeof(h));
		write_one(rec + off, h.caplen);
	}
	/* A writer that never runs dry never goes idle: flush here too,
	 * once per second of the coarse clock, so the file is about a
	 * second behind at most. */
	if (n && tf.file && coarse_secs() != tf.flushed) {
		fflush(tf.file);
		tf.flushed = coarse_secs();
	}
}

/**
 * tracefile_start() - start the writer thread
 *
 * Return: 0, or -1 after logging why.
 */
int tracefile_start(void)
{
	int err;

	if (!tracefile_enabled())
		return 0;
	err = ring_start(&tf.ring);
	if (err) {
		log_err("--trace: cannot start its writer thread: %s",
			strerror(-err));
		return -1;
	}
	return 0;
}

/**
 * tracefile_reopen() - reopen FILE once the writer next runs
 */
void tracefile_reopen(void)
{
	if (tracefile_enabled())
		ring_reopen(&tf.ring);
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
 * the writer drains the ring before it exits, and records put once the
 * ring is stopping are refused and counted as dropped.
 */
void tracefile_close(void)
{
	uint8_t *buf = tf.buf;

	if (!tracefile_enabled())
		return;
	/* Closed, the ring refuses records under its lock: a late
	 * tracefile_put() drops its record, and the buffer may go. The
	 * ring may be opened again (the unit test does). */
	ring_stop(&tf.ring);
	if (tf.file)
		fclose(tf.file);
	tf.file = NULL;
	close(tf.dirfd);
	tf.dirfd = -1;
	/* As before tracefile_open(); the counters are kept for a last
	 * scrape. */
	tf.buf = NULL;
	free(buf);
	tf.size = 0;
	tf.flushed = 0;
	tf.rotate_broken = false;
}
