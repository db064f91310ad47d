/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_THRESHOLD_H
#define SMBSPLICE_THRESHOLD_H

#include <stdbool.h>
#include <stdint.h>

/* What kind of bytes a payload span holds; each class has its threshold. */
enum smb_class {
	SMB_CLASS_READ,	 /* data of an SMB2 READ response */
	SMB_CLASS_WRITE, /* data of an SMB2 WRITE request */
	SMB_CLASS_OTHER, /* encrypted or compressed frames, and the rest of
			  * any other large message */
	SMB_NCLASSES
};

#define SMB_THRESHOLD_OFF UINT32_MAX

/* Below this a recv() and a send() cost less than two splices and a pipe,
 * whatever the threshold says (HAProxy draws the line at 4 KiB too). */
#define SMB_SPLICE_MIN 4096u

/**
 * struct smb_thresholds - smallest payload of each class worth splicing
 * @min:	bytes, per enum smb_class; SMB_THRESHOLD_OFF never splices
 */
struct smb_thresholds {
	uint32_t min[SMB_NCLASSES];
};

/**
 * smb_payload_splices() - is a payload large enough for the splice pump
 * @th:		thresholds
 * @cls:	the payload's class
 * @len:	its length in bytes
 *
 * Below the threshold a recv() and a send() through the copy buffer cost
 * less than two splices and a pipe; below SMB_SPLICE_MIN always.
 *
 * Return: true to splice the payload.
 */
static inline bool smb_payload_splices(const struct smb_thresholds *th,
				       enum smb_class cls, uint32_t len)
{
	return th->min[cls] != SMB_THRESHOLD_OFF && len >= th->min[cls] &&
	       len >= SMB_SPLICE_MIN;
}

const char *smb_class_name(enum smb_class cls);

#endif /* SMBSPLICE_THRESHOLD_H */
