// SPDX-License-Identifier: GPL-2.0-or-later
/* test_ngq.c - a server's TLS session is freed once its handshake is
 * done, and the connection goes on without it (proxy/quic/ngq.c)
 *
 * A listener's connection and a quic: backend's dial (smbsplice's own
 * client role) handshake in memory, their datagrams handed from one to
 * the other, on a clock of the test's own. Then: the server holds no TLS
 * session; stream bytes cross both ways exactly, through key updates
 * started by either end (their keys are ngtcp2's, not TLS's); and CRYPTO
 * bytes the client sends after the handshake end the connection with
 * unexpected_message (CRYPTO_ERROR 0x10a) instead of reaching a session
 * that is gone.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "quic/ngq-t.h"
#include "quic/ngq.h"
#include "quic/ngq_client.h"

#define NAME  "smb.test"
#define BYTES (256u << 10)
#define MTU   1452
#define STEP  (1000000ull) /* the test's clock moves 1 ms a datagram */

/**
 * struct end - one end of the in-memory connection
 * @c:		its connection
 * @path:	its addresses
 * @open:	its stream is open
 * @got:	the stream bytes it received
 * @ngot:	how many
 * @out:	the stream bytes it sends
 * @nout:	how many were taken
 * @close:	ngq_read() said NGQ_CLOSE
 */
struct end {
	struct ngq_conn *c;
	struct ngq_path path;
	bool open;
	uint8_t *got;
	size_t ngot;
	const uint8_t *out;
	size_t nout;
	bool close;
};

static char dir[] = "/tmp/test_ngq.XXXXXX";
static struct sockaddr_in srv_sa, cli_sa;
static uint8_t secret[NGQ_SECRET_LEN];
static uint8_t sent[BYTES];
static uint64_t now = 1000000000ull;

static int on_open(void *ud, int64_t sid)
{
	((struct end *)ud)->open = true;
	return 0;
}

static int on_data(void *ud, const uint8_t *d, size_t n, bool fin)
{
	struct end *e = ud;

	if (e->ngot + n > BYTES)
		return -1;
	memcpy(e->got + e->ngot, d, n);
	e->ngot += n;
	ngq_consumed(e->c, n);
	return 0;
}

static void on_reset(void *ud)
{
}

static void on_acked(void *ud, uint64_t n)
{
}

static int on_cid_add(void *ud, const uint8_t *id, size_t len)
{
	return 0;
}

static void on_cid_del(void *ud, const uint8_t *id, size_t len)
{
}

static const struct ngq_cb cb = {
	.stream_open = on_open,
	.stream_data = on_data,
	.stream_reset = on_reset,
	.stream_acked = on_acked,
	.cid_add = on_cid_add,
	.cid_del = on_cid_del,
};

static struct end srv = { .path = { (struct sockaddr *)&srv_sa, sizeof(srv_sa),
				    (struct sockaddr *)&cli_sa,
				    sizeof(cli_sa) } };
static struct end cli = { .path = { (struct sockaddr *)&cli_sa, sizeof(cli_sa),
				    (struct sockaddr *)&srv_sa,
				    sizeof(cli_sa) } };

/* Run a command of the test's, quietly; fail the test if it fails. */
static void sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* A CA and a server certificate for NAME, signed by it (certtool). */
static int setup(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	sh("cd %s && printf 'cn = ca\\nca\\ncert_signing_key\\nexpiration_days"
	   " = 2\\n' > ca.tmpl && printf 'cn = %s\\ndns_name = %s\\n"
	   "tls_www_server\\nsigning_key\\nexpiration_days = 2\\n' > srv.tmpl",
	   dir, NAME, NAME);
	sh("cd %s && for k in ca srv; do certtool --generate-privkey"
	   " --key-type=ecdsa --curve=secp256r1 --outfile $k.key; done"
	   " >/dev/null 2>&1",
	   dir);
	sh("cd %s && certtool --generate-self-signed --load-privkey ca.key"
	   " --template ca.tmpl --outfile ca.pem >/dev/null 2>&1",
	   dir);
	sh("cd %s && certtool --generate-certificate --load-privkey srv.key"
	   " --load-ca-certificate ca.pem --load-ca-privkey ca.key --template"
	   " srv.tmpl --outfile srv.pem >/dev/null 2>&1",
	   dir);
	srv_sa = (struct sockaddr_in){ .sin_family = AF_INET,
				       .sin_port = htons(443) };
	inet_pton(AF_INET, "192.0.2.1", &srv_sa.sin_addr);
	cli_sa = (struct sockaddr_in){ .sin_family = AF_INET,
				       .sin_port = htons(40000) };
	inet_pton(AF_INET, "192.0.2.2", &cli_sa.sin_addr);
	ngq_random(secret, sizeof(secret));
	for (size_t i = 0; i < sizeof(sent); i++)
		sent[i] = (uint8_t)(i * 7 + i / 251);
	return 0;
}

static int teardown(void **state)
{
	sh("rm -rf %s", dir);
	return 0;
}

/* The server's side of a datagram from the client. */
static void to_server(const uint8_t *pkt, size_t n)
{
	struct ngq_creds *cr;
	char err[256], crt[128], key[128];
	const struct ngq_tune tune = { .window = 1u << 20, .cc = "cubic" };

	if (!srv.c) {
		snprintf(crt, sizeof(crt), "%s/srv.pem", dir);
		snprintf(key, sizeof(key), "%s/srv.key", dir);
		assert_int_equal(
			ngq_creds_load(crt, key, &cr, err, sizeof(err)), 0);
		assert_int_equal(ngq_accept(&srv.c, cr, secret, &srv.path, pkt,
					    n, &tune, NULL, &cb, &srv, now),
				 0);
		ngq_creds_free(cr); /* the connection holds its reference */
	}
	if (ngq_read(srv.c, &srv.path, pkt, n, now) == NGQ_CLOSE)
		srv.close = true;
}

/* One end's next datagram, with its stream bytes if it has any left; 0
 * when it has nothing to send. */
static ssize_t next(struct end *e, uint8_t *buf)
{
	struct iovec iov = { (void *)(e->out + e->nout), BYTES - e->nout };
	struct sockaddr_storage to;
	size_t tolen = sizeof(to);
	ssize_t taken = -1, n;
	bool more = e->out && e->open && e->nout < BYTES;

	n = ngq_write(e->c, buf, MTU, &iov, more, false, &taken,
		      (struct sockaddr *)&to, &tolen, now);
	assert_true(n >= 0);
	if (taken > 0)
		e->nout += (size_t)taken;
	if (n)
		ngq_sent(e->c, now);
	return n;
}

/* Hand datagrams both ways until neither end has one, or @rounds ran. */
static void pump(unsigned rounds)
{
	uint8_t buf[MTU];
	ssize_t n, m;

	for (unsigned i = 0; i < rounds; i++) {
		now += STEP;
		n = next(&cli, buf);
		if (n)
			to_server(buf, (size_t)n);
		if (srv.close)
			return;
		m = srv.c ? next(&srv, buf) : 0;
		if (m)
			assert_int_equal(
				ngq_read(cli.c, &cli.path, buf, (size_t)m, now),
				NGQ_OK);
		if (!n && !m) {
			/* Let delayed ACKs and pacing come due. */
			now += 30 * STEP;
			if (ngq_timeout(cli.c, now) != NGQ_OK ||
			    (srv.c && ngq_timeout(srv.c, now) != NGQ_OK))
				fail_msg("a connection timed out");
		}
	}
}

/* A dial and its handshake: both ends' streams open. */
static void connect_both(void)
{
	struct ngqc_creds *cr;
	struct ngqc_dial d = { .name = NAME,
			       .cc = "cubic",
			       .window = 1u << 20 };
	char err[256], ca[128];

	free(srv.got);
	free(cli.got);
	srv = (struct end){ .path = srv.path, .got = calloc(1, BYTES) };
	cli = (struct end){ .path = cli.path, .got = calloc(1, BYTES) };
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	assert_int_equal(
		ngqc_creds_load(ca, "", "", false, &cr, err, sizeof(err)), 0);
	assert_int_equal(
		ngqc_connect(&cli.c, &d, cr, &cli.path, &cb, &cli, now), 0);
	pump(200);
	assert_true(cli.open);
	assert_non_null(srv.c);
}

static void disconnect(void)
{
	ngq_free(cli.c);
	ngq_free(srv.c);
}

/* Bytes both ways, a key update from each end on the way: exact. */
static void test_after_shed(void **state)
{
	connect_both();
	assert_null(srv.c->tls);     /* freed at the handshake's end */
	assert_null(srv.c->creds);   /* and its certificate reference */
	assert_non_null(cli.c->tls); /* a client keeps it (tickets) */
	cli.out = sent;
	pump(40);
	assert_true(cli.nout < BYTES); /* the rest goes under new keys */
	assert_int_equal(ngtcp2_conn_initiate_key_update(cli.c->conn, now), 0);
	pump(5000);
	now += 10 * 1000 * STEP; /* past the wait before the next update */
	pump(2);
	assert_int_equal(ngtcp2_conn_initiate_key_update(srv.c->conn, now), 0);
	srv.out = sent; /* all of it under the server's new keys */
	pump(5000);
	assert_false(srv.close);
	assert_int_equal(srv.ngot, BYTES);
	assert_int_equal(cli.ngot, BYTES);
	assert_memory_equal(srv.got, sent, BYTES);
	assert_memory_equal(cli.got, sent, BYTES);
	disconnect();
}

/* Handshake bytes after the handshake: unexpected_message, no crash. */
static void test_crypto_after(void **state)
{
	static const uint8_t key_update[] = { 24, 0, 0, 1, 0 };

	connect_both();
	assert_null(srv.c->tls);
	assert_int_equal(ngtcp2_conn_submit_crypto_data(
				 cli.c->conn, NGTCP2_CRYPTO_LEVEL_APPLICATION,
				 key_update, sizeof(key_update)),
			 0);
	pump(20);
	assert_true(srv.close);
	assert_int_equal(srv.c->ccerr.type,
			 NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT);
	assert_int_equal(srv.c->ccerr.error_code, NGTCP2_CRYPTO_ERROR | 10);
	disconnect();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_after_shed),
		cmocka_unit_test(test_crypto_after),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
