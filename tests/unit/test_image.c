// SPDX-License-Identifier: GPL-2.0-or-later
/* test_image.c - the handover image: a process record, listener and
 * counters records and a connection in every stage that can be handed
 * over (with pending bytes, pipes, latency and capture tails) written with
 * the writer decode to the very fields and tails they were written with;
 * every malformed image is refused with one line and never read out of
 * bounds: wrong magic, another format (EPROTO), another layout, every
 * prefix of a valid image, a record longer than the image, trailing
 * bytes, a missing, late or second process record, a worker out of range,
 * a descriptor index out of range or named twice, an unterminated name,
 * two sockets of one listener in one worker, a connection in a stage that
 * cannot be handed over, a backend socket before connecting, half a
 * pipe, a pipe without bytes or bytes without a pipe, bytes before open
 * or over any buffer, tails that do not add up, a latency table over
 * TIMING_MAX_REQUESTS or of the wrong length, a capture of the wrong
 * size, a flag not 0 or 1 and a counters record of the wrong size; 9,000
 * connections and 30,000 listener records decode in linear time.
 *
 * Each image is decoded from a buffer of exactly its size, so a sanitizer
 * build catches a read past its end.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <cmocka.h>

#include "conn/conn-t.h"
#include "handover/image.h"

#define NLS	  2 /* listeners, each with a socket in both workers */
#define NWORKERS  2
#define NWORDS	  5 /* counters per listener and worker */
#define NCONNS	  5
#define PEND0	  37 /* the open connection's pending bytes, direction 0 */
#define NREQ	  3  /* its outstanding requests */
#define MAX_CONNS 9000

/**
 * struct parts - the records of an image, to be spoiled and written
 * @proc:	the process record
 * @ls:		listener records
 * @st:		counters records
 * @words:	their counters
 * @c:		connection records
 * @nc:		how many
 * @pend:	each connection's pending bytes, per direction
 * @timing:	each connection's latency tail
 * @trace:	each connection's capture tail
 * @tail_len:	tail lengths written, per connection: [0..3], -1 for the
 *		record's own
 * @nfds:	descriptors said to come with the image
 */
struct parts {
	struct img_process proc;
	struct img_listener ls[NLS * NWORKERS];
	struct img_lstats st[NLS * NWORKERS];
	uint64_t words[NLS * NWORKERS][NWORDS];
	struct img_conn c[MAX_CONNS];
	unsigned nc;
	uint8_t pend[NCONNS][2][64];
	uint8_t *timing[NCONNS];
	struct trace_conn_saved trace[NCONNS];
	long tail_len[MAX_CONNS][4];
	size_t nfds;
};

static struct parts pt;
static char err[256];

/* The header's offsets, to spoil it. */
#define OFF_MAGIC   0
#define OFF_VERSION 8
#define OFF_LAYOUT  12
#define OFF_NREC    16
#define HEAD_LEN    24

static int32_t next_fd;

/* A descriptor index not yet used. */
static int32_t fd_index(void)
{
	return next_fd++;
}

/* One connection of each stage; the open ones carry every tail. */
static void make_conns(void)
{
	static const uint32_t states[NCONNS] = { CS_PROXY_HEADER, CS_HANDSHAKE,
						 CS_CONNECTING, CS_CONNECTING,
						 CS_OPEN };

	for (unsigned i = 0; i < NCONNS; i++) {
		struct img_conn *c = &pt.c[i];

		*c = (struct img_conn){ .id = 1000 + i,
					.worker = i % NWORKERS,
					.state = states[i],
					.be = i % OPT_MAX_BACKENDS,
					.peeked = 3 * i,
					.cli_fd = fd_index(),
					.srv_fd = -1,
					.started = 100.25 + i,
					.deadline = 200.5 + i,
					.last_active = 150.75 + i,
					.cli_corked = i & 1,
					.srv_corked = !(i & 1),
					.unauth = 1,
					.admitted = 1,
					.lowat = i == 1,
					.smb = 1 };
		snprintf(c->listener, sizeof(c->listener), "ls%u", i % NLS);
		snprintf(c->cli_text, sizeof(c->cli_text), "192.0.2.%u:%u",
			 i + 1, 40000 + i);
		memset(c->peer, 0x10 + i, sizeof(c->peer));
		/* accept() gives IPv4 or IPv6: nothing else decodes */
		memcpy(c->peer, &(sa_family_t){ i % 2 ? AF_INET6 : AF_INET },
		       sizeof(sa_family_t));
		memset(c->source, 0x20 + i, sizeof(c->source));
		for (unsigned d = 0; d < 2; d++)
			c->dir[d].pipe_rd = c->dir[d].pipe_wr = -1;
	}
	/* The second connecting one has its socket, the first waits. */
	pt.c[3].srv_fd = fd_index();
	struct img_conn *o = &pt.c[4];

	o->srv_fd = fd_index();
	o->dir[0].pump = (struct pump_saved){ .pending = PEND0,
					      .spliced = 7,
					      .copied = 8,
					      .err = 0,
					      .more = 1,
					      .midframe = 1 };
	o->dir[0].fr.frame_off = 4242;
	o->dir[0].fr.state = 1;
	o->dir[0].flags = 1;
	for (unsigned k = 0; k < PEND0; k++)
		pt.pend[4][0][k] = (uint8_t)(k * 7 + 1);
	o->dir[1].pump = (struct pump_saved){ .in_pipe = 65536,
					      .spliced = 9,
					      .splicing = 1 };
	o->dir[1].pipe_rd = fd_index();
	o->dir[1].pipe_wr = fd_index();
	o->dir[1].fr.reads = 12;
	o->timing_len = (uint32_t)timing_saved_len(NREQ);
	o->trace_len = sizeof(struct trace_conn_saved);
	pt.timing[4] = calloc(1, timing_saved_len(TIMING_MAX_REQUESTS + 1));
	assert_non_null(pt.timing[4]);
	struct timing_saved tm = { .nreq = NREQ, .frame_t0 = { 5, 6 } };

	for (unsigned k = 0; k < NREQ; k++)
		tm.req[k] = (struct timing_saved_request){ .id = k + 1,
							   .end = 100 * k,
							   .cmd = 8,
							   .sent = 1,
							   .sent_ns = 77 };
	memcpy(pt.timing[4], &tm, o->timing_len);
	pt.trace[4].isn[0] = 0xabcdef;
	snprintf(pt.trace[4].what, sizeof(pt.trace[4].what), "conn 1004");
}

/* A valid image's records: every field something other than zero. */
static int setup(void **state)
{
	next_fd = 0;
	memset(&pt, 0, sizeof(pt));
	pt.proc = (struct img_process){ .nworkers = NWORKERS,
					.pid = 4321,
					.last_id = 99999,
					.now = 12345.5,
					.metrics_fd = fd_index(),
					.control_fd = -1,
					.control_ro_fd = -1,
					.lstats_words = NWORDS,
					.accepted = 77 };
	for (unsigned i = 0; i < NLS * NWORKERS; i++) {
		snprintf(pt.ls[i].name, sizeof(pt.ls[i].name), "ls%u", i / 2);
		pt.ls[i].worker = i % NWORKERS;
		pt.ls[i].fd = fd_index();
		memcpy(pt.st[i].name, pt.ls[i].name, sizeof(pt.st[i].name));
		pt.st[i].worker = i % NWORKERS;
		for (unsigned k = 0; k < NWORDS; k++)
			pt.words[i][k] = 1000 * i + k;
	}
	pt.nc = NCONNS;
	make_conns();
	for (unsigned i = 0; i < MAX_CONNS; i++)
		for (unsigned k = 0; k < 4; k++)
			pt.tail_len[i][k] = -1;
	pt.nfds = (size_t)next_fd;
	return 0;
}

static int teardown(void **state)
{
	for (unsigned i = 0; i < NCONNS; i++)
		free(pt.timing[i]);
	return 0;
}

/* A connection's record and its four tails, as written. */
static void put_conn(struct image_writer *w, unsigned i)
{
	static const uint8_t zeros[64];
	const struct img_conn *c = &pt.c[i];
	const void *tails[4] = {
		i < NCONNS ? pt.pend[i][0] : zeros,
		i < NCONNS ? pt.pend[i][1] : zeros,
		i < NCONNS ? pt.timing[i] : NULL,
		i < NCONNS ? (const void *)&pt.trace[i] : NULL,
	};
	size_t lens[4] = { c->dir[0].pump.pending, c->dir[1].pump.pending,
			   c->timing_len, c->trace_len };

	for (unsigned k = 0; k < 4; k++)
		if (pt.tail_len[i][k] >= 0)
			lens[k] = (size_t)pt.tail_len[i][k];
	image_write_put(w, IMG_CONN, c, sizeof(*c), tails, lens, 4);
}

/* The process record, then listeners, counters and connections. */
static void put_all(struct image_writer *w)
{
	image_write_init(w);
	image_write_put(w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	for (unsigned i = 0; i < NLS * NWORKERS; i++) {
		const void *t[1] = { pt.words[i] };
		size_t tl[1] = { sizeof(pt.words[i]) };

		image_write_put(w, IMG_LISTENER, &pt.ls[i], sizeof(pt.ls[i]),
				NULL, NULL, 0);
		image_write_put(w, IMG_LSTATS, &pt.st[i], sizeof(pt.st[i]), t,
				tl, 1);
	}
	for (unsigned i = 0; i < pt.nc; i++)
		put_conn(w, i);
	assert_int_equal(image_write_finish(w), 0);
}

/* The image of pt, in a buffer of exactly its size; *len set. */
static uint8_t *image_of(size_t *len)
{
	struct image_writer w;
	uint8_t *p;

	put_all(&w);
	p = malloc(w.len);
	assert_non_null(p);
	memcpy(p, w.p, w.len);
	*len = w.len;
	image_write_free(&w);
	return p;
}

/* Decode bytes; the image is freed whatever the outcome. */
static int decode_bytes(const uint8_t *p, size_t len, size_t nfds)
{
	struct image img;
	int r;

	err[0] = '\0';
	errno = 0;
	r = image_decode(p, len, nfds, &img, err, sizeof(err));
	image_free(&img);
	return r;
}

/* A refusal: one line, EINVAL, naming @why. */
static void assert_refused_bytes(const uint8_t *p, size_t len, const char *why)
{
	assert_int_equal(decode_bytes(p, len, pt.nfds), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(strchr(err, '\n'));
	if (!strstr(err, "bad handover image: ") || !strstr(err, why))
		fail_msg("wanted \"%s\", got \"%s\"", why, err);
}

/* pt as it now stands is refused with @why. */
static void assert_refused(const char *why)
{
	size_t len;
	uint8_t *p = image_of(&len);

	assert_refused_bytes(p, len, why);
	free(p);
}

static void test_round_trip(void **state)
{
	struct image img;
	size_t len;
	uint8_t *p = image_of(&len);

	assert_int_equal(image_decode(p, len, pt.nfds, &img, err, sizeof(err)),
			 0);
	assert_memory_equal(&img.proc, &pt.proc, sizeof(pt.proc));
	assert_int_equal(img.nls, NLS * NWORKERS);
	assert_int_equal(img.nst, NLS * NWORKERS);
	assert_int_equal(img.nconns, NCONNS);
	for (unsigned i = 0; i < NLS * NWORKERS; i++) {
		assert_memory_equal(&img.ls[i], &pt.ls[i], sizeof(pt.ls[i]));
		assert_memory_equal(&img.st[i].s, &pt.st[i], sizeof(pt.st[i]));
		assert_memory_equal(img.st[i].words, pt.words[i],
				    sizeof(pt.words[i]));
		assert_true(img.st[i].words > p && img.st[i].words < p + len);
	}
	for (unsigned i = 0; i < NCONNS; i++) {
		const struct img_conn_view *v = &img.conns[i];

		assert_memory_equal(&v->c, &pt.c[i], sizeof(pt.c[i]));
		if (pt.c[i].state != CS_OPEN) {
			assert_null(v->timing);
			assert_null(v->trace);
			continue;
		}
		/* The tails follow the record, in order, inside the image. */
		assert_ptr_equal(v->bytes[1], v->bytes[0] + PEND0);
		assert_ptr_equal(v->timing, v->bytes[1]);
		assert_ptr_equal(v->trace, v->timing + pt.c[i].timing_len);
		assert_ptr_equal(v->trace + sizeof(struct trace_conn_saved),
				 p + len);
		assert_memory_equal(v->bytes[0], pt.pend[i][0], PEND0);
		assert_memory_equal(v->timing, pt.timing[i],
				    timing_saved_len(NREQ));
		assert_memory_equal(v->trace, &pt.trace[i],
				    sizeof(pt.trace[i]));
	}
	image_free(&img);
	free(p);
}

/* A process record alone, and more descriptors than named, decode. */
static void test_minimal(void **state)
{
	struct image_writer w;
	struct image img;

	image_write_init(&w);
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	assert_int_equal(image_write_finish(&w), 0);
	assert_int_equal(image_decode(w.p, w.len, 100, &img, err, sizeof(err)),
			 0);
	assert_int_equal(img.nls + img.nst + img.nconns, 0);
	assert_int_equal(img.proc.pid, 4321);
	image_free(&img);
	image_write_free(&w);
}

static void test_header(void **state)
{
	size_t len;
	uint8_t *p = image_of(&len);
	uint32_t v;

	p[OFF_MAGIC + 3]++;
	assert_refused_bytes(p, len, "not an smbsplice handover image");
	p[OFF_MAGIC + 3]--;

	memcpy(&v, p + OFF_VERSION, 4);
	v++;
	memcpy(p + OFF_VERSION, &v, 4);
	assert_int_equal(decode_bytes(p, len, pt.nfds), -1);
	assert_int_equal(errno, EPROTO);
	assert_non_null(strstr(err, "cannot hand over"));
	assert_null(strchr(err, '\n'));
	v--;
	memcpy(p + OFF_VERSION, &v, 4);

	p[OFF_LAYOUT]++;
	assert_refused_bytes(p, len, "whose records differ");
	p[OFF_LAYOUT]--;

	/* One record fewer announced: the last one is trailing bytes. */
	memcpy(&v, p + OFF_NREC, 4);
	v--;
	memcpy(p + OFF_NREC, &v, 4);
	assert_refused_bytes(p, len, "bytes after the last record");
	v += 2;
	memcpy(p + OFF_NREC, &v, 4);
	assert_refused_bytes(p, len, "cut short");
	v--;
	memcpy(p + OFF_NREC, &v, 4);
	assert_int_equal(decode_bytes(p, len, pt.nfds), 0);
	free(p);
}

/* Every prefix of a valid image is refused, each from a buffer of its
 * exact size. */
static void test_every_prefix(void **state)
{
	size_t len;
	uint8_t *p = image_of(&len);

	for (size_t n = 0; n < len; n++) {
		uint8_t *q = malloc(n ? n : 1);

		assert_non_null(q);
		memcpy(q, p, n);
		assert_int_equal(decode_bytes(q, n, pt.nfds), -1);
		assert_true(err[0] != '\0');
		assert_null(strchr(err, '\n'));
		free(q);
	}
	free(p);
}

static void test_trailing_and_long(void **state)
{
	size_t len;
	uint8_t *p = image_of(&len), *q = malloc(len + 1);
	uint32_t rlen;

	assert_non_null(q);
	memcpy(q, p, len);
	q[len] = 0;
	assert_refused_bytes(q, len + 1, "bytes after the last record");
	/* The process record says it is longer than all that is left. */
	rlen = (uint32_t)len;
	memcpy(q + HEAD_LEN + 4, &rlen, 4);
	assert_refused_bytes(q, len, "longer than the image");
	rlen = UINT32_MAX;
	memcpy(q + HEAD_LEN + 4, &rlen, 4);
	assert_refused_bytes(q, len, "longer than the image");
	free(q);
	free(p);
}

static void test_process_record(void **state)
{
	struct image_writer w;

	/* None at all. */
	image_write_init(&w);
	assert_int_equal(image_write_finish(&w), 0);
	assert_refused_bytes(w.p, w.len, "process record");
	image_write_free(&w);

	/* Not first. */
	image_write_init(&w);
	image_write_put(&w, IMG_LISTENER, &pt.ls[0], sizeof(pt.ls[0]), NULL,
			NULL, 0);
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	assert_int_equal(image_write_finish(&w), 0);
	assert_refused_bytes(w.p, w.len, "not first, or not once");
	image_write_free(&w);

	/* Twice. */
	struct img_process p2 = pt.proc;

	p2.metrics_fd = -1;
	image_write_init(&w);
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	image_write_put(&w, IMG_PROCESS, &p2, sizeof(p2), NULL, NULL, 0);
	assert_int_equal(image_write_finish(&w), 0);
	assert_refused_bytes(w.p, w.len, "not first, or not once");
	image_write_free(&w);

	/* Of the wrong size, and an unknown type. */
	image_write_init(&w);
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc) - 1, NULL,
			NULL, 0);
	assert_int_equal(image_write_finish(&w), 0);
	assert_refused_bytes(w.p, w.len, "process record of the wrong size");
	image_write_free(&w);
	image_write_init(&w);
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	image_write_put(&w, (enum img_type)99, &pt.proc, sizeof(pt.proc), NULL,
			NULL, 0);
	assert_int_equal(image_write_finish(&w), 0);
	assert_refused_bytes(w.p, w.len, "unknown type");
	image_write_free(&w);

	pt.proc.nworkers = 0;
	assert_refused("worker count out of range");
	pt.proc.nworkers = OPT_MAX_WORKERS + 1;
	assert_refused("worker count out of range");
	pt.proc.nworkers = NWORKERS;
	pt.proc.lstats_words = 0;
	assert_refused("counter count out of range");
	pt.proc.lstats_words = NWORDS;
	pt.proc.control_fd = (int32_t)pt.nfds;
	assert_refused("process record names a bad descriptor");
	pt.proc.control_fd = pt.proc.metrics_fd;
	assert_refused("process record names a bad descriptor");
	pt.proc.control_fd = -1;
	pt.proc.control_ro_fd = (int32_t)pt.nfds;
	assert_refused("process record names a bad descriptor");
	pt.proc.control_ro_fd = pt.proc.metrics_fd;
	assert_refused("process record names a bad descriptor");
}

static void test_listener(void **state)
{
	pt.ls[1].worker = NWORKERS;
	assert_refused("listener record with a bad field");
	pt.ls[1].worker = 1;
	memset(pt.ls[2].name, 'x', sizeof(pt.ls[2].name));
	assert_refused("listener record with a bad field");
	snprintf(pt.ls[2].name, sizeof(pt.ls[2].name), "ls1");
	pt.ls[3].fd = (int32_t)pt.nfds;
	assert_refused("listener record names a bad descriptor");
	pt.ls[3].fd = -1;
	assert_refused("listener record names a bad descriptor");
	pt.ls[3].fd = -5;
	assert_refused("listener record names a bad descriptor");
	pt.ls[3].fd = pt.ls[2].fd;
	assert_refused("listener record names a bad descriptor");
	/* The process record's descriptor, named again. */
	pt.ls[3].fd = pt.proc.metrics_fd;
	assert_refused("listener record names a bad descriptor");
	pt.ls[3].fd = (int32_t)pt.nfds;
	pt.nfds++;
	pt.ls[3].worker = pt.ls[2].worker;
	assert_refused("two sockets of one listener in one worker");
}

static void test_lstats(void **state)
{
	struct image_writer w;
	const void *t[1] = { pt.words[0] };
	size_t tl[1] = { sizeof(pt.words[0]) - 1 };

	image_write_init(&w);
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	image_write_put(&w, IMG_LSTATS, &pt.st[0], sizeof(pt.st[0]), t, tl, 1);
	assert_int_equal(image_write_finish(&w), 0);
	assert_refused_bytes(w.p, w.len, "counters record of the wrong size");
	image_write_free(&w);
	image_write_init(&w);
	tl[0] += 9;
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	image_write_put(&w, IMG_LSTATS, &pt.st[0], sizeof(pt.st[0]), t, tl, 1);
	assert_int_equal(image_write_finish(&w), 0);
	assert_refused_bytes(w.p, w.len, "counters record of the wrong size");
	image_write_free(&w);

	pt.st[1].worker = NWORKERS;
	assert_refused("counters record with a bad field");
	pt.st[1].worker = 0;
	memset(pt.st[1].name, 'y', sizeof(pt.st[1].name));
	assert_refused("counters record with a bad field");
}

static void test_conn_fields(void **state)
{
	struct img_conn *c = &pt.c[4], keep = *c;

	/* The array is the flags, all of them: six, each a byte. */
	assert_int_equal(sizeof(c->flags), 6);
	assert_ptr_equal(&c->flags[0], &c->cli_corked);
	assert_ptr_equal(&c->flags[5], &c->smb);

	c->worker = NWORKERS;
	assert_refused("connection record with a bad field");
	*c = keep;
	c->be = OPT_MAX_BACKENDS;
	assert_refused("connection record with a bad field");
	*c = keep;
	memset(c->listener, 'z', sizeof(c->listener));
	assert_refused("connection record with a bad field");
	*c = keep;
	memset(c->cli_text, 'z', sizeof(c->cli_text));
	assert_refused("connection record with a bad field");
	/* Each flag in turn. */
	for (unsigned k = 0; k < sizeof(c->flags); k++) {
		*c = keep;
		c->flags[k] = 2;
		assert_refused("connection record with a bad field");
	}
	/* Times that are not numbers, an address accept() never gives. */
	*c = keep;
	c->deadline = NAN;
	assert_refused("connection record with a bad time or address");
	*c = keep;
	c->last_active = INFINITY;
	assert_refused("connection record with a bad time or address");
	*c = keep;
	memcpy(c->peer, &(sa_family_t){ AF_UNIX }, sizeof(sa_family_t));
	assert_refused("connection record with a bad time or address");
	*c = keep;
	c->state = CS_NEW;
	assert_refused("a stage that cannot be handed over");
	c->state = CS_ENDED;
	assert_refused("a stage that cannot be handed over");
	c->state = CS_COUNT;
	assert_refused("a stage that cannot be handed over");
	c->state = UINT32_MAX;
	assert_refused("a stage that cannot be handed over");
	*c = keep;
	/* Too short for its struct. */
	struct image_writer w;

	image_write_init(&w);
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	image_write_put(&w, IMG_CONN, c, sizeof(*c) - 1, NULL, NULL, 0);
	assert_int_equal(image_write_finish(&w), 0);
	assert_refused_bytes(w.p, w.len, "connection record too short");
	image_write_free(&w);
}

static void test_conn_fds(void **state)
{
	struct img_conn keep = pt.c[4];

	pt.c[4].cli_fd = -1;
	assert_refused("connection record names a bad descriptor");
	pt.c[4].cli_fd = (int32_t)pt.nfds;
	assert_refused("connection record names a bad descriptor");
	pt.c[4].cli_fd = INT32_MIN;
	assert_refused("connection record names a bad descriptor");
	pt.c[4] = keep;
	/* Open without a backend socket. */
	pt.c[4].srv_fd = -1;
	assert_refused("connection record names a bad descriptor");
	pt.c[4] = keep;
	/* Two connections share a socket; a connection names a listener's. */
	pt.c[4].srv_fd = pt.c[3].srv_fd;
	assert_refused("connection record names a bad descriptor");
	pt.c[4].srv_fd = pt.ls[0].fd;
	assert_refused("connection record names a bad descriptor");
	pt.c[4].srv_fd = pt.c[4].cli_fd;
	assert_refused("connection record names a bad descriptor");
	pt.c[4] = keep;
	/* A backend socket in the handshake, and before the PROXY header. */
	pt.c[1].srv_fd = (int32_t)pt.nfds;
	pt.nfds++;
	assert_refused("connection record names a bad descriptor");
	pt.c[1].srv_fd = -1;
	pt.c[0].srv_fd = (int32_t)pt.nfds - 1;
	assert_refused("connection record names a bad descriptor");
	pt.c[0].srv_fd = -1;
	/* A pipe end that is a socket's too. */
	pt.c[4].dir[1].pipe_wr = pt.c[4].cli_fd;
	assert_refused("a direction's pipe is not whole");
}

static void test_conn_pipes(void **state)
{
	struct img_conn *c = &pt.c[4], keep = *c;

	c->dir[1].pipe_wr = -1;
	assert_refused("a direction's pipe is not whole");
	*c = keep;
	c->dir[1].pipe_rd = -1;
	assert_refused("a direction's pipe is not whole");
	*c = keep;
	c->dir[1].pipe_rd = c->dir[1].pipe_wr;
	assert_refused("a direction's pipe is not whole");
	*c = keep;
	c->dir[1].pump.in_pipe = 0;
	assert_refused("a direction's pipe is not whole");
	*c = keep;
	c->dir[0].pump.in_pipe = 10;
	assert_refused("a direction's pipe is not whole");
	*c = keep;
	/* Refused before the tails are counted: none need be there. */
	pt.tail_len[4][0] = 0;
	c->dir[0].pump.pending = OPT_MAX_PIPE_SIZE + 1ull;
	assert_refused("more bytes than any buffer");
	c->dir[0].pump.pending = UINT64_MAX;
	assert_refused("more bytes than any buffer");
	pt.tail_len[4][0] = -1;
	*c = keep;
	/* Bytes in flight before the connection opened. */
	pt.c[1].dir[0].pump.pending = 5;
	assert_refused("before the connection opened");
	pt.c[1].dir[0].pump.pending = 0;
	pt.c[2].dir[1].pump.in_pipe = 5;
	assert_refused("before the connection opened");
	pt.c[2].dir[1].pump.in_pipe = 0;
	pt.c[3].dir[0].pipe_rd = (int32_t)pt.nfds;
	pt.c[3].dir[0].pipe_wr = (int32_t)pt.nfds + 1;
	pt.nfds += 2;
	assert_refused("before the connection opened");
}

static void test_conn_tails(void **state)
{
	struct img_conn *c = &pt.c[4], keep = *c;

	/* Each tail a byte short, then a byte long. */
	for (unsigned k = 0; k < 4; k++) {
		size_t own[4] = { c->dir[0].pump.pending,
				  c->dir[1].pump.pending, c->timing_len,
				  c->trace_len };

		pt.tail_len[4][k] = (long)own[k] + 1;
		if (k == 1) {
			/* direction 1 holds no bytes: give it some room */
			pt.tail_len[4][0] = PEND0 + 1;
		}
		assert_refused("tails do not add up");
		pt.tail_len[4][0] = -1;
		if (own[k]) {
			pt.tail_len[4][k] = (long)own[k] - 1;
			assert_refused("tails do not add up");
		}
		pt.tail_len[4][k] = -1;
	}
	/* A closed connection with a tail. */
	pt.tail_len[1][0] = 3;
	assert_refused("tails do not add up");
	pt.tail_len[1][0] = -1;

	/* Capture tails of the wrong size. */
	c->trace_len = sizeof(struct trace_conn_saved) - 1;
	assert_refused("capture of the wrong size");
	c->trace_len = sizeof(struct trace_conn_saved) + 1;
	assert_refused("capture of the wrong size");
	*c = keep;

	/* A latency table whose count and length disagree. */
	struct timing_saved *tm = calloc(1, sizeof(*tm));

	assert_non_null(tm);
	memcpy(tm, pt.timing[4], timing_saved_len(NREQ));
	tm->nreq = NREQ + 1;
	memcpy(pt.timing[4], tm, timing_saved_len(NREQ));
	assert_refused("latency table of the wrong size");
	tm->nreq = NREQ - 1;
	memcpy(pt.timing[4], tm, timing_saved_len(NREQ));
	assert_refused("latency table of the wrong size");
	/* Over TIMING_MAX_REQUESTS, its length matching its count. */
	uint32_t over = TIMING_MAX_REQUESTS + 1;

	memcpy(pt.timing[4] + offsetof(struct timing_saved, nreq), &over,
	       sizeof(over));
	c->timing_len = (uint32_t)timing_saved_len(over);
	assert_refused("latency table of the wrong size");
	/* Shorter than the table's head. */
	c->timing_len = offsetof(struct timing_saved, nreq) + 2;
	assert_refused("latency table of the wrong size");
	c->timing_len = 0;
	c->trace_len = 0;
	/* No tails at all is fine. */
	size_t len;
	uint8_t *p = image_of(&len);

	assert_int_equal(decode_bytes(p, len, pt.nfds), 0);
	free(p);
	/* A full table is fine too. */
	tm->nreq = TIMING_MAX_REQUESTS;
	memcpy(pt.timing[4], tm, offsetof(struct timing_saved, req));
	c->timing_len = (uint32_t)timing_saved_len(TIMING_MAX_REQUESTS);
	p = image_of(&len);
	assert_int_equal(decode_bytes(p, len, pt.nfds), 0);
	free(p);
	free(tm);
}

/* 9,000 connections decode in linear time: a quadratic check would take
 * seconds. */
static void test_many(void **state)
{
	struct timespec t0, t1;
	struct image img;
	size_t len;
	uint8_t *p;
	double ms;

	for (unsigned i = NCONNS; i < MAX_CONNS; i++) {
		pt.c[i] = pt.c[2];
		pt.c[i].id = 5000 + i;
		pt.c[i].cli_fd = fd_index();
		pt.c[i].srv_fd = fd_index();
		pt.c[i].state = CS_OPEN;
		pt.c[i].dir[0].pump.pending = i % 64;
	}
	pt.nc = MAX_CONNS;
	pt.nfds = (size_t)next_fd;
	p = image_of(&len);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(image_decode(p, len, pt.nfds, &img, err, sizeof(err)),
			 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	printf("# %u connections (%zu bytes) decoded in %.2f ms\n", img.nconns,
	       len, ms);
	assert_int_equal(img.nconns, MAX_CONNS);
	assert_int_equal(img.conns[MAX_CONNS - 1].c.id, 5000 + MAX_CONNS - 1);
	assert_ptr_equal(img.conns[MAX_CONNS - 1].bytes[0] +
				 (MAX_CONNS - 1) % 64,
			 p + len);
	assert_true(ms < 1000);
	image_free(&img);
	free(p);
}

/* 30,000 listener records (a socket each) decode in well under a
 * second, and a duplicate among them is still found: a pairwise check
 * took seconds. */
static void test_many_listeners(void **state)
{
	enum { N = 30000 };
	struct timespec t0, t1;
	struct image_writer w;
	struct img_listener l;
	double ms;
	int r;

	for (int dup = 0; dup < 2; dup++) {
		image_write_init(&w);
		image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc),
				NULL, NULL, 0);
		for (unsigned i = 0; i < N; i++) {
			l = (struct img_listener){ .worker = i % NWORKERS,
						   .fd = (int32_t)(i + 1) };
			snprintf(l.name, sizeof(l.name),
				 "a-listener-of-a-long-name-%u",
				 dup && i == N - 1 ? 0 : i / NWORKERS);
			l.worker = dup && i == N - 1 ? 0 : l.worker;
			image_write_put(&w, IMG_LISTENER, &l, sizeof(l), NULL,
					NULL, 0);
		}
		assert_int_equal(image_write_finish(&w), 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = decode_bytes(w.p, w.len, N + 1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1e3 +
		     (t1.tv_nsec - t0.tv_nsec) / 1e6;
		printf("# %u listener records%s decoded in %.2f ms\n", N,
		       dup ? " (one twice)" : "", ms);
		assert_int_equal(r, dup ? -1 : 0);
		if (dup)
			assert_non_null(strstr(
				err,
				"two sockets of one listener in one worker"));
		assert_true(ms < 1000);
		image_write_free(&w);
	}
}

/* An image of the process record and @n QUIC records @q, with @nfds
 * descriptors; its decode's result, and @img filled in on success. */
static int quic_image(const struct img_quic *q, unsigned n, size_t nfds,
		      struct image *img)
{
	struct image_writer w;
	int r;

	image_write_init(&w);
	image_write_put(&w, IMG_PROCESS, &pt.proc, sizeof(pt.proc), NULL, NULL,
			0);
	for (unsigned i = 0; i < n; i++)
		image_write_put(&w, IMG_QUIC, &q[i], sizeof(q[i]), NULL, NULL,
				0);
	assert_int_equal(image_write_finish(&w), 0);
	err[0] = '\0';
	errno = 0;
	r = image_decode(w.p, w.len, nfds, img, err, sizeof(err));
	image_write_free(&w);
	return r;
}

static void test_quic(void **state)
{
	struct img_quic q[CONFIG_MAX_LISTENERS + 1];
	struct image img;
	size_t nfds = pt.nfds + CONFIG_MAX_LISTENERS + 1;

	memset(q, 0, sizeof(q));
	for (unsigned i = 0; i <= CONFIG_MAX_LISTENERS; i++) {
		snprintf(q[i].name, sizeof(q[i].name), "q%u", i);
		q[i].addrlen = 16;
		q[i].map_fd = (int32_t)(pt.nfds + i);
	}
	/* Two listeners' maps: both seen, by name and descriptor. */
	assert_int_equal(quic_image(q, 2, nfds, &img), 0);
	assert_int_equal(img.nquic, 2);
	assert_string_equal(img.quic[1].name, "q1");
	assert_int_equal(img.quic[1].map_fd, (int32_t)pt.nfds + 1);
	image_free(&img);
	/* As many as a process has listeners, and no more. */
	assert_int_equal(quic_image(q, CONFIG_MAX_LISTENERS, nfds, &img), 0);
	image_free(&img);
	assert_int_equal(
		quic_image(q, CONFIG_MAX_LISTENERS + 1, nfds, &img), -1);
	assert_non_null(strstr(err, "more QUIC records than"));
	image_free(&img);
	/* A second record of one listener, a name not ended, an address
	 * longer than its field, a descriptor not sent or named twice. */
	snprintf(q[1].name, sizeof(q[1].name), "q0");
	assert_int_equal(quic_image(q, 2, nfds, &img), -1);
	assert_non_null(strstr(err, "two QUIC records of one listener"));
	image_free(&img);
	memset(q[1].name, 'x', sizeof(q[1].name));
	assert_int_equal(quic_image(q, 2, nfds, &img), -1);
	assert_non_null(strstr(err, "QUIC record with a bad field"));
	image_free(&img);
	snprintf(q[1].name, sizeof(q[1].name), "q1");
	q[1].addrlen = sizeof(q[1].addr) + 1;
	assert_int_equal(quic_image(q, 2, nfds, &img), -1);
	assert_non_null(strstr(err, "QUIC record with a bad field"));
	image_free(&img);
	q[1].addrlen = 16;
	q[1].map_fd = (int32_t)nfds;
	assert_int_equal(quic_image(q, 2, nfds, &img), -1);
	assert_non_null(strstr(err, "QUIC record names a bad descriptor"));
	image_free(&img);
	q[1].map_fd = q[0].map_fd;
	assert_int_equal(quic_image(q, 2, nfds, &img), -1);
	assert_non_null(strstr(err, "QUIC record names a bad descriptor"));
	image_free(&img);
}

/* Every test starts from setup()'s valid records. */
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_round_trip),
		T(test_minimal),
		T(test_header),
		T(test_every_prefix),
		T(test_trailing_and_long),
		T(test_process_record),
		T(test_listener),
		T(test_lstats),
		T(test_conn_fields),
		T(test_conn_fds),
		T(test_conn_pipes),
		T(test_conn_tails),
		T(test_many),
		T(test_many_listeners),
		T(test_quic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
