// SPDX-License-Identifier: GPL-2.0-or-later
/* test_netns.c - a namespace path is resolved once per process: a second
 * netns_open() of a path gives the namespace the first one did, even once
 * the process it named has exited, and is refused when the path now names
 * another namespace (as /proc/PID/ns/net does once another process takes
 * the PID); a namespace owned by another user namespace is refused unless
 * foreign ones are allowed. Needs root (unshare): skipped otherwise.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "netns.h"

static char dir[] = "/tmp/test_netns.XXXXXX";

/**
 * holder() - a child that sits in new namespaces until killed
 * @flags:	CLONE_NEWNET, with CLONE_NEWUSER for a foreign one
 *
 * Return: its pid, once it is in them.
 */
static pid_t holder(int flags)
{
	int p[2];
	char b;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(60); /* bounded, whatever the test does */
		if (unshare(flags) || write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &b, 1), 1);
	close(p[0]);
	return pid;
}

/* Kill and reap a holder. */
static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* The inode of a namespace descriptor. */
static ino_t ino_of(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

/* A path (a link in @dir) that names @pid's namespace. */
static void point(const char *link, pid_t pid)
{
	char target[64];

	snprintf(target, sizeof(target), "/proc/%d/ns/net", (int)pid);
	unlink(link);
	assert_int_equal(symlink(target, link), 0);
}

static void test_moved_path_refused(void **state)
{
	char link[64], err[512];
	pid_t a = holder(CLONE_NEWNET), b = holder(CLONE_NEWNET);
	int fd, again;
	ino_t first;

	(void)state;
	snprintf(link, sizeof(link), "%s/ns", dir);
	point(link, a);
	fd = netns_open(link, false, err, sizeof(err));
	assert_true(fd >= 0);
	first = ino_of(fd);
	again = netns_open(link, false, err, sizeof(err));
	assert_true(again >= 0);
	assert_int_equal(ino_of(again), first);
	close(again);
	point(link, b); /* the same path, another namespace */
	assert_int_equal(netns_open(link, false, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "now names another network namespace"));
	assert_true(strlen(err) < 200 + strlen(link));
	unlink(link);
	close(fd);
	end(a);
	end(b);
}

static void test_exited_keeps_pinned(void **state)
{
	char path[64], err[512];
	pid_t a = holder(CLONE_NEWNET);
	int fd, again;
	ino_t first;

	(void)state;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)a);
	fd = netns_open(path, false, err, sizeof(err));
	assert_true(fd >= 0);
	first = ino_of(fd);
	close(fd);
	end(a); /* the path names nothing now */
	again = netns_open(path, false, err, sizeof(err));
	if (again < 0)
		fail_msg("a path whose process exited: %s", err);
	assert_int_equal(ino_of(again), first);
	close(again);
}

static void test_foreign_owner(void **state)
{
	char path[64], err[512];
	pid_t c = holder(CLONE_NEWUSER | CLONE_NEWNET);
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)c);
	assert_int_equal(netns_open(path, false, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "another user namespace"));
	fd = netns_open(path, true, err, sizeof(err));
	if (fd < 0)
		fail_msg("foreign-netns: %s", err);
	close(fd);
	/* Pinned now, and still refused without the setting. */
	assert_int_equal(netns_open(path, false, err, sizeof(err)), -1);
	end(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moved_path_refused),
		cmocka_unit_test(test_exited_keeps_pinned),
		cmocka_unit_test(test_foreign_owner),
	};
	int r;

	if (geteuid()) {
		printf("1..0 # SKIP needs root\n");
		return 77;
	}
	assert_non_null(mkdtemp(dir));
	r = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return r;
}
