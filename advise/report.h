/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADVISE_REPORT_H
#define SMBSPLICE_ADVISE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "calibrate.h"
#include "capture.h"
#include "reassembly.h"
#include "recommend.h"
#include "walk.h"

/**
 * struct report - everything the advisor says about a capture
 * @path:	the capture's file name
 * @cap:	the capture (format, link type, what its records held)
 * @broken:	the file breaks off in the middle of a record, or libpcap
 *		cannot read on: @cap->err says how, and the figures cover
 *		the packets before
 * @rs:		what reassembly found
 * @w:		the walk: what the streams carried, how well they were
 *		followed
 * @ports:	the TCP ports taken as SMB servers'
 * @nports:	how many
 * @max_conns:	the bound on connections followed at once (--max-connections)
 * @cal:	the calibration the recommendation is based on, or NULL
 *		for the README's figures
 * @cal_failed:	why --calibrate failed, when it did (the README's figures
 *		are used instead), or NULL
 * @crossover:	the crossover used
 * @read:	the READ threshold recommended
 * @write:	the WRITE threshold recommended
 */
struct report {
	const char *path;
	const struct capture *cap;
	bool broken;
	const struct rs_stats *rs;
	const struct walk *w;
	const uint16_t *ports;
	unsigned nports;
	unsigned long max_conns;
	const struct calibration *cal;
	const char *cal_failed;
	uint32_t crossover;
	struct advice read, write;
};

void report_text(FILE *f, const struct report *r);
void report_json(FILE *f, const struct report *r);
void report_ports(const uint16_t *ports, unsigned n, char *out, size_t outlen);

#endif /* SMBSPLICE_ADVISE_REPORT_H */
