// SPDX-License-Identifier: GPL-2.0-or-later
/* privs.c - what the process may do
 *
 * Theory of operation: several kernel limits apply only to processes
 * without a given capability (pipe sizes, for one), and smbsplice sizes
 * itself to them at start rather than failing later, one connection at a
 * time. Root is not enough to know: a container's root often lacks
 * CAP_SYS_RESOURCE. So the effective set is read from /proc/self/status,
 * which needs no library and no privilege.
 *
 * With --user, privs_become() gives up root once every listening socket
 * is bound: supplementary groups dropped, the user's group and uid taken,
 * and of all capabilities only those named kept, in the permitted and
 * effective sets alike; the bounding set loses the rest and no-new-privs
 * is set, so nothing can win them back. Capabilities belong to threads:
 * the main thread becomes the user before any worker exists, so workers
 * start with its sets. With --user the daemon keeps nothing at all: what
 * still needs a privilege is asked of the privileged helper
 * (privhelper.c), which privs_restrict() leaves with the few it needs.
 * Without --user, root keeps everything.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <linux/securebits.h>
#include <sys/syscall.h>

#include "priv/privs.h"

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

/**
 * caps_set() - set the calling thread's capability sets
 * @d:	the sets, two words each
 *
 * Return: 0, or -1 with errno set.
 */
static int caps_set(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };

	return (int)syscall(SYS_capset, &h, d);
}

/**
 * privs_check_user() - could the process become this user
 * @user:	the name
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
int privs_check_user(const char *user, char *err, size_t errlen)
{
	if (!getpwnam(user)) {
		snprintf(err, errlen, "--user %s: no such user", user);
		return -1;
	}
	if (!privs_have(CAP_SETUID) || !privs_have(CAP_SETGID)) {
		snprintf(
			err, errlen,
			"--user %s: switching users needs root (CAP_SETUID and CAP_SETGID); run as root, or leave --user out",
			user);
		return -1;
	}
	return 0;
}

/**
 * drop_bounding() - empty the bounding set but for the capabilities kept
 * @keep:	a bit per capability to keep
 *
 * Needs CAP_SETPCAP, so it comes before any change of user.
 *
 * Return: 0, or -1 with errno set.
 */
static int drop_bounding(uint64_t keep)
{
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (!(keep >> cap & 1) &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL)
			return -1;
	return 0;
}

/**
 * set_caps() - the permitted and effective sets become @keep, for good
 * @keep:	a bit per capability
 *
 * Inheritable and ambient sets are emptied, and no-new-privs set, so that
 * nothing run later (nothing is) could win more back.
 *
 * Return: 0, or -1 with errno set.
 */
static int set_caps(uint64_t keep)
{
	struct __user_cap_data_struct d[2] = { { 0 } };

	d[0].permitted = d[0].effective = (uint32_t)keep;
	d[1].permitted = d[1].effective = (uint32_t)(keep >> 32);
	if (caps_set(d))
		return -1;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/**
 * privs_restrict() - stay root, but with only the capabilities in @keep
 * @keep:	a bit per capability to keep
 *
 * For the privileged helper, which must stay uid 0 so that the listening
 * sockets it makes belong to root (a SO_REUSEPORT group admits only
 * sockets of the same owner). The securebits make uid 0 worth no more
 * than its capabilities, and lock that; the process is made undumpable,
 * so that the daemon's user cannot ptrace it.
 *
 * Return: 0, or -1 with errno set.
 */
int privs_restrict(uint64_t keep)
{
	if (prctl(PR_SET_SECUREBITS,
		  SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP |
			  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NOROOT |
			  SECBIT_NOROOT_LOCKED,
		  0, 0, 0) ||
	    drop_bounding(keep) || set_caps(keep))
		return -1;
	return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/**
 * privs_become() - run as @user, keeping only the capabilities in @keep
 * @user:	the user's name
 * @keep:	a bit per capability to keep (1 << CAP_NET_ADMIN, ...); 0
 *		under the privileged helper
 * @err:	buffer for one line saying what failed
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
int privs_become(const char *user, uint64_t keep, char *err, size_t errlen)
{
	struct passwd *pw;

	if (privs_check_user(user, err, errlen))
		return -1;
	pw = getpwnam(user);
	if (!pw) {
		snprintf(err, errlen, "--user %s: no such user", user);
		return -1;
	}
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || drop_bounding(keep))
		goto fail;
	if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
		goto fail;
	if (set_caps(keep) || prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0))
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "--user %s: cannot switch to it: %s%s", user,
		 strerror(errno),
		 errno == EPERM ? " (only root may switch users)" : "");
	return -1;
}
