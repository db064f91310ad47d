/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ACCEPT_H
#define SMBSPLICE_ACCEPT_H

#include <ev.h>
#include <stdbool.h>

struct lcfg;
struct listener;
struct worker;

/**
 * struct wlistener - one listener as one worker accepts on it
 * @w:		the worker
 * @l:		the listener (a reference)
 * @cfg:	the settings new connections start with (a reference)
 * @fd:		the worker's listening socket for it
 * @io:		readable watcher on @fd
 * @pause:	restarts @io after a pause for descriptors
 * @warned:	when the last pause was logged
 * @next:	the worker's list
 */
struct wlistener {
	struct worker *w;
	struct listener *l;
	struct lcfg *cfg;
	int fd;
	ev_io io;
	ev_timer pause;
	ev_tstamp warned;
	struct wlistener *next;
};

struct wlistener *accept_add(struct worker *w, struct listener *l, int fd);
void accept_set_cfg(struct wlistener *wl, struct lcfg *cfg);
void accept_remove(struct wlistener *wl, bool drain);
void accept_pause_all(struct worker *w, const char *why);
bool accept_out_of_resources(int err);
void accept_pause_init(ev_timer *t, ev_io *w);
void accept_backoff(struct ev_loop *loop, ev_timer *t);

#endif /* SMBSPLICE_ACCEPT_H */
