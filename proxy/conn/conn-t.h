/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONN_T_H
#define SMBSPLICE_CONN_T_H

/* The types of a connection, for the files that read one: conn.c, which
 * runs its life, dir.c its directions, connlog.c, which writes its end
 * line and warnings, observe.c, which traces and times it, and
 * handover/connmove.c, which carries it to the next process
 * (CONN_CARRIED); and the worker's side of them, struct conn_host, which
 * the worker embeds. Only conn/ changes a live connection; connmove.c
 * fills one in from its record before it is live (CONN_CARRIED's rows
 * say which fields, and conn_host_link() puts it in its host's list). */

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "smb/framer.h"
#include "core/limits.h"
#include "io/pump.h"
#include "io/sock.h"
#include "conn/stall.h"
#include "observe/counters.h"
#include "observe/timing.h"

struct buf_pool;
struct lcfg;
struct listener;
struct listen_opts;
struct lstats;
struct pipe_pool;
struct proxy;
struct quic_figures;
struct timing_pool;
struct trace_conn;

enum conn_end {
	END_FIN,      /* both directions forwarded end of file */
	END_RST,      /* a peer reset its socket; the other was reset too */
	END_TIMEOUT,  /* handshake, connect or idle timeout */
	END_ERROR,    /* any other failure */
	END_SHUTDOWN, /* the daemon is stopping */
	END_COUNT
};

/* The stages of a connection; conn_set_state() alone moves it, along
 * conn.c's conn_state_next[]. */
enum conn_state {
	CS_NEW,		 /* accepted, not yet in a stage */
	CS_PROXY_HEADER, /* --accept-proxy: waiting for the PROXY header */
	CS_HANDSHAKE,	 /* waiting for the client's first frame (smb mode) */
	CS_CONNECTING,	 /* the backend connect is in flight, or waits for a
			  * descriptor */
	CS_OPEN,	 /* both directions forward */
	CS_ENDED,	 /* logged and closed, about to be freed */
	CS_COUNT
};

/* What has happened to a direction; each bit is set once, never cleared,
 * through dir_set(). */
enum dir_flag {
	DIR_F_DONE = 1u << 0,	      /* end of file was forwarded */
	DIR_F_OPAQUE = 1u << 1,	      /* the framer gave up; that was logged */
	DIR_F_MULTICHANNEL = 1u << 2, /* the server's offer of multichannel
				       * was logged */
	DIR_F_IFLIST = 1u << 3,	      /* the server's interface list was
				       * logged */
};

/**
 * struct dir - a direction and the two watchers that drive it
 * @pump:	its bytes and how they move (pump.c)
 * @rd:		readable watcher on @pump.src
 * @wr:		writable watcher on @pump.dst
 * @c:		the connection
 * @id:		which way it goes
 * @fr:		the SMB framer, used in smb mode
 * @flags:	what has happened to it, DIR_F_*
 * @stall:	its entry in the worker's list of stalled pipes (stall.c)
 */
struct dir {
	struct pump pump;
	ev_io rd, wr;
	struct conn *c;
	enum dir_index id;
	struct smb_framer fr;
	unsigned flags;
	struct stall stall;
};

/**
 * struct dir_saved - what a live handover carries of a direction
 * @pump:	its bytes and flags
 * @fr:		its framer (smb mode)
 * @flags:	DIR_F_* bits
 * @pipe_rd:	descriptor index of the read end of the pipe holding
 *		@pump.in_pipe bytes, or -1
 * @pipe_wr:	its write end, or -1
 * @pad:	zero
 *
 * Defined here, by the direction's own layer, so that dir.c saves and
 * restores a direction without knowing the image; the handover's
 * connection record (handover/image.h) embeds it. It is part of the
 * image's format: a change bumps IMG_VERSION there.
 */
struct dir_saved {
	struct pump_saved pump;
	struct smb_framer_saved fr;
	uint32_t flags;
	int32_t pipe_rd, pipe_wr;
	uint32_t pad;
};

/**
 * struct conn - a client, its backend connection and the two directions
 * @host:	the worker that owns it, as conn.c sees it
 * @id:		its number, unique in the process, from 1 (the control
 *		socket names it so)
 * @prev:	list link
 * @next:	list link
 * @cli:	client socket
 * @srv:	backend socket, fd -1 until created
 * @dir:	the two directions, indexed by enum dir_index
 * @connect_w:	readable watcher on @cli in the handshake, then writable
 *		watcher on @srv while the connect is in flight
 * @timer:	the timeout of the current stage (see enum conn_state)
 * @state:	the stage
 * @started:	when the client was accepted
 * @deadline:	when the handshake or the connect times out
 * @last_active: last time either direction delivered a byte
 * @l:		the listener it came on (a reference)
 * @cfg:	the listener's settings it started with (a reference)
 * @lo:		&cfg->o
 * @st:		the listener's counters in this worker
 * @be:		the backend being dialled or forwarded to, an index into
 *		@lo's backends
 * @peer:	the client's address and port (the PROXY header's, under
 *		--accept-proxy), for --send-proxy
 * @cli_text:	client address, for the log
 * @source:	client address, as --max-conns-per-source counts it
 * @unauth:	smb mode, and no session setup has succeeded yet: it counts
 *		against --max-preauth-per-source and --auth-timeout
 * @admitted:	@source holds a place under the caps, to give back
 * @lowat:	in the handshake: the client socket's SO_RCVLOWAT is raised
 * @peeked:	in the handshake: bytes of the first frame seen so far
 * @tm:		smb mode: the clocks of its messages in flight
 * @trace:	its capture, with --trace
 * @who:	smb mode: who its session is and what it has open, for
 *		`ctl conns` (smb/who.c); made at its first session setup,
 *		NULL till then
 * @qd:		a quic: backend's dial while it runs (quic/qdial.c), NULL
 *		otherwise: the connection cancels it if it ends first
 *
 * This is all an idle connection costs smbsplice: copy buffers and pipes
 * are lent only while bytes are in flight.
 */
struct conn {
	struct conn_host *host;
	uint64_t id;
	struct conn *prev, *next;
	struct sock cli, srv;
	struct dir dir[DIR_COUNT];
	ev_io connect_w;
	ev_timer timer;
	enum conn_state state;
	ev_tstamp started, deadline, last_active;
	struct listener *l;
	struct lcfg *cfg;
	const struct listen_opts *lo;
	struct lstats *st;
	unsigned be;
	struct sockaddr_storage peer;
	char cli_text[64];
	struct source_key source;
	bool unauth, admitted, lowat;
	unsigned peeked;
	struct timing tm;
	struct trace_conn *trace;
	struct smb_who *who;
	struct qdial *qd;
};

/*
 * CONN_CARRIED(X) - every member of struct conn, once, and what a live
 * handover does with it. handover/image.h lays out the connection's
 * record, struct img_conn, from this table; handover/connmove.c writes
 * and rebuilds a connection from it; tests/integ/test_carried.py fails
 * when a member of struct conn is missing here. A row is X(member, how,
 * ...), how being one of:
 *
 *   COPY, part, type	the record's field of the member's name, copied
 *   BYTES, type, n	the record's type member[n]: the member's bytes
 *   SOCK,		a socket: member_fd, its descriptor's index among
 *			those sent beside the image, and member_corked
 *   PAIR, part, type, field, dims, fn
 *			the record's "type field dims", written by
 *			carry_save_fn() and read back by carry_adopt_fn()
 *   OPEN, (as PAIR)	the same, read back only into an open connection,
 *			once it is linked (its directions need its observers)
 *   REBUILT, why	not carried: the adopting process makes it anew
 *
 * part is where in the record the field goes (IMG_PART_*, image.h): the
 * record groups its fields by width, so that it has no hidden padding.
 * The record is the image's format: within a part, rows keep the record's
 * order, and a row that adds or moves a field bumps IMG_VERSION. The
 * adopt runs the rows top to bottom: host first, what the state's log
 * line names before the state, the source and its flags before the caps
 * take @admitted back.
 */
#define CONN_CARRIED(X)                                                        \
	X(host, PAIR, U32, uint32_t, worker, , worker)                         \
	X(id, COPY, U64, uint64_t)                                             \
	X(prev, REBUILT, "a link of the adopting worker's list")               \
	X(next, REBUILT, "a link of the adopting worker's list")               \
	X(cli, SOCK, )                                                         \
	X(srv, SOCK, )                                                         \
	X(connect_w, REBUILT, "a watcher of this loop: conn_watchers_init()")  \
	X(timer, REBUILT, "a watcher of this loop: conn_watchers_init()")      \
	X(started, COPY, TIME, double)                                         \
	X(deadline, COPY, TIME, double)                                        \
	X(last_active, COPY, TIME, double)                                     \
	X(l, PAIR, NAME, char, listener, [OPT_NAME_LEN], listener)             \
	X(cfg, REBUILT, "the listener's settings here, with @l")               \
	X(st, REBUILT, "the listener's counters in this worker, with @l")      \
	X(peer, BYTES, uint8_t, 128)                                           \
	X(cli_text, BYTES, char, 64)                                           \
	X(source, BYTES, uint8_t, 16)                                          \
	X(state, PAIR, U32, uint32_t, state, , state)                          \
	X(be, COPY, U32, uint32_t)                                             \
	X(peeked, COPY, U32, uint32_t)                                         \
	X(unauth, COPY, FLAG, uint8_t)                                         \
	X(admitted, PAIR, FLAG, uint8_t, admitted, , admitted)                 \
	X(lowat, COPY, FLAG, uint8_t)                                          \
	X(lo, PAIR, FLAG, uint8_t, smb, , mode)                                \
	X(tm, OPEN, LEN, uint32_t, timing_len, , timing)                       \
	X(trace, OPEN, LEN, uint32_t, trace_len, , trace)                      \
	X(dir, OPEN, DIR, struct dir_saved, dir, [DIR_COUNT], dirs)            \
	X(who, OPEN, WHO, struct smb_who_saved, who, , who)                    \
	X(qd, REBUILT, "none: a quic: backend refuses a handover")

/* A row that names no member of struct conn does not compile. A member
 * with no row leaves the rows' sizes short of the struct's by more than
 * its padding (9 bytes on x86-64), if it is a pointer or larger: what the
 * compiler can check cheaply; tests/integ/test_carried.py checks every
 * member by name. */
#define CONN_MEMBER_SIZE(m, ...) +sizeof(((struct conn *)0)->m)
_Static_assert(sizeof(struct conn) - (0 CONN_CARRIED(CONN_MEMBER_SIZE)) < 16,
	       "a member of struct conn is missing from CONN_CARRIED");

/**
 * struct conn_host_ops - what a connection tells the thread that owns it
 * @out_of_fds:	no descriptor was left for a backend socket (@why is
 *		strerror()): stop accepting for a moment
 * @ended:	a connection has ended
 * @quic_figures: the QUIC figures of connection @id if its client side
 *		is a QUIC listener's stream (the worker's quic_figures()),
 *		for ctl; true if it is; NULL for a thread without QUIC
 *
 * So that conn.c calls nothing above it: the worker fills these in.
 */
struct conn_host_ops {
	void (*out_of_fds)(void *ctx, const char *why);
	void (*ended)(void *ctx);
	bool (*quic_figures)(void *ctx, uint64_t id, struct quic_figures *out);
};

/**
 * struct conn_host - a thread's connections and what they draw on
 * @px:		the process: its caps, its helper, its namespaces
 * @loop:	the thread's loop
 * @id:		the thread's number, for logs and metrics
 * @netns_ino:	the network namespace the thread sits in (its inode)
 * @pipes:	the thread's splice pipes
 * @bufs:	its copy buffers
 * @timing:	its spare blocks for timing messages
 * @ops:	the thread's side (see struct conn_host_ops)
 * @ctx:	their argument
 * @stalls:	directions whose pipe waits for its destination
 * @conns:	live connections, newest first
 * @active:	connections open now (a gauge any thread may read)
 * @accepted:	connections ever opened (a counter any thread may read)
 * @opened:	the id conn_open() gave its last connection, which the
 *		worker's accept_ops open() returns (0: set before each)
 *
 * Owned by conn.c; the worker embeds one and reads it through the
 * accessors below.
 */
struct conn_host {
	struct proxy *px;
	struct ev_loop *loop;
	unsigned id;
	ino_t netns_ino;
	struct pipe_pool *pipes;
	struct buf_pool *bufs;
	struct timing_pool *timing;
	const struct conn_host_ops *ops;
	void *ctx;
	struct stall_list stalls;
	struct conn *conns;
	uint64_t active, accepted;
	uint64_t opened;
};

#endif /* SMBSPLICE_CONN_T_H */
