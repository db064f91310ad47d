/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_FDBUDGET_H
#define SMBSPLICE_FDBUDGET_H

struct proxy;

int init_limits(struct proxy *px);

#endif /* SMBSPLICE_FDBUDGET_H */
