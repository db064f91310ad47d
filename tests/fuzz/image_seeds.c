// SPDX-License-Identifier: GPL-2.0-or-later
/* image_seeds.c - write a seed corpus for fuzz_image
 *
 * The image's records are this build's structs, so its seeds are written
 * by this build's writer (image_write_*()), not by a script that would have to
 * know every field's offset. Each seed is a valid image of at most 16
 * descriptors: a process record alone; listeners with their counters;
 * QUIC listeners' steering maps;
 * a connection in each stage that can be handed over; open connections
 * with pending bytes, a pipe, a latency table and a capture.
 *
 * Usage: image_seeds DIR
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn/conn-t.h"
#include "handover/image.h"

#define NWORDS 4

/**
 * struct seed - the image being written
 * @w:		the writer
 * @nfd:	descriptor indices given out
 */
struct seed {
	struct image_writer w;
	int32_t nfd;
};

/* The process record, every image's first. */
static void put_process(struct seed *s)
{
	struct img_process p = { .nworkers = 2,
				 .pid = 100,
				 .last_id = 50,
				 .now = 1000.5,
				 .metrics_fd = s->nfd++,
				 .control_fd = -1,
				 .control_ro_fd = -1,
				 .lstats_words = NWORDS,
				 .accepted = 9 };

	image_write_put(&s->w, IMG_PROCESS, &p, sizeof(p), NULL, NULL, 0);
}

/* A listener's socket and counters in both workers. */
static void put_listener(struct seed *s, const char *name)
{
	for (uint32_t w = 0; w < 2; w++) {
		struct img_listener l = { .worker = w, .fd = s->nfd++ };
		struct img_lstats st = { .worker = w };
		uint64_t words[NWORDS] = { 1, 2, 3, w };
		const void *t[1] = { words };
		size_t tl[1] = { sizeof(words) };

		snprintf(l.name, sizeof(l.name), "%s", name);
		snprintf(st.name, sizeof(st.name), "%s", name);
		image_write_put(&s->w, IMG_LISTENER, &l, sizeof(l), NULL, NULL,
				0);
		image_write_put(&s->w, IMG_LSTATS, &st, sizeof(st), t, tl, 1);
	}
}

/* A QUIC listener's steering map. */
static void put_quic(struct seed *s, const char *name)
{
	struct img_quic q = { .addrlen = 16, .map_fd = s->nfd++ };

	snprintf(q.name, sizeof(q.name), "%s", name);
	q.addr[0] = 2; /* AF_INET, little-endian sa_family */
	image_write_put(&s->w, IMG_QUIC, &q, sizeof(q), NULL, NULL, 0);
}

/* A connection in @state; an open one with @pending bytes in direction
 * 0, a pipe in direction 1 if @pipe, and its tails and a session's view
 * if @tails. */
static void put_conn(struct seed *s, uint32_t state, size_t pending, int pipe,
		     int tails)
{
	static struct timing_saved tm;
	static struct trace_conn_saved tr;
	uint8_t bytes[256];
	struct img_conn c = { .id = 7 + (uint64_t)s->w.nrec,
			      .worker = s->w.nrec % 2,
			      .state = state,
			      .cli_fd = s->nfd++,
			      .srv_fd = state >= CS_CONNECTING ? s->nfd++ : -1,
			      .started = 990,
			      .deadline = 1010,
			      .last_active = 999,
			      .unauth = 1,
			      .smb = 1 };
	const void *t[4] = { bytes, NULL, &tm, &tr };
	size_t tl[4] = { 0 };

	snprintf(c.listener, sizeof(c.listener), "smb");
	memcpy(c.peer, &(sa_family_t){ AF_INET }, sizeof(sa_family_t));
	snprintf(c.cli_text, sizeof(c.cli_text), "192.0.2.1:445");
	for (unsigned i = 0; i < 2; i++)
		c.dir[i].pipe_rd = c.dir[i].pipe_wr = -1;
	if (state == CS_OPEN) {
		for (size_t i = 0; i < sizeof(bytes); i++)
			bytes[i] = (uint8_t)i;
		/* An SMB2 frame's prefix and magic, for the framer. */
		memcpy(bytes, "\0\0\0\x44\xfeSMB", 8);
		c.dir[0].pump = (struct pump_saved){ .pending = pending,
						     .copied = pending };
		tl[0] = pending;
		if (pipe) {
			c.dir[1].pump.in_pipe = 4096;
			c.dir[1].pipe_rd = s->nfd++;
			c.dir[1].pipe_wr = s->nfd++;
		}
		if (tails) {
			memset(&tm, 0, sizeof(tm));
			tm.nreq = 2;
			tm.req[0] = (struct timing_saved_request){ 1, 100, 0, 8,
								   0 };
			tm.req[1] = (struct timing_saved_request){ 2, 200, 5, 9,
								   1 };
			memset(&tr, 0, sizeof(tr));
			snprintf(tr.what, sizeof(tr.what), "conn 7");
			c.timing_len = (uint32_t)timing_saved_len(tm.nreq);
			c.trace_len = sizeof(tr);
			tl[2] = c.timing_len;
			tl[3] = c.trace_len;
			/* A session's view, as smb_who_save() writes it. */
			c.who = (struct smb_who_saved){ .session_id = 0x1234,
							.present = 1,
							.auth = 1,
							.nshares = 1,
							.open_files = 2,
							.tree_id = { 5 } };
			snprintf(c.who.user, sizeof(c.who.user), "alice");
			snprintf(c.who.domain, sizeof(c.who.domain), "EAST");
			snprintf(c.who.share[0], sizeof(c.who.share[0]),
				 "share");
		}
	}
	image_write_put(&s->w, IMG_CONN, &c, sizeof(c), t, tl, 4);
}

/* Write the image to DIR/image-N. */
static int save(struct seed *s, const char *dir, int n)
{
	char path[4096], err[256];
	struct image img;
	FILE *f;
	int r;

	if (image_write_finish(&s->w))
		return -1;
	/* A seed the decoder refuses would seed nothing past the header. */
	r = image_decode(s->w.p, s->w.len, 16, &img, err, sizeof(err));
	image_free(&img);
	if (r) {
		fprintf(stderr, "image_seeds: seed %d: %s\n", n, err);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/image-%d", dir, n);
	if (!(f = fopen(path, "wb")))
		return -1;
	if (fwrite(s->w.p, 1, s->w.len, f) != s->w.len) {
		fclose(f);
		return -1;
	}
	image_write_free(&s->w);
	return fclose(f);
}

int main(int argc, char **argv)
{
	struct seed s;
	int n = 0, r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: image_seeds DIR\n");
		return 2;
	}
	/* A process record alone. */
	s = (struct seed){ 0 };
	image_write_init(&s.w);
	put_process(&s);
	r |= save(&s, argv[1], n++);
	/* Listeners and counters, no connection. */
	image_write_init(&s.w);
	s.nfd = 0;
	put_process(&s);
	put_listener(&s, "smb");
	put_listener(&s, "other");
	r |= save(&s, argv[1], n++);
	/* A TCP listener and two QUIC listeners' maps. */
	image_write_init(&s.w);
	s.nfd = 0;
	put_process(&s);
	put_listener(&s, "smb");
	put_quic(&s, "quic");
	put_quic(&s, "quic2");
	r |= save(&s, argv[1], n++);
	/* A connection in each stage. */
	image_write_init(&s.w);
	s.nfd = 0;
	put_process(&s);
	put_listener(&s, "smb");
	put_conn(&s, CS_PROXY_HEADER, 0, 0, 0);
	put_conn(&s, CS_HANDSHAKE, 0, 0, 0);
	put_conn(&s, CS_CONNECTING, 0, 0, 0);
	put_conn(&s, CS_OPEN, 0, 0, 0);
	r |= save(&s, argv[1], n++);
	/* Open connections with bytes, a pipe and tails. */
	image_write_init(&s.w);
	s.nfd = 0;
	put_process(&s);
	put_conn(&s, CS_OPEN, 100, 1, 1);
	put_conn(&s, CS_OPEN, 8, 0, 1);
	r |= save(&s, argv[1], n++);
	if (r)
		perror("image_seeds");
	return r ? 1 : 0;
}
