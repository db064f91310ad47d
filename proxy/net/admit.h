/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADMIT_H
#define SMBSPLICE_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "core/limits.h"

struct cidr;
struct listen_opts;
struct proxy;

bool admit_in(const struct cidr *list, unsigned n, const struct sockaddr *sa);
enum admit admit_client(struct proxy *px, const struct listen_opts *lo,
			const struct sockaddr *peer, bool check_allow,
			struct source_key *key, char *why, size_t whylen);

#endif /* SMBSPLICE_ADMIT_H */
