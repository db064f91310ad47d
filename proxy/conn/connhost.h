/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNHOST_H
#define SMBSPLICE_CONNHOST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conn/conn-t.h"

void conn_host_sits_in(struct conn_host *h, ino_t netns_ino);
bool conn_host_empty(const struct conn_host *h);
uint64_t conn_host_active(const struct conn_host *h);
uint64_t conn_host_accepted(const struct conn_host *h);
uint64_t conn_host_pipe_stalls(const struct conn_host *h);
bool conn_host_reserve(struct conn_host *h);
void conn_host_unreserve(struct conn_host *h);
void conn_host_reserve_force(struct conn_host *h);
uint64_t conn_host_new_id(void);
uint64_t conn_host_last_id(void);
void conn_host_ids_from(uint64_t last);
void conn_host_arrived(unsigned *arrival);
void conn_host_link(struct conn_host *h, struct conn *c);
void conn_host_count_accepted(struct conn_host *h, uint64_t n);

#endif /* SMBSPLICE_CONNHOST_H */
