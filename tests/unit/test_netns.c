// SPDX-License-Identifier: GPL-2.0-or-later
/* test_netns.c - a namespace path is resolved once per process: a second
 * netns_open() of a path gives the namespace the first one did, even once
 * the process it named has exited, and is refused when /proc/PID/ns/net
 * now names another namespace (as it does once another process takes the
 * PID), a link through /proc now names another, or any path now names
 * one of another user namespace; root's new namespace bound at a file
 * outside /proc is taken; a namespace owned by
 * another user namespace is refused unless foreign ones are allowed. Needs root
 * (unshare): skipped otherwise.
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "common/netns.h"

static char dir[] = "/tmp/test_netns.XXXXXX";

/* To a holder: move to another network namespace, and say when done. */
static int move_req[2], move_ack[2];

/**
 * holder() - a child that sits in new namespaces until killed, and moves
 *	      to a new network namespace when asked (move())
 * @flags:	CLONE_NEWNET, with CLONE_NEWUSER for a foreign one
 *
 * Return: its pid, once it is in them.
 */
static pid_t holder(int flags)
{
	char b;
	pid_t pid;

	assert_int_equal(pipe(move_req), 0);
	assert_int_equal(pipe(move_ack), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(60); /* bounded, whatever the test does */
		if (unshare(flags) || write(move_ack[1], "x", 1) != 1)
			_exit(1);
		while (read(move_req[0], &b, 1) == 1)
			if (unshare(CLONE_NEWNET) ||
			    write(move_ack[1], "x", 1) != 1)
				_exit(1);
		pause();
		_exit(0);
	}
	close(move_req[0]);
	close(move_ack[1]);
	assert_int_equal(read(move_ack[0], &b, 1), 1);
	return pid;
}

/* The last holder() started moves to a new network namespace. */
static void move(void)
{
	char b;

	assert_int_equal(write(move_req[1], "m", 1), 1);
	assert_int_equal(read(move_ack[0], &b, 1), 1);
}

/* Kill and reap a holder. */
static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(move_req[1]);
	close(move_ack[0]);
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

/* /proc/PID/ns/net of a process that moved (as a process that takes a
 * freed PID would be elsewhere): refused. */
static void test_moved_pid_refused(void **state)
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
	again = netns_open(path, false, err, sizeof(err));
	assert_true(again >= 0);
	assert_int_equal(ino_of(again), first);
	close(again);
	move(); /* the same path, another namespace */
	assert_int_equal(netns_open(path, false, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "now names another network namespace"));
	assert_true(strlen(err) < 200 + strlen(path));
	close(fd);
	end(a);
}

/* A namespace file root bound outside /proc (as ip netns add does) and
 * bound again to another namespace of its own (ip netns del, add): taken;
 * to one of another user namespace: refused. */
static void test_rebound_file(void **state)
{
	char file[64], target[64], err[512];
	pid_t a = holder(CLONE_NEWNET), b, c;
	int fd;
	ino_t first;

	(void)state;
	snprintf(file, sizeof(file), "%s/bound", dir);
	close(open(file, O_CREAT | O_WRONLY, 0600));
	snprintf(target, sizeof(target), "/proc/%d/ns/net", (int)a);
	assert_int_equal(mount(target, file, NULL, MS_BIND, NULL), 0);
	fd = netns_open(file, false, err, sizeof(err));
	assert_true(fd >= 0);
	first = ino_of(fd);
	close(fd);
	end(a);
	/* As ip netns del does: the pin keeps a descriptor of the mount. */
	assert_int_equal(umount2(file, MNT_DETACH), 0);
	b = holder(CLONE_NEWNET);
	snprintf(target, sizeof(target), "/proc/%d/ns/net", (int)b);
	assert_int_equal(mount(target, file, NULL, MS_BIND, NULL), 0);
	fd = netns_open(file, false, err, sizeof(err));
	if (fd < 0)
		fail_msg("root's new namespace at the same file: %s", err);
	assert_true(ino_of(fd) != first);
	close(fd);
	end(b);
	assert_int_equal(umount2(file, MNT_DETACH), 0);
	c = holder(CLONE_NEWUSER | CLONE_NEWNET);
	snprintf(target, sizeof(target), "/proc/%d/ns/net", (int)c);
	assert_int_equal(mount(target, file, NULL, MS_BIND, NULL), 0);
	assert_int_equal(netns_open(file, true, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "now names another network namespace"));
	end(c);
	umount2(file, MNT_DETACH);
	unlink(file);
}

/* A link that leads through /proc, pointed at another namespace of
 * smbsplice's own (as whoever may write the link's directory could):
 * refused, like the PID it names. */
static void test_link_through_proc(void **state)
{
	char link[64], err[512];
	pid_t a = holder(CLONE_NEWNET), b;
	int fd;

	(void)state;
	snprintf(link, sizeof(link), "%s/ns", dir);
	point(link, a);
	fd = netns_open(link, false, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	end(a);
	b = holder(CLONE_NEWNET);
	point(link, b);
	assert_int_equal(netns_open(link, false, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "now names another network namespace"));
	unlink(link);
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
		cmocka_unit_test(test_moved_pid_refused),
		cmocka_unit_test(test_rebound_file),
		cmocka_unit_test(test_link_through_proc),
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
