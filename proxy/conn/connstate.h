/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNSTATE_H
#define SMBSPLICE_CONNSTATE_H

#include "conn/conn-t.h"

void conn_set_state(struct conn *c, enum conn_state next);
void conn_end(struct conn *c, enum conn_end end, const char *why);
void conn_free(struct conn *c);

/* After the backend socket could not be created for want of descriptors:
 * how long to wait before the next try (and the accept pause). */
#define CONN_CONNECT_RETRY 0.1
enum conn_end conn_end_for_errno(int err);
const char *conn_state_text(enum conn_state s);
void conn_rearm(struct conn *c, ev_tstamp after);

/* In conn.c, for its rooms (connmove.c). */
void conn_dirs_init(struct conn *c);
void conn_watchers_init(struct conn *c);

#endif /* SMBSPLICE_CONNSTATE_H */
