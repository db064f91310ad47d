/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_OPTIONS_H
#define SMBSPLICE_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/parse.h"
#include "smb/threshold.h"

enum fwd_mode {
	MODE_SMB, /* message-aware: pump and cork chosen per SMB message */
	MODE_TCP, /* opaque: pump and cork chosen from the flow itself */
};

/* How a listener's backends are probed (health.c). */
enum check_mode {
	CHECK_OFF, /* not at all: a backend is taken to be up */
	CHECK_TCP, /* a connect */
	CHECK_SMB, /* a connect, and an SMB2 NEGOTIATE answered */
};

/* When a QUIC listener asks clients to prove their address (a Retry)
 * before it keeps any state for them. */
enum quic_retry {
	QUIC_RETRY_AUTO,   /* above QUIC_RETRY_RATE new Initials a second */
	QUIC_RETRY_ALWAYS, /* every new connection */
	QUIC_RETRY_OFF,	   /* never */
};

/* The two sockets of a connection, for settings made per side. */
enum side { SIDE_CLIENT, SIDE_BACKEND, SIDE_COUNT };

#define OPT_MAX_BACKENDS 8
#define OPT_MAX_ALLOW	 64
#define OPT_NAME_LEN	 64
#define OPT_CC_LEN	 16
#define OPT_PATH_LEN	 256
/* Client certificate rules a QUIC listener holds per list, and the
 * longest (an issuer's distinguished name). */
#define OPT_MAX_QUIC_RULES 16
#define OPT_QUIC_RULE_LEN  256

/**
 * struct listen_opts - one listener: where it listens, where it forwards,
 *			and how
 * @name:		its name in logs and metrics ("main" from the command
 *			line, the section name in a config file)
 * @listen:		where to accept clients
 * @backend:		servers to forward to, tried in order
 * @nbackends:		how many
 * @mode:		MODE_SMB or MODE_TCP
 * @splice:		false to force the copy pump everywhere
 * @latency:		smb mode: time requests and frames for the histograms
 * @th:			smb mode: smallest payload per class to splice
 * @handshake_timeout:	smb mode: seconds a client has to send its first
 *			frame
 * @any_first_frame:	smb mode: dial on the client's first byte, whatever
 *			it is (--first-frame any), not only on a NEGOTIATE
 * @auth_timeout:	smb mode: seconds from accept a client has to
 *			complete a session setup, 0 for no limit
 * @connect_timeout:	seconds each backend has to accept
 * @idle_timeout:	seconds without traffic before a connection is
 *			closed, 0 for never
 * @netns:		network namespace paths, per side; empty for the
 *			process's own
 * @allow:		networks whose clients are served; none for everyone
 * @nallow:		how many
 * @transparent:	connect to the backend from the client's address
 * @send_proxy:		open backend connections with a PROXY v2 header
 * @accept_proxy:	expect a PROXY v2 header before the client's bytes
 * @proxy_from:		peers whose headers are taken (with @accept_proxy)
 * @nproxy_from:	how many
 * @keepalive:		TCP keepalive on both sockets (idle 0 for off)
 * @cc:			TCP congestion control per side; empty for the
 *			system's default
 * @sockbuf:		SO_SNDBUF and SO_RCVBUF per side: bytes, or
 *			SOCKBUF_KERNEL (the kernel's autotuning), or
 *			SOCKBUF_AUTO (io/sockbuf.c chooses by the path's RTT)
 * @source:		address backend connections come from; len 0 for any
 * @mptcp:		open that side with IPPROTO_MPTCP
 * @foreign_netns:	its namespaces may be owned by another user namespace
 *			than smbsplice's (a rootless container's)
 * @check:		how its backends are probed, CHECK_*
 * @check_interval:	seconds from one probe of a backend to the next
 * @check_rise:		probes in a row that pass before a down backend is up
 * @check_fall:		probes in a row that fail before an up backend is down
 * @quic:		the listener is SMB over QUIC (listen = quic:HOST:PORT):
 *			a UDP socket, its streams bridged to connections
 *			(proxy/quic/)
 * @quic_cert:		quic: the server's certificate chain, PEM
 * @quic_key:		quic: its private key, PEM
 * @backend_quic:	per backend: dialled over QUIC (backend =
 *			quic:HOST:PORT), its stream bridged to the
 *			connection's server side (proxy/quic/qdial.c)
 * @quic_name:		quic backends: the server's name for SNI and the
 *			certificate's check; empty for each backend's HOST
 * @quic_ca:		quic backends: the CAs to trust, PEM; empty for the
 *			system's trust store
 * @quic_pin:		quic backends: the SHA-256 of the server's
 *			certificate, in hex, instead of a CA
 * @quic_client_cert:	quic backends: a client certificate, PEM; empty for
 *			none
 * @quic_client_key:	its private key, PEM
 * @quic_retry:		quic: when new clients get a Retry, enum quic_retry
 * @quic_client_ca:	quic: require a client certificate chained to these
 *			CAs (PEM); empty for none
 * @quic_allow:		quic: the client certificates allowed: 64 lower-case
 *			hex digits of a SHA-256, or "issuer:" and a DN
 * @nquic_allow:	how many
 * @quic_deny:		quic: those refused, in the same forms
 * @nquic_deny:		how many
 * @save_syn:		not an option: transparent under --user, so the
 *			listener keeps each client's SYN (TCP_SAVE_SYN) for
 *			the helper's proof that it accepted the client
 *			(acceptproof.c)
 */
struct listen_opts {
	char name[OPT_NAME_LEN];
	struct endpoint listen;
	struct endpoint backend[OPT_MAX_BACKENDS];
	unsigned nbackends;
	enum fwd_mode mode;
	bool splice;
	bool latency;
	struct smb_thresholds th;
	double handshake_timeout;
	bool any_first_frame;
	double auth_timeout;
	double connect_timeout;
	double idle_timeout;
	char netns[SIDE_COUNT][OPT_PATH_LEN];
	struct cidr allow[OPT_MAX_ALLOW];
	unsigned nallow;
	bool transparent;
	bool send_proxy, accept_proxy;
	struct cidr proxy_from[OPT_MAX_ALLOW];
	unsigned nproxy_from;
	struct keepalive keepalive;
	char cc[SIDE_COUNT][OPT_CC_LEN];
	unsigned sockbuf[SIDE_COUNT];
	struct endpoint source;
	bool mptcp[SIDE_COUNT];
	bool foreign_netns;
	enum check_mode check;
	double check_interval;
	unsigned check_rise, check_fall;
	bool quic;
	char quic_cert[OPT_PATH_LEN];
	char quic_key[OPT_PATH_LEN];
	bool backend_quic[OPT_MAX_BACKENDS];
	char quic_name[OPT_PATH_LEN];
	char quic_ca[OPT_PATH_LEN];
	char quic_pin[OPT_PATH_LEN];
	char quic_client_cert[OPT_PATH_LEN];
	char quic_client_key[OPT_PATH_LEN];
	enum quic_retry quic_retry;
	char quic_client_ca[OPT_PATH_LEN];
	char quic_allow[OPT_MAX_QUIC_RULES][OPT_QUIC_RULE_LEN];
	unsigned nquic_allow;
	char quic_deny[OPT_MAX_QUIC_RULES][OPT_QUIC_RULE_LEN];
	unsigned nquic_deny;
	bool save_syn;
};

/**
 * struct options - the process-wide settings
 * @pipe_size:		bytes per splice pipe (F_SETPIPE_SZ)
 * @max_pipes:		cap on open pipes across all connections
 * @buf_size:		bytes per copy buffer
 * @stats:		where to serve Prometheus metrics; len 0 for nowhere
 * @stats_allow:	networks that may scrape them; none for loopback only
 * @nstats_allow:	how many
 * @workers:		event loop threads; 0 for the default (main.c)
 * @max_conns:		cap on open connections; 0 for what descriptors allow
 * @max_per_source:	cap on open connections per client address; 0 for none
 * @source_prefix6:	IPv6 clients count per network of this prefix length
 * @max_preauth:	cap per client address on smb-mode connections that
 *			have not authenticated; 0 for none
 * @verbose:		log level: 0 connections and errors, 1+ debug
 * @user:		user to run as once the sockets are open; empty for
 *			no change
 * @share_address:	listen where another process listens already, sharing
 *			its clients (a drain and start); without it, such an
 *			address refuses the start
 * @syslog:		log to syslog instead of standard error
 * @trace:		headers-only capture file; empty for none
 * @control:		the control socket's path; empty for none
 * @control_group:	a group the control socket is open to (mode 0660)
 * @control_ro:		the read-only (view) control socket's path; empty
 *			for none
 * @control_ro_group:	a group that socket is open to (mode 0660)
 * @trace_max:		rotate it past this many bytes; 0 for never
 * @drain_timeout:	seconds SIGTERM lets open connections run; 0 for
 *			as long as they last
 * @config:		the config file; empty for none
 * @check:		validate the configuration and exit
 */
struct options {
	size_t pipe_size;
	unsigned max_pipes;
	size_t buf_size;
	struct endpoint stats;
	struct cidr stats_allow[OPT_MAX_ALLOW];
	unsigned nstats_allow;
	unsigned workers;
	unsigned max_conns, max_per_source, source_prefix6, max_preauth;
	int verbose;
	char user[OPT_NAME_LEN];
	bool share_address;
	bool syslog;
	char trace[OPT_PATH_LEN];
	char control[OPT_PATH_LEN];
	char control_group[OPT_NAME_LEN];
	char control_ro[OPT_PATH_LEN];
	char control_ro_group[OPT_NAME_LEN];
	uint64_t trace_max;
	double drain_timeout;
	char config[OPT_PATH_LEN];
	bool check;
};

#define CONFIG_MAX_LISTENERS 64

/**
 * struct config - what the command line and the config file set
 * @o:		the process-wide settings
 * @ls:		the listeners
 * @nls:	how many
 */
struct config {
	struct options o;
	struct listen_opts ls[CONFIG_MAX_LISTENERS];
	unsigned nls;
};

#define OPT_DEFAULT_PIPE_SIZE	  (1024u << 10)
#define OPT_DEFAULT_MAX_PIPES	  1024u
#define OPT_DEFAULT_BUF_SIZE	  (64u << 10)
#define OPT_DEFAULT_CONNECT_TMO	  5.0
#define OPT_DEFAULT_HANDSHAKE_TMO 30.0
#define OPT_DEFAULT_AUTH_TMO	  60.0
#define OPT_DEFAULT_MAX_PREAUTH	  64u
#define OPT_DEFAULT_IDLE_TMO	  0.0
#define OPT_DEFAULT_THRESHOLD	  (1024u << 10)
#define OPT_DEFAULT_KA_IDLE	  60u
#define OPT_DEFAULT_KA_INTVL	  10u
#define OPT_DEFAULT_KA_CNT	  6u
#define OPT_DEFAULT_DRAIN_TMO	  60.0
#define OPT_DEFAULT_TRACE_MAX	  (100u << 20)
#define OPT_DEFAULT_PREFIX6	  64u
/* HAProxy's rise and fall; a longer interval than its 2 s, since on Samba
 * every smb probe costs a forked smbd. */
#define OPT_DEFAULT_CHECK_INTVL 5.0
#define OPT_DEFAULT_CHECK_RISE	2u
#define OPT_DEFAULT_CHECK_FALL	3u

/* The limits of values; their rows in options_table.c state them. */
#define OPT_MAX_WORKERS	    1024u
#define OPT_MAX_CHECK_COUNT 100u
#define OPT_MAX_CONNS	    10000000u
#define OPT_MAX_PIPES	    1000000u
#define OPT_MIN_PIPE_SIZE   (4u << 10)
#define OPT_MAX_PIPE_SIZE   (1024u << 20)
#define OPT_MIN_BUF_SIZE    (1u << 10)
#define OPT_MAX_BUF_SIZE    (64u << 20)
#define OPT_MIN_TRACE_MAX   (64u << 10)
#define OPT_MIN_SOCKBUF	    (4u << 10)
#define OPT_MAX_SOCKBUF	    (1024u << 20)
/* listen_opts.sockbuf values that are not a size */
#define SOCKBUF_KERNEL 0u
#define SOCKBUF_AUTO   UINT_MAX

/**
 * sockbuf_fixed() - the size a --socket-buffer setting fixes before the
 *		     handshake
 * @setting:	a side's listen_opts.sockbuf
 *
 * SOCKBUF_AUTO is decided once the path's RTT is known (io/sockbuf.c).
 *
 * Return: bytes, or 0 (SOCKBUF_KERNEL, SOCKBUF_AUTO) for none.
 */
static inline unsigned sockbuf_fixed(unsigned setting)
{
	return setting == SOCKBUF_AUTO ? 0 : setting;
}

enum opt_result {
	OPT_OK,	  /* run the daemon */
	OPT_EXIT, /* --help or --version was printed: exit 0 */
	OPT_BAD,  /* one line was written to @err: exit 2 */
	/* one line was written to @err: a listen or backend name that does
	 * not resolve now, which it may later (the network comes up after
	 * smbsplice, DNS is slow): exit 1, so that systemd tries again */
	OPT_UNRESOLVED,
};

void options_defaults(struct options *o);
void options_listener_defaults(struct listen_opts *l, const char *name);
enum opt_result options_parse(struct config *c, int argc, char **argv,
			      bool inherited, char *err, size_t errlen);
enum opt_result options_apply(struct config *c, struct listen_opts *l,
			      const char *key, const char *value, bool *seen,
			      char *err, size_t errlen);
enum opt_result options_check_config(const struct config *c, bool inherited,
				     char *err, size_t errlen);
void options_usage(FILE *f);
const char *options_name(unsigned i, bool *in_file);
unsigned options_count(void);
void options_restart_only(const struct options *was, const struct options *now,
			  char *out, size_t len);

#endif /* SMBSPLICE_OPTIONS_H */
