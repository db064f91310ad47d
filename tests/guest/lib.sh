# lib.sh - helpers for test guests' scripts (busybox sh), installed as
# /etc/guest-lib.sh and sourced before every /guest.sh.
#
# A script talks to the host through its console, one marker line each:
# `ready` prints GUEST-READY (the host waits for it before it connects to a
# server in the guest); `say KEY VALUE...` prints GUEST-SAY KEY VALUE...
# for the host to read back (Guest.said). Credentials: GUEST_USER and
# GUEST_PASS, which the host puts in /guest.env.

uptime_s() { cut -d' ' -f1 /proc/uptime; }
ready() { echo "GUEST-READY $*"; }
say() { echo "GUEST-SAY $*"; }

# crypto_up: load the ciphers SMB3 signing and encryption use; ksmbd and
# cifs allocate them lazily, mid-session, where a missing module would
# fail the session rather than say why
crypto_up() {
	modprobe -a nls_utf8 cmac ccm gcm ecb ctr ghash_generic sha512_generic \
		crc32_generic aesni_intel 2>/dev/null || :
}

# ksmbd_serve NAME=PATH...: serve each PATH (made if missing) as share NAME
# with ksmbd, as GUEST_USER; [global] gets the lines of KSMBD_GLOBAL and
# each share those of KSMBD_SHARE (newline-separated "key = value").
# Returns once ksmbd listens on port 445.
ksmbd_serve() {
	local u=$GUEST_USER s i=0
	crypto_up
	modprobe ksmbd || return 1
	# the opinfo_put(NULL) guard (tests/guest/opinfo_guard.c): after
	# ksmbd, whose symbol it probes
	modprobe opinfo_guard || return 1
	grep -q "^$u:" /etc/passwd || echo "$u:x:1000:1000::/tmp:/bin/sh" >>/etc/passwd
	{
		printf '[global]\n\tnetbios name = GUEST\n%s\n' "${KSMBD_GLOBAL:-}"
		for s in "$@"; do
			mkdir -p "${s#*=}"
			printf '[%s]\n\tpath = %s\n\tread only = no\n%s\n' \
				"${s%%=*}" "${s#*=}" "${KSMBD_SHARE:-}"
		done
	} >/etc/ksmbd/ksmbd.conf
	ksmbd.adduser -a "$u" -p "$GUEST_PASS" >/dev/null || return 1
	# the share-config size fix (tests/guest/ksmbd_shim.c)
	LD_PRELOAD=/usr/lib/guest/ksmbd_shim.so ksmbd.mountd || return 1
	while ! netstat -ltn 2>/dev/null | grep -q ':445 '; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "ksmbd did not listen on 445"; return 1; }
		sleep 0.1
	done
}

# cifs_mount UNC DIR [OPTIONS]: mount.cifs as GUEST_USER, OPTIONS appended
cifs_mount() {
	crypto_up
	modprobe cifs || return 1
	mkdir -p "$2"
	mount.cifs "$1" "$2" -o "username=$GUEST_USER,password=$GUEST_PASS${3:+,$3}"
}

# wait_file PATH [SECONDS]: wait (default 120 s) until PATH exists, which
# is how a host client that puts a file into a guest's share says it is done
wait_file() {
	local i=0 n=$((${2:-120} * 10))
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -lt $n ] || { echo "no $1 after ${2:-120} s"; return 1; }
		sleep 0.1
	done
}

# sums DIR: say "sum NAME SHA256" for every file under DIR
sums() {
	(cd "$1" && find . -type f | sort | while read -r f; do
		say sum "${f#./}" "$(sha256sum "$f" | cut -d' ' -f1)"
	done)
}

# make_tree DIR: the same tree every time, for copies to compare: 20 files
# of 0 B to 300000 B (randfill, seeds 1 to 20) in DIR and three directories
make_tree() {
	local d s i=0
	mkdir -p "$1/a/b" "$1/c"
	for d in "$1" "$1/a" "$1/a/b" "$1/c"; do
		for s in 0 1 4095 70000 300000; do
			i=$((i + 1))
			randfill $s $i >"$d/f$s"
		done
	done
}

# drop_caches: write back and drop the page cache, so that the next read
# of a file goes to the server rather than to memory
drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}
