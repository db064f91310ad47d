/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PARSE_H
#define SMBSPLICE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/**
 * struct endpoint - a resolved HOST:PORT
 * @addr:	socket address, ready for bind() or connect()
 * @len:	length of @addr, 0 for none
 * @text:	the address as given, for logs
 */
struct endpoint {
	struct sockaddr_storage addr;
	socklen_t len;
	char text[128];
};

/**
 * struct cidr - a network, for --allow
 * @family:	AF_INET or AF_INET6
 * @addr:	its address, network byte order (4 or 16 bytes used)
 * @bits:	prefix length
 */
struct cidr {
	int family;
	uint8_t addr[16];
	unsigned bits;
};

/**
 * struct keepalive - TCP keepalive settings, for --keepalive
 * @idle:	seconds of silence before the first probe; 0 for off
 * @intvl:	seconds between probes
 * @cnt:	unanswered probes before the peer is declared dead
 */
struct keepalive {
	unsigned idle, intvl, cnt;
};

/* The largest splice threshold parse_threshold() takes. */
#define PARSE_MAX_THRESHOLD (16u << 20)

int parse_size(const char *s, size_t *out);
int parse_count(const char *s, unsigned min, unsigned max, unsigned *out);
int parse_seconds(const char *s, double *out);
int parse_threshold(const char *s, uint32_t *out);
int parse_endpoint(const char *s, struct endpoint *ep, bool passive);
int parse_address(const char *s, struct endpoint *ep);
int parse_cidr(const char *s, struct cidr *c);
bool parse_cidr_is_mapped(const struct cidr *c);
bool parse_cidr_match(const struct cidr *c, const struct sockaddr *sa);
int parse_keepalive(const char *s, struct keepalive *k);
int parse_netns(const char *s, char *path, size_t len);

#endif /* SMBSPLICE_PARSE_H */
