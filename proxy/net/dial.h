/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_DIAL_H
#define SMBSPLICE_DIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>

#include "conf/options.h"

int dial_backend(const struct listen_opts *lo, unsigned idx,
		 const struct sockaddr *client, int *fd);
struct privhelper;
int dial_backend_helped(struct privhelper *ph, unsigned chan,
			const struct listen_opts *lo, unsigned idx,
			int client_fd, int *fd);
/**
 * struct dial_req - one backend connect, as a connection asks for it
 * @lo:		the listener's settings
 * @be:		which of its backends
 * @netns:	the listener's backend namespace, -1 for the process's own
 * @netns_ino:	its inode, 0 for the process's own
 * @client:	the client's address, for --transparent
 * @client_fd:	the client's socket, for the privileged helper
 * @chan:	the helper's channel of the asking thread
 */
struct dial_req {
	const struct listen_opts *lo;
	unsigned be;
	int netns;
	ino_t netns_ino;
	const struct sockaddr *client;
	int client_fd;
	unsigned chan;
};

struct proxy;
int dial_from(struct proxy *px, ino_t here, const struct dial_req *r, int *fd);
int dial_udp_from(struct proxy *px, ino_t here, const struct dial_req *r,
		  int *fd);
void dial_failure_text(const struct listen_opts *lo, const char *why,
		       bool timed_out, char *out, size_t outlen);
int dial_check(const struct listen_opts *lo, struct privhelper *ph, char *err,
	       size_t errlen);
int dial_client_side(int fd, const struct listen_opts *lo, char *err,
		     size_t errlen);

#endif /* SMBSPLICE_DIAL_H */
