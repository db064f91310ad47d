/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_SOCKBUF_H
#define SMBSPLICE_SOCKBUF_H

#include "conf/options.h"

/* A path whose round trip is shorter than this is a host, a namespace or
 * a LAN: SOCKBUF_SHORT_BYTES covers its bandwidth-delay product. */
#define SOCKBUF_SHORT_RTT_US 200u
/* What a short path's socket is held at (the kernel doubles it for its
 * bookkeeping; the window it allows covers about 10 Gbit/s at 200 us). */
#define SOCKBUF_SHORT_BYTES (256u << 10)

unsigned sockbuf_choose(unsigned setting, unsigned rtt_us);
int sockbuf_fit(int fd, unsigned setting, unsigned *rtt_us);

#endif
