/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_NETNS_H
#define SMBSPLICE_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Distinct namespace paths a process opens in its life, at most. */
#define NETNS_MAX_PINS 256

int netns_open(const char *path, bool foreign, char *err, size_t errlen);
unsigned netns_pins(int *fds, unsigned max);
int netns_enter(int fd);
int netns_home(void);
ino_t netns_ino(int fd);
void netns_no_entry_check(void);

#endif /* SMBSPLICE_NETNS_H */
