/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_SIGNALS_H
#define SMBSPLICE_SIGNALS_H

/* signals.h - the main thread's signals, and the drain (see signals.c) */

struct proxy;

void signals_watch(struct proxy *px, void (*stop)(struct proxy *px));
void signals_linger(struct proxy *px);

#endif /* SMBSPLICE_SIGNALS_H */
