/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PRIVS_H
#define SMBSPLICE_PRIVS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/capability.h>

bool privs_have(int cap);
int privs_check_user(const char *user, char *err, size_t errlen);
int privs_become(const char *user, uint64_t keep, char *err, size_t errlen);
int privs_restrict(uint64_t keep);

#endif /* SMBSPLICE_PRIVS_H */
