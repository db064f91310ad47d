// SPDX-License-Identifier: GPL-2.0-or-later
/* udp.c - a QUIC listener's datagrams, in batches
 *
 * Theory of operation: QUIC moves a stream in datagrams of about 1,200
 * bytes, one system call each unless batched. Received: recvmmsg() takes
 * up to QUIC_RECV_BATCH reads per call into the listener's buffers, and
 * with UDP_GRO each read may be a run of one sender's datagrams that the
 * kernel coalesced (a peer sending with UDP_SEGMENT, on loopback or
 * through a device that aggregates), cut again by their segment size.
 * Sent: a connection's packets are written by ngtcp2 one after another
 * into the listener's send buffer and go out as one sendmsg() with
 * UDP_SEGMENT (generic segmentation offload): the kernel cuts the buffer
 * into datagrams of the first packet's size, the last one allowed to be
 * shorter. So a batch ends at a shorter packet, at a larger one (which
 * starts the next), at a change of destination, or at QUIC_GSO_SEGS
 * packets: 16, which the design notes measured best on this machine
 * (64 overran the send quantum). Where the kernel or the device refuses
 * UDP_SEGMENT, the listener falls back to one sendto() per packet, for
 * good.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include "common/log.h"
#include "io/sock.h"
#include "net/listener.h"
#include "quic/quic-t.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

/**
 * quic_udp_send() - one datagram
 * @ql:		the listener
 * @buf:	the datagram
 * @len:	its length
 * @to:		where
 * @tolen:	its length
 *
 * A full socket buffer drops it: QUIC's loss recovery sends again.
 */
void quic_udp_send(struct qlistener *ql, const uint8_t *buf, size_t len,
		   const struct sockaddr *to, socklen_t tolen)
{
	while (sendto(ql->fd, buf, len, 0, to, tolen) < 0 && errno == EINTR)
		;
}

/**
 * quic_answer() - a stateless answer, sent with the batch's others
 * @ql:		the listener
 * @buf:	the datagram (a Retry, a Stateless Reset, a close sent again,
 *		a Version Negotiation)
 * @len:	its length
 * @to:		where
 * @tolen:	its length
 *
 * Kept until the batch of reads it answers is routed
 * (quic_answers_flush()); one too long to keep goes at once.
 */
void quic_answer(struct qlistener *ql, const uint8_t *buf, size_t len,
		 const struct sockaddr *to, socklen_t tolen)
{
	struct qanswer *a;

	if (len > QUIC_ANSWER_MAX || tolen > sizeof(a->to)) {
		quic_udp_send(ql, buf, len, to, tolen);
		return;
	}
	if (ql->nans == QUIC_ANSWERS)
		quic_answers_flush(ql);
	a = &ql->ans[ql->nans++];
	memcpy(a->buf, buf, len);
	a->len = (uint16_t)len;
	memcpy(&a->to, to, tolen);
	a->tolen = tolen;
}

/**
 * quic_answers_flush() - send the batch's stateless answers with one
 *			  sendmmsg()
 * @ql:		the listener
 *
 * An answer the kernel refuses (its destination unreachable, say) is
 * skipped, not the ones after it; a full socket buffer drops the rest,
 * as it would drop them one by one: their senders ask again.
 */
void quic_answers_flush(struct qlistener *ql)
{
	struct mmsghdr m[QUIC_ANSWERS];
	struct iovec iov[QUIC_ANSWERS];
	unsigned done = 0;
	int r;

	for (unsigned i = 0; i < ql->nans; i++) {
		iov[i] = (struct iovec){ ql->ans[i].buf, ql->ans[i].len };
		m[i] = (struct mmsghdr){
			.msg_hdr = { .msg_name = &ql->ans[i].to,
				     .msg_namelen = ql->ans[i].tolen,
				     .msg_iov = &iov[i],
				     .msg_iovlen = 1 }
		};
	}
	while (done < ql->nans) {
		r = sendmmsg(ql->fd, m + done, ql->nans - done, 0);
		if (r > 0)
			done += (unsigned)r;
		else if (r < 0 && errno == EINTR)
			continue;
		else if (r < 0 && errno != EAGAIN && errno != ENOBUFS)
			done++; /* this one's destination: skip it */
		else
			break;
	}
	ql->nans = 0;
}

/**
 * quic_batch_send() - send a batch's packets, and empty it
 * @ql:		the listener
 * @b:		the batch
 */
void quic_batch_send(struct qlistener *ql, struct qbatch *b)
{
	const struct sockaddr *to = (const struct sockaddr *)&b->to;

	if (b->n > 1 && !ql->no_gso &&
	    sock_send_gso(ql->fd, (const struct sockaddr *)&b->to, b->tolen,
			  ql->gbuf, b->used, b->seg)) {
		log_warn(
			"listener %s: the kernel refused UDP_SEGMENT (%s); sending one datagram per packet",
			ql->l->name, strerror(errno));
		ql->no_gso = true;
	} else if (b->n > 1 && !ql->no_gso) {
		b->n = b->used = 0;
		return;
	}
	for (size_t at = 0; at < b->used; at += b->seg)
		quic_udp_send(ql, ql->gbuf + at,
			      b->used - at < b->seg ? b->used - at : b->seg, to,
			      b->tolen);
	b->n = b->used = 0;
}

/**
 * quic_batch_room() - where the next packet is written, and its room
 * @ql:		the listener
 * @b:		the batch
 * @cap:	the room, filled in
 *
 * Return: the place in the listener's send buffer.
 */
uint8_t *quic_batch_room(struct qlistener *ql, struct qbatch *b, size_t *cap)
{
	*cap = QUIC_DGRAM;
	return ql->gbuf + b->used;
}

/**
 * quic_batch_add() - the packet written at quic_batch_room() joins the
 *		      batch, which goes out when it must
 * @ql:		the listener
 * @b:		the batch
 * @len:	the packet's length
 * @to:		where it goes
 * @tolen:	its length
 */
void quic_batch_add(struct qlistener *ql, struct qbatch *b, size_t len,
		    const struct sockaddr *to, socklen_t tolen)
{
	uint8_t *at = ql->gbuf + b->used;

	if (b->n &&
	    (len > b->seg || tolen != b->tolen || memcmp(to, &b->to, tolen))) {
		quic_batch_send(ql, b);
		memmove(ql->gbuf, at, len);
	}
	if (!b->n) {
		b->seg = len;
		memcpy(&b->to, to, tolen);
		b->tolen = tolen;
	}
	b->used += len;
	b->n++;
	if (len < b->seg || b->n == QUIC_GSO_SEGS)
		quic_batch_send(ql, b);
}

/**
 * quic_udp_recv() - the datagrams waiting on a listener's socket, a batch
 * @ql:		the listener; its @msgs are filled in
 *
 * Return: how many reads (0 if none), each one datagram or a coalesced
 * run (quic_udp_seg()), or -1 with errno set.
 */
int quic_udp_recv(struct qlistener *ql)
{
	for (unsigned i = 0; i < QUIC_RECV_BATCH; i++) {
		ql->riov[i] = (struct iovec){ ql->rbufs[i], SOCK_GRO_MAX };
		ql->msgs[i].msg_hdr = (struct msghdr){
			.msg_name = &ql->peers[i],
			.msg_namelen = sizeof(ql->peers[i]),
			.msg_iov = &ql->riov[i],
			.msg_iovlen = 1,
			.msg_control = ql->rctl[i].buf,
			.msg_controllen = sizeof(ql->rctl[i].buf),
		};
	}
	for (;;) {
		int n = recvmmsg(ql->fd, ql->msgs, QUIC_RECV_BATCH, 0, NULL);

		if (n >= 0 || errno != EINTR)
			return n < 0 && (errno == EAGAIN ||
					 errno == EWOULDBLOCK)
				       ? 0
				       : n;
	}
}

/**
 * quic_udp_seg() - the size of the datagrams of one read of a batch
 * @ql:		the listener
 * @i:		the read
 *
 * Return: each datagram's size, the last one's at most.
 */
size_t quic_udp_seg(const struct qlistener *ql, int i)
{
	return sock_gro_seg(&ql->msgs[i].msg_hdr, ql->msgs[i].msg_len);
}

/**
 * quic_udp_gro() - let the kernel coalesce the listener's datagrams
 * @ql:		the listener, whose socket is set
 *
 * A kernel without UDP_GRO costs a read per datagram, nothing else.
 */
void quic_udp_gro(struct qlistener *ql)
{
	if (!sock_gro_on(ql->fd))
		log_info(
			"listener %s: the kernel has no UDP_GRO: one read per datagram",
			ql->l->name);
}
