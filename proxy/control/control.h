/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONTROL_H
#define SMBSPLICE_CONTROL_H

/* control.h - the --control and --control-ro sockets: a local admin's
 * runtime commands, and a monitor's read-only view of them */

#include "control/ctllevel.h"

struct proxy;

/* Where `smbsplice ctl` looks when no --control is given. */
#define CONTROL_DEFAULT_PATH "/run/smbsplice/control"

int control_start(struct proxy *px, const int handed[CONTROL_NLEVELS]);
void control_stop(struct proxy *px);
int control_socket(enum control_level level);
void control_forget(struct proxy *px);

#endif /* SMBSPLICE_CONTROL_H */
