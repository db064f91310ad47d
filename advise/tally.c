// SPDX-License-Identifier: GPL-2.0-or-later
/* tally.c - count what the framer reports: messages, payload sizes, depth
 *
 * Theory of operation: the framer tells its observer of every message as
 * soon as its header is in (smb/framer.h, struct smb_msg). Each report is
 * counted here, per direction and command, with the message's bytes; a
 * READ response's or WRITE request's payload, as the framer found it from
 * DataOffset and DataLength (or Length), goes into that class's size
 * histogram. These are exactly the spans the daemon's thresholds decide
 * on, found by the same code.
 *
 * Pipeline depth pairs each connection's READ requests with their
 * responses by MessageId: a request is outstanding from the moment its
 * header passes until a final response with its MessageId does. An
 * interim response (STATUS_PENDING, async) completes nothing: the final
 * one follows. Each request is counted with the number outstanding once
 * it is sent, itself included, so a client that waits for each READ before
 * sending the next has depth 1 throughout. The order is the capture's, and
 * a response's header is always captured after its request's.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tally.h"

const uint16_t tally_dialects[TALLY_NDIALECTS] = { 0x0202, 0x0210, 0x0300,
						   0x0302, 0x0311 };

/**
 * tally_size_bin() - the histogram bin of a payload size
 * @size:	bytes
 *
 * Return: 0 under 1 KiB, else 1 + floor(log2(size)) - 10, at most the last.
 */
unsigned tally_size_bin(uint32_t size)
{
	unsigned bin;

	if (size < 1024)
		return 0;
	bin = (unsigned)(31 - __builtin_clz(size)) - 9;
	return bin < TALLY_SIZE_BINS ? bin : TALLY_SIZE_BINS - 1;
}

/**
 * tally_bin_floor() - the smallest size a bin holds
 * @bin:	the bin
 *
 * Return: bytes.
 */
uint32_t tally_bin_floor(unsigned bin)
{
	return bin ? 1u << (9 + bin) : 0;
}

/**
 * tally_depth_bin() - the histogram bin of a pipeline depth
 * @depth:	READs outstanding, at least 1
 *
 * Return: 0 for 1, 1 for 2, then ceil(log2(depth)), at most the last.
 */
unsigned tally_depth_bin(uint64_t depth)
{
	unsigned bin;

	if (depth <= 1)
		return 0;
	bin = (unsigned)(64 - __builtin_clzll(depth - 1));
	return bin < TALLY_DEPTH_BINS ? bin : TALLY_DEPTH_BINS - 1;
}

/**
 * tally_depth_label() - a depth bin as text: "1", "2", "3-4", ..., "129+"
 * @bin:	the bin
 * @out:	buffer
 * @outlen:	its size
 */
void tally_depth_label(unsigned bin, char *out, size_t outlen)
{
	if (bin < 2)
		snprintf(out, outlen, "%u", bin + 1);
	else if (bin == TALLY_DEPTH_BINS - 1)
		snprintf(out, outlen, "%u+", (1u << (bin - 1)) + 1);
	else
		snprintf(out, outlen, "%u-%u", (1u << (bin - 1)) + 1,
			 1u << bin);
}

/**
 * tally_total() - payloads of a histogram and their bytes
 * @h:		the histogram
 * @bytes:	set to the bytes
 *
 * Return: the payloads.
 */
uint64_t tally_total(const struct size_hist *h, uint64_t *bytes)
{
	uint64_t n = 0, b = 0;

	for (unsigned i = 0; i < TALLY_SIZE_BINS; i++) {
		n += h->count[i];
		b += h->bytes[i];
	}
	*bytes = b;
	return n;
}

/**
 * add_payload() - count a payload in its class's histogram
 * @h:	the histogram
 * @m:	the message, whose payload span holds data
 */
static void add_payload(struct size_hist *h, const struct smb_msg *m)
{
	uint32_t len = m->pay_end - m->pay_start;
	unsigned bin = tally_size_bin(len);

	h->count[bin]++;
	h->bytes[bin] += len;
}

/**
 * outstanding_at() - where a READ request waits
 * @c:	the connection
 * @id:	its MessageId
 *
 * Return: its index in @c->out, or -1.
 */
static long outstanding_at(const struct tally_conn *c, uint64_t id)
{
	for (uint32_t i = 0; i < c->nout; i++)
		if (c->out[i] == id)
			return (long)i;
	return -1;
}

/**
 * read_request() - a READ request: one more outstanding
 * @t:	the tally
 * @c:	the connection
 * @m:	the request
 */
static void read_request(struct tally *t, struct tally_conn *c,
			 const struct smb_msg *m)
{
	t->read_requests++;
	if (outstanding_at(c, m->message_id) < 0 &&
	    c->nout < TALLY_MAX_OUTSTANDING) {
		if (c->nout == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 64;
			c->out = realloc(c->out, c->cap * sizeof(*c->out));
			if (!c->out)
				abort();
		}
		c->out[c->nout++] = m->message_id;
	}
	t->depth[tally_depth_bin(c->nout)]++;
	t->depth_sum += c->nout;
	if (c->nout > t->depth_max)
		t->depth_max = c->nout;
}

/**
 * read_response() - a READ response: data, an interim or an error
 * @t:	the tally
 * @c:	the connection
 * @m:	the response
 */
static void read_response(struct tally *t, struct tally_conn *c,
			  const struct smb_msg *m)
{
	long at;

	if (m->status == SMB2_STATUS_PENDING && m->flags & SMB2_FLAG_ASYNC) {
		t->interim++;
		return;
	}
	at = outstanding_at(c, m->message_id);
	if (at >= 0)
		c->out[at] = c->out[--c->nout];
	if (m->pay_class == SMB_CLASS_READ && m->pay_end > m->pay_start)
		add_payload(&t->read, m);
	else if (m->status)
		t->read_errors++;
}

/**
 * negotiate_response() - note the dialect and sizes a server chose
 * @t:	the tally
 * @c:	the connection
 * @m:	the NEGOTIATE response, with the body fields the framer holds
 */
static void negotiate_response(struct tally *t, struct tally_conn *c,
			       const struct smb_msg *m)
{
	const uint8_t *h = m->hdr;
	uint16_t dialect;
	uint32_t rd, wr;

	if (m->hdr_len < SMB2_NEG_RSP_PARSED ||
	    get_le16(h + SMB2_BODY) != SMB2_NEG_RSP_BODY_SIZE)
		return;
	dialect = get_le16(h + SMB2_NEG_RSP_DIALECT);
	if (dialect == 0x02ff) /* a second NEGOTIATE will choose */
		return;
	c->dialect = dialect;
	rd = get_le32(h + SMB2_NEG_RSP_MAX_READ);
	wr = get_le32(h + SMB2_NEG_RSP_MAX_WRITE);
	if (rd > t->max_read)
		t->max_read = rd;
	if (wr > t->max_write)
		t->max_write = wr;
}

/**
 * count_smb2() - count an SMB2 message
 * @t:		the tally
 * @c:		the connection
 * @dir:	its direction
 * @m:		the message
 */
static void count_smb2(struct tally *t, struct tally_conn *c, enum rs_dir dir,
		       const struct smb_msg *m)
{
	unsigned cmd =
		m->command < SMB2_NCOMMANDS ? m->command : SMB2_NCOMMANDS;
	bool resp = m->flags & SMB2_FLAG_RESPONSE;

	t->cmd[dir][cmd].count++;
	t->cmd[dir][cmd].bytes += m->end - m->start;
	if (cmd == SMB2_READ && resp)
		read_response(t, c, m);
	else if (cmd == SMB2_READ)
		read_request(t, c, m);
	else if (cmd == SMB2_WRITE && !resp &&
		 m->pay_class == SMB_CLASS_WRITE && m->pay_end > m->pay_start)
		add_payload(&t->write, m);
	else if (cmd == SMB2_NEGOTIATE && resp)
		negotiate_response(t, c, m);
}

/**
 * tally_message() - count one message the framer reported
 * @t:		the tally
 * @c:		its connection
 * @dir:	its direction
 * @m:		the message
 */
void tally_message(struct tally *t, struct tally_conn *c, enum rs_dir dir,
		   const struct smb_msg *m)
{
	static const enum tally_frame frame_of[] = {
		[SMB_MSG_ENCRYPTED] = TALLY_ENCRYPTED,
		[SMB_MSG_COMPRESSED] = TALLY_COMPRESSED,
		[SMB_MSG_SMB1] = TALLY_SMB1,
		[SMB_MSG_NETBIOS] = TALLY_NETBIOS,
	};
	struct msg_count *f;

	c->smb = true;
	if (m->kind == SMB_MSG_SMB2) {
		count_smb2(t, c, dir, m);
		return;
	}
	f = &t->frames[dir][frame_of[m->kind]];
	f->count++;
	f->bytes += m->frame_len;
}

/**
 * tally_forget_outstanding() - stop waiting for the answers to READs
 * @c:	the connection, whose responses the framing lost track of
 *
 * Their responses may have passed unseen; kept, they would count as
 * outstanding for ever and inflate the depth of every later READ.
 */
void tally_forget_outstanding(struct tally_conn *c)
{
	c->nout = 0;
}

/**
 * tally_conn_end() - a connection is over: count it, free its state
 * @t:	the tally
 * @c:	the connection
 */
void tally_conn_end(struct tally *t, struct tally_conn *c)
{
	unsigned i;

	if (c->smb)
		t->smb_conns++;
	if (c->dialect) {
		for (i = 0; i < TALLY_NDIALECTS; i++)
			if (tally_dialects[i] == c->dialect)
				break;
		t->dialects[i]++;
	}
	free(c->out);
	c->out = NULL;
	c->nout = c->cap = 0;
}
