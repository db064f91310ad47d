/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PRIVHELPER_H
#define SMBSPLICE_PRIVHELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <linux/capability.h>

#include "conf/options.h"

/* What the helper keeps: IP_TRANSPARENT, setns(), ports below 1024. */
#define PRIVHELPER_CAPS                                                        \
	((1ull << CAP_NET_ADMIN) | (1ull << CAP_SYS_ADMIN) |                   \
	 (1ull << CAP_NET_BIND_SERVICE))

/**
 * struct privhelper - the daemon's end of the privileged helper
 * @pid:	the helper process
 * @fds:	one socketpair end per channel: 0 for the main thread, 1 + N
 *		for worker N, each used by its thread alone
 * @seq:	the last request's number, per channel
 * @nchan:	how many
 * @dead:	the helper was found gone (atomic; logged once)
 */
struct privhelper {
	pid_t pid;
	int *fds;
	unsigned *seq;
	unsigned nchan;
	bool dead;
};

int privhelper_start(struct privhelper *ph, const struct config *cfg, int argc,
		     char **argv, bool inherited, unsigned nchan, char *err,
		     size_t errlen);
int privhelper_backend(struct privhelper *ph, unsigned chan,
		       const char *listener, const char *netns, int family,
		       bool mptcp, int client);
int privhelper_listen(struct privhelper *ph, unsigned chan, const char *netns,
		      const struct sockaddr *sa, socklen_t len, bool mptcp);
int privhelper_reload(struct privhelper *ph, char *err, size_t errlen);
void privhelper_commit(struct privhelper *ph);
void privhelper_abort(struct privhelper *ph);
const char *privhelper_hint(int err);
void privhelper_stop(struct privhelper *ph);

#endif /* SMBSPLICE_PRIVHELPER_H */
