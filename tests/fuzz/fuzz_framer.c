// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz_framer.c - libFuzzer harness for the SMB framer
 *
 * The first input byte seeds how the rest is split: random chunk sizes for
 * feeds and random sizes for splice advances wherever the framer allows
 * one, as the pumps would. The same input is also fed whole. The harness
 * checks, besides what ASan and UBSan catch:
 *   - the framer's offsets stay inside the frame and its hold buffer;
 *   - a splice span never runs past the current element;
 *   - every message the observer is told of lies inside its frame, after
 *     the frames before it, and its held bytes are the input's own;
 *   - split and whole feeds agree on every message count, on the
 *     messages the observer saw, on whether a session setup succeeded,
 *     and on the state they end in;
 *   - smb_opening_judge(), on the input as a client's first bytes, asks
 *     for more only up to SMB_OPENING_MAX, and says why it refuses;
 *   - the session's view (smb/who.c), fed requests and responses alike:
 *     what it holds is one a view may hold (smb_who_restore() takes
 *     what smb_who_save() writes of it: names NUL-terminated, zero after
 *     the NUL, without control characters, shares within bounds), and
 *     split and whole feeds agree on it.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smb/framer.h"
#include "smb/opening.h"
#include "smb/who.h"

static const struct smb_thresholds th = { { 1024, 1024, 4096 } };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_invariants(const struct smb_framer *f)
{
	if (f->held > f->want || f->want > SMB_HOLD_MAX)
		abort();
	/* A zero limit would make recv() return 0, read as end of file. */
	if (f->state != FR_OPAQUE && smb_framer_copy_limit(f) == 0)
		abort();
	if (f->state == FR_HEADER || f->state == FR_SKIP) {
		if (f->pos > f->frame_len || f->elem_end > f->frame_len ||
		    f->elem_start > f->elem_end)
			abort();
	}
	if (f->state == FR_SKIP) {
		if (f->pay_start > f->pay_end || f->pay_end > f->elem_end ||
		    f->pos > f->elem_end)
			abort();
		if (smb_framer_splice_span(f) > f->elem_end - f->pos)
			abort();
	}
}

/**
 * check_opening() - judge the input as the first bytes a client sent
 * @p:	the bytes
 * @n:	how many
 */
static void check_opening(const uint8_t *p, size_t n)
{
	size_t cap = n < SMB_OPENING_MAX ? n : SMB_OPENING_MAX, need = 0;
	const char *why = NULL;
	enum smb_opening v = smb_opening_judge(p, cap, &need, &why);

	if (v == SMB_OPENING_MORE && (need <= cap || need > SMB_OPENING_MAX))
		abort();
	if (v == SMB_OPENING_BAD && !why)
		abort();
}

/**
 * struct watch - what an observer saw of one run
 * @data:	the input, to compare held bytes with
 * @size:	its length
 * @next_off:	the least a frame's offset may be
 * @count:	messages seen
 * @hash:	a digest of their fields, to compare split and whole runs
 */
struct watch {
	const uint8_t *data;
	size_t size;
	uint64_t next_off;
	uint64_t count, hash;
};

static void observe(void *ctx, const struct smb_msg *m)
{
	struct watch *w = ctx;
	uint64_t at = m->frame_off + SMB_PREFIX_LEN + m->start;

	if (m->frame_off < w->next_off || m->start > m->end ||
	    m->end > m->frame_len || m->pay_start > m->pay_end ||
	    m->pay_end > m->end || m->hdr_len > SMB_HOLD_MAX ||
	    at + m->hdr_len > w->size ||
	    memcmp(m->hdr, w->data + at, m->hdr_len))
		abort();
	w->next_off = m->frame_off;
	w->count++;
	w->hash = w->hash * 1000003u ^ m->frame_off ^ (uint64_t)m->start << 20 ^
		  m->end ^ (uint64_t)m->command << 40 ^ m->message_id ^ m->kind;
}

/**
 * struct who_slot - a run's view, made when the framer first asks
 * @w:		the view
 * @made:	it was asked for with @create
 */
struct who_slot {
	struct smb_who w;
	bool made;
};

static struct smb_who *give_who(void *ctx, bool create)
{
	struct who_slot *s = ctx;

	if (create && !s->made) {
		memset(&s->w, 0, sizeof(s->w));
		s->made = true;
	}
	return s->made ? &s->w : NULL;
}

/**
 * check_who() - a view is one a view may be, and split agrees with whole
 * @split:	the split run's
 * @whole:	the whole run's
 */
static void check_who(const struct who_slot *split,
		      const struct who_slot *whole)
{
	struct smb_who_saved a, b;
	struct smb_who back;

	smb_who_save(split->made ? &split->w : NULL, &a);
	smb_who_save(whole->made ? &whole->w : NULL, &b);
	if (memcmp(&a, &b, sizeof(a)))
		abort();
	if (a.present && smb_who_restore(&back, &a))
		abort();
}

static uint32_t rng_next(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct smb_dir_stats split_st, whole_st;
	struct smb_framer split, whole;
	struct watch ws = { 0 }, ww = { 0 };
	static struct who_slot who_split, who_whole;
	uint32_t seed;
	size_t off = 0, k, span;

	if (size < 1)
		return 0;
	seed = data[0];
	data++;
	size--;

	memset(&whole_st, 0, sizeof(whole_st));
	memset(&split_st, 0, sizeof(split_st));
	ws.data = ww.data = data;
	ws.size = ww.size = size;
	check_opening(data, size);
	smb_framer_init(&whole, &th, &whole_st);
	smb_framer_observe(&whole, observe, &ww);
	who_whole.made = who_split.made = false;
	smb_framer_who(&whole, give_who, &who_whole);
	smb_framer_feed(&whole, data, size);
	check_invariants(&whole);

	smb_framer_init(&split, &th, &split_st);
	smb_framer_observe(&split, observe, &ws);
	smb_framer_who(&split, give_who, &who_split);
	while (off < size) {
		span = smb_framer_splice_span(&split);
		if (span && rng_next(&seed) % 2) {
			k = 1 + rng_next(&seed) % span;
			if (k > size - off)
				k = size - off;
			smb_framer_advance(&split, k);
		} else {
			k = 1 + rng_next(&seed) % 300;
			if (k > size - off)
				k = size - off;
			smb_framer_feed(&split, data + off, k);
		}
		off += k;
		check_invariants(&split);
	}

	if (split.state != whole.state || ws.count != ww.count ||
	    ws.hash != ww.hash ||
	    memcmp(split_st.commands, whole_st.commands,
		   sizeof(whole_st.commands)) ||
	    split.facts.reads != whole.facts.reads ||
	    split.facts.read_bytes != whole.facts.read_bytes ||
	    split.facts.writes != whole.facts.writes ||
	    split.facts.session_ok != whole.facts.session_ok ||
	    split_st.encrypted != whole_st.encrypted ||
	    memcmp(split_st.payloads, whole_st.payloads,
		   sizeof(whole_st.payloads)))
		abort();
	check_who(&who_split, &who_whole);
	return 0;
}
