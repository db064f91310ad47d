// SPDX-License-Identifier: GPL-2.0-or-later
/* reuseport.c - a kernel program that steers each datagram of a QUIC
 * listener to the worker whose connection it is
 *
 * Theory of operation
 *
 * With SO_REUSEPORT every worker has a UDP socket on the listener's
 * address, and the kernel picks one per datagram by a hash of its
 * 4-tuple. A client whose address changes (a NAT rebinding, a phone
 * between networks) would then land on another worker, which does not
 * know its connection. QUIC routes by connection ID instead, and the
 * server chooses the IDs it is reached by: each one a QUIC listener
 * issues carries, in its first byte, the slot of the socket of the
 * worker that owns the connection (REUSEPORT_SLOTS, ngq.c stamps it).
 *
 * The program, a BPF_PROG_TYPE_SK_REUSEPORT attached to the group
 * (SO_ATTACH_REUSEPORT_EBPF), reads the destination ID's first byte and
 * selects that slot's socket from a REUSEPORT_SOCKARRAY map. What does
 * not carry one of our IDs goes to one of this process's own sockets by
 * the kernel's hash of the 4-tuple: a client's Initial and 0-RTT
 * packets, which name the ID the client chose (its retransmissions come
 * from the same 4-tuple, so they reach the same worker), a long header
 * whose ID is not our length, and an ID whose slot has no socket (a
 * restarted daemon with fewer workers: a worker answers with a Stateless
 * Reset, as any would).
 *
 * Generations. A live upgrade (SIGUSR2) hands the map to the next
 * process, which binds its own sockets into the same group, takes free
 * slots for them, and attaches a program of its own: datagrams naming
 * the old process's slots still reach the old process, which serves its
 * QUIC connections to their end, and every new client's Initial reaches
 * the new one. A slot frees itself when its socket closes (the kernel
 * removes it from the map), so the old process's slots are taken again
 * by a later generation once it has gone.
 *
 * The kernel runs it with the packet from the UDP header on, so the QUIC
 * header starts at byte 8. It is written here in BPF instructions, not
 * compiled: it is 56 instructions, and the build then needs no clang, no
 * libbpf and no object file to find at run time. Loading it takes
 * CAP_BPF (or CAP_SYS_ADMIN); without it the caller falls back to one
 * socket served by one worker, which still delivers every datagram.
 *
 * Only the first byte names the worker: an observer learns which of a
 * few workers a connection is on, no more (QUIC-LB's plaintext mode does
 * the same); the other 17 bytes are random.
 */

#include "io/reuseport.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SO_ATTACH_REUSEPORT_EBPF
#define SO_ATTACH_REUSEPORT_EBPF 52
#endif

/* Where a QUIC header's fields are, counted from the UDP header. */
#define Q_FIRST	   8	/* the first byte: header form and type */
#define Q_SHORT_ID 9	/* a short header's destination ID */
#define Q_LONG_LEN 13	/* a long header's destination ID length */
#define Q_LONG_ID  14	/* its destination ID */
#define Q_LONG	   0x80 /* the header form bit: long */
#define Q_TYPE	   0x30 /* a long header's type bits */
#define Q_HSHAKE   0x20 /* types from here on carry our ID */
#define Q_INSNS	   80	/* room for the program (56 now) */

/**
 * struct prog - a program being written
 * @in:		its instructions
 * @n:		how many
 * @to_hash:	jumps to the choice by hash, patched once it is known
 * @nhash:	how many
 */
struct prog {
	struct bpf_insn in[Q_INSNS];
	unsigned n;
	unsigned to_hash[8];
	unsigned nhash;
};

/**
 * emit() - add one instruction
 * @p:		the program
 * @code:	its opcode
 * @dst:	destination register
 * @src:	source register
 * @off:	offset
 * @imm:	immediate
 *
 * Return: its index.
 */
static unsigned emit(struct prog *p, uint8_t code, uint8_t dst, uint8_t src,
		     int16_t off, int32_t imm)
{
	if (p->n == Q_INSNS)
		abort(); /* a program that outgrew Q_INSNS: fixed, not run */
	p->in[p->n] = (struct bpf_insn){ .code = code,
					 .dst_reg = dst,
					 .src_reg = src,
					 .off = off,
					 .imm = imm };
	return p->n++;
}

/**
 * jump_hash() - if @reg OP @imm, choose one of our sockets by hash
 * @p:		the program
 * @op:		BPF_JNE, BPF_JLT...
 * @reg:	the register
 * @imm:	what it is compared with
 */
static void jump_hash(struct prog *p, uint8_t op, uint8_t reg, int32_t imm)
{
	p->to_hash[p->nhash++] = emit(p, BPF_JMP | op | BPF_K, reg, 0, 0, imm);
}

/**
 * load_byte() - r7 = the packet's byte at the offset in r8, or choose by
 *		 hash if the packet is shorter
 * @p:	the program
 *
 * r6 holds the context; the byte goes through the stack at r10 - 8.
 */
static void load_byte(struct prog *p)
{
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_8, 0, 0);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -8);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 1);
	emit(p, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_skb_load_bytes);
	jump_hash(p, BPF_JNE, BPF_REG_0, 0);
	emit(p, BPF_LDX | BPF_B | BPF_MEM, BPF_REG_7, BPF_REG_10, -8, 0);
}

/**
 * set_r8() - r8 = @imm, the next byte's offset
 * @p:		the program
 * @imm:	the offset
 */
static void set_r8(struct prog *p, int32_t imm)
{
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_8, 0, 0, imm);
}

/**
 * select_r7() - r0 = bpf_sk_select_reuseport() of the slot in r7
 * @p:		the program
 * @map:	the map's descriptor
 */
static void select_r7(struct prog *p, int map)
{
	/* The slot, as the map's 4-byte key at r10 - 4. */
	emit(p, BPF_STX | BPF_W | BPF_MEM, BPF_REG_10, BPF_REG_7, -4, 0);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0);
	emit(p, BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2, BPF_PSEUDO_MAP_FD, 0,
	     map);
	emit(p, 0, 0, 0, 0, 0);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -4);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 0);
	emit(p, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_sk_select_reuseport);
}

/**
 * write_prog() - the steering program of one generation
 * @p:		where, empty
 * @map:	the REUSEPORT_SOCKARRAY's descriptor
 * @base:	the first slot of this process's sockets
 * @n:		how many it has
 */
static void write_prog(struct prog *p, int map, unsigned base, unsigned n)
{
	unsigned to_slot, to_pass;

	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0);
	set_r8(p, Q_FIRST);
	load_byte(p);
	set_r8(p, Q_SHORT_ID);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_7, 0, 0);
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, Q_LONG);
	to_slot = emit(p, BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_2, 0, 0, 0);
	/* A long header: Initial and 0-RTT name the client's ID. */
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_7, 0, 0, Q_TYPE);
	jump_hash(p, BPF_JLT, BPF_REG_7, Q_HSHAKE);
	set_r8(p, Q_LONG_LEN);
	load_byte(p);
	jump_hash(p, BPF_JNE, BPF_REG_7, REUSEPORT_CIDLEN);
	set_r8(p, Q_LONG_ID);
	p->in[to_slot].off = (int16_t)(p->n - to_slot - 1);
	load_byte(p);
	select_r7(p, map);
	to_pass = emit(p, BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, 0);
	/* By hash, among this process's own sockets: no socket in the
	 * slot, or no slot named. */
	for (unsigned i = 0; i < p->nhash; i++)
		p->in[p->to_hash[i]].off = (int16_t)(p->n - p->to_hash[i] - 1);
	emit(p, BPF_LDX | BPF_W | BPF_MEM, BPF_REG_7, BPF_REG_6,
	     offsetof(struct sk_reuseport_md, hash), 0);
	emit(p, BPF_ALU | BPF_MOD | BPF_K, BPF_REG_7, 0, 0, (int32_t)n);
	emit(p, BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_7, 0, 0, (int32_t)base);
	/* Nothing selected (none of ours is left): the kernel's hash. */
	select_r7(p, map);
	p->in[to_pass].off = (int16_t)(p->n - to_pass - 1);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, SK_PASS);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

/**
 * sys_bpf() - the bpf() system call
 * @cmd:	the command
 * @attr:	its attributes
 *
 * Return: as bpf(2).
 */
static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/**
 * map_new() - an empty REUSEPORT_SOCKARRAY of REUSEPORT_SLOTS slots
 *
 * Return: its descriptor, or -1 with errno set.
 */
static int map_new(void)
{
	union bpf_attr a = { 0 };

	a.map_type = BPF_MAP_TYPE_REUSEPORT_SOCKARRAY;
	a.key_size = sizeof(uint32_t);
	a.value_size = sizeof(uint64_t);
	a.max_entries = REUSEPORT_SLOTS;
	return sys_bpf(BPF_MAP_CREATE, &a);
}

/**
 * slot_taken() - does a slot hold a socket
 * @map:	the map
 * @slot:	the slot
 *
 * Return: true if it does (or cannot be read: not taken then either).
 */
static bool slot_taken(int map, uint32_t slot)
{
	union bpf_attr a = { 0 };
	uint64_t cookie;

	a.map_fd = (uint32_t)map;
	a.key = (uint64_t)(uintptr_t)&slot;
	a.value = (uint64_t)(uintptr_t)&cookie;
	return !sys_bpf(BPF_MAP_LOOKUP_ELEM, &a) || errno != ENOENT;
}

/**
 * free_run() - the first of @n free slots in a row
 * @map:	the map, which earlier processes may hold slots of
 * @n:		how many
 *
 * Return: the first, or -1 with errno ENOSPC if there is no such run.
 */
static int free_run(int map, unsigned n)
{
	unsigned run = 0;

	for (unsigned s = 0; s < REUSEPORT_SLOTS; s++) {
		run = slot_taken(map, s) ? 0 : run + 1;
		if (run == n)
			return (int)(s + 1 - n);
	}
	errno = ENOSPC;
	return -1;
}

/**
 * map_fill() - put @fds in slots @base to @base + @n - 1
 * @map:	the map
 * @fds:	the sockets, bound with SO_REUSEPORT to one address
 * @n:		how many
 * @base:	the first slot
 *
 * Return: 0, or -1 with errno set.
 */
static int map_fill(int map, const int *fds, unsigned n, unsigned base)
{
	for (uint32_t i = 0; i < n; i++) {
		union bpf_attr a = { 0 };
		uint32_t slot = base + i;
		uint64_t fd = (uint64_t)fds[i];

		a.map_fd = (uint32_t)map;
		a.key = (uint64_t)(uintptr_t)&slot;
		a.value = (uint64_t)(uintptr_t)&fd;
		a.flags = BPF_NOEXIST;
		if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a))
			return -1;
	}
	return 0;
}

/**
 * prog_load() - load the steering program
 * @map:	the sockets' map
 * @base:	the first of this process's slots
 * @n:		how many
 * @log:	room for the verifier's complaint, or NULL for none
 * @loglen:	its size
 *
 * Return: the program's descriptor, or -1 with errno set.
 */
static int prog_load(int map, unsigned base, unsigned n, char *log,
		     size_t loglen)
{
	static const char license[] = "GPL";
	struct prog p = { .n = 0 };
	union bpf_attr a = { 0 };

	write_prog(&p, map, base, n);
	a.prog_type = BPF_PROG_TYPE_SK_REUSEPORT;
	a.insn_cnt = p.n;
	a.insns = (uint64_t)(uintptr_t)p.in;
	a.license = (uint64_t)(uintptr_t)license;
	if (log) {
		log[0] = '\0';
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = (uint32_t)loglen;
		a.log_level = 1;
	}
	return sys_bpf(BPF_PROG_LOAD, &a);
}

/**
 * last_line() - the last non-empty line of the verifier's log
 * @log:	the log, changed
 *
 * Return: it, or "" for an empty log.
 */
static const char *last_line(char *log)
{
	size_t n = strlen(log);
	char *nl;

	while (n && log[n - 1] == '\n')
		log[--n] = '\0';
	nl = strrchr(log, '\n');
	return nl ? nl + 1 : log;
}

/**
 * prog_refused() - why the kernel refused the program: its errno, and the
 *		    verifier's last line when it has one
 * @map:	the sockets' map
 * @base:	the first of this process's slots
 * @n:		how many
 * @err:	buffer for the reason
 * @errlen:	its size
 *
 * The program is loaded again with the verifier's log (not the first
 * time: a log too small for what the verifier says of an accepted
 * program fails the load with ENOSPC).
 */
static void prog_refused(int map, unsigned base, unsigned n, char *err,
			 size_t errlen)
{
	char log[4096];
	int e = errno, fd = prog_load(map, base, n, log, sizeof(log));
	const char *line = fd < 0 ? last_line(log) : "";

	if (fd >= 0)
		close(fd);
	snprintf(err, errlen, "the program: %s%s%s", strerror(e),
		 line[0] ? ": " : "", line);
}

/**
 * reuseport_steer_quic() - steer a QUIC listener's datagrams by connection
 *			    ID across its sockets
 * @map:	the map of the group's sockets: one a handover brought (the
 *		process before this one holds slots of it), or -1 for a new
 *		one; set to the map, which the caller keeps (a handover
 *		carries it on), or left -1 on failure
 * @fds:	this process's sockets, one per worker, bound with
 *		SO_REUSEPORT to the same address
 * @n:		how many
 * @base:	set to the slot of @fds[0]: @fds[i] is @base + i
 * @err:	buffer for why it cannot be done
 * @errlen:	its size
 *
 * The program lives as long as the group or until the next generation's
 * replaces it: its descriptor is closed here. On failure the slots this
 * call filled free themselves when @fds close.
 *
 * Return: 0, or -1 with @err set (no program of this process attached).
 */
int reuseport_steer_quic(int *map, const int *fds, unsigned n, unsigned *base,
			 char *err, size_t errlen)
{
	bool made = *map < 0;
	int b, prog;

	if (!n || n > REUSEPORT_SLOTS) {
		snprintf(err, errlen, "%u sockets, not 1 to %u", n,
			 REUSEPORT_SLOTS);
		return -1;
	}
	if (made && (*map = map_new()) < 0) {
		snprintf(err, errlen, "a map of sockets: %s", strerror(errno));
		return -1;
	}
	if ((b = free_run(*map, n)) < 0 ||
	    map_fill(*map, fds, n, (unsigned)b)) {
		snprintf(err, errlen, "%u slots of the map: %s", n,
			 strerror(errno));
		goto fail;
	}
	prog = prog_load(*map, (unsigned)b, n, NULL, 0);
	if (prog < 0) {
		prog_refused(*map, (unsigned)b, n, err, errlen);
		goto fail;
	}
	if (setsockopt(fds[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, &prog,
		       sizeof(prog))) {
		snprintf(err, errlen, "SO_ATTACH_REUSEPORT_EBPF: %s",
			 strerror(errno));
		close(prog);
		goto fail;
	}
	close(prog);
	*base = (unsigned)b;
	return 0;
fail:
	if (made) {
		close(*map);
		*map = -1;
	}
	return -1;
}
