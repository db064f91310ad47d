// SPDX-License-Identifier: GPL-2.0-or-later
/* main.c - smbsplice-advise: thresholds for smbsplice, from a capture
 *
 * Theory of operation: one pass over a capture file. Each TCP segment to
 * or from an SMB port (capture.c) goes to the reassembler (reassembly.c),
 * which hands each connection's two streams, in order and with their
 * holes, to the walk (walk.c): the daemon's own framer, whose every
 * message is counted (tally.c). At the end the recommendation is worked
 * out (recommend.c) from the crossover, measured here with --calibrate
 * (calibrate.c) or the README's, and everything is printed as a table or
 * JSON (report.c).
 *
 * Exit status: 0 with a report; 2 for a bad command line; 1 when the
 * file cannot be read as a capture, holds no SMB, or breaks off in the
 * middle of a record (or holds a record libpcap cannot read). In that
 * last case the report for the records before the break is printed all
 * the same (a capture cut short by a full disk or a killed tcpdump is
 * mostly good data), and one line on standard error says where it broke
 * off.
 */
#include "config.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "capture.h"
#include "reassembly.h"
#include "recommend.h"
#include "report.h"
#include "walk.h"

#define MAX_PORTS 32

/* --max-connections at most: each costs about 1 KiB while it is open. */
#define MAX_CONNS (16u << 20)

/**
 * struct args - the command line
 * @path:	the capture
 * @ports:	the SMB servers' TCP ports
 * @nports:	how many
 * @max_conns:	connections followed at once
 * @json:	print JSON
 * @calibrate:	measure this host's crossover
 */
struct args {
	const char *path;
	uint16_t ports[MAX_PORTS];
	unsigned nports;
	unsigned long max_conns;
	bool json, calibrate;
};

/**
 * usage() - the help text
 * @f:	where to print it
 */
static void usage(FILE *f)
{
	fprintf(f,
		"Usage: smbsplice-advise [options] CAPTURE\n"
		"\n"
		"Read a capture of SMB traffic (pcap or pcapng, from tcpdump or dumpcap,\n"
		"snaplen-limited or not) and recommend smbsplice's --read-threshold and\n"
		"--write-threshold for that workload.\n"
		"\n"
		"      --port N                 the SMB server's TCP port; repeat for more\n"
		"                               (default: 445 and 139)\n"
		"      --max-connections N      follow at most N connections at once; past it\n"
		"                               the least recently active is ended early, and\n"
		"                               the report says how many (default: %u)\n"
		"      --json                   print JSON instead of a table\n"
		"      --calibrate              base the recommendation on a short measurement\n"
		"                               of splice and copy on this host (a few seconds)\n"
		"                               instead of the README's measured defaults\n"
		"  -h, --help                   print this help\n"
		"  -V, --version                print the version\n"
		"\n"
		"Exit status: 0, a report; 1, the capture is unreadable, holds no SMB or\n"
		"breaks off (the report covers what came before); 2, a bad command line.\n",
		RS_MAX_CONNS);
}

/**
 * bad_usage() - one line about a bad command line, and exit status 2
 * @what:	what is wrong
 */
static void bad_usage(const char *what)
{
	fprintf(stderr, "smbsplice-advise: %s; see smbsplice-advise --help\n",
		what);
	exit(2);
}

/**
 * add_port() - take a --port argument
 * @a:		the command line
 * @text:	the argument
 */
static void add_port(struct args *a, const char *text)
{
	char *end, msg[128];
	unsigned long v = strtoul(text, &end, 10);

	if (!*text || *end || v == 0 || v > 65535 || *text == '-') {
		snprintf(msg, sizeof(msg),
			 "--port %.40s: expected a TCP port, 1 to 65535", text);
		bad_usage(msg);
	}
	if (a->nports == MAX_PORTS)
		bad_usage("--port: at most 32 ports");
	a->ports[a->nports++] = (uint16_t)v;
}

/**
 * set_max_conns() - take a --max-connections argument
 * @a:		the command line
 * @text:	the argument
 */
static void set_max_conns(struct args *a, const char *text)
{
	char *end, msg[128];
	unsigned long v = strtoul(text, &end, 10);

	if (!*text || *end || *text == '-' || v == 0 || v > MAX_CONNS) {
		snprintf(msg, sizeof(msg),
			 "--max-connections %.40s: expected 1 to %u", text,
			 MAX_CONNS);
		bad_usage(msg);
	}
	a->max_conns = v;
}

/**
 * parse_args() - read the command line
 * @argc:	argument count
 * @argv:	arguments
 * @a:		filled in
 */
static void parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longs[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "max-connections", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "calibrate", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->max_conns = RS_MAX_CONNS;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hV", longs, NULL)) != -1) {
		char msg[96];

		switch (c) {
		case 'p':
			add_port(a, optarg);
			break;
		case 'm':
			set_max_conns(a, optarg);
			break;
		case 'j':
			a->json = true;
			break;
		case 'c':
			a->calibrate = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("smbsplice-advise %s\n", PACKAGE_VERSION);
			exit(0);
		case ':':
			snprintf(msg, sizeof(msg), "%.40s needs an argument",
				 argv[optind - 1]);
			bad_usage(msg);
			break;
		default:
			if (optopt)
				snprintf(msg, sizeof(msg), "unknown option -%c",
					 optopt);
			else
				snprintf(msg, sizeof(msg),
					 "unknown option %.40s",
					 argv[optind - 1]);
			bad_usage(msg);
		}
	}
	if (optind != argc - 1)
		bad_usage(optind == argc ? "no capture file given"
					 : "give one capture file");
	a->path = argv[optind];
	if (!a->nports) {
		a->ports[a->nports++] = 445;
		a->ports[a->nports++] = 139;
	}
}

/**
 * is_smb_port() - is a port one of the SMB servers'
 * @a:		the command line
 * @port:	the port
 *
 * Return: true if so.
 */
static bool is_smb_port(const struct args *a, uint16_t port)
{
	for (unsigned i = 0; i < a->nports; i++)
		if (a->ports[i] == port)
			return true;
	return false;
}

/**
 * read_capture() - pass every SMB segment of the capture to reassembly
 * @a:		the command line
 * @cap:	the open capture
 * @t:		the reassembler
 *
 * A segment goes to the server when its destination is an SMB port; when
 * both ports are (one server talking to another), a SYN says which end
 * is the client, and otherwise the destination is taken.
 *
 * Return: false if the file broke off or is corrupt (@cap->err says how).
 */
static bool read_capture(const struct args *a, struct capture *cap,
			 struct rs_table *t)
{
	struct tcp_seg s;
	enum cap_result r;

	while ((r = capture_next(cap, &s)) == CAP_SEG) {
		bool to_server = is_smb_port(a, s.dport);

		if (!to_server && !is_smb_port(a, s.sport))
			continue;
		if (to_server && is_smb_port(a, s.sport) &&
		    s.flags & TCP_F_SYN && s.flags & TCP_F_ACK)
			to_server = false;
		rs_segment(t, &s, to_server);
	}
	return r == CAP_END;
}

/**
 * no_smb() - say that the capture holds no SMB, and exit 1
 * @a:		the command line
 * @r:		what was found
 */
static void no_smb(const struct args *a, const struct report *r)
{
	char ports[96];

	report_ports(a->ports, a->nports, ports, sizeof(ports));
	if (r->broken)
		fprintf(stderr,
			"smbsplice-advise: %s: the capture %s %llu packets (%s), with no SMB on port %s before that\n",
			a->path, capture_break_text(r->cap),
			(unsigned long long)r->cap->st.packets, r->cap->err,
			ports);
	else if (r->rs->conns)
		fprintf(stderr,
			"smbsplice-advise: %s: %llu TCP connection(s) on port %s, but none carried SMB%s%s%s; if SMB runs on another port, name it with --port\n",
			a->path, (unsigned long long)r->rs->conns, ports,
			r->w->ws.opaque_why ? " (" : "",
			r->w->ws.opaque_why ? r->w->ws.opaque_why : "",
			r->w->ws.opaque_why ? ")" : "");
	else
		fprintf(stderr,
			"smbsplice-advise: %s: no TCP connection on port %s among %llu packets (%llu TCP segments); if SMB runs on another port, name it with --port\n",
			a->path, ports, (unsigned long long)r->cap->st.packets,
			(unsigned long long)r->cap->st.tcp);
	exit(1);
}

/**
 * choose_basis() - calibrate, or take the README's crossover
 * @a:		the command line
 * @cal:	the calibration, filled in with --calibrate
 * @r:		the report: crossover and basis set
 */
static void choose_basis(const struct args *a, struct calibration *cal,
			 struct report *r)
{
	r->crossover = ADVISE_README_CROSSOVER;
	if (!a->calibrate)
		return;
	if (calibrate(cal)) {
		r->cal_failed = cal->err;
		return;
	}
	r->cal = cal;
	r->crossover = cal->crossover;
}

/**
 * main() - smbsplice-advise
 * @argc:	argument count
 * @argv:	arguments
 *
 * Return: the exit status (see the theory of operation above).
 */
int main(int argc, char **argv)
{
	static struct calibration cal;
	static struct capture cap;
	static struct walk w;
	struct report r = { 0 };
	struct args a;
	struct rs_table *t;

	parse_args(argc, argv, &a);
	if (capture_open(&cap, a.path)) {
		fprintf(stderr, "smbsplice-advise: %s: %s\n", a.path, cap.err);
		return 1;
	}
	walk_init(&w);
	t = rs_new(&walk_ops, &w);
	rs_set_max_conns(t, a.max_conns);
	r.broken = !read_capture(&a, &cap, t);
	rs_finish(t);
	r.path = a.path;
	r.cap = &cap;
	r.rs = rs_stats(t);
	r.w = &w;
	r.ports = a.ports;
	r.nports = a.nports;
	r.max_conns = a.max_conns;
	if (!w.tally.smb_conns)
		no_smb(&a, &r);
	choose_basis(&a, &cal, &r);
	advise_threshold(&w.tally.read, r.crossover, &r.read);
	advise_threshold(&w.tally.write, r.crossover, &r.write);
	if (a.json)
		report_json(stdout, &r);
	else
		report_text(stdout, &r);
	fflush(stdout);
	if (r.broken)
		fprintf(stderr,
			"smbsplice-advise: %s: the capture %s %llu packets (%s); the report covers those\n",
			a.path, capture_break_text(&cap),
			(unsigned long long)cap.st.packets, cap.err);
	rs_free(t);
	capture_close(&cap);
	return r.broken ? 1 : 0;
}
