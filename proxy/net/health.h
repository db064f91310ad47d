/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_HEALTH_H
#define SMBSPLICE_HEALTH_H

struct proxy;

void health_sync(struct proxy *px);
void health_stop(void);

#endif /* SMBSPLICE_HEALTH_H */
