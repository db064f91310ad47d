/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADVISE_TALLY_H
#define SMBSPLICE_ADVISE_TALLY_H

#include <stdbool.h>
#include <stdint.h>

#include "smb/framer.h"
#include "reassembly.h"

/* Payload sizes by power of two: bin 0 is under 1 KiB, bin i >= 1 holds
 * [2^(9+i), 2^(10+i)); the last, [8 MiB, 16 MiB), holds the largest a
 * Direct TCP frame can carry. */
#define TALLY_SIZE_BINS 15

/* Outstanding READs: 1, 2, 3-4, 5-8, ..., 129 and more. */
#define TALLY_DEPTH_BINS 9

/* The dialects a NEGOTIATE response may choose, 2.0.2 to 3.1.1. */
#define TALLY_NDIALECTS 5

/* READ requests one connection may have outstanding before more are not
 * followed: far beyond any credit window a server grants. */
#define TALLY_MAX_OUTSTANDING 8192u

/**
 * struct size_hist - payloads of one class by size
 * @count:	payloads per bin
 * @bytes:	their bytes per bin
 */
struct size_hist {
	uint64_t count[TALLY_SIZE_BINS];
	uint64_t bytes[TALLY_SIZE_BINS];
};

/**
 * struct msg_count - messages of one kind in one direction
 * @count:	how many
 * @bytes:	their bytes: each SMB2 message from its header to its
 *		NextCommand or its frame's end; each other frame whole,
 *		after the transport prefix
 */
struct msg_count {
	uint64_t count, bytes;
};

/* Frames that are not SMB2 messages, by struct smb_msg's kind. */
enum tally_frame {
	TALLY_ENCRYPTED,
	TALLY_COMPRESSED,
	TALLY_SMB1,
	TALLY_NETBIOS,
	TALLY_NFRAMES
};

/**
 * struct tally - what the SMB streams of a capture carried
 * @cmd:		SMB2 messages per direction and command (the last
 *			slot: commands past OPLOCK_BREAK)
 * @frames:		other frames per direction, by enum tally_frame
 * @read:		READ responses carrying data, by DataLength
 * @write:		WRITE requests carrying data, by Length
 * @interim:		interim (STATUS_PENDING) READ responses
 * @read_errors:	READ responses with another error status
 * @read_requests:	READ requests
 * @depth:		READ requests by how many were outstanding once
 *			each was sent, itself included (bins: 1, 2, 3-4, ...)
 * @depth_max:		the most outstanding at once
 * @depth_sum:		the sum over requests, for the mean
 * @smb_conns:		connections that carried an SMB message
 * @dialects:		connections per dialect their server chose, by
 *			index in tally_dialects[] (the last slot: others)
 * @max_read:		the largest MaxReadSize a server granted
 * @max_write:		the largest MaxWriteSize
 */
struct tally {
	struct msg_count cmd[2][SMB2_NCOMMANDS + 1];
	struct msg_count frames[2][TALLY_NFRAMES];
	struct size_hist read, write;
	uint64_t interim, read_errors, read_requests;
	uint64_t depth[TALLY_DEPTH_BINS];
	uint64_t depth_max, depth_sum;
	uint64_t smb_conns;
	uint64_t dialects[TALLY_NDIALECTS + 1];
	uint32_t max_read, max_write;
};

/**
 * struct tally_conn - what one connection's tally needs to remember
 * @out:	MessageIds of READ requests not yet answered
 * @nout:	how many
 * @cap:	room in @out
 * @smb:	an SMB message was seen
 * @dialect:	the dialect its server chose, 0 until known
 */
struct tally_conn {
	uint64_t *out;
	uint32_t nout, cap;
	bool smb;
	uint16_t dialect;
};

extern const uint16_t tally_dialects[TALLY_NDIALECTS];

void tally_message(struct tally *t, struct tally_conn *c, enum rs_dir dir,
		   const struct smb_msg *m);
void tally_forget_outstanding(struct tally_conn *c);
void tally_conn_end(struct tally *t, struct tally_conn *c);
unsigned tally_size_bin(uint32_t size);
uint32_t tally_bin_floor(unsigned bin);
unsigned tally_depth_bin(uint64_t depth);
void tally_depth_label(unsigned bin, char *out, size_t outlen);
uint64_t tally_total(const struct size_hist *h, uint64_t *bytes);

#endif /* SMBSPLICE_ADVISE_TALLY_H */
