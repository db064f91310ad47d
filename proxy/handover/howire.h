/* SPDX-License-Identifier: GPL-2.0-or-later */
/* howire.h - the live handover's SOCK_SEQPACKET protocol (see howire.c) */
#ifndef SMBSPLICE_HOWIRE_H
#define SMBSPLICE_HOWIRE_H

#include <stddef.h>
#include <stdint.h>

enum ho_type {
	HO_HELLO = 1,	/* u32 image version NEW reads, u32 pid */
	HO_IMAGE_CHUNK, /* up to HO_CHUNK image bytes */
	HO_FDS,		/* u32 count, and count descriptors (fdpass) */
	HO_DONE,	/* u64 image length, u32 total descriptors */
	HO_TAKEN,	/* u32 connections */
	HO_FAIL,	/* text, at most HO_TEXT_MAX bytes, no NUL needed */
	HO_GO,		/* no body: the old process has stopped for good, the
			 * new one may touch the sockets */
};

#define HO_CHUNK (60u << 10) /* image bytes per message */
#define HO_FDS_BATCH                                                           \
	250 /* descriptors per HO_FDS message (SCM_MAX_FD is 253) */
#define HO_IMAGE_MAX (512u << 20)
#define HO_NFDS_MAX  65536u
#define HO_TEXT_MAX  255

/* The environment variable that names the new process's end of the
 * handover socket (launcher.c sets it, handover_in.c reads it). */
#define HO_ENV "SMBSPLICE_HANDOVER_FD"

/* How long each step of a handover may take once the new process has
 * said HELLO: the image's transfer, the rebuild, the reply. */
#define HO_STEP_TIMEOUT_MS 10000

/**
 * struct ho_msg_head - what every message starts with
 * @type:	an enum ho_type
 * @len:	the bytes of body that follow, in the same datagram
 */
struct ho_msg_head {
	uint32_t type;
	uint32_t len;
};

int howire_send(int sock, uint32_t type, const void *body, uint32_t len,
		int timeout_ms);
int howire_recv(int sock, uint32_t *type, void *body, uint32_t cap,
		uint32_t *len, int timeout_ms);
int howire_send_image(int sock, const void *img, size_t len, const int *fds,
		      size_t nfds, int timeout_ms);
int howire_recv_image(int sock, void **img, size_t *len, int **fds,
		      size_t *nfds, int timeout_ms, char *err, size_t errlen);
int howire_send_fail(int sock, const char *why, int timeout_ms);
int howire_recv_reply(int sock, uint32_t *taken, int timeout_ms, char *err,
		      size_t errlen);

#endif /* SMBSPLICE_HOWIRE_H */
