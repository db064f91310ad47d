/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONN_PP2_H
#define SMBSPLICE_CONN_PP2_H

#include <stdbool.h>

#include "conn/conn-t.h"
#include "pp2/pp2.h"

bool conn_pp2_adopt(struct conn *c, const struct pp2_info *in);

#endif /* SMBSPLICE_CONN_PP2_H */
