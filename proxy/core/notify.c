// SPDX-License-Identifier: GPL-2.0-or-later
/* notify.c - what smbsplice tells systemd, and what systemd hands it
 *
 * Theory of operation: under Type=notify, systemd waits for READY=1 before
 * it counts the service as started (and starts what depends on it), and
 * shows STATUS= in `systemctl status`. smbsplice says READY=1 once every
 * listener is open and every worker runs, RELOADING=1 and READY=1 around a
 * reload, and STOPPING=1 when SIGTERM starts the drain. Under socket
 * activation systemd passes the listening sockets (LISTEN_FDS), which
 * smbsplice uses instead of binding its own: a restart then refuses no
 * client, since the sockets outlive the process.
 *
 * All of it goes through libsystemd's sd_notify() and sd_listen_fds(), and
 * all of it is a no-op when NOTIFY_SOCKET or LISTEN_FDS is not set, as
 * when smbsplice runs by hand.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

#include "core/notify.h"

/**
 * notify_inherited() - the listening sockets systemd passed, if any
 * @fds:	set to a malloc()ed array of them, or NULL
 *
 * They are made non-blocking and close-on-exec, and LISTEN_FDS is unset,
 * so that nothing started later takes them for its own.
 *
 * Return: how many, 0 when none were passed.
 */
int notify_inherited(int **fds)
{
	int n = sd_listen_fds(1);

	*fds = NULL;
	if (n <= 0)
		return 0;
	*fds = malloc((size_t)n * sizeof(int));
	if (!*fds)
		return 0;
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;

		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		(*fds)[i] = fd;
	}
	return n;
}

/**
 * notify_ready() - every listener is open and every worker runs
 * @nlisteners:	how many listeners, for STATUS=
 */
void notify_ready(unsigned nlisteners)
{
	sd_notifyf(0, "READY=1\nSTATUS=forwarding on %u listener%s", nlisteners,
		   nlisteners == 1 ? "" : "s");
}

/**
 * notify_reloading() - a reload begins; notify_ready() says it ended
 */
void notify_reloading(void)
{
	sd_notify(0, "RELOADING=1");
}

/**
 * notify_stopping() - the drain begins
 * @open:	connections still open
 */
void notify_stopping(unsigned long open)
{
	sd_notifyf(0, "STOPPING=1\nSTATUS=draining %lu connection%s", open,
		   open == 1 ? "" : "s");
}

/**
 * notify_mainpid() - a handover is done: the service's process is @pid
 * @pid:	the new process
 *
 * Sent by the old process, the main one until now, which the unit's
 * NotifyAccess= accepts it from; the new one is the main one after. A
 * handover that fails after it sends its own pid back.
 */
void notify_mainpid(pid_t pid)
{
	sd_notifyf(0, "MAINPID=%d\nSTATUS=handed over to pid %d", (int)pid,
		   (int)pid);
}
