// SPDX-License-Identifier: GPL-2.0-or-later
/* privgrant.c - what the privileged helper grants, and to which request
 *
 * Theory of operation: the helper (privhelper.c) makes a socket only if a
 * listener of a configuration it read itself asks for exactly that one:
 * a listening socket on the listener's address, in its client namespace;
 * a backend socket of one of its backends' families, in its backend
 * namespace, IP_TRANSPARENT only if the listener is --transparent. The
 * daemon, which runs unprivileged and may be compromised, only names what
 * it wants; nothing it sends widens that.
 *
 * Three configurations are granted from (enum SET_*): the running one,
 * the one before it (whose connections, still open after a reload, may
 * still fail over to their next backend), and a candidate a reload read
 * (PH_RELOAD) before it commits (PH_COMMIT). Each comes with the
 * namespaces it names, opened by the helper when it read the file.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netns.h"
#include "privgrant.h"

/**
 * allowed_free() - close a configuration's namespaces and free it
 * @a:	the configuration, or one with @cfg NULL
 */
void allowed_free(struct allowed *a)
{
	if (!a->cfg)
		return;
	for (unsigned i = 0; i < a->cfg->nls; i++)
		for (int side = 0; side < SIDE_COUNT; side++)
			if (a->ns[i][side] >= 0)
				close(a->ns[i][side]);
	free(a->cfg);
	a->cfg = NULL;
}

/**
 * allowed_open() - open every namespace a configuration names
 * @a:		@cfg set, @ns filled in
 * @err:	buffer for one line saying which cannot be opened
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set (and what was opened closed).
 */
int allowed_open(struct allowed *a, char *err, size_t errlen)
{
	char why[160];

	for (unsigned i = 0; i < CONFIG_MAX_LISTENERS; i++)
		a->ns[i][SIDE_CLIENT] = a->ns[i][SIDE_BACKEND] = -1;
	for (unsigned i = 0; i < a->cfg->nls; i++)
		for (int side = 0; side < SIDE_COUNT; side++) {
			const char *path = a->cfg->ls[i].netns[side];

			if (!*path)
				continue;
			a->ns[i][side] = netns_open(path, why, sizeof(why));
			if (a->ns[i][side] < 0) {
				snprintf(err, errlen, "listener %s: %s",
					 a->cfg->ls[i].name, why);
				allowed_free(a);
				return -1;
			}
		}
	return 0;
}

/**
 * backend_allowed() - does a listener allow this backend socket
 * @lo:	the listener
 * @r:	the request
 *
 * A socket without IP_TRANSPARENT is less than one with it, so a
 * transparent listener allows both.
 *
 * Return: true if it does.
 */
static bool backend_allowed(const struct listen_opts *lo,
			    const struct ph_req *r)
{
	bool family = false;

	for (unsigned b = 0; b < lo->nbackends; b++)
		family |= lo->backend[b].addr.ss_family == r->family;
	return family && !strcmp(lo->netns[SIDE_BACKEND], r->netns) &&
	       lo->mptcp[SIDE_BACKEND] == !!r->mptcp &&
	       (lo->transparent || !r->transparent);
}

/**
 * listen_allowed() - does a listener listen on exactly this
 * @lo:	the listener
 * @r:	the request
 *
 * Return: true if it does.
 */
static bool listen_allowed(const struct listen_opts *lo, const struct ph_req *r)
{
	return lo->listen.len && lo->listen.len == r->addrlen &&
	       !memcmp(&lo->listen.addr, &r->addr, r->addrlen) &&
	       !strcmp(lo->netns[SIDE_CLIENT], r->netns) &&
	       lo->mptcp[SIDE_CLIENT] == !!r->mptcp;
}

/**
 * allowed_find() - the namespace a request may be served in
 * @set:	the configurations requests are granted from
 * @r:		the request
 * @ns:		set to the namespace's descriptor (netns_home() for "")
 *
 * Return: 0, or -1 if no listener allows the request (EPERM).
 */
int allowed_find(const struct allowed set[NSETS], const struct ph_req *r,
		 int *ns)
{
	for (int g = 0; g < NSETS; g++) {
		const struct config *c = set[g].cfg;

		for (unsigned i = 0; c && i < c->nls; i++) {
			int side =
				r->op == PH_LISTEN ? SIDE_CLIENT : SIDE_BACKEND;

			if (r->op == PH_LISTEN ? !listen_allowed(&c->ls[i], r)
					       : !backend_allowed(&c->ls[i], r))
				continue;
			*ns = set[g].ns[i][side] >= 0 ? set[g].ns[i][side]
						      : netns_home();
			return 0;
		}
	}
	errno = EPERM;
	return -1;
}

/**
 * allowed_reload() - PH_RELOAD: read the configuration as the candidate
 * @set:	the configurations requests are granted from
 * @argc:	the daemon's command line
 * @argv:	its arguments
 * @inherited:	the daemon had sockets from socket activation
 * @msg:	buffer for one line saying why the file is refused
 * @msglen:	its size
 *
 * A candidate a refused reload left is replaced.
 *
 * Return: 0, or an errno with @msg set.
 */
int allowed_reload(struct allowed set[NSETS], int argc, char **argv,
		   bool inherited, char *msg, size_t msglen)
{
	struct allowed next = { calloc(1, sizeof(*next.cfg)), { { 0 } } };

	if (!next.cfg)
		return ENOMEM;
	if (options_parse(next.cfg, argc, argv, inherited, msg, msglen) !=
	    OPT_OK) {
		free(next.cfg);
		return EINVAL;
	}
	if (allowed_open(&next, msg, msglen))
		return EINVAL;
	allowed_free(&set[SET_CANDIDATE]);
	set[SET_CANDIDATE] = next;
	return 0;
}

/**
 * allowed_commit() - PH_COMMIT: the candidate runs; the one before stays a
 * while
 * @set:	the configurations requests are granted from
 *
 * Return: 0, or EINVAL if there is no candidate.
 */
int allowed_commit(struct allowed set[NSETS])
{
	if (!set[SET_CANDIDATE].cfg)
		return EINVAL;
	allowed_free(&set[SET_PREVIOUS]);
	set[SET_PREVIOUS] = set[SET_RUNNING];
	set[SET_RUNNING] = set[SET_CANDIDATE];
	set[SET_CANDIDATE].cfg = NULL;
	return 0;
}
