// SPDX-License-Identifier: GPL-2.0-or-later
/* options.c - the options: one table, read from the command line
 *
 * Theory of operation: every option is one row of opt_table: its long name
 * (which is also its key in a config file), its short letter if any, what
 * it applies to (the process, or a listener), whether it may repeat, its
 * help text and the function that applies a value. The command line, the
 * config file, --help and the man pages' consistency test all read the
 * same table, so they cannot drift apart.
 *
 * Every option is parsed into struct options before the daemon opens a
 * single socket. A bad value produces exactly one line in the caller's
 * buffer, naming the option, the value and what is expected, and the
 * caller exits with status 2. Nothing here logs, exits or touches the
 * system, so all of it runs under the unit tests; what can only be checked
 * against the system (a namespace, a congestion control algorithm, a
 * capability) is checked when the listener opens.
 */
#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "config_file.h"
#include "options.h"

enum scope {
	SCOPE_PROCESS,	/* one value for the whole process */
	SCOPE_LISTENER, /* one value per listener */
};

typedef enum opt_result (*apply_fn)(struct options *o, struct listen_opts *l,
				    const char *arg, char *err, size_t errlen);

/**
 * struct opt_def - one option
 * @name:	long name, and key in a config file
 * @shortc:	short letter, 0 if none
 * @metavar:	what its value looks like in --help; NULL for a flag
 * @help:	--help text; lines after the first start with a newline
 * @scope:	SCOPE_PROCESS or SCOPE_LISTENER
 * @repeat:	may be given more than once, each adding a value
 * @apply:	applies one value
 * @cli_only:	a command-line option only, not a config file key
 */
struct opt_def {
	const char *name;
	int shortc;
	const char *metavar;
	const char *help;
	enum scope scope;
	bool repeat;
	apply_fn apply;
	bool cli_only;
};

/**
 * bad() - write the one-line complaint about an option value
 * @err:	buffer for the line
 * @errlen:	its size
 * @opt:	option name, without dashes
 * @val:	the rejected value
 * @want:	what would have been accepted
 *
 * Return: OPT_BAD, so callers can return bad(...) directly.
 */
static enum opt_result bad(char *err, size_t errlen, const char *opt,
			   const char *val, const char *want)
{
	snprintf(err, errlen, "--%s '%s': %s", opt, val, want);
	return OPT_BAD;
}

#define ENDPOINT_WANT "expected HOST:PORT or [IPV6]:PORT that resolves"

static enum opt_result set_listen(struct options *o, struct listen_opts *l,
				  const char *arg, char *err, size_t errlen)
{
	if (parse_endpoint(arg, &l->listen, true))
		return bad(err, errlen, "listen", arg, ENDPOINT_WANT);
	return OPT_OK;
}

static enum opt_result add_backend(struct options *o, struct listen_opts *l,
				   const char *arg, char *err, size_t errlen)
{
	if (l->nbackends == OPT_MAX_BACKENDS)
		return bad(err, errlen, "backend", arg,
			   "at most 8 backends per listener");
	if (parse_endpoint(arg, &l->backend[l->nbackends], false))
		return bad(err, errlen, "backend", arg, ENDPOINT_WANT);
	l->nbackends++;
	return OPT_OK;
}

static enum opt_result set_mode(struct options *o, struct listen_opts *l,
				const char *arg, char *err, size_t errlen)
{
	if (!strcmp(arg, "smb"))
		l->mode = MODE_SMB;
	else if (!strcmp(arg, "tcp"))
		l->mode = MODE_TCP;
	else
		return bad(err, errlen, "mode", arg, "expected smb or tcp");
	return OPT_OK;
}

static enum opt_result set_pipe_size(struct options *o, struct listen_opts *l,
				     const char *arg, char *err, size_t errlen)
{
	size_t sz;

	if (parse_size(arg, &sz) || sz < 4096)
		return bad(err, errlen, "pipe-size", arg,
			   "expected a size from 4K to 1024M, e.g. 8K or 1M");
	o->pipe_size = sz;
	return OPT_OK;
}

static enum opt_result set_max_pipes(struct options *o, struct listen_opts *l,
				     const char *arg, char *err, size_t errlen)
{
	if (parse_count(arg, 1, 1000000, &o->max_pipes))
		return bad(err, errlen, "max-pipes", arg,
			   "expected a count from 1 to 1000000");
	return OPT_OK;
}

static enum opt_result set_buf_size(struct options *o, struct listen_opts *l,
				    const char *arg, char *err, size_t errlen)
{
	size_t sz;

	if (parse_size(arg, &sz) || sz < 1024 || sz > (64u << 20))
		return bad(err, errlen, "buffer-size", arg,
			   "expected a size from 1K to 64M");
	o->buf_size = sz;
	return OPT_OK;
}

static enum opt_result set_no_splice(struct options *o, struct listen_opts *l,
				     const char *arg, char *err, size_t errlen)
{
	l->splice = false;
	return OPT_OK;
}

static enum opt_result set_no_latency(struct options *o, struct listen_opts *l,
				      const char *arg, char *err, size_t errlen)
{
	l->latency = false;
	return OPT_OK;
}

/**
 * set_threshold() - one of the three splice thresholds
 * @l:		the listener
 * @cls:	which
 * @name:	the option's name, for the complaint
 * @arg:	the value
 * @err:	buffer for a complaint
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result set_threshold(struct listen_opts *l, enum smb_class cls,
				     const char *name, const char *arg,
				     char *err, size_t errlen)
{
	if (parse_threshold(arg, &l->th.min[cls]))
		return bad(err, errlen, name, arg,
			   "expected a size up to 16M, e.g. 64K, or off");
	return OPT_OK;
}

static enum opt_result set_read_th(struct options *o, struct listen_opts *l,
				   const char *arg, char *err, size_t errlen)
{
	return set_threshold(l, SMB_CLASS_READ, "read-threshold", arg, err,
			     errlen);
}

static enum opt_result set_write_th(struct options *o, struct listen_opts *l,
				    const char *arg, char *err, size_t errlen)
{
	return set_threshold(l, SMB_CLASS_WRITE, "write-threshold", arg, err,
			     errlen);
}

static enum opt_result set_other_th(struct options *o, struct listen_opts *l,
				    const char *arg, char *err, size_t errlen)
{
	return set_threshold(l, SMB_CLASS_OTHER, "other-threshold", arg, err,
			     errlen);
}

static enum opt_result set_stats(struct options *o, struct listen_opts *l,
				 const char *arg, char *err, size_t errlen)
{
	if (parse_endpoint(arg, &o->stats, true))
		return bad(err, errlen, "stats", arg, ENDPOINT_WANT);
	return OPT_OK;
}

static enum opt_result set_workers(struct options *o, struct listen_opts *l,
				   const char *arg, char *err, size_t errlen)
{
	if (parse_count(arg, 1, OPT_MAX_WORKERS, &o->workers))
		return bad(err, errlen, "workers", arg,
			   "expected a count from 1 to 1024");
	return OPT_OK;
}

static enum opt_result set_max_conns(struct options *o, struct listen_opts *l,
				     const char *arg, char *err, size_t errlen)
{
	if (parse_count(arg, 1, 10000000, &o->max_conns))
		return bad(err, errlen, "max-conns", arg,
			   "expected a count from 1 to 10000000");
	return OPT_OK;
}

static enum opt_result set_max_per_source(struct options *o,
					  struct listen_opts *l,
					  const char *arg, char *err,
					  size_t errlen)
{
	if (parse_count(arg, 1, 10000000, &o->max_per_source))
		return bad(err, errlen, "max-conns-per-source", arg,
			   "expected a count from 1 to 10000000");
	return OPT_OK;
}

static enum opt_result set_handshake_tmo(struct options *o,
					 struct listen_opts *l, const char *arg,
					 char *err, size_t errlen)
{
	if (parse_seconds(arg, &l->handshake_timeout) ||
	    l->handshake_timeout <= 0)
		return bad(err, errlen, "handshake-timeout", arg,
			   "expected seconds greater than 0, e.g. 30");
	return OPT_OK;
}

static enum opt_result set_max_preauth(struct options *o, struct listen_opts *l,
				       const char *arg, char *err,
				       size_t errlen)
{
	if (!strcmp(arg, "off"))
		o->max_preauth = 0;
	else if (parse_count(arg, 1, 10000000, &o->max_preauth))
		return bad(err, errlen, "max-preauth-per-source", arg,
			   "expected a count from 1 to 10000000, or off");
	return OPT_OK;
}

static enum opt_result set_first_frame(struct options *o, struct listen_opts *l,
				       const char *arg, char *err,
				       size_t errlen)
{
	if (!strcmp(arg, "negotiate"))
		l->any_first_frame = false;
	else if (!strcmp(arg, "any"))
		l->any_first_frame = true;
	else
		return bad(err, errlen, "first-frame", arg,
			   "expected negotiate or any");
	return OPT_OK;
}

static enum opt_result set_auth_tmo(struct options *o, struct listen_opts *l,
				    const char *arg, char *err, size_t errlen)
{
	if (!strcmp(arg, "off"))
		l->auth_timeout = 0;
	else if (parse_seconds(arg, &l->auth_timeout) || l->auth_timeout <= 0)
		return bad(err, errlen, "auth-timeout", arg,
			   "expected seconds greater than 0, e.g. 60, or off");
	return OPT_OK;
}

static enum opt_result set_connect_tmo(struct options *o, struct listen_opts *l,
				       const char *arg, char *err,
				       size_t errlen)
{
	if (parse_seconds(arg, &l->connect_timeout) || l->connect_timeout <= 0)
		return bad(err, errlen, "connect-timeout", arg,
			   "expected seconds greater than 0, e.g. 5 or 0.5");
	return OPT_OK;
}

static enum opt_result set_idle_tmo(struct options *o, struct listen_opts *l,
				    const char *arg, char *err, size_t errlen)
{
	if (!strcmp(arg, "off"))
		l->idle_timeout = 0;
	else if (parse_seconds(arg, &l->idle_timeout))
		return bad(err, errlen, "idle-timeout", arg,
			   "expected seconds, or off (0 is off too)");
	return OPT_OK;
}

/**
 * set_netns() - a side's network namespace
 * @l:		the listener
 * @side:	which side
 * @name:	the option's name, for the complaint
 * @arg:	the value
 * @err:	buffer for a complaint
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result set_netns(struct listen_opts *l, enum side side,
				 const char *name, const char *arg, char *err,
				 size_t errlen)
{
	if (parse_netns(arg, l->netns[side], sizeof(l->netns[side])))
		return bad(err, errlen, name, arg,
			   "expected a path, a name in /run/netns or a PID");
	return OPT_OK;
}

static enum opt_result set_listen_netns(struct options *o,
					struct listen_opts *l, const char *arg,
					char *err, size_t errlen)
{
	return set_netns(l, SIDE_CLIENT, "listen-netns", arg, err, errlen);
}

static enum opt_result set_backend_netns(struct options *o,
					 struct listen_opts *l, const char *arg,
					 char *err, size_t errlen)
{
	return set_netns(l, SIDE_BACKEND, "backend-netns", arg, err, errlen);
}

/**
 * add_network() - one more network on an allow list
 * @list:	the list, OPT_MAX_ALLOW long
 * @n:		how many it holds
 * @opt:	the option's name, for the complaint
 * @arg:	the network
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result add_network(struct cidr *list, unsigned *n,
				   const char *opt, const char *arg, char *err,
				   size_t errlen)
{
	if (*n == OPT_MAX_ALLOW)
		return bad(err, errlen, opt, arg, "at most 64 networks");
	if (parse_cidr(arg, &list[*n]))
		return bad(
			err, errlen, opt, arg,
			"expected a network such as 192.0.2.0/24, 2001:db8::/32 or an address");
	/* It would match nothing, and look as if it did. */
	if (cidr_is_mapped(&list[*n]))
		return bad(
			err, errlen, opt, arg,
			"IPv4-mapped clients are matched against IPv4 networks only: write the IPv4 network (e.g. 192.0.2.0/24)");
	(*n)++;
	return OPT_OK;
}

static enum opt_result add_allow(struct options *o, struct listen_opts *l,
				 const char *arg, char *err, size_t errlen)
{
	return add_network(l->allow, &l->nallow, "allow", arg, err, errlen);
}

static enum opt_result add_stats_allow(struct options *o, struct listen_opts *l,
				       const char *arg, char *err,
				       size_t errlen)
{
	return add_network(o->stats_allow, &o->nstats_allow, "stats-allow", arg,
			   err, errlen);
}

static enum opt_result set_source_prefix6(struct options *o,
					  struct listen_opts *l,
					  const char *arg, char *err,
					  size_t errlen)
{
	if (parse_count(arg, 1, 128, &o->source_prefix6))
		return bad(err, errlen, "source-prefix6", arg,
			   "expected a prefix length from 1 to 128");
	return OPT_OK;
}

static enum opt_result set_transparent(struct options *o, struct listen_opts *l,
				       const char *arg, char *err,
				       size_t errlen)
{
	l->transparent = true;
	return OPT_OK;
}

static enum opt_result set_keepalive(struct options *o, struct listen_opts *l,
				     const char *arg, char *err, size_t errlen)
{
	if (parse_keepalive(arg, &l->keepalive))
		return bad(
			err, errlen, "keepalive", arg,
			"expected IDLE or IDLE:INTERVAL:COUNT in seconds (e.g. 60:10:6), or off");
	return OPT_OK;
}

/**
 * cc_name_ok() - could this be a congestion control algorithm's name
 * @s:	the name
 *
 * Return: true for 1 to 15 lower-case letters, digits and underscores.
 * Whether the kernel has it is checked when the listener opens.
 */
static bool cc_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n < OPT_CC_LEN &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static enum opt_result set_congestion(struct options *o, struct listen_opts *l,
				      const char *arg, char *err, size_t errlen)
{
	const char *alg = strchr(arg, ':') ? strchr(arg, ':') + 1 : arg;
	size_t side_len = alg == arg ? 0 : (size_t)(alg - arg - 1);
	bool cli = !side_len, srv = !side_len;

	if (side_len == 6 && !strncmp(arg, "client", 6))
		cli = true;
	else if (side_len == 7 && !strncmp(arg, "backend", 7))
		srv = true;
	if ((!cli && !srv) || !cc_name_ok(alg))
		return bad(err, errlen, "congestion", arg,
			   "expected ALG, client:ALG or backend:ALG, e.g. bbr");
	if (cli)
		strcpy(l->cc[SIDE_CLIENT], alg);
	if (srv)
		strcpy(l->cc[SIDE_BACKEND], alg);
	return OPT_OK;
}

static enum opt_result set_source(struct options *o, struct listen_opts *l,
				  const char *arg, char *err, size_t errlen)
{
	if (parse_address(arg, &l->source))
		return bad(err, errlen, "source", arg,
			   "expected a numeric IPv4 or IPv6 address");
	return OPT_OK;
}

static enum opt_result set_mptcp(struct options *o, struct listen_opts *l,
				 const char *arg, char *err, size_t errlen)
{
	bool lst = !strcmp(arg, "listen"), be = !strcmp(arg, "backend");
	bool both = !strcmp(arg, "both"), off = !strcmp(arg, "off");

	if (!lst && !be && !both && !off)
		return bad(err, errlen, "mptcp", arg,
			   "expected listen, backend, both or off");
	l->mptcp[SIDE_CLIENT] = lst || both;
	l->mptcp[SIDE_BACKEND] = be || both;
	return OPT_OK;
}

static enum opt_result set_config(struct options *o, struct listen_opts *l,
				  const char *arg, char *err, size_t errlen)
{
	if (!*arg || strlen(arg) >= sizeof(o->config))
		return bad(err, errlen, "config", arg, "expected a file name");
	strcpy(o->config, arg);
	return OPT_OK;
}

static enum opt_result set_check(struct options *o, struct listen_opts *l,
				 const char *arg, char *err, size_t errlen)
{
	o->check = true;
	return OPT_OK;
}

static enum opt_result set_user(struct options *o, struct listen_opts *l,
				const char *arg, char *err, size_t errlen)
{
	if (!*arg || strlen(arg) >= sizeof(o->user))
		return bad(err, errlen, "user", arg, "expected a user name");
	strcpy(o->user, arg);
	return OPT_OK;
}

static enum opt_result set_trace(struct options *o, struct listen_opts *l,
				 const char *arg, char *err, size_t errlen)
{
	if (!*arg || strlen(arg) >= sizeof(o->trace))
		return bad(err, errlen, "trace", arg,
			   "expected a file name shorter than 256 bytes");
	strcpy(o->trace, arg);
	return OPT_OK;
}

static enum opt_result set_trace_max(struct options *o, struct listen_opts *l,
				     const char *arg, char *err, size_t errlen)
{
	size_t sz;

	if (!strcmp(arg, "off")) {
		o->trace_max = 0;
		return OPT_OK;
	}
	if (parse_size(arg, &sz) || sz < (64u << 10))
		return bad(err, errlen, "trace-max", arg,
			   "expected a size of 64K or more, or off");
	o->trace_max = sz;
	return OPT_OK;
}

static enum opt_result set_syslog(struct options *o, struct listen_opts *l,
				  const char *arg, char *err, size_t errlen)
{
	o->syslog = true;
	return OPT_OK;
}

static enum opt_result set_drain_tmo(struct options *o, struct listen_opts *l,
				     const char *arg, char *err, size_t errlen)
{
	if (parse_seconds(arg, &o->drain_timeout))
		return bad(
			err, errlen, "drain-timeout", arg,
			"expected seconds, 0 to wait as long as connections last");
	return OPT_OK;
}

static enum opt_result set_verbose(struct options *o, struct listen_opts *l,
				   const char *arg, char *err, size_t errlen)
{
	o->verbose++;
	return OPT_OK;
}

static enum opt_result show_help(struct options *o, struct listen_opts *l,
				 const char *arg, char *err, size_t errlen)
{
	options_usage(stdout);
	return OPT_EXIT;
}

static enum opt_result show_version(struct options *o, struct listen_opts *l,
				    const char *arg, char *err, size_t errlen)
{
	printf("smbsplice %s\n", PACKAGE_VERSION);
	return OPT_EXIT;
}

#define P SCOPE_PROCESS
#define L SCOPE_LISTENER

static const struct opt_def opt_table[] = {
	{ "listen", 'l', "HOST:PORT",
	  "address to accept clients on ([::1]:445 for IPv6)", L, false,
	  set_listen, false },
	{ "backend", 'b', "HOST:PORT",
	  "SMB server to forward to; repeat for servers to try\n"
	  "in order when one refuses or times out",
	  L, true, add_backend, false },
	{ "mode", 'm', "smb|tcp", "smb: message-aware (default); tcp: opaque",
	  L, false, set_mode, false },
	{ "read-threshold", 0, "SIZE",
	  "smb mode: splice READ data from this size (default 1M)", L, false,
	  set_read_th, false },
	{ "write-threshold", 0, "SIZE",
	  "smb mode: splice WRITE data from this size (default 1M)", L, false,
	  set_write_th, false },
	{ "other-threshold", 0, "SIZE",
	  "smb mode: splice the rest of encrypted and other\n"
	  "large messages from this size (default off);\n"
	  "'off' never splices that class",
	  L, false, set_other_th, false },
	{ "no-splice", 0, NULL, "copy everything (baseline for comparisons)", L,
	  false, set_no_splice, false },
	{ "no-latency", 0, NULL,
	  "smb mode: do not time requests and frames (the\n"
	  "latency histograms stay empty)",
	  L, false, set_no_latency, false },
	{ "handshake-timeout", 0, "SEC",
	  "smb mode: time a client has to send its first\n"
	  "frame; the backend is dialled only then (default 30)",
	  L, false, set_handshake_tmo, false },
	{ "first-frame", 0, "negotiate|any",
	  "smb mode: dial the backend only for a first frame an\n"
	  "SMB server answers, a NEGOTIATE or on port 139 a\n"
	  "session request (default); any: on the first byte",
	  L, false, set_first_frame, false },
	{ "auth-timeout", 0, "SEC",
	  "smb mode: end a connection that has not completed a\n"
	  "session setup this long after accept (default 60); off",
	  L, false, set_auth_tmo, false },
	{ "connect-timeout", 0, "SEC",
	  "time each backend has to accept (default 5)", L, false,
	  set_connect_tmo, false },
	{ "idle-timeout", 0, "SEC",
	  "close connections that moved nothing this long\n"
	  "(default off; keepalive finds dead peers)",
	  L, false, set_idle_tmo, false },
	{ "keepalive", 0, "IDLE[:INTVL:CNT]",
	  "TCP keepalive and TCP_USER_TIMEOUT on both sockets\n"
	  "(default 60:10:6: a dead peer is found in 2 min); off",
	  L, false, set_keepalive, false },
	{ "listen-netns", 0, "NETNS",
	  "listen inside this network namespace (a path,\n"
	  "a name in /run/netns, or a PID)",
	  L, false, set_listen_netns, false },
	{ "backend-netns", 0, "NETNS",
	  "connect to the backend inside this network namespace", L, false,
	  set_backend_netns, false },
	{ "allow", 0, "CIDR",
	  "serve only clients in this network; repeat for more\n"
	  "(default: everyone)",
	  L, true, add_allow, false },
	{ "transparent", 0, NULL,
	  "connect to the backend from the client's own address\n"
	  "(IP_TRANSPARENT; needs CAP_NET_ADMIN and routing)",
	  L, false, set_transparent, false },
	{ "source", 0, "ADDR", "address backend connections come from", L,
	  false, set_source, false },
	{ "congestion", 0, "[SIDE:]ALG",
	  "TCP congestion control, on both sides or on one\n"
	  "(client:ALG, backend:ALG), e.g. bbr towards a WAN",
	  L, true, set_congestion, false },
	{ "mptcp", 0, "listen|backend|both|off",
	  "open that side with Multipath TCP (plain TCP peers\n"
	  "fall back)",
	  L, false, set_mptcp, false },
	{ "stats", 0, "HOST:PORT",
	  "serve Prometheus metrics at http://HOST:PORT/metrics", P, false,
	  set_stats, false },
	{ "stats-allow", 0, "CIDR",
	  "serve metrics only to clients in this network;\n"
	  "repeat for more (default: loopback only)",
	  P, true, add_stats_allow, false },
	{ "workers", 0, "N", "event loop threads (default: one per usable CPU)",
	  P, false, set_workers, false },
	{ "max-conns", 0, "N",
	  "reset clients beyond N open connections\n"
	  "(default: as many as the open-files limit allows)",
	  P, false, set_max_conns, false },
	{ "max-conns-per-source", 0, "N",
	  "reset a client address beyond N open connections\n"
	  "(default: no cap)",
	  P, false, set_max_per_source, false },
	{ "source-prefix6", 0, "BITS",
	  "count IPv6 clients per /BITS network for\n"
	  "--max-conns-per-source (default 64)",
	  P, false, set_source_prefix6, false },
	{ "max-preauth-per-source", 0, "N",
	  "smb mode: reset new clients of an address that has N\n"
	  "connections not yet past session setup (default 64); off",
	  P, false, set_max_preauth, false },
	{ "pipe-size", 0, "BYTES", "size of each splice pipe (default 1M)", P,
	  false, set_pipe_size, false },
	{ "max-pipes", 0, "N", "cap on open pipes, then copy (default 1024)", P,
	  false, set_max_pipes, false },
	{ "buffer-size", 0, "BYTES", "size of each copy buffer (default 64K)",
	  P, false, set_buf_size, false },
	{ "drain-timeout", 0, "SEC",
	  "on SIGTERM, let open connections run this long,\n"
	  "then reset them (default 60; 0 waits for ever)",
	  P, false, set_drain_tmo, false },
	{ "user", 0, "NAME",
	  "once every socket is open, run as this user, with\n"
	  "its group and no other privilege than needed",
	  P, false, set_user, false },
	{ "trace", 0, "FILE",
	  "write a headers-only capture of every client\n"
	  "connection to FILE (pcap, for tshark)",
	  P, false, set_trace, false },
	{ "trace-max", 0, "SIZE",
	  "rotate the trace past SIZE: FILE.1 ... FILE.9\n"
	  "(default 100M; off never)",
	  P, false, set_trace_max, false },
	{ "syslog", 0, NULL, "log to syslog instead of standard error", P,
	  false, set_syslog, false },
	{ "verbose", 'v', NULL, "log debug lines too", P, true, set_verbose,
	  false },
	{ "config", 'c', "FILE",
	  "read listeners and settings from FILE (see\n"
	  "smbsplice.conf(5)); options given too override [global]",
	  P, false, set_config, true },
	{ "check", 0, NULL,
	  "check the configuration, say what is wrong, and exit", P, false,
	  set_check, true },
	{ "help", 'h', NULL, "this text", P, false, show_help, true },
	{ "version", 'V', NULL, "print the version", P, false, show_version,
	  true },
};

#undef P
#undef L

#define OPT_COUNT (sizeof(opt_table) / sizeof(opt_table[0]))

/**
 * options_name() - the long name of an option, for walking them all
 * @i:		index, from 0 to options_count() - 1
 * @in_file:	set to whether it is also a config file key
 *
 * Return: the name, or NULL past the last option.
 */
const char *options_name(unsigned i, bool *in_file)
{
	if (i >= OPT_COUNT)
		return NULL;
	*in_file = !opt_table[i].cli_only;
	return opt_table[i].name;
}

/**
 * options_count() - how many options there are
 *
 * Return: the count; each has a bool slot in a @seen array.
 */
unsigned options_count(void)
{
	return OPT_COUNT;
}

/**
 * listen_opts_defaults() - fill a listener's settings with the defaults
 * @l:		settings to reset
 * @name:	its name
 */
void listen_opts_defaults(struct listen_opts *l, const char *name)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->mode = MODE_SMB;
	l->splice = true;
	l->latency = true;
	l->handshake_timeout = OPT_DEFAULT_HANDSHAKE_TMO;
	l->auth_timeout = OPT_DEFAULT_AUTH_TMO;
	l->connect_timeout = OPT_DEFAULT_CONNECT_TMO;
	l->idle_timeout = OPT_DEFAULT_IDLE_TMO;
	l->th.min[SMB_CLASS_READ] = OPT_DEFAULT_THRESHOLD;
	l->th.min[SMB_CLASS_WRITE] = OPT_DEFAULT_THRESHOLD;
	/* Splicing encrypted frames cost throughput in every bench run. */
	l->th.min[SMB_CLASS_OTHER] = SMB_THRESHOLD_OFF;
	l->keepalive =
		(struct keepalive){ OPT_DEFAULT_KA_IDLE, OPT_DEFAULT_KA_INTVL,
				    OPT_DEFAULT_KA_CNT };
}

/**
 * options_defaults() - fill @o with the documented defaults
 * @o:	options to reset
 */
void options_defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->pipe_size = OPT_DEFAULT_PIPE_SIZE;
	o->max_pipes = OPT_DEFAULT_MAX_PIPES;
	o->buf_size = OPT_DEFAULT_BUF_SIZE;
	o->drain_timeout = OPT_DEFAULT_DRAIN_TMO;
	o->max_preauth = OPT_DEFAULT_MAX_PREAUTH;
	o->trace_max = OPT_DEFAULT_TRACE_MAX;
	o->source_prefix6 = OPT_DEFAULT_PREFIX6;
}

/**
 * options_usage() - print the help text, from the option table
 * @f:	where to print it
 */
void options_usage(FILE *f)
{
	char head[64];
	const char *p, *nl;

	fprintf(f,
		"Usage: smbsplice --listen HOST:PORT --backend HOST:PORT [options]\n"
		"\n"
		"Forward TCP between SMB clients and an SMB server, splicing large\n"
		"payloads socket -> pipe -> socket and copying small messages.\n"
		"\n");
	for (unsigned i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &opt_table[i];

		snprintf(head, sizeof(head), "%c%c%c --%s%s%s",
			 d->shortc ? '-' : ' ', d->shortc ? d->shortc : ' ',
			 d->shortc ? ',' : ' ', d->name, d->metavar ? " " : "",
			 d->metavar ? d->metavar : "");
		fprintf(f, "  %-29s", head);
		if (strlen(head) > 29)
			fprintf(f, "\n  %-29s", "");
		for (p = d->help; (nl = strchr(p, '\n')); p = nl + 1)
			fprintf(f, "%.*s\n  %-29s", (int)(nl - p), p, "");
		fprintf(f, "%s\n", p);
	}
	fprintf(f,
		"\nSizes take K or M suffixes (binary). Logs go to standard error.\n");
}

/**
 * opt_find_short() - the table row of a short option
 * @c:	the letter
 *
 * Return: the row, or NULL.
 */
static const struct opt_def *opt_find_short(int c)
{
	for (unsigned i = 0; i < OPT_COUNT; i++)
		if (opt_table[i].shortc == c)
			return &opt_table[i];
	return NULL;
}

/**
 * check_listener() - what no single option of a listener can check
 * @l:		the listener
 * @inherited:	listening sockets were handed over (socket activation), so
 *		a listener without --listen may use them
 * @cli:	the listener comes from the command line, not a file
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result check_listener(const struct listen_opts *l,
				      bool inherited, bool cli, char *err,
				      size_t errlen)
{
	if ((!l->listen.len && !inherited) || !l->nbackends) {
		if (cli)
			snprintf(
				err, errlen,
				"--listen and --backend are both required%s; see smbsplice --help",
				inherited
					? " (--listen may be left out under socket activation)"
					: "");
		else
			snprintf(
				err, errlen,
				"listener %s: listen and backend are both required",
				l->name);
		return OPT_BAD;
	}
	for (unsigned i = 0; i < l->nbackends; i++) {
		int fam = l->backend[i].addr.ss_family;

		if (l->source.len && l->source.addr.ss_family != fam) {
			snprintf(
				err, errlen,
				"listener %s: source %s and backend %s are of different address families",
				l->name, l->source.text, l->backend[i].text);
			return OPT_BAD;
		}
		if (l->transparent && l->listen.len &&
		    l->listen.addr.ss_family != fam) {
			snprintf(
				err, errlen,
				"listener %s: transparent needs backend %s of the same address family as listen %s: the backend connection comes from the client's address",
				l->name, l->backend[i].text, l->listen.text);
			return OPT_BAD;
		}
	}
	if (l->transparent && l->source.len) {
		snprintf(
			err, errlen,
			"listener %s: transparent and source both choose where backend connections come from; give one",
			l->name);
		return OPT_BAD;
	}
	return OPT_OK;
}

/**
 * same_listen() - would two listeners listen on the same address
 * @a:	a listener
 * @b:	another
 *
 * Return: true if they name one address in one namespace.
 */
static bool same_listen(const struct listen_opts *a,
			const struct listen_opts *b)
{
	return a->listen.len && a->listen.len == b->listen.len &&
	       !memcmp(&a->listen.addr, &b->listen.addr, a->listen.len) &&
	       !strcmp(a->netns[SIDE_CLIENT], b->netns[SIDE_CLIENT]);
}

/**
 * config_check() - what no single option can check
 * @c:		the configuration
 * @inherited:	listening sockets were handed over (socket activation)
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
enum opt_result config_check(const struct config *c, bool inherited, char *err,
			     size_t errlen)
{
	if (!c->nls) {
		snprintf(
			err, errlen,
			"no listener: give --listen and --backend, or a config file with a listener section; see smbsplice --help");
		return OPT_BAD;
	}
	for (unsigned i = 0; i < c->nls; i++) {
		if (check_listener(&c->ls[i], inherited, !*c->o.config, err,
				   errlen))
			return OPT_BAD;
		for (unsigned j = 0; j < i; j++)
			if (same_listen(&c->ls[i], &c->ls[j])) {
				snprintf(
					err, errlen,
					"listeners %s and %s both listen on %s",
					c->ls[j].name, c->ls[i].name,
					c->ls[i].listen.text);
				return OPT_BAD;
			}
	}
	return OPT_OK;
}

/**
 * opt_find() - the table row of a long option
 * @name:	its name
 *
 * Return: the row, or NULL.
 */
static const struct opt_def *opt_find(const char *name)
{
	for (unsigned i = 0; i < OPT_COUNT; i++)
		if (!strcmp(opt_table[i].name, name))
			return &opt_table[i];
	return NULL;
}

/**
 * options_apply() - apply one config file key
 * @c:		the configuration
 * @l:		the listener of the section, or NULL for [global]
 * @key:	the key: a long option's name
 * @value:	its value; for a flag, "yes" or "no"
 * @seen:	one flag per option, for this section: set here, and a
 *		key that may not repeat is refused the second time
 * @err:	buffer for the complaint, which names the key
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
enum opt_result options_apply(struct config *c, struct listen_opts *l,
			      const char *key, const char *value, bool *seen,
			      char *err, size_t errlen)
{
	const struct opt_def *d = opt_find(key);
	char inner[256];

	if (!d || d->cli_only) {
		snprintf(err, errlen, "unknown key '%s'", key);
		return OPT_BAD;
	}
	if (d->scope == SCOPE_PROCESS && l) {
		snprintf(err, errlen, "%s belongs in [global]", key);
		return OPT_BAD;
	}
	if (d->scope == SCOPE_LISTENER && !l) {
		snprintf(err, errlen,
			 "%s belongs in a listener's section, not [global]",
			 key);
		return OPT_BAD;
	}
	if (seen[d - opt_table] && !d->repeat) {
		snprintf(err, errlen, "%s given twice; it takes one value",
			 key);
		return OPT_BAD;
	}
	seen[d - opt_table] = true;
	if (!d->metavar) {
		if (!strcmp(value, "no") || !strcmp(value, "false"))
			return OPT_OK;
		if (strcmp(value, "yes") && strcmp(value, "true") && *value) {
			snprintf(err, errlen, "%s '%s': expected yes or no",
				 key, value);
			return OPT_BAD;
		}
	}
	if (d->apply(&c->o, l, value, inner, sizeof(inner)) != OPT_OK) {
		/* The option's words say "--key"; a file says "key". */
		snprintf(err, errlen, "%s",
			 inner[0] == '-' && inner[1] == '-' ? inner + 2
							    : inner);
		return OPT_BAD;
	}
	return OPT_OK;
}

/**
 * struct file_state - where options_load() is in a config file
 * @l:		the current section's listener, NULL in [global]
 * @seen:	keys given in the current section
 */
struct file_state {
	struct listen_opts *l;
	bool seen[OPT_COUNT];
};

/**
 * file_section() - a section of the config file begins
 * @c:		the configuration being filled
 * @fs:		where the load is
 * @name:	the section's name
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * [global] holds the process-wide settings; every other section is one
 * listener, named by the section.
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result file_section(struct config *c, struct file_state *fs,
				    const char *name, char *err, size_t errlen)
{
	if (strlen(name) >= OPT_NAME_LEN || !*name) {
		snprintf(err, errlen,
			 "[%s]: a section name of 1 to %d characters, please",
			 name, OPT_NAME_LEN - 1);
		return OPT_BAD;
	}
	memset(fs->seen, 0, sizeof(fs->seen));
	if (!strcmp(name, "global")) {
		fs->l = NULL;
		return OPT_OK;
	}
	for (unsigned i = 0; i < c->nls; i++)
		if (!strcmp(c->ls[i].name, name)) {
			snprintf(
				err, errlen,
				"[%s] appears twice; each listener is one section",
				name);
			return OPT_BAD;
		}
	if (c->nls == CONFIG_MAX_LISTENERS) {
		snprintf(err, errlen, "[%s]: at most %u listeners", name,
			 CONFIG_MAX_LISTENERS);
		return OPT_BAD;
	}
	fs->l = &c->ls[c->nls++];
	listen_opts_defaults(fs->l, name);
	return OPT_OK;
}

/**
 * options_load() - apply a config file to @c
 * @c:		the configuration; its process-wide settings start from the
 *		defaults and its listeners come from the file alone
 * @path:	the file
 * @err:	buffer for the one-line complaint, with FILE:LINE
 * @errlen:	its size
 *
 * config_read() says what the file says; each entry is applied here in
 * order, and the first that fails stops the load. A line the read stopped
 * at comes after every entry read, so the complaint is about whichever
 * came first in the file. Nothing is half applied: the caller gets a whole
 * configuration or an error.
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result options_load(struct config *c, const char *path,
				    char *err, size_t errlen)
{
	struct file_state fs = { 0 };
	struct config_text t;
	enum opt_result r = OPT_OK;
	char why[400];
	int stop;

	options_defaults(&c->o);
	c->nls = 0;
	stop = config_read(path, &t, err, errlen);
	for (unsigned i = 0; stop >= 0 && r == OPT_OK && i < t.n; i++) {
		const struct config_entry *e = &t.e[i];

		*why = '\0';
		r = e->key ? options_apply(c, fs.l, e->key, e->value, fs.seen,
					   why, sizeof(why))
			   : file_section(c, &fs, e->section, why, sizeof(why));
		if (r != OPT_OK)
			snprintf(err, errlen, "%s:%d: %s", path, e->line, why);
	}
	config_text_free(&t);
	if (stop || r != OPT_OK)
		return OPT_BAD;
	/* The file names itself, so that a reload reads it again. */
	snprintf(c->o.config, sizeof(c->o.config), "%s", path);
	return OPT_OK;
}

/**
 * options_parse() - parse argv, and the config file it names, into @c
 * @c:		filled with defaults, then the file, then the options given
 * @argc:	argument count
 * @argv:	arguments
 * @inherited:	listening sockets were handed over (socket activation)
 * @err:	buffer for the one-line complaint, on OPT_BAD
 * @errlen:	its size
 *
 * Without --config, the command line describes one listener, "main".
 * With it, listeners come from the file alone, and the command line's
 * process-wide options override the file's [global].
 *
 * Return: OPT_OK, OPT_EXIT or OPT_BAD.
 */
enum opt_result options_parse(struct config *c, int argc, char **argv,
			      bool inherited, char *err, size_t errlen)
{
	struct option longs[OPT_COUNT + 1];
	char shorts[3 * OPT_COUNT + 2] = ":", *sp = shorts + 1;
	bool seen[OPT_COUNT] = { false }, lopt = false;
	struct {
		const struct opt_def *d;
		const char *arg;
	} given[64];
	unsigned ngiven = 0;
	struct options cli;
	struct listen_opts *l = &c->ls[0];
	const struct opt_def *d;
	enum opt_result r;
	int ci, idx;

	memset(c, 0, sizeof(*c));
	options_defaults(&cli);
	listen_opts_defaults(l, "main");
	memset(longs, 0, sizeof(longs));
	for (unsigned i = 0; i < OPT_COUNT; i++) {
		d = &opt_table[i];
		longs[i] = (struct option){ d->name,
					    d->metavar ? required_argument
						       : no_argument,
					    NULL, 0 };
		if (d->shortc) {
			*sp++ = (char)d->shortc;
			if (d->metavar)
				*sp++ = ':';
		}
	}
	optind = 1;
	opterr = 0;
	while ((ci = getopt_long(argc, argv, shorts, longs, &idx)) != -1) {
		if (ci == ':' || ci == '?') {
			snprintf(err, errlen, "%s '%s'; see smbsplice --help",
				 ci == ':' ? "missing value for option"
					   : "unknown option",
				 argv[optind - 1]);
			return OPT_BAD;
		}
		d = ci ? opt_find_short(ci) : &opt_table[idx];
		if (seen[d - opt_table] && !d->repeat) {
			snprintf(err, errlen,
				 "--%s given twice; it takes one value",
				 d->name);
			return OPT_BAD;
		}
		seen[d - opt_table] = true;
		lopt |= d->scope == SCOPE_LISTENER;
		if (d->scope == SCOPE_PROCESS && ngiven < 64)
			given[ngiven++] = (typeof(given[0])){ d, optarg };
		r = d->apply(&cli, l, optarg, err, errlen);
		if (r != OPT_OK)
			return r;
	}
	if (optind < argc) {
		snprintf(err, errlen,
			 "unexpected argument '%s'; see smbsplice --help",
			 argv[optind]);
		return OPT_BAD;
	}
	/* --check cannot know whether systemd will pass sockets: a listener
	 * with no address is let through, and check_config() says so. */
	inherited |= cli.check;
	if (!*cli.config) {
		c->o = cli;
		c->nls = 1;
		return config_check(c, inherited, err, errlen);
	}
	if (lopt) {
		snprintf(
			err, errlen,
			"with --config, listeners are described in the file: give --listen, --backend and the like in a section of %s",
			cli.config);
		return OPT_BAD;
	}
	r = options_load(c, cli.config, err, errlen);
	if (r != OPT_OK)
		return r;
	/* The command line's process-wide options, once more, over the
	 * file's [global]; a list given there replaces the file's. */
	for (unsigned i = 0; i < ngiven; i++)
		if (given[i].d->apply == add_stats_allow)
			c->o.nstats_allow = 0;
	for (unsigned i = 0; i < ngiven; i++)
		given[i].d->apply(&c->o, NULL, given[i].arg, err, errlen);
	return config_check(c, inherited, err, errlen);
}

/**
 * options_restart_only() - the process-wide settings a reload cannot change
 * @was:	the settings the process started with (or last read)
 * @now:	the ones just read
 * @out:	buffer for their names, comma separated; empty if none changed
 * @len:	its size
 *
 * These size pools, threads and sockets made once at start; verbose and
 * drain-timeout are not among them, since a reload applies those.
 */
void options_restart_only(const struct options *was, const struct options *now,
			  char *out, size_t len)
{
	const struct {
		const char *name;
		bool changed;
	} keys[] = {
		{ "pipe-size", was->pipe_size != now->pipe_size },
		{ "max-pipes", was->max_pipes != now->max_pipes },
		{ "buffer-size", was->buf_size != now->buf_size },
		{ "stats", was->stats.len != now->stats.len ||
				   memcmp(&was->stats.addr, &now->stats.addr,
					  now->stats.len) },
		{ "workers", was->workers != now->workers },
		{ "max-conns", was->max_conns != now->max_conns },
		{ "max-conns-per-source",
		  was->max_per_source != now->max_per_source },
		{ "source-prefix6",
		  was->source_prefix6 != now->source_prefix6 },
		{ "stats-allow",
		  was->nstats_allow != now->nstats_allow ||
			  memcmp(was->stats_allow, now->stats_allow,
				 now->nstats_allow *
					 sizeof(now->stats_allow[0])) },
		{ "max-preauth-per-source",
		  was->max_preauth != now->max_preauth },
		{ "user", strcmp(was->user, now->user) != 0 },
		{ "syslog", was->syslog != now->syslog },
		{ "trace", strcmp(was->trace, now->trace) != 0 },
		{ "trace-max", was->trace_max != now->trace_max },
	};
	size_t n = 0;

	*out = '\0';
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int w;

		if (!keys[i].changed || n >= len)
			continue;
		w = snprintf(out + n, len - n, "%s%s", n ? ", " : "",
			     keys[i].name);
		if (w > 0)
			n += (size_t)w;
	}
}
