/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_OUTBUF_H
#define SMBSPLICE_OUTBUF_H

/* outbuf.h - an answer of the control socket, built in bounded memory */

#include <stdbool.h>
#include <stddef.h>

/**
 * struct outbuf - an answer being built
 * @p:		the bytes, malloc()ed
 * @len:	how many
 * @cap:	room in @p
 * @max:	the most it may grow to
 * @full:	memory or @max ran out: the answer is cut
 */
struct outbuf {
	char *p;
	size_t len, cap, max;
	bool full;
};

void outbuf_printf(struct outbuf *ob, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void outbuf_json_str(struct outbuf *ob, const char *s);

#endif /* SMBSPLICE_OUTBUF_H */
