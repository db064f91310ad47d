#!/usr/bin/env bash
# install-deps.sh - install, with apt-get, the Debian packages smbsplice
# needs to build, test and run its demo; with --bench, also the peers the
# benchmark harness compares against. Installs only what is missing, runs
# apt-get update once and only if something is, and does nothing at all on
# a machine that has everything. Needs root (or sudo) when it installs.
# The guest tests (docs/testing-guests.md) need only QEMU and busybox-static
# installed, and the libraries ksmbd-tools and mount.cifs link, which the
# guest copies from the host: ksmbd-tools itself is never installed (it
# would remove samba), but downloaded and unpacked by tests/guest/build.sh.
# Go, quic-go and go-smb2 build the tests' independent SMB-over-QUIC client
# and the quic-go relay pair (tests/quic/README.md), offline.
# The systemd guest (tests/integ/test_guest_systemd.py) boots this host's
# own Debian read-only over 9p, with its systemd as PID 1: systemd, dpkg-dev
# and debhelper below (and QEMU's 9p, in qemu-system-x86) are all it needs.
set -euo pipefail

pkgs=(autoconf automake make gcc pkg-config python3
	libev-dev libjemalloc-dev libcmocka-dev libpcap-dev libinih-dev libsystemd-dev scdoc
	libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev gnutls-bin
	golang-go golang-github-lucas-clemente-quic-go-dev golang-github-hirochachacha-go-smb2-dev
	systemd iproute2 nftables
	samba smbclient samba-testsuite python3-impacket tshark strace
	prometheus python3-prometheus-client python3-cryptography
	clang libclang-rt-14-dev iperf3 iputils-ping
	qemu-system-x86 busybox-static libglib2.0-0 libnl-3-200 libnl-genl-3-200 libcap-ng0
	dpkg-dev debhelper lintian openssl)
bench=(haproxy socat passt gnuplot-nox libsmbclient-dev stunnel4)
[ "${1:-}" = "--bench" ] && pkgs+=("${bench[@]}")

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
# Through env, so that sudo (which resets the environment) passes it on:
# wireshark-common, which tshark pulls in, asks a debconf question.
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
