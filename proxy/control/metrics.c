// SPDX-License-Identifier: GPL-2.0-or-later
/* metrics.c - the --stats endpoint: Prometheus text over HTTP/1.0
 *
 * Theory of operation: a scrape is rare and small, so it is served the
 * plainest way that cannot stall the proxy: accept, read the request line
 * (bounded, under a timeout), render the whole page into memory, write it
 * as the socket takes it, close. Every step is non-blocking and runs in
 * the main thread's loop, which forwards nothing: the page is summed from
 * counters the workers publish (counter.h), so a scrape never stops a
 * worker. Only GET /metrics (and GET /) are served; anything else gets a
 * status line that says why.
 *
 * A scrape flood must not eat the CPU the workers need: the page is
 * rendered at most once per METRICS_CACHE seconds and served from memory
 * in between, and at most METRICS_MAX_SCRAPES scrapes are served at once;
 * more wait in the listen backlog.
 *
 * Nor may a few idle sockets take the page away. Only clients in
 * --stats-allow (loopback if none is given) are served; others get a 403
 * and are closed. A client has REQUEST_TIMEOUT to send its request line,
 * and one address holds at most METRICS_PER_SOURCE scrapes: a new one
 * from an address at its share closes that address's oldest scrape still
 * waiting for its request, so an address can only stall itself, and a
 * scraper that retries is served.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/accept.h"
#include "common/counter.h"
#include "core/limits.h"
#include "observe/counters.h"
#include "net/listener.h"
#include "common/log.h"
#include "control/metrics.h"
#include "control/procstat.h"
#include "control/promtext.h"
#include "observe/tracefile.h"
#include "core/proxy.h"
#include "io/sock.h"
#include "worker/worker.h"

#define SCRAPE_TIMEOUT	   5.0
#define REQUEST_TIMEOUT	   1.0
#define REQUEST_MAX	   2048
#define METRICS_CACHE	   1.0
#define METRICS_PER_SOURCE 2

/**
 * struct scrape - one HTTP request being served
 * @px:		the process
 * @fd:		the client socket
 * @io:		its watcher: readable while reading, writable while writing
 * @timer:	gives up on slow or silent clients
 * @src:	the client's address
 * @req:	request bytes so far
 * @req_len:	how many
 * @resp:	the response, once rendered
 * @resp_len:	its length
 * @resp_off:	bytes already written
 * @prev:	list link (&proxy.metrics.scrapes)
 * @next:	list link
 */
struct scrape {
	struct proxy *px;
	struct scrape *prev, *next;
	int fd;
	ev_io io;
	ev_timer timer;
	struct source_key src;
	char req[REQUEST_MAX];
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
};

/* The endpoint's state; only the main thread touches it. */
static struct metrics mx = METRICS_INIT;

/**
 * scrape_end() - close and free a scrape
 * @s:	the scrape
 */
static void scrape_end(struct scrape *s)
{
	struct proxy *px = s->px;

	ev_io_stop(px->loop, &s->io);
	ev_timer_stop(px->loop, &s->timer);
	close(s->fd);
	free(s->resp);
	if (s->prev)
		s->prev->next = s->next;
	else
		mx.scrapes = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s);
	/* Below the cap again: take the next one from the backlog. */
	if (mx.nscrapes-- == METRICS_MAX_SCRAPES && mx.fd >= 0 &&
	    !ev_is_active(&mx.pause))
		ev_io_start(px->loop, &mx.w);
}

static_assert(LREPORT_MAX_BACKENDS == OPT_MAX_BACKENDS,
	      "a report holds every backend a listener may have");

/**
 * report_quic() - add one worker's QUIC counters to a listener's report
 * @r:	the report
 * @q:	the worker's counters (zero for a TCP listener)
 */
static void report_quic(struct lreport *r, const struct lquic *q)
{
	r->quic_handshakes += counter_read(&q->handshakes);
	r->quic_retries += counter_read(&q->retries);
	r->quic_resets += counter_read(&q->resets);
	r->quic_migrations += counter_read(&q->migrations);
	r->quic_certs_denied += counter_read(&q->certs_denied);
}

/**
 * metrics_report_listener() - a listener's counters, summed over its
 *			       workers (for /metrics and the control socket)
 * @l:	the listener
 * @r:	the report, zeroed by the caller
 */
void metrics_report_listener(const struct listener *l, struct lreport *r)
{
	const struct listen_opts *o = &l->cfg->o;

	r->name = l->name;
	r->nbackends = o->nbackends;
	for (unsigned b = 0; b < o->nbackends; b++) {
		const struct bstate *s = &l->cfg->be[b];

		r->backends[b] = o->backend[b].text;
		r->backend_admin[b] = s->admin;
		r->backend_down[b] = s->down;
		r->backend_changes[b] =
			__atomic_load_n(&s->changes, __ATOMIC_RELAXED);
	}
	for (unsigned w = 0; w < l->nworkers; w++) {
		const struct lstats *st = &l->st[w];

		counters_add_totals(&r->tot, &st->tot);
		r->accepted += counter_read(&st->accepted);
		r->active += counter_read(&l->counters->active[w]);
		r->denied += counter_read(&st->denied);
		r->refused_conns += counter_read(&st->refused[ADMIT_MAX_CONNS]);
		r->refused_source +=
			counter_read(&st->refused[ADMIT_PER_SOURCE]);
		r->refused_preauth += counter_read(&st->refused[ADMIT_PREAUTH]);
		r->bad_openings += counter_read(&st->bad_openings);
		r->auth_timeouts += counter_read(&st->auth_timeouts);
		r->proxy_refused += counter_read(&st->proxy_refused);
		report_quic(r, &l->counters->quic[w]);
		for (unsigned b = 0; b < o->nbackends; b++)
			r->backend_failures[b] +=
				counter_read(&st->backend_failures[b]);
	}
}

/**
 * render_metrics() - the metrics page body
 * @px:		the process
 * @len:	its length
 *
 * Return: a malloc()ed buffer, or NULL if memory ran out.
 */
static char *render_metrics(const struct proxy *px, size_t *len)
{
	uint64_t *accepted =
		calloc(2 * (size_t)px->nworkers, sizeof(*accepted));
	uint64_t *moved = accepted ? accepted + px->nworkers : NULL;
	struct lreport *ls = NULL;
	struct gauges g = { 0 };
	struct procstat ps;
	const struct listener *l;
	char *body = NULL;
	unsigned n = 0;
	FILE *out;

	for (l = px->listeners; l; l = l->next)
		n++;
	ls = calloc(n ? n : 1, sizeof(*ls));
	if (!accepted || !ls)
		goto out;
	n = 0;
	for (l = px->listeners; l; l = l->next)
		if (!listener_is(l, LISTENER_PASSED_ON)) /* its newer namesake
							    reports them */
			metrics_report_listener(l, &ls[n++]);
	for (unsigned i = 0; i < px->nworkers; i++)
		worker_report(&px->workers[i], &g, &accepted[i], &moved[i]);
	g.pipes_open = pipepool_budget_open(&px->pipe_budget);
	g.fds_used = (uint64_t)budget_used(&px->limits.fds);
	g.fds_limit = (uint64_t)budget_limit(&px->limits.fds);
	g.log_dropped = log_dropped();
	tracefile_counts(&g.trace_records, &g.trace_dropped);
	g.draining = px->state == PX_DRAINING;
	procstat_read(&ps);
	out = open_memstream(&body, len);
	if (out) {
		int bad = promtext_write(out, ls, n, &g, accepted, moved,
					 px->nworkers, &ps);

		if (fclose(out) || bad) {
			free(body);
			body = NULL;
		}
	}
out:
	free(ls);
	free(accepted);
	return body;
}

/**
 * metrics_page() - the page, rendered at most once per METRICS_CACHE
 * @px:		the process
 * @len:	its length
 *
 * Return: the page, owned by @px, or NULL if memory ran out.
 */
static const char *metrics_page(struct proxy *px, size_t *len)
{
	ev_tstamp now = ev_now(px->loop);
	size_t n;
	char *page;

	if (!mx.page || now - mx.page_at >= METRICS_CACHE) {
		page = render_metrics(px, &n);
		if (!page)
			return NULL;
		free(mx.page);
		mx.page = page;
		mx.page_len = n;
		mx.page_at = now;
	}
	*len = mx.page_len;
	return mx.page;
}

/**
 * scrape_respond() - build the response for the request in @s->req
 * @s:	the scrape, with a complete request line
 *
 * Return: 0, or -1 if memory ran out.
 */
static int scrape_respond(struct scrape *s)
{
	const char *status = "200 OK", *type = "text/plain; version=0.0.4";
	const char *body = NULL;
	size_t body_len = 0;
	FILE *out;

	if (strncmp(s->req, "GET ", 4)) {
		status = "405 Method Not Allowed";
	} else if (strncmp(s->req + 4, "/metrics ", 9) &&
		   strncmp(s->req + 4, "/ ", 2)) {
		status = "404 Not Found";
	} else {
		body = metrics_page(s->px, &body_len);
		if (!body)
			return -1;
	}
	if (!body)
		type = "text/plain";
	out = open_memstream(&s->resp, &s->resp_len);
	if (!out)
		return -1;
	fprintf(out,
		"HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		"Connection: close\r\n\r\n",
		status, type, body ? body_len : strlen(status) + 1);
	if (body)
		fwrite(body, 1, body_len, out);
	else
		fprintf(out, "%s\n", status);
	return fclose(out) ? -1 : 0;
}

/**
 * on_scrape_write() - write the response as the socket takes it
 * @loop:	the loop
 * @w:		&scrape.io, writable
 * @revents:	unused
 */
static void on_scrape_write(struct ev_loop *loop, ev_io *w, int revents)
{
	struct scrape *s = w->data;
	ssize_t n;

	(void)loop;
	(void)revents;
	while (s->resp_off < s->resp_len) {
		n = send(s->fd, s->resp + s->resp_off,
			 s->resp_len - s->resp_off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0)
			break;
		s->resp_off += (size_t)n;
	}
	scrape_end(s);
}

/**
 * on_scrape_read() - gather the request, then answer it
 * @loop:	the loop
 * @w:		&scrape.io, readable
 * @revents:	unused
 */
static void on_scrape_read(struct ev_loop *loop, ev_io *w, int revents)
{
	struct scrape *s = w->data;
	ssize_t n;

	(void)revents;
	n = recv(s->fd, s->req + s->req_len, sizeof(s->req) - 1 - s->req_len,
		 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		scrape_end(s);
		return;
	}
	s->req_len += (size_t)n;
	s->req[s->req_len] = '\0';
	/* The request line is all that matters; headers are ignored. */
	if (!strchr(s->req, '\n') && s->req_len < sizeof(s->req) - 1)
		return;
	if (scrape_respond(s)) {
		scrape_end(s);
		return;
	}
	ev_io_stop(loop, &s->io);
	ev_io_init(&s->io, on_scrape_write, s->fd, EV_WRITE);
	s->io.data = s;
	ev_io_start(loop, &s->io);
	/* The request is in: the page gets the rest of SCRAPE_TIMEOUT. */
	ev_timer_stop(loop, &s->timer);
	ev_timer_set(&s->timer, SCRAPE_TIMEOUT - REQUEST_TIMEOUT, 0.);
	ev_timer_start(loop, &s->timer);
}

/**
 * on_scrape_timeout() - the client was too slow
 * @loop:	the loop
 * @w:		&scrape.timer
 * @revents:	unused
 */
static void on_scrape_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	scrape_end(w->data);
}

/**
 * stats_allowed() - may this client scrape
 * @o:		the settings, with --stats-allow
 * @peer:	the client's address
 *
 * Return: true if it is in a --stats-allow network, or on loopback when
 * none was given.
 */
static bool stats_allowed(const struct options *o, const struct sockaddr *peer)
{
	static const struct cidr loopback[] = {
		{ .family = AF_INET, .addr = { 127 }, .bits = 8 },
		{ .family = AF_INET6, .addr = { [15] = 1 }, .bits = 128 },
	};
	const struct cidr *list = o->nstats_allow ? o->stats_allow : loopback;
	unsigned n = o->nstats_allow ? o->nstats_allow : 2;

	for (unsigned i = 0; i < n; i++)
		if (parse_cidr_match(&list[i], peer))
			return true;
	return false;
}

/**
 * refuse_scrape() - tell a client outside --stats-allow, and close it
 * @fd:		its socket, just accepted
 * @peer:	its address
 *
 * The answer is one small write to an empty send buffer; if even that
 * does not go, the client just sees the close.
 */
static void refuse_scrape(int fd, const struct sockaddr *peer)
{
	static const char resp[] =
		"HTTP/1.0 403 Forbidden\r\nContent-Type: text/plain\r\n"
		"Content-Length: 21\r\nConnection: close\r\n\r\n"
		"not in --stats-allow\n";
	char text[64];

	sock_addr_text(peer, text, sizeof(text));
	log_rate(
		LOG_LVL_WARN,
		"stats: %s refused: not in --stats-allow (default: loopback only)",
		text);
	(void)!send(fd, resp, sizeof(resp) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/**
 * make_room() - keep one address within METRICS_PER_SOURCE scrapes
 * @px:		the process
 * @src:	the address of a client just accepted
 *
 * Return: true if the new client may be served: its address had room, or
 * its oldest scrape still waiting for a request line was closed to make
 * some. False if every one of its scrapes is being answered.
 */
static bool make_room(struct proxy *px, const struct source_key *src)
{
	struct scrape *oldest = NULL;
	unsigned n = 0;

	/* The list is newest first, and holds METRICS_MAX_SCRAPES at most. */
	for (struct scrape *s = mx.scrapes; s; s = s->next) {
		if (memcmp(&s->src, src, sizeof(*src)))
			continue;
		n++;
		if (!s->resp)
			oldest = s;
	}
	if (n < METRICS_PER_SOURCE)
		return true;
	if (!oldest)
		return false;
	scrape_end(oldest);
	return true;
}

/**
 * on_metrics_accept() - a scraper connected
 * @loop:	the loop
 * @w:		&proxy.metrics.w
 * @revents:	unused
 */
static void on_metrics_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proxy *px = w->data;
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	struct source_key src;
	struct scrape *s;
	int fd;

	(void)revents;
	fd = accept4(mx.fd, (struct sockaddr *)&peer, &plen,
		     SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		/* The connection stays queued and the socket readable:
		 * retrying at once would spin. */
		if (accept_out_of_resources(errno))
			accept_backoff(loop, &mx.pause);
		return;
	}
	if (!stats_allowed(px->opt, (struct sockaddr *)&peer)) {
		refuse_scrape(fd, (struct sockaddr *)&peer);
		return;
	}
	limits_source_key((struct sockaddr *)&peer, &src);
	if (!make_room(px, &src) || !(s = calloc(1, sizeof(*s)))) {
		close(fd);
		return;
	}
	s->px = px;
	s->fd = fd;
	s->src = src;
	ev_io_init(&s->io, on_scrape_read, fd, EV_READ);
	s->io.data = s;
	ev_timer_init(&s->timer, on_scrape_timeout, REQUEST_TIMEOUT, 0.);
	s->timer.data = s;
	ev_io_start(loop, &s->io);
	ev_timer_start(loop, &s->timer);
	s->next = mx.scrapes;
	if (mx.scrapes)
		mx.scrapes->prev = s;
	mx.scrapes = s;
	if (++mx.nscrapes == METRICS_MAX_SCRAPES)
		ev_io_stop(loop, w);
}

/**
 * metrics_start() - listen on --stats, if given
 * @px:		the process
 * @handed:	the listening socket a handover brought (-1 if none), taken
 *		if it is still bound to --stats' address, closed if not
 *
 * Return: 0, or -1 after logging why.
 */
int metrics_start(struct proxy *px, int handed)
{
	const struct endpoint *ep = &px->opt->stats;

	mx.fd = -1;
	if (!ep->len) {
		if (handed >= 0)
			close(handed);
		return 0;
	}
	/* After a handover, the old process's socket: the address stays. */
	mx.fd = handed;
	if (mx.fd >= 0 &&
	    !sock_bound_to(mx.fd, (const struct sockaddr *)&ep->addr,
			   ep->len)) {
		close(mx.fd); /* --stats changed: bind it anew */
		mx.fd = -1;
	}
	if (mx.fd < 0)
		mx.fd = sock_listen((const struct sockaddr *)&ep->addr, ep->len,
				    false, false);
	if (mx.fd < 0) {
		log_err("cannot listen for --stats on %s: %s", ep->text,
			strerror(errno));
		return -1;
	}
	ev_io_init(&mx.w, on_metrics_accept, mx.fd, EV_READ);
	mx.w.data = px;
	accept_pause_init(&mx.pause, &mx.w);
	ev_io_start(px->loop, &mx.w);
	return 0;
}

/**
 * metrics_stop() - stop serving metrics, and drop scrapes in progress
 * @px:	the process
 */
void metrics_stop(struct proxy *px)
{
	if (mx.fd < 0)
		return;
	ev_io_stop(px->loop, &mx.w);
	ev_timer_stop(px->loop, &mx.pause);
	close(mx.fd);
	mx.fd = -1;
	while (mx.scrapes)
		scrape_end(mx.scrapes);
	free(mx.page);
	mx.page = NULL;
}

/**
 * metrics_socket() - the --stats listening socket, for a handover
 * @px:	the process
 *
 * Return: it, or -1 without --stats.
 */
int metrics_socket(const struct proxy *px)
{
	return mx.fd;
}
