// SPDX-License-Identifier: GPL-2.0-or-later
/* promtext.c - the /metrics page: counters and gauges as Prometheus text
 *
 * Theory of operation: metrics.c sums the workers' counters (counters.c)
 * and reads the process's gauges, then hands both here; this file only
 * writes them out in the Prometheus text format, HELP and TYPE lines
 * first, and owns every metric's name, label and help text. It reads
 * sums the caller owns, never a worker's live counters, and does no I/O
 * but to the FILE it is given.
 *
 * What connections move is counted per listener and labelled with its
 * name (listener="..."); what the process holds (pipes, buffers,
 * descriptors) is process-wide and has no listener label, and so is the
 * process_* family every Prometheus client library gives (procstat.c)
 * and smbsplice_build_info, which says what was built. A listener's
 * name and a backend's address are the user's text: they go out escaped
 * as the exposition format wants (backslash, double quote, newline), or
 * one odd section name would make Prometheus refuse the whole page.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "conf/options.h"
#include "observe/counters.h"
#include "net/listener.h"
#include "control/procstat.h"
#include "control/promtext.h"

static const char *const dir_label[DIR_COUNT] = { "to_server", "to_client" };

/* an escaped label value is at most twice its text, and a NUL */
#define NAME_LABEL_LEN	  (2 * OPT_NAME_LEN + 1)
#define BACKEND_LABEL_LEN (2 * sizeof(((struct endpoint *)0)->text) + 1)

/**
 * struct lnames - one listener's label values, escaped for this page
 * @name:	its name
 * @backend:	its backends' addresses, as given
 */
struct lnames {
	char name[NAME_LABEL_LEN];
	char backend[LREPORT_MAX_BACKENDS][BACKEND_LABEL_LEN];
};

/**
 * label_escape() - a label value as the text format wants it
 * @dst:	where to write, NUL-terminated
 * @len:	its size: at least twice @src's length, and one
 * @src:	the text
 *
 * Backslash, double quote and newline become \\, \" and \n; anything
 * that does not fit is cut at a whole character.
 */
static void label_escape(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	for (; *src; src++) {
		char c = *src == '\n' ? 'n' : *src;
		bool esc = c != *src || c == '\\' || c == '"';

		if (o + esc + 1 >= len)
			break;
		if (esc)
			dst[o++] = '\\';
		dst[o++] = c;
	}
	dst[o] = '\0';
}

/**
 * metric_head() - the HELP and TYPE lines of a metric
 * @out:	where to write
 * @name:	metric name
 * @type:	"counter" or "gauge"
 * @help:	one line of help
 */
static void metric_head(FILE *out, const char *name, const char *type,
			const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/**
 * write_scalar() - a metric with a single, unlabelled value
 * @out:	where to write
 * @name:	metric name
 * @type:	"counter" or "gauge"
 * @help:	help line
 * @v:		the value
 */
static void write_scalar(FILE *out, const char *name, const char *type,
			 const char *help, unsigned long long v)
{
	metric_head(out, name, type, help);
	fprintf(out, "%s %llu\n", name, v);
}

/**
 * dir_counter() - a uint64_t counter at an offset in struct dir_totals
 * @t:		totals
 * @d:		direction
 * @off:	the counter's offset
 *
 * Return: its value.
 */
static unsigned long long dir_counter(const struct totals *t, int d, size_t off)
{
	return *(const uint64_t *)((const char *)&t->dir[d] + off);
}

/* Counters with one value per listener and direction. */
static const struct {
	const char *name, *help;
	size_t off;
} per_dir[] = {
	{ "smbsplice_splice_calls_total", "splice() calls, both legs.",
	  offsetof(struct dir_totals, pump.splice_calls) },
	{ "smbsplice_copy_calls_total", "recv() and send() calls.",
	  offsetof(struct dir_totals, pump.copy_calls) },
	{ "smbsplice_cork_writes_total",
	  "Writes that carried MSG_MORE or SPLICE_F_MORE: the cork, which costs no setsockopt().",
	  offsetof(struct dir_totals, pump.more_writes) },
	{ "smbsplice_uncork_calls_total",
	  "setsockopt(TCP_CORK, 0) calls that pushed bytes a MORE write held back.",
	  offsetof(struct dir_totals, pump.uncorks) },
	{ "smbsplice_streams_ended_midframe_total",
	  "Streams whose end of file came in the middle of an SMB message; it was forwarded after their last byte, as TCP would.",
	  offsetof(struct dir_totals, pump.midframe_ends) },
	{ "smbsplice_read_interim_total",
	  "Interim (STATUS_PENDING) READ responses.",
	  offsetof(struct dir_totals, smb.interim) },
	{ "smbsplice_read_errors_total", "READ responses with an error body.",
	  offsetof(struct dir_totals, smb.read_errors) },
};

/**
 * write_per_dir() - the per-direction counters, per listener
 * @out:	where to write
 * @ls:		the listeners
 * @lab:	the listeners' label values, escaped
 * @n:		how many
 */
static void write_per_dir(FILE *out, const struct lreport *ls,
			  const struct lnames *lab, unsigned n)
{
	for (size_t m = 0; m < sizeof(per_dir) / sizeof(per_dir[0]); m++) {
		metric_head(out, per_dir[m].name, "counter", per_dir[m].help);
		for (unsigned i = 0; i < n; i++)
			for (int d = 0; d < DIR_COUNT; d++)
				fprintf(out,
					"%s{listener=\"%s\",direction=\"%s\"} %llu\n",
					per_dir[m].name, lab[i].name,
					dir_label[d],
					dir_counter(&ls[i].tot, d,
						    per_dir[m].off));
	}
}

/**
 * write_bytes() - smbsplice_bytes_total by listener, direction and pump
 * @out:	where to write
 * @ls:		the listeners
 * @lab:	the listeners' label values, escaped
 * @n:		how many
 */
static void write_bytes(FILE *out, const struct lreport *ls,
			const struct lnames *lab, unsigned n)
{
	metric_head(
		out, "smbsplice_bytes_total", "counter",
		"Bytes delivered, by direction and the pump that moved them.");
	for (unsigned i = 0; i < n; i++)
		for (int d = 0; d < DIR_COUNT; d++) {
			const struct pump_stats *p = &ls[i].tot.dir[d].pump;

			fprintf(out,
				"smbsplice_bytes_total{listener=\"%s\",direction=\"%s\",path=\"splice\"} %llu\n"
				"smbsplice_bytes_total{listener=\"%s\",direction=\"%s\",path=\"copy\"} %llu\n",
				lab[i].name, dir_label[d],
				(unsigned long long)p->spliced, lab[i].name,
				dir_label[d], (unsigned long long)p->copied);
		}
}

/**
 * write_messages() - smbsplice_messages_total by listener, direction and
 *		      command
 * @out:	where to write
 * @ls:		the listeners
 * @lab:	the listeners' label values, escaped
 * @n:		how many
 */
static void write_messages(FILE *out, const struct lreport *ls,
			   const struct lnames *lab, unsigned n)
{
	metric_head(
		out, "smbsplice_messages_total", "counter",
		"SMB2 messages parsed (compound elements count one each), by direction and command.");
	for (unsigned i = 0; i < n; i++)
		for (int d = 0; d < DIR_COUNT; d++)
			for (unsigned c = 0; c <= SMB2_NCOMMANDS; c++)
				fprintf(out,
					"smbsplice_messages_total{listener=\"%s\",direction=\"%s\",command=\"%s\"} %llu\n",
					lab[i].name, dir_label[d],
					smb_command_name(c),
					(unsigned long long)ls[i]
						.tot.dir[d]
						.smb.commands[c]);
}

/**
 * write_frames() - frames that are not plain SMB2, by listener, direction
 *		    and kind
 * @out:	where to write
 * @ls:		the listeners
 * @lab:	the listeners' label values, escaped
 * @n:		how many
 */
static void write_frames(FILE *out, const struct lreport *ls,
			 const struct lnames *lab, unsigned n)
{
	static const char *const kind[] = { "encrypted", "compressed", "smb1",
					    "netbios" };

	metric_head(
		out, "smbsplice_frames_total", "counter",
		"Frames that are not plain SMB2: encryption and compression transforms, SMB1, NetBIOS session control.");
	for (unsigned i = 0; i < n; i++)
		for (int d = 0; d < DIR_COUNT; d++) {
			const struct smb_dir_stats *s = &ls[i].tot.dir[d].smb;
			const uint64_t v[] = { s->encrypted, s->compressed,
					       s->smb1, s->netbios };

			for (int k = 0; k < 4; k++)
				fprintf(out,
					"smbsplice_frames_total{listener=\"%s\",direction=\"%s\",kind=\"%s\"} %llu\n",
					lab[i].name, dir_label[d], kind[k],
					(unsigned long long)v[k]);
		}
}

/**
 * write_payloads() - payload counts and bytes by listener, class,
 *		      decision and pump
 * @out:	where to write
 * @ls:		the listeners
 * @lab:	the listeners' label values, escaped
 * @n:		how many
 */
static void write_payloads(FILE *out, const struct lreport *ls,
			   const struct lnames *lab, unsigned n)
{
	metric_head(
		out, "smbsplice_payloads_total", "counter",
		"Payloads (READ data, WRITE data, other) by class and the threshold's decision.");
	for (unsigned i = 0; i < n; i++)
		for (int d = 0; d < DIR_COUNT; d++)
			for (int c = 0; c < SMB_NCLASSES; c++)
				for (int sp = 0; sp < 2; sp++)
					fprintf(out,
						"smbsplice_payloads_total{listener=\"%s\",direction=\"%s\",class=\"%s\",decision=\"%s\"} %llu\n",
						lab[i].name, dir_label[d],
						smb_class_name(c),
						sp ? "splice" : "copy",
						(unsigned long long)ls[i]
							.tot.dir[d]
							.smb.payloads[c][sp]);
	metric_head(
		out, "smbsplice_payload_bytes_total", "counter",
		"Payload bytes by class and the pump that moved them; a spliced payload's first bytes may have come in with its header and been copied.");
	for (unsigned i = 0; i < n; i++)
		for (int d = 0; d < DIR_COUNT; d++)
			for (int c = 0; c < SMB_NCLASSES; c++) {
				const struct smb_dir_stats *s =
					&ls[i].tot.dir[d].smb;

				fprintf(out,
					"smbsplice_payload_bytes_total{listener=\"%s\",direction=\"%s\",class=\"%s\",path=\"splice\"} %llu\n"
					"smbsplice_payload_bytes_total{listener=\"%s\",direction=\"%s\",class=\"%s\",path=\"copy\"} %llu\n",
					lab[i].name, dir_label[d],
					smb_class_name(c),
					(unsigned long long)
						s->payload_spliced[c],
					lab[i].name, dir_label[d],
					smb_class_name(c),
					(unsigned long long)
						s->payload_copied[c]);
			}
}

/**
 * listener_counter() - a uint64_t counter at an offset in struct lreport
 * @r:		a listener's report
 * @off:	the counter's offset
 *
 * Return: its value.
 */
static unsigned long long listener_counter(const struct lreport *r, size_t off)
{
	return *(const uint64_t *)((const char *)r + off);
}

/* Counters with one value per listener. */
static const struct {
	const char *name, *help;
	size_t off;
} per_listener[] = {
	{ "smbsplice_listener_connections_total",
	  "Connections each listener accepted.",
	  offsetof(struct lreport, accepted) },
	{ "smbsplice_opaque_fallbacks_total",
	  "Connections whose SMB parsing gave up; they were forwarded opaque.",
	  offsetof(struct lreport, tot.opaque_conns) },
	{ "smbsplice_auth_timeouts_total",
	  "Connections ended because no session setup completed within --auth-timeout.",
	  offsetof(struct lreport, auth_timeouts) },
	{ "smbsplice_denied_total",
	  "Clients reset at once because no --allow network holds them.",
	  offsetof(struct lreport, denied) },
	{ "smbsplice_quic_handshakes_total",
	  "QUIC connections begun: a client's first Initial, admitted.",
	  offsetof(struct lreport, quic_handshakes) },
	{ "smbsplice_quic_retries_total",
	  "QUIC Retry packets sent: clients asked to prove their address before any state.",
	  offsetof(struct lreport, quic_retries) },
	{ "smbsplice_quic_stateless_resets_total",
	  "QUIC Stateless Resets sent for packets of no connection.",
	  offsetof(struct lreport, quic_resets) },
	{ "smbsplice_quic_migrations_total",
	  "QUIC connections that moved to a new client address or port (path validated).",
	  offsetof(struct lreport, quic_migrations) },
	{ "smbsplice_quic_client_certs_denied_total",
	  "QUIC client certificates refused (--quic-client-ca, -allow, -deny).",
	  offsetof(struct lreport, quic_certs_denied) },
};

/**
 * backend_states() - each backend's health and admin state, and how often
 *		      they changed
 * @out:	the page
 * @ls:		the listeners' reports
 * @lab:	their labels, escaped
 * @n:		how many
 *
 * The admin state is one series per state, 1 for the one it is in, so
 * that a panel can count drained backends with a sum.
 */
static void backend_states(FILE *out, const struct lreport *ls,
			   const struct lnames *lab, unsigned n)
{
	metric_head(
		out, "smbsplice_backend_up", "gauge",
		"1 unless the health checks (health-check = tcp|smb) found the backend down.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned b = 0; b < ls[i].nbackends; b++)
			fprintf(out,
				"smbsplice_backend_up{listener=\"%s\",backend=\"%s\"} %d\n",
				lab[i].name, lab[i].backend[b],
				!ls[i].backend_down[b]);
	metric_head(
		out, "smbsplice_backend_admin_state", "gauge",
		"1 for the state the control socket left the backend in: ready (dialled), drain (no new connections) or maint (no new connections, no checks).");
	for (unsigned i = 0; i < n; i++)
		for (unsigned b = 0; b < ls[i].nbackends; b++)
			for (unsigned a = 0; a < BE_ADMIN_COUNT; a++)
				fprintf(out,
					"smbsplice_backend_admin_state{listener=\"%s\",backend=\"%s\",state=\"%s\"} %d\n",
					lab[i].name, lab[i].backend[b],
					listener_admin_name(a),
					ls[i].backend_admin[b] == a);
	metric_head(
		out, "smbsplice_backend_state_changes_total", "counter",
		"Changes of a backend's health (up, down) or admin state (ready, drain, maint); each is also a log line.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned b = 0; b < ls[i].nbackends; b++)
			fprintf(out,
				"smbsplice_backend_state_changes_total{listener=\"%s\",backend=\"%s\"} %llu\n",
				lab[i].name, lab[i].backend[b],
				(unsigned long long)ls[i].backend_changes[b]);
}

/**
 * write_listeners() - what each listener accepted, refused and failed
 * @out:	where to write
 * @ls:		the listeners
 * @lab:	the listeners' label values, escaped
 * @n:		how many
 */
static void write_listeners(FILE *out, const struct lreport *ls,
			    const struct lnames *lab, unsigned n)
{
	for (size_t m = 0; m < sizeof(per_listener) / sizeof(per_listener[0]);
	     m++) {
		metric_head(out, per_listener[m].name, "counter",
			    per_listener[m].help);
		for (unsigned i = 0; i < n; i++)
			fprintf(out, "%s{listener=\"%s\"} %llu\n",
				per_listener[m].name, lab[i].name,
				listener_counter(&ls[i], per_listener[m].off));
	}
	metric_head(out, "smbsplice_connections_active", "gauge",
		    "Connections open now.");
	for (unsigned i = 0; i < n; i++)
		fprintf(out,
			"smbsplice_connections_active{listener=\"%s\"} %llu\n",
			lab[i].name, (unsigned long long)ls[i].active);
	metric_head(
		out, "smbsplice_refused_total", "counter",
		"Clients reset before the backend was dialled: a cap was reached, (first_frame) the first frame was not one an SMB server answers, or (proxy) --accept-proxy got no valid PROXY header or a peer outside --proxy-from.");
	for (unsigned i = 0; i < n; i++)
		fprintf(out,
			"smbsplice_refused_total{listener=\"%s\",reason=\"max_conns\"} %llu\n"
			"smbsplice_refused_total{listener=\"%s\",reason=\"max_conns_per_source\"} %llu\n"
			"smbsplice_refused_total{listener=\"%s\",reason=\"max_preauth_per_source\"} %llu\n"
			"smbsplice_refused_total{listener=\"%s\",reason=\"first_frame\"} %llu\n"
			"smbsplice_refused_total{listener=\"%s\",reason=\"proxy\"} %llu\n",
			lab[i].name, (unsigned long long)ls[i].refused_conns,
			lab[i].name, (unsigned long long)ls[i].refused_source,
			lab[i].name, (unsigned long long)ls[i].refused_preauth,
			lab[i].name, (unsigned long long)ls[i].bad_openings,
			lab[i].name, (unsigned long long)ls[i].proxy_refused);
	metric_head(
		out, "smbsplice_backend_failures_total", "counter",
		"Connects to a backend that failed (refused, unreachable, timed out); the next backend was tried, if any.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned b = 0; b < ls[i].nbackends; b++)
			fprintf(out,
				"smbsplice_backend_failures_total{listener=\"%s\",backend=\"%s\"} %llu\n",
				lab[i].name, lab[i].backend[b],
				(unsigned long long)ls[i].backend_failures[b]);
	backend_states(out, ls, lab, n);
	metric_head(
		out, "smbsplice_multichannel_total", "counter",
		"Server responses that let clients connect around smbsplice: NEGOTIATE offering multichannel, IOCTL listing the server's interfaces.");
	for (unsigned i = 0; i < n; i++) {
		const struct smb_dir_stats *s =
			&ls[i].tot.dir[DIR_TO_CLIENT].smb;

		fprintf(out,
			"smbsplice_multichannel_total{listener=\"%s\",kind=\"offered\"} %llu\n"
			"smbsplice_multichannel_total{listener=\"%s\",kind=\"interface_list\"} %llu\n",
			lab[i].name, (unsigned long long)s->multichannel,
			lab[i].name, (unsigned long long)s->interface_lists);
	}
}

/**
 * write_process() - what the process holds now
 * @out:	where to write
 * @g:		the gauges
 */
static void write_process(FILE *out, const struct gauges *g)
{
	write_scalar(out, "smbsplice_connections_total", "counter",
		     "Connections accepted since start.", g->total);
	write_scalar(
		out, "smbsplice_draining", "gauge",
		"1 while SIGTERM's drain runs: no listener, connections running out.",
		g->draining);
	write_scalar(out, "smbsplice_pipes_open", "gauge", "Splice pipes open.",
		     g->pipes_open);
	write_scalar(out, "smbsplice_pipes_lent", "gauge",
		     "Splice pipes holding a splice in flight.", g->pipes_lent);
	write_scalar(
		out, "smbsplice_pipe_denied_total", "counter",
		"Times no pipe was free (--max-pipes) and the copy pump served.",
		g->pipes_denied);
	write_scalar(
		out, "smbsplice_pipe_small_total", "counter",
		"Pipes the kernel would not give --pipe-size (pipe-user-pages-soft); closed unused, and the copy pump served.",
		g->pipes_small);
	write_scalar(
		out, "smbsplice_pipe_stalls_total", "counter",
		"Pipes whose destination took nothing for a second: their bytes were moved to a buffer and the pipe went back to the pool.",
		g->pipe_stalls);
	write_scalar(out, "smbsplice_buffers_lent", "gauge",
		     "Copy buffers holding bytes in flight.", g->bufs_lent);
	write_scalar(
		out, "smbsplice_buffer_lent_bytes", "gauge",
		"Bytes of the copy buffers holding bytes in flight, the larger ones holding a stalled pipe's bytes included.",
		g->buf_bytes_lent);
	write_scalar(out, "smbsplice_buffers_free", "gauge",
		     "Copy buffers kept for reuse.", g->bufs_free);
	write_scalar(out, "smbsplice_descriptors_used", "gauge",
		     "File descriptors held by connections and pipes.",
		     g->fds_used);
	write_scalar(
		out, "smbsplice_descriptors_limit", "gauge",
		"File descriptors connections and pipes may hold: the open-files limit less what the process keeps back.",
		g->fds_limit);
	write_scalar(
		out, "smbsplice_log_dropped_total", "counter",
		"Log lines dropped because standard error was not read fast enough.",
		g->log_dropped);
	write_scalar(out, "smbsplice_trace_records_total", "counter",
		     "Records written to the --trace file.", g->trace_records);
	write_scalar(
		out, "smbsplice_trace_dropped_total", "counter",
		"--trace records dropped because the writer could not keep up, the file could not be reopened or rotated (past --trace-max), or the write failed.",
		g->trace_dropped);
}

#ifdef HAVE_JEMALLOC
#define BUILT_JEMALLOC "yes"
#else
#define BUILT_JEMALLOC "no"
#endif
#ifdef HAVE_SANITIZERS
#define BUILT_SANITIZERS "yes"
#else
#define BUILT_SANITIZERS "no"
#endif

/**
 * write_build() - smbsplice_build_info: the version and build options
 * @out:	where to write
 *
 * The value is always 1; the labels carry what configure decided, so a
 * query can join them onto other series or count the fleet by version.
 */
static void write_build(FILE *out)
{
	metric_head(
		out, "smbsplice_build_info", "gauge",
		"Always 1; its labels give the version and what configure built in.");
	fprintf(out,
		"smbsplice_build_info{version=\"%s\",jemalloc=\"%s\",sanitizers=\"%s\",libsystemd=\"%s\"} 1\n",
		PACKAGE_VERSION, BUILT_JEMALLOC, BUILT_SANITIZERS,
		LIBSYSTEMD_VERSION);
}

/**
 * write_procstat() - the process_* family, as the client libraries give it
 * @out:	where to write
 * @ps:		what the process uses; what could not be read is left out
 */
static void write_procstat(FILE *out, const struct procstat *ps)
{
	if (ps->stat_ok) {
		metric_head(out, "process_cpu_seconds_total", "counter",
			    "Total user and system CPU time spent in seconds.");
		fprintf(out, "process_cpu_seconds_total %.2f\n",
			ps->cpu_seconds);
		write_scalar(out, "process_resident_memory_bytes", "gauge",
			     "Resident memory size in bytes.", ps->rss_bytes);
		write_scalar(out, "process_virtual_memory_bytes", "gauge",
			     "Virtual memory size in bytes.", ps->vsize_bytes);
		metric_head(
			out, "process_start_time_seconds", "gauge",
			"Start time of the process since unix epoch in seconds.");
		fprintf(out, "process_start_time_seconds %.2f\n",
			ps->start_time);
	}
	if (ps->fds_ok)
		write_scalar(out, "process_open_fds", "gauge",
			     "Number of open file descriptors.", ps->open_fds);
	if (ps->max_ok)
		write_scalar(out, "process_max_fds", "gauge",
			     "Maximum number of open file descriptors.",
			     ps->max_fds);
}

/**
 * write_hist() - one histogram's series: buckets, sum and count
 * @out:	where to write
 * @name:	metric name, without _bucket, _sum or _count
 * @labels:	its labels, without le
 * @h:		the histogram, summed over the workers
 *
 * Prometheus buckets are cumulative: each counts every observation at or
 * below its bound, and +Inf all of them.
 */
static void write_hist(FILE *out, const char *name, const char *labels,
		       const struct hist *h)
{
	unsigned long long cum = 0;

	for (unsigned i = 0; i < HIST_NBOUNDS; i++) {
		cum += h->bucket[i];
		fprintf(out, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels,
			(double)hist_bounds_ns[i] / 1e9, cum);
	}
	cum += h->bucket[HIST_NBOUNDS];
	fprintf(out,
		"%s_bucket{%s,le=\"+Inf\"} %llu\n%s_sum{%s} %.9f\n%s_count{%s} %llu\n",
		name, labels, cum, name, labels, (double)h->sum_ns / 1e9, name,
		labels, cum);
}

/**
 * write_latency() - the server's time per command, smbsplice's per frame
 * @out:	where to write
 * @ls:		the listeners
 * @lab:	the listeners' label values, escaped
 * @n:		how many
 *
 * A command appears once it has been timed, so that a listener's page is
 * not 19 empty histograms long.
 */
static void write_latency(FILE *out, const struct lreport *ls,
			  const struct lnames *lab, unsigned n)
{
	char labels[NAME_LABEL_LEN + 64];

	metric_head(
		out, "smbsplice_request_seconds", "histogram",
		"Server time per SMB2 command: from the request's last byte written to the backend to its final response's first byte read.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned c = 0; c <= SMB2_NCOMMANDS; c++) {
			if (!hist_count(&ls[i].tot.request[c]))
				continue;
			snprintf(labels, sizeof(labels),
				 "listener=\"%s\",command=\"%s\"", lab[i].name,
				 smb_command_name(c));
			write_hist(out, "smbsplice_request_seconds", labels,
				   &ls[i].tot.request[c]);
		}
	metric_head(
		out, "smbsplice_forward_seconds", "histogram",
		"smbsplice's own time per SMB frame: from its header read to its last byte written.");
	for (unsigned i = 0; i < n; i++)
		for (int d = 0; d < DIR_COUNT; d++) {
			snprintf(labels, sizeof(labels),
				 "listener=\"%s\",direction=\"%s\"",
				 lab[i].name, dir_label[d]);
			write_hist(out, "smbsplice_forward_seconds", labels,
				   &ls[i].tot.dir[d].forward);
		}
	metric_head(
		out, "smbsplice_requests_untimed_total", "counter",
		"Requests not timed: past 1024 outstanding on one connection, or once the server's responses are compressed or forwarded opaque.");
	for (unsigned i = 0; i < n; i++)
		fprintf(out,
			"smbsplice_requests_untimed_total{listener=\"%s\"} %llu\n",
			lab[i].name,
			(unsigned long long)ls[i].tot.untimed_requests);
}

/**
 * write_per_worker() - a counter with one series per worker
 * @out:	where to write
 * @name:	its name
 * @help:	its HELP text
 * @vals:	its value in each worker
 * @nworkers:	how many
 */
static void write_per_worker(FILE *out, const char *name, const char *help,
			     const uint64_t *vals, unsigned nworkers)
{
	metric_head(out, name, "counter", help);
	for (unsigned i = 0; i < nworkers; i++)
		fprintf(out, "%s{worker=\"%u\"} %llu\n", name, i,
			(unsigned long long)vals[i]);
}

/**
 * promtext_write() - the /metrics page
 * @out:	where to write
 * @ls:		each listener's counters, summed over the workers
 * @nls:	how many listeners
 * @g:		the process's gauges
 * @accepted:	connections each worker opened
 * @moved:	clients each worker accepted and handed to another
 * @nworkers:	how many workers
 * @ps:		what the process uses (/proc)
 *
 * Return: 0, or -1 if memory ran out (no page: a page without its
 * listeners would read as all zeros).
 */
int promtext_write(FILE *out, const struct lreport *ls, unsigned nls,
		   const struct gauges *g, const uint64_t *accepted,
		   const uint64_t *moved, unsigned nworkers,
		   const struct procstat *ps)
{
	struct lnames *lab = calloc(nls ? nls : 1, sizeof(*lab));

	if (!lab)
		return -1;
	for (unsigned i = 0; i < nls; i++) {
		label_escape(lab[i].name, sizeof(lab[i].name), ls[i].name);
		for (unsigned b = 0; b < ls[i].nbackends; b++)
			label_escape(lab[i].backend[b],
				     sizeof(lab[i].backend[b]),
				     ls[i].backends[b]);
	}
	write_bytes(out, ls, lab, nls);
	write_per_dir(out, ls, lab, nls);
	write_messages(out, ls, lab, nls);
	write_frames(out, ls, lab, nls);
	write_payloads(out, ls, lab, nls);
	write_latency(out, ls, lab, nls);
	write_listeners(out, ls, lab, nls);
	free(lab);
	write_process(out, g);
	write_per_worker(
		out, "smbsplice_worker_connections_total",
		"Connections each worker served: those the kernel gave it and "
		"kept, and those other workers handed it.",
		accepted, nworkers);
	write_per_worker(out, "smbsplice_worker_connections_moved_total",
			 "TCP clients each worker accepted and handed to a "
			 "worker that served fewer connections.",
			 moved, nworkers);
	write_build(out);
	write_procstat(out, ps);
	return 0;
}
