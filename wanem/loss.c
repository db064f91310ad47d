// SPDX-License-Identifier: GPL-2.0-or-later
/* loss.c - the path's chance: random loss, burst loss, jitter
 *
 * Theory of operation: every draw comes from one xoshiro256** generator,
 * seeded from --seed (so that a run can be repeated) or the kernel. It is
 * fast enough to draw for every packet at millions a second, and its
 * output passes the statistical test suites, which a loss figure checked
 * against binomial bounds needs.
 *
 * Independent loss drops each packet with probability --loss.
 *
 * Burst loss is the Gilbert-Elliott model: a path is in a good state or a
 * bad one, and each state loses packets with its own probability (K in
 * the good state, H in the bad). A packet is lost or kept by the state it
 * finds; then the state moves on, good to bad with probability P, bad to
 * good with probability R. So the bad state lasts 1/R packets on average,
 * the path spends P/(P+R) of its packets in it, and the long-run loss is
 * (P*H + R*K)/(P+R). With the defaults H = 100%, K = 0 the path loses
 * bursts of 1/R packets on average, P/(P+R) of all packets. A packet is
 * lost if either model loses it.
 *
 * Jitter is a uniform draw in [-J, +J]; the delay line decides what to do
 * with it (line.c).
 */
#include "config.h"

#include "loss.h"

/**
 * rotl() - rotate left
 * @x:	the word
 * @k:	by how many bits (1..63)
 *
 * Return: the rotated word.
 */
static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/**
 * rng_seed() - seed the generator
 * @r:		the generator
 * @seed:	any 64 bits; splitmix64 spreads them over the state, which
 *		must not be all zero
 */
void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		r->s[i] = z ^ (z >> 31);
	}
}

/**
 * rng_next() - the next 64 random bits
 * @r:	the generator
 *
 * Return: the bits.
 */
uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/**
 * rng_chance() - true with probability @p
 * @r:	the generator
 * @p:	in [0, 1]; 0 is never and 1 always, exactly
 *
 * Return: the draw.
 */
bool rng_chance(struct rng *r, double p)
{
	if (p <= 0)
		return false;
	if (p >= 1)
		return true;
	return (double)(rng_next(r) >> 11) * 0x1.0p-53 < p;
}

/**
 * jitter_draw() - a uniform offset in [-@jitter_ns, +@jitter_ns]
 * @r:		the generator
 * @jitter_ns:	the bound
 *
 * Return: the offset in nanoseconds.
 */
int64_t jitter_draw(struct rng *r, uint64_t jitter_ns)
{
	if (!jitter_ns)
		return 0;
	return (int64_t)(rng_next(r) % (2 * jitter_ns + 1)) -
	       (int64_t)jitter_ns;
}

/**
 * loss_draw() - whether the path loses a packet
 * @r:		the generator
 * @pc:		the direction's settings
 * @bad:	the direction's Gilbert-Elliott state, moved on
 *
 * Return: LOSS_KEEP, or which model lost it.
 */
enum loss_verdict loss_draw(struct rng *r, const struct path_conf *pc,
			    bool *bad)
{
	bool lost = false;

	if (pc->burst.on) {
		lost = rng_chance(r, *bad ? pc->burst.h : pc->burst.k);
		if (rng_chance(r, *bad ? pc->burst.r : pc->burst.p))
			*bad = !*bad;
	}
	if (rng_chance(r, pc->loss))
		return LOSS_RANDOM;
	return lost ? LOSS_BURST : LOSS_KEEP;
}
