// SPDX-License-Identifier: GPL-2.0-or-later
/* main.c - smbsplice: a splicing TCP proxy for SMB
 *
 * Theory of operation: one process, one thread, one libev loop. main()
 * parses the command line (a bad option is one line and exit status 2),
 * prepares the process (SIGPIPE ignored: a write to a reset peer must come
 * back as EPIPE, not kill the daemon; the open-files limit raised to its
 * hard cap, since every connection needs two descriptors and every pipe
 * two), starts the listener and runs the loop until SIGINT or SIGTERM. On
 * either signal it stops accepting, ends every connection with its log
 * line, closes the pipe pool and exits 0.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "conn.h"
#include "log.h"
#include "options.h"
#include "proxy.h"

/**
 * raise_nofile_limit() - lift the soft open-files limit to the hard one
 */
static void raise_nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

/**
 * on_stop_signal() - SIGINT or SIGTERM: leave the loop
 * @loop:	the loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_stop_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct proxy *px = w->data;

	(void)revents;
	log_info("signal %d: stopping, %lu connections open", w->signum,
		 px->active);
	listener_stop(px);
	metrics_stop(px);
	conn_close_all(px);
	ev_break(loop, EVBREAK_ALL);
}

/**
 * watch_signal() - stop cleanly on @signum
 * @px:		the daemon
 * @w:		watcher to use
 * @signum:	SIGINT or SIGTERM
 */
static void watch_signal(struct proxy *px, ev_signal *w, int signum)
{
	ev_signal_init(w, on_stop_signal, signum);
	w->data = px;
	ev_signal_start(px->loop, w);
}

/**
 * main() - parse options, run the proxy until told to stop
 * @argc:	argument count
 * @argv:	arguments
 *
 * Return: 0 after a clean stop, 1 if the proxy could not start, 2 on a bad
 * command line.
 */
int main(int argc, char **argv)
{
	struct options opt;
	struct proxy px = { .listen_fd = -1, .metrics_fd = -1 };
	char err[256];

	switch (options_parse(&opt, argc, argv, err, sizeof(err))) {
	case OPT_EXIT:
		return 0;
	case OPT_BAD:
		fprintf(stderr, "smbsplice: %s\n", err);
		return 2;
	case OPT_OK:
		break;
	}
	log_verbosity = opt.verbose;
	signal(SIGPIPE, SIG_IGN);
	raise_nofile_limit();

	px.opt = &opt;
	px.loop = ev_default_loop(EVBACKEND_EPOLL);
	if (!px.loop) {
		log_err("cannot create the event loop (epoll)");
		return 1;
	}
	pool_init(&px.pool, opt.max_pipes, opt.pipe_size);
	if (listener_start(&px) || metrics_start(&px))
		return 1;
	watch_signal(&px, &px.sigint_w, SIGINT);
	watch_signal(&px, &px.sigterm_w, SIGTERM);
	log_info(
		"listening on %s, forwarding to %s (mode %s, pipe %zu, buffer %zu, max pipes %u%s)",
		opt.listen.text, opt.backend.text,
		opt.mode == MODE_SMB ? "smb" : "tcp", opt.pipe_size,
		opt.buf_size, opt.max_pipes, opt.splice ? "" : ", no splice");

	ev_run(px.loop, 0);

	pool_destroy(&px.pool);
	log_info("stopped after %lu connections", px.total);
	return 0;
}
