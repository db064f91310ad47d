/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef WANEM_TUN_H
#define WANEM_TUN_H

#include <stddef.h>

int tun_open(const char *ns, const char *ifname, unsigned mtu, char *err,
	     size_t errlen);

#endif /* WANEM_TUN_H */
