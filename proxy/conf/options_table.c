// SPDX-License-Identifier: GPL-2.0-or-later
/* options_table.c - the options: one table
 *
 * Theory of operation: every option is one row of opt_table, its fields
 * named: its long name (which is also its key in a config file), its
 * short letter if any, what it applies to (the process, or a listener),
 * whether it may repeat, whether a reload can change it, the limits of
 * its value, its help text and the function that applies a value. The
 * command line, the config file, --help, a reload's "takes a restart"
 * line and the man pages' consistency test all read the same table, so
 * they cannot drift apart; a limit is written once, as a constant in
 * options.h used in its row, and the complaints that state it are
 * formatted from the row.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "conf/options_table.h"

#define P SCOPE_PROCESS
#define L SCOPE_LISTENER
/* The setting a row sets, in struct options or struct listen_opts. */
#define PFIELD(m)                                                              \
	.field = offsetof(struct options, m),                                  \
	.size = sizeof(((struct options *)0)->m)
#define LFIELD(m)                                                              \
	.field = offsetof(struct listen_opts, m),                              \
	.size = sizeof(((struct listen_opts *)0)->m)

const struct opt_def opt_table[] = {
	{ .name = "listen",
	  .shortc = 'l',
	  .metavar = "HOST:PORT",
	  .scope = L,
	  .help = "address to accept clients on ([::1]:445 for IPv6);\n"
		  "quic:HOST:PORT for SMB over QUIC (UDP, with --quic-cert)",
	  .apply = opt_set_listen,
	  LFIELD(listen) },
	{ .name = "quic-cert",
	  .metavar = "FILE",
	  .scope = L,
	  .help = "QUIC listener: the server certificate chain (PEM)",
	  .apply = opt_set_text,
	  LFIELD(quic_cert) },
	{ .name = "quic-key",
	  .metavar = "FILE",
	  .scope = L,
	  .help = "QUIC listener: the certificate's private key (PEM)",
	  .apply = opt_set_text,
	  LFIELD(quic_key) },
	{ .name = "quic-retry",
	  .metavar = "auto|always|off",
	  .scope = L,
	  .help = "QUIC listener: a Retry (the client proves its address\n"
		  "before any state is kept) for every new connection,\n"
		  "never, or auto: above 200 new connections a second\n"
		  "or 64 handshakes under way from unproved addresses in\n"
		  "a worker (default)",
	  .apply = opt_set_quic_retry },
	{ .name = "quic-client-ca",
	  .metavar = "FILE",
	  .scope = L,
	  .help = "QUIC listener: require a client certificate chained to\n"
		  "these CAs (PEM) with the Client Authentication EKU,\n"
		  "and allowed by --quic-client-allow",
	  .apply = opt_set_text,
	  LFIELD(quic_client_ca) },
	{ .name = "quic-client-allow",
	  .metavar = "SHA256|issuer:DN",
	  .scope = L,
	  .help = "QUIC listener: a client certificate allowed, by its\n"
		  "SHA-256 or its issuer; repeat for more",
	  .repeat = true,
	  .max = OPT_MAX_QUIC_RULES,
	  .apply = opt_add_quic_allow },
	{ .name = "quic-client-deny",
	  .metavar = "SHA256|issuer:DN",
	  .scope = L,
	  .help = "QUIC listener: a client certificate refused (TLS alert\n"
		  "49), even if allowed; repeat for more",
	  .repeat = true,
	  .max = OPT_MAX_QUIC_RULES,
	  .apply = opt_add_quic_deny },
	{ .name = "backend",
	  .shortc = 'b',
	  .metavar = "HOST:PORT",
	  .scope = L,
	  .help = "SMB server to forward to; repeat for servers to try\n"
		  "in order when one refuses or times out;\n"
		  "quic:HOST:PORT for an SMB over QUIC server",
	  .repeat = true,
	  .max = OPT_MAX_BACKENDS,
	  .apply = opt_add_backend },
	{ .name = "quic-name",
	  .metavar = "NAME",
	  .scope = L,
	  .help = "QUIC backend: the server's name, sent as SNI and\n"
		  "checked in its certificate (default: the backend's HOST)",
	  .apply = opt_set_text,
	  LFIELD(quic_name) },
	{ .name = "quic-ca",
	  .metavar = "FILE",
	  .scope = L,
	  .help = "QUIC backend: the CAs that sign the server's certificate\n"
		  "(PEM; default: the system's trust store)",
	  .apply = opt_set_text,
	  LFIELD(quic_ca) },
	{ .name = "quic-pin",
	  .metavar = "SHA256",
	  .scope = L,
	  .help = "QUIC backend: accept only the server certificate of\n"
		  "this SHA-256 (hex), instead of a CA",
	  .apply = opt_set_text,
	  LFIELD(quic_pin) },
	{ .name = "quic-client-cert",
	  .metavar = "FILE",
	  .scope = L,
	  .help = "QUIC backend: a client certificate to show (PEM)",
	  .apply = opt_set_text,
	  LFIELD(quic_client_cert) },
	{ .name = "quic-client-key",
	  .metavar = "FILE",
	  .scope = L,
	  .help = "QUIC backend: the client certificate's private key (PEM)",
	  .apply = opt_set_text,
	  LFIELD(quic_client_key) },
	{ .name = "mode",
	  .shortc = 'm',
	  .metavar = "smb|tcp",
	  .scope = L,
	  .help = "smb: message-aware (default); tcp: opaque",
	  .apply = opt_set_mode },
	{ .name = "read-threshold",
	  .metavar = "SIZE",
	  .scope = L,
	  .help = "smb mode: splice READ data from this size (default 1M)",
	  .max = PARSE_MAX_THRESHOLD,
	  .apply = opt_set_threshold,
	  LFIELD(th.min[SMB_CLASS_READ]) },
	{ .name = "write-threshold",
	  .metavar = "SIZE",
	  .scope = L,
	  .help = "smb mode: splice WRITE data from this size (default 1M)",
	  .max = PARSE_MAX_THRESHOLD,
	  .apply = opt_set_threshold,
	  LFIELD(th.min[SMB_CLASS_WRITE]) },
	{ .name = "other-threshold",
	  .metavar = "SIZE",
	  .scope = L,
	  .help = "smb mode: splice the rest of encrypted and other\n"
		  "large messages from this size (default off);\n"
		  "'off' never splices that class",
	  .max = PARSE_MAX_THRESHOLD,
	  .apply = opt_set_threshold,
	  LFIELD(th.min[SMB_CLASS_OTHER]) },
	{ .name = "no-splice",
	  .scope = L,
	  .help = "copy everything (baseline for comparisons)",
	  .apply = opt_set_false,
	  LFIELD(splice) },
	{ .name = "no-latency",
	  .scope = L,
	  .help = "smb mode: do not time requests and frames (the\n"
		  "latency histograms stay empty)",
	  .apply = opt_set_false,
	  LFIELD(latency) },
	{ .name = "handshake-timeout",
	  .metavar = "SEC",
	  .scope = L,
	  .help = "smb mode: time a client has to send its first\n"
		  "frame; the backend is dialled only then (default 30)",
	  .positive = true,
	  .hint = ", e.g. 30",
	  .apply = opt_set_seconds,
	  LFIELD(handshake_timeout) },
	{ .name = "first-frame",
	  .metavar = "negotiate|any",
	  .scope = L,
	  .help = "smb mode: dial the backend only for a first frame an\n"
		  "SMB server answers, a NEGOTIATE or on port 139 a\n"
		  "session request (default); any: on the first byte",
	  .apply = opt_set_first_frame },
	{ .name = "auth-timeout",
	  .metavar = "SEC",
	  .scope = L,
	  .help = "smb mode: end a connection that has not completed a\n"
		  "session setup this long after accept (default 60); off",
	  .positive = true,
	  .off = true,
	  .hint = ", e.g. 60",
	  .apply = opt_set_seconds,
	  LFIELD(auth_timeout) },
	{ .name = "connect-timeout",
	  .metavar = "SEC",
	  .scope = L,
	  .help = "time each backend has to accept (default 5)",
	  .positive = true,
	  .hint = ", e.g. 5 or 0.5",
	  .apply = opt_set_seconds,
	  LFIELD(connect_timeout) },
	{ .name = "health-check",
	  .metavar = "off|tcp|smb",
	  .scope = L,
	  .help = "probe each backend: tcp, a connect; smb, a connect\n"
		  "and an SMB2 NEGOTIATE answered (default off)",
	  .apply = opt_set_check },
	{ .name = "health-interval",
	  .metavar = "SEC",
	  .scope = L,
	  .help = "time between two probes of a backend (default 5)",
	  .positive = true,
	  .hint = ", e.g. 5 or 0.5",
	  .apply = opt_set_seconds,
	  LFIELD(check_interval) },
	{ .name = "health-rise",
	  .metavar = "N",
	  .scope = L,
	  .help = "probes in a row that must pass to call a backend up\n"
		  "(default 2)",
	  .min = 1,
	  .max = OPT_MAX_CHECK_COUNT,
	  .apply = opt_set_count,
	  LFIELD(check_rise) },
	{ .name = "health-fall",
	  .metavar = "N",
	  .scope = L,
	  .help = "probes in a row that must fail to call a backend down\n"
		  "(default 3)",
	  .min = 1,
	  .max = OPT_MAX_CHECK_COUNT,
	  .apply = opt_set_count,
	  LFIELD(check_fall) },
	{ .name = "idle-timeout",
	  .metavar = "SEC",
	  .scope = L,
	  .help = "close connections that moved nothing this long\n"
		  "(default off; keepalive finds dead peers)",
	  .off = true,
	  .apply = opt_set_seconds,
	  LFIELD(idle_timeout) },
	{ .name = "keepalive",
	  .metavar = "IDLE[:INTVL:CNT]",
	  .scope = L,
	  .help = "TCP keepalive and TCP_USER_TIMEOUT on both sockets\n"
		  "(default 60:10:6: a dead peer is found in 2 min); off",
	  .apply = opt_set_keepalive },
	{ .name = "listen-netns",
	  .metavar = "NETNS",
	  .scope = L,
	  .help = "listen inside this network namespace (a path,\n"
		  "a name in /run/netns, or a PID)",
	  .apply = opt_set_netns,
	  LFIELD(netns[SIDE_CLIENT]) },
	{ .name = "backend-netns",
	  .metavar = "NETNS",
	  .scope = L,
	  .help = "connect to the backend inside this network namespace",
	  .apply = opt_set_netns,
	  LFIELD(netns[SIDE_BACKEND]) },
	{ .name = "foreign-netns",
	  .scope = L,
	  .help = "take namespaces owned by another user namespace\n"
		  "(a rootless container's; default: refused)",
	  .apply = opt_set_true,
	  LFIELD(foreign_netns) },
	{ .name = "allow",
	  .metavar = "CIDR",
	  .scope = L,
	  .help = "serve only clients in this network; repeat for more\n"
		  "(default: everyone)",
	  .repeat = true,
	  .max = OPT_MAX_ALLOW,
	  .apply = opt_add_allow },
	{ .name = "transparent",
	  .scope = L,
	  .help = "connect to the backend from the client's own address\n"
		  "(IP_TRANSPARENT; needs CAP_NET_ADMIN and routing)",
	  .apply = opt_set_true,
	  LFIELD(transparent) },
	{ .name = "send-proxy",
	  .scope = L,
	  .help = "open each backend connection with a PROXY protocol\n"
		  "v2 header: the client's address and the listener's",
	  .apply = opt_set_true,
	  LFIELD(send_proxy) },
	{ .name = "accept-proxy",
	  .scope = L,
	  .help = "expect a PROXY protocol v2 header first (needs\n"
		  "--proxy-from); --allow, caps, logs and --transparent\n"
		  "then see the client it names",
	  .apply = opt_set_true,
	  LFIELD(accept_proxy) },
	{ .name = "proxy-from",
	  .metavar = "CIDR",
	  .scope = L,
	  .help = "with --accept-proxy: take headers only from peers in\n"
		  "this network; repeat for more (others are reset)",
	  .repeat = true,
	  .max = OPT_MAX_ALLOW,
	  .apply = opt_add_proxy_from },
	{ .name = "source",
	  .metavar = "ADDR",
	  .scope = L,
	  .help = "address backend connections come from",
	  .apply = opt_set_source },
	{ .name = "congestion",
	  .metavar = "[SIDE:]ALG",
	  .scope = L,
	  .help = "TCP congestion control, on both sides or on one\n"
		  "(client:ALG, backend:ALG), e.g. bbr towards a WAN;\n"
		  "a QUIC backend takes reno, cubic, bbr or bbr2",
	  .repeat = true,
	  .apply = opt_set_congestion },
	{ .name = "socket-buffer",
	  .metavar = "[SIDE:]auto|kernel|SIZE",
	  .scope = L,
	  .help = "SO_SNDBUF and SO_RCVBUF, on both sides or on one\n"
		  "(client:, backend:): auto holds a socket whose RTT\n"
		  "is under 200 us at 256K and leaves longer paths to\n"
		  "the kernel's autotuning; kernel leaves every socket\n"
		  "to it; SIZE fixes both, for a path whose\n"
		  "bandwidth-delay product exceeds tcp_rmem/tcp_wmem max\n"
		  "(default auto)",
	  .repeat = true,
	  .min = OPT_MIN_SOCKBUF,
	  .max = OPT_MAX_SOCKBUF,
	  .apply = opt_set_sockbuf },
	{ .name = "mptcp",
	  .metavar = "listen|backend|both|off",
	  .scope = L,
	  .help = "open that side with Multipath TCP (plain TCP peers\n"
		  "fall back)",
	  .apply = opt_set_mptcp },
	{ .name = "stats",
	  .metavar = "HOST:PORT",
	  .scope = P,
	  .help = "serve Prometheus metrics at http://HOST:PORT/metrics",
	  .restart_only = true,
	  .apply = opt_set_endpoint,
	  PFIELD(stats),
	  .same = opt_same_stats },
	{ .name = "stats-allow",
	  .metavar = "CIDR",
	  .scope = P,
	  .help = "serve metrics only to clients in this network;\n"
		  "repeat for more (default: loopback only)",
	  .repeat = true,
	  .restart_only = true,
	  .max = OPT_MAX_ALLOW,
	  .apply = opt_add_stats_allow,
	  .same = opt_same_stats_allow },
	{ .name = "workers",
	  .metavar = "N",
	  .scope = P,
	  .help = "event loop threads (default: one per two usable CPUs)",
	  .restart_only = true,
	  .min = 1,
	  .max = OPT_MAX_WORKERS,
	  .apply = opt_set_count,
	  PFIELD(workers) },
	{ .name = "max-conns",
	  .metavar = "N",
	  .scope = P,
	  .help = "reset clients beyond N open connections\n"
		  "(default: as many as the open-files limit allows)",
	  .restart_only = true,
	  .min = 1,
	  .max = OPT_MAX_CONNS,
	  .apply = opt_set_count,
	  PFIELD(max_conns) },
	{ .name = "max-conns-per-source",
	  .metavar = "N",
	  .scope = P,
	  .help = "reset a client address beyond N open connections\n"
		  "(default: no cap)",
	  .restart_only = true,
	  .min = 1,
	  .max = OPT_MAX_CONNS,
	  .apply = opt_set_count,
	  PFIELD(max_per_source) },
	{ .name = "source-prefix6",
	  .metavar = "BITS",
	  .scope = P,
	  .help = "count IPv6 clients per /BITS network for\n"
		  "--max-conns-per-source (default 64)",
	  .restart_only = true,
	  .min = 1,
	  .max = 128,
	  .apply = opt_set_source_prefix6,
	  PFIELD(source_prefix6) },
	{ .name = "max-preauth-per-source",
	  .metavar = "N",
	  .scope = P,
	  .help = "smb mode: reset new clients of an address that has N\n"
		  "connections not yet past session setup (default 64); off",
	  .restart_only = true,
	  .min = 1,
	  .max = OPT_MAX_CONNS,
	  .off = true,
	  .apply = opt_set_count,
	  PFIELD(max_preauth) },
	{ .name = "pipe-size",
	  .metavar = "BYTES",
	  .scope = P,
	  .help = "size of each splice pipe (default 1M)",
	  .restart_only = true,
	  .min = OPT_MIN_PIPE_SIZE,
	  .max = OPT_MAX_PIPE_SIZE,
	  .hint = ", e.g. 8K or 1M",
	  .apply = opt_set_size,
	  PFIELD(pipe_size) },
	{ .name = "max-pipes",
	  .metavar = "N",
	  .scope = P,
	  .help = "cap on open pipes, then copy (default 1024)",
	  .restart_only = true,
	  .min = 1,
	  .max = OPT_MAX_PIPES,
	  .apply = opt_set_count,
	  PFIELD(max_pipes) },
	{ .name = "buffer-size",
	  .metavar = "BYTES",
	  .scope = P,
	  .help = "size of each copy buffer (default 64K)",
	  .restart_only = true,
	  .min = OPT_MIN_BUF_SIZE,
	  .max = OPT_MAX_BUF_SIZE,
	  .apply = opt_set_size,
	  PFIELD(buf_size) },
	{ .name = "drain-timeout",
	  .metavar = "SEC",
	  .scope = P,
	  .help = "on SIGTERM, let open connections run this long,\n"
		  "then reset them (default 60; 0 waits for ever)",
	  .hint = ", 0 to wait as long as connections last",
	  .apply = opt_set_seconds,
	  PFIELD(drain_timeout) },
	{ .name = "user",
	  .metavar = "NAME",
	  .scope = P,
	  .help = "once every socket is open, run as this user, with\n"
		  "its group and no other privilege than needed",
	  .restart_only = true,
	  .apply = opt_set_user,
	  .same = opt_same_user },
	{ .name = "trace",
	  .metavar = "FILE",
	  .scope = P,
	  .help = "write a headers-only capture of every client\n"
		  "connection to FILE (pcap, for tshark)",
	  .restart_only = true,
	  .apply = opt_set_trace,
	  .same = opt_same_trace },
	{ .name = "control",
	  .metavar = "PATH",
	  .scope = P,
	  .help = "serve runtime commands (smbsplice ctl) on a Unix\n"
		  "socket at PATH, mode 0600",
	  .restart_only = true,
	  .apply = opt_set_text,
	  PFIELD(control) },
	{ .name = "control-group",
	  .metavar = "NAME",
	  .scope = P,
	  .help = "open the control socket to group NAME too (mode\n"
		  "0660)",
	  .restart_only = true,
	  .apply = opt_set_text,
	  PFIELD(control_group) },
	{ .name = "control-ro",
	  .metavar = "PATH",
	  .scope = P,
	  .help = "serve the commands that only look (conns, info, ...)\n"
		  "on a second, read-only Unix socket at PATH, mode 0600",
	  .restart_only = true,
	  .apply = opt_set_text,
	  PFIELD(control_ro) },
	{ .name = "control-ro-group",
	  .metavar = "NAME",
	  .scope = P,
	  .help = "open the read-only control socket to group NAME\n"
		  "too (mode 0660)",
	  .restart_only = true,
	  .apply = opt_set_text,
	  PFIELD(control_ro_group) },
	{ .name = "trace-max",
	  .metavar = "SIZE",
	  .scope = P,
	  .help = "rotate the trace past SIZE: FILE.1 ... FILE.9\n"
		  "(default 100M; off never)",
	  .restart_only = true,
	  .min = OPT_MIN_TRACE_MAX,
	  .off = true,
	  .apply = opt_set_trace_max,
	  PFIELD(trace_max) },
	{ .name = "syslog",
	  .scope = P,
	  .help = "log to syslog instead of standard error",
	  .restart_only = true,
	  .apply = opt_set_true,
	  PFIELD(syslog) },
	{ .name = "verbose",
	  .shortc = 'v',
	  .scope = P,
	  .help = "log debug lines too",
	  .repeat = true,
	  .apply = opt_set_verbose },
	{ .name = "config",
	  .shortc = 'c',
	  .metavar = "FILE",
	  .scope = P,
	  .help = "read listeners and settings from FILE (see\n"
		  "smbsplice.conf(5)); options given too override [global]",
	  .cli_only = true,
	  .apply = opt_set_config },
	{ .name = "check",
	  .scope = P,
	  .help = "check the configuration, say what is wrong, and exit",
	  .cli_only = true,
	  .apply = opt_set_true,
	  PFIELD(check) },
	{ .name = "share-address",
	  .scope = P,
	  .help = "listen where a running smbsplice listens, sharing its\n"
		  "clients until it is stopped (drain and start); without\n"
		  "it, an address another process listens on is refused",
	  .cli_only = true,
	  .apply = opt_set_true,
	  PFIELD(share_address) },
	{ .name = "help",
	  .shortc = 'h',
	  .scope = P,
	  .help = "this text",
	  .cli_only = true,
	  .apply = opt_show_help },
	{ .name = "version",
	  .shortc = 'V',
	  .scope = P,
	  .help = "print the version",
	  .cli_only = true,
	  .apply = opt_show_version },
};

_Static_assert(sizeof(opt_table) / sizeof(opt_table[0]) == OPT_TABLE_LEN,
	       "OPT_TABLE_LEN counts the rows of opt_table");

#undef P
#undef L
#undef PFIELD
#undef LFIELD

/**
 * opt_find() - the table row of a long option
 * @name:	its name
 *
 * Return: the row, or NULL.
 */
const struct opt_def *opt_find(const char *name)
{
	for (unsigned i = 0; i < OPT_TABLE_LEN; i++)
		if (!strcmp(opt_table[i].name, name))
			return &opt_table[i];
	return NULL;
}

/**
 * opt_find_short() - the table row of a short option
 * @c:	the letter
 *
 * Return: the row, or NULL.
 */
const struct opt_def *opt_find_short(int c)
{
	for (unsigned i = 0; i < OPT_TABLE_LEN; i++)
		if (opt_table[i].shortc == c)
			return &opt_table[i];
	return NULL;
}

/**
 * opt_number_text() - a limit as a complaint states it
 * @v:		the limit
 * @size:	a size, written with K or M where it divides evenly
 * @out:	buffer for the text
 * @len:	its size
 */
void opt_number_text(unsigned long long v, bool size, char *out, size_t len)
{
	if (size && v && !(v % (1u << 20)))
		snprintf(out, len, "%lluM", v >> 20);
	else if (size && v && !(v % (1u << 10)))
		snprintf(out, len, "%lluK", v >> 10);
	else
		snprintf(out, len, "%llu", v);
}

/**
 * options_name() - the long name of an option, for walking them all
 * @i:		index, from 0 to options_count() - 1
 * @in_file:	set to whether it is also a config file key
 *
 * Return: the name, or NULL past the last option.
 */
const char *options_name(unsigned i, bool *in_file)
{
	if (i >= OPT_TABLE_LEN)
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
	return OPT_TABLE_LEN;
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
	for (unsigned i = 0; i < OPT_TABLE_LEN; i++) {
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
