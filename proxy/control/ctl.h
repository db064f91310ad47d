/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CTL_H
#define SMBSPLICE_CTL_H

/* ctl.h - `smbsplice ctl`: the control socket's client */

int ctl_main(int argc, char **argv);

#endif /* SMBSPLICE_CTL_H */
