#!/usr/bin/env bash
# demo.sh - smbsplice's main job, end to end, on loopback.
#
# Installs what is missing, builds, starts a throwaway Samba smbd on a
# loopback port, puts smbsplice in front of it, fetches a file through the
# proxy with smbclient, checks it byte for byte, and prints the throughput
# and how many bytes were spliced and copied. Cleans up after itself.
#
#   contrib/demo.sh [SIZE_MIB]      (default 256)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-256}

contrib/install-deps.sh
if [ ! -x proxy/smbsplice ]; then
	[ -x configure ] || ./autogen.sh >/dev/null
	[ -f Makefile ] || ./configure -q
	make -s -j2 >/dev/null
fi

# tmpfs when there is one, so the figure is the network path, not the disk.
tmp=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && tmp=/dev/shm
work=$(mktemp -d "$tmp/smbsplice-demo.XXXXXX")
proxy_pid=
cleanup() {
	[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null
	contrib/throwaway-smbd.sh stop "$work/smbd" || true
	rm -rf "$work"
}
trap cleanup EXIT

# Two free ports, both held until both are chosen: one bind(0) after
# another's close can return the same port.
read -r smb_port proxy_port < <(python3 -c '
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])')

# As the README advises for a Samba behind smbsplice: no multichannel, so
# that clients are not invited to go around it.
SMB_CONF_EXTRA=$'[global]\n\tserver multi channel support = no' \
	contrib/throwaway-smbd.sh start "$work/smbd" "$smb_port"
echo "demo: smbd on 127.0.0.1:$smb_port; writing a ${size_mib} MiB random file"
head -c $((size_mib << 20)) /dev/urandom >"$work/smbd/share/demo.bin"

proxy/smbsplice --listen "127.0.0.1:$proxy_port" --backend "127.0.0.1:$smb_port" 2>"$work/proxy.log" &
proxy_pid=$!
for _ in $(seq 50); do grep -q listening "$work/proxy.log" && break; sleep 0.1; done
echo "demo: smbsplice on 127.0.0.1:$proxy_port -> 127.0.0.1:$smb_port"

t0=$(date +%s.%N)
smbclient "//127.0.0.1/share" -p "$proxy_port" -U "root%${SMB_PASS:-smbsplice}" \
	-c "get demo.bin $work/fetched.bin" >"$work/smbclient.out" 2>&1 ||
	{ cat "$work/smbclient.out" >&2; exit 1; }
t1=$(date +%s.%N)
cmp "$work/smbd/share/demo.bin" "$work/fetched.bin"
kill "$proxy_pid"
wait "$proxy_pid" || true
proxy_pid=

awk -v b=$((size_mib << 20)) -v t0="$t0" -v t1="$t1" \
	'BEGIN { printf "demo: fetched %d MiB through smbsplice in %.2f s: %.0f MB/s, identical to the original\n", b / 1048576, t1 - t0, b / (t1 - t0) / 1e6 }'
grep ' conn ' "$work/proxy.log" | sed 's/^smbsplice: info: /demo: /'
sed -n 's/.* s2c=\([0-9]*\) (splice \([0-9]*\) copy \([0-9]*\)).*/demo: server to client: \1 bytes, \2 spliced, \3 copied/p' "$work/proxy.log"
