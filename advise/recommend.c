// SPDX-License-Identifier: GPL-2.0-or-later
/* recommend.c - from payload sizes and a crossover to a threshold
 *
 * Theory of operation: splicing a payload costs a fixed amount (two
 * splice() calls and a pipe, and a header read apart from its payload)
 * and then less per byte than copying it through a buffer; copying costs
 * little per message and more per byte. So there is a payload size, the
 * crossover, from which splicing costs less CPU than copying, and below
 * which it costs more. It comes from --calibrate, measured on this host
 * (calibrate.c), or from the README's benchmarks (1 MiB).
 *
 * The threshold that spends the least CPU on a workload splices exactly
 * its payloads at or above the crossover, whatever their mix: so the
 * recommendation is the smallest candidate threshold at or above the
 * crossover. The capture then says what that would do:
 *
 *  - payloads at or above it: recommend it, with the share of the
 *    class's bytes it would splice;
 *  - payloads, but none that large: splicing would not engage on this
 *    workload, and costs more where it would: recommend off;
 *  - no payload of the class at all: nothing to go on, keep the daemon's
 *    default;
 *  - a calibration in which splicing was never cheaper: off.
 *
 * The share is of payload bytes: the headers are always copied, and the
 * first payload of a run arrives partly with its header and is partly
 * copied, so the spliced share of all bytes is a little lower.
 */
#include "config.h"

#include <stdio.h>

#include "recommend.h"

const uint32_t advise_candidates[ADVISE_NCANDIDATES] = {
	4u << 10,   8u << 10,	16u << 10, 32u << 10, 64u << 10, 128u << 10,
	256u << 10, 512u << 10, 1u << 20,  2u << 20,  4u << 20,	 8u << 20,
};

/**
 * advise_share() - the share of payload bytes a threshold would splice
 * @h:		the class's payloads by size
 * @threshold:	a power of two of at least 1 KiB (a bin's floor), or
 *		SMB_THRESHOLD_OFF
 * @payloads:	set to how many payloads it would splice
 *
 * Return: spliced bytes over all payload bytes, 0 when there are none.
 */
double advise_share(const struct size_hist *h, uint32_t threshold,
		    uint64_t *payloads)
{
	uint64_t total, bytes = 0, n = 0;

	tally_total(h, &total);
	for (unsigned i = 0; i < TALLY_SIZE_BINS; i++)
		if (threshold != SMB_THRESHOLD_OFF && i &&
		    tally_bin_floor(i) >= threshold) {
			bytes += h->bytes[i];
			n += h->count[i];
		}
	*payloads = n;
	return total ? (double)bytes / (double)total : 0.0;
}

/**
 * round_up() - the smallest candidate threshold at or above a size
 * @size:	bytes
 *
 * Return: the candidate, or SMB_THRESHOLD_OFF past the largest.
 */
static uint32_t round_up(uint32_t size)
{
	for (unsigned i = 0; i < ADVISE_NCANDIDATES; i++)
		if (advise_candidates[i] >= size)
			return advise_candidates[i];
	return SMB_THRESHOLD_OFF;
}

/**
 * advise_threshold() - the threshold to recommend for one class
 * @h:		its payloads by size
 * @crossover:	the payload size from which splicing costs less than
 *		copying, or SMB_THRESHOLD_OFF if it never did
 * @a:		filled in
 */
void advise_threshold(const struct size_hist *h, uint32_t crossover,
		      struct advice *a)
{
	uint64_t bytes;

	a->share = 0;
	a->payloads = 0;
	if (!tally_total(h, &bytes)) {
		a->why = ADVICE_NO_DATA;
		a->threshold = ADVISE_DEFAULT_THRESHOLD;
		return;
	}
	a->threshold = round_up(crossover);
	if (crossover == SMB_THRESHOLD_OFF ||
	    a->threshold == SMB_THRESHOLD_OFF) {
		a->why = ADVICE_NEVER_CHEAPER;
		a->threshold = SMB_THRESHOLD_OFF;
		return;
	}
	a->share = advise_share(h, a->threshold, &a->payloads);
	a->why = a->payloads ? ADVICE_SPLICE : ADVICE_NOT_ENGAGED;
	if (!a->payloads)
		a->threshold = SMB_THRESHOLD_OFF;
}

/**
 * advise_size_text() - a size as the daemon's options take it
 * @bytes:	the size, or SMB_THRESHOLD_OFF
 * @out:	buffer: "off", "1M", "64K" or "1000"
 * @outlen:	its size
 */
void advise_size_text(uint32_t bytes, char *out, size_t outlen)
{
	if (bytes == SMB_THRESHOLD_OFF)
		snprintf(out, outlen, "off");
	else if (bytes && bytes % (1u << 20) == 0)
		snprintf(out, outlen, "%uM", bytes >> 20);
	else if (bytes && bytes % 1024 == 0)
		snprintf(out, outlen, "%uK", bytes >> 10);
	else
		snprintf(out, outlen, "%u", bytes);
}
