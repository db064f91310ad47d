/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_DIAL_H
#define SMBSPLICE_DIAL_H

#include <stddef.h>
#include <sys/socket.h>

#include "options.h"

int dial_backend(const struct listen_opts *lo, unsigned idx,
		 const struct sockaddr *client, int *fd);
struct privhelper;
int dial_backend_helped(struct privhelper *ph, unsigned chan,
			const struct listen_opts *lo, unsigned idx,
			int client_fd, int *fd);
int dial_check(const struct listen_opts *lo, struct privhelper *ph, char *err,
	       size_t errlen);
int dial_client_side(int fd, const struct listen_opts *lo, char *err,
		     size_t errlen);

#endif /* SMBSPLICE_DIAL_H */
