/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_NGQ_CLIENT_H
#define SMBSPLICE_NGQ_CLIENT_H

/* ngq_client.h - the QUIC library's client side behind one door: every
 * ngtcp2 and GnuTLS call of a quic: backend is in ngq_client.c, as the
 * listener's are in ngq.c (whose types it shares: struct ngq_cb,
 * struct ngq_path, enum ngq_state). Nothing here knows of the event loop
 * or of connections; qdial.c drives it with datagrams, times and bytes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "quic/ngq.h"

struct sockaddr;
struct ngqc_creds;
struct ngqc_conn;

/**
 * struct ngqc_dial - what a client connection dials, and how it checks
 *		      the server
 * @name:	the server's name: SNI (unless an address) and the name its
 *		certificate must carry
 * @pinned:	check the certificate by @pin instead of a CA and @name
 * @pin:	its SHA-256
 * @cc:		congestion control: reno, cubic (or empty), bbr, bbr2
 * @window:	bytes the server may send ahead of what ngqc_consumed()
 *		gave back
 */
struct ngqc_dial {
	const char *name;
	bool pinned;
	uint8_t pin[32];
	const char *cc;
	size_t window;
};

int ngqc_pin_parse(const char *text, uint8_t *pin);
int ngqc_creds_load(const char *ca, const char *cert, const char *key,
		    bool pinned, struct ngqc_creds **out, char *err,
		    size_t errlen);
void ngqc_creds_free(struct ngqc_creds *cr);
int ngqc_connect(struct ngqc_conn **out, const struct ngqc_dial *d,
		 struct ngqc_creds *cr, const struct ngq_path *path,
		 const struct ngq_cb *cb, void *ud, uint64_t now);
enum ngq_state ngqc_read(struct ngqc_conn *c, const struct ngq_path *path,
			 const uint8_t *pkt, size_t len, uint64_t now);
ssize_t ngqc_write(struct ngqc_conn *c, uint8_t *buf, size_t cap,
		   const struct iovec *iov, int iovcnt, bool fin,
		   ssize_t *taken, uint64_t now);
void ngqc_sent(struct ngqc_conn *c, uint64_t now);
ssize_t ngqc_close_pkt(struct ngqc_conn *c, uint8_t *buf, size_t cap,
		       uint64_t now);
uint64_t ngqc_expiry(struct ngqc_conn *c);
enum ngq_state ngqc_timeout(struct ngqc_conn *c, uint64_t now);
void ngqc_consumed(struct ngqc_conn *c, size_t n);
void ngqc_reset(struct ngqc_conn *c);
void ngqc_why(struct ngqc_conn *c, char *out, size_t outlen);
void ngqc_free(struct ngqc_conn *c);

#endif /* SMBSPLICE_NGQ_CLIENT_H */
