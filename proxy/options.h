/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_OPTIONS_H
#define SMBSPLICE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "threshold.h"

enum fwd_mode {
	MODE_SMB, /* message-aware: pump and cork chosen per SMB message */
	MODE_TCP, /* opaque: pump and cork chosen from the flow itself */
};

/**
 * struct endpoint - a resolved HOST:PORT
 * @addr:	socket address, ready for bind() or connect()
 * @len:	length of @addr
 * @text:	the address as given on the command line, for logs
 */
struct endpoint {
	struct sockaddr_storage addr;
	socklen_t len;
	char text[128];
};

/**
 * struct options - everything the command line sets
 * @listen:		where to accept clients
 * @backend:		where to forward them
 * @mode:		MODE_SMB or MODE_TCP
 * @pipe_size:		bytes per splice pipe (F_SETPIPE_SZ)
 * @max_pipes:		cap on open pipes across all connections
 * @buf_size:		bytes of copy buffer per direction
 * @handshake_timeout:	smb mode: seconds a client has to send its first byte
 * @connect_timeout:	seconds to wait for the backend to accept
 * @idle_timeout:	seconds without traffic before a connection is
 *			closed, 0 for never
 * @splice:		false to force the copy pump everywhere
 * @th:			smb mode: smallest payload per class to splice
 * @stats:		where to serve Prometheus metrics; len 0 for nowhere
 * @workers:		event loop threads; 0 for one per usable CPU
 * @max_conns:		cap on open connections; 0 for what descriptors allow
 * @max_per_source:	cap on open connections per client address; 0 for none
 * @verbose:		log level: 0 connections and errors, 1+ debug
 */
struct options {
	struct endpoint listen;
	struct endpoint backend;
	enum fwd_mode mode;
	size_t pipe_size;
	unsigned max_pipes;
	size_t buf_size;
	double handshake_timeout;
	double connect_timeout;
	double idle_timeout;
	bool splice;
	struct smb_thresholds th;
	struct endpoint stats;
	unsigned workers;
	unsigned max_conns, max_per_source;
	int verbose;
};

#define OPT_DEFAULT_PIPE_SIZE	  (1024u << 10)
#define OPT_DEFAULT_MAX_PIPES	  1024u
#define OPT_DEFAULT_BUF_SIZE	  (64u << 10)
#define OPT_DEFAULT_CONNECT_TMO	  5.0
#define OPT_DEFAULT_HANDSHAKE_TMO 30.0
#define OPT_DEFAULT_IDLE_TMO	  3600.0
#define OPT_DEFAULT_THRESHOLD	  (1024u << 10)
#define OPT_MAX_WORKERS		  1024u

enum opt_result {
	OPT_OK,	  /* run the daemon */
	OPT_EXIT, /* --help or --version was printed: exit 0 */
	OPT_BAD,  /* one line was written to @err: exit 2 */
};

int parse_size(const char *s, size_t *out);
int parse_count(const char *s, unsigned min, unsigned max, unsigned *out);
int parse_seconds(const char *s, double *out);
int parse_threshold(const char *s, uint32_t *out);
int parse_endpoint(const char *s, struct endpoint *ep, bool passive);
enum opt_result options_parse(struct options *o, int argc, char **argv,
			      char *err, size_t errlen);
void options_usage(FILE *f);

#endif /* SMBSPLICE_OPTIONS_H */
