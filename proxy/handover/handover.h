/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_HANDOVER_H
#define SMBSPLICE_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>

#include "handover/handover-t.h"

struct endpoint;
struct proxy;

int handover_init(struct proxy *px, void (*done)(struct proxy *px));
void handover_start(struct proxy *px);
void handover_stop(struct proxy *px);
bool handover_incoming(void);
int handover_receive(struct proxy *px);
int handover_adopt(struct proxy *px);
void handover_refuse(struct proxy *px, const char *why);
int handover_quic_map(const char *name, const struct endpoint *ep);
unsigned handover_listener_fds(const char *name, const struct endpoint *ep,
			       int *fds, unsigned nworkers);
/* The process's sockets a handover carries besides the listeners'. */
enum handed_sock {
	HANDED_METRICS,	   /* --stats */
	HANDED_CONTROL,	   /* --control */
	HANDED_CONTROL_RO, /* --control-ro */
};

int handover_fd(enum handed_sock which);
size_t handover_fds_held(void);
bool handover_taking(void);

#endif /* SMBSPLICE_HANDOVER_H */
