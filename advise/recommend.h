/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADVISE_RECOMMEND_H
#define SMBSPLICE_ADVISE_RECOMMEND_H

#include <stddef.h>
#include <stdint.h>

#include "tally.h"
#include "smb/threshold.h"

/* The thresholds the report weighs: powers of two from the daemon's
 * smallest splice (SMB_SPLICE_MIN) to 8 MiB. */
#define ADVISE_NCANDIDATES 12
extern const uint32_t advise_candidates[ADVISE_NCANDIDATES];

/* The daemon's default --read-threshold and --write-threshold, and the
 * crossover the README's benchmarks measured (docs/benchmarks.md: the
 * READ-size sweep found one synchronous reader no faster spliced at any
 * size up to 1 MiB; streams of 8 MiB READs spliced for half the CPU). */
#define ADVISE_DEFAULT_THRESHOLD (1u << 20)
#define ADVISE_README_CROSSOVER	 (1u << 20)

/* Why a threshold is recommended. */
enum advice_why {
	ADVICE_SPLICE,	      /* the crossover: payloads at or above it */
	ADVICE_NOT_ENGAGED,   /* no payload reaches the crossover: off */
	ADVICE_NO_DATA,	      /* no payload of the class: the default */
	ADVICE_NEVER_CHEAPER, /* splicing was never cheaper here: off */
};

/**
 * struct advice - the threshold recommended for one class
 * @threshold:	bytes, or SMB_THRESHOLD_OFF
 * @why:	see enum advice_why
 * @share:	share of the class's payload bytes spliced at @threshold
 * @payloads:	payloads spliced at @threshold
 */
struct advice {
	uint32_t threshold;
	enum advice_why why;
	double share;
	uint64_t payloads;
};

double advise_share(const struct size_hist *h, uint32_t threshold,
		    uint64_t *payloads);
void advise_threshold(const struct size_hist *h, uint32_t crossover,
		      struct advice *a);
void advise_size_text(uint32_t bytes, char *out, size_t outlen);

#endif /* SMBSPLICE_ADVISE_RECOMMEND_H */
