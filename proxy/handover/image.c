// SPDX-License-Identifier: GPL-2.0-or-later
/* image.c - a process's connections as bytes, for a live handover
 *
 * Theory of operation: on SIGUSR2 the running process writes everything
 * the next one needs to carry on (handover_out.c) into an image: a header
 * (magic, format number, a layout check), then records, each a type, a
 * length and a struct of fixed-width fields, some followed by tails of
 * bytes. Descriptors do not go in the image; they travel beside it
 * (fdpass, howire.c) and records name them by index.
 *
 * Both ends are builds of smbsplice on one machine, so the structs are
 * written as they are in memory; the format number and the layout check
 * (the sizes of every record struct) make a build whose structs differ
 * refuse the image rather than misread it, and the old process then goes
 * on forwarding.
 *
 * The image is input all the same: the old process handles untrusted
 * bytes, and a fault there must not become one in its successor, which
 * decodes the image while it still holds root. So image_decode() trusts
 * nothing: every length is checked against what is left, every string
 * must end inside its field, every flag is 0 or 1, every descriptor
 * index is in range and named once, every worker exists. What it returns
 * has passed all of that; what a module restores of its own state
 * (framer, pump, timing, trace) that module checks again. The decoder is
 * fuzzed (tests/fuzz/fuzz_image.c).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn/conn-t.h"
#include "handover/image.h"

/**
 * struct img_head - the image's first bytes
 * @magic:	IMG_MAGIC and its NUL
 * @version:	IMG_VERSION
 * @layout:	image_layout() of the writer
 * @nrec:	records that follow
 * @pad:	zero
 */
struct img_head {
	char magic[8];
	uint32_t version, layout, nrec, pad;
};

/**
 * struct img_rec - a record's header
 * @type:	enum img_type
 * @len:	bytes that follow, the struct and its tails
 */
struct img_rec {
	uint32_t type, len;
};

/* Sizes are checked by the layout, offsets are not: name the ones a
 * reader would most likely reorder. */
_Static_assert(sizeof(struct img_head) == 24, "image header");
_Static_assert(sizeof(IMG_MAGIC) == 8, "magic fills its field");

/**
 * image_layout() - a number that changes when any record's size does
 *
 * Return: the sizes of every struct the image holds, mixed.
 */
static uint32_t image_layout(void)
{
	const size_t sizes[] = {
		sizeof(struct img_process),	 sizeof(struct img_listener),
		sizeof(struct img_lstats),	 sizeof(struct img_conn),
		sizeof(struct dir_saved),	 sizeof(struct pump_saved),
		sizeof(struct smb_framer_saved), sizeof(struct timing_saved),
		sizeof(struct trace_conn_saved), sizeof(struct smb_who_saved),
		sizeof(struct img_quic),
	};
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		h = (h ^ (uint32_t)sizes[i]) * 16777619u;
	return h;
}

/**
 * image_write_init() - start an empty image
 * @w:	the writer
 */
void image_write_init(struct image_writer *w)
{
	*w = (struct image_writer){ 0 };
	w->len = sizeof(struct img_head);
	w->cap = 1 << 16;
	w->p = calloc(1, w->cap);
	w->oom = !w->p;
}

/**
 * reserve() - room for @n more bytes
 * @w:	the writer
 * @n:	bytes
 *
 * Return: true if there is room.
 */
static bool reserve(struct image_writer *w, size_t n)
{
	size_t cap = w->cap;
	uint8_t *p;

	if (w->oom)
		return false;
	while (cap - w->len < n)
		cap *= 2;
	if (cap == w->cap)
		return true;
	p = realloc(w->p, cap);
	if (!p) {
		w->oom = true;
		return false;
	}
	w->p = p;
	w->cap = cap;
	return true;
}

/**
 * image_write_reserve() - make room at once for an image of about this size
 * @w:		the writer
 * @conns:	connections it will hold
 *
 * So that 9,000 connections are written without the image being copied
 * again and again as it grows: the copies were a part of the pause.
 */
void image_write_reserve(struct image_writer *w, size_t conns)
{
	size_t fds = 2 * conns + 64;
	int *p;

	reserve(w, conns * (sizeof(struct img_rec) + sizeof(struct img_conn)) +
			   (64u << 10));
	if (w->oom || fds <= w->fdcap ||
	    !(p = realloc(w->fds, fds * sizeof(*p))))
		return; /* image_write_fd() grows it as it goes */
	w->fds = p;
	w->fdcap = fds;
}

/**
 * image_write_fd() - a descriptor to send with the image
 * @w:	the writer
 * @fd:	the descriptor, or -1
 *
 * Return: its index, which records name it by; -1 for -1.
 */
int32_t image_write_fd(struct image_writer *w, int fd)
{
	int *fds;

	if (fd < 0 || w->oom)
		return -1;
	if (w->nfds == w->fdcap) {
		w->fdcap = w->fdcap ? 2 * w->fdcap : 256;
		fds = realloc(w->fds, w->fdcap * sizeof(*fds));
		if (!fds) {
			w->oom = true;
			return -1;
		}
		w->fds = fds;
	}
	w->fds[w->nfds] = fd;
	return (int32_t)w->nfds++;
}

/**
 * image_write_put() - append a record
 * @w:		the writer
 * @type:	what it is
 * @rec:	its struct
 * @len:	its size
 * @tails:	byte runs that follow it, or NULL
 * @tail_lens:	their lengths
 * @ntails:	how many
 */
void image_write_put(struct image_writer *w, enum img_type type,
		     const void *rec, size_t len, const void *const *tails,
		     const size_t *tail_lens, unsigned ntails)
{
	struct img_rec h = { .type = type, .len = (uint32_t)len };

	for (unsigned i = 0; i < ntails; i++)
		h.len += (uint32_t)tail_lens[i];
	if (!reserve(w, sizeof(h) + h.len))
		return;
	memcpy(w->p + w->len, &h, sizeof(h));
	memcpy(w->p + w->len + sizeof(h), rec, len);
	w->len += sizeof(h) + len;
	for (unsigned i = 0; i < ntails; i++) {
		if (tail_lens[i])
			memcpy(w->p + w->len, tails[i], tail_lens[i]);
		w->len += tail_lens[i];
	}
	w->nrec++;
}

/**
 * image_write_finish() - write the header
 * @w:	the writer, with every record in
 *
 * Return: 0, or -1 (ENOMEM) if memory ran out on the way.
 */
int image_write_finish(struct image_writer *w)
{
	struct img_head h = { .magic = IMG_MAGIC,
			      .version = IMG_VERSION,
			      .layout = image_layout(),
			      .nrec = w->nrec };

	if (w->oom) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(w->p, &h, sizeof(h));
	return 0;
}

/**
 * image_write_free() - free the writer's bytes (not the descriptors it names)
 * @w:	the writer
 */
void image_write_free(struct image_writer *w)
{
	free(w->p);
	free(w->fds);
	*w = (struct image_writer){ .oom = true };
}

/**
 * struct decoder - what decoding has seen so far
 * @img:	the image being filled
 * @nfds:	descriptors that came with it
 * @used:	which of them a record named, one bit each
 * @err:	where the reason goes
 * @errlen:	its size
 */
struct decoder {
	struct image *img;
	size_t nfds;
	uint8_t *used;
	char *err;
	size_t errlen;
};

/**
 * bad() - refuse the image
 * @d:		the decoder
 * @what:	why, for the log
 *
 * Return: -1.
 */
static int bad(struct decoder *d, const char *what)
{
	snprintf(d->err, d->errlen, "bad handover image: %s", what);
	errno = EINVAL;
	return -1;
}

/**
 * fd_ok() - may a record name this descriptor index
 * @d:		the decoder
 * @i:		the index
 * @optional:	-1 is allowed
 *
 * Return: true if it is in range and no record named it before.
 */
static bool fd_ok(struct decoder *d, int32_t i, bool optional)
{
	if (i == -1)
		return optional;
	if (i < 0 || (size_t)i >= d->nfds || d->used[i / 8] & (1u << (i % 8)))
		return false;
	d->used[i / 8] |= 1u << (i % 8);
	return true;
}

/**
 * flags_ok() - are these bytes each 0 or 1
 * @p:	the first
 * @n:	how many
 *
 * Return: true if they are.
 */
static bool flags_ok(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] > 1)
			return false;
	return true;
}

/**
 * str_ok() - does a string field end inside itself
 * @s:	the field
 * @n:	its size
 *
 * Return: true if it holds a NUL.
 */
static bool str_ok(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

/**
 * grow() - room for one more element of an array
 * @arr:	the array
 * @n:		elements in it
 * @size:	an element's size
 *
 * The array was grown by this function alone, from NULL.
 *
 * Return: the new element, zeroed, or NULL if memory ran out.
 */
static void *grow(void **arr, unsigned n, size_t size)
{
	void *p = *arr;

	/* Capacity doubles at each power of two: 9,000 connections cost
	 * 14 reallocations, not 9,000. */
	if (!(n & (n - 1))) {
		p = realloc(*arr, (n ? 2 * (size_t)n : 1) * size);
		if (!p)
			return NULL;
		*arr = p;
	}
	memset((char *)p + n * size, 0, size);
	return (char *)p + n * size;
}

/**
 * dec_process() - the process record
 * @d:		the decoder
 * @p:		its bytes
 * @len:	their count
 *
 * Return: 0, or -1.
 */
static int dec_process(struct decoder *d, const uint8_t *p, size_t len)
{
	struct img_process *pr = &d->img->proc;

	if (len != sizeof(*pr))
		return bad(d, "process record of the wrong size");
	memcpy(pr, p, sizeof(*pr));
	if (!pr->nworkers || pr->nworkers > OPT_MAX_WORKERS)
		return bad(d, "worker count out of range");
	if (!pr->lstats_words || pr->lstats_words > (1u << 16))
		return bad(d, "counter count out of range");
	if (!fd_ok(d, pr->metrics_fd, true) ||
	    !fd_ok(d, pr->control_fd, true) ||
	    !fd_ok(d, pr->control_ro_fd, true))
		return bad(d, "process record names a bad descriptor");
	return 0;
}

/**
 * dec_listener() - a listener record
 * @d:		the decoder
 * @p:		its bytes
 * @len:	their count
 *
 * Return: 0, or -1.
 */
static int dec_listener(struct decoder *d, const uint8_t *p, size_t len)
{
	struct image *img = d->img;
	struct img_listener *l;

	if (len != sizeof(*l))
		return bad(d, "listener record of the wrong size");
	if (!(l = grow((void **)&img->ls, img->nls, sizeof(*l))))
		return bad(d, "out of memory");
	img->nls++;
	memcpy(l, p, sizeof(*l));
	if (!str_ok(l->name, sizeof(l->name)) ||
	    l->worker >= img->proc.nworkers)
		return bad(d, "listener record with a bad field");
	if (!fd_ok(d, l->fd, false))
		return bad(d, "listener record names a bad descriptor");
	return 0;
}

/**
 * dec_quic() - a QUIC listener's map record
 * @d:		the decoder
 * @p:		its bytes
 * @len:	their count
 *
 * Return: 0, or -1.
 */
static int dec_quic(struct decoder *d, const uint8_t *p, size_t len)
{
	struct image *img = d->img;
	struct img_quic *q;

	if (len != sizeof(*q))
		return bad(d, "QUIC record of the wrong size");
	if (img->nquic == CONFIG_MAX_LISTENERS)
		return bad(d, "more QUIC records than a process has listeners");
	if (!(q = grow((void **)&img->quic, img->nquic, sizeof(*q))))
		return bad(d, "out of memory");
	img->nquic++;
	memcpy(q, p, sizeof(*q));
	if (!str_ok(q->name, sizeof(q->name)) || q->addrlen > sizeof(q->addr))
		return bad(d, "QUIC record with a bad field");
	for (unsigned i = 0; i + 1 < img->nquic; i++)
		if (!strcmp(img->quic[i].name, q->name))
			return bad(d, "two QUIC records of one listener");
	if (!fd_ok(d, q->map_fd, false))
		return bad(d, "QUIC record names a bad descriptor");
	return 0;
}

/**
 * ls_cmp() - order listener records by worker, then name
 * @a:	a pointer to one
 * @b:	a pointer to another
 *
 * Return: <0, 0 or >0 as for qsort().
 */
static int ls_cmp(const void *a, const void *b)
{
	const struct img_listener *x = *(const struct img_listener *const *)a;
	const struct img_listener *y = *(const struct img_listener *const *)b;

	if (x->worker != y->worker)
		return x->worker < y->worker ? -1 : 1;
	return strcmp(x->name, y->name);
}

/**
 * dec_ls_once() - is every listener's socket in a worker named once
 * @d:	the decoder, every record read
 *
 * Sorted, not compared pairwise: an image of 65,536 listener records
 * would otherwise keep the decoder busy for most of a minute.
 *
 * Return: 0, or -1.
 */
static int dec_ls_once(struct decoder *d)
{
	struct image *img = d->img;
	const struct img_listener **v;
	int r = 0;

	if (img->nls < 2)
		return 0;
	if (!(v = calloc(img->nls, sizeof(*v))))
		return bad(d, "out of memory");
	for (unsigned i = 0; i < img->nls; i++)
		v[i] = &img->ls[i];
	qsort(v, img->nls, sizeof(*v), ls_cmp);
	for (unsigned i = 0; i + 1 < img->nls && !r; i++)
		if (!ls_cmp(&v[i], &v[i + 1]))
			r = bad(d, "two sockets of one listener in one worker");
	free(v);
	return r;
}

/**
 * dec_lstats() - a counters record
 * @d:		the decoder
 * @p:		its bytes
 * @len:	their count
 *
 * Return: 0, or -1.
 */
static int dec_lstats(struct decoder *d, const uint8_t *p, size_t len)
{
	struct image *img = d->img;
	struct img_lstats_view *v;

	if (len != sizeof(v->s) + img->proc.lstats_words * sizeof(uint64_t))
		return bad(d, "counters record of the wrong size");
	if (!(v = grow((void **)&img->st, img->nst, sizeof(*v))))
		return bad(d, "out of memory");
	img->nst++;
	memcpy(&v->s, p, sizeof(v->s));
	v->words = p + sizeof(v->s);
	if (!str_ok(v->s.name, sizeof(v->s.name)) ||
	    v->s.worker >= img->proc.nworkers)
		return bad(d, "counters record with a bad field");
	return 0;
}

/**
 * dec_dir() - check a direction of a connection record
 * @d:		the decoder
 * @dr:		the direction
 *
 * Return: 0, or -1.
 */
static int dec_dir(struct decoder *d, const struct dir_saved *dr)
{
	bool piped = dr->pipe_rd != -1 || dr->pipe_wr != -1;

	if (!fd_ok(d, dr->pipe_rd, true) || !fd_ok(d, dr->pipe_wr, true) ||
	    (dr->pipe_rd == -1) != (dr->pipe_wr == -1) ||
	    piped != (dr->pump.in_pipe != 0))
		return bad(d, "a direction's pipe is not whole");
	if (dr->pump.pending > OPT_MAX_PIPE_SIZE)
		return bad(d, "a direction holds more bytes than any buffer");
	return 0;
}

/**
 * timing_len_ok() - does a latency table's tail hold what it says
 * @p:		the tail
 * @len:	its length
 *
 * Return: true if its count of requests is in range and fills @len.
 */
static bool timing_len_ok(const uint8_t *p, size_t len)
{
	uint32_t nreq;

	if (len < offsetof(struct timing_saved, req))
		return false;
	memcpy(&nreq, p + offsetof(struct timing_saved, nreq), sizeof(nreq));
	return nreq <= TIMING_MAX_REQUESTS && len == timing_saved_len(nreq);
}

/**
 * peer_ok() - is a connection's client address one accept() gives
 * @peer:	the address, a struct sockaddr_storage's bytes
 *
 * The PROXY header and the caps read it as IPv4 or IPv6.
 *
 * Return: true if it is AF_INET or AF_INET6.
 */
static bool peer_ok(const uint8_t *peer)
{
	sa_family_t f;

	memcpy(&f, peer, sizeof(f));
	return f == AF_INET || f == AF_INET6;
}

/**
 * dec_conn() - a connection record and its tails
 * @d:		the decoder
 * @p:		its bytes
 * @len:	their count
 *
 * Return: 0, or -1.
 */
static int dec_conn(struct decoder *d, const uint8_t *p, size_t len)
{
	struct image *img = d->img;
	struct img_conn_view *v;
	struct img_conn *c;
	size_t off, need;

	if (len < sizeof(*c))
		return bad(d, "connection record too short");
	if (!(v = grow((void **)&img->conns, img->nconns, sizeof(*v))))
		return bad(d, "out of memory");
	img->nconns++;
	c = &v->c;
	memcpy(c, p, sizeof(*c));
	if (!str_ok(c->listener, sizeof(c->listener)) ||
	    !str_ok(c->cli_text, sizeof(c->cli_text)) ||
	    !flags_ok(c->flags, sizeof(c->flags)) ||
	    c->worker >= img->proc.nworkers || c->be >= OPT_MAX_BACKENDS)
		return bad(d, "connection record with a bad field");
	if (!isfinite(c->started) || !isfinite(c->deadline) ||
	    !isfinite(c->last_active) || !peer_ok(c->peer))
		return bad(d, "connection record with a bad time or address");
	if (c->state != CS_PROXY_HEADER && c->state != CS_HANDSHAKE &&
	    c->state != CS_CONNECTING && c->state != CS_OPEN)
		return bad(d,
			   "connection in a stage that cannot be handed over");
	if (!fd_ok(d, c->cli_fd, false) ||
	    !fd_ok(d, c->srv_fd, c->state != CS_OPEN) ||
	    (c->state < CS_CONNECTING && c->srv_fd != -1))
		return bad(d, "connection record names a bad descriptor");
	if (c->trace_len && c->trace_len != sizeof(struct trace_conn_saved))
		return bad(
			d,
			"connection record with a capture of the wrong size");
	need = (size_t)c->timing_len + c->trace_len;
	for (unsigned i = 0; i < 2; i++) {
		if (c->state != CS_OPEN &&
		    (c->dir[i].pipe_rd != -1 || c->dir[i].pipe_wr != -1 ||
		     c->dir[i].pump.pending || c->dir[i].pump.in_pipe))
			return bad(
				d,
				"bytes in flight before the connection opened");
		if (dec_dir(d, &c->dir[i]))
			return -1;
		need += c->dir[i].pump.pending;
	}
	if (len - sizeof(*c) != need)
		return bad(d, "connection record's tails do not add up");
	off = sizeof(*c);
	for (unsigned i = 0; i < 2; i++) {
		v->bytes[i] = p + off;
		off += c->dir[i].pump.pending;
	}
	v->timing = c->timing_len ? p + off : NULL;
	if (c->timing_len && !timing_len_ok(p + off, c->timing_len))
		return bad(
			d,
			"connection record with a latency table of the wrong size");
	off += c->timing_len;
	v->trace = c->trace_len ? p + off : NULL;
	return 0;
}

/**
 * dec_records() - every record after the header
 * @d:		the decoder
 * @p:		the first record
 * @len:	bytes left
 * @nrec:	records the header announced
 *
 * Return: 0, or -1.
 */
static int dec_records(struct decoder *d, const uint8_t *p, size_t len,
		       uint32_t nrec)
{
	struct img_rec h;
	int r;

	/* An image of no records would leave the process record zero. */
	if (!nrec)
		return bad(d, "no process record");
	for (uint32_t i = 0; i < nrec; i++) {
		if (len < sizeof(h))
			return bad(d, "a record is cut short");
		memcpy(&h, p, sizeof(h));
		p += sizeof(h);
		len -= sizeof(h);
		if (h.len > len)
			return bad(d, "a record is longer than the image");
		if ((i == 0) != (h.type == IMG_PROCESS))
			return bad(
				d,
				"the process record is not first, or not once");
		switch (h.type) {
		case IMG_PROCESS:
			r = dec_process(d, p, h.len);
			break;
		case IMG_LISTENER:
			r = dec_listener(d, p, h.len);
			break;
		case IMG_LSTATS:
			r = dec_lstats(d, p, h.len);
			break;
		case IMG_CONN:
			r = dec_conn(d, p, h.len);
			break;
		case IMG_QUIC:
			r = dec_quic(d, p, h.len);
			break;
		default:
			r = bad(d, "a record of an unknown type");
		}
		if (r)
			return r;
		p += h.len;
		len -= h.len;
	}
	if (len)
		return bad(d, "bytes after the last record");
	return dec_ls_once(d);
}

/**
 * image_decode() - check an image and see what it holds
 * @p:		its bytes, which must outlive @img
 * @len:	their count
 * @nfds:	descriptors that came with it
 * @img:	filled in; image_free() it whatever the outcome
 * @err:	one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
int image_decode(const uint8_t *p, size_t len, size_t nfds, struct image *img,
		 char *err, size_t errlen)
{
	struct decoder d = {
		.img = img, .nfds = nfds, .err = err, .errlen = errlen
	};
	struct img_head h;
	int r;

	*img = (struct image){ 0 };
	if (len < sizeof(h))
		return bad(&d, "shorter than its header");
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, IMG_MAGIC, sizeof(h.magic)))
		return bad(&d, "not an smbsplice handover image");
	if (h.version != IMG_VERSION) {
		snprintf(
			err, errlen,
			"handover image format %u, this smbsplice reads %u: the two versions cannot hand over; stop the old one to upgrade (drain and restart)",
			h.version, IMG_VERSION);
		errno = EPROTO;
		return -1;
	}
	if (h.layout != image_layout())
		return bad(
			&d,
			"written by a build whose records differ from this one's");
	if (!(d.used = calloc(1, nfds / 8 + 1)))
		return bad(&d, "out of memory");
	r = dec_records(&d, p + sizeof(h), len - sizeof(h), h.nrec);
	free(d.used);
	return r;
}

/**
 * image_free() - free what image_decode() allocated
 * @img:	the image
 */
void image_free(struct image *img)
{
	free(img->ls);
	free(img->st);
	free(img->conns);
	free(img->quic);
	*img = (struct image){ 0 };
}

/**
 * image_in_take_fd() - take a descriptor of a received image
 * @in:		the image
 * @index:	its index, or -1
 *
 * Return: the descriptor, now the caller's, or -1 (none, or taken).
 */
int image_in_take_fd(struct image_in *in, int32_t index)
{
	int fd;

	if (in->sock < 0 || index < 0 || (size_t)index >= in->nfds)
		return -1;
	fd = in->fds[index];
	in->fds[index] = -1;
	return fd;
}

/**
 * image_in_held() - descriptors of a received image no one has taken
 * @in:	the image
 *
 * Return: the count.
 */
size_t image_in_held(const struct image_in *in)
{
	size_t n = 0;

	for (size_t i = 0; in->sock >= 0 && i < in->nfds; i++)
		n += in->fds[i] >= 0;
	return n;
}
