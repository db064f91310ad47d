/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PP2_H
#define SMBSPLICE_PP2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The 12 bytes every v2 header opens with. */
#define PP2_SIG	    "\r\n\r\n\0\r\nQUIT\n"
#define PP2_SIG_LEN 12
/* Signature, version and command, family and protocol, length. */
#define PP2_FIXED_LEN 16
/* The longest header the builder makes (TCP over IPv6, no TLVs). */
#define PP2_BUILD_MAX (PP2_FIXED_LEN + 36)
/* The longest header the protocol allows: the length field is 16 bits. */
#define PP2_MAX_LEN (PP2_FIXED_LEN + 65535)

enum pp2_result {
	PP2_OK,	       /* a whole header: see struct pp2_info */
	PP2_NEED_MORE, /* a valid beginning: read more and call again */
	PP2_ERROR,     /* not a valid header: reset, log the reason */
};

/**
 * struct pp2_info - what a header said
 * @len:	bytes the header takes, TLVs included: the stream's own bytes
 *		begin there
 * @local:	LOCAL command (a health check of the sender's own): the
 *		connection's own addresses stand
 * @has_addr:	@src and @dst hold the client's and the destination's
 *		addresses (PROXY over TCP/IPv4 or TCP/IPv6); false for LOCAL
 *		and for PROXY with the family UNSPEC
 * @src:	the client's address and port
 * @dst:	the address and port the client connected to
 * @addrlen:	the length of @src and of @dst, when @has_addr
 * @tlvs:	TLVs the header carried (skipped, each length checked)
 */
struct pp2_info {
	size_t len;
	bool local;
	bool has_addr;
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	socklen_t addrlen;
	unsigned tlvs;
};

int pp2_build(uint8_t *out, size_t outlen, const struct sockaddr *src,
	      const struct sockaddr *dst);
enum pp2_result pp2_parse(const uint8_t *buf, size_t n, size_t max_len,
			  struct pp2_info *info, const char **why);

#endif
