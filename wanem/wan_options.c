// SPDX-License-Identifier: GPL-2.0-or-later
/* wan_options.c - smbsplice-wanem's command line, and the control file
 * SIGHUP re-reads
 *
 * Theory of operation: one table of options serves both the command line
 * and the control file, so the two cannot drift apart. An option is
 * "--name VALUE" or "--name=VALUE"; in the control file the leading dashes
 * may be left out, any number of options may share a line, and '#' starts
 * a comment.
 *
 * The path options (delay, jitter, reorder, loss, burst, rate, queue) take
 * one value for both directions or two, A to B then B to A, split by a
 * slash: "--delay 20/30". Only they may appear in the control file; what
 * sizes memory or names devices is fixed at start.
 *
 * A reload starts from the command line's settings and applies the file
 * over them, so an empty file restores the command line: writing
 * "loss 100" and sending SIGHUP cuts the path, and emptying the file and
 * sending SIGHUP again brings it back. A file that does not parse changes
 * nothing, and says why in one line.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wan_options.h"

#define MS_MAX	      3600000.0 /* an hour: anything longer is a typo */
#define RATE_MAX      1e6	/* Mbit/s: a terabit */
#define QUEUE_MAX     1000000u
#define QUEUE_DEFAULT 1000u
#define MTU_MIN	      68u
#define MTU_MAX	      65535u
#define SLAB_BYTES    (64u << 20) /* default memory of one direction */
#define LIMIT_MAX     8192u	  /* default packets of one direction */
#define CONTROL_MAX   (64u << 10)
#define MAX_TOKENS    256

enum opt_id {
	O_A,
	O_B,
	O_DELAY,
	O_JITTER,
	O_REORDER,
	O_LOSS,
	O_BURST,
	O_RATE,
	O_QUEUE,
	O_LIMIT,
	O_MTU,
	O_CONTROL,
	O_SEED,
	O_HELP,
	O_VERSION,
};

/**
 * struct opt - one option
 * @name:	its long name
 * @arg:	its value's name in --help, NULL for a flag
 * @path:	a path option, allowed in the control file
 * @help:	one line for --help
 */
struct opt {
	const char *name, *arg;
	bool path;
	const char *help;
};

static const struct opt opts[] = {
	[O_A] = { "a", "NETNS:IFNAME", false,
		  "side A: a tun device made in namespace NETNS" },
	[O_B] = { "b", "NETNS:IFNAME", false,
		  "side B: likewise (NETNS empty: its own)" },
	[O_DELAY] = { "delay", "MS[/MS]", true, "one-way delay (0)" },
	[O_JITTER] = { "jitter", "MS[/MS]", true,
		       "delay varies by up to this either way (0)" },
	[O_REORDER] = { "reorder", NULL, true,
			"let jitter reorder packets (it does not by default)" },
	[O_LOSS] = { "loss", "PCT[/PCT]", true, "independent random loss (0)" },
	[O_BURST] = { "burst", "P,R[,H[,K]][/...]", true,
		      "Gilbert-Elliott loss, percentages (off)" },
	[O_RATE] = { "rate", "MBIT[/MBIT]", true,
		     "bottleneck rate in Mbit/s, 0 for none (0)" },
	[O_QUEUE] = { "queue", "PACKETS[/PACKETS]", true,
		      "bottleneck queue, tail drop beyond (1000, or --limit)" },
	[O_LIMIT] = { "limit", "PACKETS", false,
		      "packets held per direction, queue and delay (64 MiB worth, 8192 at most)" },
	[O_MTU] = { "mtu", "BYTES", false, "MTU of both tun devices (1500)" },
	[O_CONTROL] = { "control", "FILE", false,
			"path options SIGHUP reads over the command line's" },
	[O_SEED] = { "seed", "N", false, "seed of the loss and jitter draws" },
	[O_HELP] = { "help", NULL, false, "this text" },
	[O_VERSION] = { "version", NULL, false, "the version" },
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

/**
 * fail() - say what is wrong with a value, in @err
 * @err:	the buffer
 * @errlen:	its size
 * @fmt:	printf format
 *
 * Return: -1, for the caller to return.
 */
static int __attribute__((format(printf, 3, 4)))
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/**
 * number() - a whole string as a finite number within bounds
 * @s:		the text
 * @lo:		the least allowed
 * @hi:		the most allowed
 * @out:	the number
 *
 * Return: 0, or -1 if @s is not such a number.
 */
static int number(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/**
 * burst_parse() - P,R[,H[,K]] as percentages
 * @s:		the text
 * @b:		the model
 *
 * Return: 0, or -1 if @s is not such a list.
 */
static int burst_parse(const char *s, struct burst *b)
{
	double v[4] = { 0, 0, 100, 0 };
	char buf[128], *save = NULL, *tok;
	unsigned n = 0;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == 4 || number(tok, 0, 100, &v[n]))
			return -1;
		n++;
	}
	if (n < 2)
		return -1;
	*b = (struct burst){ .on = true,
			     .p = v[0] / 100,
			     .r = v[1] / 100,
			     .h = v[2] / 100,
			     .k = v[3] / 100 };
	return 0;
}

/**
 * path_value() - one direction's value of a path option
 * @id:		the option
 * @s:		the text
 * @pc:		the direction's settings
 *
 * Return: 0, or -1 if @s is not a value of @id.
 */
static int path_value(enum opt_id id, const char *s, struct path_conf *pc)
{
	double v;

	switch (id) {
	case O_DELAY:
	case O_JITTER:
		if (number(s, 0, MS_MAX, &v))
			return -1;
		*(id == O_DELAY ? &pc->delay_ns : &pc->jitter_ns) =
			(uint64_t)llround(v * 1e6);
		return 0;
	case O_LOSS:
		if (number(s, 0, 100, &v))
			return -1;
		pc->loss = v / 100;
		return 0;
	case O_BURST:
		if (!strcmp(s, "off") || !strcmp(s, "0")) {
			pc->burst.on = false;
			return 0;
		}
		return burst_parse(s, &pc->burst);
	case O_RATE:
		if (number(s, 0, RATE_MAX, &v))
			return -1;
		pc->rate_bps = v * 1e6;
		return 0;
	case O_QUEUE:
		if (number(s, 1, QUEUE_MAX, &v) || v != floor(v))
			return -1;
		pc->queue = (unsigned)v;
		return 0;
	default:
		return -1;
	}
}

/**
 * endpoint() - NETNS:IFNAME into a namespace path and a device name
 * @s:		the text; the name follows the last colon
 * @ns:		the path: "" (the program's own), @s's NETNS if it
 *		holds a slash, else /run/netns/NETNS
 * @ifname:	the device name
 *
 * Return: 0, or -1 if @s is not of that form.
 */
static int endpoint(const char *s, char ns[PATH_MAX], char ifname[IFNAMSIZ])
{
	const char *colon = strrchr(s, ':');
	size_t nslen;

	if (!colon || !colon[1] || strlen(colon + 1) >= IFNAMSIZ ||
	    strchr(colon + 1, '/'))
		return -1;
	nslen = (size_t)(colon - s);
	if (nslen >= PATH_MAX - sizeof("/run/netns/"))
		return -1;
	if (!nslen)
		ns[0] = '\0';
	else if (memchr(s, '/', nslen))
		snprintf(ns, PATH_MAX, "%.*s", (int)nslen, s);
	else
		snprintf(ns, PATH_MAX, "/run/netns/%.*s", (int)nslen, s);
	strcpy(ifname, colon + 1);
	return 0;
}

/**
 * apply() - set one option
 * @c:		the settings
 * @id:		the option
 * @val:	its value (NULL for a flag)
 * @err:	for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int apply(struct wan_conf *c, enum opt_id id, const char *val, char *err,
		 size_t errlen)
{
	const struct opt *o = &opts[id];
	const char *slash;
	char first[128], *end;
	double v;

	if (o->path && o->arg) {
		struct path_conf ab = c->dir[DIR_AB], ba = c->dir[DIR_BA];

		slash = strchr(val, '/');
		if (!slash) {
			if (path_value(id, val, &ab) ||
			    path_value(id, val, &ba))
				goto bad;
		} else {
			if ((size_t)(slash - val) >= sizeof(first) ||
			    strchr(slash + 1, '/'))
				goto bad;
			snprintf(first, sizeof(first), "%.*s",
				 (int)(slash - val), val);
			if (path_value(id, first, &ab) ||
			    path_value(id, slash + 1, &ba))
				goto bad;
		}
		c->dir[DIR_AB] = ab;
		c->dir[DIR_BA] = ba;
		return 0;
	}
	switch (id) {
	case O_A:
	case O_B:
		if (endpoint(val, c->ns[id - O_A], c->ifname[id - O_A]))
			goto bad;
		return 0;
	case O_REORDER:
		c->reorder = true;
		return 0;
	case O_LIMIT:
		if (number(val, 1, QUEUE_MAX, &v) || v != floor(v))
			goto bad;
		c->limit = (unsigned)v;
		return 0;
	case O_MTU:
		if (number(val, MTU_MIN, MTU_MAX, &v) || v != floor(v))
			goto bad;
		c->mtu = (unsigned)v;
		return 0;
	case O_CONTROL:
		c->control = val;
		return 0;
	case O_SEED:
		/* Whole, not through a double: every seed logged repeats. */
		errno = 0;
		c->seed = strtoull(val, &end, 10);
		if (end == val || *end || errno || *val == '-')
			goto bad;
		c->seeded = true;
		return 0;
	default:
		return 0;
	}
bad:
	return fail(
		err, errlen, "--%s: '%s' is not %s%s", o->name, val, o->arg,
		o->path ? " (one value for both directions, or A-to-B/B-to-A)"
			: "");
}

/**
 * lookup() - the option a word names
 * @word:	"--name", "--name=value", or in the control file "name"
 * @bare:	the dashes may be left out
 * @val:	set to the text after '=', or NULL
 *
 * Return: the option, or -1.
 */
static int lookup(char *word, bool bare, const char **val)
{
	char *eq;

	if (!strncmp(word, "--", 2))
		word += 2;
	else if (!bare)
		return -1;
	eq = strchr(word, '=');
	*val = NULL;
	if (eq) {
		*eq = '\0';
		*val = eq + 1;
	}
	for (unsigned i = 0; i < NOPTS; i++)
		if (!strcmp(word, opts[i].name))
			return (int)i;
	if (eq)
		*eq = '=';
	return -1;
}

/**
 * apply_words() - apply a list of options
 * @c:		the settings
 * @n:		how many words
 * @w:		the words (changed: an '=' is cut)
 * @in_file:	they come from the control file: only path options, and
 *		the dashes may be left out
 * @seen:	if not NULL, set to the last of --help or --version seen
 * @err:	for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int apply_words(struct wan_conf *c, int n, char **w, bool in_file,
		       int *seen, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++) {
		const char *val;
		int id = lookup(w[i], in_file, &val);

		if (id < 0)
			return fail(err, errlen, "unknown option '%s'%s", w[i],
				    in_file ? "" : " (see --help)");
		if (in_file && !opts[id].path)
			return fail(
				err, errlen,
				"--%s is fixed at start; the control file takes only delay, jitter, reorder, loss, burst, rate and queue",
				opts[id].name);
		if (opts[id].arg && !val) {
			if (i + 1 == n)
				return fail(err, errlen, "--%s needs %s",
					    opts[id].name, opts[id].arg);
			val = w[++i];
		} else if (!opts[id].arg && val) {
			return fail(err, errlen, "--%s takes no value",
				    opts[id].name);
		}
		if ((id == O_HELP || id == O_VERSION) && seen)
			*seen = id;
		if (apply(c, (enum opt_id)id, val, err, errlen))
			return -1;
	}
	return 0;
}

/**
 * usage() - the --help text, on standard output
 */
static void usage(void)
{
	printf("Usage: smbsplice-wanem --a NETNS:IFNAME --b NETNS:IFNAME [OPTION]...\n"
	       "Forward IP packets between two tun devices with a WAN's delay, jitter,\n"
	       "loss and bottleneck. Path options take VALUE for both directions or\n"
	       "A-to-B/B-to-A. SIGHUP re-reads --control; SIGUSR1 prints counters.\n\n");
	for (unsigned i = 0; i < NOPTS; i++) {
		char left[64];

		snprintf(left, sizeof(left), "--%s%s%s", opts[i].name,
			 opts[i].arg ? " " : "",
			 opts[i].arg ? opts[i].arg : "");
		printf("  %-28s %s\n", left, opts[i].help);
	}
}

/**
 * defaults() - the settings before any option
 * @c:	the settings
 */
static void defaults(struct wan_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu = 1500;
}

/**
 * wan_options_parse() - the command line
 * @argc:	as main() has it
 * @argv:	likewise
 * @c:		the settings
 *
 * A mistake is one line on standard error.
 *
 * Return: WAN_RUN, or what to exit with after --help, --version or a
 * mistake.
 */
enum wan_opt_result wan_options_parse(int argc, char **argv, struct wan_conf *c)
{
	char err[256];
	int seen = -1;
	unsigned slot;

	defaults(c);
	if (apply_words(c, argc - 1, argv + 1, false, &seen, err,
			sizeof(err))) {
		fprintf(stderr, "smbsplice-wanem: %s\n", err);
		return WAN_EXIT_USAGE;
	}
	if (seen == O_HELP) {
		usage();
		return WAN_EXIT_OK;
	}
	if (seen == O_VERSION) {
		printf("smbsplice-wanem %s\n", PACKAGE_VERSION);
		return WAN_EXIT_OK;
	}
	if (!c->ifname[0][0] || !c->ifname[1][0]) {
		fprintf(stderr,
			"smbsplice-wanem: --a and --b are both needed (see --help)\n");
		return WAN_EXIT_USAGE;
	}
	if (!strcmp(c->ns[0], c->ns[1]) &&
	    !strcmp(c->ifname[0], c->ifname[1])) {
		fprintf(stderr,
			"smbsplice-wanem: --a and --b name the same device\n");
		return WAN_EXIT_USAGE;
	}
	if (!c->limit) {
		slot = c->mtu;
		c->limit = SLAB_BYTES / slot < LIMIT_MAX ? SLAB_BYTES / slot
							 : LIMIT_MAX;
	}
	for (int d = 0; d < NDIRS; d++) {
		/* Not given: QUEUE_DEFAULT, or all --limit holds if less. */
		if (!c->dir[d].queue)
			c->dir[d].queue = QUEUE_DEFAULT < c->limit
						  ? QUEUE_DEFAULT
						  : c->limit;
		if (c->dir[d].queue > c->limit) {
			fprintf(stderr,
				"smbsplice-wanem: --queue %u exceeds --limit %u, which holds the queue too: raise --limit\n",
				c->dir[d].queue, c->limit);
			return WAN_EXIT_USAGE;
		}
	}
	return WAN_RUN;
}

/**
 * wan_options_control() - the control file over the command line's settings
 * @path:	the file
 * @base:	the command line's settings
 * @out:	the new settings (written only on success)
 * @err:	for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set and @out untouched.
 */
int wan_options_control(const char *path, const struct wan_conf *base,
			struct wan_conf *out, char *err, size_t errlen)
{
	static char text[CONTROL_MAX + 1];
	char *words[MAX_TOKENS], *p, *save = NULL;
	struct wan_conf next = *base;
	size_t len;
	int n = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	len = fread(text, 1, CONTROL_MAX + 1, f);
	fclose(f);
	if (len > CONTROL_MAX)
		return fail(err, errlen, "%s is over %u bytes", path,
			    CONTROL_MAX);
	text[len] = '\0';
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#'), *wsave = NULL;

		if (hash)
			*hash = '\0';
		for (p = strtok_r(line, " \t\r", &wsave); p;
		     p = strtok_r(NULL, " \t\r", &wsave)) {
			if (n == MAX_TOKENS)
				return fail(err, errlen, "%s: over %d words",
					    path, MAX_TOKENS);
			words[n++] = p;
		}
	}
	if (apply_words(&next, n, words, true, NULL, err, errlen))
		return -1;
	for (int d = 0; d < NDIRS; d++)
		if (next.dir[d].queue > next.limit)
			return fail(
				err, errlen,
				"--queue %u exceeds --limit %u, fixed at start",
				next.dir[d].queue, next.limit);
	*out = next;
	return 0;
}

/**
 * wan_options_describe() - one direction's settings, for the log
 * @c:		the settings
 * @dir:	DIR_AB or DIR_BA
 * @buf:	for the text
 * @len:	its size
 */
void wan_options_describe(const struct wan_conf *c, int dir, char *buf,
			  size_t len)
{
	const struct path_conf *pc = &c->dir[dir];
	int n;

	n = snprintf(buf, len, "delay %.3f ms, jitter %.3f ms%s, loss %g%%",
		     pc->delay_ns / 1e6, pc->jitter_ns / 1e6,
		     c->reorder && pc->jitter_ns ? " (reordering)" : "",
		     pc->loss * 100);
	if (n > 0 && (size_t)n < len && pc->burst.on)
		n += snprintf(buf + n, len - n, ", burst %g%%,%g%%,%g%%,%g%%",
			      pc->burst.p * 100, pc->burst.r * 100,
			      pc->burst.h * 100, pc->burst.k * 100);
	if (n > 0 && (size_t)n < len) {
		if (pc->rate_bps)
			snprintf(buf + n, len - n,
				 ", rate %g Mbit/s, queue %u packets",
				 pc->rate_bps / 1e6, pc->queue);
		else
			snprintf(buf + n, len - n, ", rate unlimited");
	}
}
