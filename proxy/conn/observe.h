/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_OBSERVE_H
#define SMBSPLICE_OBSERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "conn/conn-t.h"
#include "observe/timing.h"
#include "observe/trace.h"

void observe_begin(struct conn *c);
void observe_dir(struct dir *d);
void observe_end(struct conn *c, bool clean);
void observe_save_timing(const struct conn *c, struct timing_saved *tm,
			 uint32_t *tm_len);
void observe_save_trace(const struct conn *c, struct trace_conn_saved *tr,
			uint32_t *tr_len);
int observe_adopt_timing(struct conn *c, const void *tm, size_t tm_len);
int observe_adopt_trace(struct conn *c, const void *tr);
void observe_forget(struct conn *c);
void observe_save_who(const struct conn *c, struct smb_who_saved *s);
int observe_adopt_who(struct conn *c, const struct smb_who_saved *s);

#endif /* SMBSPLICE_OBSERVE_H */
