/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_NETNS_H
#define SMBSPLICE_NETNS_H

#include <stddef.h>
#include <sys/types.h>

int netns_open(const char *path, char *err, size_t errlen);
int netns_enter(int fd);
int netns_home(void);
ino_t netns_ino(int fd);
void netns_no_entry_check(void);

#endif /* SMBSPLICE_NETNS_H */
