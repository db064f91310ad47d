// SPDX-License-Identifier: GPL-2.0-or-later
/* control.c - the --control socket: conns, conn, listeners, drain,
 *	       resume, kill and top for a local administrator
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
 * struct control - the socket and its clients (one per process)
 * @fd:		the listening socket, -1 when there is none
 * @w:		its watcher
 * @path:	where it is
 * @clients:	those being served, oldest first
 * @n:		how many
 */
static struct control {
	int fd;
	ev_io w;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ctl_client *clients;
	unsigned n;
} ctl = { .fd = -1 };

/**
 * client_end() - close and free a client
 * @c:	the client
 */
static void client_end(struct ctl_client *c)
{
	struct ev_loop *loop = c->px->loop;

	ev_io_stop(loop, &c->io);
	ev_timer_stop(loop, &c->timer);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		ctl.clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c->out.p);
	free(c);
	ctl.n--;
	if (ctl.fd >= 0 && !ev_is_active(&ctl.w))
		ev_io_start(loop, &ctl.w); /* a slot is free for the backlog */
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
		controlcmd_run(c->px, c->line, c->who, &c->out);
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
 * @fd:	its socket
 */
static void client_new(struct proxy *px, int fd)
{
	struct ctl_client *c = calloc(1, sizeof(*c)), **link;
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (!c) {
		close(fd);
		return;
	}
	c->px = px;
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
	for (link = &ctl.clients; *link; link = &(*link)->next)
		c->prev = *link;
	*link = c;
	ctl.n++;
}

/**
 * make_room() - at the cap, close the oldest client still silent
 *
 * Return: true if a slot is free now.
 */
static bool make_room(void)
{
	if (ctl.n < CTL_MAX_CLIENTS)
		return true;
	for (struct ctl_client *c = ctl.clients; c; c = c->next)
		if (!c->answering) {
			client_end(c);
			return true;
		}
	return false;
}

/**
 * on_control_accept() - take the clients waiting
 * @loop:	the main loop
 * @w:		&ctl.w
 * @revents:	unused
 */
static void on_control_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proxy *px = w->data;
	int fd;

	(void)revents;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		if (!make_room()) {
			/* Every slot is answering: the next waits in the
			 * backlog until one is done. */
			ev_io_stop(loop, &ctl.w);
			return;
		}
		fd = accept4(ctl.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_rate(LOG_LVL_WARN,
					 "control socket: accept: %s",
					 strerror(errno));
			return;
		}
		client_new(px, fd);
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
 * setfsgid() is per thread, and no other thread runs yet.
 *
 * Return: bind()'s result, errno kept.
 */
static int bind_as_group(int fd, const struct sockaddr_un *sun, gid_t gid)
{
	bool grp = gid != (gid_t)-1;
	mode_t old = umask(grp ? 0117 : 0177);
	int prev = grp ? setfsgid(gid) : -1;
	int r, e;

	r = bind(fd, (const struct sockaddr *)sun, sizeof(*sun));
	e = errno;
	if (grp)
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
 * control_bind() - make the socket at @path, private from its birth
 * @o:	the settings: --control and --control-group
 *
 * Return: the listening socket, or -1 after logging why.
 */
static int control_bind(const struct options *o)
{
	struct sockaddr_un sun;
	struct group *g = NULL;
	gid_t gid;
	int fd;

	if (*o->control_group && !(g = getgrnam(o->control_group))) {
		log_err("control socket: no group named %s", o->control_group);
		return -1;
	}
	gid = g ? g->gr_gid : (gid_t)-1;
	if (clear_stale(o->control))
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	sun_of(&sun, o->control);
	/* Only root's path-based chown() could be led astray. */
	if (g && geteuid()) {
		if (bind_as_group(fd, &sun, (gid_t)-1) ||
		    give_group_unprivileged(o->control, gid))
			goto fail;
	} else if (bind_as_group(fd, &sun, gid)) {
		goto fail;
	}
	if (g && !node_group_ok(o->control, gid)) {
		log_err("control socket %s: it was not made with group %s and mode 0660 (a set-group-ID directory gives its own group, a default ACL its own mode); use a directory with neither",
			o->control, o->control_group);
		unlink(o->control);
		close(fd);
		return -1;
	}
	if (listen(fd, 16))
		goto fail;
	return fd;
fail:
	log_err("control socket %s: %s%s", o->control, strerror(errno),
		dir_hint(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/**
 * control_same() - is a handed-over control socket at this path
 * @fd:		the socket
 * @path:	--control
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
 * control_start() - open --control, if it is set
 * @px:		the process, before the workers start and before --user
 * @handed:	the socket a handover brought (-1 if none), taken if it is
 *		still bound to --control's path, closed if not
 *
 * Return: 0, or -1 after logging why.
 */
int control_start(struct proxy *px, int handed)
{
	const struct options *o = px->opt;

	if (!*o->control) {
		if (handed >= 0)
			close(handed);
		return 0;
	}
	if (strlen(o->control) >= sizeof(ctl.path)) {
		if (handed >= 0)
			close(handed);
		log_err("control socket %s: the path is longer than %zu bytes",
			o->control, sizeof(ctl.path) - 1);
		return -1;
	}
	/* After a handover, the old process's socket, at the same path. */
	ctl.fd = handed;
	if (ctl.fd >= 0 && !control_same(ctl.fd, o->control)) {
		close(ctl.fd); /* --control changed: bind it anew */
		ctl.fd = -1;
	}
	if (ctl.fd < 0)
		ctl.fd = control_bind(o);
	if (ctl.fd < 0)
		return -1;
	memcpy(ctl.path, o->control, strlen(o->control) + 1);
	ev_io_init(&ctl.w, on_control_accept, ctl.fd, EV_READ);
	ctl.w.data = px;
	ev_io_start(px->loop, &ctl.w);
	log_info("control socket at %s (mode %s)", ctl.path,
		 *o->control_group ? "0660" : "0600");
	return 0;
}

/**
 * control_stop() - close the control socket and its clients
 * @px:	the process
 */
void control_stop(struct proxy *px)
{
	while (ctl.clients)
		client_end(ctl.clients);
	if (ctl.fd < 0)
		return;
	ev_io_stop(px->loop, &ctl.w);
	close(ctl.fd);
	ctl.fd = -1;
	if (ctl.path[0])
		unlink(ctl.path); /* under --user it may fail: the next start
				   * replaces the stale name */
}

/**
 * control_socket() - the control socket, for a handover
 *
 * Return: it, or -1 without --control.
 */
int control_socket(void)
{
	return ctl.fd;
}

/**
 * control_forget() - the next process serves the control socket now
 * @px:	the process
 *
 * As control_stop(), but the path is left alone: it names the socket the
 * next process took over.
 */
void control_forget(struct proxy *px)
{
	ctl.path[0] = '\0';
	control_stop(px);
}
