// SPDX-License-Identifier: GPL-2.0-or-later
/* reload.c - bringing the listeners in line with a configuration
 *
 * Theory of operation: at start, and on every SIGHUP, the main thread
 * makes the process's listeners match a configuration, in two steps.
 *
 *   prepare: for every listener section, its settings (lcfg, with its
 *	namespaces opened) are made and checked as the workers will use
 *	them (dial_check() from inside the backend namespace), and the
 *	sockets of every listener that needs new ones are opened. Anything
 *	that fails (a bad namespace, an address in use) rejects the whole
 *	configuration, with one line, and the running one stays as it was.
 *   commit: nothing can fail any more. A listener whose socket is the same
 *	(address, namespace, MPTCP) keeps it and gets its new settings, for
 *	the connections it accepts from now on; a new listener's sockets go
 *	to the workers; a listener that is gone, or whose socket changed, is
 *	retired: its workers accept what is already queued, close their
 *	sockets, and its open connections run on to their end.
 *
 * Under --user the daemon holds no capability: the privileged helper
 * (privhelper.c) reads the file too, first, and then makes the new
 * listening sockets (as root, whatever their port) and the sockets that
 * dial_check() tries in a backend namespace; workers' connections to a
 * namespace other than theirs get their sockets from it as well.
 *
 * A listener with no listen address under socket activation keeps the
 * socket it was given; only a new one takes a socket still unclaimed.
 *
 * SIGHUP comes here whole (reload_run()): the file is read again, with the
 * command line over it as at start; its listeners are applied as above;
 * of [global], the log level and the drain timeout take effect and the
 * rest waits for a restart, with a line saying so.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/dial.h"
#include "net/health.h"
#include "net/listener.h"
#include "common/log.h"
#include "common/netns.h"
#include "conf/options.h"
#include "core/notify.h"
#include "observe/tracefile.h"
#include "priv/privhelper.h"
#include "priv/privs.h"
#include "quic/qdial.h"
#include "quic/quic.h"
#include "core/proxy.h"
#include "daemon/reload.h"
#include "io/sock.h"
#include "worker/worker.h"

/**
 * struct plan - what a configuration does to one listener section
 * @cfg:	its new settings (a reference, until committed)
 * @old:	the running listener of that name, or NULL
 * @fresh:	a new listener with new sockets, or NULL if @old keeps its
 *		sockets
 */
struct plan {
	struct lcfg *cfg;
	struct listener *old;
	struct listener *fresh;
};

/**
 * find_namesake() - a listener whose counters a new one of its name takes
 * @px:		the process
 * @name:	the name
 *
 * Return: the running or retired listener of that name still reporting
 * its counters, or NULL.
 */
static struct listener *find_namesake(struct proxy *px, const char *name)
{
	for (struct listener *l = px->listeners; l; l = l->next)
		if (!listener_is(l, LISTENER_PASSED_ON) &&
		    !strcmp(l->name, name))
			return l;
	return NULL;
}

/**
 * check_backend_side() - can this listener's backend sockets be made
 * @px:		the process
 * @cfg:	the listener's settings
 * @err:	buffer for one line saying what cannot
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int check_backend_side(struct proxy *px, struct lcfg *cfg, char *err,
			      size_t errlen)
{
	int ns = cfg->netns[SIDE_BACKEND], r;

	if (px->helper.fds) /* it enters, and holds CAP_NET_ADMIN */
		return dial_check(&cfg->o, &px->helper, err, errlen);
	if (cfg->o.transparent && !privs_have(CAP_NET_ADMIN)) {
		snprintf(
			err, errlen,
			"listener %s: --transparent needs CAP_NET_ADMIN: run as root, or grant it (AmbientCapabilities=CAP_NET_ADMIN)",
			cfg->o.name);
		return -1;
	}
	if (ns >= 0 && netns_enter(ns)) {
		snprintf(err, errlen, "listener %s: cannot enter %s: %s",
			 cfg->o.name, cfg->o.netns[SIDE_BACKEND],
			 strerror(errno));
		return -1;
	}
	r = dial_check(&cfg->o, NULL, err, errlen);
	if (ns >= 0)
		netns_enter(netns_home());
	return r;
}

/**
 * check_client_side() - can this listener's client-side options be set
 * @cfg:	the listener's settings
 * @err:	buffer for one line saying what cannot
 * @errlen:	its size
 *
 * Tried on a socket that never listens, so that a listener keeping its
 * socket cannot fail half way through a reload.
 *
 * Return: 0, or -1 with @err set.
 */
static int check_client_side(const struct lcfg *cfg, char *err, size_t errlen)
{
	int family = cfg->o.listen.len ? cfg->o.listen.addr.ss_family : AF_INET;
	int fd = sock_stream(family, cfg->o.mptcp[SIDE_CLIENT]), r;

	if (fd < 0) {
		snprintf(err, errlen, "listener %s: socket: %s", cfg->o.name,
			 strerror(errno));
		return -1;
	}
	r = dial_client_side(fd, &cfg->o, err, errlen);
	close(fd);
	return r;
}

/**
 * keep_inherited_address() - a listener with no address keeps its socket
 * @cfg:	the new settings, with no listen address
 * @old:	the running listener of that name, or NULL
 *
 * Under socket activation a listener may leave out its address and take
 * what systemd passed. Its socket cannot be had again once given, so a
 * reload keeps the one it has.
 */
static void keep_inherited_address(struct lcfg *cfg, const struct listener *old)
{
	if (!cfg->o.listen.len && old && listener_is(old, LISTENER_INHERITED))
		cfg->o.listen = old->cfg->o.listen;
}

/**
 * reload_check_listener() - can this listener's sockets be made as configured
 * @px:		the process
 * @cfg:	the listener's settings
 * @err:	buffer for one line saying what cannot
 * @errlen:	its size
 *
 * Everything but the listening address itself, which may be in use by
 * the very smbsplice a --check is run for.
 *
 * Return: 0, or -1 with @err set.
 */
int reload_check_listener(struct proxy *px, struct lcfg *cfg, char *err,
			  size_t errlen)
{
	if (quic_check_listener(&cfg->o, err, errlen) ||
	    qdial_check(&cfg->o, err, errlen))
		return -1;
	return check_backend_side(px, cfg, err, errlen) ||
			       (!cfg->o.quic &&
				check_client_side(cfg, err, errlen))
		       ? -1
		       : 0;
}

/**
 * prepare() - make and check everything a configuration needs
 * @px:		the process
 * @c:		the configuration
 * @plans:	one per listener section, filled in
 * @err:	buffer for one line saying what failed
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set and everything made undone.
 */
static int prepare(struct proxy *px, const struct config *c, struct plan *plans,
		   char *err, size_t errlen)
{
	unsigned i;

	for (i = 0; i < c->nls; i++) {
		struct plan *p = &plans[i];

		p->cfg = listener_cfg_new(&c->ls[i], err, errlen);
		if (!p->cfg || reload_check_listener(px, p->cfg, err, errlen))
			goto undo;
		p->old = listener_named(px, c->ls[i].name);
		keep_inherited_address(p->cfg, p->old);
		if (p->old) /* a drained backend stays drained */
			listener_carry_states(p->cfg, p->old->cfg);
		if (p->old && listener_same_socket(p->old->cfg, p->cfg))
			continue;
		listener_cfg_get(p->cfg); /* the new listener takes one */
		p->fresh = listener_new(px, p->cfg, err, errlen);
		if (!p->fresh)
			goto undo;
		/* commit() chains it into px->listeners instead. */
		p->fresh->next = px->opening;
		px->opening = p->fresh;
	}
	px->opening = NULL;
	return 0;
undo:
	px->opening = NULL;
	for (unsigned j = 0; j <= i && j < c->nls; j++) {
		if (plans[j].fresh)
			listener_free(plans[j].fresh);
		if (plans[j].cfg)
			listener_cfg_put(plans[j].cfg);
	}
	return -1;
}

/**
 * retire() - stop accepting on a listener; free it once its connections
 *	      have ended
 * @px:	the process
 * @l:	the listener
 */
static void retire(struct proxy *px, struct listener *l)
{
	listener_mark(l, LISTENER_RETIRED);
	for (unsigned w = 0; w < px->nworkers; w++)
		worker_run(&px->workers[w],
			   &(struct worker_cmd){ .ops = &worker_cmd_remove,
						 .l = l },
			   WORKER_CMD_NOWAIT);
	listener_put(l); /* the process's reference */
}

/**
 * hand_out() - give a new listener's sockets to the workers
 * @px:	the process
 * @l:	the listener, linked into the process's list
 *
 * At start the workers do not exist yet: reload_hand_out() gives the
 * sockets once they do.
 */
static void hand_out(struct proxy *px, struct listener *l)
{
	if (!px->workers)
		return;
	for (unsigned w = 0; w < px->nworkers; w++) {
		if (l->fds[w] < 0)
			continue;
		listener_get(l);
		if (worker_run(&px->workers[w],
			       &(struct worker_cmd){ .ops = &worker_cmd_add,
						     .l = l,
						     .fd = l->fds[w] },
			       WORKER_CMD_NOWAIT)) {
			listener_put(l);
			continue; /* out of memory: closed with @l */
		}
		l->fds[w] = -1; /* the worker's now */
	}
}

/**
 * commit() - make the prepared configuration the running one
 * @px:		the process
 * @c:		the configuration
 * @plans:	from prepare()
 * @what:	set to what changed: added, changed, removed
 */
static void commit(struct proxy *px, const struct config *c, struct plan *plans,
		   unsigned what[3])
{
	struct listener *l;
	bool keep;

	/* Listeners no section names any more. */
	for (l = px->listeners; l; l = l->next) {
		if (listener_is(l, LISTENER_RETIRED))
			continue;
		keep = false;
		for (unsigned i = 0; i < c->nls && !keep; i++)
			keep = !strcmp(c->ls[i].name, l->name);
		if (!keep) {
			retire(px, l);
			what[2]++;
		}
	}
	for (unsigned i = 0; i < c->nls; i++) {
		struct plan *p = &plans[i];

		if (!p->fresh) { /* same socket, new settings */
			char err[256];

			for (unsigned w = 0; w < px->nworkers; w++) {
				listener_cfg_get(p->cfg);
				worker_run(&px->workers[w],
					   &(struct worker_cmd){
						   .ops = &worker_cmd_update,
						   .l = p->old,
						   .cfg = p->cfg },
					   WORKER_CMD_NOWAIT);
			}
			if (listener_set_cfg(p->old, p->cfg, err, sizeof(err)))
				log_warn("%s", err);
			what[1]++;
			continue;
		}
		listener_cfg_put(p->cfg); /* the listener holds its own */
		l = find_namesake(px, p->fresh->name);
		if (l)
			listener_share_counters(p->fresh, l);
		if (p->old) {
			retire(px, p->old);
			what[1]++;
		} else {
			what[0]++;
		}
		p->fresh->next = px->listeners;
		px->listeners = p->fresh;
		hand_out(px, p->fresh);
	}
}

/**
 * reload_apply() - bring the process's listeners in line with @c
 * @px:		the process, with its workers made (running or not)
 * @c:		the configuration
 * @err:	buffer for one line saying why it was refused
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set and nothing changed.
 */
int reload_apply(struct proxy *px, const struct config *c, char *err,
		 size_t errlen)
{
	struct plan *plans = calloc(c->nls, sizeof(*plans));
	unsigned what[3] = { 0 };

	if (!plans) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* The helper grants only what its own reading of the file allows. */
	if (px->helper.fds && privhelper_reload(&px->helper, err, errlen)) {
		free(plans);
		return -1;
	}
	if (prepare(px, c, plans, err, errlen)) {
		if (px->helper.fds) /* granted from no more */
			privhelper_abort(&px->helper);
		free(plans);
		return -1;
	}
	commit(px, c, plans, what);
	if (px->helper.fds)
		privhelper_commit(&px->helper);
	free(plans);
	worker_sync_all(px); /* so a removed listener is closed when logged */
	health_sync(px);
	log_debug("listeners: %u added, %u changed, %u removed", what[0],
		  what[1], what[2]);
	return 0;
}

/**
 * reload_retire_all() - stop every listener (a drain, or the end)
 * @px:	the process
 */
void reload_retire_all(struct proxy *px)
{
	health_stop();
	for (struct listener *l = px->listeners; l; l = l->next)
		if (!listener_is(l, LISTENER_RETIRED)) {
			listener_mark(l, LISTENER_RETIRED);
			listener_put(l);
		}
}

/**
 * reload_hand_out() - give every listener's sockets to the workers
 * @px:	the process, with its workers made
 */
void reload_hand_out(struct proxy *px)
{
	for (struct listener *l = px->listeners; l; l = l->next)
		if (!listener_is(l, LISTENER_RETIRED))
			hand_out(px, l);
}

/**
 * reload_log_listeners() - one start-up or reload line per listener
 * @px:		the process
 * @started:	it has just started: say first what it runs with
 */
void reload_log_listeners(const struct proxy *px, bool started)
{
	const struct options *o = px->opt;
	long fds = budget_limit(&px->limits.fds) / 2;
	char backends[512];
	size_t n;

	if (started)
		log_info(
			"started: %u listener%s, %u worker%s, pipe %zu, buffer %zu, max pipes %u, max conns %ld",
			px->cfg->nls, px->cfg->nls == 1 ? "" : "s",
			px->nworkers, px->nworkers == 1 ? "" : "s",
			o->pipe_size, o->buf_size, o->max_pipes,
			o->max_conns && o->max_conns < fds ? (long)o->max_conns
							   : fds);
	for (const struct listener *l = px->listeners; l; l = l->next) {
		const struct listen_opts *lo = &l->cfg->o;

		if (listener_is(l, LISTENER_RETIRED))
			continue;
		n = 0;
		backends[0] = '\0';
		for (unsigned i = 0; i < lo->nbackends && n < sizeof(backends);
		     i++)
			n += (size_t)snprintf(
				backends + n, sizeof(backends) - n, "%s%s",
				i ? ", then " : "", lo->backend[i].text);
		log_info(
			"listener %s: listening on %s%s%s%s, forwarding to %s%s%s (mode %s%s%s)",
			l->name, lo->listen.text,
			lo->netns[SIDE_CLIENT][0] ? " in " : "",
			lo->netns[SIDE_CLIENT],
			listener_is(l, LISTENER_INHERITED) ? " (from systemd)"
							   : "",
			backends, lo->netns[SIDE_BACKEND][0] ? " in " : "",
			lo->netns[SIDE_BACKEND],
			lo->mode == MODE_SMB ? "smb" : "tcp",
			lo->splice ? "" : ", no splice",
			lo->transparent ? ", transparent" : "");
	}
}

/**
 * apply_globals() - what a reload may change in [global]
 * @px:		the process, with the configuration last read in @px->cfg
 * @now:	[global] as just read
 *
 * The log level and the drain timeout take effect; the rest sized things
 * made at start, and a line says they wait for a restart.
 */
static void apply_globals(struct proxy *px, const struct options *now)
{
	char keys[256];

	px->opt->verbose = now->verbose;
	log_verbosity = now->verbose;
	px->opt->drain_timeout = now->drain_timeout;
	options_restart_only(&px->cfg->o, now, keys, sizeof(keys));
	if (*keys)
		log_warn(
			"reload: [global] %s changed; that takes a restart, and the running values stay",
			keys);
}

/**
 * user_hint() - whether --user is why the config file cannot be read
 * @px:		the process
 * @buf:	buffer for the hint
 * @len:	its size
 *
 * The file was read as root at start; a reload reads it as --user. A
 * file that user cannot read is refused for a reason the start never met,
 * and the line says so; any other failure is the file's own.
 *
 * Return: @buf: the hint, starting with a blank, or empty.
 */
static const char *user_hint(const struct proxy *px, char *buf, size_t len)
{
	*buf = '\0';
	if (*px->opt->user && access(px->opt->config, R_OK) && errno == EACCES)
		snprintf(
			buf, len,
			" (smbsplice has run as --user %s since it started: that user must be able to read the file, and to search each directory above it)",
			px->opt->user);
	return buf;
}

/**
 * reload_run() - SIGHUP: reopen the trace, re-read the config file and
 *		  apply it
 * @px:		the process
 * @signum:	the signal, for the log line
 *
 * A file with errors, or listeners that cannot be made as it says, is
 * refused in one line, and the running configuration stays whole; [global]
 * settings that were sized at start wait for a restart (apply_globals()).
 */
void reload_run(struct proxy *px, int signum)
{
	struct config *c;
	char err[512], hint[200];

	tracefile_reopen();
	if (px->state != PX_RUNNING)
		return;
	if (!*px->opt->config) {
		if (!tracefile_enabled())
			log_warn(
				"signal %d: nothing to reload: smbsplice was started without --config",
				signum);
		return;
	}
	notify_reloading();
	c = calloc(1, sizeof(*c));
	if (!c) {
		log_err("reload: out of memory; the running configuration stays");
	} else if (options_parse(c, px->argc, px->argv, px->activated, err,
				 sizeof(err)) != OPT_OK ||
		   reload_apply(px, c, err, sizeof(err))) {
		log_err("reload refused: %s%s; the running configuration stays",
			err, user_hint(px, hint, sizeof(hint)));
		free(c);
	} else {
		apply_globals(px, &c->o);
		free(px->cfg);
		px->cfg = c;
		log_info("reload: %s read, %u listener%s", px->opt->config,
			 c->nls, c->nls == 1 ? "" : "s");
		reload_log_listeners(px, false);
	}
	notify_ready(px->cfg->nls);
}
