/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_QUIC_H
#define SMBSPLICE_QUIC_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct acceptor;
struct listen_opts;
struct listener;
struct qlistener;
struct quic_figures;

/**
 * struct quic_host - a worker's QUIC listeners
 * @acc:	the worker's acceptor: its process, loop, number and where
 *		streams become connections (accept_ops)
 * @list:	the QUIC listeners it serves
 * @drained:	called when the last draining listener has gone (its last
 *		connection ended): the worker's drain may be over
 * @ctx:	its argument
 */
struct quic_host {
	struct acceptor *acc;
	struct qlistener *list;
	void (*drained)(void *ctx);
	void *ctx;
};

void quic_host_init(struct quic_host *qh, struct acceptor *acc,
		    void (*drained)(void *ctx), void *ctx);
bool quic_add(struct quic_host *qh, struct listener *l, int fd);
struct qlistener *quic_find(struct quic_host *qh, const struct listener *l);
struct lcfg;
void quic_set_cfg(struct qlistener *ql, struct lcfg *cfg);
void quic_remove(struct qlistener *ql);
void quic_drain(struct qlistener *ql);
void quic_hold(struct qlistener *ql, bool hold);
void quic_drain_all(struct quic_host *qh);
void quic_remove_all(struct quic_host *qh);
int quic_check_listener(const struct listen_opts *o, char *err, size_t errlen);
bool quic_built(void);
bool quic_figures(struct quic_host *qh, uint64_t id, struct quic_figures *out);

#endif /* SMBSPLICE_QUIC_H */
