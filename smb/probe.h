/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PROBE_H
#define SMBSPLICE_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* The probe's request: the transport prefix, the SMB2 header, a NEGOTIATE
 * body and its dialects. */
#define SMB_PROBE_REQ_LEN (4 + 64 + 36 + 2 * 4)

/* Bytes of the answer that smb_probe_judge() reads: the prefix, the SMB2
 * header and the first field of the NEGOTIATE response body. */
#define SMB_PROBE_RSP_NEED (4 + 64 + 2)

/* What a backend answered to the probe (smb_probe_judge()). */
enum smb_probe {
	SMB_PROBE_MORE, /* not enough bytes yet */
	SMB_PROBE_OK,	/* an SMB2 NEGOTIATE response that succeeded */
	SMB_PROBE_BAD,	/* anything else */
};

size_t smb_probe_request(uint8_t *buf, size_t len);
enum smb_probe smb_probe_judge(const uint8_t *p, size_t n, const char **why);

#endif /* SMBSPLICE_PROBE_H */
