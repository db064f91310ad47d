// SPDX-License-Identifier: GPL-2.0
/*
 * ksmbd_shim.c - an LD_PRELOAD library for ksmbd.mountd that fills in the
 * payload size of its share-config replies.
 *
 * Theory of operation: the kernel's ksmbd asks the user-space daemon
 * ksmbd.mountd, over generic netlink, for each share's configuration at
 * tree connect. Debian 12's ksmbd-tools 3.4.7 answers with a struct
 * ksmbd_share_config_response whose payload_sz (at byte 0x210) it leaves
 * at 0, although it appends the share's path (the payload, from 0x218)
 * after the struct. Debian's kernels from 6.1.190 on check that the
 * netlink attribute is exactly sizeof(struct) + payload_sz and drop any
 * other answer: every tree connect, IPC$ included, then fails with
 * STATUS_BAD_NETWORK_NAME. The daemon builds the attribute with libnl's
 * nla_put(); this library wraps that call and, for the share-config
 * response (type 7, KSMBD_EVENT_SHARE_CONFIG_RESPONSE) with a zero
 * payload_sz, passes on a copy with payload_sz set to what follows the
 * struct. Everything else goes to the real nla_put unchanged. On a kernel
 * that does not check, the answer it fixes is as good as the original.
 *
 * Built by tests/guest/build.sh with the host's gcc (same Debian release
 * as the guest's libraries) and preloaded by the guest's ksmbd_serve.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SHARE_CONFIG_RESPONSE 7
#define PAYLOAD_SZ_OFF 0x210
#define PAYLOAD_OFF 0x218

struct nl_msg;
typedef int (*nla_put_fn)(struct nl_msg *, int, int, const void *);

int nla_put(struct nl_msg *msg, int type, int len, const void *data);

/**
 * nla_put() - libnl's nla_put, with share-config replies made whole.
 * @msg: the netlink message.
 * @type: the attribute's type (the ksmbd event).
 * @len: the attribute's length.
 * @data: its bytes.
 *
 * Return: what the real nla_put returns; -1 when no copy can be made.
 */
int nla_put(struct nl_msg *msg, int type, int len, const void *data)
{
	static nla_put_fn real;
	uint32_t psz;
	char *fixed;
	int ret;

	if (!real)
		real = (nla_put_fn)dlsym(RTLD_NEXT, "nla_put");
	if (type != SHARE_CONFIG_RESPONSE || len <= PAYLOAD_OFF)
		return real(msg, type, len, data);
	memcpy(&psz, (const char *)data + PAYLOAD_SZ_OFF, sizeof(psz));
	if (psz)
		return real(msg, type, len, data);
	fixed = malloc(len);
	if (!fixed)
		return -1;
	memcpy(fixed, data, len);
	psz = len - PAYLOAD_OFF;
	memcpy(fixed + PAYLOAD_SZ_OFF, &psz, sizeof(psz));
	ret = real(msg, type, len, fixed);
	free(fixed);
	return ret;
}
