#!/bin/sh
# run_fuzz.sh - build the libFuzzer harnesses with clang and run them from
# their seed corpora: the framer's for FUZZ_SECONDS (default 30), the
# handover image decoder's for FUZZ_IMAGE_SECONDS (default 5), and the
# QUIC listener's datagram path (fuzz_quic.c: routing, admission, ngtcp2's
# and GnuTLS's handshake, Retry and Stateless Reset, through a real quic:
# listener) for FUZZ_QUIC_SECONDS (default 20), seeded from a real
# smbqc connection captured at test time (capture_quic_seeds.py; without
# Go's smbqc, from the harness's own few seeds). A build without ngtcp2
# skips the QUIC harness with one line and runs the others. A crash, a
# sanitizer report or a broken invariant fails the test; the input that
# did it is left in the build tree as crash-* (image-crash-*,
# quic-crash-* for the others') for a reproducer.
set -eu
srcdir=${srcdir:-.}
seconds=${FUZZ_SECONDS:-30}
image_seconds=${FUZZ_IMAGE_SECONDS:-5}
quic_seconds=${FUZZ_QUIC_SECONDS:-20}
out=tests/fuzz
cc=${FUZZ_CC:-clang}
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
flags="$flags -I. -I$srcdir -I$srcdir/proxy"
# What the image harness restores a connection with, and what that needs.
image_src="proxy/handover/image.c smb/framer.c smb/login.c smb/opening.c smb/threshold.c smb/who.c
	proxy/observe/timing.c smb/srt.c smb/hist.c proxy/io/pump.c proxy/io/bufpool.c
	proxy/io/pipepool.c proxy/io/sock.c proxy/io/policy.c proxy/priv/privs.c
	proxy/observe/trace.c proxy/observe/tracefile.c common/log.c common/ring.c"
# The QUIC listener as the daemon runs it, and what it needs of the rest.
quic_src="proxy/quic/quic.c proxy/quic/qcheck.c proxy/quic/ngq.c proxy/quic/ngq_sec.c proxy/quic/stateless.c
	proxy/quic/ngq_client.c proxy/quic/bridge.c proxy/quic/stream.c proxy/quic/udp.c proxy/net/admit.c proxy/net/listener.c proxy/net/quicsock.c
	proxy/conf/parse.c common/netns.c proxy/core/limits.c proxy/io/sock.c proxy/io/reuseport.c
	common/log.c common/ring.c common/fdpass.c"

if ! command -v "$cc" >/dev/null 2>&1; then
	echo "SKIP: $cc not found: install the Debian packages clang and libclang-rt-14-dev"
	exit 77
fi
mkdir -p "$out/corpus" "$out/seeds" "$out/image-corpus" "$out/image-seeds" \
	"$out/quic-corpus" "$out/quic-seeds"
# build NAME SOURCES...: a harness, or a skip when libFuzzer is missing
build() {
	name=$1
	shift
	if ! "$cc" $flags "$@" -o "$out/$name" 2>"$out/build.err"; then
		cat "$out/build.err"
		if grep -q "fuzzer" "$out/build.err"; then
			echo "SKIP: $cc cannot link libFuzzer: install the Debian package libclang-rt-14-dev"
			exit 77
		fi
		exit 1
	fi
}
build fuzz_framer "$srcdir/tests/fuzz/fuzz_framer.c" "$srcdir/smb/framer.c" \
	"$srcdir/smb/login.c" "$srcdir/smb/opening.c" "$srcdir/smb/threshold.c" \
	"$srcdir/smb/who.c"
build fuzz_image "$srcdir/tests/fuzz/fuzz_image.c" \
	$(for f in $image_src; do echo "$srcdir/$f"; done)
# The image's seeds are this build's structs: this build's writer makes them.
"$cc" -g -O1 -I. -I"$srcdir" -I"$srcdir/proxy" "$srcdir/tests/fuzz/image_seeds.c" \
	"$srcdir/proxy/handover/image.c" -o "$out/image_seeds"
python3 "$srcdir/tests/fuzz/make_seeds.py" "$out/seeds"
"$out/image_seeds" "$out/image-seeds"
# libFuzzer exits 77 by default when it finds a crash or a leak, which the
# test driver would count as a skip: -error_exitcode=1 makes it a failure.
"$out/fuzz_image" -max_total_time="$image_seconds" -timeout=10 -rss_limit_mb=1024 \
	-error_exitcode=1 -artifact_prefix="$out/image-" -print_final_stats=1 \
	"$out/image-corpus" "$out/image-seeds"
"$out/fuzz_framer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
	-error_exitcode=1 -artifact_prefix="$out/" -print_final_stats=1 \
	"$out/corpus" "$out/seeds"
# The QUIC harness needs the daemon built with QUIC (config.h says) and
# ngtcp2's and GnuTLS's development files.
if ! grep -q "define HAVE_QUIC 1" config.h ||
	! quic_flags=$(pkg-config --cflags --libs libngtcp2 libngtcp2_crypto_gnutls gnutls 2>/dev/null); then
	echo "SKIP fuzz_quic: smbsplice is built without QUIC (ngtcp2): the QUIC harness does not run"
	exit 0
fi
build fuzz_quic "$srcdir/tests/fuzz/fuzz_quic.c" \
	$(for f in $quic_src; do echo "$srcdir/$f"; done) $quic_flags -lev -lm -lpthread
# Seeds from a real connection: 77 (no Go, no openssl) leaves the
# harness's own.
rc=0
python3 "$srcdir/tests/fuzz/capture_quic_seeds.py" proxy/smbsplice \
	"${SMBQC:-tests/quic/bin/smbqc}" "$out/quic-seeds" || rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
	exit 1
fi
printf '\002\000\000\000\000' >"$out/quic-seeds/empty"
exec "$out/fuzz_quic" -max_total_time="$quic_seconds" -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -artifact_prefix="$out/quic-" -print_final_stats=1 \
	"$out/quic-corpus" "$out/quic-seeds"
