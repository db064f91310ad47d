// SPDX-License-Identifier: GPL-2.0-or-later
/* control.c - the --control and --control-ro sockets: conns, conn,
 *	       listeners, info, drain, resume, kill and top for a local
 *	       administrator, the looking ones alone for a monitor
 *
 * Theory of operation: a Unix stream socket, never a network one, made
 * readable by its owner alone (mode 0600: bound under umask 0177), or by
 * a group with --control-group (0660: bound under umask 0117 with that
 * group as the thread's filesystem gid, so that no chown() or chmod()
 * names the path after it exists). A stale socket left by a crash is
 * replaced; a live one (something answers a connect()) or anything that
 * is not a socket is left alone and the start fails.
 *
 * It is served by the main thread, which forwards nothing, in the same
 * shape as the --stats endpoint (metrics.c): accept, read one request
 * line (bounded in length and in time), build the whole answer in memory
 * (bounded), write it as the socket takes it, close. At most
 * CTL_MAX_CLIENTS are served at once; a new client when all are busy
 * closes the oldest one still silent, so a client that connects and sends
 * nothing cannot keep the next one out.
 *
 * What the workers hold is asked of them, never read from here: a
 * command queues a controlcmd_snapshot (or kill, hold, resume) to each worker
 * and waits in worker_sync_all() until each has answered between two of
 * its events (connview.c). The wait is one loop iteration of each worker;
 * it stops no worker.
 *
 * `kill`, `drain` and `resume` are logged with the asker's credentials
 * (SO_PEERCRED).
 *
 * There are two sockets, of two levels (HAProxy's "level" of a stats
 * socket, in two): --control, the admin socket, serves every command;
 * --control-ro, the view socket, only those that look, and answers
 * "permission denied" to drain, resume and kill (controlcmd.c). Who may
 * connect to each is the file system's to say, by each node's mode and
 * group, which `ls -l` shows and nothing in this process can get wrong:
 * no uid is compared in code. Each socket has its own CTL_MAX_CLIENTS
 * slots, so that the view socket's clients, however many, never keep an
 * administrator out. Both are handed over to the next process on a
 * SIGUSR2 (control_socket()), and a reload leaves both alone.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/fsuid.h>

#include "control/control.h"
#include "control/controlcmd.h"
#include "conn/connview.h"
#include "common/log.h"
#include "core/proxy.h"

#define CTL_MAX_CLIENTS	    4
#define CTL_LINE_MAX	    256
#define CTL_REQUEST_TIMEOUT 2.0
#define CTL_WRITE_TIMEOUT   10.0

/**
 * struct ctl_client - one control connection being served
 * @px:		the process
 * @sock:	the socket it came on
 * @prev:	list link
 * @next:	list link
 * @fd:		its socket
 * @io:		readable while reading the line, writable while answering
 * @timer:	gives up on a silent or slow client
 * @who:	its credentials, for the log
 * @line:	the request so far
 * @len:	its length
 * @out:	the answer, once built
 * @off:	bytes of it written
 * @answering:	the line was read: the answer is being written
 */
struct ctl_client {
	struct proxy *px;
	struct ctl_sock *sock;
	struct ctl_client *prev, *next;
	int fd;
	ev_io io;
	ev_timer timer;
	char who[64];
	char line[CTL_LINE_MAX];
	size_t len;
	struct outbuf out;
	size_t off;
	bool answering;
};

/**
 * struct ctl_sock - a control socket and its clients
 * @fd:		the listening socket, -1 when there is none
 * @w:		its watcher
 * @level:	what its clients may do
 * @path:	where it is
 * @clients:	those being served, oldest first
 * @n:		how many
 */
struct ctl_sock {
	int fd;
	ev_io w;
	enum control_level level;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ctl_client *clients;
	unsigned n;
};

/* The process's two, by level. */
static struct ctl_sock socks[] = {
	[CONTROL_VIEW] = { .fd = -1, .level = CONTROL_VIEW },
	[CONTROL_ADMIN] = { .fd = -1, .level = CONTROL_ADMIN },
};

/**
 * client_end() - close and free a client
 * @c:	the client
 */
static void client_end(struct ctl_client *c)
{
	struct ev_loop *loop = c->px->loop;
	struct ctl_sock *s = c->sock;

	ev_io_stop(loop, &c->io);
	ev_timer_stop(loop, &c->timer);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c->out.p);
	free(c);
	s->n--;
	if (s->fd >= 0 && !ev_is_active(&s->w))
		ev_io_start(loop, &s->w); /* a slot is free for the backlog */
}

/**
 * discard_input() - read what a client sent past its line, a bounded
 *		     amount, so that closing does not reset it before it
 *		     reads the answer
 * @fd:	the client's socket
 */
static void discard_input(int fd)
{
	char junk[4096];

	for (int i = 0; i < 16; i++)
		if (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) <= 0)
			return;
}

/**
 * on_client_write() - write what the socket takes of the answer
 * @loop:	the main loop
 * @w:		the client's watcher
 * @revents:	unused
 */
static void on_client_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *c = w->data;
	ssize_t n;

	(void)loop;
	(void)revents;
	while (c->off < c->out.len) {
		n = send(c->fd, c->out.p + c->off, c->out.len - c->off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			client_end(c); /* EPIPE, ECONNRESET: it left */
			return;
		}
		c->off += (size_t)n;
	}
	discard_input(c->fd);
	client_end(c);
}

/**
 * client_answer() - run the request line and start writing the answer
 * @c:	the client, whose @line is complete
 */
static void client_answer(struct ctl_client *c)
{
	struct ev_loop *loop = c->px->loop;

	c->answering = true;
	c->out.max = CONTROL_ANSWER_MAX;
	if (!c->out.len) /* else it says the line was too long */
		controlcmd_run(c->px, c->line, c->who, c->sock->level, &c->out);
	if (c->out.full) {
		c->out.len = 0;
		c->out.full = false;
		c->out.max += 256; /* room for the line that says why */
		outbuf_printf(
			&c->out,
			"error: the answer passed %u MiB and was dropped; ask for one connection (conn ID) or fewer (top N)\n",
			CONTROL_ANSWER_MAX >> 20);
	}
	ev_io_stop(loop, &c->io);
	ev_io_init(&c->io, on_client_write, c->fd, EV_WRITE);
	c->io.data = c;
	ev_io_start(loop, &c->io);
	ev_timer_stop(loop, &c->timer);
	ev_timer_set(&c->timer, CTL_WRITE_TIMEOUT, 0.);
	ev_timer_start(loop, &c->timer);
	on_client_write(loop, &c->io, EV_WRITE);
}

/**
 * on_client_read() - read the request line
 * @loop:	the main loop
 * @w:		the client's watcher
 * @revents:	unused
 */
static void on_client_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *c = w->data;
	char *nl;
	ssize_t n;

	(void)loop;
	(void)revents;
	n = recv(c->fd, c->line + c->len, sizeof(c->line) - 1 - c->len,
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		client_end(c);
		return;
	}
	c->len += (size_t)n;
	c->line[c->len] = '\0';
	nl = strchr(c->line, '\n');
	if (!nl && c->len < sizeof(c->line) - 1)
		return;
	if (!nl) {
		c->out.max = CONTROL_ANSWER_MAX;
		outbuf_printf(&c->out, "error: request longer than %d bytes\n",
			      CTL_LINE_MAX - 1);
		c->line[0] = '\0';
	} else {
		*nl = '\0';
	}
	client_answer(c);
}

/**
 * on_client_timeout() - a client took too long to ask or to read
 * @loop:	the main loop
 * @t:		the client's timer
 * @revents:	unused
 */
static void on_client_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)revents;
	client_end(t->data);
}

/**
 * client_new() - serve a new control connection
 * @px:	the process
 * @s:	the control socket it came on
 * @fd:	its socket
 */
static void client_new(struct proxy *px, struct ctl_sock *s, int fd)
{
	struct ctl_client *c = calloc(1, sizeof(*c)), **link;
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (!c) {
		close(fd);
		return;
	}
	c->px = px;
	c->sock = s;
	c->fd = fd;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		snprintf(c->who, sizeof(c->who), "uid %u pid %d",
			 (unsigned)cr.uid, (int)cr.pid);
	else
		snprintf(c->who, sizeof(c->who), "an unknown peer");
	ev_io_init(&c->io, on_client_read, fd, EV_READ);
	c->io.data = c;
	ev_timer_init(&c->timer, on_client_timeout, CTL_REQUEST_TIMEOUT, 0.);
	c->timer.data = c;
	ev_io_start(px->loop, &c->io);
	ev_timer_start(px->loop, &c->timer);
	for (link = &s->clients; *link; link = &(*link)->next)
		c->prev = *link;
	*link = c;
	s->n++;
}

/**
 * make_room() - at the cap, close the oldest client still silent
 * @s:	the control socket
 *
 * Return: true if a slot is free now.
 */
static bool make_room(struct ctl_sock *s)
{
	if (s->n < CTL_MAX_CLIENTS)
		return true;
	for (struct ctl_client *c = s->clients; c; c = c->next)
		if (!c->answering) {
			client_end(c);
			return true;
		}
	return false;
}

/**
 * on_control_accept() - take the clients waiting
 * @loop:	the main loop
 * @w:		the control socket's watcher
 * @revents:	unused
 */
static void on_control_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_sock *s =
		(struct ctl_sock *)((char *)w - offsetof(struct ctl_sock, w));
	struct proxy *px = w->data;
	int fd;

	(void)revents;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		if (!make_room(s)) {
			/* Every slot is answering: the next waits in the
			 * backlog until one is done. */
			ev_io_stop(loop, &s->w);
			return;
		}
		fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_rate(LOG_LVL_WARN,
					 "control socket: accept: %s",
					 strerror(errno));
			return;
		}
		client_new(px, s, fd);
	}
}

/**
 * sun_of() - a Unix socket address
 * @sun:	set to it
 * @path:	the path, shorter than sun_path (control_start() checked)
 */
static void sun_of(struct sockaddr_un *sun, const char *path)
{
	*sun = (struct sockaddr_un){ .sun_family = AF_UNIX };
	memcpy(sun->sun_path, path, strnlen(path, sizeof(sun->sun_path) - 1));
}

/**
 * clear_stale() - remove a socket a dead smbsplice left at @path
 * @path:	the control socket's path
 *
 * Return: 0 if the name is free now, or -1 after logging why not.
 */
static int clear_stale(const char *path)
{
	struct sockaddr_un sun;
	struct stat st;
	int fd, live;

	if (lstat(path, &st))
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		log_err("control socket %s: the name exists and is not a socket; not replacing it",
			path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	sun_of(&sun, path);
	live = !connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	if (live) {
		log_err("control socket %s: another process answers on it; not replacing it",
			path);
		return -1;
	}
	unlink(path);
	return 0;
}

/**
 * bind_as_group() - bind @fd at @sun with the node's group and mode set
 *		     by the kernel as it is made
 * @fd:		the socket
 * @sun:	its address
 * @gid:	the group the node is born with, or -1 for none (mode 0600)
 *
 * A chown() or chmod() of the path after bind() would follow whatever
 * name stands there by then, as root: whoever may write the directory
 * could swap in a link to any file and have root give it to the group.
 * So the node is made right: the umask gives its mode, the thread's
 * filesystem gid its group, and nothing names the path afterwards.
 * setfsgid() is per thread, and no other thread runs yet. When @gid is
 * the process's own group it is the filesystem gid already: no call is
 * made, which is how a process without privilege (the shipped unit's,
 * whose system call filter refuses chown() and setfsgid()) gives a
 * socket to a group, by running as it (Group=).
 *
 * Return: bind()'s result, errno kept.
 */
static int bind_as_group(int fd, const struct sockaddr_un *sun, gid_t gid)
{
	bool grp = gid != (gid_t)-1, other = grp && gid != getegid();
	mode_t old = umask(grp ? 0117 : 0177);
	int prev = other ? setfsgid(gid) : -1;
	int r, e;

	r = bind(fd, (const struct sockaddr *)sun, sizeof(*sun));
	e = errno;
	if (other)
		setfsgid((gid_t)prev);
	umask(old);
	errno = e;
	return r;
}

/**
 * node_group_ok() - did the node get the group and mode asked for
 * @path:	the control socket's path
 * @gid:	the group
 *
 * The kernel gives a new node the directory's group instead of ours when
 * the directory is set-group-ID, and a default ACL on the directory
 * overrides the umask. Only looked at (lstat, never followed or changed).
 *
 * Return: true if the node is a socket of group @gid, mode 0660.
 */
static bool node_group_ok(const char *path, gid_t gid)
{
	struct stat st;

	return !lstat(path, &st) && S_ISSOCK(st.st_mode) && st.st_gid == gid &&
	       (st.st_mode & 07777) == 0660;
}

/**
 * give_group_unprivileged() - give the socket to a group, without root
 * @path:	the control socket's path, just bound (mode 0600)
 * @gid:	a group of the caller's
 *
 * setfsgid() takes only the caller's own real, effective or saved gid
 * without CAP_SETGID, not a supplementary group. A process without
 * privilege may follow the path: whatever a link swapped in names, it can
 * change only files it owns, to groups it is in, which it could anyway.
 *
 * Return: 0, or -1 with errno set.
 */
static int give_group_unprivileged(const char *path, gid_t gid)
{
	return chown(path, (uid_t)-1, gid) || chmod(path, 0660) ? -1 : 0;
}

/**
 * dir_hint() - what to do when the socket's directory is the trouble
 * @e:	bind()'s errno
 *
 * Return: a clause to end the error line with, or "".
 */
static const char *dir_hint(int e)
{
	if (e != ENOENT && e != EROFS && e != EACCES)
		return "";
	return "; its directory must exist and be writable by smbsplice "
	       "(the shipped unit's RuntimeDirectory=smbsplice makes "
	       "/run/smbsplice)";
}

/**
 * control_bind() - make a control socket at @path, private from its birth
 * @path:	where
 * @group:	the group it is open to (mode 0660), or "" for none (0600)
 *
 * Return: the listening socket, or -1 after logging why.
 */
static int control_bind(const char *path, const char *group)
{
	struct sockaddr_un sun;
	struct group *g = NULL;
	gid_t gid;
	int fd;

	if (*group && !(g = getgrnam(group))) {
		log_err("control socket %s: no group named %s", path, group);
		return -1;
	}
	gid = g ? g->gr_gid : (gid_t)-1;
	if (clear_stale(path))
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	sun_of(&sun, path);
	/* Only root's path-based chown() could be led astray; the process's
	 * own group needs none. */
	if (g && geteuid() && gid != getegid()) {
		if (bind_as_group(fd, &sun, (gid_t)-1) ||
		    give_group_unprivileged(path, gid))
			goto fail;
	} else if (bind_as_group(fd, &sun, gid)) {
		goto fail;
	}
	if (g && !node_group_ok(path, gid)) {
		log_err("control socket %s: it was not made with group %s and mode 0660 (a set-group-ID directory gives its own group, a default ACL its own mode); use a directory with neither",
			path, group);
		unlink(path);
		close(fd);
		return -1;
	}
	if (listen(fd, 16))
		goto fail;
	return fd;
fail:
	log_err("control socket %s: %s%s", path, strerror(errno),
		dir_hint(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/**
 * control_same() - is a handed-over control socket at this path
 * @fd:		the socket
 * @path:	--control or --control-ro
 *
 * Return: true if it is bound there.
 */
static bool control_same(int fd, const char *path)
{
	struct sockaddr_un a;
	socklen_t len = sizeof(a);

	return !getsockname(fd, (struct sockaddr *)&a, &len) &&
	       a.sun_family == AF_UNIX &&
	       len > offsetof(struct sockaddr_un, sun_path) &&
	       !strncmp(a.sun_path, path, sizeof(a.sun_path));
}

/**
 * sock_open() - open one control socket, if its path is set
 * @px:		the process
 * @s:		the socket
 * @path:	its path, "" for none
 * @group:	its group, "" for none
 * @handed:	the socket a handover brought for it (-1 if none), taken if
 *		it is still bound to @path, closed if not
 *
 * Return: 0, or -1 after logging why.
 */
static int sock_open(struct proxy *px, struct ctl_sock *s, const char *path,
		     const char *group, int handed)
{
	if (!*path || strlen(path) >= sizeof(s->path)) {
		if (handed >= 0)
			close(handed);
		if (*path)
			log_err("control socket %s: the path is longer than %zu bytes",
				path, sizeof(s->path) - 1);
		return *path ? -1 : 0;
	}
	/* After a handover, the old process's socket, at the same path. */
	s->fd = handed;
	if (s->fd >= 0 && !control_same(s->fd, path)) {
		close(s->fd); /* the path changed: bind it anew */
		s->fd = -1;
	}
	if (s->fd < 0)
		s->fd = control_bind(path, group);
	if (s->fd < 0)
		return -1;
	memcpy(s->path, path, strlen(path) + 1);
	ev_io_init(&s->w, on_control_accept, s->fd, EV_READ);
	s->w.data = px;
	ev_io_start(px->loop, &s->w);
	log_info("control socket at %s (mode %s, level %s)", s->path,
		 *group ? "0660" : "0600",
		 s->level == CONTROL_ADMIN ? "admin" : "view");
	return 0;
}

/**
 * control_start() - open --control and --control-ro, those that are set
 * @px:		the process, before the workers start and before --user
 * @handed:	the sockets a handover brought, by level (-1 for none)
 *
 * Return: 0, or -1 after logging why.
 */
int control_start(struct proxy *px, const int handed[CONTROL_NLEVELS])
{
	const struct options *o = px->opt;

	if (*o->control && !strcmp(o->control, o->control_ro)) {
		for (int i = 0; i < CONTROL_NLEVELS; i++)
			if (handed[i] >= 0)
				close(handed[i]);
		log_err("control socket %s: --control and --control-ro name the same path; the read-only socket needs one of its own",
			o->control);
		return -1;
	}
	if (sock_open(px, &socks[CONTROL_ADMIN], o->control, o->control_group,
		      handed[CONTROL_ADMIN])) {
		if (handed[CONTROL_VIEW] >= 0)
			close(handed[CONTROL_VIEW]);
		return -1;
	}
	return sock_open(px, &socks[CONTROL_VIEW], o->control_ro,
			 o->control_ro_group, handed[CONTROL_VIEW]);
}

/**
 * control_stop() - close the control sockets and their clients
 * @px:	the process
 */
void control_stop(struct proxy *px)
{
	for (int i = 0; i < CONTROL_NLEVELS; i++) {
		struct ctl_sock *s = &socks[i];

		while (s->clients)
			client_end(s->clients);
		if (s->fd < 0)
			continue;
		ev_io_stop(px->loop, &s->w);
		close(s->fd);
		s->fd = -1;
		if (s->path[0])
			unlink(s->path); /* under --user it may fail: the next
					  * start replaces the stale name */
	}
}

/**
 * control_socket() - a control socket, for a handover
 * @level:	which
 *
 * Return: it, or -1 if it is not set.
 */
int control_socket(enum control_level level)
{
	return socks[level].fd;
}

/**
 * control_forget() - the next process serves the control sockets now
 * @px:	the process
 *
 * As control_stop(), but the paths are left alone: they name the sockets
 * the next process took over.
 */
void control_forget(struct proxy *px)
{
	for (int i = 0; i < CONTROL_NLEVELS; i++)
		socks[i].path[0] = '\0';
	control_stop(px);
}
