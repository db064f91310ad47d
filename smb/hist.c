// SPDX-License-Identifier: GPL-2.0-or-later
/* hist.c - the histograms' bucket bounds (see hist.h) */
#include "config.h"

#include "smb/hist.h"

const uint64_t hist_bounds_ns[HIST_NBOUNDS] = {
	10000,	    25000,	50000,	    100000,	 250000,
	500000,	    1000000,	2500000,    5000000,	 10000000,
	25000000,   50000000,	100000000,  250000000,	 500000000,
	1000000000, 2500000000, 5000000000, 10000000000,
};

/**
 * hist_count() - how many observations a histogram holds
 * @h:	the histogram, read from any thread
 *
 * Return: the sum of its buckets.
 */
uint64_t hist_count(const struct hist *h)
{
	uint64_t n = 0;

	for (unsigned i = 0; i <= HIST_NBOUNDS; i++)
		n += counter_read(&h->bucket[i]);
	return n;
}
