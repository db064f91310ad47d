/* SPDX-License-Identifier: GPL-2.0-or-later */
/* exesafe.h - could only root have put this binary here (see exesafe.c) */
#ifndef SMBSPLICE_EXESAFE_H
#define SMBSPLICE_EXESAFE_H

#include <stddef.h>

/* Room for exesafe_check()'s sentence, a path and what is wrong. */
#define EXE_SAFE_WHY 512

/* What to do about a binary the --user account could have written, said
 * after exesafe_check()'s sentence. */
#define EXE_UNSAFE_HINT                                                        \
	"the --user account could replace what runs as root: make the "        \
	"binary and every directory above it owned by root and writable by "   \
	"root alone (chown root, chmod go-w), or install it where they are"

int exesafe_check(const char *path, char *why, size_t len);

#endif /* SMBSPLICE_EXESAFE_H */
