// SPDX-License-Identifier: GPL-2.0-or-later
/* options.c - the options: read from the command line and a config file
 *
 * Theory of operation: the options are rows of one table
 * (options_table.c), and each row's apply function (options_set.c) takes
 * a value. This file walks the command line with getopt_long(), applies
 * what config_file_read() found in a config file entry by entry, and checks
 * what no single option can: a listener's options together, and the
 * listeners together.
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

#include "conf/config_file.h"
#include "conf/options_table.h"

#define OPT_COUNT OPT_TABLE_LEN

/**
 * options_listener_defaults() - fill a listener's settings with the defaults
 * @l:		settings to reset
 * @name:	its name
 */
void options_listener_defaults(struct listen_opts *l, const char *name)
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
	l->check_interval = OPT_DEFAULT_CHECK_INTVL;
	l->check_rise = OPT_DEFAULT_CHECK_RISE;
	l->check_fall = OPT_DEFAULT_CHECK_FALL;
	l->th.min[SMB_CLASS_READ] = OPT_DEFAULT_THRESHOLD;
	l->th.min[SMB_CLASS_WRITE] = OPT_DEFAULT_THRESHOLD;
	/* Splicing encrypted frames cost throughput in every bench run. */
	l->th.min[SMB_CLASS_OTHER] = SMB_THRESHOLD_OFF;
	l->keepalive =
		(struct keepalive){ OPT_DEFAULT_KA_IDLE, OPT_DEFAULT_KA_INTVL,
				    OPT_DEFAULT_KA_CNT };
	l->sockbuf[SIDE_CLIENT] = l->sockbuf[SIDE_BACKEND] = SOCKBUF_AUTO;
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
	if (l->accept_proxy != (l->nproxy_from > 0)) {
		snprintf(
			err, errlen,
			l->accept_proxy
				? "listener %s: accept-proxy needs proxy-from: the networks of the gateways whose PROXY headers are to be believed"
				: "listener %s: proxy-from does nothing without accept-proxy",
			l->name);
		return OPT_BAD;
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
 * options_check_config() - what no single option can check
 * @c:		the configuration
 * @inherited:	listening sockets were handed over (socket activation)
 * @err:	buffer for the complaint
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
enum opt_result options_check_config(const struct config *c, bool inherited,
				     char *err, size_t errlen)
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
		/* The helper binds only to a connected peer's address, which
		 * under accept-proxy is the gateway's. */
		if (*c->o.user && c->ls[i].transparent &&
		    c->ls[i].accept_proxy) {
			snprintf(
				err, errlen,
				"listener %s: transparent with accept-proxy cannot run under user: the privileged helper binds only to the address a socket is connected from, not to one a PROXY header names",
				c->ls[i].name);
			return OPT_BAD;
		}
		/* The helper's proof of an accepted client is the SYN the
		 * kernel saved on it, which MPTCP sockets do not keep. */
		if (*c->o.user && c->ls[i].transparent &&
		    c->ls[i].mptcp[SIDE_CLIENT]) {
			snprintf(
				err, errlen,
				"listener %s: transparent with mptcp on the listen side cannot run under user: the privileged helper must see the SYN each client sent, which MPTCP sockets do not keep; drop one of the three",
				c->ls[i].name);
			return OPT_BAD;
		}
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
 * Return: OPT_OK, OPT_BAD, or OPT_UNRESOLVED (a name that may resolve later).
 */
enum opt_result options_apply(struct config *c, struct listen_opts *l,
			      const char *key, const char *value, bool *seen,
			      char *err, size_t errlen)
{
	enum opt_result r;
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
	r = d->apply(d, &c->o, l, value, inner, sizeof(inner));
	if (r != OPT_OK) {
		/* The option's words say "--key"; a file says "key". A '#'
		 * starts a comment only at the start of a line. */
		snprintf(err, errlen, "%s%s",
			 inner[0] == '-' && inner[1] == '-' ? inner + 2 : inner,
			 strchr(value, '#')
				 ? "; a comment after a value starts "
				   "with ';', not '#'"
				 : "");
		return r == OPT_UNRESOLVED ? r : OPT_BAD;
	}
	return OPT_OK;
}

/**
 * struct file_state - where options_load() is in a config file
 * @l:		the current section's listener, NULL in [global]
 * @seen:	keys given in the current section
 * @global:	[global] was given
 */
struct file_state {
	struct listen_opts *l;
	bool seen[OPT_COUNT];
	bool global;
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
 * listener, named by the section. Each may be given once: a second
 * [global] would silently undo what the first set.
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
		if (fs->global) {
			snprintf(
				err, errlen,
				"[global] appears twice; put every process-wide setting in one [global] section");
			return OPT_BAD;
		}
		fs->global = true;
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
	options_listener_defaults(fs->l, name);
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
 * config_file_read() says what the file says; each entry is applied here in
 * order, and the first that fails stops the load. A line the read stopped
 * at comes after every entry read, so the complaint is about whichever
 * came first in the file. Nothing is half applied: the caller gets a whole
 * configuration or an error.
 *
 * Return: OPT_OK, OPT_BAD, or OPT_UNRESOLVED (a name that may resolve later).
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
	stop = config_file_read(path, &t, err, errlen);
	for (unsigned i = 0; stop >= 0 && r == OPT_OK && i < t.n; i++) {
		const struct config_entry *e = &t.e[i];

		*why = '\0';
		r = e->key ? options_apply(c, fs.l, e->key, e->value, fs.seen,
					   why, sizeof(why))
			   : file_section(c, &fs, e->section, why, sizeof(why));
		if (r != OPT_OK)
			snprintf(err, errlen, "%s:%d: %s", path, e->line, why);
	}
	config_file_free_text(&t);
	if (!stop && r == OPT_UNRESOLVED)
		return r;
	if (stop || r != OPT_OK)
		return OPT_BAD;
	/* The file names itself, so that a reload reads it again. */
	snprintf(c->o.config, sizeof(c->o.config), "%s", path);
	return OPT_OK;
}

/**
 * struct cli - what the command line said
 * @o:		its process-wide settings, over the defaults
 * @given:	the process-wide options it gave, in order, to apply again
 *		over a config file's [global]
 * @ngiven:	how many
 * @listener:	it gave a listener's option
 */
struct cli {
	struct options o;
	struct {
		const struct opt_def *d;
		const char *arg;
	} given[64];
	unsigned ngiven;
	bool listener;
};

/**
 * getopt_tables() - getopt_long()'s view of the option table
 * @longs:	OPT_COUNT + 1 entries, filled
 * @shorts:	3 * OPT_COUNT + 2 bytes, filled: ":" first, so that a
 *		missing value is told from an unknown option
 */
static void getopt_tables(struct option *longs, char *shorts)
{
	char *sp = shorts;

	*sp++ = ':';
	for (unsigned i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &opt_table[i];

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
	longs[OPT_COUNT] = (struct option){ 0 };
	*sp = '\0';
}

/**
 * parse_argv() - apply the command line's options
 * @cli:	filled: the process-wide settings and what was given
 * @l:		the command line's listener, "main"
 * @argc:	argument count
 * @argv:	arguments
 * @err:	buffer for the one-line complaint
 * @errlen:	its size
 *
 * Return: OPT_OK, OPT_EXIT, OPT_BAD or OPT_UNRESOLVED.
 */
static enum opt_result parse_argv(struct cli *cli, struct listen_opts *l,
				  int argc, char **argv, char *err,
				  size_t errlen)
{
	struct option longs[OPT_COUNT + 1];
	char shorts[3 * OPT_COUNT + 2];
	bool seen[OPT_COUNT] = { false };
	const struct opt_def *d;
	enum opt_result r;
	int ci, idx;

	getopt_tables(longs, shorts);
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
		cli->listener |= d->scope == SCOPE_LISTENER;
		if (d->scope == SCOPE_PROCESS && cli->ngiven < 64)
			cli->given[cli->ngiven++] =
				(typeof(cli->given[0])){ d, optarg };
		r = d->apply(d, &cli->o, l, optarg, err, errlen);
		if (r != OPT_OK)
			return r;
	}
	if (optind < argc) {
		snprintf(err, errlen,
			 "unexpected argument '%s'; see smbsplice --help",
			 argv[optind]);
		return OPT_BAD;
	}
	return OPT_OK;
}

/**
 * apply_given() - the command line's process-wide options, once more,
 *		   over a config file's [global]
 * @c:		the configuration, as the file set it
 * @cli:	what the command line gave
 *
 * A list given on the command line replaces the file's. Each value was
 * applied once already, so none fails now.
 */
static void apply_given(struct config *c, const struct cli *cli)
{
	char ignored[8];

	for (unsigned i = 0; i < cli->ngiven; i++)
		if (cli->given[i].d->apply == opt_add_stats_allow)
			c->o.nstats_allow = 0;
	for (unsigned i = 0; i < cli->ngiven; i++)
		cli->given[i].d->apply(cli->given[i].d, &c->o, NULL,
				       cli->given[i].arg, ignored,
				       sizeof(ignored));
}

/**
 * config_derive() - the listener fields that follow from other options
 * @c:	the configuration
 */
static void config_derive(struct config *c)
{
	for (unsigned i = 0; i < c->nls; i++)
		c->ls[i].save_syn = *c->o.user && c->ls[i].transparent;
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
 * Return: OPT_OK, OPT_EXIT, OPT_BAD or OPT_UNRESOLVED.
 */
enum opt_result options_parse(struct config *c, int argc, char **argv,
			      bool inherited, char *err, size_t errlen)
{
	struct cli cli;
	enum opt_result r;

	memset(c, 0, sizeof(*c));
	memset(&cli, 0, sizeof(cli));
	options_defaults(&cli.o);
	options_listener_defaults(&c->ls[0], "main");
	r = parse_argv(&cli, &c->ls[0], argc, argv, err, errlen);
	if (r != OPT_OK)
		return r;
	/* --check cannot know whether systemd will pass sockets: a listener
	 * with no address is let through, and check_config() says so. */
	inherited |= cli.o.check;
	if (!*cli.o.config) {
		c->o = cli.o;
		c->nls = 1;
		config_derive(c);
		return options_check_config(c, inherited, err, errlen);
	}
	if (cli.listener) {
		snprintf(
			err, errlen,
			"with --config, listeners are described in the file: give --listen, --backend and the like in a section of %s",
			cli.o.config);
		return OPT_BAD;
	}
	r = options_load(c, cli.o.config, err, errlen);
	if (r != OPT_OK)
		return r;
	apply_given(c, &cli);
	config_derive(c);
	return options_check_config(c, inherited, err, errlen);
}

/**
 * options_restart_only() - the process-wide settings a reload cannot change
 * @was:	the settings the process started with (or last read)
 * @now:	the ones just read
 * @out:	buffer for their names, comma separated; empty if none changed
 * @len:	its size
 *
 * These are the rows marked restart_only: they size pools, threads and
 * sockets made once at start; verbose and drain-timeout are not among
 * them, since a reload applies those.
 */
void options_restart_only(const struct options *was, const struct options *now,
			  char *out, size_t len)
{
	size_t n = 0;

	*out = '\0';
	for (unsigned i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &opt_table[i];
		bool same;
		int w;

		if (!d->restart_only || n >= len)
			continue;
		same = d->same ? d->same(was, now)
			       : !memcmp((const char *)was + d->field,
					 (const char *)now + d->field, d->size);
		if (same)
			continue;
		w = snprintf(out + n, len - n, "%s%s", n ? ", " : "", d->name);
		if (w > 0)
			n += (size_t)w;
	}
}
