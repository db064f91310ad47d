/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_HANDOVER_T_H
#define SMBSPLICE_HANDOVER_T_H

/* The type of a handover under way, apart from handover.h's prototypes:
 * struct proxy embeds one, and every room that knows the process would
 * otherwise reach handover_out.c's whole world. */

#include <ev.h>
#include <limits.h>
#include <sys/types.h>

#include "handover/launcher.h"

struct proxy;

/**
 * struct handover_out - this process handing itself over (SIGUSR2)
 * @exe:	the binary it was started from, as resolved at start
 * @ln:		with --user, the root launcher (launcher.c)
 * @sock:	the socket to the new process while a handover runs, or -1
 * @pid:	the new process
 * @w:		readable watcher on @sock, for its HELLO
 * @timer:	how long it may take to say HELLO
 * @done:	called once everything is handed over: stop this process
 */
struct handover_out {
	char exe[PATH_MAX];
	struct launcher ln;
	int sock;
	pid_t pid;
	ev_io w;
	ev_timer timer;
	void (*done)(struct proxy *px);
};

#endif /* SMBSPLICE_HANDOVER_T_H */
