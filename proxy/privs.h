/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PRIVS_H
#define SMBSPLICE_PRIVS_H

#include <stdbool.h>

bool privs_have(int cap);

#endif /* SMBSPLICE_PRIVS_H */
