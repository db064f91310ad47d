// SPDX-License-Identifier: GPL-2.0-or-later
/* howire.c - the live handover's wire: messages on a SOCK_SEQPACKET socket
 *
 * Theory of operation: the process that hands over (OLD) and the one that
 * takes over (NEW) share one AF_UNIX SOCK_SEQPACKET socketpair. SEQPACKET
 * keeps message boundaries and order and says when the other end is gone,
 * so a message is one datagram: a struct ho_msg_head {type, len} and len
 * bytes of body, never split. A datagram whose length disagrees with its
 * head, or that does not fit the buffer offered for it (MSG_TRUNC), is
 * malformed (EPROTO, EMSGSIZE): nothing is ever read past a message.
 *
 * Every call is bounded in time: sends and receives are made with
 * MSG_DONTWAIT and wait in poll() for what is left of one deadline taken
 * at the call's start, so that a blocking socket, a peer that stops
 * reading, or a peer that sends nothing cannot hold the caller longer
 * than timeout_ms (negative: no bound). EINTR is retried. The errnos a
 * caller sees: ETIMEDOUT; ECONNRESET when the other side went away
 * (hang-up, as EOF or as the kernel's ECONNRESET/EPIPE, is reported as
 * ECONNRESET on both sides, so there is one errno to test); EPROTO for a
 * malformed message; EMSGSIZE for a body over its bound; EMFILE when
 * descriptors sent could not all be received (RLIMIT_NOFILE).
 *
 * The image: howire_send_image() sends the descriptors in HO_FDS batches of
 * up to HO_FDS_BATCH (passed with fdpass, the batch's count in the body)
 * and the image in HO_IMAGE_CHUNK pieces of up to HO_CHUNK bytes,
 * alternating one batch and one chunk while both last (so that a
 * receiver short of descriptors fails early, and the descriptors in
 * flight stay bounded by the socket's queue: net.unix.max_dgram_qlen
 * datagrams), then HO_DONE {u64 length, u32 descriptors}.
 * howire_recv_image() takes batches and chunks in any interleaving, keeps
 * descriptors in the order sent, and checks everything against
 * HO_IMAGE_MAX, HO_NFDS_MAX and HO_DONE's counts; an HO_FAIL from the
 * sender ends it with the sender's text. Any refusal closes every
 * descriptor received so far and frees everything, with one line saying
 * why. The kernel cannot install descriptors that would take the
 * receiver over RLIMIT_NOFILE (MSG_CTRUNC; fdpass closes what it did
 * install and says EMFILE): that is said as such, with what to raise.
 * Both ends are one host: integers go in its byte order.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "handover/howire.h"
#include "common/fdpass.h"
#include "common/monotime.h"

/* Descriptors per message: the kernel's bound, so that a MSG_CTRUNC
 * (EMFILE from fdpass) means the receiver ran out of descriptors. */
#define HO_SCM_MAX FDPASS_MAX

/* The HO_DONE body, packed: 12 bytes, no padding. */
#define HO_DONE_LEN (sizeof(uint64_t) + sizeof(uint32_t))

/**
 * deadline_of() - the monotonic time a call with @timeout_ms must end by
 * @timeout_ms:	the bound, negative for none
 *
 * Return: nanoseconds on the mono_ns() clock, or 0 for none.
 */
static uint64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? 0 : mono_ns() + (uint64_t)timeout_ms * 1000000u;
}

/**
 * wait_for() - poll @sock for @events until @deadline
 * @sock:	the socket
 * @events:	POLLIN or POLLOUT
 * @deadline:	from deadline_of()
 *
 * Return: 0 when the socket is ready (or hung up, which the next call
 * reports), -1 with errno ETIMEDOUT or poll()'s.
 */
static int wait_for(int sock, short events, uint64_t deadline)
{
	struct pollfd p = { sock, events, 0 };
	int ms, n;

	for (;;) {
		ms = -1;
		if (deadline) {
			uint64_t now = mono_ns();

			if (now >= deadline) {
				errno = ETIMEDOUT;
				return -1;
			}
			/* Rounded up, so that 1 ns left is not a busy loop. */
			ms = (int)((deadline - now + 999999u) / 1000000u);
		}
		n = poll(&p, 1, ms);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/**
 * gone_errno() - one errno for "the other side went away"
 * @err:	an errno from sendmsg() or recvmsg()
 *
 * Return: ECONNRESET for EPIPE and ECONNRESET, else @err.
 */
static int gone_errno(int err)
{
	return err == EPIPE ? ECONNRESET : err;
}

/**
 * send_raw() - send one message, with descriptors if any
 * @sock:	the socket
 * @type:	its type
 * @body:	its body
 * @len:	the body's length, at most HO_CHUNK
 * @fds:	descriptors to send along (fdpass), or NULL
 * @nfds:	how many, at most HO_SCM_MAX
 * @deadline:	from deadline_of()
 *
 * Return: 0, or -1 with errno set.
 */
static int send_raw(int sock, uint32_t type, const void *body, uint32_t len,
		    const int *fds, size_t nfds, uint64_t deadline)
{
	struct ho_msg_head h = { type, len };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };

	if (len > HO_CHUNK || nfds > HO_SCM_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	for (;;) {
		if (!fdpass_sendv(sock, iov, len ? 2 : 1, fds, (unsigned)nfds,
				  MSG_DONTWAIT))
			return 0; /* SEQPACKET: all of it, or nothing */
		if (errno == ETOOMANYREFS) {
			/* Our user's descriptors in flight are over its
			 * RLIMIT_NOFILE: the receiver draining them is
			 * what helps, and poll() has no event for it. */
			if (deadline && mono_ns() >= deadline) {
				errno = ETIMEDOUT;
				return -1;
			}
			usleep(1000);
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			errno = gone_errno(errno);
			return -1;
		}
		if (wait_for(sock, POLLOUT, deadline))
			return -1;
	}
}

/**
 * close_fds() - close descriptors
 * @fds:	them
 * @n:		how many
 */
static void close_fds(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

/**
 * recv_raw() - receive one message, and any descriptors with it
 * @sock:	the socket
 * @h:		set to its head
 * @body:	where its body goes
 * @cap:	room there
 * @fds:	room for HO_SCM_MAX descriptors (O_CLOEXEC)
 * @nfds:	set to how many came
 * @deadline:	from deadline_of()
 *
 * On any error no descriptor is kept (*@nfds is 0).
 *
 * Return: 0, or -1 with errno set: ECONNRESET (hang-up), ETIMEDOUT,
 * EMSGSIZE (a body over @cap), EPROTO (a datagram that is no message),
 * EMFILE (descriptors lost to RLIMIT_NOFILE).
 */
static int recv_raw(int sock, struct ho_msg_head *h, void *body, uint32_t cap,
		    int *fds, size_t *nfds, uint64_t deadline)
{
	struct iovec iov[2] = { { h, sizeof(*h) }, { body, cap } };
	unsigned got;
	ssize_t n;

	*nfds = 0;
	for (;;) {
		n = fdpass_recvv(sock, iov, cap ? 2 : 1, fds, HO_SCM_MAX, &got,
				 MSG_DONTWAIT);
		if (n >= 0)
			break;
		/* fdpass closed what came: EMFILE (RLIMIT_NOFILE) and
		 * EMSGSIZE (MSG_TRUNC) are this file's errnos too. */
		if (errno == EMFILE || errno == EMSGSIZE)
			return -1;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			errno = gone_errno(errno);
			return -1;
		}
		if (wait_for(sock, POLLIN, deadline))
			return -1;
	}
	if (n == 0 && !got) {
		errno = ECONNRESET; /* EOF: every message has a head */
		return -1;
	}
	if ((size_t)n < sizeof(*h) || h->len != (size_t)n - sizeof(*h)) {
		close_fds(fds, got);
		errno = EPROTO;
		return -1;
	}
	*nfds = got;
	return 0;
}

/**
 * howire_send() - send one message without descriptors
 * @sock:	the SOCK_SEQPACKET socket
 * @type:	an enum ho_type
 * @body:	the body
 * @len:	its length, at most HO_CHUNK
 * @timeout_ms:	how long to wait for room, negative for ever
 *
 * Return: 0, or -1 with errno set (ETIMEDOUT, ECONNRESET when the other
 * side is gone, EMSGSIZE for @len over HO_CHUNK, sendmsg()'s).
 */
int howire_send(int sock, uint32_t type, const void *body, uint32_t len,
		int timeout_ms)
{
	return send_raw(sock, type, body, len, NULL, 0,
			deadline_of(timeout_ms));
}

/**
 * howire_recv() - receive one message, which carries no descriptor
 * @sock:	the SOCK_SEQPACKET socket
 * @type:	set to its type
 * @body:	where its body goes
 * @cap:	room there
 * @len:	set to the body's length
 * @timeout_ms:	how long to wait for it, negative for ever
 *
 * A message with descriptors is refused, and they are closed.
 *
 * Return: 0, or -1 with errno set: ECONNRESET when the other side went
 * away (EOF), ETIMEDOUT, EMSGSIZE (a body over @cap), EPROTO (a malformed
 * message, an unknown type, descriptors along).
 */
int howire_recv(int sock, uint32_t *type, void *body, uint32_t cap,
		uint32_t *len, int timeout_ms)
{
	struct ho_msg_head h;
	int fds[HO_SCM_MAX];
	size_t nfds;

	if (recv_raw(sock, &h, body, cap, fds, &nfds, deadline_of(timeout_ms)))
		return -1;
	if (nfds || h.type < HO_HELLO || h.type > HO_GO) {
		close_fds(fds, nfds);
		errno = EPROTO;
		return -1;
	}
	*type = h.type;
	*len = h.len;
	return 0;
}

/**
 * howire_send_image() - send the image and its descriptors, then HO_DONE
 * @sock:	the SOCK_SEQPACKET socket
 * @img:	the image
 * @len:	its length, at most HO_IMAGE_MAX
 * @fds:	the descriptors, in the order the image indexes them
 * @nfds:	how many, at most HO_NFDS_MAX
 * @timeout_ms:	how long the whole may take, negative for ever
 *
 * The descriptors stay the caller's: the receiver gets duplicates.
 *
 * Return: 0, or -1 with errno set as howire_send() does (EMSGSIZE for
 * an image or a descriptor count over the bounds).
 */
int howire_send_image(int sock, const void *img, size_t len, const int *fds,
		      size_t nfds, int timeout_ms)
{
	uint64_t deadline = deadline_of(timeout_ms);
	unsigned char done[HO_DONE_LEN];
	uint64_t len64 = len;
	uint32_t n32 = (uint32_t)nfds;
	size_t off = 0, sent = 0;

	if (len > HO_IMAGE_MAX || nfds > HO_NFDS_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	while (off < len || sent < nfds) {
		if (sent < nfds) {
			uint32_t k = nfds - sent > HO_FDS_BATCH
					     ? HO_FDS_BATCH
					     : (uint32_t)(nfds - sent);

			if (send_raw(sock, HO_FDS, &k, sizeof(k), fds + sent, k,
				     deadline))
				return -1;
			sent += k;
		}
		if (off < len) {
			uint32_t k = len - off > HO_CHUNK
					     ? HO_CHUNK
					     : (uint32_t)(len - off);

			if (send_raw(sock, HO_IMAGE_CHUNK,
				     (const char *)img + off, k, NULL, 0,
				     deadline))
				return -1;
			off += k;
		}
	}
	memcpy(done, &len64, sizeof(len64));
	memcpy(done + sizeof(len64), &n32, sizeof(n32));
	return send_raw(sock, HO_DONE, done, sizeof(done), NULL, 0, deadline);
}

/**
 * struct ho_rx - what howire_recv_image() gathered so far
 * @img:	the image bytes
 * @len:	how many
 * @cap:	room in @img
 * @fds:	the descriptors, in the order sent
 * @nfds:	how many
 * @fdcap:	room in @fds
 */
struct ho_rx {
	char *img;
	size_t len, cap;
	int *fds;
	size_t nfds, fdcap;
};

/**
 * rx_grow() - make room for @more bytes or descriptors
 * @p:		the array (char * or int *), reallocated
 * @cap:	its room, in elements, updated
 * @need:	elements it must hold
 * @size:	bytes per element
 *
 * Doubles, so that an image of many chunks costs few copies.
 *
 * Return: 0, or -1 (out of memory).
 */
static int rx_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/**
 * fail_text() - the printable part of an HO_FAIL body, for a log line
 * @buf:	where it goes, NUL-terminated
 * @size:	its size
 * @body:	the body
 * @len:	its length
 */
static void fail_text(char *buf, size_t size, const char *body, size_t len)
{
	size_t i;

	for (i = 0; i < len && i + 1 < size; i++)
		buf[i] = body[i] >= 0x20 && body[i] < 0x7f ? body[i] : '?';
	buf[i] = '\0';
}

/**
 * rx_refuse() - why a receive failed, for the log line
 * @err:	buffer for the line
 * @errlen:	its size
 * @e:		the errno recv_raw() set
 * @rx:		what came so far
 */
static void rx_refuse(char *err, size_t errlen, int e, const struct ho_rx *rx)
{
	struct rlimit rl = { 0 };

	if (e == EMFILE) {
		getrlimit(RLIMIT_NOFILE, &rl);
		snprintf(
			err, errlen,
			"out of descriptors receiving the handover (%zu received, RLIMIT_NOFILE %llu): raise LimitNOFILE / ulimit -n",
			rx->nfds, (unsigned long long)rl.rlim_cur);
	} else if (e == ECONNRESET) {
		snprintf(
			err, errlen,
			"the other side went away mid-handover (%zu bytes and %zu descriptors received)",
			rx->len, rx->nfds);
	} else if (e == ETIMEDOUT) {
		snprintf(
			err, errlen,
			"the handover did not complete in time (%zu bytes and %zu descriptors received)",
			rx->len, rx->nfds);
	} else if (e == EMSGSIZE) {
		snprintf(err, errlen,
			 "a handover message over %u bytes: refused", HO_CHUNK);
	} else if (e == EPROTO) {
		snprintf(
			err, errlen,
			"a malformed handover message (its length disagrees with its head): refused");
	} else {
		snprintf(err, errlen, "cannot receive the handover: %s",
			 strerror(e));
	}
}

/**
 * rx_chunk() - take a chunk of the image
 * @rx:		what came so far
 * @h:		the chunk's header
 * @body:	its bytes
 * @err:	buffer for one line saying why it is refused
 * @errlen:	its size
 *
 * Return: 0, or -1 refused.
 */
static int rx_chunk(struct ho_rx *rx, const struct ho_msg_head *h,
		    const char *body, char *err, size_t errlen)
{
	if (rx->len + h->len > HO_IMAGE_MAX) {
		snprintf(err, errlen,
			 "the handover image is over %u MiB: refused",
			 HO_IMAGE_MAX >> 20);
		return -1;
	}
	if (rx_grow((void **)&rx->img, &rx->cap, rx->len + h->len, 1)) {
		snprintf(err, errlen,
			 "out of memory for the handover image (%zu bytes)",
			 rx->len + h->len);
		return -1;
	}
	memcpy(rx->img + rx->len, body, h->len);
	rx->len += h->len;
	return 0;
}

/**
 * rx_fds() - take a batch of descriptors
 * @rx:		what came so far
 * @h:		the batch's header
 * @body:	its count
 * @fds:	the descriptors that came with it
 * @nfds:	how many; taken into @rx, or closed on refusal
 * @err:	buffer for one line saying why it is refused
 * @errlen:	its size
 *
 * Return: 0, or -1 refused.
 */
static int rx_fds(struct ho_rx *rx, const struct ho_msg_head *h,
		  const char *body, const int *fds, size_t nfds, char *err,
		  size_t errlen)
{
	uint32_t n32;

	if (h->len != sizeof(n32)) {
		snprintf(err, errlen,
			 "a handover descriptor batch of %u bytes: refused",
			 h->len);
		goto refuse;
	}
	memcpy(&n32, body, sizeof(n32));
	if (n32 != nfds) {
		snprintf(
			err, errlen,
			"a handover descriptor batch says %u and carries %zu: refused",
			n32, nfds);
		goto refuse;
	}
	if (rx->nfds + nfds > HO_NFDS_MAX) {
		snprintf(err, errlen,
			 "the handover has over %u descriptors: refused",
			 HO_NFDS_MAX);
		goto refuse;
	}
	if (rx_grow((void **)&rx->fds, &rx->fdcap, rx->nfds + nfds,
		    sizeof(int))) {
		snprintf(err, errlen,
			 "out of memory for the handover's descriptors");
		goto refuse;
	}
	memcpy(rx->fds + rx->nfds, fds, nfds * sizeof(int));
	rx->nfds += nfds;
	return 0;
refuse:
	close_fds(fds, nfds);
	return -1;
}

/**
 * rx_one() - take one message of the image into @rx
 * @rx:		what came so far
 * @h:		the message's head
 * @body:	its body
 * @fds:	the descriptors that came with it
 * @nfds:	how many; taken into @rx, or closed on refusal
 * @err:	buffer for one line saying why it is refused
 * @errlen:	its size
 *
 * Return: 1 for HO_DONE agreeing with what came, 0 to go on, -1 refused.
 */
static int rx_one(struct ho_rx *rx, const struct ho_msg_head *h,
		  const char *body, const int *fds, size_t nfds, char *err,
		  size_t errlen)
{
	char text[HO_TEXT_MAX + 1];
	uint64_t len64;
	uint32_t n32;

	if (h->type != HO_FDS && nfds) {
		snprintf(
			err, errlen,
			"descriptors along a handover message of type %u: refused",
			h->type);
		goto refuse;
	}
	switch (h->type) {
	case HO_IMAGE_CHUNK:
		return rx_chunk(rx, h, body, err, errlen);
	case HO_FDS:
		return rx_fds(rx, h, body, fds, nfds, err, errlen);
	case HO_DONE:
		if (h->len != HO_DONE_LEN) {
			snprintf(err, errlen,
				 "a handover end of %u bytes: refused", h->len);
			return -1;
		}
		memcpy(&len64, body, sizeof(len64));
		memcpy(&n32, body + sizeof(len64), sizeof(n32));
		if (len64 != rx->len || n32 != rx->nfds) {
			snprintf(
				err, errlen,
				"the handover ended saying %llu bytes and %u descriptors, but %zu and %zu came: refused",
				(unsigned long long)len64, n32, rx->len,
				rx->nfds);
			return -1;
		}
		return 1;
	case HO_FAIL:
		fail_text(text, sizeof(text), body, h->len);
		snprintf(err, errlen, "the other side gave up: %s", text);
		return -1;
	default:
		snprintf(
			err, errlen,
			"a handover message of type %u amid the image: refused",
			h->type);
		return -1;
	}
refuse:
	close_fds(fds, nfds);
	return -1;
}

/**
 * howire_recv_image() - receive the image and its descriptors, to HO_DONE
 * @sock:	the SOCK_SEQPACKET socket
 * @img:	set to the image, malloc()ed (the caller frees it); NULL if
 *		empty
 * @len:	set to its length
 * @fds:	set to the descriptors (O_CLOEXEC), in the order sent,
 *		malloc()ed; NULL if none
 * @nfds:	set to how many
 * @timeout_ms:	how long the whole may take, negative for ever
 * @err:	buffer for one line saying why it was refused
 * @errlen:	its size
 *
 * A message already queued behind HO_DONE is refused too (the sender
 * sends nothing more before the reply): a best effort, as one sent
 * later is not seen here.
 *
 * Return: 0, or -1 with @err set, every descriptor received closed,
 * everything freed, and *@img, *@fds NULL.
 */
int howire_recv_image(int sock, void **img, size_t *len, int **fds,
		      size_t *nfds, int timeout_ms, char *err, size_t errlen)
{
	uint64_t deadline = deadline_of(timeout_ms);
	struct ho_rx rx = { 0 };
	struct ho_msg_head h;
	int got[HO_SCM_MAX], r = 0;
	char *body = malloc(HO_CHUNK);
	size_t ngot;

	*img = NULL;
	*fds = NULL;
	*len = *nfds = 0;
	if (!body) {
		snprintf(err, errlen, "out of memory receiving the handover");
		return -1;
	}
	while (!r) {
		if (recv_raw(sock, &h, body, HO_CHUNK, got, &ngot, deadline)) {
			rx_refuse(err, errlen, errno, &rx);
			r = -1;
			break;
		}
		r = rx_one(&rx, &h, body, got, ngot, err, errlen);
	}
	if (r > 0 && recv(sock, &h, sizeof(h), MSG_PEEK | MSG_DONTWAIT) > 0) {
		snprintf(err, errlen,
			 "a handover message came after its end: refused");
		r = -1;
	}
	free(body);
	if (r < 0) {
		close_fds(rx.fds, rx.nfds);
		free(rx.fds);
		free(rx.img);
		return -1;
	}
	*img = rx.img;
	*len = rx.len;
	*fds = rx.fds;
	*nfds = rx.nfds;
	return 0;
}

/**
 * howire_send_fail() - say why this side gives up
 * @sock:	the SOCK_SEQPACKET socket
 * @why:	one line; cut at HO_TEXT_MAX bytes
 * @timeout_ms:	how long to wait for room, negative for ever
 *
 * Return: 0, or -1 with errno set as howire_send() does.
 */
int howire_send_fail(int sock, const char *why, int timeout_ms)
{
	size_t n = strnlen(why, HO_TEXT_MAX);

	return howire_send(sock, HO_FAIL, why, (uint32_t)n, timeout_ms);
}

/**
 * howire_recv_reply() - the new process's answer: HO_TAKEN or HO_FAIL
 * @sock:	the SOCK_SEQPACKET socket
 * @taken:	set to HO_TAKEN's count of connections
 * @timeout_ms:	how long to wait for it, negative for ever
 * @err:	buffer for one line saying why it is no TAKEN
 * @errlen:	its size
 *
 * Return: 0 for HO_TAKEN, or -1 with @err set (HO_FAIL's text, hang-up,
 * timeout, any other message) and errno (0 for HO_FAIL, ECONNRESET,
 * ETIMEDOUT, EPROTO).
 */
int howire_recv_reply(int sock, uint32_t *taken, int timeout_ms, char *err,
		      size_t errlen)
{
	char body[HO_TEXT_MAX + 1], text[HO_TEXT_MAX + 1];
	uint32_t type, len;

	if (howire_recv(sock, &type, body, sizeof(body), &len, timeout_ms)) {
		int e = errno;

		if (e == ECONNRESET)
			snprintf(
				err, errlen,
				"the new process went away before it took over");
		else if (e == ETIMEDOUT)
			snprintf(err, errlen,
				 "the new process did not take over in %d ms",
				 timeout_ms);
		else
			snprintf(err, errlen,
				 "a malformed answer from the new process (%s)",
				 strerror(e));
		errno = e;
		return -1;
	}
	if (type == HO_TAKEN && len == sizeof(*taken)) {
		memcpy(taken, body, sizeof(*taken));
		return 0;
	}
	if (type == HO_FAIL && len <= HO_TEXT_MAX) {
		fail_text(text, sizeof(text), body, len);
		snprintf(err, errlen, "the new process refused: %s", text);
		errno = 0;
		return -1;
	}
	snprintf(
		err, errlen,
		"an answer of type %u and %u bytes from the new process: refused",
		type, len);
	errno = EPROTO;
	return -1;
}
