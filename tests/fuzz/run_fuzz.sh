#!/bin/sh
# run_fuzz.sh - build the framer's libFuzzer harness with clang and run it
# for FUZZ_SECONDS (default 30) from the seed corpus. A crash, a sanitizer
# report or a broken invariant fails the test; the input that did it is
# left in the build tree as crash-* for a reproducer.
set -eu
srcdir=${srcdir:-.}
seconds=${FUZZ_SECONDS:-30}
out=tests/fuzz
cc=${FUZZ_CC:-clang}

if ! command -v "$cc" >/dev/null 2>&1; then
	echo "SKIP: $cc not found: install the Debian packages clang and libclang-rt-14-dev"
	exit 77
fi
mkdir -p "$out/corpus" "$out/seeds"
if ! "$cc" -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I. -I"$srcdir/smb" \
	"$srcdir/tests/fuzz/fuzz_framer.c" "$srcdir/smb/framer.c" \
	"$srcdir/smb/opening.c" "$srcdir/smb/threshold.c" -o "$out/fuzz_framer" 2>"$out/build.err"; then
	cat "$out/build.err"
	if grep -q "fuzzer" "$out/build.err"; then
		echo "SKIP: $cc cannot link libFuzzer: install the Debian package libclang-rt-14-dev"
		exit 77
	fi
	exit 1
fi
python3 "$srcdir/tests/fuzz/make_seeds.py" "$out/seeds"
# libFuzzer exits 77 by default when it finds a crash or a leak, which the
# test driver would count as a skip: -error_exitcode=1 makes it a failure.
exec "$out/fuzz_framer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
	-error_exitcode=1 -artifact_prefix="$out/" -print_final_stats=1 \
	"$out/corpus" "$out/seeds"
