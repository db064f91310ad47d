// SPDX-License-Identifier: GPL-2.0-or-later
/* ctlinfo.c - the control socket's `info`: the process at a glance
 *
 * Theory of operation: what an administrator asks first of a daemon he
 * did not start (HAProxy's `show info`): which version, which pid, up how
 * long, how many workers, listeners and connections, under which limits,
 * built how. All of it is read in the main thread without asking a
 * worker: the counts are atomic (limits, budgets, accept counters), the
 * rest is fixed at start. The answer is one "key: value" line per item,
 * or with --json one object whose limits and build are objects of their
 * own; both are written by the same calls (struct info_out), so they
 * cannot drift apart.
 *
 * The uptime is this process's: a handover (SIGUSR2) starts a new one,
 * with a new pid.
 */
#include "config.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "common/monotime.h"
#include "control/ctlinfo.h"
#include "core/alloc.h"
#include "core/proxy.h"
#include "net/listener.h"
#include "worker/worker.h"

/**
 * struct info_out - the answer being written, in either form
 * @out:	the answer
 * @json:	JSON, not text
 * @n:		items written in the current JSON object
 */
struct info_out {
	struct outbuf *out;
	bool json;
	unsigned n;
};

/**
 * info_key() - start an item
 * @o:		the answer
 * @key:	its name, a C identifier
 */
static void info_key(struct info_out *o, const char *key)
{
	if (o->json)
		outbuf_printf(o->out, "%s\"%s\":", o->n++ ? "," : "", key);
	else
		outbuf_printf(o->out, "%s: ", key);
}

/**
 * info_num() - an item that is a count or a size
 * @o:		the answer
 * @key:	its name
 * @v:		its value
 */
static void info_num(struct info_out *o, const char *key, unsigned long long v)
{
	info_key(o, key);
	outbuf_printf(o->out, o->json ? "%llu" : "%llu\n", v);
}

/**
 * info_cap() - an item that is a cap, 0 meaning none
 * @o:		the answer
 * @key:	its name
 * @v:		its value
 */
static void info_cap(struct info_out *o, const char *key, unsigned long long v)
{
	if (v) {
		info_num(o, key, v);
		return;
	}
	info_key(o, key);
	outbuf_printf(o->out, o->json ? "null" : "none\n");
}

/**
 * info_str() - an item that is text
 * @o:		the answer
 * @key:	its name
 * @v:		its value, printable
 */
static void info_str(struct info_out *o, const char *key, const char *v)
{
	info_key(o, key);
	if (o->json)
		outbuf_json_str(o->out, v);
	else
		outbuf_printf(o->out, "%s\n", v);
}

/**
 * info_bool() - an item that is yes or no
 * @o:		the answer
 * @key:	its name
 * @v:		its value
 */
static void info_bool(struct info_out *o, const char *key, bool v)
{
	info_key(o, key);
	outbuf_printf(o->out, "%s%s",
		      v ? (o->json ? "true" : "yes")
			: (o->json ? "false" : "no"),
		      o->json ? "" : "\n");
}

/**
 * info_group() - open (@name) or close (NULL) a JSON object of items;
 *		  text stays one flat list
 * @o:		the answer
 * @name:	the object's name, or NULL to close it
 */
static void info_group(struct info_out *o, const char *name)
{
	if (!o->json)
		return;
	if (name) {
		info_key(o, name);
		outbuf_printf(o->out, "{");
		o->n = 0;
	} else {
		outbuf_printf(o->out, "}");
		o->n = 1;
	}
}

/**
 * info_process() - version, pid, uptime, state, workers, listeners,
 *		    connections
 * @o:		the answer
 * @px:		the process
 * @level:	the asking socket's
 */
static void info_process(struct info_out *o, struct proxy *px,
			 enum control_level level)
{
	static const char *const state[] = { [PX_RUNNING] = "running",
					     [PX_DRAINING] = "draining",
					     [PX_STOPPED] = "stopped" };
	unsigned nls = 0, held = 0;
	uint64_t total = 0;
	char when[32];
	struct tm tm;

	for (struct listener *l = px->listeners; l; l = l->next)
		if (!listener_is(l, LISTENER_RETIRED)) {
			nls++;
			held += l->held;
		}
	for (unsigned i = 0; i < px->nworkers; i++)
		total += worker_accepted(&px->workers[i]);
	gmtime_r(&px->started_at, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	info_str(o, "version", PACKAGE_VERSION);
	info_num(o, "pid", (unsigned long long)getpid());
	info_str(o, "started", when);
	info_key(o, "uptime");
	outbuf_printf(o->out, o->json ? "%.1f" : "%.1f s\n",
		      (double)(mono_ns() - px->started_ns) / 1e9);
	info_str(o, "state", state[px->state]);
	info_str(o, "level", level == CONTROL_ADMIN ? "admin" : "view");
	info_num(o, "workers", px->nworkers);
	info_num(o, "listeners", nls);
	info_num(o, "listeners_drained", held);
	info_num(o, "conns", limits_conns(&px->limits));
	info_num(o, "conns_total", total);
}

/**
 * info_limits() - the caps the process enforces, and what holds them now
 * @o:	the answer
 * @px:	the process
 */
static void info_limits(struct info_out *o, struct proxy *px)
{
	const struct options *opt = px->opt;
	struct rlimit rl = { 0 };

	getrlimit(RLIMIT_NOFILE, &rl);
	info_group(o, "limits");
	info_cap(o, "max_conns", opt->max_conns);
	info_cap(o, "max_conns_per_source", opt->max_per_source);
	info_cap(o, "max_preauth_per_source", opt->max_preauth);
	info_num(o, "source_prefix6", opt->source_prefix6);
	info_num(o, "open_files",
		 rl.rlim_cur == RLIM_INFINITY
			 ? 0
			 : (unsigned long long)rl.rlim_cur);
	info_num(o, "descriptors_limit",
		 (unsigned long long)px->limits.fds.limit);
	info_num(o, "descriptors_used",
		 (unsigned long long)budget_used(&px->limits.fds));
	info_num(o, "max_pipes",
		 (unsigned long long)px->pipe_budget.pipes.limit);
	info_num(o, "pipes_open", pipepool_budget_open(&px->pipe_budget));
	info_num(o, "pipe_size", opt->pipe_size);
	info_num(o, "buffer_size", opt->buf_size);
	info_num(o, "unpipe_limit", (unsigned long long)px->unpipe.limit);
	info_num(o, "unpipe_used",
		 (unsigned long long)budget_used(&px->unpipe));
	info_group(o, NULL);
}

/**
 * info_build() - how this binary was built
 * @o:	the answer
 */
static void info_build(struct info_out *o)
{
	info_group(o, "build");
	info_str(o, "allocator", alloc_name());
#ifdef HAVE_SANITIZERS
	info_bool(o, "sanitizers", true);
#else
	info_bool(o, "sanitizers", false);
#endif
	/* configure requires it: readiness, socket activation */
	info_bool(o, "libsystemd", true);
#if defined(__clang__)
	info_str(o, "compiler", "clang " __clang_version__);
#elif defined(__GNUC__)
	info_str(o, "compiler", "gcc " __VERSION__);
#endif
	info_group(o, NULL);
}

/**
 * ctlinfo_run() - `info`
 * @px:		the process
 * @level:	the asking socket's level
 * @json:	JSON, not text
 * @out:	the answer
 */
void ctlinfo_run(struct proxy *px, enum control_level level, bool json,
		 struct outbuf *out)
{
	struct info_out o = { .out = out, .json = json };

	if (json)
		outbuf_printf(out, "{");
	info_process(&o, px, level);
	info_limits(&o, px);
	info_build(&o);
	if (json)
		outbuf_printf(out, "}\n");
}
