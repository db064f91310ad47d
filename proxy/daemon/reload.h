/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_RELOAD_H
#define SMBSPLICE_RELOAD_H

#include <stddef.h>

struct config;
struct lcfg;
struct proxy;

int listeners_apply(struct proxy *px, const struct config *c, char *err,
		    size_t errlen);
void listeners_retire_all(struct proxy *px);
void listeners_hand_out(struct proxy *px);
int listener_check(struct proxy *px, struct lcfg *cfg, char *err,
		   size_t errlen);

#endif /* SMBSPLICE_RELOAD_H */
