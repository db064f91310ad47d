/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_FDBUDGET_H
#define SMBSPLICE_FDBUDGET_H

#include <stddef.h>

struct proxy;

int fdbudget_init(struct proxy *px, size_t handed, unsigned scrapes);

#endif /* SMBSPLICE_FDBUDGET_H */
