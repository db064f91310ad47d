// SPDX-License-Identifier: GPL-2.0-or-later
/* privs.c - what the process may do
 *
 * Theory of operation: several kernel limits apply only to processes
 * without a given capability (pipe sizes, for one), and smbsplice sizes
 * itself to them at start rather than failing later, one connection at a
 * time. Root is not enough to know: a container's root often lacks
 * CAP_SYS_RESOURCE. So the effective set is read from /proc/self/status,
 * which needs no library and no privilege.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "privs.h"

/**
 * privs_have() - does the process hold a capability in its effective set
 * @cap:	the capability's number (CAP_SYS_RESOURCE is 24)
 *
 * Return: true if it does; false if it does not, or /proc cannot tell.
 */
bool privs_have(int cap)
{
	char line[128];
	uint64_t eff = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %" SCNx64, &eff) == 1;
	fclose(f);
	return found && cap >= 0 && cap < 64 && (eff >> cap & 1);
}
