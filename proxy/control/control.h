/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONTROL_H
#define SMBSPLICE_CONTROL_H

/* control.h - the --control socket: a local admin's runtime commands */

struct proxy;

/* Where `smbsplice ctl` looks when no --control is given. */
#define CONTROL_DEFAULT_PATH "/run/smbsplice/control"

int control_start(struct proxy *px, int handed);
void control_stop(struct proxy *px);
int control_socket(void);
void control_forget(struct proxy *px);

#endif /* SMBSPLICE_CONTROL_H */
