/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_TRACEFILE_H
#define SMBSPLICE_TRACEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

int tracefile_open(const char *path, uint64_t max, char *err, size_t errlen);
bool tracefile_enabled(void);
int tracefile_start(void);
void tracefile_put(const struct timespec *ts, const void *data, uint32_t caplen,
		   uint32_t len);
void tracefile_reopen(void);
void tracefile_counts(uint64_t *written, uint64_t *dropped);
void tracefile_close(void);

#endif /* SMBSPLICE_TRACEFILE_H */
