/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_NGQ_CLIENT_H
#define SMBSPLICE_NGQ_CLIENT_H

/* ngq_client.h - the QUIC library's client side behind one door: what a
 * quic: backend's connection needs beyond the listener's is in
 * ngq_client.c. Its connection is ngq.h's struct ngq_conn, in the client
 * role: once ngqc_connect() made it, it is read, written, timed and freed
 * by ngq.h's calls (ngq_read(), ngq_write() and the rest), the ones a
 * listener's connection uses. Nothing here knows of the event loop or of
 * connections; qdial.c drives it with datagrams, times and bytes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "quic/ngq.h"

struct sockaddr;
struct ngqc_creds;
struct ngq_conn;

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
int ngqc_connect(struct ngq_conn **out, const struct ngqc_dial *d,
		 struct ngqc_creds *cr, const struct ngq_path *path,
		 const struct ngq_cb *cb, void *ud, uint64_t now);
void ngqc_why(struct ngq_conn *c, char *out, size_t outlen);

#endif /* SMBSPLICE_NGQ_CLIENT_H */
