// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz_quic.c - libFuzzer harness for a QUIC listener's datagram path
 *
 * What it drives is the daemon's own code, unchanged: a real quic:
 * listener (listener_new() binds its UDP socket on 127.0.0.1, quic_add()
 * serves it in a worker's loop with a test certificate), and each fuzz
 * input's datagrams are sent to that socket from real UDP sockets of a
 * few client addresses, so that they come in through the listener's own
 * recvmmsg() and on_readable(): routing by connection ID (quic.c
 * route()), admission of a new connection on a client Initial (admit(),
 * admit_client(), the caps), ngtcp2 reading the server connection's
 * packets and GnuTLS its handshake (ngq.c), Retry, INVALID_TOKEN and
 * Stateless Reset (stateless.c, ngq_sec.c), Version Negotiation, the
 * stream's bridge (bridge.c) and the listener's sends (udp.c), which go
 * back to the client sockets.
 *
 * An input is one byte of settings, then records:
 *	settings:	bits 0-1: --quic-retry auto, always, off (3 is off)
 *	record:		TYPE(1) CLIENT(1) LEN(2, big-endian) BYTES(LEN)
 *	TYPE 0:		BYTES is a datagram, sent as it is
 *	TYPE 1:		BYTES is DCIDLEN DCID SCIDLEN SCID PN FRAMES: the
 *			harness seals FRAMES in a QUIC v1 client Initial with
 *			the Initial keys of DCID (RFC 9001 5.2: anyone can),
 *			padded to 1200 bytes, so that the fuzzer reaches
 *			what lies behind packet protection: the frames, the
 *			CRYPTO stream, the ClientHello and its transport
 *			parameters
 *	TYPE 2:		BYTES is SCIDLEN SCID PN FRAMES, sealed likewise in
 *			an Initial that answers the last Retry this client
 *			got (its token, its source ID as the DCID); nothing
 *			if it got none
 * CLIENT picks one of four client sockets (four source ports of
 * 127.0.0.1). The client sockets read what the listener sends after each
 * datagram, keeping a Retry's token. The encrypted packets the listener
 * sends are not answered by a real client: the server's handshake keys
 * are random, so a fuzz input cannot finish a TLS handshake; a captured
 * handshake (tests/fuzz/capture_quic_seeds.py) reaches as far as replayed
 * packets can.
 *
 * Between inputs everything is given back: the listener is removed
 * (quic_remove(): its connections end and are freed), the streams' ends
 * the stub accept_ops kept are closed and their admissions released, the
 * listener freed; LeakSanitizer sees no leak, and no state (rate limits,
 * the closed IDs' ring, the Retry token secret) carries from one input to
 * the next. Each input gets a new listener, a new port and a new token
 * secret.
 *
 * The certificate is made at start with openssl in a temporary directory
 * (FUZZ_QUIC_CERT and FUZZ_QUIC_KEY name others).
 */
#include "config.h"

#include <ev.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>

#include "common/log.h"
#include "conf/options.h"
#include "core/limits.h"
#include "core/proxy.h"
#include "net/accept.h"
#include "net/listener.h"
#include "net/dial.h"
#include "priv/privhelper.h"
#include "quic/quic.h"

#define NCLIENTS   4
#define MAX_KEPT   64
#define INITIAL_SZ 1200
#define MAX_TOKEN  256
#define MAX_CID	   20

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/**
 * struct fclient - one client address of the harness
 * @fd:		its UDP socket, on 127.0.0.1
 * @token:	the token of the last Retry it got
 * @tokenlen:	its length, 0 for none
 * @rscid:	that Retry's source connection ID
 * @rscidlen:	its length
 */
struct fclient {
	int fd;
	uint8_t token[MAX_TOKEN];
	size_t tokenlen;
	uint8_t rscid[MAX_CID];
	size_t rscidlen;
};

/**
 * struct kept - a stream's end the stub accept_ops took, as a connection
 * @fd:		the socketpair's end
 * @key:	the client's admission, given back with it
 */
struct kept {
	int fd;
	struct source_key key;
};

static struct ev_loop *loop;
static struct options opt;
static struct proxy px;
static struct acceptor acc;
static struct quic_host qh;
static struct fclient clients[NCLIENTS];
static struct kept kept[MAX_KEPT];
static unsigned nkept;
static char cert[256], key[256];

/* RFC 9001 5.2: the Initial salt of QUIC v1. */
static const uint8_t initial_salt[20] = { 0x38, 0x76, 0x2c, 0xf7, 0xf5,
					  0x59, 0x34, 0xb3, 0x4d, 0x17,
					  0x9a, 0xe6, 0xa4, 0xc8, 0x0c,
					  0xad, 0xcc, 0xbb, 0x7f, 0x0a };

/**
 * privhelper_listen() - listener.c's TCP sockets made by the privilege
 *			 helper: a QUIC listener never has them
 * @ph:		unused
 * @chan:	unused
 * @netns:	unused
 * @sa:		unused
 * @len:	unused
 * @mptcp:	unused
 *
 * Return: never.
 */
int privhelper_listen(struct privhelper *ph, unsigned chan, const char *netns,
		      const struct sockaddr *sa, socklen_t len, bool mptcp)
{
	abort();
}

/**
 * privhelper_hint() - listener.c's advice on a port refused: not reached
 *		       on 127.0.0.1 port 0
 * @err:	unused
 *
 * Return: never.
 */
const char *privhelper_hint(int err)
{
	abort();
}

/**
 * dial_client_side() - listener.c's options on TCP listening sockets:
 *			never a QUIC listener's
 * @fd:		unused
 * @lo:		unused
 * @err:	unused
 * @errlen:	unused
 *
 * Return: never.
 */
int dial_client_side(int fd, const struct listen_opts *lo, char *err,
		     size_t errlen)
{
	abort();
}

/**
 * stub_reserve() - accept_ops: descriptors for a connection; there are
 * @h:	unused
 *
 * Return: true.
 */
static bool stub_reserve(struct conn_host *h)
{
	return true;
}

/**
 * stub_unreserve() - accept_ops: the descriptors are not needed
 * @h:	unused
 */
static void stub_unreserve(struct conn_host *h)
{
}

/**
 * stub_open() - accept_ops: a stream became a connection: keep its end
 *		 (and its admission) until the input is over, as a
 *		 connection whose backend never answers would
 * @h:		unused
 * @l:		the listener
 * @cfg:	its settings
 * @fd:		the socketpair's end, ours now
 * @peer:	the client
 * @k:		its admission, ours now
 *
 * Return: an id for the kept stream (1 on), 0 when it was dropped.
 */
static uint64_t stub_open(struct conn_host *h, struct listener *l,
			  struct lcfg *cfg, int fd, const struct sockaddr *peer,
			  const struct source_key *k)
{
	if (nkept == MAX_KEPT) {
		close(fd);
		limits_release(&px.limits, k, cfg->o.mode == MODE_SMB);
		return 0;
	}
	kept[nkept].fd = fd;
	kept[nkept++].key = *k;
	return nkept;
}

static const struct accept_ops stub_ops = { .reserve = stub_reserve,
					    .unreserve = stub_unreserve,
					    .open = stub_open };

/**
 * make_cert() - a self-signed ECDSA P-256 certificate for the listener
 *
 * Return: 0, or -1 (said on stderr).
 */
static int make_cert(void)
{
	char dir[] = "/tmp/fuzz_quic.XXXXXX", cmd[1024];
	const char *c = getenv("FUZZ_QUIC_CERT"), *k = getenv("FUZZ_QUIC_KEY");

	if (c && k) {
		snprintf(cert, sizeof(cert), "%s", c);
		snprintf(key, sizeof(key), "%s", k);
		return 0;
	}
	if (!mkdtemp(dir))
		return -1;
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(
		cmd, sizeof(cmd),
		"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
		"-nodes -days 2 -subj /CN=fuzz -addext subjectAltName=DNS:fuzz "
		"-keyout %s -out %s 2>/dev/null",
		key, cert);
	if (system(cmd)) {
		fprintf(stderr, "fuzz_quic: openssl could not make %s\n", cert);
		return -1;
	}
	return 0;
}

/**
 * LLVMFuzzerInitialize() - the process's part: loop, limits, clients,
 *			    certificate
 * @argc:	unused
 * @argv:	unused
 *
 * Return: 0.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	if (make_cert())
		exit(1);
	loop = ev_loop_new(EVFLAG_AUTO);
	opt.max_conns = 64;
	px.opt = &opt;
	px.loop = loop;
	px.nworkers = 1;
	if (!loop || limits_init(&px.limits, 64, 16, 64, 0, 4096, 64))
		exit(1);
	acc = (struct acceptor){ .px = &px, .loop = loop, .ops = &stub_ops };
	quic_host_init(&qh, &acc, NULL, NULL);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < NCLIENTS; i++) {
		clients[i].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (clients[i].fd < 0 ||
		    bind(clients[i].fd, (struct sockaddr *)&sin, sizeof(sin)))
			exit(1);
	}
	return 0;
}

/**
 * expand_label() - TLS 1.3's HKDF-Expand-Label with an empty context
 * @secret:	the secret, 32 bytes
 * @label:	the label, without "tls13 "
 * @out:	the result
 * @len:	its length
 *
 * Return: 0 or a GnuTLS error.
 */
static int expand_label(const uint8_t *secret, const char *label, uint8_t *out,
			size_t len)
{
	uint8_t info[64];
	size_t n = strlen(label);
	gnutls_datum_t prk = { (unsigned char *)secret, 32 }, in = { info, 0 };

	info[0] = len >> 8;
	info[1] = len & 0xff;
	info[2] = 6 + n;
	memcpy(info + 3, "tls13 ", 6);
	memcpy(info + 9, label, n);
	info[9 + n] = 0;
	in.size = 10 + n;
	return gnutls_hkdf_expand(GNUTLS_MAC_SHA256, &prk, &in, out, len);
}

/**
 * initial_keys() - a client's Initial keys for a destination ID
 * @dcid:	the ID
 * @dcidlen:	its length
 * @k:		AES-128-GCM key, 16 bytes
 * @iv:		its IV, 12 bytes
 * @hp:		header protection key, 16 bytes
 *
 * Return: 0, or -1.
 */
static int initial_keys(const uint8_t *dcid, size_t dcidlen, uint8_t *k,
			uint8_t *iv, uint8_t *hp)
{
	uint8_t ini[32], cli[32];
	gnutls_datum_t ikm = { (unsigned char *)dcid, dcidlen };
	gnutls_datum_t salt = { (unsigned char *)initial_salt,
				sizeof(initial_salt) };

	if (gnutls_hkdf_extract(GNUTLS_MAC_SHA256, &ikm, &salt, ini) ||
	    expand_label(ini, "client in", cli, 32) ||
	    expand_label(cli, "quic key", k, 16) ||
	    expand_label(cli, "quic iv", iv, 12) ||
	    expand_label(cli, "quic hp", hp, 16))
		return -1;
	return 0;
}

/**
 * protect() - seal an Initial's payload and mask its header (RFC 9001 5)
 * @pkt:	the packet, its payload in clear after the header
 * @hdrlen:	header bytes, up to and including the 4-byte packet number
 * @plen:	payload bytes; 16 more (the tag) must fit after them
 * @dcid:	the destination ID the keys come from
 * @dcidlen:	its length
 * @pn:		the packet number
 *
 * Return: 0, or -1.
 */
static int protect(uint8_t *pkt, size_t hdrlen, size_t plen,
		   const uint8_t *dcid, size_t dcidlen, uint32_t pn)
{
	uint8_t k[16], iv[12], hp[16], zero[16] = { 0 }, mask[16];
	uint8_t ct[INITIAL_SZ + 16];
	size_t ctlen = sizeof(ct);
	gnutls_aead_cipher_hd_t a;
	gnutls_cipher_hd_t c;
	gnutls_datum_t kd = { k, 16 }, hd = { hp, 16 }, ivd = { zero, 16 };
	int e;

	if (initial_keys(dcid, dcidlen, k, iv, hp))
		return -1;
	for (int i = 0; i < 4; i++)
		iv[8 + i] ^= pn >> (24 - 8 * i);
	if (gnutls_aead_cipher_init(&a, GNUTLS_CIPHER_AES_128_GCM, &kd))
		return -1;
	e = gnutls_aead_cipher_encrypt(a, iv, 12, pkt, hdrlen, 16, pkt + hdrlen,
				       plen, ct, &ctlen);
	gnutls_aead_cipher_deinit(a);
	if (e)
		return -1;
	memcpy(pkt + hdrlen, ct, ctlen);
	/* The sample starts 4 bytes after the packet number's start. */
	if (gnutls_cipher_init(&c, GNUTLS_CIPHER_AES_128_CBC, &hd, &ivd))
		return -1;
	e = gnutls_cipher_encrypt2(c, pkt + hdrlen, 16, mask, 16);
	gnutls_cipher_deinit(c);
	if (e)
		return -1;
	pkt[0] ^= mask[0] & 0x0f;
	for (int i = 0; i < 4; i++)
		pkt[hdrlen - 4 + i] ^= mask[1 + i];
	return 0;
}

/**
 * build_initial() - a client Initial of QUIC v1 carrying given frames
 * @out:	the datagram, INITIAL_SZ bytes
 * @dcid:	its destination ID
 * @dcidlen:	its length, at most MAX_CID
 * @scid:	its source ID
 * @scidlen:	its length, at most MAX_CID
 * @token:	its token
 * @tokenlen:	its length, at most MAX_TOKEN
 * @pn:		its packet number
 * @frames:	the frames
 * @flen:	their length; cut to what fits, the rest padding
 *
 * Return: the datagram's length, or 0.
 */
static size_t build_initial(uint8_t *out, const uint8_t *dcid, size_t dcidlen,
			    const uint8_t *scid, size_t scidlen,
			    const uint8_t *token, size_t tokenlen, uint32_t pn,
			    const uint8_t *frames, size_t flen)
{
	size_t h = 0, plen;

	out[h++] = 0xc3; /* long header, Initial, 4-byte packet number */
	memcpy(out + h, "\0\0\0\1", 4);
	h += 4;
	out[h++] = dcidlen;
	memcpy(out + h, dcid, dcidlen);
	h += dcidlen;
	out[h++] = scidlen;
	memcpy(out + h, scid, scidlen);
	h += scidlen;
	out[h++] = 0x40 | (tokenlen >> 8); /* a 2-byte varint */
	out[h++] = tokenlen & 0xff;
	memcpy(out + h, token, tokenlen);
	h += tokenlen;
	plen = INITIAL_SZ - h - 2 - 4 - 16;
	out[h++] = 0x40 | ((plen + 4 + 16) >> 8);
	out[h++] = (plen + 4 + 16) & 0xff;
	for (int i = 0; i < 4; i++)
		out[h++] = pn >> (24 - 8 * i);
	memset(out + h, 0, plen);
	memcpy(out + h, frames, flen < plen ? flen : plen);
	if (protect(out, h, plen, dcid, dcidlen, pn))
		return 0;
	return h + plen + 16;
}

/**
 * take_cid() - a length-prefixed connection ID off a record's bytes
 * @p:		where it is, moved past it
 * @end:	the bytes' end
 * @id:		where its bytes go, MAX_CID
 * @len:	its length
 *
 * Return: 0, or -1 if the bytes are too short.
 */
static int take_cid(const uint8_t **p, const uint8_t *end, uint8_t *id,
		    size_t *len)
{
	if (*p >= end)
		return -1;
	*len = **p % (MAX_CID + 1);
	(*p)++;
	if ((size_t)(end - *p) < *len)
		return -1;
	memcpy(id, *p, *len);
	*p += *len;
	return 0;
}

/**
 * sealed() - a record of type 1 or 2 made into a sealed Initial
 * @type:	1 (IDs given) or 2 (answering the client's last Retry)
 * @fc:		the client
 * @b:		the record's bytes
 * @n:		their length
 * @out:	the datagram, INITIAL_SZ bytes
 *
 * Return: its length, or 0 for nothing to send.
 */
static size_t sealed(int type, const struct fclient *fc, const uint8_t *b,
		     size_t n, uint8_t *out)
{
	const uint8_t *p = b, *end = b + n;
	uint8_t dcid[MAX_CID], scid[MAX_CID];
	size_t dcidlen, scidlen;
	uint32_t pn;

	if (type == 1 && take_cid(&p, end, dcid, &dcidlen))
		return 0;
	if (type == 2) {
		if (!fc->tokenlen)
			return 0;
		memcpy(dcid, fc->rscid, fc->rscidlen);
		dcidlen = fc->rscidlen;
	}
	if (take_cid(&p, end, scid, &scidlen) || p >= end)
		return 0;
	pn = *p++;
	return build_initial(out, dcid, dcidlen, scid, scidlen, fc->token,
			     type == 2 ? fc->tokenlen : 0, pn, p, end - p);
}

/**
 * note_retry() - keep a Retry's token and source ID for type 2 records
 * @fc:		the client that got it
 * @d:		the datagram
 * @n:		its length
 */
static void note_retry(struct fclient *fc, const uint8_t *d, size_t n)
{
	size_t at = 6, scidlen;

	/* Long header, type Retry (RFC 9000 17.2.5), v1. */
	if (n < 7 || (d[0] & 0xf0) != 0xf0 || memcmp(d + 1, "\0\0\0\1", 4))
		return;
	at += d[5];
	if (at >= n)
		return;
	scidlen = d[at++];
	if (scidlen > MAX_CID || at + scidlen + 16 > n)
		return;
	memcpy(fc->rscid, d + at, scidlen);
	fc->rscidlen = scidlen;
	at += scidlen;
	fc->tokenlen = n - 16 - at;
	if (fc->tokenlen > MAX_TOKEN)
		fc->tokenlen = 0;
	else
		memcpy(fc->token, d + at, fc->tokenlen);
}

/**
 * drain_clients() - read what the listener sent the clients
 */
static void drain_clients(void)
{
	uint8_t d[2048];
	ssize_t n;

	for (int i = 0; i < NCLIENTS; i++)
		while ((n = recv(clients[i].fd, d, sizeof(d), MSG_DONTWAIT)) >
		       0)
			note_retry(&clients[i], d, n);
}

/**
 * start() - a new quic: listener on 127.0.0.1, served by the loop
 * @retry:	its --quic-retry
 * @to:		its address, set
 *
 * Return: the listener, or NULL.
 */
static struct listener *start(enum quic_retry retry, struct sockaddr_in *to)
{
	struct sockaddr_in *a;
	struct listen_opts o = { .mode = MODE_SMB, .quic = true };
	struct lcfg *cfg;
	struct listener *l;
	socklen_t len = sizeof(*to);
	char err[512];

	snprintf(o.name, sizeof(o.name), "fuzz");
	snprintf(o.quic_cert, sizeof(o.quic_cert), "%s", cert);
	snprintf(o.quic_key, sizeof(o.quic_key), "%s", key);
	o.quic_retry = retry;
	o.handshake_timeout = 30;
	a = (struct sockaddr_in *)&o.listen.addr;
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	o.listen.len = sizeof(*a);
	cfg = listener_cfg_new(&o, err, sizeof(err));
	l = cfg ? listener_new(&px, cfg, err, sizeof(err)) : NULL;
	if (!l) {
		fprintf(stderr, "fuzz_quic: %s\n", err);
		abort();
	}
	getsockname(l->fds[0], (struct sockaddr *)to, &len);
	listener_get(l);
	if (!quic_add(&qh, l, l->fds[0]))
		abort();
	l->fds[0] = -1; /* the worker's now */
	return l;
}

/**
 * stop() - remove the listener and give back all it took
 * @l:	the listener
 */
static void stop(struct listener *l)
{
	quic_remove(quic_find(&qh, l));
	for (unsigned i = 0; i < nkept; i++) {
		close(kept[i].fd);
		limits_release(&px.limits, &kept[i].key, true);
	}
	nkept = 0;
	listener_put(l);
	listener_free(l);
	drain_clients();
	for (int i = 0; i < NCLIENTS; i++)
		clients[i].tokenlen = 0;
	if (limits_conns(&px.limits))
		abort(); /* an admission was not given back */
}

/**
 * LLVMFuzzerTestOneInput() - one listener, one input's datagrams
 * @data:	settings and records (the file's head comment)
 * @size:	their length
 *
 * Return: 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum quic_retry modes[4] = { QUIC_RETRY_AUTO,
						  QUIC_RETRY_ALWAYS,
						  QUIC_RETRY_OFF,
						  QUIC_RETRY_OFF };
	uint8_t out[INITIAL_SZ + 16];
	struct sockaddr_in to;
	struct listener *l;
	size_t at = 1;

	if (!size)
		return 0;
	l = start(modes[data[0] & 3], &to);
	while (at + 4 <= size) {
		int type = data[at];
		struct fclient *fc = &clients[data[at + 1] % NCLIENTS];
		size_t n = (size_t)data[at + 2] << 8 | data[at + 3];
		const uint8_t *d = data + at + 4;

		if (n > size - at - 4)
			n = size - at - 4;
		at += 4 + n;
		if (type % 3) {
			n = sealed(type % 3, fc, d, n, out);
			d = out;
			if (!n)
				continue;
		}
		sendto(fc->fd, d, n, 0, (struct sockaddr *)&to, sizeof(to));
		ev_run(loop, EVRUN_NOWAIT);
		drain_clients();
	}
	stop(l);
	return 0;
}
