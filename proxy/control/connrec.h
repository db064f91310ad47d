/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNREC_H
#define SMBSPLICE_CONNREC_H

/* connrec.h - a connection's record, as `conns` and `conn` print it */

#include <stdbool.h>

#include "conn/connview.h"
#include "control/outbuf.h"

void connrec_text_head(struct outbuf *ob);
void connrec_text(struct outbuf *ob, const struct conn_rec *r);
void connrec_json(struct outbuf *ob, const struct conn_rec *r, bool full);
void connrec_detail(struct outbuf *ob, const struct conn_rec *r);

#endif /* SMBSPLICE_CONNREC_H */
