/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_BUFPOOL_H
#define SMBSPLICE_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "io/budget.h"

struct buf_node;

/**
 * struct buf_pool - copy buffers, lent to a direction while it holds bytes
 * @free:	free buffers, most recently returned first
 * @size:	bytes per buffer
 * @keep:	most free buffers kept; one returned beyond that is freed
 * @low:	fewest free buffers since the last trim
 * @nfree:	free buffers now (a gauge any thread may read)
 * @lent:	buffers lent now, of every size (a gauge any thread may read)
 * @lent_bytes:	their bytes (a gauge any thread may read)
 * @allocs:	buffers ever allocated (a counter any thread may read)
 * @large:	the bytes large buffers may take, shared by every worker's
 *		pool; NULL for no bound
 *
 * One pool per worker thread; only that thread lends and returns.
 */
struct buf_pool {
	struct buf_node *free;
	size_t size;
	unsigned keep;
	uint64_t low;
	uint64_t nfree, lent, lent_bytes, allocs;
	struct budget *large;
};

void bufpool_init(struct buf_pool *p, size_t size, size_t keep_bytes);
void *bufpool_get(struct buf_pool *p);
void bufpool_put(struct buf_pool *p, void *buf);
void bufpool_bound_large(struct buf_pool *p, struct budget *b);
void *bufpool_get_large(struct buf_pool *p, size_t size);
void bufpool_put_large(struct buf_pool *p, void *buf, size_t size);
unsigned bufpool_trim(struct buf_pool *p);
void bufpool_destroy(struct buf_pool *p);

#endif /* SMBSPLICE_BUFPOOL_H */
