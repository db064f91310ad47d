// SPDX-License-Identifier: GPL-2.0-or-later
/* walk.c - walk each reassembled direction with the daemon's own framer
 *
 * Theory of operation: every direction of every connection gets a framer
 * (smb/framer.c, the code the daemon runs) and an observer that counts
 * each message it reports (tally.c). The reassembler delivers the stream
 * in order as bytes and holes:
 *
 *  - bytes are fed to the framer, as the daemon feeds it what it copies;
 *  - a hole (a lost segment, or payload bytes a snaplen cut off) is passed
 *    over with smb_framer_advance() as far as smb_framer_skip_span()
 *    allows: inside a payload, a gap before it or the rest of a message
 *    the framer never parses, which is where nearly all the bytes of a
 *    READ or WRITE stream lie. The framing holds, and the message was
 *    already counted: its header came before the hole.
 *  - a hole over bytes the framer had to see (a transport prefix, a
 *    header) loses the framing: the messages whose headers it held cannot
 *    be counted, and nothing says where the next frame starts. The
 *    direction then searches what follows for a plausible frame start
 *    (resync.c) and starts a fresh framer there. So does a direction the
 *    capture joined in the middle, and one whose framer gave up on a
 *    frame it could not make sense of.
 *
 * Everything passed while searching is counted, so the report can say
 * how much of the capture its figures cover.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "walk.h"

/**
 * struct walk_half - one direction of a connection
 * @fr:		its framer, while @synced
 * @rs:		the search for a frame start, while not
 * @conn:	its connection
 * @dir:	which direction it is
 * @synced:	the framer is following the stream's frames
 * @framed:	a frame was found at some point (or the stream was
 *		followed from its start)
 * @data:	bytes came
 * @walked:	bytes fed and advanced since the framer started: the
 *		framer's stream offsets count from there
 */
struct walk_half {
	struct smb_framer fr;
	struct resync rs;
	struct walk_conn *conn;
	enum rs_dir dir;
	bool synced, framed, data;
	uint64_t walked;
};

/**
 * struct walk_conn - one connection
 * @w:		the walk
 * @half:	its directions
 * @tc:		its tally's state (outstanding READs)
 */
struct walk_conn {
	struct walk *w;
	struct walk_half half[2];
	struct tally_conn tc;
};

/**
 * walk_init() - start a walk of a capture
 * @w:	the walk
 */
void walk_init(struct walk *w)
{
	memset(w, 0, sizeof(*w));
	for (int c = 0; c < SMB_NCLASSES; c++)
		w->th.min[c] = SMB_THRESHOLD_OFF;
}

/**
 * observe() - the framer reports a message: count it
 * @ctx:	the direction
 * @m:		the message
 */
static void observe(void *ctx, const struct smb_msg *m)
{
	struct walk_half *h = ctx;
	struct walk_conn *c = h->conn;

	tally_message(&c->w->tally, &c->tc, h->dir, m);
}

/**
 * start_framer() - follow the stream's frames from here, a frame's start
 * @h:	the direction
 */
static void start_framer(struct walk_half *h)
{
	struct walk *w = h->conn->w;

	smb_framer_init(&h->fr, &w->th, &w->st[h->dir]);
	smb_framer_observe(&h->fr, observe, h);
	resync_reset(&h->rs);
	h->walked = 0;
	h->synced = true;
	h->framed = true;
}

/**
 * lose_sync() - the framing is lost: search for the next frame
 * @h:	the direction
 */
static void lose_sync(struct walk_half *h)
{
	h->synced = false;
	resync_reset(&h->rs);
	/* The responses of outstanding READs may pass unseen now. */
	if (h->dir == RS_TO_CLIENT)
		tally_forget_outstanding(&h->conn->tc);
}

/**
 * feed() - walk bytes with the framer
 * @h:	the direction, synced
 * @p:	the bytes
 * @n:	how many
 *
 * When the framer gives up on a frame, what follows that frame's first
 * byte in @p is searched again: a frame start found by the search that
 * turns out not to be one must not hide a real one behind it.
 *
 * Return: bytes of @p walked; fewer than @n when the framer gave up, and
 * the rest is to be searched.
 */
static size_t feed(struct walk_half *h, const uint8_t *p, size_t n)
{
	struct walk_stats *ws = &h->conn->w->ws;
	uint64_t base = h->walked, bad;

	smb_framer_feed(&h->fr, p, n);
	h->walked += n;
	if (!smb_framer_opaque(&h->fr))
		return n;
	ws->opaque++;
	if (!ws->opaque_why)
		ws->opaque_why = h->fr.why;
	lose_sync(h);
	bad = h->fr.frame_off; /* where the frame it gave up on starts */
	if (bad < base)
		return 0;
	return bad - base + 1 < n ? (size_t)(bad - base + 1) : n;
}

/**
 * search() - look for a frame start in bytes of a direction without framing
 * @h:	the direction, not synced
 * @p:	the bytes
 * @n:	how many
 *
 * Bytes passed count as unparsed. A frame may start in bytes kept from
 * earlier deliveries (counted then): they are walked from there, and then
 * @p from its start.
 *
 * Return: bytes of @p passed; the direction is synced unless all @n were.
 */
static size_t search(struct walk_half *h, const uint8_t *p, size_t n)
{
	struct walk_stats *ws = &h->conn->w->ws;
	uint8_t kept[RESYNC_WINDOW];
	size_t nkept = h->rs.n, k;
	long at = resync_find(&h->rs, p, n);

	if (at < 0) {
		ws->unparsed_bytes += n;
		return n;
	}
	if ((size_t)at < nkept) {
		k = nkept - (size_t)at;
		memcpy(kept, h->rs.carry + at, k);
		ws->unparsed_bytes -= k;
		start_framer(h);
		feed(h, kept, k);
		return 0;
	}
	k = (size_t)at - nkept;
	ws->unparsed_bytes += k;
	start_framer(h);
	return k;
}

/**
 * walk_bytes() - walk bytes, searching for frames where the framing is lost
 * @h:	the direction
 * @p:	the bytes
 * @n:	how many
 *
 * A loop, not a recursion: every turn passes at least one byte or finds
 * framing, so it ends.
 */
static void walk_bytes(struct walk_half *h, const uint8_t *p, size_t n)
{
	size_t k;

	while (n) {
		k = h->synced ? feed(h, p, n) : search(h, p, n);
		p += k;
		n -= k;
	}
}

/**
 * walk_open() - a connection starts
 * @ctx:	the walk
 * @key:	its addresses
 *
 * Return: its state.
 */
static void *walk_open(void *ctx, const struct rs_key *key)
{
	struct walk_conn *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	c->w = ctx;
	for (int d = 0; d < 2; d++) {
		c->half[d].conn = c;
		c->half[d].dir = (enum rs_dir)d;
	}
	return c;
}

/**
 * walk_begin() - a direction's bytes start: from the stream's start, where
 * a frame starts, or from somewhere that must be searched
 * @conn:	the connection
 * @dir:	the direction
 * @at_start:	the stream's first byte comes next
 */
static void walk_begin(void *conn, enum rs_dir dir, bool at_start)
{
	struct walk_half *h = &((struct walk_conn *)conn)->half[dir];

	if (at_start)
		start_framer(h);
}

/**
 * walk_data() - the next bytes of a direction
 * @conn:	the connection
 * @dir:	the direction
 * @p:		the bytes
 * @n:		how many
 */
static void walk_data(void *conn, enum rs_dir dir, const uint8_t *p, size_t n)
{
	struct walk_half *h = &((struct walk_conn *)conn)->half[dir];

	h->data = true;
	walk_bytes(h, p, n);
}

/**
 * walk_hole() - the next bytes of a direction are missing
 * @conn:	the connection
 * @dir:	the direction
 * @n:		how many
 * @kind:	why (the same to the framer)
 *
 * What lies in spans the framer need not see is passed over unseen, as
 * the daemon passes what it splices; the rest loses the framing.
 */
static void walk_hole(void *conn, enum rs_dir dir, uint64_t n,
		      enum rs_hole_kind kind)
{
	struct walk_half *h = &((struct walk_conn *)conn)->half[dir];
	struct walk_stats *ws = &h->conn->w->ws;
	size_t k;

	h->data = true;
	if (!h->synced) {
		ws->unparsed_bytes += n;
		resync_reset(&h->rs); /* what follows does not continue it */
		return;
	}
	while (n && (k = smb_framer_skip_span(&h->fr))) {
		if (k > n)
			k = (size_t)n;
		smb_framer_advance(&h->fr, k);
		h->walked += k;
		ws->skipped_bytes += k;
		n -= k;
	}
	if (n) {
		ws->sync_lost++;
		ws->unparsed_bytes += n;
		lose_sync(h);
	}
}

/**
 * walk_close() - a connection is over
 * @conn:	the connection
 */
static void walk_close(void *conn)
{
	struct walk_conn *c = conn;

	for (int d = 0; d < 2; d++)
		if (c->half[d].data && !c->half[d].framed)
			c->w->ws.unframed++;
	tally_conn_end(&c->w->tally, &c->tc);
	free(c);
}

const struct rs_ops walk_ops = {
	.open = walk_open,
	.begin = walk_begin,
	.data = walk_data,
	.hole = walk_hole,
	.close = walk_close,
};
