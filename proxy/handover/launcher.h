/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher.h - starting the new binary of a live handover (see launcher.c) */
#ifndef SMBSPLICE_LAUNCHER_H
#define SMBSPLICE_LAUNCHER_H

#include <stddef.h>
#include <sys/types.h>

/**
 * struct launcher - the daemon's end of the root launcher, if any
 * @pid:	the launcher process, 0 when there is none
 * @fd:		SOCK_SEQPACKET to it, -1 when there is none (direct mode)
 */
struct launcher {
	pid_t pid;
	int fd;
};

/* No launcher: launcher_spawn() forks and execs directly. */
#define LAUNCHER_NONE ((struct launcher){ .pid = 0, .fd = -1 })

int launcher_self_exe(char *buf, size_t len);
int launcher_start(struct launcher *ln, const char *exe, char *const argv[]);
pid_t launcher_spawn(struct launcher *ln, const char *exe, char *const argv[],
		     int handover_fd, char *err, size_t errlen);
int launcher_reap(struct launcher *ln, pid_t pid, int *status);
int launcher_kill(pid_t pid, int *status);
void launcher_stop(struct launcher *ln);

#endif /* SMBSPLICE_LAUNCHER_H */
