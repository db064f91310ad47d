/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_POLICY_H
#define SMBSPLICE_POLICY_H

#include <stdbool.h>
#include <stddef.h>

enum pump_kind {
	PUMP_COPY,   /* recv() into the direction's buffer, then send() */
	PUMP_SPLICE, /* splice() socket -> pipe -> socket */
};

/* A splice read that moves less than this many bytes says the flow is not
 * bulk: below it recv() and send() are cheaper than two splices (HAProxy
 * draws the same line at 4 KiB). */
#define FLOW_SPLICE_MIN 4096u

/**
 * struct flow_policy - pump choice for a direction with no message framing
 * @splice_ok:	splicing is allowed at all (not --no-splice)
 * @splicing:	recent reads look like bulk, so the next read splices
 *
 * Lifecycle: @splicing starts false, so request/response traffic is copied
 * and pays no pipe overhead. A copy read that fills the whole buffer sets
 * it: more is queued than one buffer holds, which is what bulk looks like.
 * A splice read smaller than FLOW_SPLICE_MIN clears it again.
 */
struct flow_policy {
	bool splice_ok;
	bool splicing;
};

/**
 * flow_pump() - which pump reads the next stretch of bytes
 * @p:	the direction's policy
 *
 * Return: PUMP_SPLICE or PUMP_COPY.
 */
static inline enum pump_kind flow_pump(const struct flow_policy *p)
{
	return p->splice_ok && p->splicing ? PUMP_SPLICE : PUMP_COPY;
}

/**
 * flow_more_due() - do the bytes just read look like part of a larger burst
 * @got:	bytes the read returned
 * @asked:	bytes it could have returned
 *
 * A read that filled all the room it had probably left bytes behind in the
 * socket, so the write of these bytes should carry MORE. A shorter read
 * drained the socket: push.
 *
 * Return: true to write with MORE.
 */
static inline bool flow_more_due(size_t got, size_t asked)
{
	return got == asked;
}

void policy_after_read(struct flow_policy *p, enum pump_kind k, size_t got,
		       size_t asked);

#endif /* SMBSPLICE_POLICY_H */
