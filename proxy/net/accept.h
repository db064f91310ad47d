/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ACCEPT_H
#define SMBSPLICE_ACCEPT_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

struct conn_host;
struct lcfg;
struct listener;
struct proxy;
struct sockaddr;
struct source_key;
struct wlistener;

/**
 * struct accept_ops - where accepted clients go: the seam between taking
 *		       a transport's clients and serving them
 * @reserve:	take from the budget the descriptors a connection needs;
 *		false if it is spent (accepting pauses)
 * @unreserve:	give them back: the client was turned away, or no client
 *		came
 * @place:	make an admitted TCP client a connection, in this worker or
 *		in one that serves fewer (worker/balance.c), which owns its
 *		socket
 * @open:	make an admitted client's socket a connection, which owns it;
 *		returns the connection's id (0 if it was refused), by
 *		which a QUIC stream finds its connection again (ctl's
 *		figures)
 *
 * Today a connection's ends are TCP sockets and conn/ serves them
 * (worker.c binds these to conn_host_reserve(), conn_host_unreserve()
 * and conn_open(), through worker_open() for the id): net/ ranks below
 * conn/ and cannot call it. A QUIC
 * transport enters here: it hands each stream it accepts to the same
 * three calls.
 */
struct accept_ops {
	bool (*reserve)(struct conn_host *h);
	void (*unreserve)(struct conn_host *h);
	void (*place)(struct conn_host *h, struct listener *l, struct lcfg *cfg,
		      int fd, const struct sockaddr *peer,
		      const struct source_key *key);
	uint64_t (*open)(struct conn_host *h, struct listener *l,
			 struct lcfg *cfg, int fd, const struct sockaddr *peer,
			 const struct source_key *key);
};

/**
 * struct acceptor - what one worker accepts on
 * @px:		the process
 * @loop:	the worker's loop
 * @id:		the worker's number
 * @host:	where accepted clients become connections
 * @ops:	how they become connections there
 * @list:	the worker's listeners
 * @warned:	when the last pause for descriptors was logged
 *
 * Embedded in the worker; only accept.c writes it.
 */
struct acceptor {
	struct proxy *px;
	struct ev_loop *loop;
	unsigned id;
	struct conn_host *host;
	const struct accept_ops *ops;
	struct wlistener *list;
	ev_tstamp warned;
};

/**
 * struct wlistener - one listener as one worker accepts on it
 * @a:		the worker's acceptor
 * @l:		the listener (a reference)
 * @cfg:	the settings new connections start with (a reference)
 * @fd:		the worker's listening socket for it
 * @io:		readable watcher on @fd
 * @pause:	restarts @io after a pause for descriptors
 * @warned:	when the last pause was logged
 * @held:	the control socket drained it: not listening until resumed
 * @next:	the worker's list
 */
struct wlistener {
	struct acceptor *a;
	struct listener *l;
	struct lcfg *cfg;
	int fd;
	ev_io io;
	ev_timer pause;
	ev_tstamp warned;
	bool held;
	struct wlistener *next;
};

void accept_init(struct acceptor *a, struct proxy *px, struct ev_loop *loop,
		 unsigned id, struct conn_host *host,
		 const struct accept_ops *ops);
struct wlistener *accept_add(struct acceptor *a, struct listener *l, int fd);
struct wlistener *accept_find(struct acceptor *a, const struct listener *l);
void accept_set_cfg(struct wlistener *wl, struct lcfg *cfg);
void accept_remove(struct wlistener *wl, bool drain);
void accept_remove_all(struct acceptor *a, bool drain);
int accept_hold(struct wlistener *wl, bool hold);
void accept_pause_all(struct acceptor *a, const char *why);
bool accept_out_of_resources(int err);
void accept_pause_init(ev_timer *t, ev_io *w);
void accept_backoff(struct ev_loop *loop, ev_timer *t);
void accept_pause(struct acceptor *a);
void accept_resume(struct acceptor *a);

#endif /* SMBSPLICE_ACCEPT_H */
