// SPDX-License-Identifier: GPL-2.0-or-later
/* test_tracefile.c - the --trace writer: every record that workers queue
 * at once from several threads is in the file after tracefile_close(), in
 * each thread's order, or counted as dropped; a lone record (the writer
 * asleep on an empty ring) and a steady trickle (the writer never idle)
 * both reach the disk within about a second, without a close; --trace-max
 * rotates into files that hold every record between them, and when FILE
 * cannot be renamed writes nothing past it, saying so once, and when its
 * directory is swapped for a symbolic link goes on in the directory it
 * opened at start; a reopen after
 * the file was moved away begins a new one, and one in place appends to
 * it; a record too long for the writer's batches is dropped, not left to
 * stop it; the file is made mode 0600 whatever the umask, refused when
 * group or others could read it (and made 0600 when narrower), refused
 * when it is a symbolic link (the link's
 * target is not created), a hard link (the other name's file is not
 * written), owned by another user, not a regular file, or not a trace
 * smbsplice wrote */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <pcap/pcap.h>

#include "observe/tracefile.h"

#define THREADS	   4
#define PER_THREAD 50000

static char dir[64], path[128];

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

/* A record of @len bytes saying who put it and its number. */
static void put(uint32_t who, uint32_t seq, uint32_t len)
{
	uint8_t b[512] = { 0 };
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	memcpy(b, &who, 4);
	memcpy(b + 4, &seq, 4);
	tracefile_put(&ts, b, len, len + 1000);
}

/* Records in @file, each checked against what put() wrote; -1 if it does
 * not open. @last, when given, gets each thread's numbers, which must rise. */
static long count(const char *file, long *last)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *p = pcap_open_offline(file, err);
	long n = 0;
	uint32_t who, seq;

	if (!p)
		return -1;
	while (pcap_next_ex(p, &h, &d) == 1) {
		assert_int_equal(h->len, h->caplen + 1000);
		memcpy(&who, d, 4);
		memcpy(&seq, d + 4, 4);
		if (last) {
			assert_true(who < THREADS);
			assert_true((long)seq > last[who]);
			last[who] = seq;
		}
		n++;
	}
	pcap_close(p);
	return n;
}

static off_t size_of(const char *file)
{
	struct stat st;

	return stat(file, &st) ? -1 : st.st_size;
}

/* Waits up to @ms for @file to grow past @than bytes. */
static bool grows(const char *file, off_t than, long ms)
{
	for (long t = 0; t < ms; t += 10) {
		if (size_of(file) > than)
			return true;
		sleep_ms(10);
	}
	return false;
}

/* A directory of the test's own, and @path in it; no trace open. */
static int setup_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_tracefile-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.pcap", dir);
	return 0;
}

static int setup(void **state)
{
	char err[256];

	setup_dir(state);
	return tracefile_open(path, *state ? 64 << 10 : 0, err, sizeof(err)) ||
	       tracefile_start();
}

static int teardown(void **state)
{
	char cmd[96];

	(void)state;
	tracefile_close();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void *worker(void *arg)
{
	uint32_t who = (uint32_t)(uintptr_t)arg;

	for (uint32_t i = 0; i < PER_THREAD; i++) {
		put(who, i, 40 + i % 200);
		/* bursts and gaps, so the writer both sleeps and gathers */
		if (i % 5000 == 4999)
			sleep_ms(3);
	}
	return NULL;
}

static void test_concurrent_puts_all_written(void **state)
{
	pthread_t t[THREADS];
	uint64_t w0, d0, w, d;
	long last[THREADS];

	(void)state;
	tracefile_counts(&w0, &d0);
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)i),
				 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	tracefile_close();
	tracefile_counts(&w, &d);
	w -= w0;
	d -= d0;
	assert_int_equal(w + d, THREADS * PER_THREAD);
	assert_true(w > PER_THREAD);
	for (int i = 0; i < THREADS; i++)
		last[i] = -1;
	assert_int_equal(count(path, last), (long)w);
	/* put after the close: nothing queued, nothing crashes */
	put(0, 0, 40);
}

static void test_lone_and_trickling_records_reach_disk(void **state)
{
	off_t at;

	(void)state;
	at = size_of(path);
	put(0, 0, 40);
	assert_true(grows(path, at, 2500));
	/* the writer has gone back to sleep on an empty ring */
	sleep_ms(1200);
	at = size_of(path);
	put(0, 1, 40);
	assert_true(grows(path, at, 2500));
	/* a record every 25 ms for 2.5 s: the writer never idles a second,
	 * and 1.5 s of records (3.4 KB) do not fill stdio's buffer, yet the
	 * file grows while it runs */
	at = size_of(path);
	for (uint32_t i = 2; i < 102; i++) {
		put(0, i, 40);
		sleep_ms(25);
		if (i == 62)
			assert_true(size_of(path) > at);
	}
	tracefile_close();
	assert_int_equal(count(path, NULL), 102);
}

static void test_rotation_keeps_every_record(void **state)
{
	char f[160];
	uint64_t w0, d0, w, d;
	long n = 0, c;
	int files = 0;

	(void)state;
	tracefile_counts(&w0, &d0);
	for (uint32_t i = 0; i < 2000; i++)
		put(0, i, 100);
	tracefile_close();
	tracefile_counts(&w, &d);
	assert_int_equal(d - d0, 0);
	for (int i = 0; i < 10; i++) {
		snprintf(f, sizeof(f), i ? "%s.%d" : "%s", path, i);
		if ((c = count(f, NULL)) < 0)
			continue;
		/* a file ends with the record that took it past --trace-max */
		assert_true(size_of(f) < (64 << 10) + 16 + 100);
		n += c;
		files++;
	}
	assert_int_equal(n, (long)(w - w0));
	assert_int_equal(n, 2000);
	assert_true(files >= 3);
}

/* Lines of @file that hold @what. */
static int lines_with(const char *file, const char *what)
{
	char line[1024];
	FILE *f = fopen(file, "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

/* 2,000 records of 100 bytes (several --trace-max of 64 KiB), a reopen,
 * one record more, and the trace closed. */
static void fill_reopen_close(void)
{
	for (uint32_t i = 0; i < 2000; i++)
		put(0, i, 100);
	sleep_ms(200);
	tracefile_reopen();
	sleep_ms(200);
	put(0, 2000, 100);
	tracefile_close();
}

/* FILE cannot be renamed (FILE.1 to FILE.9 are directories that are not
 * empty, which no rename replaces; as root a mode does not stop it):
 * rotation is broken, said once, and the records past --trace-max are
 * dropped and counted, not appended; a reopen tries again. */
static void test_rotation_broken(void **state)
{
	char f[200], logf[160];
	uint64_t w0, d0, w, d;
	int saved = dup(2), fd;

	(void)state;
	for (int i = 1; i <= 9; i++) {
		snprintf(f, sizeof(f), "%s.%d", path, i);
		assert_int_equal(mkdir(f, 0700), 0);
		snprintf(f, sizeof(f), "%s.%d/x", path, i);
		assert_int_equal(mkdir(f, 0700), 0);
	}
	snprintf(logf, sizeof(logf), "%s.log", dir);
	fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0 && saved >= 0);
	dup2(fd, 2);
	close(fd);
	tracefile_counts(&w0, &d0);
	fill_reopen_close();
	dup2(saved, 2);
	close(saved);
	tracefile_counts(&w, &d);
	/* 2,000 records of 116 bytes: 64 KiB hold 565 of them */
	assert_true(size_of(path) < (64 << 10) + 16 + 100);
	assert_int_equal(count(path, NULL), (long)(w - w0));
	assert_int_equal(w - w0 + d - d0, 2001);
	assert_true(d - d0 > 1000);
	/* one line at the first rotation, one after the reopen */
	assert_int_equal(
		lines_with(logf, "records past --trace-max are dropped"), 2);
	assert_true(lines_with(logf, "cannot rename") <= 2 * 9);
	unlink(logf);
}

/* The trace's directory is swapped for a symbolic link to another one
 * after start: every rotation and reopen still happens in the directory
 * opened at start, nothing in the link's target. */
static void test_directory_swapped_for_link(void **state)
{
	char held[96], other[96], f[200], cmd[224];
	int files = 0;

	(void)state;
	snprintf(held, sizeof(held), "%s.held", dir);
	snprintf(other, sizeof(other), "%s.other", dir);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_int_equal(rename(dir, held), 0);
	assert_int_equal(symlink(other, dir), 0);
	fill_reopen_close();
	for (int i = 0; i < 10; i++) {
		snprintf(f, sizeof(f), i ? "%s/t.pcap.%d" : "%s/t.pcap", held,
			 i);
		files += count(f, NULL) > 0;
		snprintf(f, sizeof(f), i ? "%s/t.pcap.%d" : "%s/t.pcap", other,
			 i);
		assert_int_equal(size_of(f), -1);
	}
	assert_true(files >= 3);
	unlink(dir);
	assert_int_equal(rename(held, dir), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", other);
	assert_int_equal(system(cmd), 0);
}

static void test_reopen_after_move(void **state)
{
	char moved[160];

	(void)state;
	for (uint32_t i = 0; i < 10; i++)
		put(0, i, 40);
	assert_true(grows(path, 24 + 9 * 56, 2500));
	snprintf(moved, sizeof(moved), "%s.moved", path);
	assert_int_equal(rename(path, moved), 0);
	tracefile_reopen();
	for (uint32_t i = 10; i < 15; i++)
		put(0, i, 40);
	tracefile_close();
	assert_int_equal(count(moved, NULL), 10);
	assert_int_equal(count(path, NULL), 5);
}

/* SIGHUP and SIGUSR1 with FILE in place: the records go on into it. */
static void test_reopen_in_place_appends(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < 10; i++)
		put(0, i, 40);
	assert_true(grows(path, 24 + 9 * 56, 2500));
	tracefile_reopen();
	for (uint32_t i = 10; i < 15; i++)
		put(0, i, 40);
	tracefile_close();
	assert_int_equal(count(path, NULL), 15);
}

/* Opens @file as the trace and closes it; returns what tracefile_open()
 * did, with its complaint in @err. */
static int open_close(const char *file, char *err, size_t errlen)
{
	int r;

	*err = '\0';
	r = tracefile_open(file, 0, err, errlen);
	if (!r) {
		assert_int_equal(tracefile_start(), 0);
		put(0, 0, 40);
		tracefile_close();
	}
	return r;
}

static mode_t mode_of(const char *file)
{
	struct stat st;

	return stat(file, &st) ? (mode_t)-1 : st.st_mode & 07777;
}

static void write_file(const char *file, const char *text, mode_t mode)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(file, mode), 0);
}

static void test_file_is_its_owners_alone(void **state)
{
	char err[512], f[160];
	mode_t old = umask(0);

	(void)state;
	/* created 0600 even with umask 0 */
	assert_int_equal(open_close(path, err, sizeof(err)), 0);
	umask(old);
	assert_int_equal(mode_of(path), 0600);
	assert_int_equal(count(path, NULL), 1);
	/* a trace of its own left 0644: whoever opened it meanwhile keeps
	 * reading, so it is refused, not appended to */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(open_close(path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mode 0644 lets other users read it"));
	assert_int_equal(count(path, NULL), 1);
	/* one left 0400 (narrower): made 0600, and appended to */
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(open_close(path, err, sizeof(err)), 0);
	assert_int_equal(mode_of(path), 0600);
	assert_int_equal(count(path, NULL), 2);
	/* another user's: refused, and left as it was */
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(open_close(path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "owned by uid 65534"));
	assert_int_equal(count(path, NULL), 2);
	/* not a trace: refused, not appended to */
	snprintf(f, sizeof(f), "%s/notes", dir);
	write_file(f, "not a capture\n", 0600);
	assert_int_equal(open_close(f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a trace smbsplice could append to"));
	assert_int_equal(size_of(f), 14);
	/* a directory: refused */
	snprintf(f, sizeof(f), "%s/sub", dir);
	assert_int_equal(mkdir(f, 0700), 0);
	assert_int_equal(open_close(f, err, sizeof(err)), -1);
}

static void test_planted_links_refused(void **state)
{
	char err[512], target[160], other[160], lnk[160];

	(void)state;
	/* a symbolic link to where a file does not exist yet: not created */
	snprintf(target, sizeof(target), "%s/created-through-link", dir);
	snprintf(lnk, sizeof(lnk), "%s/sym.pcap", dir);
	assert_int_equal(symlink(target, lnk), 0);
	assert_int_equal(open_close(lnk, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(size_of(target), -1);
	/* a symbolic link to a trace of its own: refused all the same */
	assert_int_equal(open_close(target, err, sizeof(err)), 0);
	assert_int_equal(open_close(lnk, err, sizeof(err)), -1);
	assert_int_equal(count(target, NULL), 1);
	/* a hard link to an empty file elsewhere: not written */
	snprintf(other, sizeof(other), "%s/other", dir);
	write_file(other, "", 0644);
	snprintf(lnk, sizeof(lnk), "%s/hard.pcap", dir);
	assert_int_equal(link(other, lnk), 0);
	assert_int_equal(open_close(lnk, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "2 hard links"));
	assert_int_equal(size_of(other), 0);
	assert_int_equal(mode_of(other), 0644);
}

/* A record too long for one of the writer's batches is dropped and
 * counted at once; before, it was queued, and the writer, which takes
 * whole records only, spun on it for good (the alarm turns that into a
 * failure rather than a hang). The records after it are written. */
static void test_record_longer_than_a_batch_dropped(void **state)
{
	static uint8_t big[65535];
	struct timespec ts;
	uint64_t w0, d0, w, d;

	(void)state;
	alarm(10);
	tracefile_counts(&w0, &d0);
	clock_gettime(CLOCK_REALTIME, &ts);
	tracefile_put(&ts, big, 65530, 65530);
	tracefile_counts(&w, &d);
	assert_int_equal(d - d0, 1);
	put(0, 0, 40);
	tracefile_close();
	tracefile_counts(&w, &d);
	assert_int_equal(w - w0, 1);
	assert_int_equal(count(path, NULL), 1);
	alarm(0);
}

int main(void)
{
	static const int rotating = 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_concurrent_puts_all_written, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_lone_and_trickling_records_reach_disk, setup,
			teardown),
		cmocka_unit_test_prestate_setup_teardown(
			test_rotation_keeps_every_record, setup, teardown,
			(void *)&rotating),
		cmocka_unit_test_prestate_setup_teardown(test_rotation_broken,
							 setup, teardown,
							 (void *)&rotating),
		cmocka_unit_test_prestate_setup_teardown(
			test_directory_swapped_for_link, setup, teardown,
			(void *)&rotating),
		cmocka_unit_test_setup_teardown(test_reopen_after_move, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reopen_in_place_appends,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_is_its_owners_alone,
						setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_planted_links_refused,
						setup_dir, teardown),
		cmocka_unit_test_setup_teardown(
			test_record_longer_than_a_batch_dropped, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
