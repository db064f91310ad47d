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
 *
 * A path names a namespace only while it lasts: /proc/PID/ns/net names
 * whatever namespace the process that next takes PID is in, and any local
 * user can take a PID with a process in a namespace of its own (Debian
 * lets every user make user namespaces, and network namespaces in them).
 * So a path is resolved once per process: the first netns_open() of a
 * path pins the namespace (a descriptor kept, with its device and inode),
 * and every later one, at a reload, returns the pinned namespace; if the
 * path now names another, it is refused, and the reload with it, unless
 * the path does not lead through /proc and the new namespace is of
 * smbsplice's own user namespace (root recreated /run/netns/NAME): then
 * the pin moves. The
 * helper inherits the daemon's pins. A path whose process has exited
 * still gives the pinned namespace. A namespace owned by another user
 * namespace than smbsplice's own is refused unless the listener allows
 * it (foreign-netns): it is one a user without privilege can have made.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <linux/nsfs.h>

#include "common/netns.h"

/* Whether netns_open() tries entering: not once the helper enters. */
static bool entry_check = true;

/**
 * struct netns_pin - a path, and the namespace it named when first opened
 * @path:	the path as configured (allocated)
 * @fd:		the namespace, kept open for the process's life
 * @dev:	its device, as fstat() gives it
 * @ino:	its inode
 */
struct netns_pin {
	char *path;
	int fd;
	dev_t dev;
	ino_t ino;
};

/* Only the main thread (and the single-threaded helper) opens paths. */
static struct netns_pin pins[NETNS_MAX_PINS];
static unsigned npins;

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
 * open_ns() - open a path and check it is a network namespace
 * @path:	the path
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: a descriptor, or -1 with @err set and errno kept.
 */
static int open_ns(const char *path, char *err, size_t errlen)
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
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/**
 * same_file() - is @fd the file @dev and @ino name
 * @fd:		a descriptor
 * @dev:	a device
 * @ino:	an inode on it
 *
 * Return: true if it is.
 */
static bool same_file(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_dev == dev && st.st_ino == ino;
}

/**
 * own_userns() - is a namespace owned by smbsplice's own user namespace
 * @fd:	the network namespace
 *
 * NS_GET_USERNS fails with EPERM when the owner lies outside the caller's
 * user namespace: that is not ours either.
 *
 * Return: true if it is.
 */
static bool own_userns(int fd)
{
	struct stat self;
	int owner = ioctl(fd, NS_GET_USERNS);
	bool own;

	if (owner < 0)
		return false;
	own = !stat("/proc/self/ns/user", &self) &&
	      same_file(owner, self.st_dev, self.st_ino);
	close(owner);
	return own;
}

/**
 * pin_find() - the pin of a path
 * @path:	the path
 *
 * Return: it, or NULL if the path was never opened.
 */
static struct netns_pin *pin_find(const char *path)
{
	for (unsigned i = 0; i < npins; i++)
		if (!strcmp(pins[i].path, path))
			return &pins[i];
	return NULL;
}

/**
 * pin_add() - remember what a path names now
 * @path:	the path
 * @fd:		the namespace it names (a copy is kept)
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int pin_add(const char *path, int fd, char *err, size_t errlen)
{
	struct netns_pin *p = &pins[npins];
	struct stat st;

	if (npins == NETNS_MAX_PINS) {
		snprintf(
			err, errlen,
			"%s: smbsplice has opened %u namespaces since it started, as many as it keeps; restart it to name new ones",
			path, NETNS_MAX_PINS);
		return -1;
	}
	p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	p->path = strdup(path);
	if (p->fd < 0 || !p->path || fstat(p->fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (p->fd >= 0)
			close(p->fd);
		free(p->path);
		return -1;
	}
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	npins++;
	return 0;
}

/**
 * repin() - a path root made name another namespace: take that one
 * @p:		the pin
 * @now:	the namespace the path names now; the pin takes it over
 */
static void repin(struct netns_pin *p, int now)
{
	struct stat st;

	if (fstat(now, &st)) {
		close(now);
		return;
	}
	close(p->fd);
	p->fd = now;
	p->dev = st.st_dev;
	p->ino = st.st_ino;
}

/**
 * through_proc() - does a path reach its namespace through /proc
 * @path:	the path
 *
 * /proc/PID/ns/net is a link to no path (realpath() fails on it), so a
 * path that leads there, itself or through links, resolves to nothing;
 * a namespace file root bound elsewhere (/run/netns/NAME) resolves.
 *
 * Return: true if the path cannot be resolved or resolves under /proc.
 */
static bool through_proc(const char *path)
{
	char *real = realpath(path, NULL);
	bool proc = !real || !strncmp(real, "/proc/", 6);

	free(real);
	return proc;
}

/**
 * pinned() - a path opened before: its namespace, if it still names it
 * @p:		the pin
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * A path through /proc names a process, whose PID anyone may take once it
 * is free: it keeps the namespace it first named. A namespace file bound
 * elsewhere that now names another namespace of smbsplice's own user
 * namespace (which only root can make: `ip netns del` and `add` again)
 * gives the new one.
 *
 * Return: a new descriptor of the namespace, or -1 with @err set.
 */
static int pinned(struct netns_pin *p, char *err, size_t errlen)
{
	char why[160];
	int now = open_ns(p->path, why, sizeof(why)), fd;
	bool moved = now >= 0 && !same_file(now, p->dev, p->ino);

	if (moved && !through_proc(p->path) && own_userns(now)) {
		repin(p, now);
		now = -1;
	} else if (moved) {
		close(now);
		snprintf(
			err, errlen,
			"%s now names another network namespace than at start (its process gone, the PID taken?); restart to take it, or name it in /run/netns",
			p->path);
		return -1;
	} else if (now >= 0) {
		close(now);
	}
	fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		snprintf(err, errlen, "%s: %s", p->path, strerror(errno));
	return fd;
}

/**
 * netns_open() - open a network namespace and check that it is one
 * @path:	/run/netns/NAME, /proc/PID/ns/net, ...
 * @foreign:	a namespace owned by another user namespace may do
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Only a file of nsfs is asked its type. The check enters the namespace
 * and comes back, so a namespace that may not be entered (no
 * CAP_SYS_ADMIN over it) fails here, at start. A path opened before gives
 * the namespace it gave then (see the top of this file).
 *
 * Return: a descriptor for netns_enter(), or -1 with @err set.
 */
int netns_open(const char *path, bool foreign, char *err, size_t errlen)
{
	struct netns_pin *p = pin_find(path);
	int fd = p ? pinned(p, err, errlen) : open_ns(path, err, errlen);

	if (fd < 0)
		return -1;
	if (!foreign && !own_userns(fd)) {
		snprintf(
			err, errlen,
			"%s belongs to another user namespace than smbsplice's, which a user without privilege may have made; if it is yours (a rootless container), set foreign-netns = yes on the listener",
			path);
		goto fail;
	}
	if (!p && entry_check &&
	    (netns_enter(fd) || netns_enter(netns_home()))) {
		snprintf(err, errlen, "%s: cannot enter it: %s%s", path,
			 strerror(errno),
			 errno == EPERM ? " (entering needs CAP_SYS_ADMIN)"
					: "");
		goto fail;
	}
	if (!p && pin_add(path, fd, err, errlen))
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/**
 * netns_pins() - the descriptors of the pinned namespaces
 * @fds:	filled in
 * @max:	its length
 *
 * For the helper, which keeps them across its close of everything else.
 *
 * Return: how many were written.
 */
unsigned netns_pins(int *fds, unsigned max)
{
	unsigned n = 0;

	for (; n < npins && n < max; n++)
		fds[n] = pins[n].fd;
	return n;
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
