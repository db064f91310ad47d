/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_LISTENER_H
#define SMBSPLICE_LISTENER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/limits.h"
#include "conf/options.h"
#include "observe/counters.h"

struct proxy;

/**
 * struct lstats - one listener's counters in one worker
 * @tot:		what its connections moved
 * @accepted:		connections accepted
 * @denied:		clients refused by --allow
 * @refused:		clients refused by a cap, per enum admit
 * @bad_openings:	smb mode: clients reset because their first frame
 *			was not one an SMB server answers
 * @auth_timeouts:	smb mode: connections ended by --auth-timeout
 * @proxy_refused:	--accept-proxy: peers outside --proxy-from, and
 *			connections whose PROXY header was bad or missing
 * @backend_failures:	failed connects, per backend
 *
 * Written by the worker alone, read by the main thread (counter.h).
 */
struct lstats {
	struct totals tot;
	uint64_t accepted, denied;
	uint64_t refused[ADMIT_PREAUTH + 1];
	uint64_t bad_openings, auth_timeouts, proxy_refused;
	uint64_t backend_failures[OPT_MAX_BACKENDS];
};

/**
 * struct lquic - a QUIC listener's counters in one worker
 * @handshakes:		connections begun (a client's first Initial, admitted)
 * @retries:		Retry packets sent (address validation, no state)
 * @resets:		Stateless Resets sent, for packets of no connection
 * @migrations:		connections that moved to a new client address or
 *			port, its path validated
 * @certs_denied:	client certificates refused: no allow rule, a deny
 *			rule, or a chain that does not verify
 *
 * Apart from struct lstats, whose image a handover copies word for word
 * into the next process: a QUIC listener refuses a handover anyway, and
 * the image keeps its format. Written by the worker, read by the main
 * thread (counter.h).
 */
struct lquic {
	uint64_t handshakes, retries, resets, migrations, certs_denied;
};

/**
 * struct lcounters - a listener name's counters, one set per worker
 * @users:	listeners counting into them: more than one while a listener
 *		replaced by a reload still has connections (main thread only)
 * @active:	connections open now, indexed by worker (gauges: the
 *		worker's conn_host_link() adds, its conn_free() takes away);
 *		in the same allocation, after @w
 * @quic:	QUIC's counters, indexed by worker; in the same allocation,
 *		after @active
 * @w:		the sets, indexed by worker
 *
 * @active is apart from struct lstats, which a handover copies into the
 * next process word for word: the next process counts what is open
 * itself, as it adopts each connection, and the state image keeps its
 * format.
 */
struct lcounters {
	unsigned users;
	uint64_t *active;
	struct lquic *quic;
	struct lstats w[];
};

/* A backend's state as the control socket sets it (backend command). */
enum be_admin {
	BE_READY, /* dialled */
	BE_DRAIN, /* not dialled; its connections run on */
	BE_MAINT, /* as drain, and not probed either */
	BE_ADMIN_COUNT,
};

/**
 * struct bstate - one backend's state, which every worker reads
 * @admin:	enum be_admin
 * @down:	the health checks found it down
 * @changes:	how often @admin or @down changed (counted for /metrics)
 *
 * The main thread alone writes them (the control socket, the checks);
 * workers read them, atomically, when they choose a backend to dial.
 */
struct bstate {
	unsigned char admin;
	bool down;
	uint64_t changes;
};

/**
 * struct lcfg - a listener's settings, as its connections keep them
 * @o:		the settings
 * @netns:	namespaces per side, from netns_open(); -1 for the
 *		process's own
 * @netns_ino:	their inodes, which identify them; 0 for the process's own
 * @refs:	the listener's 1 while current, and one per worker and per
 *		connection that uses them (atomic)
 * @be:		its backends' states, as @o.backend is ordered
 *
 * Immutable once made but for @be: a reload makes a new one, and
 * connections carry on with the one they started with. The states of
 * backends whose address the new one keeps go with them
 * (listener_carry_states()), so that a drained server stays drained.
 */
struct lcfg {
	struct listen_opts o;
	int netns[SIDE_COUNT];
	ino_t netns_ino[SIDE_COUNT];
	unsigned refs;
	struct bstate be[OPT_MAX_BACKENDS];
};

/* What has happened to a listener; each bit is set once, through
 * listener_mark(), and never cleared. */
enum listener_flag {
	LISTENER_INHERITED = 1u << 0, /* its sockets came from socket
				       * activation, not from bind() */
	LISTENER_PASSED_ON = 1u << 1, /* a newer listener of the same name
				       * reports its counters */
	LISTENER_RETIRED = 1u << 2,   /* removed from the configuration;
				       * freed once its refs are 0 */
	LISTENER_HANDED = 1u << 3,    /* its sockets came from the process
				       * that handed over to this one */
};

/**
 * struct listener - one named listener of the process
 * @name:	its section's name ("main" from the command line)
 * @cfg:	its current settings
 * @fds:	listening sockets, one per worker, each handed to its worker
 * @counters:	counters, shared with the listener of the same name that
 *		this one replaced, or that replaced it
 * @st:		@counters' sets, one per worker
 * @nworkers:	how many
 * @refs:	the process's 1 while configured, one per worker that
 *		accepts on it and one per connection (atomic)
 * @flags:	what has happened to it, LISTENER_* (main thread only)
 * @held:	the control socket drained it: its workers accept nothing on
 *		it until resumed (main thread only)
 * @quic_map:	a QUIC listener's steering map (io/reuseport.c), which a
 *		handover carries to the next process; -1 without one
 * @quic_base:	the slot of its worker 0's socket in that map: the first
 *		byte of the connection IDs each worker issues is this plus
 *		the worker's number
 * @next:	the process's list
 *
 * Made and freed by the main thread; workers only accept on their socket
 * and count into their @st.
 */
struct listener {
	char name[OPT_NAME_LEN];
	struct lcfg *cfg;
	int *fds;
	struct lcounters *counters;
	struct lstats *st;
	unsigned nworkers;
	unsigned refs;
	unsigned flags;
	bool held;
	int quic_map;
	unsigned quic_base;
	struct listener *next;
};

struct lcfg *listener_cfg_new(const struct listen_opts *o, char *err,
			      size_t errlen);
void listener_cfg_get(struct lcfg *c);
void listener_cfg_put(struct lcfg *c);
struct listener *listener_new(struct proxy *px, struct lcfg *cfg, char *err,
			      size_t errlen);
void listener_get(struct listener *l);
void listener_put(struct listener *l);
int listener_check_bind(const struct lcfg *cfg, char *err, size_t errlen);
/* quicsock.c */
int listener_open_quic(struct proxy *px, struct listener *l,
		       const struct endpoint *ep, char *err, size_t errlen);
bool listener_same_socket(const struct lcfg *a, const struct lcfg *b);
int listener_set_cfg(struct listener *l, struct lcfg *cfg, char *err,
		     size_t errlen);
void listener_share_counters(struct listener *l, struct listener *old);
void listener_mark(struct listener *l, enum listener_flag flag);
void listener_hold(struct listener *l, bool held);
void listener_free(struct listener *l);

/**
 * listener_is() - has this happened to a listener
 * @l:		the listener
 * @flag:	one LISTENER_*
 *
 * Return: true if it has.
 */
static inline bool listener_is(const struct listener *l,
			       enum listener_flag flag)
{
	return l->flags & flag;
}
void listener_reap(struct proxy *px);
int listener_pick_backend(const struct lcfg *c, unsigned from);
void listener_set_admin(struct lcfg *c, unsigned i, enum be_admin admin,
			const char *why);
void listener_set_down(struct lcfg *c, unsigned i, bool down, const char *why);
void listener_carry_states(struct lcfg *c, const struct lcfg *was);
const char *listener_admin_name(enum be_admin admin);
struct listener *listener_named(struct proxy *px, const char *name);
void listener_restore_counters(struct listener *l, unsigned worker,
			       const void *words);

#endif /* SMBSPLICE_LISTENER_H */
