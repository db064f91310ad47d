// SPDX-License-Identifier: GPL-2.0-or-later
/* ring.c - records from many threads, written out by one
 *
 * Theory of operation: a thread that serves connections must never wait
 * for a disk or for a reader of standard error, yet what it reports (a log
 * line, a trace record) must come out whole and in the order it was made.
 * So a record is copied into a bounded byte ring under a mutex held for
 * the copy alone, and a writer thread of the ring's own takes records out
 * and hands them to a sink (log.c's writes standard error or syslog,
 * tracefile.c's a pcap file). Putting a record allocates nothing and makes
 * no system call when the lock is free and the writer needs no wake-up;
 * a record that does not fit in the room left is refused and counted,
 * never waited for. One that could never fit (longer than the writer's
 * batch, or than the ring) is refused and counted the same way, at once,
 * rather than queued to stop the writer for good.
 *
 * In the ring each record is a 4-byte length and its bytes, so that the
 * writer takes whole records only: as many as fit in its batch buffer per
 * hold of the lock, a copy short enough that a producer waiting for the
 * lock waits little. The sink gets the records' bytes back to back, in the
 * order they were put, without the lengths; a record that must be told
 * apart from the next carries its own header (tracefile.c's pcap one).
 * The sink also gets the count of records refused since it was last told,
 * once every record put before the last of them has reached it, so that
 * a note of the loss comes after what was queued before it.
 *
 * The writer wakes once per batch, not per record, since a wake-up is a
 * futex() call on each side: a producer signals only when the ring was
 * empty (the writer may be asleep on it) or has just passed a quarter full
 * (the writer may be gathering), and a writer woken from an empty ring may
 * let records gather for gather_ms before it takes them. A writer with a
 * backlog takes the next batch at once. No wake-up can be lost: the writer
 * tests the ring under the lock before each wait, the sleep on an empty
 * ring ends with the first record's signal, and the gathering sleep is
 * bounded by gather_ms whatever happens. Every timed wait is on
 * CLOCK_MONOTONIC, so that a step of the wall clock cannot stretch one
 * into minutes. A writer with nothing to do for idle_ms calls the idle
 * hook (a flush); ring_reopen() has it call the reopen hook before the
 * sink's next batch (log rotation).
 *
 * ring_flush() waits until the sink has returned from every record put
 * before it, cutting a gathering sleep short. ring_stop() refuses records
 * from then on, lets the writer hand the sink every record left and the
 * last count of refusals, and joins it. The ring's storage is the
 * caller's, given at ring_open(), so one made in static storage (log.c's,
 * which must work before anything else does) needs no allocation at all.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "common/ring.h"

/* Each record's length, ahead of its bytes in the ring. */
typedef uint32_t rec_len_t;

/**
 * deadline() - a time this far ahead on the monotonic clock
 * @ms:	milliseconds
 *
 * Return: the time, on CLOCK_MONOTONIC.
 */
static struct timespec deadline(unsigned ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += (long)(ms % 1000) * 1000000;
	t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

/**
 * used() - bytes in the ring
 * @r:	the ring, locked
 *
 * Return: the count, framing included.
 */
static size_t used(const struct ring *r)
{
	return (size_t)(r->head - r->tail);
}

/**
 * copy_in() - copy bytes into the ring, wrapping at its end
 * @r:	the ring, locked
 * @at:	where, as a free-running position
 * @p:	the bytes
 * @n:	how many; the ring has room for them
 */
static void copy_in(struct ring *r, uint64_t at, const void *p, size_t n)
{
	size_t off = (size_t)(at % r->cfg.size);
	size_t first = r->cfg.size - off < n ? r->cfg.size - off : n;

	memcpy((char *)r->cfg.buf + off, p, first);
	memcpy(r->cfg.buf, (const char *)p + first, n - first);
}

/**
 * copy_out() - copy bytes out of the ring, wrapping at its end
 * @r:	the ring, locked
 * @at:	where, as a free-running position
 * @p:	where to
 * @n:	how many; the ring holds them
 */
static void copy_out(const struct ring *r, uint64_t at, void *p, size_t n)
{
	size_t off = (size_t)(at % r->cfg.size);
	size_t first = r->cfg.size - off < n ? r->cfg.size - off : n;

	memcpy(p, (const char *)r->cfg.buf + off, first);
	memcpy((char *)p + first, r->cfg.buf, n - first);
}

/**
 * ring_open() - make a ring take records
 * @r:		the ring, RING_INITIALIZER or stopped
 * @cfg:	its storage and its writer's hooks; copied
 *
 * Records put from now on are queued, and handed to the sink once
 * ring_start() has started the writer. Whatever a ring stopped without a
 * writer still held is let go.
 *
 * Return: 0, -EINVAL if @cfg cannot work, or -EBUSY if @r is open.
 */
int ring_open(struct ring *r, const struct ring_cfg *cfg)
{
	int ret = 0;

	if (!cfg->buf || cfg->size <= sizeof(rec_len_t) || !cfg->batch ||
	    !cfg->batch_size || cfg->batch_size > UINT32_MAX || !cfg->sink)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	if (r->open) {
		ret = -EBUSY;
	} else {
		r->cfg = *cfg;
		r->tail = r->sunk = r->head;
		r->unreported = 0;
		r->stop = r->reopen = false;
		r->open = true;
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/**
 * drop() - count a record refused, and say why
 * @r:		the ring, locked
 * @why:	-ENOSPC or -EMSGSIZE
 *
 * The writer must tell the sink even if no record comes after: one asleep
 * on an empty ring is woken for it.
 *
 * Return: @why.
 */
static int drop(struct ring *r, int why)
{
	if (!r->unreported++ && !used(r))
		pthread_cond_signal(&r->more);
	r->drop_at = r->head;
	__atomic_add_fetch(&r->dropped_total, 1, __ATOMIC_RELAXED);
	return why;
}

/**
 * ring_putv() - queue one record made of several parts, or refuse it
 * @r:		the ring
 * @iov:	the parts, in order
 * @iovcnt:	how many
 *
 * Never waits for the writer. Called by any thread.
 *
 * Return: 0 if queued; -ENOSPC if the ring has no room for it now, or
 * -EMSGSIZE if it never could (both counted by ring_dropped()); -EPIPE,
 * not counted, if the ring is not open or is stopping.
 */
int ring_putv(struct ring *r, const struct iovec *iov, int iovcnt)
{
	size_t need = 0, was, quarter;
	rec_len_t len;
	int ret = 0;

	for (int i = 0; i < iovcnt; i++)
		need += iov[i].iov_len;
	pthread_mutex_lock(&r->lock);
	if (!r->open || r->stop) {
		ret = -EPIPE;
	} else if (need > r->cfg.batch_size ||
		   need > r->cfg.size - sizeof(len)) {
		ret = drop(r, -EMSGSIZE);
	} else if (r->cfg.size - used(r) < sizeof(len) + need) {
		ret = drop(r, -ENOSPC);
	} else {
		was = used(r);
		len = (rec_len_t)need;
		copy_in(r, r->head, &len, sizeof(len));
		r->head += sizeof(len);
		for (int i = 0; i < iovcnt; i++) {
			copy_in(r, r->head, iov[i].iov_base, iov[i].iov_len);
			r->head += iov[i].iov_len;
		}
		/* The writer sleeps only on an empty ring, or while it
		 * lets a batch gather: wake it for the first record and
		 * when the batch is large, not for each record. */
		quarter = r->cfg.size / 4;
		if (!was || (was < quarter && used(r) >= quarter))
			pthread_cond_signal(&r->more);
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/**
 * ring_put() - queue one record, or refuse it
 * @r:	the ring
 * @p:	its bytes
 * @n:	how many
 *
 * Return: as ring_putv().
 */
int ring_put(struct ring *r, const void *p, size_t n)
{
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };

	return ring_putv(r, &iov, 1);
}

/**
 * ring_reopen() - have the writer call the reopen hook before its next batch
 * @r:	the ring; nothing happens unless it is open
 */
void ring_reopen(struct ring *r)
{
	pthread_mutex_lock(&r->lock);
	if (r->open) {
		r->reopen = true;
		pthread_cond_signal(&r->more);
	}
	pthread_mutex_unlock(&r->lock);
}

/**
 * ring_flush() - wait until the sink has every record put before this
 * @r:	the ring
 *
 * The sink has returned from them when this does; whether they reached
 * the disk is the sink's business (and its idle hook's).
 *
 * Return: 0, or -EPIPE if records are queued and no writer runs to take
 * them (none was started, or it was stopped meanwhile).
 */
int ring_flush(struct ring *r)
{
	uint64_t want;
	int ret = 0;

	pthread_mutex_lock(&r->lock);
	want = r->head;
	if (r->sunk < want && r->running) {
		r->flushers++;
		/* A writer gathering a batch takes it now. */
		pthread_cond_signal(&r->more);
		while (r->sunk < want && r->running)
			pthread_cond_wait(&r->done, &r->lock);
		r->flushers--;
	}
	if (r->sunk < want)
		ret = -EPIPE;
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/**
 * wait_for_work() - sleep until there are records, refusals, a stop or a
 * reopen
 * @r:	the ring, locked
 *
 * Every idle_ms without any, the idle hook is called, unlocked.
 *
 * Return: true if the writer slept, so that its next batch may gather.
 */
static bool wait_for_work(struct ring *r)
{
	struct timespec until;
	bool slept = false;

	while (!used(r) && !r->unreported && !r->stop && !r->reopen) {
		slept = true;
		if (!r->cfg.idle_ms) {
			pthread_cond_wait(&r->more, &r->lock);
			continue;
		}
		until = deadline(r->cfg.idle_ms);
		if (pthread_cond_clockwait(&r->more, &r->lock, CLOCK_MONOTONIC,
					   &until) == ETIMEDOUT &&
		    r->cfg.idle) {
			pthread_mutex_unlock(&r->lock);
			r->cfg.idle(r->cfg.arg);
			pthread_mutex_lock(&r->lock);
		}
	}
	return slept;
}

/**
 * gather() - woken by a first record, let the batch grow a while
 * @r:	the ring, locked
 *
 * Producers signal again only if it passes a quarter of the ring, so the
 * sleep ends then, or after gather_ms; not at all when there is a reason
 * to go on at once.
 */
static void gather(struct ring *r)
{
	struct timespec until;

	if (!r->cfg.gather_ms || used(r) >= r->cfg.size / 4 || r->stop ||
	    r->reopen || r->flushers)
		return;
	until = deadline(r->cfg.gather_ms);
	pthread_cond_clockwait(&r->more, &r->lock, CLOCK_MONOTONIC, &until);
}

/**
 * take_batch() - take whole records out of the ring into the batch buffer
 * @r:	the ring, locked
 *
 * Takes records while the next one fits; none is longer than the buffer
 * (ring_putv()), so a ring that holds records always gives at least one.
 *
 * Return: bytes of records in the buffer, without their lengths.
 */
static size_t take_batch(struct ring *r)
{
	size_t n = 0;
	rec_len_t len;

	while (used(r)) {
		copy_out(r, r->tail, &len, sizeof(len));
		if (n + len > r->cfg.batch_size)
			break;
		copy_out(r, r->tail + sizeof(len), (char *)r->cfg.batch + n,
			 len);
		r->tail += sizeof(len) + len;
		n += len;
	}
	return n;
}

/**
 * take_dropped() - the refusals the sink is to hear of with this batch
 * @r:	the ring, locked, its batch just taken
 *
 * Return: the count, once every record put before the last refusal has
 * been taken; until then 0, and the count waits.
 */
static unsigned long take_dropped(struct ring *r)
{
	unsigned long n = r->unreported;

	if (!n || r->tail < r->drop_at)
		return 0;
	r->unreported = 0;
	return n;
}

/**
 * writer_main() - the writer thread: hand batches to the sink
 * @arg:	the ring
 *
 * Return: NULL, once told to stop with nothing left to hand on.
 */
static void *writer_main(void *arg)
{
	struct ring *r = arg;
	unsigned long dropped;
	bool reopen_now;
	size_t n;

	if (r->cfg.thread_name)
		pthread_setname_np(pthread_self(), r->cfg.thread_name);
	pthread_mutex_lock(&r->lock);
	for (;;) {
		if (wait_for_work(r))
			gather(r);
		reopen_now = r->reopen;
		r->reopen = false;
		if (!used(r) && !r->unreported && r->stop)
			break;
		n = take_batch(r);
		dropped = take_dropped(r);
		pthread_mutex_unlock(&r->lock);
		if (reopen_now && r->cfg.reopen)
			r->cfg.reopen(r->cfg.arg);
		if (n || dropped)
			r->cfg.sink(r->cfg.arg, r->cfg.batch, n, dropped);
		pthread_mutex_lock(&r->lock);
		/* The writer alone moves the tail: it is where it was
		 * left, and everything before it has been sunk. */
		r->sunk = r->tail;
		if (r->flushers)
			pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/**
 * ring_start() - start the writer thread of an open ring
 * @r:	the ring
 *
 * The thread is started with every signal blocked, so that signals reach
 * the main thread alone.
 *
 * Return: 0; -EINVAL if @r is not open or has a writer; or pthread_create()'s
 * error, negated.
 */
int ring_start(struct ring *r)
{
	sigset_t all, old;
	int err;

	pthread_mutex_lock(&r->lock);
	err = !r->open || r->running ? EINVAL : 0;
	pthread_mutex_unlock(&r->lock);
	if (err)
		return -err;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&r->thread, NULL, writer_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_mutex_lock(&r->lock);
	r->running = true;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/**
 * ring_stop() - refuse records, hand the sink what is left, end the writer
 * @r:	the ring; nothing happens unless it is open
 *
 * Every record ring_putv() took is through the sink when this returns, if
 * a writer was started; without one they are let go. The ring may then be
 * opened again. Called by one thread at a time.
 */
void ring_stop(struct ring *r)
{
	bool join;

	pthread_mutex_lock(&r->lock);
	if (!r->open) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	r->stop = true;
	pthread_cond_signal(&r->more);
	join = r->running;
	pthread_mutex_unlock(&r->lock);
	if (join)
		pthread_join(r->thread, NULL);
	pthread_mutex_lock(&r->lock);
	r->open = r->running = r->stop = r->reopen = false;
	/* A flusher still waiting gives up: no writer is left. */
	pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->lock);
}

/**
 * ring_dropped() - records refused since the ring was made
 * @r:	the ring
 *
 * Records refused for want of room or for their length, that is; not
 * those put when the ring was not open. Any thread may ask.
 *
 * Return: the count.
 */
uint64_t ring_dropped(struct ring *r)
{
	return __atomic_load_n(&r->dropped_total, __ATOMIC_RELAXED);
}
