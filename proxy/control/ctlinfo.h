/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CTLINFO_H
#define SMBSPLICE_CTLINFO_H

/* ctlinfo.h - the control socket's `info`: the process at a glance */

#include <stdbool.h>

#include "control/ctllevel.h"
#include "control/outbuf.h"

struct proxy;

void ctlinfo_run(struct proxy *px, enum control_level level, bool json,
		 struct outbuf *out);

#endif /* SMBSPLICE_CTLINFO_H */
