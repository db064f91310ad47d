/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CTLLEVEL_H
#define SMBSPLICE_CTLLEVEL_H

/* ctllevel.h - what a control socket's clients may do, in a header of
 * its own so that the socket (control.c), the commands (controlcmd.c)
 * and `info` (ctlinfo.c) share it without including one another. */

/* HAProxy's levels, in two. */
enum control_level {
	CONTROL_VIEW,  /* look: conns, conn, listeners, top, info, help */
	CONTROL_ADMIN, /* look and act: drain, resume, kill too */
};

/* How many levels, and so control sockets, there are. */
#define CONTROL_NLEVELS 2

#endif /* SMBSPLICE_CTLLEVEL_H */
