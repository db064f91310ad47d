// SPDX-License-Identifier: GPL-2.0-or-later
/* main.c - smbsplice-wanem: a WAN between two network namespaces, in user
 * space
 *
 * Theory of operation: this kernel has neither netem nor fq, so the WAN a
 * test (or a user trying a gateway) needs is made here. Two tun devices,
 * one in each namespace (tun.c), are the two ends of the path; every IP
 * packet one namespace's stack sends into its device is read here, given
 * its fate by the loss models (loss.c) and its due time by the
 * direction's bottleneck and delay line (line.c), and written into the
 * other device when that time comes.
 *
 * One thread, one epoll set: the two tun descriptors and a signalfd. The
 * loop writes out whatever is due in each direction, then sleeps in
 * epoll_pwait2() until the earlier of the two heads is due or a packet or
 * signal arrives (a nanosecond timeout, with the timer slack cut to a
 * microsecond, so the delay is kept to well under its 0.5 ms tolerance).
 * Each readable device is read up to BATCH packets a turn, so one
 * direction's flood cannot starve the other or the clock.
 *
 * Signals: SIGHUP re-reads --control over the command line's settings
 * (options.c), SIGUSR1 prints each direction's counters, SIGTERM and
 * SIGINT print them and exit 0; the devices vanish with their
 * descriptors. A device that disappears (its namespace deleted) ends
 * the program with status 1 and a line saying so.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>

#include "line.h"
#include "common/log.h"
#include "loss.h"
#include "common/monotime.h"
#include "common/netns.h"
#include "wan_options.h"
#include "tun.h"

#define BATCH	    64
#define EV_SIGNAL   2	 /* epoll data of the signalfd; 0 and 1 are sides */
#define TIMER_SLACK 1000 /* ns */

static const char *const dir_name[NDIRS] = { "a->b", "b->a" };

/**
 * struct counters - what one direction did with its packets
 * @pkts:	written out
 * @bytes:	their bytes
 * @loss:	lost to --loss
 * @burst:	lost to --burst
 * @queue:	dropped at the bottleneck queue's tail
 * @limit:	dropped because the direction held --limit packets
 * @errors:	refused by the device they were written to
 */
struct counters {
	uint64_t pkts, bytes, loss, burst, queue, limit, errors;
};

/**
 * struct dir - one direction
 * @line:	its queue and delay line
 * @in:		the device it reads
 * @out:	the device it writes
 * @bad:	its Gilbert-Elliott state
 * @blocked:	the last write would have blocked: wait for EPOLLOUT
 * @c:		its counters
 */
struct dir {
	struct line line;
	int in, out;
	bool bad, blocked;
	struct counters c;
};

/**
 * struct wanem - the running emulator
 * @conf:	the settings in force
 * @base:	the command line's, which a reload starts from
 * @fd:		side A's and side B's devices
 * @ep:		the epoll set
 * @sig:	the signalfd
 * @rng:	the one generator
 * @dir:	both directions
 * @scratch:	where a packet no slot can take is read, to be dropped
 */
struct wanem {
	struct wan_conf conf, base;
	int fd[2], ep, sig;
	struct rng rng;
	struct dir dir[NDIRS];
	unsigned char *scratch;
};

/**
 * log_settings() - one line with both directions' settings
 * @w:		the emulator
 * @what:	what the line opens with
 */
static void log_settings(const struct wanem *w, const char *what)
{
	char ab[256], ba[256];

	wan_options_describe(&w->conf, DIR_AB, ab, sizeof(ab));
	wan_options_describe(&w->conf, DIR_BA, ba, sizeof(ba));
	log_info("%s: a->b: %s; b->a: %s", what, ab, ba);
}

/**
 * log_counters() - one line per direction with its counters
 * @w:	the emulator
 */
static void log_counters(const struct wanem *w)
{
	for (int d = 0; d < NDIRS; d++) {
		const struct counters *c = &w->dir[d].c;

		log_info(
			"stats %s: forwarded=%lu bytes=%lu loss=%lu burst=%lu queue=%lu limit=%lu errors=%lu held=%u",
			dir_name[d], (unsigned long)c->pkts,
			(unsigned long)c->bytes, (unsigned long)c->loss,
			(unsigned long)c->burst, (unsigned long)c->queue,
			(unsigned long)c->limit, (unsigned long)c->errors,
			w->dir[d].line.n);
	}
}

/**
 * watch() - set what epoll waits for on a device
 * @w:		the emulator
 * @side:	0 for A, 1 for B
 *
 * A device is always read; it is waited on for writing only while the
 * direction that writes it is blocked.
 */
static void watch(struct wanem *w, int side)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = side };

	/* Side A's device is written by b->a, side B's by a->b. */
	if (w->dir[side == 0 ? DIR_BA : DIR_AB].blocked)
		ev.events |= EPOLLOUT;
	if (epoll_ctl(w->ep, EPOLL_CTL_MOD, w->fd[side], &ev))
		log_err("epoll_ctl: %s", strerror(errno));
}

/**
 * release() - write out what is due in one direction
 * @w:		the emulator
 * @d:		the direction
 * @now:	the time
 *
 * Return: when its next packet is due, or UINT64_MAX if it holds none.
 */
static uint64_t release(struct wanem *w, int d, uint64_t now)
{
	struct dir *dr = &w->dir[d];
	const struct pkt *p;

	while (!dr->blocked && (p = line_head(&dr->line)) && p->due <= now) {
		ssize_t n =
			write(dr->out, line_data(&dr->line, p->slot), p->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			dr->blocked = true;
			watch(w, d == DIR_AB ? 1 : 0);
			break;
		}
		if (n < 0) {
			dr->c.errors++;
			log_rate(
				LOG_LVL_WARN,
				"%s: the device refused a packet of %u bytes: %s",
				dir_name[d], p->len, strerror(errno));
		} else {
			dr->c.pkts++;
			dr->c.bytes += p->len;
		}
		line_pop(&dr->line);
	}
	p = line_head(&dr->line);
	return p && !dr->blocked ? p->due : UINT64_MAX;
}

/**
 * admit() - read what a device has, and give each packet its fate
 * @w:		the emulator
 * @d:		the direction that reads it
 *
 * Return: 0, or -1 if the device is gone.
 */
static int admit(struct wanem *w, int d)
{
	struct dir *dr = &w->dir[d];
	const struct path_conf *pc = &w->conf.dir[d];

	for (int i = 0; i < BATCH; i++) {
		uint32_t slot = 0;
		unsigned char *buf = line_take(&dr->line, &slot);
		ssize_t n;

		n = read(dr->in, buf ? buf : w->scratch, dr->line.slot_size);
		if (n <= 0) {
			if (buf)
				line_give(&dr->line, slot);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return 0;
			log_err("%s: cannot read side %c's device: %s (was its namespace deleted?)",
				dir_name[d], d == DIR_AB ? 'A' : 'B',
				n ? strerror(errno) : "end of file");
			return -1;
		}
		if (!buf) {
			dr->c.limit++;
			log_rate(
				LOG_LVL_WARN,
				"%s: %u packets held already (--limit): a packet dropped; raise --limit, or lower --queue or --delay",
				dir_name[d], dr->line.cap);
			continue;
		}
		switch (loss_draw(&w->rng, pc, &dr->bad)) {
		case LOSS_RANDOM:
			dr->c.loss++;
			line_give(&dr->line, slot);
			continue;
		case LOSS_BURST:
			dr->c.burst++;
			line_give(&dr->line, slot);
			continue;
		case LOSS_KEEP:
			break;
		}
		if (line_push(&dr->line, pc, w->conf.reorder,
			      jitter_draw(&w->rng, pc->jitter_ns), slot,
			      (uint32_t)n, mono_ns()) == LINE_TAIL_DROP)
			dr->c.queue++;
	}
	return 0;
}

/**
 * reload() - SIGHUP: the control file over the command line
 * @w:	the emulator
 */
static void reload(struct wanem *w)
{
	char err[256];

	if (!w->base.control) {
		log_warn(
			"SIGHUP: there is no --control file to read; nothing changed");
		return;
	}
	if (wan_options_control(w->base.control, &w->base, &w->conf, err,
				sizeof(err))) {
		log_err("SIGHUP: %s; nothing changed", err);
		return;
	}
	log_settings(w, "reloaded");
}

/**
 * on_signal() - one signal from the signalfd
 * @w:	the emulator
 *
 * Return: 1 to exit, else 0.
 */
static int on_signal(struct wanem *w)
{
	struct signalfd_siginfo si;

	while (read(w->sig, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			reload(w);
			break;
		case SIGUSR1:
			log_counters(w);
			break;
		default:
			log_info("signal %u: stopping", si.ssi_signo);
			log_counters(w);
			return 1;
		}
	}
	return 0;
}

/**
 * run() - the event loop
 * @w:	the emulator
 *
 * Return: the exit status.
 */
static int run(struct wanem *w)
{
	struct epoll_event evs[4];

	for (;;) {
		uint64_t now = mono_ns(), next = UINT64_MAX, due;
		struct timespec ts, *tp = NULL;
		int n;

		for (int d = 0; d < NDIRS; d++) {
			due = release(w, d, now);
			next = due < next ? due : next;
		}
		if (next != UINT64_MAX) {
			now = mono_ns();
			due = next > now ? next - now : 0;
			ts = (struct timespec){ .tv_sec = due / 1000000000u,
						.tv_nsec = due % 1000000000u };
			tp = &ts;
		}
		n = epoll_pwait2(w->ep, evs, 4, tp, NULL);
		if (n < 0 && errno != EINTR) {
			log_err("epoll_pwait2: %s", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			uint32_t side = evs[i].data.u32;

			if (side == EV_SIGNAL) {
				if (on_signal(w))
					return 0;
				continue;
			}
			/* Side A's device feeds a->b and is written by b->a. */
			if ((evs[i].events & EPOLLOUT) &&
			    w->dir[side ? DIR_AB : DIR_BA].blocked) {
				w->dir[side ? DIR_AB : DIR_BA].blocked = false;
				watch(w, (int)side);
			}
			if ((evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
			    admit(w, side ? DIR_BA : DIR_AB))
				return 1;
		}
	}
}

/**
 * setup() - devices, memory, signals, epoll
 * @w:	the emulator, its settings parsed
 *
 * Return: 0, or -1 after saying why.
 */
static int setup(struct wanem *w)
{
	struct epoll_event ev = { .events = EPOLLIN };
	char err[512];
	sigset_t set;

	for (int s = 0; s < 2; s++) {
		w->fd[s] = tun_open(w->conf.ns[s], w->conf.ifname[s],
				    w->conf.mtu, err, sizeof(err));
		if (w->fd[s] < 0) {
			log_err("side %c: %s", s ? 'B' : 'A', err);
			return -1;
		}
	}
	w->scratch = malloc(w->conf.mtu);
	for (int d = 0; d < NDIRS; d++) {
		if (!w->scratch ||
		    line_init(&w->dir[d].line, w->conf.limit, w->conf.mtu)) {
			log_err("cannot allocate %u packets of %u bytes per direction: lower --limit or --mtu",
				w->conf.limit, w->conf.mtu);
			return -1;
		}
		w->dir[d].in = w->fd[d == DIR_AB ? 0 : 1];
		w->dir[d].out = w->fd[d == DIR_AB ? 1 : 0];
	}

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	w->sig = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	if (w->sig < 0 || w->ep < 0) {
		log_err("signalfd or epoll: %s", strerror(errno));
		return -1;
	}
	for (uint32_t s = 0; s < 2; s++) {
		ev.data.u32 = s;
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->fd[s], &ev))
			goto fail;
	}
	ev.data.u32 = EV_SIGNAL;
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->sig, &ev))
		goto fail;
	/* The default slack, 50 us, would be a tenth of the delay budget. */
	prctl(PR_SET_TIMERSLACK, TIMER_SLACK, 0, 0, 0);
	return 0;
fail:
	log_err("epoll_ctl: %s", strerror(errno));
	return -1;
}

/**
 * main() - smbsplice-wanem
 * @argc:	the argument count
 * @argv:	the arguments
 *
 * Return: 0 after SIGTERM or SIGINT, 1 on a failure, 2 on a bad command
 * line.
 */
int main(int argc, char **argv)
{
	static struct wanem w;
	char seedbuf[32];
	int status;

	log_ident = "smbsplice-wanem";
	switch (wan_options_parse(argc, argv, &w.conf)) {
	case WAN_EXIT_OK:
		return 0;
	case WAN_EXIT_USAGE:
		return 2;
	case WAN_RUN:
		break;
	}
	if (netns_home() < 0) {
		log_err("/proc/self/ns/net: %s", strerror(errno));
		return 1;
	}
	if (!w.conf.seeded && getrandom(&w.conf.seed, sizeof(w.conf.seed), 0) !=
				      (ssize_t)sizeof(w.conf.seed))
		w.conf.seed = mono_ns();
	w.base = w.conf;
	rng_seed(&w.rng, w.conf.seed);
	if (setup(&w))
		return 1;
	snprintf(seedbuf, sizeof(seedbuf), "%llu",
		 (unsigned long long)w.conf.seed);
	log_info(
		"forwarding between %s in %s and %s in %s, MTU %u, %u packets held per direction at most, seed %s",
		w.conf.ifname[0],
		*w.conf.ns[0] ? w.conf.ns[0] : "its own namespace",
		w.conf.ifname[1],
		*w.conf.ns[1] ? w.conf.ns[1] : "its own namespace", w.conf.mtu,
		w.conf.limit, seedbuf);
	log_settings(&w, "settings");
	status = run(&w);
	for (int d = 0; d < NDIRS; d++)
		line_fini(&w.dir[d].line);
	free(w.scratch);
	return status;
}
