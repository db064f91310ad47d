/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_RELOAD_H
#define SMBSPLICE_RELOAD_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct lcfg;
struct proxy;

int reload_apply(struct proxy *px, const struct config *c, char *err,
		 size_t errlen);
void reload_retire_all(struct proxy *px);
void reload_hand_out(struct proxy *px);
int reload_check_listener(struct proxy *px, struct lcfg *cfg, char *err,
			  size_t errlen);
void reload_run(struct proxy *px, int signum);
void reload_log_listeners(const struct proxy *px, bool started);

#endif /* SMBSPLICE_RELOAD_H */
