// SPDX-License-Identifier: GPL-2.0-or-later
/* exesafe.c - could only root have put this binary here
 *
 * Theory of operation: the launcher (launcher.c) keeps root to start the
 * new binary of a handover for a daemon that runs as --user. Whoever can
 * write that file, or any directory on the way to it, chooses what the
 * launcher runs as root: with a build tree owned by the --user account,
 * a daemon compromised through a parser bug would have root at the next
 * SIGUSR2. exesafe_check() walks the path from "/" the way the kernel
 * resolves it, one component at a time (O_PATH, O_NOFOLLOW; each
 * symbolic link read and its target walked in turn), and requires every
 * directory and the file to be root's and writable by root alone. Once
 * each step is, nobody but root can change what execve() will find, so
 * checking by path and then executing by path is no race.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "handover/exesafe.h"

/* Symbolic links followed in one path at most, as the kernel does. */
#define EXE_MAXLINKS 40

/**
 * node_unsafe() - could someone other than root change this file
 * @st:		its fstat()
 * @shown:	its path, for @why
 * @why:	set to what is wrong, if anything
 * @len:	its size
 *
 * Owned by uid 0 and writable by neither group nor others, whatever the
 * group: a sticky directory (/tmp) is still one where others make names,
 * and a group is one more account to trust. ACLs are not read.
 *
 * Return: true if unsafe, with @why set.
 */
static bool node_unsafe(const struct stat *st, const char *shown, char *why,
			size_t len)
{
	if (st->st_uid != 0)
		snprintf(why, len, "%s is owned by uid %u, not root", shown,
			 (unsigned)st->st_uid);
	else if (st->st_mode & (S_IWGRP | S_IWOTH))
		snprintf(why, len, "%s is writable by %s (mode %04o)", shown,
			 st->st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(st->st_mode & 07777));
	else
		return false;
	return true;
}

/**
 * next_name() - take the next component off a path
 * @rest:	the path still to walk; advanced past the component
 * @name:	set to it, NUL-terminated
 *
 * Return: the component's length, 0 at the end, -1 (ENAMETOOLONG) for one
 * longer than NAME_MAX.
 */
static int next_name(const char **rest, char name[NAME_MAX + 1])
{
	const char *p = *rest;
	size_t n;

	while (*p == '/')
		p++;
	n = strcspn(p, "/");
	if (n > NAME_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(name, p, n);
	name[n] = '\0';
	*rest = p + n;
	return (int)n;
}

/**
 * follow_link() - splice a symbolic link's target into the path to walk
 * @fd:		the link (O_PATH | O_NOFOLLOW)
 * @rest:	the path still to walk after the link; replaced by
 *		target + "/" + @rest
 * @buf:	room for the result, PATH_MAX * 2
 * @dir:	the directory the link is in; becomes "/" for an absolute
 *		target
 * @shown:	that directory's path; "" for "/"
 *
 * The link itself needs no check (its mode means nothing, and only who
 * may write its directory can replace it, checked already); its target
 * is walked like the rest, every directory on the way checked.
 *
 * Return: 0, or -1 with errno set.
 */
static int follow_link(int fd, const char **rest, char *buf, int *dir,
		       char *shown)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
	int r;

	if (n < 0)
		return -1;
	target[n] = '\0';
	r = snprintf(buf + PATH_MAX, PATH_MAX, "%s/%s", target, *rest);
	if (r < 0 || r >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, buf + PATH_MAX, (size_t)r + 1);
	*rest = buf;
	if (target[0] == '/') {
		int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (root < 0)
			return -1;
		close(*dir);
		*dir = root;
		shown[0] = '\0';
	}
	return 0;
}

/**
 * walk_up() - "..": to the parent of @dir, already checked on the way
 *	       down (or "/" itself)
 * @dir:	the directory; replaced by its parent
 * @shown:	its path; its last component taken off
 *
 * Return: 0, or -1 with errno set.
 */
static int walk_up(int *dir, char *shown)
{
	int up = openat(*dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char *slash = strrchr(shown, '/');

	if (up < 0)
		return -1;
	close(*dir);
	*dir = up;
	if (slash)
		*slash = '\0';
	return 0;
}

/**
 * walk_step() - check one component of the binary's path and go past it
 * @dir:	the directory it is in; replaced by it when it is one
 * @name:	the component
 * @rest:	what follows it; see follow_link()
 * @buf:	for follow_link()
 * @shown:	@dir's path; the component appended
 * @why:	set to what is wrong, if anything
 * @len:	its size
 *
 * Return: 0 to go on, 1 if unsafe, -1 with errno set.
 */
static int walk_step(int *dir, const char *name, const char **rest, char *buf,
		     char *shown, char *why, size_t len)
{
	int fd = openat(*dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), r = -1;
	size_t at = strlen(shown);
	struct stat st;
	bool last;

	if (fd < 0 || fstat(fd, &st))
		goto out;
	if (S_ISLNK(st.st_mode)) {
		r = follow_link(fd, rest, buf, dir, shown);
		goto out;
	}
	if (at + 1 + strlen(name) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		goto out;
	}
	snprintf(shown + at, PATH_MAX - at, "/%s", name);
	r = 1;
	if (node_unsafe(&st, shown, why, len))
		goto out;
	r = -1;
	last = strspn(*rest, "/") == strlen(*rest); /* the binary itself */
	if (last ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode)) {
		close(*dir);
		*dir = fd;
		return 0;
	}
	errno = last ? EACCES : ENOTDIR;
out:
	if (fd >= 0)
		close(fd);
	return r;
}

/**
 * exesafe_check() - could only root have put this binary here
 * @path:	the binary, an absolute path
 * @why:	set to one sentence saying what is wrong, or why it could not
 *		be checked
 * @len:	its size
 *
 * The launcher runs @path as root on a handover; whoever can write the
 * file, or any directory on the way to it (a name can be replaced), can
 * choose what runs. So the file and every directory from "/" down,
 * through every symbolic link and its target's directories, must be
 * owned by root and writable by neither group nor others
 * (node_unsafe()). The walk opens each component itself (O_PATH,
 * O_NOFOLLOW), as the kernel would resolve the path, so what is checked
 * is what execve() then finds: with every step root's alone, nobody but
 * root can change it in between.
 *
 * Return: 0 if safe, 1 if not (with @why), -1 with errno set (with @why)
 * when it cannot be told: a missing file, a path too long, a loop.
 */
int exesafe_check(const char *path, char *why, size_t len)
{
	char buf[PATH_MAX * 2], shown[PATH_MAX] = "", name[NAME_MAX + 1];
	const char *rest = path;
	int dir, r = 0, links = 0, e;
	struct stat st;

	if (path[0] != '/') {
		snprintf(why, len, "%s is not an absolute path", path);
		errno = EINVAL;
		return -1;
	}
	dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0 || fstat(dir, &st))
		r = -1;
	else if (node_unsafe(&st, "/", why, len))
		r = 1;
	while (!r && (r = next_name(&rest, name)) > 0) {
		const char *before = rest;

		if (!strcmp(name, "."))
			r = 0;
		else if (!strcmp(name, ".."))
			r = walk_up(&dir, shown);
		else
			r = walk_step(&dir, name, &rest, buf, shown, why, len);
		if (!r && rest != before && ++links > EXE_MAXLINKS) {
			errno = ELOOP;
			r = -1;
		}
	}
	e = errno;
	if (dir >= 0)
		close(dir);
	if (r < 0)
		snprintf(why, len, "%s: %s", path, strerror(e));
	errno = e;
	return r;
}
