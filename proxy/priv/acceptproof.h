/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ACCEPTPROOF_H
#define SMBSPLICE_ACCEPTPROOF_H

/* The privileged helper's proof that a socket the daemon sends came from
 * accept(), not from the daemon's own connect() (acceptproof.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The headers TCP_SAVED_SYN gives at the most: IPv6 with a few extension
 * headers and a TCP header with every option; a longer SYN is refused. */
#define SAVED_SYN_MAX 320

/* How many proven sockets are remembered for a second request (a failover
 * to the next backend): the oldest is forgotten first. */
#define PROOF_RING 8192

bool acceptproof_syn_addresses(const uint8_t *syn, size_t len,
			       struct sockaddr_storage *src,
			       struct sockaddr_storage *dst);
bool acceptproof_same_host(const struct sockaddr_storage *a,
			   const struct sockaddr_storage *b);
bool acceptproof_check(int fd, const struct sockaddr_storage *self,
		       const struct sockaddr_storage *peer);
void acceptproof_forget_all(void);

#endif /* SMBSPLICE_ACCEPTPROOF_H */
