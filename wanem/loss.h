/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef WANEM_LOSS_H
#define WANEM_LOSS_H

#include <stdbool.h>
#include <stdint.h>

#include "wan_options.h"

/**
 * struct rng - xoshiro256** state
 * @s:	the four words
 */
struct rng {
	uint64_t s[4];
};

/* What the loss models make of one packet. */
enum loss_verdict { LOSS_KEEP, LOSS_RANDOM, LOSS_BURST };

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
bool rng_chance(struct rng *r, double p);
int64_t jitter_draw(struct rng *r, uint64_t jitter_ns);
enum loss_verdict loss_draw(struct rng *r, const struct path_conf *pc,
			    bool *bad);

#endif /* WANEM_LOSS_H */
