/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_OBSERVE_H
#define SMBSPLICE_OBSERVE_H

#include <stdbool.h>

#include "conn-t.h"

void observe_begin(struct conn *c);
void observe_dir(struct dir *d);
void observe_end(struct conn *c, bool clean);

#endif /* SMBSPLICE_OBSERVE_H */
