/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_LISTENER_H
#define SMBSPLICE_LISTENER_H

#include <ev.h>
#include <stdbool.h>

struct worker;

int listener_open(struct worker *w);
void listener_start(struct worker *w);
void listener_stop(struct worker *w);
void listener_pause(struct worker *w, const char *why);
bool accept_out_of_resources(int err);
void accept_pause_init(ev_timer *t, ev_io *w);
void accept_backoff(struct ev_loop *loop, ev_timer *t);

#endif /* SMBSPLICE_LISTENER_H */
