// SPDX-License-Identifier: GPL-2.0
/*
 * randfill.c - write SIZE pseudo-random bytes from SEED to standard output.
 *
 * Theory of operation: the guests need test files of up to 64 MiB, and
 * under software emulation /dev/urandom gives 8 MB/s and busybox's
 * sha256sum 25 MB/s: seconds per file of every test. A xorshift64* stream
 * is fast even emulated, and, being a pure function of SEED, lets the host
 * know a guest's file without the guest hashing it: build.sh leaves this
 * same static binary beside the image, for the host to run on the same
 * SIZE and SEED and hash natively. Not for anything cryptographic: it only
 * has to make every byte position distinct enough that a misplaced,
 * repeated or dropped block changes the hash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BLOCK (1 << 16)

/**
 * next() - one step of xorshift64*.
 * @s: the state, never 0.
 *
 * Return: the next 64 pseudo-random bits.
 */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/**
 * main() - randfill SIZE SEED.
 * @argc: argument count.
 * @argv: SIZE in bytes and SEED (any integer).
 *
 * Return: 0 once SIZE bytes are written, 1 on a write error, 2 on bad usage.
 */
int main(int argc, char **argv)
{
	static uint64_t buf[BLOCK / 8];
	unsigned long long left;
	uint64_t s;

	if (argc != 3) {
		fprintf(stderr, "usage: randfill SIZE SEED\n");
		return 2;
	}
	left = strtoull(argv[1], NULL, 0);
	s = strtoull(argv[2], NULL, 0) * 0x9e3779b97f4a7c15ULL | 1;
	while (left) {
		size_t n = left < BLOCK ? left : BLOCK, off = 0;

		for (size_t i = 0; i < BLOCK / 8; i++)
			buf[i] = next(&s);
		while (off < n) {
			ssize_t w = write(1, (char *)buf + off, n - off);

			if (w <= 0) {
				perror("randfill");
				return 1;
			}
			off += w;
		}
		left -= n;
	}
	return 0;
}
