// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz_image.c - libFuzzer harness for the handover image's decoder
 *
 * The input is an image as the old process would send it. The new one
 * decodes it while it still holds root, so besides what ASan and UBSan
 * catch the harness checks:
 *   - image_decode() with 0, 16 and 65,536 descriptors either refuses
 *     with one line or returns views that lie inside the input: each
 *     direction's pending bytes, the latency and capture tails;
 *   - an image decoded with 16 descriptors decodes with more;
 *   - every decoded connection goes through the restores the new process
 *     runs on it, on state set up as connmove_adopt() does: each direction's
 *     framer (smb_framer_restore() on a fresh framer, which then reads
 *     the direction's pending bytes), its pump (pump_restore() with a
 *     buffer pool; a direction that holds a pipe is given none, for the
 *     pipe's two ends are descriptors this harness does not have, and is
 *     refused), the latency table (timing_restore()) and the capture
 *     (trace_conn_restore()) and the session's view (smb_who_restore(),
 *     whose checks must refuse what is not a view: a view it takes
 *     saves back to the same bytes);
 *   - everything they took is given back: LeakSanitizer sees no leak.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smb/framer.h"
#include "handover/image.h"
#include "io/pump.h"
#include "observe/timing.h"
#include "observe/trace.h"
#include "smb/who.h"

static const struct smb_thresholds th = { { 1024, 1024, 4096 } };
static const size_t nfds_tried[] = { 0, 16, 65536 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/**
 * inside() - does a run of bytes lie inside the input
 * @p:		its first byte, or NULL
 * @n:		its length
 * @data:	the input
 * @size:	its length
 *
 * Return: true if it does (or @n is 0).
 */
static int inside(const uint8_t *p, size_t n, const uint8_t *data, size_t size)
{
	if (!n)
		return 1;
	return p && p >= data && n <= size && (size_t)(p - data) <= size - n;
}

/**
 * restore_framer() - one direction's framer, as the new process restores it
 * @s:		its saved state
 * @bytes:	the direction's pending bytes, fed after the restore
 * @n:		how many
 */
static void restore_framer(const struct smb_framer_saved *s,
			   const uint8_t *bytes, size_t n)
{
	static struct smb_dir_stats st;
	struct smb_framer f;

	memset(&st, 0, sizeof(st));
	smb_framer_init(&f, &th, &st);
	if (smb_framer_restore(&f, s))
		return;
	if (f.held > f.want || f.want > SMB_HOLD_MAX)
		abort();
	if (f.state == FR_SKIP &&
	    smb_framer_splice_span(&f) > f.elem_end - f.pos)
		abort();
	smb_framer_feed(&f, bytes, n);
	if (f.held > f.want || f.want > SMB_HOLD_MAX)
		abort();
}

/**
 * restore_pump() - one direction's pump, as the new process restores it
 * @s:		its saved state
 * @bytes:	its pending bytes
 * @bufs:	the worker's buffers
 */
static void restore_pump(const struct pump_saved *s, const uint8_t *bytes,
			 struct buf_pool *bufs)
{
	static struct pump_stats tot;
	struct pump h;
	int r;

	pump_init(&h, NULL, NULL, NULL, bufs, true, NULL, &tot);
	r = pump_restore(&h, s, bytes, NULL);
	if (!r && (s->in_pipe || !pump_pending(&h) != !s->pending))
		abort();
	if (!r && s->pending && memcmp(h.buf, bytes, s->pending))
		abort();
	/* pump_release() gives a buffer with pending bytes back as it is. */
	pump_release(&h);
}

/**
 * restore_who() - the session's view, as observe_adopt_who() restores it
 * @s:	what the record holds
 */
static void restore_who(const struct smb_who_saved *s)
{
	struct smb_who w;
	struct smb_who_saved back;

	if (!s->present || smb_who_restore(&w, s))
		return;
	smb_who_save(&w, &back);
	if (memcmp(&back, s, sizeof(back)))
		abort();
}

/**
 * restore_conn() - what the new process restores of a connection
 * @v:		the connection
 * @bufs:	the worker's buffers
 * @pool:	the worker's timing blocks
 */
static void restore_conn(const struct img_conn_view *v, struct buf_pool *bufs,
			 struct timing_pool *pool)
{
	static struct totals tot;
	const struct img_conn *c = &v->c;

	for (unsigned i = 0; i < 2; i++) {
		restore_framer(&c->dir[i].fr, v->bytes[i],
			       c->dir[i].pump.pending);
		restore_pump(&c->dir[i].pump, v->bytes[i], bufs);
	}
	if (v->timing) {
		struct timing_saved *s = calloc(1, sizeof(*s));
		struct timing tm;

		if (!s)
			abort();
		if (c->timing_len > sizeof(*s))
			abort();
		memcpy(s, v->timing, c->timing_len);
		timing_init(&tm, pool, &tot);
		timing_restore(&tm, s);
		timing_end(&tm);
		free(s);
	}
	if (v->trace) {
		struct trace_conn_saved s;
		struct trace_conn *t;

		memcpy(&s, v->trace, sizeof(s));
		if (!trace_conn_restore(&t, &s) && t)
			trace_conn_free(t);
	}
	restore_who(&c->who);
}

/**
 * check() - a decoded image's views lie inside the input
 * @img:	the image
 * @data:	the input
 * @size:	its length
 */
static void check(const struct image *img, const uint8_t *data, size_t size)
{
	for (unsigned i = 0; i < img->nst; i++)
		if (!inside(img->st[i].words,
			    img->proc.lstats_words * sizeof(uint64_t), data,
			    size))
			abort();
	for (unsigned i = 0; i < img->nconns; i++) {
		const struct img_conn_view *v = &img->conns[i];

		for (unsigned d = 0; d < 2; d++)
			if (!inside(v->bytes[d], v->c.dir[d].pump.pending, data,
				    size))
				abort();
		if (!v->timing != !v->c.timing_len ||
		    !inside(v->timing, v->c.timing_len, data, size))
			abort();
		if (!v->trace != !v->c.trace_len ||
		    !inside(v->trace, v->c.trace_len, data, size))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timing_pool pool = { 0 };
	struct buf_pool bufs;
	struct image img;
	char err[256];
	int ok[3];

	bufpool_init(&bufs, 4096, 4 * 4096);
	for (unsigned k = 0; k < 3; k++) {
		err[0] = '\0';
		ok[k] = !image_decode(data, size, nfds_tried[k], &img, err,
				      sizeof(err));
		if (!ok[k] && (!err[0] || strchr(err, '\n')))
			abort();
		if (ok[k]) {
			check(&img, data, size);
			for (unsigned i = 0; i < img.nconns; i++)
				restore_conn(&img.conns[i], &bufs, &pool);
		}
		image_free(&img);
	}
	if (ok[1] && !ok[2])
		abort();
	bufpool_destroy(&bufs);
	/* The first trim marks the spares unused, the second frees them. */
	timing_pool_trim(&pool);
	timing_pool_trim(&pool);
	return 0;
}
