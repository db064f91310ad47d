/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_LIMITS_H
#define SMBSPLICE_LIMITS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "io/budget.h"

/**
 * struct source_key - a client's address, as the per-source cap counts it
 * @a:	IPv6 address, or IPv4 mapped into IPv6 (::ffff:a.b.c.d)
 */
struct source_key {
	uint8_t a[16];
};

struct source;

/**
 * struct limits - the caps on connections, for the whole process
 * @fds:		descriptors for connections and pipes
 * @max_conns:		--max-conns, 0 for no cap but @fds
 * @max_per_source:	--max-conns-per-source, 0 for none
 * @prefix6:		--source-prefix6
 * @max_preauth:	--max-preauth-per-source, 0 for none
 * @conns:		connections open now (atomic)
 * @lock:		guards @buckets
 * @buckets:		open and unauthenticated connections per source
 *			address, hashed
 * @nbuckets:		how many buckets (a power of two)
 */
struct limits {
	struct budget fds;
	unsigned max_conns, max_per_source, prefix6, max_preauth;
	unsigned conns;
	pthread_mutex_t lock;
	struct source **buckets;
	unsigned nbuckets;
};

enum admit {
	ADMIT_OK,	  /* serve the client */
	ADMIT_MAX_CONNS,  /* --max-conns connections are open */
	ADMIT_PER_SOURCE, /* its address has --max-conns-per-source open */
	ADMIT_PREAUTH,	  /* its address has --max-preauth-per-source
			   * connections that have not authenticated */
	ADMIT_DENIED,	  /* not in --allow (admit.c; never limits_admit) */
};

int limits_init(struct limits *l, unsigned max_conns, unsigned max_per_source,
		unsigned prefix6, unsigned max_preauth, long fd_limit,
		long fd_reserved);
void limits_destroy(struct limits *l);
void limits_source_key(const struct sockaddr *sa, struct source_key *k);
void limits_source_addr(const struct source_key *k, int family,
			struct sockaddr_storage *ss);
enum admit limits_admit(struct limits *l, const struct source_key *k,
			bool preauth);
int limits_adopt(struct limits *l, const struct source_key *k, bool preauth);
void limits_authenticated(struct limits *l, const struct source_key *k);
void limits_release(struct limits *l, const struct source_key *k, bool preauth);
unsigned limits_conns(const struct limits *l);

#endif /* SMBSPLICE_LIMITS_H */
