/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_NGQ_H
#define SMBSPLICE_NGQ_H

/* ngq.h - the QUIC library behind one door: every ngtcp2 and GnuTLS call
 * is in ngq*.c, so that moving to ngtcp2 1.x (whose API changed) is those
 * files. A struct ngq_conn is a listener's connection (ngq_accept()) or a
 * quic: backend's (ngq_client.h's ngqc_connect()); the calls below from
 * ngq_read() on serve both roles alike. Nothing here knows of the event
 * loop or of connections; quic.c and qdial.c drive it with datagrams,
 * times and bytes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "quic/qinfo.h"

struct sockaddr;
struct ngq_creds;
struct ngq_conn;

/* The longest connection ID QUIC v1 allows. */
#define NGQ_MAX_CIDLEN 20
/* The stateless reset secret's size. */
#define NGQ_SECRET_LEN 32
/* The length of the connection IDs we issue: short-header packets carry
 * no length, so the router reads this many bytes. */
#define NGQ_SCID_LEN 18

/**
 * struct ngq_cb - what a QUIC connection tells its owner (quic.c, qdial.c)
 * @stream_open:	the client opened a stream; return 0 to take it as
 *			the connection's one, -1 to refuse it
 * @stream_data:	in-order bytes of the stream, and whether they end
 *			it; return 0, or -1 to close the connection (a
 *			client that sent past its window)
 * @stream_reset:	the client reset the stream or asked it stopped
 * @stream_acked:	the client acknowledged @n more bytes sent to it
 * @cid_add:		a connection ID of ours to route by; return 0 or -1
 * @cid_del:		one retired
 * @cert_denied:	the client's certificate was refused, @why in a line
 *			(its SHA-256, issuer and the rule); the handshake
 *			fails with the alert ngq_read() sends
 * @migrated:		a path of the client's, at address @to (@tolen bytes),
 *			is validated: it moved there (a NAT's rebinding, or
 *			its own migration), and packets go there from now on
 *
 * Each gets the @ud given to ngq_accept().
 */
struct ngq_cb {
	int (*stream_open)(void *ud, int64_t sid);
	int (*stream_data)(void *ud, const uint8_t *d, size_t n, bool fin);
	void (*stream_reset)(void *ud);
	void (*stream_acked)(void *ud, uint64_t n);
	int (*cid_add)(void *ud, const uint8_t *id, size_t len);
	void (*cid_del)(void *ud, const uint8_t *id, size_t len);
	void (*migrated)(void *ud, const struct sockaddr *to, size_t tolen);
	void (*cert_denied)(void *ud, const char *why);
};

/**
 * struct ngq_path - the two addresses of a datagram
 * @local:	ours
 * @locallen:	its length
 * @remote:	the client's
 * @remotelen:	its length
 */
struct ngq_path {
	const struct sockaddr *local;
	size_t locallen;
	const struct sockaddr *remote;
	size_t remotelen;
};

/* What ngq_read() says of a connection. */
enum ngq_state {
	NGQ_OK,	   /* carry on */
	NGQ_CLOSE, /* send ngq_close_pkt()'s packet, then end it */
	NGQ_DRAIN, /* the peer closed it: wait out the drain, send nothing */
	NGQ_DEAD,  /* end it now, send nothing */
};

/* What ngq_peek() says of a datagram. */
enum ngq_kind {
	NGQ_GARBAGE, /* not QUIC: dropped */
	NGQ_PACKET,  /* QUIC: route it by its destination ID */
	NGQ_VERSION, /* a long header of a version we do not speak */
};

/* What ngq_token() finds in a client's Initial. */
enum ngq_token {
	NGQ_TOKEN_NONE,	 /* none of ours: its address is not validated */
	NGQ_TOKEN_RETRY, /* a valid Retry token of ours: it is */
	NGQ_TOKEN_BAD,	 /* a Retry token that fails (forged, expired, from
			  * another address): drop the datagram */
};

/**
 * struct ngq_tune - how a connection the listener accepts behaves
 * @window:	bytes the client may send ahead of what is taken
 * @cc:		congestion control (ngq_cc_known()); empty for cubic
 * @slot:	the first byte of every connection ID it issues: the slot of
 *		the worker's socket, which io/reuseport.c steers the
 *		connection's datagrams to
 */
struct ngq_tune {
	size_t window;
	const char *cc;
	uint8_t slot;
};

/**
 * struct ngq_retry - what a valid Retry token says, for ngq_accept()
 * @odcid:	the destination ID of the client's first Initial, the one
 *		the Retry answered
 * @odcidlen:	its length
 */
struct ngq_retry {
	uint8_t odcid[NGQ_MAX_CIDLEN];
	size_t odcidlen;
};

int ngq_creds_load(const char *cert, const char *key, struct ngq_creds **out,
		   char *err, size_t errlen);
void ngq_creds_free(struct ngq_creds *cr);
enum ngq_kind ngq_peek(const uint8_t *pkt, size_t len, const uint8_t **dcid,
		       size_t *dcidlen);
ssize_t ngq_version_pkt(const uint8_t *pkt, size_t len, uint8_t *out,
			size_t cap);
bool ngq_is_initial(const uint8_t *pkt, size_t len);
void ngq_random(uint8_t *out, size_t len);
int ngq_cc_algo(const char *name);
bool ngq_cc_known(const char *name);
int ngq_accept(struct ngq_conn **out, struct ngq_creds *cr,
	       const uint8_t *secret, const struct ngq_path *path,
	       const uint8_t *pkt, size_t len, const struct ngq_tune *tune,
	       const struct ngq_retry *rt, const struct ngq_cb *cb, void *ud,
	       uint64_t now);
enum ngq_state ngq_read(struct ngq_conn *c, const struct ngq_path *path,
			const uint8_t *pkt, size_t len, uint64_t now);
ssize_t ngq_write(struct ngq_conn *c, uint8_t *buf, size_t cap,
		  const struct iovec *iov, int iovcnt, bool fin, ssize_t *taken,
		  struct sockaddr *to, size_t *tolen, uint64_t now);
void ngq_sent(struct ngq_conn *c, uint64_t now);
ssize_t ngq_close_pkt(struct ngq_conn *c, uint8_t *buf, size_t cap,
		      uint64_t now);
uint64_t ngq_expiry(struct ngq_conn *c);
enum ngq_state ngq_timeout(struct ngq_conn *c, uint64_t now);
uint64_t ngq_drain_ns(struct ngq_conn *c);
void ngq_consumed(struct ngq_conn *c, size_t n);
void ngq_reset(struct ngq_conn *c);
void ngq_info(struct ngq_conn *c, struct quic_figures *out);
void ngq_free(struct ngq_conn *c);

/* Address validation (Retry): ngq_sec.c's section of its own. */
enum ngq_token ngq_token(const uint8_t *pkt, size_t len, const uint8_t *secret,
			 const struct sockaddr *peer, size_t peerlen,
			 struct ngq_retry *rt, uint64_t now);
ssize_t ngq_retry_pkt(const uint8_t *pkt, size_t len, const uint8_t *secret,
		      const struct sockaddr *peer, size_t peerlen, uint8_t *out,
		      size_t cap, uint64_t now);
ssize_t ngq_bad_token_pkt(const uint8_t *pkt, size_t len, uint8_t *out,
			  size_t cap);

/* Client certificates: ngq_sec.c's section of its own. */
int ngq_creds_client_auth(struct ngq_creds *cr, const char *ca,
			  const char *const *allow, unsigned nallow,
			  const char *const *deny, unsigned ndeny, char *err,
			  size_t errlen);

/* Stateless reset: ngq_sec.c's section of its own. */
int ngq_reset_secret(const char *key, uint8_t *out);
ssize_t ngq_reset_pkt(const uint8_t *pkt, size_t len, const uint8_t *secret,
		      uint8_t *out, size_t cap);

#endif /* SMBSPLICE_NGQ_H */
