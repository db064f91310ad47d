/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ring.h - a bounded byte ring that many threads append records to and
 * one writer thread drains to a sink; ring.c says how it works. */
#ifndef SMBSPLICE_RING_H
#define SMBSPLICE_RING_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/**
 * struct ring_cfg - what a ring is made of and what its writer calls
 * @buf:	the ring's bytes, @size of them; the caller's, held until
 *		ring_stop() returns
 * @size:	their number; each record takes 4 bytes of it more than its own
 * @batch:	where the writer copies records to, @batch_size long; the
 *		caller's, used by the writer thread alone
 * @batch_size:	its length, and so the longest record the ring takes
 * @thread_name: the writer's name for top -H and perf, or NULL
 * @gather_ms:	woken from an empty ring, the writer lets records gather
 *		this long before taking them (one wake-up per batch); 0 takes
 *		them at once
 * @idle_ms:	the writer calls @idle after this long with nothing to do;
 *		0 never
 * @sink:	called by the writer with @n bytes of whole records, one after
 *		the other as they were put, without the ring's framing; and
 *		with @dropped, the records refused since the last call, once
 *		every record put before them is in this batch or an earlier one
 * @idle:	called by the writer when idle (a flush), or NULL
 * @reopen:	called by the writer after ring_reopen(), before the sink gets
 *		the next batch, or NULL
 * @arg:	passed to @sink, @idle and @reopen
 */
struct ring_cfg {
	void *buf;
	size_t size;
	void *batch;
	size_t batch_size;
	const char *thread_name;
	unsigned gather_ms, idle_ms;
	void (*sink)(void *arg, const void *p, size_t n, unsigned long dropped);
	void (*idle)(void *arg);
	void (*reopen)(void *arg);
	void *arg;
};

/**
 * struct ring - one ring and its writer; ring.c's alone, but for its size
 * @lock:	guards everything below but @dropped_total
 * @more:	the writer waits on it for records, a stop, a reopen or a flush
 * @done:	flushers wait on it for the writer to pass their records on
 * @cfg:	as ring_open() was given it
 * @head:	bytes ever put (free-running): where the next record goes
 * @tail:	bytes ever taken by the writer (free-running)
 * @sunk:	bytes of those the sink has returned from
 * @unreported:	records refused and not yet told to the sink
 * @drop_at:	@head when the last of them was refused
 * @dropped_total: records refused since the ring was made (any thread reads)
 * @flushers:	threads in ring_flush()
 * @open:	records are taken (ring_open() to ring_stop())
 * @running:	the writer thread runs
 * @stop:	the writer is to drain the ring and end; no record is taken
 * @reopen:	the writer is to call @cfg.reopen
 * @thread:	the writer
 */
struct ring {
	pthread_mutex_t lock;
	pthread_cond_t more, done;
	struct ring_cfg cfg;
	uint64_t head, tail, sunk;
	unsigned long unreported;
	uint64_t drop_at, dropped_total;
	unsigned flushers;
	bool open, running, stop, reopen;
	pthread_t thread;
};

/* A ring must start as this, so that a record put before ring_open() finds
 * a lock to take and is refused. Its waits are timed on CLOCK_MONOTONIC
 * with pthread_cond_clockwait(), so the condition variables need no
 * attributes, and a ring is never torn down. */
#define RING_INITIALIZER                                                       \
	{                                                                      \
		.lock = PTHREAD_MUTEX_INITIALIZER,                             \
		.more = PTHREAD_COND_INITIALIZER,                              \
		.done = PTHREAD_COND_INITIALIZER,                              \
	}

int ring_open(struct ring *r, const struct ring_cfg *cfg);
int ring_start(struct ring *r);
int ring_putv(struct ring *r, const struct iovec *iov, int iovcnt);
int ring_put(struct ring *r, const void *p, size_t n);
void ring_reopen(struct ring *r);
int ring_flush(struct ring *r);
void ring_stop(struct ring *r);
uint64_t ring_dropped(struct ring *r);

#endif /* SMBSPLICE_RING_H */
