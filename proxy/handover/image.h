/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_IMAGE_H
#define SMBSPLICE_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smb/framer.h"
#include "conf/options.h"
#include "conn/conn-t.h"
#include "io/pump.h"
#include "observe/timing.h"
#include "observe/trace.h"

/* The image's first bytes, and its format's number: a process refuses an
 * image of another number, and the one that wrote it goes on forwarding.
 * Any change to a record below, or to a struct it embeds, bumps it. */
#define IMG_MAGIC   "SMBSPHO"
#define IMG_VERSION 5u

enum img_type {
	IMG_PROCESS = 1, /* struct img_process, first and once */
	IMG_LISTENER,	 /* struct img_listener */
	IMG_LSTATS,	 /* struct img_lstats, then its counters */
	IMG_CONN,	 /* struct img_conn, then its tails */
	IMG_QUIC,	 /* struct img_quic (version 5) */
};

/**
 * struct img_process - the process that wrote the image
 * @nworkers:	its worker count; the image's workers are 0 to this - 1
 * @pid:	its pid, for the log
 * @last_id:	the last connection number it gave out
 * @now:	its loop's clock when it paused (ev_now(): deadlines are
 *		absolute times on the same clock)
 * @metrics_fd:	descriptor index of the --stats socket, or -1
 * @control_fd:	descriptor index of the --control socket, or -1
 * @control_ro_fd: descriptor index of the --control-ro socket, or -1
 *		(version 3: it took the place of a pad)
 * @lstats_words: uint64_t counters per listener and worker
 * @accepted:	connections it and those before it accepted
 */
struct img_process {
	uint32_t nworkers;
	int32_t pid;
	uint64_t last_id;
	double now;
	int32_t metrics_fd, control_fd, control_ro_fd;
	uint32_t lstats_words;
	uint64_t accepted;
};

/**
 * struct img_listener - a listener's socket in one worker
 * @name:	the listener's name, NUL-terminated
 * @worker:	the worker accepting on it
 * @fd:		the socket's descriptor index
 *
 * A listener drained through the control socket is not handed over: the
 * handover is refused until it is resumed.
 */
struct img_listener {
	char name[OPT_NAME_LEN];
	uint32_t worker;
	int32_t fd;
};

/**
 * struct img_quic - a QUIC listener's steering map, which the next process
 *		     takes slots of (io/reuseport.c); its connections stay
 *		     in the process that has them
 * @name:	the listener's name, NUL-terminated
 * @addr:	its configured listen address (a struct sockaddr_in or _in6)
 * @addrlen:	its length
 * @map_fd:	the map's descriptor index
 */
struct img_quic {
	char name[OPT_NAME_LEN];
	uint8_t addr[28];
	uint32_t addrlen;
	int32_t map_fd;
};

/**
 * struct img_lstats - a listener's counters in one worker; the process's
 *		       @lstats_words uint64_t follow
 * @name:	the listener's name, NUL-terminated
 * @worker:	the worker
 * @pad:	zero
 */
struct img_lstats {
	char name[OPT_NAME_LEN];
	uint32_t worker, pad;
};

/* The record's fields come from CONN_CARRIED (conn/conn-t.h), one part
 * of it at a time, in the record's order: IMG_PART_<part> keeps a row's
 * fields that go in <part>, and drops the rest. A field goes in a part when
 * IMG_SAME_<part>_<its part> is defined (the preprocessor compares names
 * no other way). */
#define IMG_SECOND_(a, b, ...) b
#define IMG_SECOND(...)	       IMG_SECOND_(__VA_ARGS__)
#define IMG_CAT_(a, b)	       a##b
#define IMG_CAT(a, b)	       IMG_CAT_(a, b)
#define IMG_KEEP_0(x)
#define IMG_KEEP_1(x) x
#define IMG_IF_SAME(a, b, x)                                                   \
	IMG_CAT(IMG_KEEP_, IMG_SECOND(IMG_SAME_##a##_##b, 0, ~))(x)
#define IMG_SAME_U64_U64     ~, 1
#define IMG_SAME_NAME_NAME   ~, 1
#define IMG_SAME_U32_U32     ~, 1
#define IMG_SAME_FD_FD	     ~, 1
#define IMG_SAME_TIME_TIME   ~, 1
#define IMG_SAME_BYTES_BYTES ~, 1
#define IMG_SAME_FLAG_FLAG   ~, 1
#define IMG_SAME_LEN_LEN     ~, 1
#define IMG_SAME_DIR_DIR     ~, 1
#define IMG_SAME_WHO_WHO     ~, 1

/* A row's fields in part P, each through E(type, name, dims). */
#define IMG_ROW_COPY(E, P, m, part, type) IMG_IF_SAME(P, part, E(type, m, ))
#define IMG_ROW_BYTES(E, P, m, type, n)	  IMG_IF_SAME(P, BYTES, E(type, m, [n]))
#define IMG_ROW_SOCK(E, P, m, ...)                                             \
	IMG_IF_SAME(P, FD, E(int32_t, m##_fd, ))                               \
	IMG_IF_SAME(P, FLAG, E(uint8_t, m##_corked, ))
#define IMG_ROW_PAIR(E, P, m, part, type, field, dims, fn)                     \
	IMG_IF_SAME(P, part, E(type, field, dims))
#define IMG_ROW_OPEN IMG_ROW_PAIR
#define IMG_ROW_REBUILT(E, P, m, why)

#define IMG_FIELD(type, name, dims) type name dims;
#define IMG_ONE(type, name, dims)   +1
#define IMG_PART_U64(m, how, ...)   IMG_ROW_##how(IMG_FIELD, U64, m, __VA_ARGS__)
#define IMG_PART_NAME(m, how, ...)                                             \
	IMG_ROW_##how(IMG_FIELD, NAME, m, __VA_ARGS__)
#define IMG_PART_U32(m, how, ...) IMG_ROW_##how(IMG_FIELD, U32, m, __VA_ARGS__)
#define IMG_PART_FD(m, how, ...)  IMG_ROW_##how(IMG_FIELD, FD, m, __VA_ARGS__)
#define IMG_PART_TIME(m, how, ...)                                             \
	IMG_ROW_##how(IMG_FIELD, TIME, m, __VA_ARGS__)
#define IMG_PART_BYTES(m, how, ...)                                            \
	IMG_ROW_##how(IMG_FIELD, BYTES, m, __VA_ARGS__)
#define IMG_PART_FLAG(m, how, ...)                                             \
	IMG_ROW_##how(IMG_FIELD, FLAG, m, __VA_ARGS__)
#define IMG_PART_LEN(m, how, ...)   IMG_ROW_##how(IMG_FIELD, LEN, m, __VA_ARGS__)
#define IMG_PART_DIR(m, how, ...)   IMG_ROW_##how(IMG_FIELD, DIR, m, __VA_ARGS__)
#define IMG_PART_WHO(m, how, ...)   IMG_ROW_##how(IMG_FIELD, WHO, m, __VA_ARGS__)
#define IMG_COUNT_FLAG(m, how, ...) IMG_ROW_##how(IMG_ONE, FLAG, m, __VA_ARGS__)

/* The record's flags, each 0 or 1, which the decoder checks as one array. */
#define IMG_NFLAGS (0 CONN_CARRIED(IMG_COUNT_FLAG))

/**
 * struct img_conn - a connection; after it come its tails: direction 0's
 *		     pending bytes, direction 1's, @timing_len bytes of a
 *		     struct timing_saved, @trace_len of a struct
 *		     trace_conn_saved
 * @id:		its number
 * @listener:	its listener's name
 * @worker:	the worker it lives in
 * @state:	its enum conn_state: proxy-header, handshake, connecting or
 *		open
 * @be:		the backend it was dialling or forwards to
 * @peeked:	handshake bytes seen so far
 * @cli_fd:	descriptor index of the client socket
 * @srv_fd:	of the backend socket, or -1 (connecting, waiting for a
 *		descriptor)
 * @started:	when it was accepted (the loop's clock)
 * @deadline:	when its handshake or connect times out
 * @last_active: when it last moved a byte
 * @peer:	the client's address (a sockaddr)
 * @cli_text:	the same as text, NUL-terminated
 * @source:	the client's address as the caps count it
 * @cli_corked:	the client socket holds bytes written with MORE (0 or 1,
 *		as every flag below)
 * @srv_corked:	the backend socket does
 * @unauth:	no session setup has succeeded yet
 * @admitted:	it holds a place under the caps
 * @lowat:	its client socket's SO_RCVLOWAT is raised
 * @smb:	its listener was in smb mode
 * @flags:	the flags above, as an array
 * @pad:	zero
 * @timing_len:	0, or timing_saved_len() of its requests: the part of a
 *		struct timing_saved that holds anything
 * @trace_len:	0, or sizeof(struct trace_conn_saved)
 * @dir:	its directions, when open
 * @who:	its session's view (smb/who.h), @who.present 0 for none
 *
 * Every field but @pad comes from a row of CONN_CARRIED, in this order.
 */
struct img_conn {
	/* clang-format off */
	CONN_CARRIED(IMG_PART_U64)
	CONN_CARRIED(IMG_PART_NAME)
	CONN_CARRIED(IMG_PART_U32)
	CONN_CARRIED(IMG_PART_FD)
	CONN_CARRIED(IMG_PART_TIME)
	CONN_CARRIED(IMG_PART_BYTES)
	union {
		struct {
			CONN_CARRIED(IMG_PART_FLAG)
		};
		uint8_t flags[IMG_NFLAGS];
	};
	uint8_t pad[2];
	CONN_CARRIED(IMG_PART_LEN)
	CONN_CARRIED(IMG_PART_DIR)
	CONN_CARRIED(IMG_PART_WHO)
	/* clang-format on */
};

/**
 * struct img_conn_view - a connection of a decoded image
 * @c:		its record, copied out aligned
 * @bytes:	each direction's pending bytes (@c.dir[i].pump.pending),
 *		pointing into the image
 * @timing:	its struct timing_saved, cut after its requests
 *		(unaligned: copy it), or NULL
 * @trace:	its struct trace_conn_saved (likewise), or NULL
 */
struct img_conn_view {
	struct img_conn c;
	const uint8_t *bytes[2];
	const uint8_t *timing, *trace;
};

/**
 * struct img_lstats_view - a listener's counters of a decoded image
 * @s:		the record
 * @words:	its counters (unaligned: copy them)
 */
struct img_lstats_view {
	struct img_lstats s;
	const uint8_t *words;
};

/**
 * struct image - a decoded, checked image; its views point into the
 *		  bytes it was decoded from, which must outlive it
 * @proc:	the process record
 * @ls:		listeners
 * @nls:	how many
 * @st:		counters
 * @nst:	how many
 * @conns:	connections
 * @nconns:	how many
 * @quic:	QUIC listeners' maps
 * @nquic:	how many
 */
struct image {
	struct img_process proc;
	struct img_listener *ls;
	unsigned nls;
	struct img_lstats_view *st;
	unsigned nst;
	struct img_conn_view *conns;
	unsigned nconns;
	struct img_quic *quic;
	unsigned nquic;
};

/**
 * struct image_writer - an image being written, and the descriptors that
 *			 go with it
 * @p:		the bytes
 * @len:	bytes written
 * @cap:	bytes allocated
 * @fds:	descriptors, in the order their indices name them
 * @nfds:	how many
 * @fdcap:	room allocated
 * @nrec:	records written
 * @oom:	memory ran out: image_write_finish() fails
 */
struct image_writer {
	uint8_t *p;
	size_t len, cap;
	int *fds;
	size_t nfds, fdcap;
	uint32_t nrec;
	bool oom;
};

void image_write_init(struct image_writer *w);
void image_write_reserve(struct image_writer *w, size_t conns);
int32_t image_write_fd(struct image_writer *w, int fd);
void image_write_put(struct image_writer *w, enum img_type type,
		     const void *rec, size_t len, const void *const *tails,
		     const size_t *tail_lens, unsigned ntails);
int image_write_finish(struct image_writer *w);
void image_write_free(struct image_writer *w);

/**
 * struct image_in - an image this process received, and its descriptors
 * @sock:	the socket to the process that sent it, or -1 when this one
 *		was started plainly
 * @bytes:	the image
 * @len:	its size
 * @fds:	its descriptors; -1 once something took one
 * @nfds:	how many
 * @img:	the image, decoded
 */
struct image_in {
	int sock;
	void *bytes;
	size_t len;
	int *fds;
	size_t nfds;
	struct image img;
};

int image_in_take_fd(struct image_in *in, int32_t index);
size_t image_in_held(const struct image_in *in);
int image_decode(const uint8_t *p, size_t len, size_t nfds, struct image *img,
		 char *err, size_t errlen);
void image_free(struct image *img);

#endif /* SMBSPLICE_IMAGE_H */
