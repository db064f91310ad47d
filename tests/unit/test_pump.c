// SPDX-License-Identifier: GPL-2.0-or-later
/* test_pump.c - the copy and splice pumps against scripted sockets
 *
 * The test binary is linked with --wrap for recv, send, splice, setsockopt
 * and shutdown, so every call the pump makes on the two fake sockets (fds
 * SRC and DST) follows a script: how many bytes the source has, when it
 * would block, fails or ends, and how much the destination takes per call.
 * The source produces a counting byte pattern and the destination checks
 * it, so any lost, repeated or reordered byte fails the test; bytes that go
 * through the (simulated) pipe are accounted by position.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <cmocka.h>

#include "common/monotime.h"
#include "io/pump.h"

#define SRC 1000
#define DST 1001

enum act_kind { A_END_OF_SCRIPT, A_BYTES, A_ERR, A_EOF };

struct act {
	enum act_kind kind;
	size_t n; /* A_BYTES: bytes available / accepted */
	int err;  /* A_ERR */
};

#define MAXACT 64

/* The source's bytes: a real SMB stream when a test sets one, else a
 * counting pattern. */
static const uint8_t *stream;

static struct {
	struct act src[MAXACT], dst[MAXACT];
	int nsrc, ndst, isrc, idst;
	uint64_t produced, consumed; /* stream positions */
	size_t fake_pipe;	     /* bytes in the simulated pipe */
	int uncork_calls, shutdowns, sends_with_more, sends_without_more;
	int recvs, splices_in, splices_out;
	unsigned last_splice_flags;
	uint64_t send_began; /* mono_ns() as the last accepting send began */
	int heard;	     /* write watcher: calls, and its last arguments */
	uint64_t heard_written, heard_began;
} w;

static void script_reset(void)
{
	memset(&w, 0, sizeof(w));
	stream = NULL;
}

static void src_add(enum act_kind k, size_t n, int err)
{
	w.src[w.nsrc++] = (struct act){ k, n, err };
}

static void dst_add(enum act_kind k, size_t n, int err)
{
	w.dst[w.ndst++] = (struct act){ k, n, err };
}

/* Anything past the end of a script would block. */
static struct act next(struct act *s, int n, int *i)
{
	if (*i >= n)
		return (struct act){ A_ERR, 0, EAGAIN };
	return s[(*i)++];
}

static unsigned char pattern(uint64_t pos)
{
	if (stream)
		return stream[pos];
	return (unsigned char)(pos * 7 + (pos >> 8));
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out,
		      size_t len, unsigned int flags);
int __wrap_setsockopt(int fd, int level, int name, const void *val,
		      socklen_t len);
int __wrap_shutdown(int fd, int how);

/* A source read: returns how many bytes to deliver, or -1/0. */
static ssize_t src_take(size_t len)
{
	struct act a = next(w.src, w.nsrc, &w.isrc);
	size_t n;

	if (a.kind == A_ERR) {
		errno = a.err;
		return -1;
	}
	if (a.kind == A_EOF) { /* the end of a stream stays the end */
		w.isrc--;
		return 0;
	}
	n = a.n < len ? a.n : len;
	if (n < a.n) { /* leave the rest for the next read */
		w.isrc--;
		w.src[w.isrc].n -= n;
	}
	return (ssize_t)n;
}

/* A destination write: returns how many bytes it accepts, or -1. An
 * A_BYTES entry is room for that many bytes in all, over as many calls as
 * it takes. */
static ssize_t dst_take(size_t len)
{
	struct act a = next(w.dst, w.ndst, &w.idst);
	size_t n;

	if (a.kind == A_ERR) {
		errno = a.err;
		return -1;
	}
	n = a.n < len ? a.n : len;
	if (n < a.n) {
		w.idst--;
		w.dst[w.idst].n -= n;
	}
	return (ssize_t)n;
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	ssize_t n;

	assert_int_equal(fd, SRC);
	w.recvs++;
	n = src_take(len);
	for (ssize_t i = 0; i < n; i++)
		((unsigned char *)buf)[i] = pattern(w.produced++);
	return n;
}

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	ssize_t n;

	uint64_t began = mono_ns();

	assert_int_equal(fd, DST);
	assert_true(flags & MSG_NOSIGNAL);
	n = dst_take(len);
	if (n > 0)
		w.send_began = began;
	for (ssize_t i = 0; i < n; i++)
		assert_int_equal(((const unsigned char *)buf)[i],
				 pattern(w.consumed++));
	if (n > 0) {
		if (flags & MSG_MORE)
			w.sends_with_more++;
		else
			w.sends_without_more++;
	}
	return n;
}

ssize_t __wrap_splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out,
		      size_t len, unsigned int flags)
{
	ssize_t n;

	assert_true(flags & SPLICE_F_NONBLOCK);
	if (fd_in == SRC) { /* socket -> pipe: the pipe must be empty */
		assert_int_equal(w.fake_pipe, 0);
		w.splices_in++;
		n = src_take(len);
		if (n > 0) {
			w.fake_pipe = (size_t)n;
			w.produced += (uint64_t)n;
		}
		return n;
	}
	assert_int_equal(fd_out, DST);
	assert_true(len <= w.fake_pipe);
	w.splices_out++;
	w.last_splice_flags = flags;
	n = dst_take(len);
	if (n > 0) {
		w.fake_pipe -= (size_t)n;
		w.consumed += (uint64_t)n;
	}
	return n;
}

int __wrap_setsockopt(int fd, int level, int name, const void *val,
		      socklen_t len)
{
	assert_int_equal(fd, DST);
	assert_int_equal(level, IPPROTO_TCP);
	assert_int_equal(name, TCP_CORK);
	assert_int_equal(*(const int *)val, 0);
	w.uncork_calls++;
	return 0;
}

int __wrap_shutdown(int fd, int how)
{
	assert_int_equal(fd, DST);
	assert_int_equal(how, SHUT_WR);
	w.shutdowns++;
	return 0;
}

/* The copy buffer size every test runs with. */
#define BUF 1024

struct fixture {
	struct sock src, dst;
	struct pipe_budget budget;
	struct pipe_pool pool;
	struct buf_pool bufs;
	struct pump_stats tot;
	struct pump h;
};

static struct fixture fx;

static void setup_half(unsigned max_pipes, bool splice_ok)
{
	script_reset();
	memset(&fx, 0, sizeof(fx));
	fx.src.fd = SRC;
	fx.dst.fd = DST;
	fx.budget.pipes.limit = max_pipes;
	pipepool_init(&fx.pool, &fx.budget, 8192);
	bufpool_init(&fx.bufs, BUF, 4 * BUF);
	pump_init(&fx.h, &fx.src, &fx.dst, &fx.pool, &fx.bufs, splice_ok, NULL,
		  &fx.tot);
}

/* Every pipe and buffer goes back; and between runs, a direction that
 * waits to read holds neither. */
static void teardown_half(void)
{
	pump_release(&fx.h);
	assert_int_equal(fx.pool.lent, 0);
	assert_int_equal(fx.bufs.lent, 0);
	assert_int_equal(fx.tot.copied, fx.h.copied);
	assert_int_equal(fx.tot.spliced, fx.h.spliced);
	pipepool_destroy(&fx.pool);
	bufpool_destroy(&fx.bufs);
	assert_int_equal(pipepool_budget_open(&fx.budget), 0);
}

/* A small message is copied and pushed: no MORE, no setsockopt, and no
 * second read to learn what the short first one said: the socket is empty. */
static void test_small_message_copied_and_pushed(void **state)
{
	setup_half(4, true);
	src_add(A_BYTES, 100, 0);
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, 100);
	assert_int_equal(w.recvs, 1);
	assert_int_equal(w.sends_without_more, 1);
	assert_int_equal(w.sends_with_more, 0);
	assert_int_equal(w.uncork_calls, 0);
	assert_false(fx.dst.corked);
	assert_int_equal(fx.h.copied, 100);
	assert_int_equal(fx.h.spliced, 0);
	teardown_half();
}

/* A full read is sent with MORE; when the source runs dry the socket is
 * uncorked exactly once, and not again while nothing was corked. */
static void test_uncork_once_when_source_runs_dry(void **state)
{
	setup_half(0, true); /* no pipes: everything copies */
	src_add(A_BYTES, 1024, 0);
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.sends_with_more, 1);
	assert_int_equal(w.uncork_calls, 1);
	assert_false(fx.dst.corked);

	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ); /* dry again */
	assert_int_equal(w.uncork_calls, 1);
	teardown_half();
}

/* The pasta stall: with small pipes every splice read fills the pipe and is
 * written with SPLICE_F_MORE. The tail must be pushed when the source is
 * dry, not left for the kernel's 200 ms timer. */
static void test_small_pipe_tail_is_pushed(void **state)
{
	setup_half(4, true);
	fx.h.policy.splicing = true;
	src_add(A_BYTES, 3 * 8192, 0);
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, 3 * 8192);
	assert_int_equal(w.splices_in, 4); /* three full, one EAGAIN */
	assert_true(w.last_splice_flags & SPLICE_F_MORE);
	assert_int_equal(w.uncork_calls, 1);
	assert_false(fx.dst.corked);
	assert_int_equal(fx.h.spliced, 3 * 8192);
	assert_int_equal(fx.pool.lent, 0); /* pipe back once empty */
	teardown_half();
}

/* EINTR on any call is retried, never counted as data or error. */
static void test_eintr_is_retried(void **state)
{
	setup_half(0, true);
	src_add(A_ERR, 0, EINTR);
	src_add(A_BYTES, 300, 0);
	dst_add(A_ERR, 0, EINTR);
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, 300);
	teardown_half();
}

/* A full destination stops reads (backpressure) until it drains. */
static void test_backpressure_on_short_send(void **state)
{
	setup_half(0, true);
	src_add(A_BYTES, 500, 0);
	src_add(A_BYTES, 500, 0);
	dst_add(A_BYTES, 10, 0);
	dst_add(A_ERR, 0, EAGAIN);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_WRITE);
	assert_int_equal(w.recvs, 1);
	assert_int_equal(w.consumed, 10);
	assert_true(pump_pending(&fx.h));

	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, 500);
	assert_false(pump_pending(&fx.h));
	/* The read was short, so the pump left the next one to epoll. */
	assert_int_equal(w.recvs, 1);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, 1000);
	teardown_half();
}

static void on_wrote(void *ctx, uint64_t written, uint64_t began)
{
	(void)ctx;
	w.heard++;
	w.heard_written = written;
	w.heard_began = began;
}

/* The write watcher hears of every flush that moved bytes, with the bytes
 * written so far and a time taken before the write: never after it, or a
 * peer that the write wakes and that answers before this thread runs
 * again would be timed as instant. A flush that ends blocked after moving
 * some bytes is heard too, since a message that ended in them is out and
 * may be answered before the rest goes; one that moved nothing is not. */
static void test_write_watch_hears_each_write_that_moved_bytes(void **state)
{
	uint64_t before;

	setup_half(0, true);
	pump_watch_writes(&fx.h, on_wrote, NULL);
	src_add(A_BYTES, 500, 0);
	dst_add(A_ERR, 0, EAGAIN);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_WRITE);
	assert_int_equal(w.heard, 0);

	before = mono_ns();
	dst_add(A_BYTES, 10, 0);
	dst_add(A_ERR, 0, EAGAIN);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_WRITE);
	assert_int_equal(w.heard, 1);
	assert_int_equal(w.heard_written, 10);
	assert_true(before <= w.heard_began);
	assert_true(w.heard_began <= w.send_began);

	before = mono_ns();
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.heard, 2);
	assert_int_equal(w.heard_written, 500);
	assert_true(before <= w.heard_began);
	assert_true(w.heard_began <= w.send_began);
	teardown_half();
}

/* Short splices out of the pipe loop until exactly the bytes read are
 * written; a blocked destination keeps the pipe, which is returned once
 * empty. */
static void test_short_splices(void **state)
{
	setup_half(4, true);
	fx.h.policy.splicing = true;
	src_add(A_BYTES, 6000, 0);
	dst_add(A_BYTES, 1000, 0);
	dst_add(A_BYTES, 3000, 0);
	dst_add(A_ERR, 0, EAGAIN);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_WRITE);
	assert_int_equal(w.consumed, 4000);
	assert_int_equal(fx.pool.lent, 1);
	assert_int_equal(fx.h.in_pipe, 2000);

	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, 6000);
	assert_int_equal(fx.pool.lent, 0);
	assert_int_equal(w.splices_out, 4); /* 1000, 3000, EAGAIN, 2000 */
	teardown_half();
}

/* End of file is forwarded only after every byte before it. */
static void test_fin_after_pending_bytes(void **state)
{
	setup_half(0, true);
	src_add(A_BYTES, 100, 0);
	src_add(A_EOF, 0, 0);
	dst_add(A_BYTES, 40, 0);
	dst_add(A_ERR, 0, EAGAIN);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_WRITE);
	assert_int_equal(w.shutdowns, 0);

	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ); /* short read */
	assert_int_equal(w.consumed, 100);
	assert_int_equal(w.shutdowns, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_FIN);
	assert_int_equal(w.shutdowns, 1);
	assert_int_equal(pump_run(&fx.h), PUMP_FIN); /* idempotent */
	assert_int_equal(w.shutdowns, 1);
	teardown_half();
}

/* End of file seen by a splice read, with pipes in use. splice() also
 * returns 0 at TCP's urgent mark once the FIN is in, so the pump confirms
 * the end with one recv(). */
static void test_fin_through_splice(void **state)
{
	setup_half(4, true);
	fx.h.policy.splicing = true;
	src_add(A_BYTES, 8192, 0);
	src_add(A_EOF, 0, 0);
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_FIN);
	assert_int_equal(w.consumed, 8192);
	assert_int_equal(w.recvs, 1);
	assert_int_equal(w.shutdowns, 1);
	assert_false(fx.dst.corked);
	teardown_half();
}

static void test_source_reset(void **state)
{
	setup_half(4, true);
	src_add(A_ERR, 0, ECONNRESET);
	assert_int_equal(pump_run(&fx.h), PUMP_SRC_ERR);
	assert_int_equal(fx.h.err, ECONNRESET);
	teardown_half();
}

static void test_source_reset_while_splicing(void **state)
{
	setup_half(4, true);
	fx.h.policy.splicing = true;
	src_add(A_ERR, 0, ECONNRESET);
	assert_int_equal(pump_run(&fx.h), PUMP_SRC_ERR);
	assert_int_equal(fx.h.err, ECONNRESET);
	assert_int_equal(fx.pool.lent, 0);
	teardown_half();
}

static void test_destination_epipe(void **state)
{
	setup_half(0, true);
	src_add(A_BYTES, 10, 0);
	dst_add(A_ERR, 0, EPIPE);
	assert_int_equal(pump_run(&fx.h), PUMP_DST_ERR);
	assert_int_equal(fx.h.err, EPIPE);
	teardown_half();
}

/* A pipe that still holds bytes when the connection dies is closed, never
 * pooled, so its bytes cannot leak into another connection. */
static void test_release_drops_full_pipe(void **state)
{
	setup_half(4, true);
	fx.h.policy.splicing = true;
	src_add(A_BYTES, 4096, 0);
	dst_add(A_ERR, 0, ECONNRESET);
	assert_int_equal(pump_run(&fx.h), PUMP_DST_ERR);
	assert_int_equal(pipepool_budget_open(&fx.budget), 1);
	pump_release(&fx.h);
	assert_int_equal(pipepool_budget_open(&fx.budget), 0);
	assert_null(fx.pool.free);
	teardown_half();
}

/* No pipe to be had: the copy pump serves, no error. */
static void test_pool_exhausted_copies(void **state)
{
	setup_half(0, true);
	fx.h.policy.splicing = true;
	src_add(A_BYTES, 700, 0);
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(fx.h.copied, 700);
	assert_int_equal(fx.h.spliced, 0);
	assert_true(fx.pool.denied > 0);
	teardown_half();
}

/* Switching pumps mid-stream keeps every byte in order: copy (full buffer,
 * so splice next), splice (small, so copy next), copy. */
static void test_order_across_pump_switches(void **state)
{
	setup_half(4, true);
	src_add(A_BYTES, 1024 + 100, 0); /* copy 1024, then splice 100 */
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(fx.h.copied, 1024);
	assert_int_equal(fx.h.spliced, 100);
	assert_false(fx.h.policy.splicing);

	src_add(A_BYTES, 50, 0); /* the copy pump checks the pattern */
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, 1174);
	assert_int_equal(fx.h.copied, 1074);
	teardown_half();
}

/* --no-splice: never a splice, whatever the flow looks like. */
static void test_no_splice_never_splices(void **state)
{
	setup_half(4, false);
	src_add(A_BYTES, 10 * 1024, 0);
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.splices_in, 0);
	assert_int_equal(fx.h.copied, 10 * 1024);
	teardown_half();
}

/* A source that never runs dry yields after PUMP_BUDGET reads, with
 * nothing pending. */
static void test_budget_yields(void **state)
{
	setup_half(0, true);
	src_add(A_BYTES, 1 << 30, 0);
	dst_add(A_BYTES, (size_t)1 << 40, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.recvs, PUMP_BUDGET);
	assert_false(pump_pending(&fx.h));
	/* The last read might have emptied the socket, and then no event
	 * would come to push what MORE held back: the pump uncorks. */
	assert_false(fx.dst.corked);
	assert_int_equal(w.uncork_calls, 1);
	teardown_half();
}

/* An SMB2 READ response frame: 4-byte prefix, 64-byte header, 17-byte
 * body ending at DataOffset 80, then @len bytes of data. */
static size_t build_read_response(uint8_t *p, uint32_t len)
{
	uint32_t frame = 80 + len;

	memset(p, 0, 84);
	p[1] = (uint8_t)(frame >> 16);
	p[2] = (uint8_t)(frame >> 8);
	p[3] = (uint8_t)frame;
	memcpy(p + 4, "\xfeSMB", 4);
	p[4 + 4] = 64;	       /* StructureSize */
	p[4 + 12] = SMB2_READ; /* Command */
	p[4 + 16] = SMB2_FLAG_RESPONSE;
	p[4 + 64] = 17;		     /* body StructureSize */
	p[4 + 66] = 80;		     /* DataOffset */
	memcpy(p + 4 + 68, &len, 4); /* DataLength, little-endian host */
	for (uint32_t i = 0; i < len; i++)
		p[84 + i] = (uint8_t)(i * 13);
	return 84 + len;
}

static uint8_t smbbuf[256 << 10];
static struct smb_framer fr;
static struct smb_dir_stats frst;
static struct smb_thresholds th64k = { { 65536, 65536, 65536 } };

/* smb mode on the stream in smbbuf: @total bytes available at once, a
 * destination that takes everything. */
static void setup_smb(const struct smb_thresholds *th, size_t total)
{
	stream = smbbuf;
	memset(&frst, 0, sizeof(frst));
	smb_framer_init(&fr, th, &frst);
	fx.h.fr = &fr;
	src_add(A_BYTES, total, 0);
	dst_add(A_BYTES, 1 << 20, 0);
}

/* Run until @total bytes are delivered, as the event loop would. */
static void run_until(size_t total)
{
	for (int i = 0; i < 10 && w.consumed < total; i++)
		assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, total);
}

/* A READ payload whose part after the first 1024-byte read is a whole
 * number of 8 KiB pipes, so no tail under FLOW_SPLICE_MIN is left to copy. */
#define PIPES_PAYLOAD (BUF - 84 + 12 * 8192)

/* smb mode: the header is copied, the rest of a large READ payload is
 * spliced in exactly the payload's bytes, every write but the message's
 * last carries MORE, and the last needs no uncork. */
static void test_smb_read_payload_spliced(void **state)
{
	size_t n;

	setup_half(4, true);
	n = build_read_response(smbbuf, PIPES_PAYLOAD);
	setup_smb(&th64k, n);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.consumed, n);
	assert_int_equal(fx.h.copied, BUF);
	assert_int_equal(fx.h.spliced, n - BUF);
	assert_int_equal(frst.payload_spliced[SMB_CLASS_READ], n - BUF);
	assert_int_equal(fr.lead, 84);
	assert_int_equal(w.sends_with_more, 1);
	assert_false(w.last_splice_flags & SPLICE_F_MORE);
	assert_false(fx.dst.corked);
	assert_int_equal(w.uncork_calls, 0);
	teardown_half();
}

/* smb mode: after one spliced READ payload, the next READ response's
 * header is read alone (84 bytes) and its whole payload is spliced. */
static void test_smb_next_header_read_alone(void **state)
{
	size_t n;

	setup_half(4, true);
	n = build_read_response(smbbuf, PIPES_PAYLOAD);
	build_read_response(smbbuf + n, 12 * 8192);
	setup_smb(&th64k, n + 84 + 12 * 8192);
	run_until(n + 84 + 12 * 8192);
	assert_int_equal(fx.h.copied, BUF + 84);
	assert_int_equal(frst.payload_spliced[SMB_CLASS_READ],
			 12 * 8192 + 12 * 8192);
	teardown_half();
}

/* smb mode: a full buffer that ends exactly on a message boundary is
 * pushed (no MORE), where tcp mode would have guessed more was due. */
static void test_smb_message_end_is_pushed(void **state)
{
	size_t n;

	setup_half(4, true);
	n = build_read_response(smbbuf, BUF - 84);
	assert_int_equal(n, BUF);
	setup_smb(&th64k, n);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_int_equal(w.sends_with_more, 0);
	assert_int_equal(w.sends_without_more, 1);
	assert_int_equal(w.uncork_calls, 0);
	teardown_half();
}

/* smb mode: a payload tail shorter than FLOW_SPLICE_MIN (here what is
 * left after whole 8 KiB pipes) is copied: two splices would cost more. */
static void test_smb_small_tail_copied(void **state)
{
	size_t n;

	setup_half(4, true);
	n = build_read_response(smbbuf, PIPES_PAYLOAD + 100);
	setup_smb(&th64k, n);
	run_until(n);
	assert_int_equal(fx.h.spliced, 12 * 8192);
	assert_int_equal(fx.h.copied, BUF + 100);
	teardown_half();
}

/* smb mode with --read-threshold off: everything is copied. */
static void test_smb_below_threshold_copied(void **state)
{
	struct smb_thresholds off = { { SMB_THRESHOLD_OFF, 0, 0 } };
	size_t n;

	setup_half(4, true);
	n = build_read_response(smbbuf, 100000);
	setup_smb(&off, n);
	run_until(n); /* the budget makes it yield */
	assert_int_equal(fx.h.spliced, 0);
	assert_int_equal(w.splices_in, 0);
	teardown_half();
}

/* An SMB2 ECHO frame as smb2.bench.echo sends them: 4-byte prefix, 64-byte
 * header, 4-byte body; 72 bytes in all. */
static size_t build_echo(uint8_t *p)
{
	memset(p, 0, 72);
	p[3] = 68;
	memcpy(p + 4, "\xfeSMB", 4);
	p[4 + 4] = 64; /* StructureSize */
	p[4 + 12] = SMB2_ECHO;
	p[4 + 64] = 4; /* body StructureSize */
	return 72;
}

/* smb mode, one small message at a time (the echo workload): each costs
 * one recv() and one send() without MORE, with neither a second recv() to
 * see EAGAIN nor a setsockopt(). That is what strace found per echo
 * message (docs/design.md, "Small messages"), a floor worth keeping. It
 * holds right after a spliced READ too, when the framer bounds the next
 * read to a READ response's 84-byte header. */
static void test_smb_small_messages_one_recv_one_send(void **state)
{
	size_t n, e1, e2;
	int recvs, sends;

	setup_half(4, true);
	n = build_read_response(smbbuf, PIPES_PAYLOAD);
	e1 = build_echo(smbbuf + n);
	e2 = build_echo(smbbuf + n + e1);
	setup_smb(&th64k, n);
	run_until(n);
	assert_int_equal(fr.lead, 84);
	for (size_t e = e1, i = 0; i < 2; e = e2, i++) {
		recvs = w.recvs;
		sends = w.sends_without_more;
		src_add(A_BYTES, e, 0);
		assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
		assert_int_equal(w.recvs - recvs, 1);
		assert_int_equal(w.sends_without_more - sends, 1);
		assert_int_equal(fr.lead, 0); /* a small frame drops the hint */
	}
	assert_int_equal(w.consumed, n + e1 + e2);
	assert_int_equal(w.sends_with_more, 1); /* the READ's header only */
	assert_int_equal(w.uncork_calls, 0);
	assert_false(fx.dst.corked);
	teardown_half();
}

/* smb mode, bytes that are not SMB: the framer gives up and the flow
 * policy forwards the rest, byte-exact, splicing bulk as in tcp mode. */
static void test_smb_garbage_goes_opaque(void **state)
{
	setup_half(4, true);
	smb_framer_init(&fr, &th64k, &frst);
	fx.h.fr = &fr;
	src_add(A_BYTES, 50000, 0); /* the counting pattern starts 0x00 0x07 */
	dst_add(A_BYTES, 1 << 20, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_READ);
	assert_true(smb_framer_opaque(&fr));
	assert_int_equal(w.consumed, 50000);
	assert_true(fx.h.spliced > 0);
	teardown_half();
}

/* smb mode, a READ response cut short in the middle of its spliced payload,
 * the cut coming while the pipe still holds bytes the destination has not
 * taken: every byte up to the cut is delivered, then end of file is
 * forwarded as direct TCP would (no reset), and the direction notes that
 * it ended mid-message. */
static void test_smb_midframe_eof_forwarded_after_pipe(void **state)
{
	size_t n, cut = BUF + 3 * 8192 + 1000;

	setup_half(4, true);
	n = build_read_response(smbbuf, PIPES_PAYLOAD);
	assert_true(cut < n);
	stream = smbbuf;
	memset(&frst, 0, sizeof(frst));
	smb_framer_init(&fr, &th64k, &frst);
	fx.h.fr = &fr;
	src_add(A_BYTES, cut, 0);
	src_add(A_EOF, 0, 0);
	dst_add(A_BYTES, BUF + 500, 0);
	dst_add(A_ERR, 0, EAGAIN);
	assert_int_equal(pump_run(&fx.h), PUMP_WAIT_WRITE);
	assert_true(pump_holds_pipe(&fx.h));
	assert_int_equal(w.shutdowns, 0);

	dst_add(A_BYTES, 1 << 20, 0);
	for (int i = 0; i < 10 && !w.shutdowns; i++)
		assert_int_not_equal(pump_run(&fx.h), PUMP_WAIT_WRITE);
	assert_int_equal(pump_run(&fx.h), PUMP_FIN);
	assert_int_equal(w.consumed, cut);
	assert_int_equal(w.shutdowns, 1);
	assert_true(fx.h.spliced > 0);
	assert_true(fx.h.midframe);
	assert_int_equal(fx.tot.midframe_ends, 1);
	assert_false(fx.dst.corked);
	teardown_half();
}

/* smb mode, a cut right after a pipe that was written with MORE: the FIN
 * itself pushes what MORE held back (the kernel sends a FIN segment
 * whatever the cork), so no setsockopt() is spent on it. A stream that
 * ends at a message boundary is not counted. */
static void test_smb_midframe_eof_after_more(void **state)
{
	size_t n, cut = BUF + 2 * 8192;

	setup_half(4, true);
	n = build_read_response(smbbuf, PIPES_PAYLOAD);
	setup_smb(&th64k, cut);
	src_add(A_EOF, 0, 0);
	assert_int_equal(pump_run(&fx.h), PUMP_FIN);
	assert_int_equal(w.consumed, cut);
	assert_true(w.last_splice_flags & SPLICE_F_MORE);
	assert_int_equal(w.uncork_calls, 0);
	assert_int_equal(w.shutdowns, 1);
	assert_false(fx.dst.corked);
	assert_true(fx.h.midframe);
	teardown_half();

	setup_half(4, true);
	setup_smb(&th64k, n);
	src_add(A_EOF, 0, 0);
	for (int i = 0; i < 10 && !w.shutdowns; i++)
		pump_run(&fx.h);
	assert_int_equal(pump_run(&fx.h), PUMP_FIN);
	assert_int_equal(w.consumed, n);
	assert_false(fx.h.midframe);
	assert_int_equal(fx.tot.midframe_ends, 0);
	teardown_half();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_message_copied_and_pushed),
		cmocka_unit_test(test_uncork_once_when_source_runs_dry),
		cmocka_unit_test(test_small_pipe_tail_is_pushed),
		cmocka_unit_test(test_eintr_is_retried),
		cmocka_unit_test(test_backpressure_on_short_send),
		cmocka_unit_test(
			test_write_watch_hears_each_write_that_moved_bytes),
		cmocka_unit_test(test_short_splices),
		cmocka_unit_test(test_fin_after_pending_bytes),
		cmocka_unit_test(test_fin_through_splice),
		cmocka_unit_test(test_source_reset),
		cmocka_unit_test(test_source_reset_while_splicing),
		cmocka_unit_test(test_destination_epipe),
		cmocka_unit_test(test_release_drops_full_pipe),
		cmocka_unit_test(test_pool_exhausted_copies),
		cmocka_unit_test(test_order_across_pump_switches),
		cmocka_unit_test(test_no_splice_never_splices),
		cmocka_unit_test(test_budget_yields),
		cmocka_unit_test(test_smb_read_payload_spliced),
		cmocka_unit_test(test_smb_next_header_read_alone),
		cmocka_unit_test(test_smb_message_end_is_pushed),
		cmocka_unit_test(test_smb_small_tail_copied),
		cmocka_unit_test(test_smb_below_threshold_copied),
		cmocka_unit_test(test_smb_small_messages_one_recv_one_send),
		cmocka_unit_test(test_smb_garbage_goes_opaque),
		cmocka_unit_test(test_smb_midframe_eof_forwarded_after_pipe),
		cmocka_unit_test(test_smb_midframe_eof_after_more),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
