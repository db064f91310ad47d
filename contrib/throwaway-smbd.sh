#!/usr/bin/env bash
# throwaway-smbd.sh - run a private Samba smbd, on a loopback port unless
# told otherwise (SMB_INTERFACES below).
#
#   contrib/throwaway-smbd.sh start DIR PORT   start it; prints nothing
#   contrib/throwaway-smbd.sh stop DIR         stop it and remove DIR
#
# Everything lives under DIR: smb.conf, the private, lock, state, cache and
# pid directories, the logs and the share (DIR/share, named "share"). The
# user is root with password $SMB_PASS (default "smbsplice"), in a passdb
# of its own: the system's Samba configuration is not touched. Needs the
# Debian package samba.
#
# Optional, in the environment:
#   SMB_INTERFACES  the addresses smbd binds to, space-separated (default
#                   "127.0.0.1 ::1"); the first is the one probed to tell
#                   that smbd is up, so give addresses, not interface names
#   SMB_CONF_EXTRA  text appended to smb.conf, after [share]: start it with
#                   a section header ("[global]" for global parameters, or
#                   a share of its own)
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start DIR PORT | stop DIR" >&2; exit 2; }
pass=${SMB_PASS:-smbsplice}
interfaces=${SMB_INTERFACES:-127.0.0.1 ::1}

start() {
	local port=$1
	command -v smbd >/dev/null || { echo "smbd not found: install the Debian package samba" >&2; exit 1; }
	mkdir -p "$dir"/{private,lock,state,cache,pid,ncalrpc,share}
	dir=$(cd "$dir" && pwd)
	cat >"$dir/smb.conf" <<CONF
[global]
	netbios name = SMBSPLICE
	workgroup = WORKGROUP
	server role = standalone server
	smb ports = $port
	interfaces = $interfaces
	bind interfaces only = yes
	disable netbios = yes
	private dir = $dir/private
	lock directory = $dir/lock
	state directory = $dir/state
	cache directory = $dir/cache
	pid directory = $dir/pid
	ncalrpc dir = $dir/ncalrpc
	passdb backend = tdbsam:$dir/private/passdb.tdb
	log file = $dir/log.smbd
	log level = 0
	load printers = no
	printing = bsd
	printcap name = /dev/null
	disable spoolss = yes
	server min protocol = SMB2_02
[share]
	path = $dir/share
	read only = no
	guest ok = no
CONF
	[ -z "${SMB_CONF_EXTRA:-}" ] || printf '%s\n' "$SMB_CONF_EXTRA" >>"$dir/smb.conf"
	printf '%s\n%s\n' "$pass" "$pass" | smbpasswd -c "$dir/smb.conf" -s -a root >/dev/null
	# Its own session: on exit smbd signals its whole process group, which
	# must not be the caller's.
	setsid smbd --foreground --no-process-group -s "$dir/smb.conf" </dev/null >>"$dir/log.stdout" 2>&1 &
	echo $! >"$dir/smbd.pid"
	local probe=${interfaces%% *}
	probe=${probe%%/*}
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/$probe/$port") 2>/dev/null; then
			return 0
		fi
		kill -0 "$(cat "$dir/smbd.pid")" 2>/dev/null || break
		sleep 0.1
	done
	echo "smbd did not start on $probe port $port; its log:" >&2
	cat "$dir/log.stdout" "$dir/log.smbd" >&2 2>/dev/null || true
	exit 1
}

stop() {
	if [ -f "$dir/smbd.pid" ]; then
		local pid
		pid=$(cat "$dir/smbd.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}

case $cmd in
start) start "${3:?port}" ;;
stop) stop ;;
*) echo "usage: $0 start DIR PORT | stop DIR" >&2; exit 2 ;;
esac
