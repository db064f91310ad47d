// SPDX-License-Identifier: GPL-2.0-or-later
/* test_howire.c - the handover's wire: an image of several MiB with 1,000
 * descriptors arrives byte-exact with its descriptors in order (same
 * inodes); an image over HO_IMAGE_MAX, over HO_NFDS_MAX descriptors, an
 * HO_DONE whose counts disagree, an unknown type, a batch whose count
 * disagrees, a message after HO_DONE, a hang-up mid-way, a timeout, an
 * HO_FAIL from the sender and an SCM_RIGHTS over RLIMIT_NOFILE are each
 * refused with a clear line and leave no descriptor open; a message with
 * descriptors where none belong is refused and they are closed; the reply
 * reads TAKEN's count or FAIL's text.
 */
#include "config.h"

#include <fcntl.h>
#include <time.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "common/fdpass.h"
#include "handover/howire.h"
#include "testnet.h"

static int sv[2];
static char err[256];

static void pair(void)
{
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static void unpair(void)
{
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	sv[0] = sv[1] = -1;
}

/* One raw message, with @nfds descriptors, the way a bad sender makes it. */
static void raw_send(int sock, uint32_t type, const void *body, uint32_t len,
		     const int *fds, size_t nfds)
{
	struct ho_msg_head h = { type, len };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };

	assert_int_equal(fdpass_sendv(sock, iov, 2, fds, (unsigned)nfds, 0), 0);
}

static void send_done(int sock, uint64_t len, uint32_t nfds)
{
	unsigned char b[12];

	memcpy(b, &len, 8);
	memcpy(b + 8, &nfds, 4);
	raw_send(sock, HO_DONE, b, sizeof(b), NULL, 0);
}

/* Receive on sv[1], expect a refusal whose line holds @want, and no
 * descriptor left over once the pair is closed. */
static void expect_refused(const char *want, int timeout_ms, int before)
{
	void *img = (void *)1;
	int *fds = (int *)1;
	size_t len = 1, nfds = 1;

	assert_int_equal(howire_recv_image(sv[1], &img, &len, &fds, &nfds,
					   timeout_ms, err, sizeof(err)),
			 -1);
	if (!strstr(err, want))
		fail_msg("refused with \"%s\", not \"%s\"", err, want);
	assert_null(img);
	assert_null(fds);
	assert_int_equal(len, 0);
	assert_int_equal(nfds, 0);
	unpair();
	assert_int_equal(testnet_count_fds(), before);
}

struct sender {
	const void *img;
	size_t len;
	const int *fds;
	size_t nfds;
	int rc, err;
	size_t repeat; /* > 0: send this many full chunks, no DONE */
};

static void *send_thread(void *arg)
{
	struct sender *s = arg;

	if (s->repeat) {
		/* Until the receiver refuses and hangs up. */
		s->rc = 0;
		for (size_t i = 0; i < s->repeat && !s->rc; i++)
			s->rc = howire_send(sv[0], HO_IMAGE_CHUNK, s->img,
					    HO_CHUNK, 10000);
		s->err = errno;
		return NULL;
	}
	s->rc = howire_send_image(sv[0], s->img, s->len, s->fds, s->nfds,
				  20000);
	s->err = errno;
	return NULL;
}

static void test_image_exact(void **state)
{
	const size_t len = 5 * 1024 * 1024 + 12345, nfds = 1000;
	struct sender s = { .len = len, .nfds = nfds };
	int *sent = calloc(nfds, sizeof(int)), *got, before;
	struct rlimit rl = { 20000, 20000 };
	unsigned char *img = malloc(len);
	size_t glen, gn;
	void *gimg;
	pthread_t t;

	(void)state;
	setrlimit(RLIMIT_NOFILE, &rl);
	assert_non_null(sent);
	assert_non_null(img);
	for (size_t i = 0; i < len; i++)
		img[i] = (unsigned char)(i * 7 + (i >> 13));
	before = testnet_count_fds();
	for (size_t i = 0; i < nfds; i++) {
		sent[i] = memfd_create("ho", MFD_CLOEXEC);
		assert_true(sent[i] >= 0);
	}
	pair();
	s.img = img;
	s.fds = sent;
	assert_int_equal(pthread_create(&t, NULL, send_thread, &s), 0);
	if (howire_recv_image(sv[1], &gimg, &glen, &got, &gn, 20000, err,
			      sizeof(err)))
		fail_msg("%s", err);
	pthread_join(t, NULL);
	assert_int_equal(s.rc, 0);
	assert_int_equal(glen, len);
	assert_memory_equal(gimg, img, len);
	assert_int_equal(gn, nfds);
	for (size_t i = 0; i < nfds; i++) {
		struct stat a, b;

		assert_int_equal(fstat(sent[i], &a), 0);
		assert_int_equal(fstat(got[i], &b), 0);
		assert_int_equal(a.st_ino, b.st_ino);
		assert_true(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
		close(sent[i]);
		close(got[i]);
	}
	unpair();
	assert_int_equal(testnet_count_fds(), before);
	free(gimg);
	free(got);
	free(sent);
	free(img);
}

static void test_empty_image(void **state)
{
	size_t glen = 1, gn = 1;
	void *gimg;
	int *got;

	(void)state;
	pair();
	assert_int_equal(howire_send_image(sv[0], NULL, 0, NULL, 0, 1000), 0);
	assert_int_equal(howire_recv_image(sv[1], &gimg, &glen, &got, &gn, 1000,
					   err, sizeof(err)),
			 0);
	assert_int_equal(glen, 0);
	assert_int_equal(gn, 0);
	free(gimg);
	free(got);
	unpair();
}

static void test_image_too_big(void **state)
{
	struct sender s = { .repeat = HO_IMAGE_MAX / HO_CHUNK + 2 };
	int before = testnet_count_fds();
	void *chunk = calloc(1, HO_CHUNK);
	pthread_t t;

	(void)state;
	pair();
	s.img = chunk;
	assert_int_equal(pthread_create(&t, NULL, send_thread, &s), 0);
	/* Closing the pair in expect_refused() ends the sender: join first. */
	{
		void *img;
		int *fds;
		size_t len, nfds;

		assert_int_equal(howire_recv_image(sv[1], &img, &len, &fds,
						   &nfds, 60000, err,
						   sizeof(err)),
				 -1);
		shutdown(sv[1], SHUT_RDWR);
		pthread_join(t, NULL);
		assert_non_null(strstr(err, "image is over 512 MiB"));
		assert_null(img);
	}
	unpair();
	assert_int_equal(testnet_count_fds(), before);
	free(chunk);
}

static int same[HO_FDS_BATCH];

/* HO_FDS batches of one descriptor repeated, past HO_NFDS_MAX, until the
 * receiver hangs up. */
static void *fds_thread(void *arg)
{
	uint32_t k = HO_FDS_BATCH;
	struct ho_msg_head h = { HO_FDS, sizeof(k) };
	struct iovec iov[2] = { { &h, sizeof(h) }, { &k, sizeof(k) } };

	(void)arg;
	for (unsigned sent = 0; sent < HO_NFDS_MAX + 2 * HO_FDS_BATCH;
	     sent += k)
		if (fdpass_sendv(sv[0], iov, 2, same, HO_FDS_BATCH, 0))
			break;
	return NULL;
}

static void test_too_many_fds(void **state)
{
	struct rlimit old, rl = { HO_NFDS_MAX + 4000, HO_NFDS_MAX + 4000 };
	int before = testnet_count_fds(), p[2];
	pthread_t t;
	void *img;
	int *fds;
	size_t len, nfds;

	(void)state;
	getrlimit(RLIMIT_NOFILE, &old);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		skip(); /* needs CAP_SYS_RESOURCE for over 20,000 */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	for (int i = 0; i < HO_FDS_BATCH; i++)
		same[i] = p[i & 1];
	pair();
	assert_int_equal(pthread_create(&t, NULL, fds_thread, NULL), 0);
	assert_int_equal(howire_recv_image(sv[1], &img, &len, &fds, &nfds,
					   60000, err, sizeof(err)),
			 -1);
	shutdown(sv[1], SHUT_RDWR);
	pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);
	unpair();
	setrlimit(RLIMIT_NOFILE, &old);
	if (!strstr(err, "over 65536 descriptors"))
		fail_msg("%s", err);
	assert_int_equal(testnet_count_fds(), before);
}

static void test_done_disagrees(void **state)
{
	int before = testnet_count_fds(), p[2];
	uint32_t one = 1;

	(void)state;
	pair();
	assert_int_equal(
		howire_send(sv[0], HO_IMAGE_CHUNK, "0123456789", 10, 1000), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	raw_send(sv[0], HO_FDS, &one, sizeof(one), p, 1);
	close(p[0]);
	close(p[1]);
	send_done(sv[0], 11, 1);
	expect_refused("ended saying 11 bytes and 1 descriptors, but 10 and 1",
		       1000, before);

	pair();
	assert_int_equal(
		howire_send(sv[0], HO_IMAGE_CHUNK, "0123456789", 10, 1000), 0);
	send_done(sv[0], 10, 2);
	expect_refused("ended saying 10 bytes and 2 descriptors, but 10 and 0",
		       1000, before);
}

static void test_batch_disagrees(void **state)
{
	int before = testnet_count_fds(), p[2];
	uint32_t three = 3;

	(void)state;
	pair();
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	raw_send(sv[0], HO_FDS, &three, sizeof(three), p, 2);
	close(p[0]);
	close(p[1]);
	expect_refused("says 3 and carries 2", 1000, before);

	pair(); /* descriptors on a chunk */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	raw_send(sv[0], HO_IMAGE_CHUNK, "abc", 3, p, 2);
	close(p[0]);
	close(p[1]);
	expect_refused("descriptors along a handover message of type 2", 1000,
		       before);
}

static void test_unknown_type(void **state)
{
	int before = testnet_count_fds();

	(void)state;
	pair();
	assert_int_equal(howire_send(sv[0], HO_IMAGE_CHUNK, "abc", 3, 1000), 0);
	assert_int_equal(howire_send(sv[0], 99, "x", 1, 1000), 0);
	expect_refused("type 99 amid the image", 1000, before);

	pair();
	assert_int_equal(howire_send(sv[0], HO_HELLO, "12345678", 8, 1000), 0);
	expect_refused("type 1 amid the image", 1000, before);
}

static void test_after_done(void **state)
{
	int before = testnet_count_fds(), p[2];

	(void)state;
	pair();
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(howire_send_image(sv[0], "abc", 3, p, 2, 1000), 0);
	close(p[0]);
	close(p[1]);
	assert_int_equal(howire_send(sv[0], HO_IMAGE_CHUNK, "d", 1, 1000), 0);
	expect_refused("came after its end", 1000, before);
}

static void test_hangup_midway(void **state)
{
	int before = testnet_count_fds(), p[2];
	uint32_t two = 2;

	(void)state;
	pair();
	assert_int_equal(howire_send(sv[0], HO_IMAGE_CHUNK, "abc", 3, 1000), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	raw_send(sv[0], HO_FDS, &two, sizeof(two), p, 2);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	sv[0] = -1;
	expect_refused("went away mid-handover (3 bytes and 2 descriptors",
		       1000, before);
}

static void test_timeout(void **state)
{
	int before = testnet_count_fds();
	struct timespec a, b;
	long ms;

	(void)state;
	pair();
	assert_int_equal(howire_send(sv[0], HO_IMAGE_CHUNK, "abc", 3, 1000), 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	expect_refused("did not complete in time (3 bytes", 300, before);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	assert_true(ms >= 290);
	assert_true(ms < 3000);
}

static void test_sender_fails(void **state)
{
	int before = testnet_count_fds();

	(void)state;
	pair();
	assert_int_equal(howire_send(sv[0], HO_IMAGE_CHUNK, "abc", 3, 1000), 0);
	assert_int_equal(
		howire_send_fail(sv[0], "worker 2 did not pause\n", 1000), 0);
	expect_refused("the other side gave up: worker 2 did not pause?", 1000,
		       before);
}

static void test_out_of_descriptors(void **state)
{
	struct rlimit old, rl;
	int before = testnet_count_fds(), p[2], batch[50];
	uint32_t n = 50;

	(void)state;
	getrlimit(RLIMIT_NOFILE, &old);
	pair();
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	for (int i = 0; i < 50; i++)
		batch[i] = p[i & 1];
	raw_send(sv[0], HO_FDS, &n, sizeof(n), batch, 50);
	close(p[0]);
	close(p[1]);
	/* Room for about 10 of the 50 (the descriptors of below count). */
	rl = (struct rlimit){ (rlim_t)(before + 20), old.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	{
		void *img;
		int *fds;
		size_t len, nfds;

		assert_int_equal(howire_recv_image(sv[1], &img, &len, &fds,
						   &nfds, 1000, err,
						   sizeof(err)),
				 -1);
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_non_null(
		strstr(err, "out of descriptors receiving the handover"));
	assert_non_null(strstr(err, "raise LimitNOFILE / ulimit -n"));
	unpair();
	assert_int_equal(testnet_count_fds(), before);
}

static void test_msg(void **state)
{
	int before = testnet_count_fds(), p[2];
	uint32_t type, len, v = 42;
	char body[64];

	(void)state;
	pair();
	assert_int_equal(howire_send(sv[0], HO_HELLO, "12345678", 8, 1000), 0);
	assert_int_equal(
		howire_recv(sv[1], &type, body, sizeof(body), &len, 1000), 0);
	assert_int_equal(type, HO_HELLO);
	assert_int_equal(len, 8);
	assert_memory_equal(body, "12345678", 8);
	/* Descriptors where none belong: refused, and closed. */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	raw_send(sv[0], HO_TAKEN, &v, sizeof(v), p, 2);
	close(p[0]);
	close(p[1]);
	assert_int_equal(
		howire_recv(sv[1], &type, body, sizeof(body), &len, 1000), -1);
	assert_int_equal(errno, EPROTO);
	/* A body over the room offered. */
	assert_int_equal(howire_send(sv[0], HO_FAIL, body, 64, 1000), 0);
	assert_int_equal(howire_recv(sv[1], &type, body, 8, &len, 1000), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(howire_send(sv[0], HO_HELLO, body, HO_CHUNK + 1, 1000),
			 -1);
	assert_int_equal(errno, EMSGSIZE);
	/* Nothing: a timeout; then the other side gone. */
	assert_int_equal(
		howire_recv(sv[1], &type, body, sizeof(body), &len, 50), -1);
	assert_int_equal(errno, ETIMEDOUT);
	close(sv[0]);
	sv[0] = -1;
	assert_int_equal(
		howire_recv(sv[1], &type, body, sizeof(body), &len, 1000), -1);
	assert_int_equal(errno, ECONNRESET);
	assert_int_equal(howire_send(sv[1], HO_HELLO, "x", 1, 1000), -1);
	assert_int_equal(errno, ECONNRESET);
	unpair();
	assert_int_equal(testnet_count_fds(), before);
}

static void test_reply(void **state)
{
	uint32_t v = 1234, taken = 0;

	(void)state;
	pair();
	assert_int_equal(howire_send(sv[0], HO_TAKEN, &v, sizeof(v), 1000), 0);
	assert_int_equal(
		howire_recv_reply(sv[1], &taken, 1000, err, sizeof(err)), 0);
	assert_int_equal(taken, 1234);
	assert_int_equal(howire_send_fail(sv[0], "bad image: version 9", 1000),
			 0);
	assert_int_equal(
		howire_recv_reply(sv[1], &taken, 1000, err, sizeof(err)), -1);
	assert_string_equal(err,
			    "the new process refused: bad image: version 9");
	assert_int_equal(howire_recv_reply(sv[1], &taken, 50, err, sizeof(err)),
			 -1);
	assert_string_equal(err, "the new process did not take over in 50 ms");
	close(sv[0]);
	sv[0] = -1;
	assert_int_equal(
		howire_recv_reply(sv[1], &taken, 1000, err, sizeof(err)), -1);
	assert_string_equal(err,
			    "the new process went away before it took over");
	unpair();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_exact),
		cmocka_unit_test(test_empty_image),
		cmocka_unit_test(test_image_too_big),
		cmocka_unit_test(test_too_many_fds),
		cmocka_unit_test(test_done_disagrees),
		cmocka_unit_test(test_batch_disagrees),
		cmocka_unit_test(test_unknown_type),
		cmocka_unit_test(test_after_done),
		cmocka_unit_test(test_hangup_midway),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_sender_fails),
		cmocka_unit_test(test_out_of_descriptors),
		cmocka_unit_test(test_msg),
		cmocka_unit_test(test_reply),
	};

	sv[0] = sv[1] = -1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
