/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_REUSEPORT_H
#define SMBSPLICE_REUSEPORT_H

#include <stddef.h>

/* Slots of a steered reuseport group: the first byte of every connection
 * ID a QUIC listener issues names the slot of the socket (the worker)
 * whose connection it is, and the kernel's program delivers a datagram
 * carrying that ID to that socket (reuseport.c). */
#define REUSEPORT_SLOTS 256
/* The length of the connection IDs the program reads a slot from; other
 * lengths (a client's own first ID) are left to the kernel's hash. */
#define REUSEPORT_CIDLEN 18

int reuseport_steer_quic(int *map, const int *fds, unsigned n, unsigned *base,
			 char *err, size_t errlen);

#endif /* SMBSPLICE_REUSEPORT_H */
