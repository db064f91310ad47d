/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONTROLCMD_H
#define SMBSPLICE_CONTROLCMD_H

/* controlcmd.h - the control socket's commands, from a request line to
 * an answer */

#include "control/ctllevel.h"
#include "control/outbuf.h"

struct proxy;

/* The largest answer the control socket builds, in bytes: `conns` over
 * 100,000 connections fits. */
#define CONTROL_ANSWER_MAX (64u << 20)

void controlcmd_run(struct proxy *px, char *line, const char *who,
		    enum control_level level, struct outbuf *out);

#endif /* SMBSPLICE_CONTROLCMD_H */
