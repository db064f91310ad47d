/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_STATS_H
#define SMBSPLICE_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "framer.h"
#include "pump.h"

enum dir_index {
	DIR_TO_SERVER, /* client -> server: requests */
	DIR_TO_CLIENT, /* server -> client: responses */
	DIR_COUNT
};

/**
 * struct dir_totals - counters of one direction, summed over connections
 * @pump:	bytes and calls per pump
 * @smb:	what the framer saw (smb mode)
 * @uncorks:	setsockopt(TCP_CORK, 0) calls on this direction's destination
 */
struct dir_totals {
	struct half_stats pump;
	struct smb_dir_stats smb;
	uint64_t uncorks;
};

/**
 * struct totals - everything /metrics reports
 * @dir:		per direction
 * @opaque_conns:	connections on which a framer gave up parsing
 */
struct totals {
	struct dir_totals dir[DIR_COUNT];
	uint64_t opaque_conns;
};

void totals_add_dir(struct dir_totals *t, const struct half_stats *pump,
		    const struct smb_dir_stats *smb, uint64_t uncorks);
void totals_write_prometheus(FILE *out, const struct totals *t,
			     unsigned long active, unsigned long total,
			     unsigned pipes_open, unsigned pipes_lent,
			     unsigned long pipes_denied);

#endif /* SMBSPLICE_STATS_H */
