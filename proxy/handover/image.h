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
#define IMG_VERSION 2u

enum img_type {
	IMG_PROCESS = 1, /* struct img_process, first and once */
	IMG_LISTENER,	 /* struct img_listener */
	IMG_LSTATS,	 /* struct img_lstats, then its counters */
	IMG_CONN,	 /* struct img_conn, then its tails */
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
 * @lstats_words: uint64_t counters per listener and worker
 * @pad:	zero
 * @accepted:	connections it and those before it accepted
 */
struct img_process {
	uint32_t nworkers;
	int32_t pid;
	uint64_t last_id;
	double now;
	int32_t metrics_fd, control_fd;
	uint32_t lstats_words, pad;
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
 * @pad:	zero
 * @timing_len:	0, or timing_saved_len() of its requests: the part of a
 *		struct timing_saved that holds anything
 * @trace_len:	0, or sizeof(struct trace_conn_saved)
 * @dir:	its directions, when open
 */
struct img_conn {
	uint64_t id;
	char listener[OPT_NAME_LEN];
	uint32_t worker, state, be, peeked;
	int32_t cli_fd, srv_fd;
	double started, deadline, last_active;
	uint8_t peer[128];
	char cli_text[64];
	uint8_t source[16];
	uint8_t cli_corked, srv_corked, unauth, admitted, lowat, smb, pad[2];
	uint32_t timing_len, trace_len;
	struct dir_saved dir[2];
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
 */
struct image {
	struct img_process proc;
	struct img_listener *ls;
	unsigned nls;
	struct img_lstats_view *st;
	unsigned nst;
	struct img_conn_view *conns;
	unsigned nconns;
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
 * @oom:	memory ran out: imgw_finish() fails
 */
struct image_writer {
	uint8_t *p;
	size_t len, cap;
	int *fds;
	size_t nfds, fdcap;
	uint32_t nrec;
	bool oom;
};

void imgw_init(struct image_writer *w);
void imgw_reserve(struct image_writer *w, size_t conns);
int32_t imgw_fd(struct image_writer *w, int fd);
void imgw_put(struct image_writer *w, enum img_type type, const void *rec,
	      size_t len, const void *const *tails, const size_t *tail_lens,
	      unsigned ntails);
int imgw_finish(struct image_writer *w);
void imgw_free(struct image_writer *w);

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
