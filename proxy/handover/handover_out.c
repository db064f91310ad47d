// SPDX-License-Identifier: GPL-2.0-or-later
/* handover_out.c - a live upgrade: every listener and connection to the next
 *		binary (SIGUSR2)
 *
 * Theory of operation, as a two-phase commit between the old process
 * (OLD, the one that got SIGUSR2) and the new one (NEW, the binary now at
 * the path OLD was started from, with OLD's command line):
 *
 *   1. OLD starts NEW (launcher.c: directly, or through the root launcher
 *      under --user, since NEW must start as root to fork its own helper)
 *      with a SOCK_SEQPACKET socket as its descriptor 3, and goes on
 *      forwarding while NEW reads its configuration.
 *   2. NEW, seeing SMBSPLICE_HANDOVER_FD, says HELLO before it binds
 *      anything, and waits for the image.
 *   3. OLD pauses every worker between events (connmove_cmd_pause: no watcher
 *      runs, clients queue in the kernel), has each write its listening
 *      sockets and connections into the image (connmove_cmd_save, connmove.c),
 *      adds its counters, and sends the image with every descriptor
 *      (howire.c).
 *   4. NEW checks the image (image.c), takes the listening sockets in
 *      place of binding, starts, rebuilds every connection without
 *      starting a watcher, and says TAKEN.
 *   5. OLD tells systemd that NEW is the main process, says GO, forgets
 *      everything (connmove_cmd_abandon: its copies of the descriptors
 *      are closed, which sends nothing to any peer) and exits 0; but for
 *      its QUIC connections (connmove_stays()), whose state is inside
 *      ngtcp2 and cannot be carried: those it serves to their end, as a
 *      drain (main.c's handed_over()), while NEW takes every new client
 *      through the steering map the image carries (write_quic()).
 *   6. NEW, on GO, starts its watchers: forwarding resumes where it
 *      stopped.
 *
 * Until OLD says GO no process but OLD has read or written a socket, so
 * any failure before it (NEW missing, not starting, refusing the
 * configuration or the image, dying, taking too long) costs nothing:
 * OLD unpauses its workers (connmove_cmd_unpause) and forwards on, with
 * one line saying why. NEW, without GO, leaves with _exit() and touches
 *nothing. After GO, the connections are NEW's alone; if NEW dies then, they die
 * with it, as they would have with OLD.
 *
 * The pause lasts from step 3 to step 5; its length is logged.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "conn/connhost.h"
#include "handover/connmove.h"
#include "control/control.h"
#include "handover/exesafe.h"
#include "handover/handover.h"
#include "handover/howire.h"
#include "net/listener.h"
#include "common/log.h"
#include "control/metrics.h"
#include "common/monotime.h"
#include "core/notify.h"
#include "core/proxy.h"
#include "observe/tracefile.h"
#include "quic/qdial.h"
#include "worker/worker.h"

/* Handing over, if this process is; only the main thread touches it. */
static struct handover_out hout = { .sock = -1 };

/* How long NEW may take to start and say HELLO: a sanitizer build on a
 * loaded machine takes seconds. Each later step has HO_STEP_TIMEOUT_MS. */
#define HELLO_TIMEOUT 60.0

/**
 * warn_unsafe_exe() - say at start what SIGUSR2 would refuse later
 * @exe:	the binary a handover starts
 *
 * The launcher checks the binary at each handover, when a package
 * upgrade would find out; the admin learns it now, in the same words.
 */
static void warn_unsafe_exe(const char *exe)
{
	char why[EXE_SAFE_WHY];

	if (exesafe_check(exe, why, sizeof(why)) > 0)
		log_warn("SIGUSR2 will not hand over to %s: %s; %s", exe, why,
			 EXE_UNSAFE_HINT);
}

/**
 * handover_init() - be ready for SIGUSR2
 * @px:		the process, at start, before any privilege is dropped
 * @done:	what stops the process once it has handed over
 *
 * The binary's path is resolved now: an upgrade replaces the file, and
 * /proc/self/exe would then name the deleted one. With --user, the root
 * launcher is forked now, while there is root to keep.
 *
 * Return: 0, or -1 after logging why.
 */
int handover_init(struct proxy *px, void (*done)(struct proxy *px))
{
	struct handover_out *ho = &hout;

	ho->ln = LAUNCHER_NONE;
	ho->sock = -1;
	ho->done = done;
	if (launcher_self_exe(ho->exe, sizeof(ho->exe))) {
		log_warn(
			"cannot tell which binary this is (%s): SIGUSR2 will not hand over",
			strerror(errno));
		ho->exe[0] = '\0';
		return 0;
	}
	if (*px->opt->user && launcher_start(&ho->ln, ho->exe, px->argv)) {
		log_err("cannot start the launcher for SIGUSR2: %s",
			strerror(errno));
		return -1;
	}
	if (*px->opt->user)
		warn_unsafe_exe(ho->exe);
	return 0;
}

/**
 * end_child() - the new process is of no more use: make sure it is gone
 * @px:		the process
 * @why:	set to how it ended, if it did
 * @len:	its size
 *
 * A process that never got GO touches nothing, but it must not linger:
 * a direct child is killed and reaped (or, the service manager's, killed
 * and seen to end); through the launcher it ends on the hang-up of its
 * socket, and the launcher reaps it.
 */
static void end_child(struct proxy *px, char *why, size_t len)
{
	struct handover_out *ho = &hout;
	int status = 0, r = 0;

	close(ho->sock);
	ho->sock = -1;
	for (int i = 0;
	     i < 100 && !(r = launcher_reap(&ho->ln, ho->pid, &status)); i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	if (r == 0 && ho->ln.fd < 0)
		r = launcher_kill(ho->pid, &status);
	if (r == 1 && WIFEXITED(status))
		snprintf(why, len, " (it exited with status %d)",
			 WEXITSTATUS(status));
	else if (r == 1 && WIFSIGNALED(status))
		snprintf(why, len, " (it was killed by signal %d)",
			 WTERMSIG(status));
	else
		*why = '\0';
	ho->pid = 0;
}

/**
 * trace_again() - the handover failed: capture again where hand_over()
 *		   closed the file
 * @px:	the process
 */
static void trace_again(struct proxy *px)
{
	char err[320];

	if (!*px->opt->trace || tracefile_enabled())
		return;
	if (tracefile_open(px->opt->trace, px->opt->trace_max, err,
			   sizeof(err)))
		log_err("%s; the capture stops here", err);
	else
		tracefile_start();
}

/**
 * fail() - the handover failed: forward on here
 * @px:		the process
 * @paused:	its workers were paused
 * @why:	what failed
 */
static void fail(struct proxy *px, bool paused, const char *why)
{
	char how[64];

	ev_io_stop(px->loop, &hout.w);
	ev_timer_stop(px->loop, &hout.timer);
	if (paused) {
		trace_again(px);
		for (unsigned i = 0; i < px->nworkers; i++)
			worker_run(&px->workers[i],
				   &(struct worker_cmd){
					   .ops = &connmove_cmd_unpause },
				   WORKER_CMD_NOWAIT);
		worker_sync_all(px);
	}
	end_child(px, how, sizeof(how));
	log_err("handover failed: %s%s; this process goes on forwarding", why,
		how);
}

/**
 * save_counters() - every listener's counters, so that no counter of
 *		     /metrics starts again from 0
 * @px:	the process, paused
 * @w:	the image
 */
static void save_counters(struct proxy *px, struct image_writer *w)
{
	struct img_process pr = {
		.nworkers = px->nworkers,
		.pid = (int32_t)getpid(),
		.last_id = conn_host_last_id(),
		.now = ev_time(),
		.metrics_fd = image_write_fd(w, metrics_socket(px)),
		.control_fd = image_write_fd(w, control_socket(CONTROL_ADMIN)),
		.control_ro_fd =
			image_write_fd(w, control_socket(CONTROL_VIEW)),
		.lstats_words = sizeof(struct lstats) / sizeof(uint64_t),
	};

	for (unsigned i = 0; i < px->nworkers; i++)
		pr.accepted += worker_accepted(&px->workers[i]);
	image_write_put(w, IMG_PROCESS, &pr, sizeof(pr), NULL, NULL, 0);
	for (struct listener *l = px->listeners; l; l = l->next) {
		if (listener_is(l, LISTENER_PASSED_ON))
			continue; /* a newer one of its name has them */
		for (unsigned i = 0; i < px->nworkers; i++) {
			struct img_lstats s = { .worker = i };
			const void *tail = &l->st[i];
			size_t len = sizeof(l->st[i]);

			snprintf(s.name, sizeof(s.name), "%s", l->name);
			image_write_put(w, IMG_LSTATS, &s, sizeof(s), &tail,
					&len, 1);
		}
	}
}

/**
 * write_quic() - each QUIC listener's steering map, for the next process
 *		  to take slots of
 * @px:	the process, paused
 * @w:	the image
 */
static void write_quic(struct proxy *px, struct image_writer *w)
{
	for (struct listener *l = px->listeners; l; l = l->next) {
		struct img_quic q = { .addrlen = l->cfg->o.listen.len };

		if (!l->cfg->o.quic || l->quic_map < 0 ||
		    listener_is(l, LISTENER_RETIRED) ||
		    q.addrlen > sizeof(q.addr))
			continue;
		snprintf(q.name, sizeof(q.name), "%s", l->name);
		memcpy(q.addr, &l->cfg->o.listen.addr, q.addrlen);
		q.map_fd = image_write_fd(w, l->quic_map);
		image_write_put(w, IMG_QUIC, &q, sizeof(q), NULL, NULL, 0);
	}
}

/**
 * struct steps - when each step of a handover ended, for its log line
 * @t0:		the pause began
 * @paused:	every worker was paused
 * @written:	the image was written
 * @sent:	it was sent, with its descriptors
 * @taken:	the new process said TAKEN
 * @go:		GO was said: the pause ended
 * @bytes:	the image's size
 * @nfds:	its descriptors
 */
struct steps {
	uint64_t t0, paused, written, sent, taken, go;
	size_t bytes, nfds;
};

/**
 * ms() - milliseconds between two mono_ns() readings
 * @from:	the first
 * @to:		the second
 *
 * Return: the time.
 */
static double ms(uint64_t from, uint64_t to)
{
	return (double)(to - from) / 1e6;
}

/**
 * write_image() - step 3's first half: pause every worker, write the image
 * @px:	the process; the new process has said HELLO
 * @w:	the image, set up here; image_write_free() it unless 1 came back
 * @st:	the steps' times
 *
 * A worker's PAUSE or SAVE that could not be queued would leave it
 * forwarding, or its connections out of the image: the handover fails
 * instead. A worker that does not answer in time may still write into
 * @w, which is then left to it, never freed.
 *
 * Return: 0; -1 (memory ran out) or 1 (a worker did not answer), with the
 * workers paused.
 */
static int write_image(struct proxy *px, struct image_writer *w,
		       struct steps *st)
{
	int r = 0;

	/* A worker left forwarding would carry on beside the new process. */
	for (unsigned i = 0; i < px->nworkers; i++)
		if (worker_run(
			    &px->workers[i],
			    &(struct worker_cmd){ .ops = &connmove_cmd_pause },
			    WORKER_CMD_NOWAIT))
			r = -1;
	worker_sync_all(px);
	st->paused = mono_ns();
	/* Every record of this process in the file before the next one
	 * appends its own: the two must not interleave. */
	tracefile_close();
	image_write_init(w);
	if (r)
		return r;
	image_write_reserve(w, worker_active_all(px));
	save_counters(px, w);
	write_quic(px, w);
	for (unsigned i = 0; i < px->nworkers && !r; i++)
		r = worker_run(&px->workers[i],
			       &(struct worker_cmd){ .ops = &connmove_cmd_save,
						     .arg = w },
			       WORKER_CMD_WAIT);
	if (r)
		return r;
	st->written = mono_ns();
	st->bytes = w->len;
	st->nfds = w->nfds;
	return image_write_finish(w);
}

/**
 * hand_over() - steps 3 and 5: pause, send everything, and go or resume
 * @px:	the process; the new process has said HELLO
 */
static void hand_over(struct proxy *px)
{
	struct handover_out *ho = &hout;
	struct steps st = { .t0 = mono_ns() };
	struct image_writer w;
	uint32_t taken = 0;
	unsigned long stay;
	char err[320];
	int r = write_image(px, &w, &st);

	if (r) {
		if (r < 0)
			image_write_free(&w);
		fail(px, true,
		     r < 0 ? "out of memory writing the image"
			   : "a worker did not answer in time while writing the image");
		return;
	}
	if (howire_send_image(ho->sock, w.p, w.len, w.fds, w.nfds,
			      HO_STEP_TIMEOUT_MS)) {
		snprintf(err, sizeof(err), "sending the image: %s",
			 strerror(errno));
		image_write_free(&w);
		fail(px, true, err);
		return;
	}
	image_write_free(&w);
	st.sent = mono_ns();
	if (howire_recv_reply(ho->sock, &taken, HO_STEP_TIMEOUT_MS, err,
			      sizeof(err))) {
		fail(px, true, err);
		return;
	}
	st.taken = mono_ns();
	/* Before GO, so that systemd hears MAINPID= before the new
	 * process's READY=1, which it sends once it has GO. Should GO not go
	 * through, this process is the main one again at once. */
	notify_mainpid(ho->pid);
	if (howire_send(ho->sock, HO_GO, NULL, 0, HO_STEP_TIMEOUT_MS)) {
		snprintf(err, sizeof(err), "saying GO: %s", strerror(errno));
		notify_mainpid(getpid());
		fail(px, true, err);
		return;
	}
	st.go = mono_ns();
	ev_io_stop(px->loop, &ho->w);
	ev_timer_stop(px->loop, &ho->timer);
	for (unsigned i = 0; i < px->nworkers; i++)
		worker_run(&px->workers[i],
			   &(struct worker_cmd){ .ops = &connmove_cmd_abandon },
			   WORKER_CMD_NOWAIT);
	worker_sync_all(px);
	control_forget(px);
	/* The pause is what the clients saw: it ended at GO, when the new
	 * process began forwarding; forgetting the copies came after. */
	log_info(
		"handover: %u connections to pid %d, forwarding paused %.1f ms (workers paused in %.1f, an image of %zu bytes and %zu descriptors written in %.1f, sent in %.1f, taken in %.1f)",
		taken, (int)ho->pid, ms(st.t0, st.go), ms(st.t0, st.paused),
		st.bytes, st.nfds, ms(st.paused, st.written),
		ms(st.written, st.sent), ms(st.sent, st.taken));
	stay = worker_active_all(px);
	if (stay)
		log_info(
			"handover: %lu QUIC connections stay in this process (pid %d) to their end, for up to --drain-timeout; new ones go to pid %d",
			stay, (int)getpid(), (int)ho->pid);
	close(ho->sock);
	ho->sock = -1;
	ho->done(px);
}

/**
 * on_hello() - the new process said HELLO, or went away
 * @loop:	the main loop
 * @iow:	&handover_out.w
 * @revents:	unused
 */
static void on_hello(struct ev_loop *loop, ev_io *iow, int revents)
{
	struct proxy *px = iow->data;
	uint32_t type, len, body[2];

	(void)loop;
	(void)revents;
	if (howire_recv(hout.sock, &type, body, sizeof(body), &len, 0)) {
		fail(px, false,
		     errno == ECONNRESET
			     ? "the new process ended before it took over"
			     : "the new process's first message was not HELLO");
		return;
	}
	if (type == HO_FAIL || type != HO_HELLO || len != sizeof(body)) {
		fail(px, false,
		     "the new process's first message was not HELLO");
		return;
	}
	if (px->state != PX_RUNNING) {
		fail(px, false, "this process began to stop meanwhile");
		return;
	}
	if (body[0] != IMG_VERSION) {
		fail(px, false,
		     "the new binary reads another image format: stop this process to upgrade (drain and restart)");
		return;
	}
	hand_over(px);
}

/**
 * on_hello_timeout() - the new process took too long to start
 * @loop:	the main loop
 * @t:		&handover_out.timer
 * @revents:	unused
 */
static void on_hello_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)revents;
	fail(t->data, false, "the new process did not start within 60 s");
}

/**
 * refusal() - why a handover cannot start now
 * @px:	the process
 *
 * Return: the reason, or NULL if it can.
 */
static const char *refusal(const struct proxy *px)
{
	if (px->state != PX_RUNNING)
		return "the process is stopping";
	if (hout.sock >= 0)
		return "a handover is already under way";
	if (!hout.exe[0])
		return "the path of this binary is unknown";
	for (const struct listener *l = px->listeners; l; l = l->next)
		if (l->held && !listener_is(l, LISTENER_RETIRED))
			return "a listener is drained through the control socket (smbsplice ctl resume it first)";
	/* A QUIC connection's state is inside ngtcp2 in this process: it
	 * stays here to its end, and the next process takes new ones, which
	 * takes the steering map (write_quic()). Without one, the next
	 * process could not share the address: refused rather than reset. */
	for (const struct listener *l = px->listeners; l; l = l->next)
		if (l->cfg && l->cfg->o.quic && l->quic_map < 0 &&
		    !listener_is(l, LISTENER_RETIRED))
			return "a QUIC listener whose datagrams are not steered by connection ID (no CAP_BPF at start) cannot share its address with the next process (restart instead)";
	/* Nor can a quic: backend's: its QUIC client is in this process. */
	for (const struct listener *l = px->listeners; l; l = l->next)
		if (l->cfg && qdial_any(&l->cfg->o) &&
		    !listener_is(l, LISTENER_RETIRED))
			return "a QUIC backend's connections cannot be handed over yet (restart instead)";
	return NULL;
}

/**
 * handover_start() - SIGUSR2: step 1, start the new binary
 * @px:	the process
 */
void handover_start(struct proxy *px)
{
	struct handover_out *ho = &hout;
	const char *no = refusal(px);
	char err[PATH_MAX + 64];
	int sv[2];

	if (no) {
		log_warn("SIGUSR2: %s; no handover", no);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
		       0, sv)) {
		log_err("SIGUSR2: socketpair: %s; no handover",
			strerror(errno));
		return;
	}
	ho->pid = launcher_spawn(&ho->ln, ho->exe, px->argv, sv[1], err,
				 sizeof(err));
	close(sv[1]);
	if (ho->pid < 0) {
		close(sv[0]);
		log_err("handover failed: %s; this process goes on forwarding",
			err);
		return;
	}
	ho->sock = sv[0];
	log_info("SIGUSR2: started %s (pid %d) to hand over to", ho->exe,
		 (int)ho->pid);
	ev_io_init(&ho->w, on_hello, ho->sock, EV_READ);
	ho->w.data = px;
	ev_io_start(px->loop, &ho->w);
	ev_timer_init(&ho->timer, on_hello_timeout, HELLO_TIMEOUT, 0.);
	ho->timer.data = px;
	ev_timer_start(px->loop, &ho->timer);
}

/**
 * handover_stop() - the process stops: end a handover under way, and the
 *		     launcher
 * @px:	the process
 */
void handover_stop(struct proxy *px)
{
	char how[64];

	if (hout.sock >= 0) {
		ev_io_stop(px->loop, &hout.w);
		ev_timer_stop(px->loop, &hout.timer);
		end_child(px, how, sizeof(how));
	}
	launcher_stop(&hout.ln);
}
