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
 */
struct opt_def {
	const char *name;
	int shortc;
	const char *metavar;
	const char *help;
	enum scope scope;
	bool repeat;
	apply_fn apply;
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

static enum opt_result add_allow(struct options *o, struct listen_opts *l,
				 const char *arg, char *err, size_t errlen)
{
	if (l->nallow == OPT_MAX_ALLOW)
		return bad(err, errlen, "allow", arg,
			   "at most 64 networks per listener");
	if (parse_cidr(arg, &l->allow[l->nallow]))
		return bad(
			err, errlen, "allow", arg,
			"expected a network such as 192.0.2.0/24, 2001:db8::/32 or an address");
	l->nallow++;
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
	  set_listen },
	{ "backend", 'b', "HOST:PORT",
	  "SMB server to forward to; repeat for servers to try\n"
	  "in order when one refuses or times out",
	  L, true, add_backend },
	{ "mode", 'm', "smb|tcp", "smb: message-aware (default); tcp: opaque",
	  L, false, set_mode },
	{ "read-threshold", 0, "SIZE",
	  "smb mode: splice READ data from this size (default 1M)", L, false,
	  set_read_th },
	{ "write-threshold", 0, "SIZE",
	  "smb mode: splice WRITE data from this size (default 1M)", L, false,
	  set_write_th },
	{ "other-threshold", 0, "SIZE",
	  "smb mode: splice the rest of encrypted and other\n"
	  "large messages from this size (default off);\n"
	  "'off' never splices that class",
	  L, false, set_other_th },
	{ "no-splice", 0, NULL, "copy everything (baseline for comparisons)", L,
	  false, set_no_splice },
	{ "handshake-timeout", 0, "SEC",
	  "smb mode: time a client has to send its first\n"
	  "byte; the backend is dialled only then (default 30)",
	  L, false, set_handshake_tmo },
	{ "connect-timeout", 0, "SEC",
	  "time each backend has to accept (default 5)", L, false,
	  set_connect_tmo },
	{ "idle-timeout", 0, "SEC",
	  "close connections that moved nothing this long\n"
	  "(default off; keepalive finds dead peers)",
	  L, false, set_idle_tmo },
	{ "keepalive", 0, "IDLE[:INTVL:CNT]",
	  "TCP keepalive and TCP_USER_TIMEOUT on both sockets\n"
	  "(default 60:10:6: a dead peer is found in 2 min); off",
	  L, false, set_keepalive },
	{ "listen-netns", 0, "NETNS",
	  "listen inside this network namespace (a path,\n"
	  "a name in /run/netns, or a PID)",
	  L, false, set_listen_netns },
	{ "backend-netns", 0, "NETNS",
	  "connect to the backend inside this network namespace", L, false,
	  set_backend_netns },
	{ "allow", 0, "CIDR",
	  "serve only clients in this network; repeat for more\n"
	  "(default: everyone)",
	  L, true, add_allow },
	{ "transparent", 0, NULL,
	  "connect to the backend from the client's own address\n"
	  "(IP_TRANSPARENT; needs CAP_NET_ADMIN and routing)",
	  L, false, set_transparent },
	{ "source", 0, "ADDR", "address backend connections come from", L,
	  false, set_source },
	{ "congestion", 0, "[SIDE:]ALG",
	  "TCP congestion control, on both sides or on one\n"
	  "(client:ALG, backend:ALG), e.g. bbr towards a WAN",
	  L, true, set_congestion },
	{ "mptcp", 0, "listen|backend|both",
	  "open that side with Multipath TCP (plain TCP peers\n"
	  "fall back)",
	  L, false, set_mptcp },
	{ "stats", 0, "HOST:PORT",
	  "serve Prometheus metrics at http://HOST:PORT/metrics", P, false,
	  set_stats },
	{ "workers", 0, "N", "event loop threads (default: one per usable CPU)",
	  P, false, set_workers },
	{ "max-conns", 0, "N",
	  "reset clients beyond N open connections\n"
	  "(default: as many as the open-files limit allows)",
	  P, false, set_max_conns },
	{ "max-conns-per-source", 0, "N",
	  "reset a client address beyond N open connections\n"
	  "(default: no cap)",
	  P, false, set_max_per_source },
	{ "pipe-size", 0, "BYTES", "size of each splice pipe (default 1M)", P,
	  false, set_pipe_size },
	{ "max-pipes", 0, "N", "cap on open pipes, then copy (default 1024)", P,
	  false, set_max_pipes },
	{ "buffer-size", 0, "BYTES", "size of each copy buffer (default 64K)",
	  P, false, set_buf_size },
	{ "verbose", 'v', NULL, "more log lines; repeat for more", P, true,
	  set_verbose },
	{ "help", 'h', NULL, "this text", P, false, show_help },
	{ "version", 'V', NULL, "print the version", P, false, show_version },
};

#undef P
#undef L

#define OPT_COUNT (sizeof(opt_table) / sizeof(opt_table[0]))

/**
 * options_name() - the long name of an option, for walking them all
 * @i:	index, from 0
 *
 * Return: the name, or NULL past the last option.
 */
const char *options_name(unsigned i)
{
	return i < OPT_COUNT ? opt_table[i].name : NULL;
}

/**
 * listen_opts_defaults() - fill a listener's settings with the defaults
 * @l:	settings to reset
 */
void listen_opts_defaults(struct listen_opts *l)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "main");
	l->mode = MODE_SMB;
	l->splice = true;
	l->handshake_timeout = OPT_DEFAULT_HANDSHAKE_TMO;
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
	listen_opts_defaults(&o->l);
	o->pipe_size = OPT_DEFAULT_PIPE_SIZE;
	o->max_pipes = OPT_DEFAULT_MAX_PIPES;
	o->buf_size = OPT_DEFAULT_BUF_SIZE;
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
 * options_check() - what no single option can check
 * @o:		the parsed options
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result options_check(const struct options *o, char *err,
				     size_t errlen)
{
	const struct listen_opts *l = &o->l;

	if (!l->listen.len || !l->nbackends) {
		snprintf(
			err, errlen,
			"--listen and --backend are both required; see smbsplice --help");
		return OPT_BAD;
	}
	for (unsigned i = 0; i < l->nbackends; i++) {
		int fam = l->backend[i].addr.ss_family;

		if (l->source.len && l->source.addr.ss_family != fam) {
			snprintf(
				err, errlen,
				"--source %s and --backend %s are of different address families",
				l->source.text, l->backend[i].text);
			return OPT_BAD;
		}
		if (l->transparent && l->listen.addr.ss_family != fam) {
			snprintf(
				err, errlen,
				"--transparent needs --backend %s of the same address family as --listen %s: the backend connection comes from the client's address",
				l->backend[i].text, l->listen.text);
			return OPT_BAD;
		}
	}
	if (l->transparent && l->source.len) {
		snprintf(
			err, errlen,
			"--transparent and --source both choose where backend connections come from; give one");
		return OPT_BAD;
	}
	return OPT_OK;
}

/**
 * options_parse() - parse argv into @o
 * @o:		filled with defaults, then the options given
 * @argc:	argument count
 * @argv:	arguments
 * @err:	buffer for the one-line complaint, on OPT_BAD
 * @errlen:	its size
 *
 * Return: OPT_OK, OPT_EXIT or OPT_BAD.
 */
enum opt_result options_parse(struct options *o, int argc, char **argv,
			      char *err, size_t errlen)
{
	struct option longs[OPT_COUNT + 1];
	char shorts[3 * OPT_COUNT + 2] = ":", *sp = shorts + 1;
	bool seen[OPT_COUNT] = { false };
	const struct opt_def *d;
	enum opt_result r;
	int c, idx;

	options_defaults(o);
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
	while ((c = getopt_long(argc, argv, shorts, longs, &idx)) != -1) {
		if (c == ':' || c == '?') {
			snprintf(err, errlen, "%s '%s'; see smbsplice --help",
				 c == ':' ? "missing value for option"
					  : "unknown option",
				 argv[optind - 1]);
			return OPT_BAD;
		}
		d = c ? opt_find_short(c) : &opt_table[idx];
		if (seen[d - opt_table] && !d->repeat) {
			snprintf(err, errlen,
				 "--%s given twice; it takes one value",
				 d->name);
			return OPT_BAD;
		}
		seen[d - opt_table] = true;
		r = d->apply(o, &o->l, optarg, err, errlen);
		if (r != OPT_OK)
			return r;
	}
	if (optind < argc) {
		snprintf(err, errlen,
			 "unexpected argument '%s'; see smbsplice --help",
			 argv[optind]);
		return OPT_BAD;
	}
	return options_check(o, err, errlen);
}
