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
unsigned handover_listener_fds(const char *name, const struct endpoint *ep,
			       int *fds, unsigned nworkers);
int handover_fd(bool control);
size_t handover_fds_held(void);
bool handover_taking(void);

#endif /* SMBSPLICE_HANDOVER_H */
