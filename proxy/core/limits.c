// SPDX-License-Identifier: GPL-2.0-or-later
/* limits.c - caps on connections and descriptors, for the whole process
 *
 * Theory of operation: four limits decide whether a client is served, and
 * each holds across all workers.
 *
 *   descriptors: every connection needs two (client and backend), every
 *		  pipe two. The open-files limit, less what the process
 *		  keeps for itself (listeners, event loops, scrapes, logs),
 *		  is a budget that connections and pipes draw on. A worker
 *		  stops accepting while the budget cannot hold one more
 *		  connection, so clients wait in the backlog instead of
 *		  failing on EMFILE half-way; a pipe that does not fit is
 *		  not made, and the copy pump serves.
 *   --max-conns:  a cap on open connections. A client over it is
 *		  accepted and reset at once: it is told, not left waiting.
 *   --max-conns-per-source: a cap per client address, the same way, so
 *		  one host cannot take every slot. An IPv6 host is given a
 *		  whole network (a /64, usually) and may use any address in
 *		  it, so IPv6 clients count per --source-prefix6 network;
 *		  IPv4 clients, mapped or not, per address.
 *   --max-preauth-per-source: a cap per client address on smb-mode
 *		  connections that have not completed a session setup yet,
 *		  so that one host cannot park thousands of smbd processes
 *		  behind connections that never log in. A connection stops
 *		  counting once it authenticates (limits_authenticated()),
 *		  and is never cut by the cap: only new ones are refused.
 *
 * Counts are atomic, and the per-source table is a small hash under a
 * mutex. All of it is touched once when a connection opens, once when it
 * authenticates and once when it ends, never on the data path; the table
 * is kept only when a per-source cap is set.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "core/limits.h"
#include "common/log.h"

/**
 * struct source - one client address with connections open
 * @key:	the address
 * @count:	its open connections
 * @preauth:	those of them that count against --max-preauth-per-source:
 *		smb mode, not authenticated yet
 * @next:	bucket chain
 */
struct source {
	struct source_key key;
	unsigned count, preauth;
	struct source *next;
};

#define SOURCE_BUCKETS 4096u

/**
 * limits_init() - set the caps
 * @l:			the limits
 * @max_conns:		--max-conns, 0 for none
 * @max_per_source:	--max-conns-per-source, 0 for none
 * @prefix6:		--source-prefix6: IPv6 clients count per network of
 *			this prefix length
 * @max_preauth:	--max-preauth-per-source, 0 for none
 * @fd_limit:		the open-files limit
 * @fd_reserved:	descriptors the process needs besides connections
 *			and pipes
 *
 * Return: 0, or -1 if memory ran out.
 */
int limits_init(struct limits *l, unsigned max_conns, unsigned max_per_source,
		unsigned prefix6, unsigned max_preauth, long fd_limit,
		long fd_reserved)
{
	*l = (struct limits){
		.fds = { .limit = fd_limit > fd_reserved
					  ? fd_limit - fd_reserved
					  : 0 },
		.max_conns = max_conns,
		.max_per_source = max_per_source,
		.prefix6 = prefix6 > 128 ? 128 : prefix6,
		.max_preauth = max_preauth,
	};
	pthread_mutex_init(&l->lock, NULL);
	if (!max_per_source && !max_preauth)
		return 0;
	l->nbuckets = SOURCE_BUCKETS;
	l->buckets = calloc(l->nbuckets, sizeof(*l->buckets));
	return l->buckets ? 0 : -1;
}

/**
 * limits_destroy() - free the per-source table
 * @l:	the limits
 */
void limits_destroy(struct limits *l)
{
	struct source *s;

	for (unsigned i = 0; i < l->nbuckets; i++)
		while ((s = l->buckets[i])) {
			l->buckets[i] = s->next;
			free(s);
		}
	free(l->buckets);
	l->buckets = NULL;
	pthread_mutex_destroy(&l->lock);
}

/**
 * limits_source_key() - the per-source key of a client address
 * @sa:	IPv4 or IPv6 address
 * @k:	the key; IPv4 is mapped into IPv6, so both count alike
 */
void limits_source_key(const struct sockaddr *sa, struct source_key *k)
{
	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET6) {
		memcpy(k->a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else if (sa->sa_family == AF_INET) {
		k->a[10] = k->a[11] = 0xff;
		memcpy(k->a + 12, &((const struct sockaddr_in *)sa)->sin_addr,
		       4);
	}
}

/**
 * limits_source_addr() - the address a per-source key was made from
 * @k:		the key
 * @family:	the family of the socket it came from
 * @ss:		the address, port 0
 */
void limits_source_addr(const struct source_key *k, int family,
			struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET6)
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, k->a, 16);
	else
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, k->a + 12, 4);
}

/**
 * source_net() - what the per-source cap counts a client address as
 * @l:		the limits
 * @k:		the client's address
 * @net:	set to the address itself for IPv4 (mapped or not), and to
 *		its --source-prefix6 network for IPv6
 */
static void source_net(const struct limits *l, const struct source_key *k,
		       struct source_key *net)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	unsigned bits = l->prefix6;

	*net = *k;
	if (!memcmp(k->a, mapped, sizeof(mapped)))
		return;
	if (bits % 8)
		net->a[bits / 8] &= (uint8_t)(0xff00u >> (bits % 8));
	for (unsigned i = (bits + 7) / 8; i < sizeof(net->a); i++)
		net->a[i] = 0;
}

/**
 * source_slot() - the chain link where @k is, or would be
 * @l:	the limits, locked
 * @k:	the address
 *
 * Return: a pointer to the link that points at @k's entry, or at NULL.
 */
static struct source **source_slot(struct limits *l, const struct source_key *k)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	struct source **link;

	for (int i = 0; i < 16; i++)
		h = (h ^ k->a[i]) * 16777619u;
	link = &l->buckets[h & (l->nbuckets - 1)];
	while (*link && memcmp(&(*link)->key, k, sizeof(*k)))
		link = &(*link)->next;
	return link;
}

/**
 * source_take() - count one more connection from @k, within the caps
 * @l:		the limits
 * @k:		the address
 * @preauth:	it counts against --max-preauth-per-source too
 *
 * Return: ADMIT_OK if it fits, or the cap it does not fit. A client whose
 * address cannot be counted, for want of memory, does not fit: admitted
 * uncounted, it would at its end take a count from another client of the
 * same address.
 */
static enum admit source_take(struct limits *l, const struct source_key *k,
			      bool preauth)
{
	struct source **link, *s;
	struct source_key net;
	enum admit ok = ADMIT_OK;

	source_net(l, k, &net);
	pthread_mutex_lock(&l->lock);
	link = source_slot(l, &net);
	s = *link;
	if (!s && (s = calloc(1, sizeof(*s)))) {
		s->key = net;
		*link = s;
	}
	if (!s) {
		log_rate(
			LOG_LVL_ERR,
			"out of memory counting clients per address (--max-conns-per-source, --max-preauth-per-source): refusing new clients until memory is freed");
		ok = ADMIT_PER_SOURCE;
	} else if (l->max_per_source && s->count >= l->max_per_source) {
		ok = ADMIT_PER_SOURCE;
	} else if (preauth && l->max_preauth && s->preauth >= l->max_preauth) {
		ok = ADMIT_PREAUTH;
	} else {
		s->count++;
		s->preauth += preauth;
	}
	if (s && !s->count) { /* made for this client, which was refused */
		*link = s->next;
		free(s);
	}
	pthread_mutex_unlock(&l->lock);
	return ok;
}

/**
 * source_give() - one connection from @k has ended, or authenticated
 * @l:		the limits
 * @k:		the address
 * @conns:	1 if it ended, 0 if it authenticated
 * @preauth:	1 if it stops counting against --max-preauth-per-source
 */
static void source_give(struct limits *l, const struct source_key *k,
			unsigned conns, unsigned preauth)
{
	struct source **link, *s;
	struct source_key net;

	source_net(l, k, &net);
	pthread_mutex_lock(&l->lock);
	link = source_slot(l, &net);
	s = *link;
	if (s)
		s->preauth -= preauth;
	if (s && (s->count -= conns) == 0) {
		*link = s->next;
		free(s);
	}
	pthread_mutex_unlock(&l->lock);
}

/**
 * limits_admit() - may one more client be served
 * @l:		the limits
 * @k:		its address
 * @preauth:	it counts against --max-preauth-per-source until it
 *		authenticates (smb mode)
 *
 * On ADMIT_OK the connection is counted, and limits_release() must follow
 * when it ends. Descriptors are taken separately, before accept().
 *
 * Return: ADMIT_OK, or which cap refuses it.
 */
enum admit limits_admit(struct limits *l, const struct source_key *k,
			bool preauth)
{
	unsigned n = __atomic_add_fetch(&l->conns, 1, __ATOMIC_RELAXED);
	enum admit a = ADMIT_OK;

	if (l->max_conns && n > l->max_conns)
		a = ADMIT_MAX_CONNS;
	else if (l->buckets)
		a = source_take(l, k, preauth);
	if (a != ADMIT_OK)
		__atomic_sub_fetch(&l->conns, 1, __ATOMIC_RELAXED);
	return a;
}

/**
 * limits_adopt() - count a connection a handover brought in
 * @l:		the limits
 * @k:		its address
 * @preauth:	it still counts against --max-preauth-per-source
 *
 * Counted like limits_admit() but never refused: the process that
 * admitted it was under the same caps. limits_release() must follow.
 *
 * Return: 0, or -1 if memory ran out (nothing is counted then).
 */
int limits_adopt(struct limits *l, const struct source_key *k, bool preauth)
{
	struct source **link, *s;
	struct source_key net;

	if (l->buckets) {
		source_net(l, k, &net);
		pthread_mutex_lock(&l->lock);
		link = source_slot(l, &net);
		if (!(s = *link) && (s = calloc(1, sizeof(*s)))) {
			s->key = net;
			*link = s;
		}
		if (s) {
			s->count++;
			s->preauth += preauth;
		}
		pthread_mutex_unlock(&l->lock);
		if (!s)
			return -1;
	}
	__atomic_add_fetch(&l->conns, 1, __ATOMIC_RELAXED);
	return 0;
}

/**
 * limits_authenticated() - a connection admitted with @preauth has
 *			    completed a session setup
 * @l:	the limits
 * @k:	its address
 *
 * It no longer counts against --max-preauth-per-source; limits_release()
 * must then be told so.
 */
void limits_authenticated(struct limits *l, const struct source_key *k)
{
	if (l->buckets)
		source_give(l, k, 0, 1);
}

/**
 * limits_release() - a connection admitted by limits_admit() has ended
 * @l:		the limits
 * @k:		its address
 * @preauth:	it still counted against --max-preauth-per-source
 */
void limits_release(struct limits *l, const struct source_key *k, bool preauth)
{
	__atomic_sub_fetch(&l->conns, 1, __ATOMIC_RELAXED);
	if (l->buckets)
		source_give(l, k, 1, preauth);
}

/**
 * limits_conns() - connections open in the whole process
 * @l:	the limits
 *
 * Return: the count.
 */
unsigned limits_conns(const struct limits *l)
{
	return __atomic_load_n(&l->conns, __ATOMIC_RELAXED);
}
