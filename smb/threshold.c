// SPDX-License-Identifier: GPL-2.0-or-later
/* threshold.c - names for the payload classes the thresholds apply to
 *
 * The threshold test itself is the inline smb_payload_splices(): it runs
 * once per message and belongs where the framer can inline it.
 */
#include "config.h"

#include "smb/threshold.h"

/**
 * smb_class_name() - the class as a metrics label and log word
 * @cls:	the class
 *
 * Return: "read", "write" or "other".
 */
const char *smb_class_name(enum smb_class cls)
{
	static const char *const names[SMB_NCLASSES] = { "read", "write",
							 "other" };

	return cls < SMB_NCLASSES ? names[cls] : "?";
}
