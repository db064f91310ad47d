// SPDX-License-Identifier: GPL-2.0-or-later
/* sockbuf.c - how much a connection's socket may hold
 *
 * Theory of operation: the kernel's receive autotuning grows a socket's
 * buffer to about twice what the application read in one round trip, up
 * to tcp_rmem's maximum (6 MiB by default, often raised: 32 MiB on the
 * bench machine). A splicing forwarder reads a megabyte a time, so on a
 * path of a few microseconds its sockets grow to the maximum, although a
 * few hundred kilobytes cover that path's bandwidth-delay product many
 * times over. The excess is not free: it is kernel memory held per
 * connection, and it lets a server hand a whole large response to the
 * kernel long before the client has read the one before it. Samba's smbd
 * then frees both of its 8 MiB READ buffers before the next READ comes,
 * glibc returns the top of the heap to the kernel, and every following
 * READ faults its buffer in again, page by page (docs/benchmarks.md, the
 * 1 GiB get): the get ran at half the rate of a proxy that happened to
 * buffer less.
 *
 * So, by default (SOCKBUF_AUTO), a socket whose path turns out to be short
 * (its RTT, measured by the kernel during the handshake, is below
 * SOCKBUF_SHORT_RTT_US) is held at SOCKBUF_SHORT_BYTES, which still
 * covers the path; a longer path, where the bandwidth-delay product is
 * unknown and may be large, is left to autotuning. Without a measured RTT
 * (none yet, or TCP_INFO refused) the kernel keeps the socket. The size is
 * the kernel's to double, for its bookkeeping; of the 512 KiB, what the
 * window may use depends on how full each packet's buffer is: about
 * 256-350 KiB at an MTU of 1500, 10 Gbit/s at 200 us.
 * --socket-buffer kernel leaves every socket to autotuning, and a size
 * fixes every socket of that side (dial.c sets those before the
 * handshake, so that the window scale is chosen for them).
 */
#include "config.h"

#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "io/sock.h"
#include "io/sockbuf.h"

/**
 * sockbuf_choose() - the buffer size a connected socket should be held at
 * @setting:	the side's --socket-buffer: SOCKBUF_AUTO, SOCKBUF_KERNEL or a
 *		size (already applied before the handshake)
 * @rtt_us:	the path's round trip as the kernel measured it, 0 if unknown
 *
 * Return: the size to fix now, or 0 to leave the socket as it is.
 */
unsigned sockbuf_choose(unsigned setting, unsigned rtt_us)
{
	if (setting != SOCKBUF_AUTO || !rtt_us)
		return 0;
	return rtt_us < SOCKBUF_SHORT_RTT_US ? SOCKBUF_SHORT_BYTES : 0;
}

/**
 * sockbuf_fit() - hold a connected socket's buffers to what its path needs
 * @fd:		a connected TCP or MPTCP socket
 * @setting:	the side's --socket-buffer
 * @rtt_us:	set to the RTT the choice was made on (0: none known)
 *
 * Return: the size fixed, 0 if the socket was left as it was, -1 with
 * errno set if setting the size failed (the send side may then be held
 * and the receive side not).
 */
int sockbuf_fit(int fd, unsigned setting, unsigned *rtt_us)
{
	struct tcp_info ti = { 0 };
	socklen_t len = sizeof(ti);
	unsigned bytes;

	*rtt_us = 0;
	if (setting != SOCKBUF_AUTO)
		return 0;
	/* MPTCP may refuse TCP_INFO: then there is no RTT to go by. */
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
	    len >= offsetof(struct tcp_info, tcpi_rttvar))
		*rtt_us = ti.tcpi_rtt;
	bytes = sockbuf_choose(setting, *rtt_us);
	if (!bytes)
		return 0;
	return sock_set_buffers(fd, bytes) ? -1 : (int)bytes;
}
