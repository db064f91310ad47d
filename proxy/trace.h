/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_TRACE_H
#define SMBSPLICE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "framer.h"
#include "dirindex.h"

struct trace_conn;

struct trace_conn *trace_conn_new(const struct sockaddr_storage *client,
				  const struct sockaddr_storage *local,
				  const char *what);
void trace_conn_start(struct trace_conn *t);
void trace_chunk(struct trace_conn *t, enum dir_index d, const uint8_t *p,
		 size_t n);
void trace_message(struct trace_conn *t, enum dir_index d,
		   const struct smb_msg *m);
void trace_chunk_done(struct trace_conn *t, enum dir_index d, bool opaque);
void trace_conn_end(struct trace_conn *t, bool clean);

#endif /* SMBSPLICE_TRACE_H */
