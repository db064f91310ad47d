/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNLOG_H
#define SMBSPLICE_CONNLOG_H

#include "conn/conn-t.h"

void connlog_end(const struct conn *c, enum conn_end end, const char *why);
void connlog_quiet(void);
void connlog_opaque(const struct dir *d);
unsigned connlog_smb_warnings(const struct dir *d);

#endif /* SMBSPLICE_CONNLOG_H */
