/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_QUIC_T_H
#define SMBSPLICE_QUIC_T_H

/* quic-t.h - the QUIC listener's and connection's state, for quic.c,
 * stateless.c, stream.c and udp.c alone.
 */

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "core/limits.h"
#include "io/sock.h"
#include "quic/bridge-t.h"
#include "quic/ngq.h"

/* Connection IDs routed per connection: ngtcp2 offers the client up to 8
 * of ours at a time, and the client's first one routes its Initials. */
#define QUIC_CIDS 12
/* Buckets of a listener's connection ID table (a power of 2). */
#define QUIC_BUCKETS 1024
/* How long a connection whose stream is over both ways waits for the
 * client to close it: closing first could lose the client's last read
 * (a client's stream may fail at a close before it read the FIN). */
#define QUIC_LINGER_NS 2000000000ull
/* New connections a second above which --quic-retry auto asks clients
 * for a Retry: well above what a site's clients open, well below what a
 * spoofed flood sends. */
#define QUIC_RETRY_RATE 200
/* Handshakes a worker's listener has under way from addresses no Retry
 * proved, past which --quic-retry auto asks new clients for a Retry: a
 * site's clients finish theirs in a round trip or two, while a spoofed
 * flood's never finish and would each hold a connection's state (some
 * 90 KiB) and three descriptors until --handshake-timeout. */
#define QUIC_RETRY_HALFOPEN 64
/* Retries a worker's listener sends a second at most: past them, a new
 * client's Initial is dropped unanswered (it sends it again after its
 * timer). A Retry costs a token sealed and a datagram; a spoofed flood
 * answered in full took the CPU that open connections need. */
#define QUIC_RETRY_MAX 1000
/* Stateless Resets a listener sends a second at most: each answers a
 * longer packet, but a forged flood should not have them all. */
#define QUIC_RESET_RATE 100
/* Slots for connection IDs of connections closed lately, whose packets
 * get our CONNECTION_CLOSE again for QUIC_GONE_NS (the closing period),
 * never a Stateless Reset: a closed connection is freed at once, and a
 * client whose packets crossed our close, or whose copy was lost, must
 * not read a reset first (it would report a reset, not the close's
 * reason, a TLS alert say). A power of 2. */
#define QUIC_GONE    1024
#define QUIC_GONE_NS 3000000000ull
/* The longest CONNECTION_CLOSE datagram kept for a closed connection's
 * closing period (RFC 9000 10.2.1); a longer one is not kept, and its
 * client's packets get silence as before. ngtcp2's are under 200 bytes,
 * an Initial and a Handshake packet coalesced at most. */
#define QUIC_CLOSE_KEEP 256

/**
 * struct qsecond - a count of events in the current second (stateless.c)
 * @sec:	the second, of quic_now()
 * @n:		the events counted in it
 */
struct qsecond {
	uint64_t sec;
	unsigned n;
};

/**
 * struct qgone - one of our connection IDs whose connection closed lately,
 *		  in its closing period (stateless.c)
 * @id:		the ID
 * @until:	the period's end, ns
 * @close:	the datagram that carried our CONNECTION_CLOSE
 * @closelen:	its length; 0 when none was sent or it was too long
 * @seen:	packets for the ID since; the 1st, 2nd, 4th, 8th... get
 *		@close again, so that a client whose copy was lost hears
 *		of the close without an answer per packet
 */
struct qgone {
	uint8_t id[NGQ_SCID_LEN];
	uint64_t until;
	uint8_t close[QUIC_CLOSE_KEEP];
	uint16_t closelen;
	uint32_t seen;
};

/* The longest stateless answer a batch keeps to send with the others (a
 * Retry, a Stateless Reset, a close sent again, a Version Negotiation:
 * each smaller than what it answers, a Retry well under this); and how
 * many a batch keeps: one per datagram read. */
#define QUIC_ANSWER_MAX 256
#define QUIC_ANSWERS	64

/**
 * struct qanswer - a stateless answer waiting for the batch's sendmmsg()
 *		    (udp.c)
 * @buf:	the datagram
 * @len:	its length
 * @to:		where it goes
 * @tolen:	its length
 */
struct qanswer {
	uint8_t buf[QUIC_ANSWER_MAX];
	uint16_t len;
	socklen_t tolen;
	struct sockaddr_storage to;
};

/* The largest datagram received or sent. */
#define QUIC_DGRAM 2048
/* Datagrams taken per recvmmsg(), and packets sent per UDP_SEGMENT
 * sendmsg() (udp.c). */
#define QUIC_RECV_BATCH 64
#define QUIC_GSO_SEGS	16

/**
 * struct qbatch - packets of one connection waiting to go out as one
 *		   segmented send (udp.c)
 * @used:	bytes of the listener's send buffer they fill
 * @seg:	the first packet's size, every one's but the last
 * @n:		how many
 * @to:		where they go
 * @tolen:	its length
 */
struct qbatch {
	size_t used, seg;
	unsigned n;
	struct sockaddr_storage to;
	socklen_t tolen;
};

struct qconn;
struct quic_host;

/**
 * struct quic_stats - what a QUIC listener's datagrams did, in its worker
 * @datagrams:	datagrams received
 * @dropped:	of them, dropped without any state: not QUIC, too short
 *		for an Initial, or for no connection
 * @handshakes:	connections begun (a valid Initial, admitted)
 * @refused:	Initials of clients refused (--allow, caps, descriptors)
 * @streams:	streams made connections
 * @active:	QUIC connections open now
 */
struct quic_stats {
	uint64_t datagrams, dropped, handshakes, refused, streams;
	uint64_t active;
};

/**
 * struct qcid - one connection ID a connection is found by
 * @c:		the connection, NULL for a free slot
 * @len:	its length
 * @id:		its bytes
 * @next:	the bucket's chain
 */
struct qcid {
	struct qconn *c;
	uint8_t len;
	uint8_t id[NGQ_MAX_CIDLEN];
	struct qcid *next;
};

/**
 * struct qlistener - one QUIC listener, as its one worker serves it
 * @qh:		the worker's QUIC host
 * @l:		the listener (a reference)
 * @cfg:	the settings new streams start with (a reference): the
 *		worker's own, as accept.c's wlistener has
 * @fd:		its UDP socket
 * @io:		readable watcher on @fd
 * @local:	the address it is bound to, every path's local end
 * @locallen:	its length
 * @creds:	its certificate and key
 * @secret:	its stateless reset secret, derived from its key
 *		(ngq_reset_secret()): a restarted daemon resets the
 *		connections of the one before
 * @resets:	Stateless Resets sent this second (at most
 *		QUIC_RESET_RATE)
 * @gone:	IDs of ours whose connections closed lately, a ring: their
 *		packets get our close again, never a reset
 * @gone_next:	the ring's next slot
 * @token_secret: the secret its Retry tokens are sealed with (random,
 *		this process's)
 * @qst:	its QUIC counters in this worker (listener.h's struct lquic)
 * @initials:	new Initials this second: --quic-retry auto asks for a
 *		Retry above QUIC_RETRY_RATE
 * @retries:	Retries sent this second (at most QUIC_RETRY_MAX)
 * @halfopen:	connections begun without a Retry whose client has not
 *		opened its stream: auto asks for a Retry at
 *		QUIC_RETRY_HALFOPEN
 * @ans:	stateless answers of the batch being read, sent together
 *		once it is (quic_answers_flush()): a flood of Initials costs
 *		a system call per batch of Retries, not one each
 * @nans:	how many
 * @table:	connection IDs to connections
 * @conns:	its connections
 * @st:		its counters
 * @draining:	removed or draining: no new connection; the listener goes
 *		when its last connection has (@reap)
 * @reap:	removes it, outside any of its callbacks
 * @held:	drained through the control socket: no new connection until
 *		resumed; those open run on
 * @no_gso:	the kernel refused UDP_SEGMENT: one send per packet
 * @dirty:	connections that datagrams of the batch being read reached,
 *		settled once the batch is read (so that their packets, acks
 *		and bytes for the socketpair go out together), or when it
 *		is full (coalesced reads can reach more connections than
 *		there are reads)
 * @ndirty:	how many
 * @gbuf:	the send buffer of a batch of packets
 * @rbufs:	the receive buffers of a batch of reads, each one datagram or
 *		a coalesced run of them (UDP_GRO); their pages are touched
 *		only as far as reads fill them
 * @riov:	their iovecs
 * @rctl:	their control buffers (each read's GRO segment size)
 * @peers:	their senders
 * @msgs:	recvmmsg()'s headers
 * @next:	the worker's list
 */
struct qlistener {
	struct quic_host *qh;
	struct listener *l;
	struct lcfg *cfg;
	int fd;
	ev_io io;
	struct sockaddr_storage local;
	socklen_t locallen;
	struct ngq_creds *creds;
	uint8_t secret[NGQ_SECRET_LEN];
	uint8_t token_secret[NGQ_SECRET_LEN];
	struct qsecond resets;
	struct qgone gone[QUIC_GONE];
	unsigned gone_next;
	struct lquic *qst;
	struct qsecond initials;
	struct qsecond retries;
	unsigned halfopen;
	struct qanswer ans[QUIC_ANSWERS];
	unsigned nans;
	struct qcid *table[QUIC_BUCKETS];
	struct qconn *conns;
	struct quic_stats st;
	bool draining;
	ev_timer reap;
	bool held;
	bool no_gso;
	struct qconn *dirty[QUIC_RECV_BATCH];
	unsigned ndirty;
	uint8_t gbuf[QUIC_GSO_SEGS * QUIC_DGRAM];
	uint8_t rbufs[QUIC_RECV_BATCH][SOCK_GRO_MAX];
	struct iovec riov[QUIC_RECV_BATCH];
	union {
		char buf[SOCK_GRO_CMSG];
		struct cmsghdr align;
	} rctl[QUIC_RECV_BATCH];
	struct sockaddr_storage peers[QUIC_RECV_BATCH];
	struct mmsghdr msgs[QUIC_RECV_BATCH];
	struct qlistener *next;
};

/**
 * struct qconn - one QUIC connection and its stream's bridge
 * @b:		its stream's bridge to the socketpair, and the QUIC
 *		connection (ngq.c); first, so that ngq.c's callbacks,
 *		whose argument is @b, find the connection at the same
 *		address
 * @ql:		its listener
 * @cids:	the IDs it is found by
 * @peer:	the client's address as last seen
 * @peerlen:	its length
 * @path:	the client's address on the path last validated (the
 *		first, then each it migrated to)
 * @pathlen:	its length
 * @key:	the client as the caps count it (admit_client())
 * @timer:	ngtcp2's next expiry
 * @open_by:	when the connection closes if the client has opened no
 *		stream: --handshake-timeout after its first Initial, so
 *		that a client cannot hold an admission and three
 *		descriptors with a handshake alone (our PINGs would keep
 *		it from ever going idle)
 * @done_at:	when the connection closes if the client has not: set
 *		once the stream is over both ways, 0 before
 * @dirty:	in its listener's @dirty
 * @pend:	what the batch's datagrams said of it (enum ngq_state)
 * @conn_id:	the connection its stream became (struct conn.id), 0
 *		before, for quic_figures()
 * @unproved:	begun without a Retry and its stream not yet opened:
 *		counted in its listener's @halfopen (quic_proved())
 *
 * Its stream became a connection when @b.opened: that connection holds
 * the admission and two descriptors from then on; before, this does.
 * @next:	the listener's list
 * @prev:	the link to this one
 */
struct qconn {
	struct qbridge b;
	struct qlistener *ql;
	struct qcid cids[QUIC_CIDS];
	struct sockaddr_storage peer;
	socklen_t peerlen;
	struct sockaddr_storage path;
	socklen_t pathlen;
	struct source_key key;
	ev_timer timer;
	uint64_t open_by, done_at;
	bool dirty;
	enum ngq_state pend;
	uint64_t conn_id;
	bool unproved;
	struct qconn *next, **prev;
};

void quic_proved(struct qconn *qc);

/* stream.c */
extern const struct qbridge_ops quic_bridge_ops;
int quic_stream_open(void *ud, int64_t sid);
void quic_stream_reset(void *ud);

/* udp.c */
void quic_udp_send(struct qlistener *ql, const uint8_t *buf, size_t len,
		   const struct sockaddr *to, socklen_t tolen);
struct listen_opts;
int quic_creds_load(const struct listen_opts *o, struct ngq_creds **out,
		    char *err, size_t errlen);
int quic_udp_recv(struct qlistener *ql);
void quic_answer(struct qlistener *ql, const uint8_t *buf, size_t len,
		 const struct sockaddr *to, socklen_t tolen);
void quic_answers_flush(struct qlistener *ql);
size_t quic_udp_seg(const struct qlistener *ql, int i);
void quic_udp_gro(struct qlistener *ql);
uint8_t *quic_batch_room(struct qlistener *ql, struct qbatch *b, size_t *cap);
void quic_batch_add(struct qlistener *ql, struct qbatch *b, size_t len,
		    const struct sockaddr *to, socklen_t tolen);
void quic_batch_send(struct qlistener *ql, struct qbatch *b);

/* stateless.c */
void quic_initial(struct qlistener *ql, const struct sockaddr *peer,
		  socklen_t peerlen, const uint8_t *pkt, size_t len);
void quic_stateless_reset(struct qlistener *ql, const uint8_t *pkt, size_t len,
			  const struct sockaddr *peer, socklen_t peerlen);
void quic_gone(struct qlistener *ql, const uint8_t *id, size_t len,
	       const uint8_t *close, size_t closelen);
bool quic_gone_answer(struct qlistener *ql, const uint8_t *dcid, size_t dcidlen,
		      size_t len, const struct sockaddr *peer,
		      socklen_t peerlen);

/* quic.c */
void quic_conn_new(struct qlistener *ql, const struct sockaddr *peer,
		   socklen_t peerlen, const uint8_t *pkt, size_t len,
		   const struct ngq_retry *rt);
void quic_conn_end(struct qconn *qc, bool send_close);
void quic_conn_settle(struct qconn *qc, enum ngq_state s);

#endif /* SMBSPLICE_QUIC_T_H */
