// SPDX-License-Identifier: GPL-2.0-or-later
/* test_alloc.c - giving free memory back is safe from any thread
 *
 * Every worker trims its pools on its own timer, and the timers of workers
 * started together fire together, so alloc_release_free_memory() runs in
 * two threads at once, as the first allocator call of the process that
 * those threads make. In a sanitizer build that once reached glibc's
 * unused allocator and set it up twice, racily: a thread then aborted at
 * exit in glibc's own check. Each round here is a fresh process (a fork,
 * whose allocators are as the parent left them) in which two threads,
 * released together by a barrier, give memory back and exit; the race
 * hit more than half the rounds.
 */
#include "config.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/alloc.h"

#define ROUNDS	40
#define THREADS 2

static pthread_barrier_t start;

static void *release_at_once(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	alloc_release_free_memory();
	return NULL;
}

/* A round in a child: 0 if both threads gave memory back and ended. */
static int one_round(void)
{
	pthread_t t[THREADS];

	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, release_at_once, NULL))
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static void test_release_from_threads_at_once(void **state)
{
	int failed = 0, status;
	pid_t pid;

	(void)state;
	for (int r = 0; r < ROUNDS; r++) {
		pid = fork();
		assert_true(pid >= 0);
		if (!pid)
			_exit(one_round());
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_release_from_threads_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
