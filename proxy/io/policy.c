// SPDX-License-Identifier: GPL-2.0-or-later
/* policy.c - choosing the pump for traffic without message framing
 *
 * Theory of operation: in --mode tcp there are no message boundaries, so
 * the only evidence is the size of each read. Small reads mean
 * request/response traffic, where a recv() and a send() through a small
 * buffer are the cheapest path and add no latency. Full reads mean bulk,
 * where splice() saves the two copies through user space. The policy flips
 * between the two with hysteresis: into splice on a copy read that filled
 * the buffer, back to copy on a splice read below FLOW_SPLICE_MIN.
 */
#include "config.h"

#include "io/policy.h"

/**
 * policy_after_read() - learn from the read just made
 * @p:		the direction's policy
 * @k:		pump that made the read
 * @got:	bytes it returned (more than zero)
 * @asked:	bytes it asked for
 */
void policy_after_read(struct flow_policy *p, enum pump_kind k, size_t got,
		       size_t asked)
{
	if (k == PUMP_COPY)
		p->splicing = got == asked;
	else if (got < FLOW_SPLICE_MIN)
		p->splicing = false;
}
