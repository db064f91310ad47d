/* SPDX-License-Identifier: GPL-2.0-or-later */
/* monotime.h - the monotonic clock in nanoseconds, for latency figures */
#ifndef SMBSPLICE_MONOTIME_H
#define SMBSPLICE_MONOTIME_H

#include <stdint.h>
#include <time.h>

/**
 * mono_ns() - the monotonic clock, through the vDSO: no system call
 *
 * Return: nanoseconds, never 0 (0 means "not stamped" to the callers).
 */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
}

#endif
