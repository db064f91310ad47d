// SPDX-License-Identifier: GPL-2.0-or-later
/* handover_in.c - the new process's side of a live handover
 *
 * Theory of operation: started by an old smbsplice on its SIGUSR2
 * (handover_out.c has the whole protocol), with descriptor
 * SMBSPLICE_HANDOVER_FD open on a socket to it, this process
 *
 *   - says HELLO as soon as its configuration is read, and receives the
 *     image and its descriptors (handover_receive()): from here the old
 *     process is paused, and every step counts against the pause;
 *   - checks the image whole (image.c) before anything uses it;
 *   - starts as usual, but its listeners, its --stats, its --control and
 *     its --control-ro sockets are the old process's, not bound again:
 *     the listeners take theirs through struct proxy's @take_handed
 *     (handover_listener_fds()), main.c hands --stats and both control
 *     sockets theirs (handover_fd()); nothing outside handover/ sees the
 *     image;
 *   - rebuilds every connection in the worker of its number, carries the
 *     counters over and numbers new connections on, says TAKEN, and waits
 *     for GO (handover_adopt()); only then does it start a watcher.
 *
 * Until GO, nothing here has read or written a socket the old process
 * serves. So whatever fails before it ends this process with _exit()
 * (handover_refuse()): no atexit handler, no destructor, no control
 * socket unlinked, no reset sent; the old process, seeing the FAIL or the
 * hang-up, forwards on.
 *
 * Descriptors that no listener or connection took are closed once the
 * connections are rebuilt: they were the old process's sockets of
 * listeners the configuration no longer has.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn/connhost.h"
#include "handover/connmove.h"
#include "handover/handover.h"
#include "handover/howire.h"
#include "net/listener.h"
#include "common/log.h"
#include "core/proxy.h"
#include "worker/worker.h"

/* What the old process sent; only the main thread touches it. */
static struct image_in hin = { .sock = -1 };

/**
 * handover_refuse() - the take-over failed: tell the old process, leave
 * @px:		the process
 * @why:	what failed, for both logs
 */
void handover_refuse(struct proxy *px, const char *why)
{
	log_err("handover: cannot take over from the old process: %s", why);
	howire_send_fail(hin.sock, why, HO_STEP_TIMEOUT_MS);
	log_stop();
	_exit(1);
}

/**
 * handover_incoming() - was this process started by a handover?
 *
 * Asked before the configuration is read: the process that hands over
 * may hold sockets systemd passed it (socket activation), which come
 * with the image instead of LISTEN_FDS, and a listener with no listen
 * address is then as valid here as it was there.
 *
 * Return: true until handover_receive() has run.
 */
bool handover_incoming(void)
{
	return getenv(HO_ENV) != NULL;
}

/**
 * handover_receive() - HELLO, then the image and its descriptors
 * @px:	the process, its configuration read, nothing bound yet
 *
 * Return: 0 (also when this process was not started by a handover), or
 * -1 if the environment names no usable socket; other failures do not
 * return.
 */
int handover_receive(struct proxy *px)
{
	struct image_in *hi = &hin;
	const char *env = getenv(HO_ENV);
	uint32_t hello[2] = { IMG_VERSION, (uint32_t)getpid() };
	char err[320];

	hi->sock = -1;
	if (!env)
		return 0;
	hi->sock = atoi(env);
	unsetenv(HO_ENV); /* not for a handover of our own later */
	if (hi->sock < 3 || fcntl(hi->sock, F_SETFD, FD_CLOEXEC)) {
		log_err("%s=%s names no open socket", HO_ENV, env);
		hi->sock = -1;
		return -1;
	}
	if (howire_send(hi->sock, HO_HELLO, hello, sizeof(hello),
			HO_STEP_TIMEOUT_MS)) {
		log_err("handover: the old process went away before HELLO (%s)",
			strerror(errno));
		_exit(1);
	}
	if (howire_recv_image(hi->sock, &hi->bytes, &hi->len, &hi->fds,
			      &hi->nfds, HO_STEP_TIMEOUT_MS, err, sizeof(err)))
		handover_refuse(px, err);
	if (image_decode(hi->bytes, hi->len, hi->nfds, &hi->img, err,
			 sizeof(err)))
		handover_refuse(px, err);
	/* Unless told otherwise, go on with the old process's workers: its
	 * connections are numbered by them, and the CPUs or the default may
	 * have changed since it started. */
	if (!px->opt->workers)
		px->nworkers = hi->img.proc.nworkers;
	if (hi->img.proc.nworkers != px->nworkers) {
		snprintf(
			err, sizeof(err),
			"the old process has %u workers and this one %u (set --workers)",
			hi->img.proc.nworkers, px->nworkers);
		handover_refuse(px, err);
	}
	return 0;
}

/**
 * handed_match() - is a socket from the image one for this listener?
 * @r:		its listener record
 * @name:	the listener's name
 * @ep:		its listen address; none under socket activation
 * @fds:	its sockets so far, one per worker, -1 where none yet
 * @nworkers:	how many workers
 * @by_name:	match by name (and address), or by address alone
 *
 * Return: true if it is a listening socket, of this listener, for a
 * worker that has none yet.
 */
static bool handed_match(const struct img_listener *r, const char *name,
			 const struct endpoint *ep, const int *fds,
			 unsigned nworkers, bool by_name)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	int fd = hin.fds[r->fd], on = 0;
	socklen_t olen = sizeof(on);

	if (fd < 0 || r->worker >= nworkers || fds[r->worker] >= 0 ||
	    (by_name && strcmp(r->name, name)) || (!by_name && !ep->len) ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) || !on ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		return false;
	return !ep->len || (len == ep->len && !memcmp(&a, &ep->addr, len));
}

/**
 * handover_listener_fds() - claim the sockets a handover brought for a
 *			     listener
 * @name:	the listener's name
 * @ep:		its listen address; none under socket activation
 * @fds:	its sockets, one per worker, all -1; set where one is found
 * @nworkers:	how many workers
 *
 * Matched by name and address, or, for a listener renamed, by address
 * alone: its sockets must not be bound again beside the old ones, which
 * would be closed with clients in their queue. A listener whose address
 * changed binds anew; the old sockets left over refuse the handover
 * (listeners_all_taken()). The listener opens through this as
 * struct proxy's @take_handed, a seam: net/ ranks below handover/.
 *
 * Return: how many sockets it got.
 */
unsigned handover_listener_fds(const char *name, const struct endpoint *ep,
			       int *fds, unsigned nworkers)
{
	unsigned got = 0;

	for (int pass = 0; pass < 2 && !got; pass++)
		for (unsigned i = 0; hin.sock >= 0 && i < hin.img.nls; i++) {
			const struct img_listener *r = &hin.img.ls[i];

			if (!handed_match(r, name, ep, fds, nworkers,
					  pass == 0))
				continue;
			fds[r->worker] = image_in_take_fd(&hin, r->fd);
			got++;
		}
	return got;
}

/**
 * handover_quic_map() - claim the steering map a handover brought for a
 *			 QUIC listener
 * @name:	the listener's name
 * @ep:		its listen address
 *
 * Matched by name and configured address: the old process's sockets and
 * connections stay where they are, and this process's sockets join their
 * group through the map (net/listener.c's quic_join()). Struct proxy's
 * @take_quic_map, a seam as @take_handed is.
 *
 * Return: the map's descriptor, or -1 if none came for it.
 */
int handover_quic_map(const char *name, const struct endpoint *ep)
{
	for (unsigned i = 0; hin.sock >= 0 && i < hin.img.nquic; i++) {
		const struct img_quic *q = &hin.img.quic[i];

		if (!strcmp(q->name, name) && q->addrlen == ep->len &&
		    ep->len <= sizeof(q->addr) &&
		    !memcmp(q->addr, &ep->addr, ep->len) &&
		    hin.fds[q->map_fd] >= 0)
			return image_in_take_fd(&hin, q->map_fd);
	}
	return -1;
}

/**
 * handover_fd() - take a control or metrics socket the image brought
 * @which:	which
 *
 * Return: the socket, or -1 if none came.
 */
int handover_fd(enum handed_sock which)
{
	const struct img_process *pr = &hin.img.proc;

	if (hin.sock < 0)
		return -1;
	return image_in_take_fd(&hin, which == HANDED_CONTROL ? pr->control_fd
				      : which == HANDED_CONTROL_RO
					      ? pr->control_ro_fd
					      : pr->metrics_fd);
}

/**
 * handover_fds_held() - descriptors the image brought and no one took yet
 *
 * Return: how many; the process's descriptor budget does not count them,
 * as the listeners will take or close them.
 */
size_t handover_fds_held(void)
{
	return image_in_held(&hin);
}

/**
 * handover_taking() - is this process taking over from another?
 *
 * Return: true from handover_receive() until handover_adopt() is done.
 */
bool handover_taking(void)
{
	return hin.sock >= 0;
}

/**
 * adopt_counters() - go on counting where the old process was
 * @px:		the process
 * @err:	one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int adopt_counters(struct proxy *px, char *err, size_t errlen)
{
	const struct image *img = &hin.img;
	struct listener *l;

	if (img->proc.lstats_words !=
	    sizeof(struct lstats) / sizeof(uint64_t)) {
		snprintf(err, errlen,
			 "the old process counts %u counters, this one %zu",
			 img->proc.lstats_words,
			 sizeof(struct lstats) / sizeof(uint64_t));
		return -1;
	}
	for (unsigned i = 0; i < img->nst; i++)
		if ((l = listener_named(px, img->st[i].s.name)))
			listener_restore_counters(l, img->st[i].s.worker,
						  img->st[i].words);
	conn_host_count_accepted(&px->workers[0].host, img->proc.accepted);
	conn_host_ids_from(img->proc.last_id);
	return 0;
}

/**
 * adopt_conns() - rebuild every connection in its worker
 * @px:		the process, its workers made, none running
 * @err:	one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int adopt_conns(struct proxy *px, char *err, size_t errlen)
{
	const struct image *img = &hin.img;

	for (unsigned i = 0; i < img->nconns; i++) {
		const struct img_conn_view *v = &img->conns[i];
		struct listener *l = listener_named(px, v->c.listener);

		if (!l) {
			snprintf(
				err, errlen,
				"connection %llu belongs to listener %s, which the configuration no longer has (stop the old process to apply it)",
				(unsigned long long)v->c.id, v->c.listener);
			return -1;
		}
		if (connmove_adopt(&px->workers[v->c.worker].host, l, v, &hin,
				   err, errlen))
			return -1;
	}
	return 0;
}

/**
 * listeners_all_taken() - did every listening socket find its listener
 * @px:		the process, its listeners made
 * @err:	one line saying what is wrong
 * @errlen:	its size
 *
 * A socket no listener took would be closed with the clients in its
 * queue, each reset: direct TCP would have served them. A reload drains
 * such a socket first; a handover cannot, so it is refused.
 *
 * Return: 0, or -1 with @err set.
 */
static int listeners_all_taken(struct proxy *px, char *err, size_t errlen)
{
	const struct image_in *hi = &hin;

	for (unsigned i = 0; i < hi->img.nls; i++)
		if (hi->fds[hi->img.ls[i].fd] >= 0) {
			snprintf(
				err, errlen,
				"listener %s is not in the configuration, or its address changed: apply that with SIGHUP to the old process first, then hand over",
				hi->img.ls[i].name);
			return -1;
		}
	return 0;
}

/**
 * client_side_again() - set the configured socket options on the
 *			 listening sockets taken over
 * @px:	the process, past GO
 *
 * Not before GO: until then the sockets are the old process's, which
 * goes on with its own settings if the handover fails. The workers do it
 * (accept_set_cfg()) once they run, as for a reload.
 */
static void client_side_again(struct proxy *px)
{
	for (struct listener *l = px->listeners; l; l = l->next) {
		if (!listener_is(l, LISTENER_HANDED))
			continue;
		for (unsigned i = 0; i < px->nworkers; i++) {
			listener_cfg_get(l->cfg);
			if (worker_run(&px->workers[i],
				       &(struct worker_cmd){
					       .ops = &worker_cmd_update,
					       .l = l,
					       .cfg = l->cfg },
				       WORKER_CMD_NOWAIT))
				listener_cfg_put(l->cfg);
		}
	}
}

/**
 * handover_adopt() - steps 4 and 6: take every connection, say TAKEN,
 *		      wait for GO
 * @px:	the process, started but for its workers' threads
 *
 * Return: 0 (also when this process was not started by a handover);
 * failures do not return.
 */
int handover_adopt(struct proxy *px)
{
	struct image_in *hi = &hin;
	uint32_t n, type, len;
	unsigned nls = 0;
	char err[320];

	if (hi->sock < 0)
		return 0;
	n = hi->img.nconns;
	for (struct listener *l = px->listeners; l; l = l->next)
		nls += listener_is(l, LISTENER_HANDED);
	if (listeners_all_taken(px, err, sizeof(err)) ||
	    adopt_counters(px, err, sizeof(err)) ||
	    adopt_conns(px, err, sizeof(err)))
		handover_refuse(px, err);
	if (howire_send(hi->sock, HO_TAKEN, &n, sizeof(n),
			HO_STEP_TIMEOUT_MS) ||
	    howire_recv(hi->sock, &type, NULL, 0, &len, -1) || type != HO_GO) {
		/* The old process gave up, and may be forwarding again. GO
		 * is waited for without a bound: the old process ends this
		 * with GO or a hang-up. */
		log_err("handover: the old process did not say GO; leaving without touching its connections");
		log_stop();
		_exit(1);
	}
	for (size_t i = 0; i < hi->nfds; i++)
		if (hi->fds[i] >= 0)
			close(hi->fds[i]);
	client_side_again(px);
	for (unsigned i = 0; i < px->nworkers; i++)
		connmove_resume(&px->workers[i].host);
	log_info("handover: took %u connections and %u listeners from pid %d",
		 n, nls, (int)hi->img.proc.pid);
	close(hi->sock);
	hi->sock = -1;
	image_free(&hi->img);
	free(hi->bytes);
	free(hi->fds);
	hi->bytes = NULL;
	hi->fds = NULL;
	return 0;
}
