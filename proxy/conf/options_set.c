// SPDX-License-Identifier: GPL-2.0-or-later
/* options_set.c - what each option does with its value
 *
 * Theory of operation: one apply function per kind of option, called
 * with the option's row (options_table.c) and the value, from the command
 * line or a config file alike. A function that sets a number reads its
 * limits from the row and states them, formatted from there, when a value
 * is refused; a generic one finds its setting through the row's offset,
 * and the words its refusal adds for one option (an example, what 0
 * means) through the row's hint. A bad value produces exactly one line
 * in the caller's buffer, naming the option (by the row's name, the only
 * one bad() takes), the value and what is expected. Nothing here logs,
 * exits or touches the system: what can only be checked against the
 * system (a namespace, a congestion control algorithm, a capability) is
 * checked when the listener opens.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/options_table.h"

/**
 * bad() - write the one-line complaint about an option value
 * @err:	buffer for the line
 * @errlen:	its size
 * @d:		the option's row, which names it: taking the row rather than
 *		a name means no apply function can spell the name again
 * @val:	the rejected value
 * @want:	what would have been accepted
 *
 * Return: OPT_BAD, so callers can return bad(...) directly.
 */
static enum opt_result bad(char *err, size_t errlen, const struct opt_def *d,
			   const char *val, const char *want)
{
	snprintf(err, errlen, "--%s '%s': %s", d->name, val, want);
	return OPT_BAD;
}

/**
 * field() - the setting a row's apply function sets
 * @d:	the row, whose @field is an offset into struct options or, for a
 *	listener's option, struct listen_opts
 * @o:	the process-wide settings
 * @l:	the listener's
 *
 * Return: the setting's address.
 */
static void *field(const struct opt_def *d, struct options *o,
		   struct listen_opts *l)
{
	return (char *)(d->scope == SCOPE_LISTENER ? (void *)l : (void *)o) +
	       d->field;
}

/**
 * bad_range() - the complaint about a number outside its row's range
 * @d:		the row, with @min and @max, and @hint if it adds words
 * @arg:	the rejected value
 * @what:	"count", "size" (written with K and M) or "prefix length"
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * Return: OPT_BAD.
 */
static enum opt_result bad_range(const struct opt_def *d, const char *arg,
				 const char *what, char *err, size_t errlen)
{
	char want[128], lo[32], hi[32];
	bool size = !strcmp(what, "size");

	opt_number_text(d->min, size, lo, sizeof(lo));
	opt_number_text(d->max, size, hi, sizeof(hi));
	snprintf(want, sizeof(want), "expected a %s from %s to %s%s%s", what,
		 lo, hi, d->hint ? d->hint : "", d->off ? ", or off" : "");
	return bad(err, errlen, d, arg, want);
}

#define ENDPOINT_WANT "expected HOST:PORT or [IPV6]:PORT that resolves"

/**
 * endpoint_want() - what to say of an endpoint that did not parse
 * @arg:	the value given
 *
 * Return: the expectation, naming the port when the port is the trouble
 * (99999 does not "fail to resolve").
 */
static const char *endpoint_want(const char *arg)
{
	const char *colon = strrchr(arg, ':');
	unsigned long p;
	char *end;

	if (colon && colon[1] >= '0' && colon[1] <= '9') {
		errno = 0;
		p = strtoul(colon + 1, &end, 10);
		if (!*end && (errno || p == 0 || p > 65535))
			return "expected a port from 1 to 65535";
	}
	return ENDPOINT_WANT;
}

/**
 * endpoint_bad() - the complaint of an endpoint that did not parse
 * @d:		its option
 * @arg:	the value given
 * @r:		parse_endpoint()'s result: -1 malformed, -2 not resolved
 * @err:	where to write the line
 * @errlen:	its size
 *
 * Return: OPT_BAD, or OPT_UNRESOLVED for a name that may resolve later.
 */
static enum opt_result endpoint_bad(const struct opt_def *d, const char *arg,
				    int r, char *err, size_t errlen)
{
	if (r != -2)
		return bad(err, errlen, d, arg, endpoint_want(arg));
	bad(err, errlen, d, arg,
	    "the name does not resolve now (exit status 1: under systemd the "
	    "service is tried again)");
	return OPT_UNRESOLVED;
}

enum opt_result opt_add_backend(const struct opt_def *d, struct options *o,
				struct listen_opts *l, const char *arg,
				char *err, size_t errlen)
{
	char want[64];
	bool quic;
	int r;

	if (l->nbackends == d->max) {
		snprintf(want, sizeof(want),
			 "at most %llu backends per listener", d->max);
		return bad(err, errlen, d, arg, want);
	}
	quic = !strncmp(arg, "quic:", 5);
	r = parse_endpoint(quic ? arg + 5 : arg, &l->backend[l->nbackends],
			   false);
	if (r)
		return endpoint_bad(d, arg, r, err, errlen);
	/* The text names the transport, in every line and label. */
	snprintf(l->backend[l->nbackends].text,
		 sizeof(l->backend[l->nbackends].text), "%s", arg);
	l->backend_quic[l->nbackends] = quic;
	l->nbackends++;
	return OPT_OK;
}

enum opt_result opt_set_mode(const struct opt_def *d, struct options *o,
			     struct listen_opts *l, const char *arg, char *err,
			     size_t errlen)
{
	if (!strcmp(arg, "smb"))
		l->mode = MODE_SMB;
	else if (!strcmp(arg, "tcp"))
		l->mode = MODE_TCP;
	else
		return bad(err, errlen, d, arg, "expected smb or tcp");
	return OPT_OK;
}

/**
 * opt_set_size() - a size in bytes, with K or M, within the row's limits
 * @d:		the row: @field says where, @min and @max the range, @hint
 *		what a refusal adds
 * @o:		the process-wide settings
 * @l:		the listener's
 * @arg:	the value
 * @err:	the complaint, if it is not a size or out of range
 * @errlen:	room in @err
 *
 * Return: OPT_OK or OPT_BAD.
 */
enum opt_result opt_set_size(const struct opt_def *d, struct options *o,
			     struct listen_opts *l, const char *arg, char *err,
			     size_t errlen)
{
	size_t sz;

	if (!parse_size(arg, &sz) && sz >= d->min && sz <= d->max) {
		*(size_t *)field(d, o, l) = sz;
		return OPT_OK;
	}
	return bad_range(d, arg, "size", err, errlen);
}

enum opt_result opt_set_count(const struct opt_def *d, struct options *o,
			      struct listen_opts *l, const char *arg, char *err,
			      size_t errlen)
{
	unsigned *v = field(d, o, l);

	if (d->off && !strcmp(arg, "off")) {
		*v = 0;
		return OPT_OK;
	}
	if (parse_count(arg, (unsigned)d->min, (unsigned)d->max, v))
		return bad_range(d, arg, "count", err, errlen);
	return OPT_OK;
}

enum opt_result opt_set_true(const struct opt_def *d, struct options *o,
			     struct listen_opts *l, const char *arg, char *err,
			     size_t errlen)
{
	*(bool *)field(d, o, l) = true;
	return OPT_OK;
}

enum opt_result opt_set_false(const struct opt_def *d, struct options *o,
			      struct listen_opts *l, const char *arg, char *err,
			      size_t errlen)
{
	*(bool *)field(d, o, l) = false;
	return OPT_OK;
}

enum opt_result opt_set_endpoint(const struct opt_def *d, struct options *o,
				 struct listen_opts *l, const char *arg,
				 char *err, size_t errlen)
{
	int r = parse_endpoint(arg, field(d, o, l), true);

	return r ? endpoint_bad(d, arg, r, err, errlen) : OPT_OK;
}

/**
 * opt_set_listen() - --listen: HOST:PORT for TCP, quic:HOST:PORT for SMB
 *		      over QUIC
 * @d:		the row
 * @o:		the process-wide settings
 * @l:		the listener's
 * @arg:	the value
 * @err:	the complaint
 * @errlen:	room in @err
 *
 * The transport is a prefix of the address, so that one key says where
 * and how a listener listens, and a reload that changes it makes a new
 * listener, as a new address does.
 *
 * Return: OPT_OK, OPT_BAD or OPT_UNRESOLVED.
 */
enum opt_result opt_set_listen(const struct opt_def *d, struct options *o,
			       struct listen_opts *l, const char *arg,
			       char *err, size_t errlen)
{
	bool quic = !strncmp(arg, "quic:", 5);
	int r = parse_endpoint(quic ? arg + 5 : arg, &l->listen, true);

	if (r)
		return endpoint_bad(d, arg, r, err, errlen);
	l->quic = quic;
	snprintf(l->listen.text, sizeof(l->listen.text), "%s", arg);
	return OPT_OK;
}

enum opt_result opt_set_threshold(const struct opt_def *d, struct options *o,
				  struct listen_opts *l, const char *arg,
				  char *err, size_t errlen)
{
	char want[96], hi[32];

	if (!parse_threshold(arg, field(d, o, l)))
		return OPT_OK;
	opt_number_text(d->max, true, hi, sizeof(hi));
	snprintf(want, sizeof(want),
		 "expected a size up to %s, e.g. 64K, or off", hi);
	return bad(err, errlen, d, arg, want);
}

enum opt_result opt_set_first_frame(const struct opt_def *d, struct options *o,
				    struct listen_opts *l, const char *arg,
				    char *err, size_t errlen)
{
	if (!strcmp(arg, "negotiate"))
		l->any_first_frame = false;
	else if (!strcmp(arg, "any"))
		l->any_first_frame = true;
	else
		return bad(err, errlen, d, arg, "expected negotiate or any");
	return OPT_OK;
}

enum opt_result opt_set_quic_retry(const struct opt_def *d, struct options *o,
				   struct listen_opts *l, const char *arg,
				   char *err, size_t errlen)
{
	if (!strcmp(arg, "auto"))
		l->quic_retry = QUIC_RETRY_AUTO;
	else if (!strcmp(arg, "always"))
		l->quic_retry = QUIC_RETRY_ALWAYS;
	else if (!strcmp(arg, "off"))
		l->quic_retry = QUIC_RETRY_OFF;
	else
		return bad(err, errlen, d, arg, "expected auto, always or off");
	return OPT_OK;
}

/**
 * add_quic_rule() - one more client certificate rule of a QUIC listener
 * @d:		the option's row, whose @max is the list's length
 * @list:	the list
 * @n:		how many it holds
 * @arg:	a SHA-256 in hex (colons and upper case taken), or
 *		"issuer:" and a distinguished name
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * A hash is kept as 64 lower-case hex digits, as ngq.c compares it.
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result add_quic_rule(const struct opt_def *d,
				     char (*list)[OPT_QUIC_RULE_LEN],
				     unsigned *n, const char *arg, char *err,
				     size_t errlen)
{
	char want[32], *out = list[*n];
	size_t k = 0;

	if (*n == d->max) {
		snprintf(want, sizeof(want), "at most %llu rules", d->max);
		return bad(err, errlen, d, arg, want);
	}
	if (!strncmp(arg, "issuer:", 7)) {
		if (!arg[7] || strlen(arg) >= OPT_QUIC_RULE_LEN)
			return bad(err, errlen, d, arg,
				   "expected issuer: and a distinguished name");
		snprintf(out, OPT_QUIC_RULE_LEN, "%s", arg);
		(*n)++;
		return OPT_OK;
	}
	for (const char *p = arg; *p && k <= 64; p++) {
		if (*p == ':')
			continue;
		if (!isxdigit((unsigned char)*p))
			break;
		out[k++] = (char)tolower((unsigned char)*p);
	}
	if (k != 64 || strspn(arg, "0123456789abcdefABCDEF:") != strlen(arg))
		return bad(
			err, errlen, d, arg,
			"expected a certificate's SHA-256 (64 hex digits) or issuer:DN");
	out[k] = 0;
	(*n)++;
	return OPT_OK;
}

enum opt_result opt_add_quic_allow(const struct opt_def *d, struct options *o,
				   struct listen_opts *l, const char *arg,
				   char *err, size_t errlen)
{
	return add_quic_rule(d, l->quic_allow, &l->nquic_allow, arg, err,
			     errlen);
}

enum opt_result opt_add_quic_deny(const struct opt_def *d, struct options *o,
				  struct listen_opts *l, const char *arg,
				  char *err, size_t errlen)
{
	return add_quic_rule(d, l->quic_deny, &l->nquic_deny, arg, err, errlen);
}

enum opt_result opt_set_check(const struct opt_def *d, struct options *o,
			      struct listen_opts *l, const char *arg, char *err,
			      size_t errlen)
{
	if (!strcmp(arg, "off"))
		l->check = CHECK_OFF;
	else if (!strcmp(arg, "tcp"))
		l->check = CHECK_TCP;
	else if (!strcmp(arg, "smb"))
		l->check = CHECK_SMB;
	else
		return bad(err, errlen, d, arg, "expected off, tcp or smb");
	return OPT_OK;
}

enum opt_result opt_set_netns(const struct opt_def *d, struct options *o,
			      struct listen_opts *l, const char *arg, char *err,
			      size_t errlen)
{
	if (parse_netns(arg, field(d, o, l), d->size))
		return bad(err, errlen, d, arg,
			   "expected a path, a name in /run/netns or a PID");
	return OPT_OK;
}

/**
 * add_network() - one more network on an allow list
 * @d:		the option's row, whose @max is the list's length
 * @list:	the list
 * @n:		how many it holds
 * @arg:	the network
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
static enum opt_result add_network(const struct opt_def *d, struct cidr *list,
				   unsigned *n, const char *arg, char *err,
				   size_t errlen)
{
	char want[32];

	if (*n == d->max) {
		snprintf(want, sizeof(want), "at most %llu networks", d->max);
		return bad(err, errlen, d, arg, want);
	}
	if (parse_cidr(arg, &list[*n]))
		return bad(
			err, errlen, d, arg,
			"expected a network such as 192.0.2.0/24, 2001:db8::/32 or an address");
	/* It would match nothing, and look as if it did. */
	if (parse_cidr_is_mapped(&list[*n]))
		return bad(
			err, errlen, d, arg,
			"IPv4-mapped clients are matched against IPv4 networks only: write the IPv4 network (e.g. 192.0.2.0/24)");
	(*n)++;
	return OPT_OK;
}

enum opt_result opt_add_allow(const struct opt_def *d, struct options *o,
			      struct listen_opts *l, const char *arg, char *err,
			      size_t errlen)
{
	return add_network(d, l->allow, &l->nallow, arg, err, errlen);
}

enum opt_result opt_add_proxy_from(const struct opt_def *d, struct options *o,
				   struct listen_opts *l, const char *arg,
				   char *err, size_t errlen)
{
	return add_network(d, l->proxy_from, &l->nproxy_from, arg, err, errlen);
}

enum opt_result opt_add_stats_allow(const struct opt_def *d, struct options *o,
				    struct listen_opts *l, const char *arg,
				    char *err, size_t errlen)
{
	return add_network(d, o->stats_allow, &o->nstats_allow, arg, err,
			   errlen);
}

enum opt_result opt_set_source_prefix6(const struct opt_def *d,
				       struct options *o, struct listen_opts *l,
				       const char *arg, char *err,
				       size_t errlen)
{
	if (parse_count(arg, (unsigned)d->min, (unsigned)d->max,
			&o->source_prefix6))
		return bad_range(d, arg, "prefix length", err, errlen);
	return OPT_OK;
}

enum opt_result opt_set_keepalive(const struct opt_def *d, struct options *o,
				  struct listen_opts *l, const char *arg,
				  char *err, size_t errlen)
{
	if (parse_keepalive(arg, &l->keepalive))
		return bad(
			err, errlen, d, arg,
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

/**
 * split_side() - a per-side value: VALUE, client:VALUE or backend:VALUE
 * @arg:	what was given
 * @side:	set, per side, to whether the value is for it
 *
 * Return: the value, or NULL if the side named is neither.
 */
static const char *split_side(const char *arg, bool side[SIDE_COUNT])
{
	const char *v = strchr(arg, ':') ? strchr(arg, ':') + 1 : arg;
	size_t side_len = v == arg ? 0 : (size_t)(v - arg - 1);

	side[SIDE_CLIENT] = side[SIDE_BACKEND] = !side_len;
	if (side_len == 6 && !strncmp(arg, "client", 6))
		side[SIDE_CLIENT] = true;
	else if (side_len == 7 && !strncmp(arg, "backend", 7))
		side[SIDE_BACKEND] = true;
	return side[SIDE_CLIENT] || side[SIDE_BACKEND] ? v : NULL;
}

enum opt_result opt_set_sockbuf(const struct opt_def *d, struct options *o,
				struct listen_opts *l, const char *arg,
				char *err, size_t errlen)
{
	bool side[SIDE_COUNT];
	const char *v = split_side(arg, side);
	char want[96];
	size_t n;

	snprintf(
		want, sizeof(want),
		"expected [client:|backend:] auto, kernel or SIZE, %llu to %llu bytes (e.g. 16M)",
		d->min, d->max);
	if (v && !strcmp(v, "auto"))
		n = SOCKBUF_AUTO;
	else if (v && !strcmp(v, "kernel"))
		n = SOCKBUF_KERNEL;
	else if (!v || parse_size(v, &n) || n < d->min || n > d->max)
		return bad(err, errlen, d, arg, want);
	for (unsigned s = 0; s < SIDE_COUNT; s++)
		if (side[s])
			l->sockbuf[s] = (unsigned)n;
	return OPT_OK;
}

enum opt_result opt_set_congestion(const struct opt_def *d, struct options *o,
				   struct listen_opts *l, const char *arg,
				   char *err, size_t errlen)
{
	bool side[SIDE_COUNT];
	const char *alg = split_side(arg, side);
	bool cli = side[SIDE_CLIENT], srv = side[SIDE_BACKEND];

	if (!alg || !cc_name_ok(alg))
		return bad(err, errlen, d, arg,
			   "expected ALG, client:ALG or backend:ALG, e.g. bbr");
	if (cli)
		strcpy(l->cc[SIDE_CLIENT], alg);
	if (srv)
		strcpy(l->cc[SIDE_BACKEND], alg);
	return OPT_OK;
}

enum opt_result opt_set_source(const struct opt_def *d, struct options *o,
			       struct listen_opts *l, const char *arg,
			       char *err, size_t errlen)
{
	if (parse_address(arg, &l->source))
		return bad(err, errlen, d, arg,
			   "expected a numeric IPv4 or IPv6 address");
	return OPT_OK;
}

enum opt_result opt_set_mptcp(const struct opt_def *d, struct options *o,
			      struct listen_opts *l, const char *arg, char *err,
			      size_t errlen)
{
	bool lst = !strcmp(arg, "listen"), be = !strcmp(arg, "backend");
	bool both = !strcmp(arg, "both"), off = !strcmp(arg, "off");

	if (!lst && !be && !both && !off)
		return bad(err, errlen, d, arg,
			   "expected listen, backend, both or off");
	l->mptcp[SIDE_CLIENT] = lst || both;
	l->mptcp[SIDE_BACKEND] = be || both;
	return OPT_OK;
}

enum opt_result opt_set_config(const struct opt_def *d, struct options *o,
			       struct listen_opts *l, const char *arg,
			       char *err, size_t errlen)
{
	if (!*arg || strlen(arg) >= sizeof(o->config))
		return bad(err, errlen, d, arg, "expected a file name");
	strcpy(o->config, arg);
	return OPT_OK;
}

enum opt_result opt_set_user(const struct opt_def *d, struct options *o,
			     struct listen_opts *l, const char *arg, char *err,
			     size_t errlen)
{
	if (!*arg || strlen(arg) >= sizeof(o->user))
		return bad(err, errlen, d, arg, "expected a user name");
	strcpy(o->user, arg);
	return OPT_OK;
}

/**
 * opt_set_text() - a setting that is a name or a path, stored as given
 * @d:		the row: @field and @size say where and how long at most
 * @o:		the process-wide settings
 * @l:		the listener's
 * @arg:	the value
 * @err:	the complaint, if it is empty or too long
 * @errlen:	room in @err
 *
 * Return: OPT_OK or OPT_BAD.
 */
enum opt_result opt_set_text(const struct opt_def *d, struct options *o,
			     struct listen_opts *l, const char *arg, char *err,
			     size_t errlen)
{
	char want[64];

	if (!*arg || strlen(arg) >= d->size) {
		snprintf(want, sizeof(want),
			 "expected a non-empty value shorter than %zu bytes",
			 d->size);
		return bad(err, errlen, d, arg, want);
	}
	strcpy(field(d, o, l), arg);
	return OPT_OK;
}

enum opt_result opt_set_trace(const struct opt_def *d, struct options *o,
			      struct listen_opts *l, const char *arg, char *err,
			      size_t errlen)
{
	char want[64];

	if (!*arg || strlen(arg) >= sizeof(o->trace)) {
		snprintf(want, sizeof(want),
			 "expected a file name shorter than %zu bytes",
			 sizeof(o->trace));
		return bad(err, errlen, d, arg, want);
	}
	strcpy(o->trace, arg);
	return OPT_OK;
}

enum opt_result opt_set_trace_max(const struct opt_def *d, struct options *o,
				  struct listen_opts *l, const char *arg,
				  char *err, size_t errlen)
{
	size_t sz;

	if (!strcmp(arg, "off")) {
		o->trace_max = 0;
		return OPT_OK;
	}
	if (parse_size(arg, &sz) || sz < d->min) {
		char want[96], lo[32];

		opt_number_text(d->min, true, lo, sizeof(lo));
		snprintf(want, sizeof(want),
			 "expected a size of %s or more, or off", lo);
		return bad(err, errlen, d, arg, want);
	}
	o->trace_max = sz;
	return OPT_OK;
}

/**
 * opt_set_seconds() - a timeout, in seconds that may have a fraction
 * @d:		the row: @field says where, @positive whether 0 is
 *		refused, @off whether "off" is taken for 0, @hint what
 *		a refusal adds
 * @o:		the process-wide settings
 * @l:		the listener's
 * @arg:	the value
 * @err:	the complaint, if it is not a number of seconds or is 0
 *		where @positive
 * @errlen:	room in @err
 *
 * Every timeout is this one function, so its refusal is composed from
 * the row: when 0 is accepted and "off" is too, both mean the same, and
 * the complaint says so.
 *
 * Return: OPT_OK or OPT_BAD.
 */
enum opt_result opt_set_seconds(const struct opt_def *d, struct options *o,
				struct listen_opts *l, const char *arg,
				char *err, size_t errlen)
{
	double *v = field(d, o, l);
	char want[128];

	if (d->off && !strcmp(arg, "off")) {
		*v = 0;
		return OPT_OK;
	}
	if (!parse_seconds(arg, v) && (!d->positive || *v > 0))
		return OPT_OK;
	snprintf(want, sizeof(want), "expected seconds%s%s%s",
		 d->positive ? " greater than 0" : "", d->hint ? d->hint : "",
		 !d->off       ? ""
		 : d->positive ? ", or off"
			       : ", or off (0 is off too)");
	return bad(err, errlen, d, arg, want);
}

enum opt_result opt_set_verbose(const struct opt_def *d, struct options *o,
				struct listen_opts *l, const char *arg,
				char *err, size_t errlen)
{
	o->verbose++;
	return OPT_OK;
}

enum opt_result opt_show_help(const struct opt_def *d, struct options *o,
			      struct listen_opts *l, const char *arg, char *err,
			      size_t errlen)
{
	options_usage(stdout);
	return OPT_EXIT;
}

enum opt_result opt_show_version(const struct opt_def *d, struct options *o,
				 struct listen_opts *l, const char *arg,
				 char *err, size_t errlen)
{
	printf("smbsplice %s\n", PACKAGE_VERSION);
	return OPT_EXIT;
}

/**
 * opt_same_stats() - do two settings serve metrics at one address
 * @a:	the settings in force
 * @b:	the ones just read
 *
 * Return: true if they do (the addresses as resolved, not as written).
 */
bool opt_same_stats(const struct options *a, const struct options *b)
{
	return a->stats.len == b->stats.len &&
	       !memcmp(&a->stats.addr, &b->stats.addr, b->stats.len);
}

/**
 * opt_same_stats_allow() - do two settings let the same networks scrape
 * @a:	the settings in force
 * @b:	the ones just read
 *
 * Return: true if their lists are the same, in the same order.
 */
bool opt_same_stats_allow(const struct options *a, const struct options *b)
{
	return a->nstats_allow == b->nstats_allow &&
	       !memcmp(a->stats_allow, b->stats_allow,
		       b->nstats_allow * sizeof(b->stats_allow[0]));
}

/**
 * opt_same_user() - do two settings run as the same user
 * @a:	the settings in force
 * @b:	the ones just read
 *
 * Return: true if they name the same one.
 */
bool opt_same_user(const struct options *a, const struct options *b)
{
	return !strcmp(a->user, b->user);
}

/**
 * opt_same_trace() - do two settings trace to the same file
 * @a:	the settings in force
 * @b:	the ones just read
 *
 * Return: true if they name the same one.
 */
bool opt_same_trace(const struct options *a, const struct options *b)
{
	return !strcmp(a->trace, b->trace);
}
