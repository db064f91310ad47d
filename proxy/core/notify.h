/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_NOTIFY_H
#define SMBSPLICE_NOTIFY_H

#include <sys/types.h>

int notify_inherited(int **fds);
void notify_mainpid(pid_t pid);
void notify_ready(unsigned nlisteners);
void notify_stopping(unsigned long open);
void notify_reloading(void);

#endif /* SMBSPLICE_NOTIFY_H */
