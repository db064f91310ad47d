// SPDX-License-Identifier: GPL-2.0-or-later
/* report.c - the advisor's findings as a readable table, or as JSON
 *
 * Theory of operation: both forms say the same things in the same order:
 * what the capture is and how completely its SMB streams could be
 * followed; messages and bytes per direction and command; READ and WRITE
 * payload sizes; READ pipeline depth; the share of payload bytes each
 * candidate threshold would splice; and the recommended thresholds, with
 * the basis they rest on (this host's calibration or the README's
 * figures) said in words. The table is for a person at a terminal (80
 * columns, thousands separated); the JSON is for scripts and tests, with
 * exact integers and sizes written as the daemon's options take them
 * ("64K", "1M", "off").
 *
 * Nothing here computes a figure: it only formats what the tally,
 * reassembly, walk and recommendation found.
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "report.h"

#define GIB_PER_KIB_NS (1024.0 * 1024.0 / 1e9) /* ns/KiB -> s/GiB */

/**
 * commas() - an integer with thousands separated: 1,234,567
 * @v:		the value
 * @out:	buffer of at least 28 bytes
 *
 * Return: @out.
 */
static const char *commas(uint64_t v, char *out)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v), o = 0;

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = tmp[i];
	}
	out[o] = '\0';
	return out;
}

/**
 * size_text() - a size as the daemon's options take it
 * @bytes:	the size, or SMB_THRESHOLD_OFF
 * @out:	buffer of at least 16 bytes
 *
 * Return: @out.
 */
static const char *size_text(uint32_t bytes, char *out)
{
	advise_size_text(bytes, out, 16);
	return out;
}

/**
 * bin_text() - a size bin as a range: "<1K", "4K-8K", "8M-16M"
 * @bin:	the bin
 * @out:	buffer of at least 40 bytes
 *
 * Return: @out.
 */
static const char *bin_text(unsigned bin, char *out)
{
	char lo[16], hi[16];

	if (!bin)
		return strcpy(out, "<1K");
	advise_size_text(tally_bin_floor(bin), lo, sizeof(lo));
	advise_size_text(tally_bin_floor(bin) * 2, hi, sizeof(hi));
	snprintf(out, 40, "%s-%s", lo, hi);
	return out;
}

/**
 * span_seconds() - the time from the capture's first packet to its last
 * @cs:	what the records held
 *
 * Return: seconds; 0 when the last packet's time is before the first's
 * (a capture merged from hosts whose clocks disagree).
 */
static double span_seconds(const struct capture_stats *cs)
{
	if (cs->last_usec < cs->first_usec)
		return 0.0;
	return (double)(cs->last_usec - cs->first_usec) / 1e6;
}

/**
 * dialect_label() - the name of a dialect tally slot
 * @i:		the slot; TALLY_NDIALECTS counts every other dialect
 * @out:	buffer
 * @outlen:	its size
 *
 * Return: @out, holding "3.1.1" and the like, or "other".
 */
static const char *dialect_label(unsigned i, char *out, size_t outlen)
{
	if (i < TALLY_NDIALECTS)
		smb_dialect_text(tally_dialects[i], out, outlen);
	else
		snprintf(out, outlen, "other");
	return out;
}

/**
 * report_ports() - the ports looked at, for a sentence: "445 or 139"
 * @ports:	the ports
 * @n:		how many
 * @out:	buffer
 * @outlen:	its size
 */
void report_ports(const uint16_t *ports, unsigned n, char *out, size_t outlen)
{
	size_t o = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < n && o < outlen; i++)
		o += (size_t)snprintf(out + o, outlen - o, "%s%u",
				      !i	   ? ""
				      : i == n - 1 ? " or "
						   : ", ",
				      ports[i]);
}

/**
 * basis_text() - what the recommendation rests on, in words
 * @r:		the report
 * @out:	buffer
 * @outlen:	its size
 */
static void basis_text(const struct report *r, char *out, size_t outlen)
{
	if (r->cal)
		snprintf(out, outlen,
			 "this host's own measurement (--calibrate, %.1f s)",
			 r->cal->seconds);
	else
		snprintf(out, outlen,
			 "the README's measured defaults (loopback, 2 cores)");
}

/**
 * largest_bin() - the largest non-empty bin of a histogram
 * @h:	the histogram, not empty
 *
 * Return: the bin.
 */
static unsigned largest_bin(const struct size_hist *h)
{
	unsigned bin = 0;

	for (unsigned i = 0; i < TALLY_SIZE_BINS; i++)
		if (h->count[i])
			bin = i;
	return bin;
}

/**
 * encrypted() - encryption transform frames, both ways
 * @r:	the report
 *
 * Return: how many: their READs and WRITEs cannot be seen.
 */
static uint64_t encrypted(const struct report *r)
{
	const struct tally *t = &r->w->tally;

	return t->frames[RS_TO_SERVER][TALLY_ENCRYPTED].count +
	       t->frames[RS_TO_CLIENT][TALLY_ENCRYPTED].count;
}

/**
 * reason_text() - why a class's threshold is what it is, in words
 * @r:		the report
 * @name:	"READ" or "WRITE"
 * @h:		the class's payloads
 * @a:		its advice
 * @out:	buffer
 * @outlen:	its size
 */
static void reason_text(const struct report *r, const char *name,
			const struct size_hist *h, const struct advice *a,
			char *out, size_t outlen)
{
	char x[16], n1[28], n2[28], range[40];
	uint64_t bytes, total = tally_total(h, &bytes);

	switch (a->why) {
	case ADVICE_SPLICE:
		snprintf(
			out, outlen,
			"splices %.1f%% of %s payload bytes (%s of %s payloads)",
			a->share * 100.0, name, commas(a->payloads, n1),
			commas(total, n2));
		break;
	case ADVICE_NOT_ENGAGED:
		snprintf(
			out, outlen,
			"no %s payload reaches %s, the largest being %s: splicing would not engage",
			name, size_text(r->crossover, x),
			bin_text(largest_bin(h), range));
		break;
	case ADVICE_NO_DATA:
		if (encrypted(r))
			snprintf(
				out, outlen,
				"no %s data to be seen: %s frames are encrypted (smbsplice copies them unless --other-threshold); keep the default",
				name, commas(encrypted(r), n1));
		else
			snprintf(out, outlen,
				 "no %s data in this capture: keep the default",
				 name);
		break;
	case ADVICE_NEVER_CHEAPER:
		snprintf(
			out, outlen,
			"splicing cost more than copying at every size measured");
		break;
	}
}

/**
 * text_header() - the first lines: the file, the connections, the server
 * @f:	where to print
 * @r:	the report
 */
static void text_header(FILE *f, const struct report *r)
{
	const struct tally *t = &r->w->tally;
	const struct capture_stats *cs = &r->cap->st;
	char n1[28], ports[96], d[16], rd[16], wr[16];
	const char *sep = "; dialect";

	fprintf(f, "smbsplice-advise %s: %s (%s, %s), %s packets over %.1f s\n",
		PACKAGE_VERSION, r->path, r->cap->format,
		capture_link_name(r->cap->linktype), commas(cs->packets, n1),
		span_seconds(cs));
	report_ports(r->ports, r->nports, ports, sizeof(ports));
	fprintf(f, "SMB on TCP port %s: %s connection%s", ports,
		commas(t->smb_conns, n1), t->smb_conns == 1 ? "" : "s");
	for (unsigned i = 0; i <= TALLY_NDIALECTS; i++) {
		if (!t->dialects[i])
			continue;
		fprintf(f, "%s %s (%" PRIu64 ")", sep,
			dialect_label(i, d, sizeof(d)), t->dialects[i]);
		sep = ",";
	}
	if (t->max_read)
		fprintf(f, "; MaxReadSize %s, MaxWriteSize %s",
			size_text(t->max_read, rd),
			size_text(t->max_write, wr));
	fprintf(f, "\n");
}

/**
 * text_bounds() - what the reassembler's bounds on a hostile or huge
 *		   capture left out
 * @f:	where to print
 * @r:	the report
 */
static void text_bounds(FILE *f, const struct report *r)
{
	const struct rs_stats *rs = r->rs;
	char n1[28], n2[28];

	if (rs->given_up)
		fprintf(f,
			"  %s of those stretches were given up on: more than %u MiB or %s segments\n"
			"  waited behind them (%u MiB in all connections)\n",
			commas(rs->given_up, n1), RS_OOO_MAX_BYTES >> 20,
			commas(RS_OOO_MAX_SEGS, n2), RS_OOO_TOTAL_MAX >> 20);
	if (rs->evicted)
		fprintf(f,
			"  %s connections were ended early: more than %s were open at once (the\n"
			"  least recently active went first); raise --max-connections to follow them\n",
			commas(rs->evicted, n1), commas(r->max_conns, n2));
	if (rs->idle_ended)
		fprintf(f,
			"  %s connections were ended after %u minutes without a segment; any later\n"
			"  segments of theirs were taken as new connections\n",
			commas(rs->idle_ended, n1),
			(unsigned)(RS_IDLE_USEC / 60000000u));
}

/**
 * text_complete() - how completely the SMB streams could be followed
 * @f:	where to print
 * @r:	the report
 */
static void text_complete(FILE *f, const struct report *r)
{
	const struct capture_stats *cs = &r->cap->st;
	const struct rs_stats *rs = r->rs;
	const struct walk_stats *ws = &r->w->ws;
	char n1[28], n2[28], n3[28];

	if (!r->broken && !rs->lost_bytes && !rs->snapped_bytes &&
	    !ws->unparsed_bytes && !ws->opaque && !cs->short_hdr &&
	    !rs->evicted && !rs->idle_ended) {
		fprintf(f,
			"Capture: complete: every byte of every SMB stream was captured and walked.\n");
		return;
	}
	fprintf(f, "Capture:\n");
	if (r->broken)
		fprintf(f,
			"  the file %s %s packets (%s): the figures cover those\n",
			capture_break_text(r->cap), commas(cs->packets, n1),
			r->cap->err);
	if (rs->snapped_bytes)
		fprintf(f,
			"  %s segments cut short by the snaplen (%u): %s payload bytes not captured\n",
			commas(cs->snapped, n1), cs->snaplen,
			commas(rs->snapped_bytes, n2));
	if (rs->lost_bytes)
		fprintf(f,
			"  %s bytes missing in %s connection%s (%s stretches the capture lacks)\n",
			commas(rs->lost_bytes, n1), commas(rs->lost_conns, n2),
			rs->lost_conns == 1 ? "" : "s",
			commas(rs->lost_holes, n3));
	text_bounds(f, r);
	if (cs->short_hdr)
		fprintf(f, "  %s packets cut short before their TCP header\n",
			commas(cs->short_hdr, n1));
	if (ws->skipped_bytes)
		fprintf(f,
			"  %s missing bytes lay inside payloads: passed over, framing kept\n",
			commas(ws->skipped_bytes, n1));
	if (rs->midstream)
		fprintf(f,
			"  %s directions began before the capture: their first frame was searched for\n",
			commas(rs->midstream, n1));
	if (ws->sync_lost)
		fprintf(f,
			"  the framing was lost %s times, where a header was missing\n",
			commas(ws->sync_lost, n1));
	if (ws->opaque)
		fprintf(f, "  the framer gave up %s times (first: %s)\n",
			commas(ws->opaque, n1), ws->opaque_why);
	if (ws->unparsed_bytes)
		fprintf(f,
			"  %s bytes passed unparsed while looking for a frame: the counts leave out\n"
			"  the messages in them\n",
			commas(ws->unparsed_bytes, n1));
}

/**
 * text_messages() - messages and bytes per command, both directions
 * @f:	where to print
 * @r:	the report
 */
static void text_messages(FILE *f, const struct report *r)
{
	static const char *const frame_names[TALLY_NFRAMES] = {
		"(encrypted)", "(compressed)", "(SMB1)", "(NetBIOS)"
	};
	const struct tally *t = &r->w->tally;
	char a[28], b[28], c[28], d[28];

	fprintf(f, "\n%-16s %27s %27s\n", "Messages", "to server", "to client");
	fprintf(f, "%-16s %10s %16s %10s %16s\n", "", "count", "bytes", "count",
		"bytes");
	for (unsigned i = 0; i <= SMB2_NCOMMANDS; i++) {
		const struct msg_count *s = &t->cmd[RS_TO_SERVER][i],
				       *k = &t->cmd[RS_TO_CLIENT][i];

		if (s->count || k->count)
			fprintf(f, "%-16s %10s %16s %10s %16s\n",
				smb_command_name(i), commas(s->count, a),
				commas(s->bytes, b), commas(k->count, c),
				commas(k->bytes, d));
	}
	for (unsigned i = 0; i < TALLY_NFRAMES; i++) {
		const struct msg_count *s = &t->frames[RS_TO_SERVER][i],
				       *k = &t->frames[RS_TO_CLIENT][i];

		if (s->count || k->count)
			fprintf(f, "%-16s %10s %16s %10s %16s\n",
				frame_names[i], commas(s->count, a),
				commas(s->bytes, b), commas(k->count, c),
				commas(k->bytes, d));
	}
}

/**
 * text_sizes() - READ and WRITE payloads by size
 * @f:	where to print
 * @r:	the report
 */
static void text_sizes(FILE *f, const struct report *r)
{
	const struct tally *t = &r->w->tally;
	uint64_t rb, wb, rn = tally_total(&t->read, &rb),
			 wn = tally_total(&t->write, &wb);
	char a[28], b[28], c[28], d[28], range[40];

	fprintf(f,
		"\nREAD responses with data: %s, %s bytes (%s interim, %s errors)\n",
		commas(rn, a), commas(rb, b), commas(t->interim, c),
		commas(t->read_errors, d));
	fprintf(f, "WRITE requests with data: %s, %s bytes\n", commas(wn, a),
		commas(wb, b));
	if (!rn && !wn)
		return;
	fprintf(f, "\n%-16s %27s %27s\n", "Payload size", "READ", "WRITE");
	fprintf(f, "%-16s %10s %16s %10s %16s\n", "", "count", "bytes", "count",
		"bytes");
	for (unsigned i = 0; i < TALLY_SIZE_BINS; i++)
		if (t->read.count[i] || t->write.count[i])
			fprintf(f, "%-16s %10s %16s %10s %16s\n",
				bin_text(i, range), commas(t->read.count[i], a),
				commas(t->read.bytes[i], b),
				commas(t->write.count[i], c),
				commas(t->write.bytes[i], d));
}

/**
 * text_depth() - how many READs were outstanding at once
 * @f:	where to print
 * @r:	the report
 */
static void text_depth(FILE *f, const struct report *r)
{
	const struct tally *t = &r->w->tally;
	char a[28], label[24];

	if (!t->read_requests)
		return;
	fprintf(f,
		"\nREAD pipeline depth (READs outstanding as each is sent): max %" PRIu64
		", mean %.2f\n",
		t->depth_max, (double)t->depth_sum / (double)t->read_requests);
	for (unsigned i = 0; i < TALLY_DEPTH_BINS; i++)
		if (t->depth[i]) {
			tally_depth_label(i, label, sizeof(label));
			fprintf(f, "  %-8s %10s READs\n", label,
				commas(t->depth[i], a));
		}
}

/**
 * text_shares() - the share each candidate threshold would splice
 * @f:	where to print
 * @r:	the report
 */
static void text_shares(FILE *f, const struct report *r)
{
	const struct tally *t = &r->w->tally;
	uint64_t n;
	char x[16];

	fprintf(f, "\nShare of payload bytes spliced at each threshold\n");
	fprintf(f, "%-10s %8s %8s\n", "threshold", "READ", "WRITE");
	for (unsigned i = 0; i < ADVISE_NCANDIDATES; i++)
		fprintf(f, "%-10s %7.1f%% %7.1f%%\n",
			size_text(advise_candidates[i], x),
			advise_share(&t->read, advise_candidates[i], &n) * 100,
			advise_share(&t->write, advise_candidates[i], &n) *
				100);
}

/**
 * text_calibration() - what --calibrate measured
 * @f:	where to print
 * @r:	the report, with a calibration
 */
static void text_calibration(FILE *f, const struct report *r)
{
	const struct calibration *c = r->cal;
	char x[16];

	fprintf(f,
		"\nCalibration: CPU seconds per GiB moved through loopback (s/GiB)\n");
	fprintf(f, "%-10s %8s %8s\n", "payload", "copy", "splice");
	for (unsigned i = 0; i < c->n; i++)
		fprintf(f, "%-10s %8.3f %8.3f%s\n", size_text(c->pt[i].size, x),
			c->pt[i].copy_ns * GIB_PER_KIB_NS,
			c->pt[i].splice_ns * GIB_PER_KIB_NS,
			c->pt[i].size >= c->crossover ? "  splice" : "");
}

/**
 * text_advice() - the recommendation and its basis
 * @f:	where to print
 * @r:	the report
 */
static void text_advice(FILE *f, const struct report *r)
{
	const struct tally *t = &r->w->tally;
	char basis[96], x[16], y[16], why[160];

	if (r->cal)
		text_calibration(f, r);
	basis_text(r, basis, sizeof(basis));
	fprintf(f, "\nRecommendation, based on %s:\n", basis);
	if (r->cal_failed)
		fprintf(f, "  (--calibrate failed: %s)\n", r->cal_failed);
	if (r->crossover == SMB_THRESHOLD_OFF)
		fprintf(f, "  splicing never cost less CPU than copying.\n");
	else
		fprintf(f,
			"  splicing costs less CPU than copying from payloads of %s.\n",
			size_text(r->crossover, x));
	reason_text(r, "READ", &t->read, &r->read, why, sizeof(why));
	fprintf(f, "  --read-threshold %-5s  %s\n",
		size_text(r->read.threshold, y), why);
	reason_text(r, "WRITE", &t->write, &r->write, why, sizeof(why));
	fprintf(f, "  --write-threshold %-5s %s\n",
		size_text(r->write.threshold, y), why);
}

/**
 * report_text() - the findings as a readable table
 * @f:	where to print
 * @r:	the report
 */
void report_text(FILE *f, const struct report *r)
{
	text_header(f, r);
	text_complete(f, r);
	text_messages(f, r);
	text_sizes(f, r);
	text_depth(f, r);
	text_shares(f, r);
	text_advice(f, r);
}

/**
 * json_str() - a JSON string, escaped
 * @f:	where to print
 * @s:	the text, or NULL for null
 */
static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/**
 * json_capture() - the "capture" and "completeness" members
 * @f:	where to print
 * @r:	the report
 */
static void json_capture(FILE *f, const struct report *r)
{
	const struct capture_stats *cs = &r->cap->st;
	const struct rs_stats *rs = r->rs;
	const struct walk_stats *ws = &r->w->ws;

	fprintf(f, "  \"capture\": {\"file\": ");
	json_str(f, r->path);
	fprintf(f, ", \"format\": \"%s\", \"link\": ", r->cap->format);
	json_str(f, capture_link_name(r->cap->linktype));
	fprintf(f,
		", \"packets\": %" PRIu64 ", \"tcp_segments\": %" PRIu64
		", \"seconds\": %.6f, \"snaplen\": %u, \"truncated\": %s, \"error\": ",
		cs->packets, cs->tcp, span_seconds(cs), cs->snaplen,
		r->broken && r->cap->cut ? "true" : "false");
	json_str(f, r->broken ? r->cap->err : NULL);
	fprintf(f, "},\n");
	fprintf(f,
		"  \"completeness\": {\"snapped_segments\": %" PRIu64
		", \"bytes_not_captured\": %" PRIu64
		", \"bytes_missing\": %" PRIu64
		", \"missing_stretches\": %" PRIu64
		", \"connections_missing_bytes\": %" PRIu64
		", \"short_packets\": %" PRIu64
		",\n    \"bytes_skipped_in_payloads\": %" PRIu64
		", \"framing_lost\": %" PRIu64 ", \"bytes_unparsed\": %" PRIu64
		", \"midstream_directions\": %" PRIu64
		", \"framer_gave_up\": %" PRIu64 ", \"framer_reason\": ",
		cs->snapped, rs->snapped_bytes, rs->lost_bytes, rs->lost_holes,
		rs->lost_conns, cs->short_hdr, ws->skipped_bytes, ws->sync_lost,
		ws->unparsed_bytes, rs->midstream, ws->opaque);
	json_str(f, ws->opaque_why);
	fprintf(f,
		",\n    \"duplicate_bytes\": %" PRIu64
		", \"out_of_order_segments\": %" PRIu64
		", \"stretches_given_up\": %" PRIu64
		",\n    \"connections_ended_early\": %" PRIu64
		", \"max_connections\": %lu"
		", \"connections_ended_idle\": %" PRIu64 "},\n",
		rs->dup_bytes, rs->ooo_segments, rs->given_up, rs->evicted,
		r->max_conns, rs->idle_ended);
}

/**
 * json_server() - connections, ports, dialects and negotiated sizes
 * @f:	where to print
 * @r:	the report
 */
static void json_server(FILE *f, const struct report *r)
{
	const struct tally *t = &r->w->tally;
	const char *sep = "";
	char d[16];

	fprintf(f, "  \"ports\": [");
	for (unsigned i = 0; i < r->nports; i++)
		fprintf(f, "%s%u", i ? ", " : "", r->ports[i]);
	fprintf(f, "],\n  \"connections\": %" PRIu64 ",\n  \"dialects\": {",
		t->smb_conns);
	for (unsigned i = 0; i <= TALLY_NDIALECTS; i++) {
		if (!t->dialects[i])
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, sep,
			dialect_label(i, d, sizeof(d)), t->dialects[i]);
		sep = ", ";
	}
	fprintf(f, "},\n  \"max_read_size\": %u, \"max_write_size\": %u,\n",
		t->max_read, t->max_write);
}

/**
 * json_direction() - one direction's messages per command and frames
 * @f:		where to print
 * @t:		the tally
 * @dir:	the direction
 */
static void json_direction(FILE *f, const struct tally *t, enum rs_dir dir)
{
	static const char *const frame_names[TALLY_NFRAMES] = {
		"encrypted", "compressed", "smb1", "netbios"
	};
	const char *sep = "";

	fprintf(f, "  \"%s\": {\"commands\": {",
		dir == RS_TO_SERVER ? "to_server" : "to_client");
	for (unsigned i = 0; i <= SMB2_NCOMMANDS; i++) {
		const struct msg_count *m = &t->cmd[dir][i];

		if (!m->count)
			continue;
		fprintf(f,
			"%s\n    \"%s\": {\"count\": %" PRIu64
			", \"bytes\": %" PRIu64 "}",
			sep, smb_command_name(i), m->count, m->bytes);
		sep = ",";
	}
	fprintf(f, "},\n    \"frames\": {");
	sep = "";
	for (unsigned i = 0; i < TALLY_NFRAMES; i++) {
		const struct msg_count *m = &t->frames[dir][i];

		fprintf(f,
			"%s\"%s\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64
			"}",
			sep, frame_names[i], m->count, m->bytes);
		sep = ", ";
	}
	fprintf(f, "}},\n");
}

/**
 * json_sizes() - a histogram's non-empty bins, and each threshold's share
 * @f:	where to print
 * @h:	the histogram
 */
static void json_sizes(FILE *f, const struct size_hist *h)
{
	const char *sep = "";
	char x[16];
	uint64_t n;

	fprintf(f, "\"sizes\": {");
	for (unsigned i = 0; i < TALLY_SIZE_BINS; i++) {
		if (!h->count[i])
			continue;
		fprintf(f,
			"%s\"%s\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64
			"}",
			sep, size_text(tally_bin_floor(i), x), h->count[i],
			h->bytes[i]);
		sep = ", ";
	}
	fprintf(f, "},\n    \"splice_share\": {");
	for (unsigned i = 0; i < ADVISE_NCANDIDATES; i++)
		fprintf(f, "%s\"%s\": %.4f", i ? ", " : "",
			size_text(advise_candidates[i], x),
			advise_share(h, advise_candidates[i], &n));
	fprintf(f, "}");
}

/**
 * json_classes() - the "read" and "write" members
 * @f:	where to print
 * @r:	the report
 */
static void json_classes(FILE *f, const struct report *r)
{
	const struct tally *t = &r->w->tally;
	uint64_t bytes, n = tally_total(&t->read, &bytes);
	char label[24];

	fprintf(f,
		"  \"read\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64
		", \"requests\": %" PRIu64 ", \"interim\": %" PRIu64
		", \"errors\": %" PRIu64 ",\n    ",
		n, bytes, t->read_requests, t->interim, t->read_errors);
	json_sizes(f, &t->read);
	fprintf(f,
		",\n    \"depth\": {\"max\": %" PRIu64
		", \"mean\": %.4f, \"histogram\": {",
		t->depth_max,
		t->read_requests
			? (double)t->depth_sum / (double)t->read_requests
			: 0.0);
	for (unsigned i = 0, first = 1; i < TALLY_DEPTH_BINS; i++) {
		if (!t->depth[i])
			continue;
		tally_depth_label(i, label, sizeof(label));
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", label,
			t->depth[i]);
		first = 0;
	}
	fprintf(f, "}}},\n");
	n = tally_total(&t->write, &bytes);
	fprintf(f,
		"  \"write\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64
		",\n    ",
		n, bytes);
	json_sizes(f, &t->write);
	fprintf(f, "},\n");
}

/**
 * json_calibration() - the "calibration" member, with --calibrate
 * @f:	where to print
 * @c:	the calibration
 */
static void json_calibration(FILE *f, const struct calibration *c)
{
	char x[16];

	fprintf(f,
		"  \"calibration\": {\"seconds\": %.2f, \"crossover\": \"%s\", \"points\": [",
		c->seconds, size_text(c->crossover, x));
	for (unsigned i = 0; i < c->n; i++)
		fprintf(f,
			"%s\n    {\"size\": \"%s\", \"copy_s_per_gib\": %.4f, \"splice_s_per_gib\": %.4f}",
			i ? "," : "", size_text(c->pt[i].size, x),
			c->pt[i].copy_ns * GIB_PER_KIB_NS,
			c->pt[i].splice_ns * GIB_PER_KIB_NS);
	fprintf(f, "]},\n");
}

/**
 * json_recommend() - the "recommend" member
 * @f:	where to print
 * @r:	the report
 */
static void json_recommend(FILE *f, const struct report *r)
{
	const struct tally *t = &r->w->tally;
	char x[16], y[16], z[16], basis[96], why[160];

	basis_text(r, basis, sizeof(basis));
	fprintf(f,
		"  \"recommend\": {\"read_threshold\": \"%s\", \"write_threshold\": \"%s\",\n"
		"    \"basis\": \"%s\", \"basis_text\": ",
		size_text(r->read.threshold, x),
		size_text(r->write.threshold, y),
		r->cal ? "calibrated" : "readme");
	json_str(f, basis);
	fprintf(f, ", \"calibration_error\": ");
	json_str(f, r->cal_failed);
	fprintf(f,
		", \"crossover\": \"%s\",\n    \"read_share\": %.4f, \"write_share\": %.4f,\n    \"read_reason\": ",
		size_text(r->crossover, z), r->read.share, r->write.share);
	reason_text(r, "READ", &t->read, &r->read, why, sizeof(why));
	json_str(f, why);
	fprintf(f, ",\n    \"write_reason\": ");
	reason_text(r, "WRITE", &t->write, &r->write, why, sizeof(why));
	json_str(f, why);
	fprintf(f, "}\n");
}

/**
 * report_json() - the findings as one JSON object
 * @f:	where to print
 * @r:	the report
 */
void report_json(FILE *f, const struct report *r)
{
	fprintf(f, "{\n  \"version\": \"%s\",\n", PACKAGE_VERSION);
	json_capture(f, r);
	json_server(f, r);
	json_direction(f, &r->w->tally, RS_TO_SERVER);
	json_direction(f, &r->w->tally, RS_TO_CLIENT);
	json_classes(f, r);
	if (r->cal)
		json_calibration(f, r->cal);
	json_recommend(f, r);
	fprintf(f, "}\n");
}
