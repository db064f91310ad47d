// SPDX-License-Identifier: GPL-2.0-or-later
/* qprobe.c - a health probe's QUIC dial of a quic: backend
 *
 * Theory of operation: net/health.c probes every backend from the main
 * thread's loop; a quic: backend is reached as its connections reach it,
 * by a QUIC dial (qdial.c: the handshake, the server's certificate
 * checked as --quic-ca or --quic-pin say, the stream opened), whose
 * socketpair end then carries the probe's NEGOTIATE and its answer as a
 * TCP socket would. net/ sits below quic/, so the probe calls this
 * through struct health_quic, which the daemon hands it at start.
 */
#include "config.h"

#include "conf/options.h"
#include "core/proxy.h"
#include "net/dial.h"
#include "net/health.h"
#include "net/listener.h"
#include "quic/qdial.h"

/**
 * probe_open() - start a probe's dial of a quic: backend
 * @px:		the process
 * @cfg:	the listener's settings
 * @be:		the backend
 * @done:	told once, from the loop: the stream is open, or why not
 * @ctx:	its argument
 * @dial:	the dial, on success
 * @fd:		the socketpair end the stream is carried on, on success
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * From the main thread, which sits in the process's own namespace, or
 * under --user in the workers' (as net/health.c's TCP probes).
 *
 * Return: 0, or -1 with @err set.
 */
static int probe_open(struct proxy *px, const struct lcfg *cfg, unsigned be,
		      health_done_fn done, void *ctx, void **dial, int *fd,
		      char *err, size_t errlen)
{
	struct dial_req req = {
		.lo = &cfg->o,
		.be = be,
		.netns = cfg->netns[SIDE_BACKEND],
		.netns_ino = cfg->netns_ino[SIDE_BACKEND],
		.client_fd = -1,
	};
	struct qdial_req qr = {
		.loop = px->loop,
		.px = px,
		.here = px->helper.fds ? px->worker_netns_ino : px->home_ino,
		.dial = &req,
		.done = done,
		.ctx = ctx,
	};

	return qdial_open(&qr, (struct qdial **)dial, fd, err, errlen);
}

/**
 * probe_release() - let go of a probe's dial
 * @dial:	the dial
 */
static void probe_release(void *dial)
{
	qdial_release(dial);
}

static const struct health_quic ops = { probe_open, probe_release };

/**
 * qdial_health() - how health probes dial quic: backends
 *
 * Return: the calls, for health_set_quic().
 */
const struct health_quic *qdial_health(void)
{
	return &ops;
}
