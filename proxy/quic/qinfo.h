/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_QINFO_H
#define SMBSPLICE_QINFO_H

/* qinfo.h - a QUIC connection's figures as the runtime view shows them
 * (ctl conns, ctl conn ID): a plain structure, so that the view reads
 * them through quic.h's quic_figures() and qdial.h's qdial_figures()
 * without knowing ngtcp2.
 */

#include <stdint.h>
#include <sys/socket.h>

/**
 * struct quic_figures - one QUIC connection, as ngtcp2 sees it now
 * @version:	the QUIC version (1 for QUIC v1)
 * @local:	the path's local UDP address: the listener's bound one, or
 *		the dial's socket's
 * @locallen:	its length
 * @remote:	the path's remote UDP address: the current one, after a
 *		migration the new one
 * @remotelen:	its length
 * @rtt_ns:	smoothed round-trip time (RFC 9002), ns
 * @cwnd:	congestion window, bytes
 * @in_flight:	bytes sent and neither acknowledged nor declared lost
 * @lost:	packets carrying the stream's bytes declared lost (ngtcp2
 *		0.12 counts losses per stream only; spurious ones
 *		included)
 */
struct quic_figures {
	uint32_t version;
	struct sockaddr_storage local, remote;
	socklen_t locallen, remotelen;
	uint64_t rtt_ns, cwnd, in_flight, lost;
};

#endif /* SMBSPLICE_QINFO_H */
