// SPDX-License-Identifier: GPL-2.0-or-later
/* netns.c - making sockets in other network namespaces
 *
 * Theory of operation: a socket belongs to the network namespace its
 * creator was in at socket() time, and stays there whatever the creator
 * does next. So smbsplice, one process, can listen in one namespace and
 * dial into another the way pasta does, by entering a namespace only
 * around the socket() call: setns() changes the namespace of the calling
 * thread alone, and nothing else about the process changes.
 *
 * The namespaces are opened and checked once, at start (no such file, not
 * a network namespace, no permission: each a clear line). Listening
 * sockets are made by the main thread, which enters the listen namespace
 * and returns home. A worker thread enters the backend namespace once when
 * it starts and stays there, so dialling the backend costs no setns() and
 * needs no privilege later. Under --user the daemon enters nothing after
 * start: the privileged helper does (privhelper.c), and netns_open() in
 * the daemon then only names and identifies a namespace.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <linux/nsfs.h>

#include "netns.h"

/* Whether netns_open() tries entering: not once the helper enters. */
static bool entry_check = true;

/**
 * netns_no_entry_check() - netns_open() checks the type, not the entry
 *
 * For the daemon after --user, which holds no CAP_SYS_ADMIN: the
 * privileged helper opens and enters the namespace itself, and refuses
 * with a line of its own.
 */
void netns_no_entry_check(void)
{
	entry_check = false;
}

/**
 * netns_open() - open a network namespace and check that it is one
 * @path:	/run/netns/NAME, /proc/PID/ns/net, ...
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Only a file of nsfs is asked its type. The check enters the namespace
 * and comes back, so a namespace that may not be entered (no
 * CAP_SYS_ADMIN over it) fails here, at start.
 *
 * Return: a descriptor for netns_enter(), or -1 with @err set.
 */
int netns_open(const char *path, char *err, size_t errlen)
{
	/* Opened by root with CAP_SYS_ADMIN, from a path in a file: a FIFO
	 * must not block it, a tty not become its terminal, and no ioctl
	 * goes to a file that is not a namespace. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct statfs fs;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstatfs(fd, &fs) || fs.f_type != NSFS_MAGIC ||
	    ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		snprintf(err, errlen, "%s is not a network namespace", path);
		close(fd);
		return -1;
	}
	if (entry_check && (netns_enter(fd) || netns_enter(netns_home()))) {
		snprintf(err, errlen, "%s: cannot enter it: %s%s", path,
			 strerror(errno),
			 errno == EPERM ? " (entering needs CAP_SYS_ADMIN)"
					: "");
		close(fd);
		return -1;
	}
	return fd;
}

/**
 * netns_enter() - move the calling thread into a network namespace
 * @fd:	from netns_open() or netns_home()
 *
 * Return: 0, or -1 with errno set.
 */
int netns_enter(int fd)
{
	return setns(fd, CLONE_NEWNET);
}

/**
 * netns_home() - the namespace the process started in
 *
 * Opened on first use, which main() makes before any thread moves.
 *
 * Return: a descriptor for netns_enter(), or -1 if it cannot be opened.
 */
int netns_home(void)
{
	static int fd = -1;

	if (fd < 0)
		fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	return fd;
}

/**
 * netns_ino() - the inode that names a namespace
 * @fd:	from netns_open() or netns_home()
 *
 * Return: the inode, or 0 if it cannot be had.
 */
ino_t netns_ino(int fd)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) ? st.st_ino : 0;
}
