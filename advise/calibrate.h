/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADVISE_CALIBRATE_H
#define SMBSPLICE_ADVISE_CALIBRATE_H

#include <stdint.h>

#include "recommend.h"

/**
 * struct calib_point - what moving payloads of one size cost this host
 * @size:	payload bytes of each message (a 64-byte header precedes it)
 * @copy_ns:	CPU nanoseconds per KiB moved by recv() and send()
 * @splice_ns:	CPU nanoseconds per KiB moved by splice() through a pipe
 */
struct calib_point {
	uint32_t size;
	double copy_ns, splice_ns;
};

/**
 * struct calibration - the measurement --calibrate makes
 * @pt:		one point per candidate threshold, smallest first
 * @n:		points measured
 * @crossover:	the smallest size from which splicing cost less at every
 *		size measured, or SMB_THRESHOLD_OFF if none
 * @seconds:	how long it took
 * @err:	what failed, when calibrate() fails
 */
struct calibration {
	struct calib_point pt[ADVISE_NCANDIDATES];
	unsigned n;
	uint32_t crossover;
	double seconds;
	char err[160];
};

int calibrate(struct calibration *c);

#endif /* SMBSPLICE_ADVISE_CALIBRATE_H */
