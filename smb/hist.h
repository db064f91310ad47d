/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hist.h - latency histograms that one thread writes and any thread reads
 *
 * Fixed buckets, from 10 us to 10 s in 1-2.5-5 steps, which covers both a
 * proxy's own microseconds and a server's seconds-long WRITE flush, and
 * matches the le="..." labels Prometheus expects of a histogram. Each
 * bucket counts only the observations that fell into it (not the running
 * sum Prometheus shows), so that an observation costs one counter add in
 * its bucket and one in the sum; the reader accumulates.
 */
#ifndef SMBSPLICE_HIST_H
#define SMBSPLICE_HIST_H

#include <stdint.h>

#include "common/counter.h"

#define HIST_NBOUNDS 19

/* Upper bounds of the buckets, in nanoseconds; a last bucket takes the
 * rest. */
extern const uint64_t hist_bounds_ns[HIST_NBOUNDS];

/**
 * struct hist - one histogram
 * @bucket:	observations per bucket; [HIST_NBOUNDS] is above the last
 *		bound
 * @sum_ns:	their sum, in nanoseconds
 *
 * Only uint64_t counters: hist_add() and counters_add_totals() rely on that.
 */
struct hist {
	uint64_t bucket[HIST_NBOUNDS + 1];
	uint64_t sum_ns;
};

/**
 * hist_observe() - count @n observations of @ns nanoseconds each
 * @h:	the histogram, owned by the calling thread
 * @ns:	the duration
 * @n:	how many times it was seen
 */
static inline void hist_observe(struct hist *h, uint64_t ns, uint64_t n)
{
	unsigned i = 0;

	while (i < HIST_NBOUNDS && ns > hist_bounds_ns[i])
		i++;
	counter_add(&h->bucket[i], n);
	counter_add(&h->sum_ns, ns * n);
}

uint64_t hist_count(const struct hist *h);

#endif /* SMBSPLICE_HIST_H */
