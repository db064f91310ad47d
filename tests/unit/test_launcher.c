// SPDX-License-Identifier: GPL-2.0-or-later
/* test_launcher.c - starting the new binary: directly and through the
 * launcher, the child has the handover socket as descriptor 3 (the very
 * socket: its inode), SMBSPLICE_HANDOVER_FD=3, no LISTEN_FDS, no other
 * inheritable descriptor of the parent's, and no signal of 1-31 ignored
 * (32 and 33 are glibc's, which a parent such as make may leave ignored);
 * what it writes on 3 arrives, and launcher_reap() gives its exit status 7;
 * a missing binary is the spawn's error (ENOENT), not a pid; under a
 * service manager (NOTIFY_SOCKET) a direct child is the parent's parent's
 * (what systemd needs to supervise it as the unit's main process), and
 * launcher_reap() sees it end through its pidfd; the launcher
 * runs only the binary and arguments it was started with, refuses a
 * descriptor that is no SOCK_SEQPACKET socket and serves on, and ends
 * when its socket hangs up; launcher_self_exe() names this binary.
 *
 * exesafe_check() (issue 28, item 6) passes a binary that it and
 * every directory above it, through symbolic links and "..", are root's
 * and writable by root alone, and refuses, naming the culprit, one that
 * is another uid's or group- or other-writable, under a sticky 1777
 * directory, behind a link in such a directory or pointing into one; a
 * missing file, a loop and a directory are errors. A launcher refuses to
 * start a binary whose directory became group-writable after it started,
 * in one line saying why and what to do, and starts it again once mended.
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
#include <ftw.h>
#include <cmocka.h>

#include "handover/exesafe.h"
#include "handover/launcher.h"

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
static char err[1024];

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

/* In a child of the test (OLD): spawn directly under NOTIFY_SOCKET, send
 * NEW's pid up @wfd, and exit 0 once launcher_reap() has seen NEW end
 * with the status it cannot know (-1). */
static void __attribute__((noreturn)) adopt_child(int wfd)
{
	static char *const argv[] = { "sh", "-c", "exit 7", NULL };
	struct launcher ln = LAUNCHER_NONE;
	int sv[2], status = 0, r = 0;
	time_t end;
	pid_t pid;

	setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		_exit(2);
	pid = launcher_spawn(&ln, "/bin/sh", argv, sv[1], err, sizeof(err));
	if (pid <= 0 || write(wfd, &pid, sizeof(pid)) != sizeof(pid))
		_exit(3);
	for (end = time(NULL) + 10;
	     (r = launcher_reap(&ln, pid, &status)) == 0 && time(NULL) < end;)
		usleep(10000);
	_exit(r == 1 && status == -1 ? 0 : 4);
}

/* Under a service manager (NOTIFY_SOCKET), NEW is a child of OLD's
 * parent, here this process, which can reap it: systemd supervises a
 * main process fully only if it is its own child. */
static void test_adopted(void **state)
{
	int p[2], status = 0;
	pid_t old, pid = 0;

	(void)state;
	assert_int_equal(pipe(p), 0);
	old = fork();
	assert_true(old >= 0);
	if (!old)
		adopt_child(p[1]);
	close(p[1]);
	assert_int_equal(read(p[0], &pid, sizeof(pid)), sizeof(pid));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid); /* ours, not OLD's */
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 7);
	assert_int_equal(waitpid(old, &status, 0), old);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
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

/* The scratch tree of test_exe_safe(): under the build tree, which is
 * root's (/tmp is not: 1777). */
static char base[4096];

/* @fmt under base, in a static buffer (one at a time). */
static const char *at(const char *fmt, ...)
{
	static char buf[8192];
	char rel[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(buf, sizeof(buf), "%s/%s", base, rel);
	return buf;
}

/* exesafe_check(@path) returns @want, and its sentence holds @has. */
static void expect(const char *path, int want, const char *has)
{
	char why[EXE_SAFE_WHY] = "";
	int r = exesafe_check(path, why, sizeof(why));

	if (r != want || (has && !strstr(why, has)))
		fail_msg("%s: %d (%s), not %d with \"%s\"", path, r, why, want,
			 has ? has : "");
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

/* base/bin/exe, root's and 0755 all the way, or a skip saying why not. */
static void make_tree(void)
{
	char why[EXE_SAFE_WHY];
	int fd;

	assert_non_null(getcwd(base, sizeof(base) - 32));
	strcat(base, "/launcher-safe-XXXXXX");
	assert_non_null(mkdtemp(base));
	assert_int_equal(chmod(base, 0755), 0);
	assert_int_equal(mkdir(at("bin"), 0755), 0);
	fd = open(at("bin/exe"), O_WRONLY | O_CREAT | O_EXCL, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\nexit 7\n", 17), 17);
	close(fd);
	assert_int_equal(chmod(at("bin/exe"), 0755), 0);
	if (geteuid() != 0 || exesafe_check(at("bin/exe"), why, sizeof(why))) {
		nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		print_message("skipped: needs root, and a build tree that is "
			      "root's all the way up (%s)\n",
			      geteuid() ? "not root" : why);
		skip();
	}
}

static void test_exe_safe(void **state)
{
	char link[8192];

	(void)state;
	make_tree();
	expect(at("bin/exe"), 0, NULL);
	expect(at("bin/../bin/./exe"), 0, NULL);
	/* The file: another uid's, group- or other-writable. */
	assert_int_equal(chown(at("bin/exe"), 65534, 0), 0);
	expect(at("bin/exe"), 1, "/bin/exe is owned by uid 65534, not root");
	assert_int_equal(chown(at("bin/exe"), 0, 0), 0);
	assert_int_equal(chmod(at("bin/exe"), 0775), 0);
	expect(at("bin/exe"), 1,
	       "/bin/exe is writable by its group (mode 0775)");
	assert_int_equal(chmod(at("bin/exe"), 0757), 0);
	expect(at("bin/exe"), 1, "/bin/exe is writable by others (mode 0757)");
	assert_int_equal(chmod(at("bin/exe"), 0755), 0);
	/* A directory above it: another uid's, group-writable, sticky. */
	assert_int_equal(chown(at("bin"), 65534, 0), 0);
	expect(at("bin/exe"), 1, "/bin is owned by uid 65534, not root");
	assert_int_equal(chown(at("bin"), 0, 0), 0);
	assert_int_equal(chmod(at("bin"), 0775), 0);
	expect(at("bin/exe"), 1, "/bin is writable by its group (mode 0775)");
	assert_int_equal(chmod(at("bin"), 01777), 0);
	expect(at("bin/exe"), 1, "/bin is writable by others (mode 1777)");
	assert_int_equal(chmod(at("bin"), 0755), 0);
	/* Symbolic links: relative, absolute, chained, are followed and
	 * their targets checked; one in an unsafe directory, or pointing
	 * into one, is refused. */
	assert_int_equal(symlink("bin/exe", at("rel")), 0);
	assert_int_equal(symlink("rel", at("chain")), 0);
	snprintf(link, sizeof(link), "%s", at("bin"));
	assert_int_equal(symlink(link, at("abs")), 0);
	expect(at("rel"), 0, NULL);
	expect(at("chain"), 0, NULL);
	expect(at("abs/exe"), 0, NULL);
	assert_int_equal(mkdir(at("theirs"), 0755), 0);
	assert_int_equal(chown(at("theirs"), 65534, 65534), 0);
	snprintf(link, sizeof(link), "%s", at("bin/exe"));
	assert_int_equal(symlink(link, at("theirs/link")), 0);
	expect(at("theirs/link"), 1, "/theirs is owned by uid 65534, not root");
	assert_int_equal(symlink("theirs/link", at("via")), 0);
	expect(at("via"), 1, "/theirs is owned by uid 65534, not root");
	snprintf(link, sizeof(link), "%s", at("bin/exe"));
	assert_int_equal(rename(link, at("theirs/exe")), 0);
	assert_int_equal(symlink("../theirs/exe", at("bin/exe")), 0);
	expect(at("bin/exe"), 1, "/theirs is owned by uid 65534, not root");
	/* Not to be told: missing, a loop, a directory, not absolute. */
	expect(at("missing"), -1, "No such file or directory");
	assert_int_equal(symlink("loop", at("loop")), 0);
	expect(at("loop"), -1, "Too many levels of symbolic links");
	expect(at("bin"), -1, "Permission denied");
	expect("bin/exe", -1, "bin/exe is not an absolute path");
	assert_int_equal(nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* A launcher checks at each request: refused once the binary's directory
 * became group-writable, in one line saying what to do; started again
 * once mended. */
static void test_launcher_refuses(void **state)
{
	struct launcher ln;
	char want[16384];
	int sv[2];

	(void)state;
	make_tree();
	assert_int_equal(symlink("/bin/sh", at("bin/sh")), 0);
	assert_int_equal(launcher_start(&ln, at("bin/sh"), child_argv), 0);
	run_child(&ln);
	assert_int_equal(chmod(at("bin"), 0775), 0);
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(launcher_spawn(&ln, at("bin/sh"), child_argv, sv[1],
					err, sizeof(err)),
			 -1);
	snprintf(
		want, sizeof(want),
		"the launcher refused to start %s/bin/sh: %s/bin is writable by its group (mode 0775); %s",
		base, base, EXE_UNSAFE_HINT);
	assert_memory_equal(err, want,
			    sizeof(err) - 1 < strlen(want) ? sizeof(err) - 1
							   : strlen(want));
	close(sv[0]);
	close(sv[1]);
	assert_int_equal(chmod(at("bin"), 0755), 0);
	run_child(&ln);
	launcher_stop(&ln);
	assert_int_equal(nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_exe),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_adopted),
		cmocka_unit_test(test_launcher),
		cmocka_unit_test(test_exe_safe),
		cmocka_unit_test(test_launcher_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
