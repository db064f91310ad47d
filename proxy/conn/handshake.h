/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_HANDSHAKE_H
#define SMBSPLICE_HANDSHAKE_H

#include <stdbool.h>

#include "io/peek.h"

enum peek_verdict handshake_peek(int fd, bool any_first_frame, unsigned *peeked,
				 struct peek_detail *out);

#endif /* SMBSPLICE_HANDSHAKE_H */
