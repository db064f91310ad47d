/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PIPEPOOL_H
#define SMBSPLICE_PIPEPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "io/budget.h"

/**
 * struct pipe_slot - one pipe, either lent to a direction or free
 * @rd:		read end
 * @wr:		write end
 * @cap:	capacity the kernel granted (F_GETPIPE_SZ)
 * @next:	free-list link, meaningful only while the slot is free
 */
struct pipe_slot {
	int rd, wr;
	size_t cap;
	struct pipe_slot *next;
};

/**
 * struct pipe_budget - the process-wide cap on open pipes
 * @pipes:	--max-pipes as its limit, pipes open in every pool as used
 * @fds:	the descriptor budget a pipe's two ends come out of, or NULL
 *
 * Shared by the pools of all worker threads, so that --max-pipes holds
 * for the whole process.
 */
struct pipe_budget {
	struct budget pipes;
	struct budget *fds;
};

/**
 * struct pipe_pool - one worker's splice pipes
 * @budget:	the process-wide cap this pool draws on
 * @free:	empty pipes ready to lend, most recently returned first
 * @size:	requested size of every pipe
 * @low:	fewest free pipes since the last trim
 * @nfree:	free pipes now (a gauge any thread may read)
 * @lent:	pipes lent out now (a gauge any thread may read)
 * @created:	pipes ever created (a counter any thread may read)
 * @denied:	requests refused because the budget was spent or no pipe
 *		of @size could be made (a counter any thread may read)
 * @small:	pipes the kernel would not give @size, closed unused (a
 *		counter any thread may read)
 * @retry_at:	after @small, no new pipe is tried before this time
 *		(CLOCK_MONOTONIC_COARSE seconds)
 */
struct pipe_pool {
	struct pipe_budget *budget;
	struct pipe_slot *free;
	size_t size;
	uint64_t low;
	uint64_t nfree, lent, created, denied, small;
	int64_t retry_at;
};

void pipepool_init(struct pipe_pool *p, struct pipe_budget *budget,
		   size_t size);
struct pipe_slot *pipepool_get(struct pipe_pool *p);
void pipepool_put(struct pipe_pool *p, struct pipe_slot *s);
void pipepool_drop(struct pipe_pool *p, struct pipe_slot *s);
unsigned pipepool_trim(struct pipe_pool *p);
void pipepool_destroy(struct pipe_pool *p);
struct pipe_slot *pipepool_adopt(struct pipe_pool *p, int rd, int wr);
unsigned pipepool_budget_open(const struct pipe_budget *b);
unsigned pipepool_fit_kernel(size_t *size, unsigned max, bool resource,
			     bool admin, char *note, size_t len);

#endif /* SMBSPLICE_PIPEPOOL_H */
