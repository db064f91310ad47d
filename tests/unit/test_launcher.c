// SPDX-License-Identifier: GPL-2.0-or-later
/* test_launcher.c - starting the new binary: directly and through the
 * launcher, the child has the handover socket as descriptor 3 (the very
 * socket: its inode), SMBSPLICE_HANDOVER_FD=3, no LISTEN_FDS, no other
 * inheritable descriptor of the parent's, and no signal of 1-31 ignored
 * (32 and 33 are glibc's, which a parent such as make may leave ignored);
 * what it writes on 3 arrives, and launcher_reap() gives its exit status 7;
 * a missing binary is the spawn's error (ENOENT), not a pid; the launcher
 * runs only the binary and arguments it was started with, refuses a
 * descriptor that is no SOCK_SEQPACKET socket and serves on, and ends
 * when its socket hangs up; launcher_self_exe() names this binary.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "launcher.h"

/* The child: checks its descriptor 3 and environment, says which socket
 * its 3 is, and exits 7 (or 1 and a reason). */
static char script[] =
	"[ \"$SMBSPLICE_HANDOVER_FD\" = 3 ] || { echo no-env >&3; exit 1; }; "
	"[ -z \"${LISTEN_FDS+x}${LISTEN_PID+x}\" ] || { echo listen >&3; exit 1; }; "
	"[ -S /proc/$$/fd/3 ] || exit 2; "
	"[ ! -e /proc/$$/fd/9 ] || { echo fd9 >&3; exit 1; }; "
	"ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status); "
	"[ $((0x$ign & 0x7fffffff)) = 0 ] || { echo sigign >&3; exit 1; }; "
	"printf '%s' \"$(readlink /proc/$$/fd/3)\" >&3; exit 7";
static char *const child_argv[] = { "sh", "-c", script, NULL };
static char err[256];

/* Spawn @ln's child, read what it says, reap it: exit 7 and its socket. */
static void run_child(struct launcher *ln)
{
	char want[64], got[128] = "";
	struct pollfd p;
	struct stat st;
	int sv[2], status = 0, r;
	pid_t pid;
	ssize_t n;
	time_t end;

	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(fstat(sv[1], &st), 0);
	snprintf(want, sizeof(want), "socket:[%lu]", (unsigned long)st.st_ino);
	/* An inheritable descriptor of the parent's, which the child must
	 * not get; and a SIG_IGN, which it must not keep. */
	assert_int_equal(dup2(sv[0], 9), 9);
	signal(SIGUSR1, SIG_IGN);
	pid = launcher_spawn(ln, "/bin/sh", child_argv, sv[1], err,
			     sizeof(err));
	signal(SIGUSR1, SIG_DFL);
	close(9);
	if (pid < 0)
		fail_msg("%s", err);
	close(sv[1]);
	p = (struct pollfd){ sv[0], POLLIN, 0 };
	assert_int_equal(poll(&p, 1, 10000), 1);
	n = recv(sv[0], got, sizeof(got) - 1, 0);
	assert_true(n > 0);
	got[n] = '\0';
	assert_string_equal(got, want);
	close(sv[0]);
	for (end = time(NULL) + 10;
	     (r = launcher_reap(ln, pid, &status)) == 0 && time(NULL) < end;)
		usleep(10000);
	assert_int_equal(r, 1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 7);
}

/* A spawn of a missing binary: -1 and ENOENT in the line, not a pid. */
static void spawn_missing(struct launcher *ln)
{
	int sv[2];

	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(launcher_spawn(ln, "/nonexistent/smbsplice",
					child_argv, sv[1], err, sizeof(err)),
			 -1);
	assert_string_equal(
		err,
		"cannot start /nonexistent/smbsplice: No such file or directory");
	close(sv[0]);
	close(sv[1]);
}

static void test_self_exe(void **state)
{
	char buf[4096], small[4];
	struct stat a, b;

	(void)state;
	assert_int_equal(launcher_self_exe(buf, sizeof(buf)), 0);
	assert_int_equal(stat(buf, &a), 0);
	assert_int_equal(stat("/proc/self/exe", &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(launcher_self_exe(small, sizeof(small)), -1);
	assert_int_equal(errno, ENAMETOOLONG);
}

static void test_direct(void **state)
{
	struct launcher ln = LAUNCHER_NONE;

	(void)state;
	setenv("LISTEN_FDS", "2", 1);
	setenv("LISTEN_PID", "1", 1);
	run_child(&ln);
	spawn_missing(&ln);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* reaped */
	assert_int_equal(errno, ECHILD);
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
}

static void test_launcher(void **state)
{
	struct launcher ln;
	int sv[2], p[2], status;
	time_t end;
	pid_t r;

	(void)state;
	setenv("LISTEN_FDS", "2", 1);
	setenv("LISTEN_PID", "1", 1);
	assert_int_equal(launcher_start(&ln, "/bin/sh", child_argv), 0);
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	assert_true(ln.fd >= 0);
	run_child(&ln);
	run_child(&ln); /* one at a time, and again */

	/* Not a socket, a stream socket: refused, and it serves on. */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(launcher_spawn(&ln, "/bin/sh", child_argv, p[0], err,
					sizeof(err)),
			 -1);
	assert_string_equal(
		err,
		"the launcher refused the request: Socket operation on non-socket");
	close(p[0]);
	close(p[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	assert_int_equal(launcher_spawn(&ln, "/bin/sh", child_argv, sv[1], err,
					sizeof(err)),
			 -1);
	assert_string_equal(
		err,
		"the launcher refused the request: Protocol wrong type for socket");
	close(sv[0]);
	close(sv[1]);
	/* It runs its own binary, whatever the daemon names. */
	{
		char *const other[] = { "false", NULL };
		struct launcher direct = ln;
		pid_t pid;
		int sp[2], st = 0;

		assert_int_equal(socketpair(AF_UNIX,
					    SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
					    sp),
				 0);
		pid = launcher_spawn(&direct, "/bin/false", other, sp[1], err,
				     sizeof(err));
		assert_true(pid > 0);
		close(sp[1]);
		for (end = time(NULL) + 10;
		     launcher_reap(&ln, pid, &st) == 0 && time(NULL) < end;)
			usleep(10000);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st),
				 7); /* sh -c script, not false */
		close(sp[0]);
	}
	launcher_stop(&ln);
	assert_int_equal(ln.fd, -1);

	/* A launcher of a missing binary: ENOENT, not a pid. */
	assert_int_equal(
		launcher_start(&ln, "/nonexistent/smbsplice", child_argv), 0);
	spawn_missing(&ln);

	/* It ends when its socket hangs up, and ignores SIGTERM. */
	kill(ln.pid, SIGTERM);
	usleep(100000);
	assert_int_equal(waitpid(ln.pid, &status, WNOHANG), 0);
	close(ln.fd);
	for (end = time(NULL) + 10;
	     (r = waitpid(ln.pid, &status, WNOHANG)) == 0 && time(NULL) < end;)
		usleep(10000);
	assert_int_equal(r, ln.pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_exe),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_launcher),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
