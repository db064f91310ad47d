/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef WANEM_OPTIONS_H
#define WANEM_OPTIONS_H

#include <linux/limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The two directions: packets read from A's tun and written to B's, and
 * back. */
enum { DIR_AB, DIR_BA, NDIRS };

/**
 * struct burst - Gilbert-Elliott loss, each figure a probability in [0, 1]
 * @on:		the model is used
 * @p:		per packet, from the good state to the bad
 * @r:		per packet, from the bad state back to the good
 * @h:		loss in the bad state
 * @k:		loss in the good state
 */
struct burst {
	bool on;
	double p, r, h, k;
};

/**
 * struct path_conf - how one direction of the path treats packets
 * @delay_ns:	one-way delay, after serialization
 * @jitter_ns:	each packet's delay varies by up to this, either way
 * @loss:	independent loss, a probability in [0, 1]
 * @burst:	burst loss
 * @rate_bps:	the bottleneck's rate in bits per second, 0 for none
 * @queue:	packets the bottleneck holds (the one being sent included)
 *		before it drops at its tail
 */
struct path_conf {
	uint64_t delay_ns, jitter_ns;
	double loss;
	struct burst burst;
	double rate_bps;
	unsigned queue;
};

/**
 * struct wan_conf - the whole command line
 * @ns:		each side's namespace path ("" for the program's own)
 * @ifname:	each side's tun device name
 * @mtu:	both tun devices' MTU, and the largest packet forwarded
 * @limit:	packets each direction holds at most, queue and delay line
 * @reorder:	jitter may reorder packets
 * @control:	the control file SIGHUP re-reads, or NULL
 * @seed:	the random generator's seed
 * @seeded:	@seed was given
 * @dir:	per-direction settings
 */
struct wan_conf {
	char ns[2][PATH_MAX];
	char ifname[2][IFNAMSIZ];
	unsigned mtu, limit;
	bool reorder;
	const char *control;
	uint64_t seed;
	bool seeded;
	struct path_conf dir[NDIRS];
};

/* What wan_options_parse() found: go on, or exit with status 0 or 2. */
enum wan_opt_result { WAN_RUN, WAN_EXIT_OK, WAN_EXIT_USAGE };

enum wan_opt_result wan_options_parse(int argc, char **argv,
				      struct wan_conf *c);
int wan_options_control(const char *path, const struct wan_conf *base,
			struct wan_conf *out, char *err, size_t errlen);
void wan_options_describe(const struct wan_conf *c, int dir, char *buf,
			  size_t len);

#endif /* WANEM_OPTIONS_H */
