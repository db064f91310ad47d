/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CTLSEL_H
#define SMBSPLICE_CTLSEL_H

/* ctlsel.h - the groups `kill` names, from words to a struct conn_sel */

#include "conn/connview.h"

int ctlsel_parse(const char *word, const char *arg, struct conn_sel *sel,
		 const char **bad);

#endif /* SMBSPLICE_CTLSEL_H */
