/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNCLOCK_H
#define SMBSPLICE_CONNCLOCK_H

#include "conn/conn-t.h"

void conn_note_auth(struct conn *c);
void conn_arm_open(struct conn *c);
void conn_open_timer(struct conn *c);

#endif /* SMBSPLICE_CONNCLOCK_H */
