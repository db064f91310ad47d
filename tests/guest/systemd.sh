# systemd.sh - sourced by init (busybox sh) when the kernel command line
# says guest.systemd=1: instead of running /guest.sh itself, init makes a
# root file system of the host's own Debian and hands PID 1 to its systemd.
#
# The root is an overlay: below, the host's root, exported read-only by
# QEMU over 9p (tests/integ/guest.py, Guest(systemd=True)); above, a tmpfs,
# so the guest can install packages and write /etc, and nothing it does
# reaches the host. The host's own services are not the guest's: its
# /etc/systemd/system (the units it enabled: Samba, timers...) and its
# fstab are taken away, and systemd boots guest.target, which wants only
# basic.target and guest-test.service. That service runs /guest.sh, with
# /etc/guest-lib.sh, through /etc/guest/run (dash), which prints
# GUEST-EXIT and powers off as init does. Boot steps that rebuild caches
# over the whole of /usr (ldconfig, hwdb, the journal catalog), slow under
# emulation and of no use in a throwaway guest, are masked.

# unit FILE: standard input as /newroot/etc/systemd/system/FILE
unit() {
	cat >"/newroot/etc/systemd/system/$1"
}

# systemd_units TIMEOUT: the guest's own units
systemd_units() {
	unit guest.target <<-EOF
		[Unit]
		Description=smbsplice test guest
		Requires=basic.target guest-test.service
		Wants=guest-timeout.service
		After=basic.target
		AllowIsolate=yes
	EOF
	unit guest-test.service <<-EOF
		[Unit]
		Description=the test's script (/guest.sh)
		After=basic.target
		[Service]
		ExecStart=/bin/sh /etc/guest/run
		StandardInput=null
		StandardOutput=tty
		StandardError=inherit
		TTYPath=/dev/console
		TTYReset=no
		TTYVHangup=no
	EOF
	# the guest's own deadline, as init's: it powers off even when the
	# host that should kill it has hung (IgnoreOnIsolate: also when
	# systemd falls back to emergency.target)
	unit guest-timeout.service <<-EOF
		[Unit]
		Description=the guest's deadline
		DefaultDependencies=no
		IgnoreOnIsolate=yes
		[Service]
		ExecStart=/bin/sh -c 'sleep $1; echo "GUEST-EXIT 124 timed out after $1 s" >/dev/console; echo o >/proc/sysrq-trigger'
	EOF
	for u in ldconfig.service systemd-hwdb-update.service \
		systemd-journal-catalog-update.service systemd-firstboot.service \
		systemd-update-done.service e2scrub_reap.service \
		systemd-binfmt.service proc-sys-fs-binfmt_misc.automount; do
		ln -s /dev/null "/newroot/etc/systemd/system/$u"
	done
}

# systemd_boot TIMEOUT: the overlay root, the guest's units and files,
# then systemd as PID 1; returns only if a step fails
systemd_boot() {
	modprobe -a 9p 9pnet_virtio overlay autofs4 || return 1
	mkdir -p /host /rw /newroot
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /host || return 1
	mount -t tmpfs -o mode=755 tmpfs /rw
	mkdir -p /rw/upper /rw/work
	mount -t overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work overlay /newroot || return 1
	[ -x /newroot/lib/systemd/systemd ] || { echo "the host has no /lib/systemd/systemd"; return 1; }
	rm -rf /newroot/etc/systemd/system /newroot/etc/fstab
	# a host that is a container says so in its root: systemd would
	# believe it, and a container's systemd ignores the kernel command line
	rm -f /newroot/.dockerenv /newroot/run/.containerenv
	mkdir -p /newroot/etc/systemd/system /newroot/etc/guest
	: >/newroot/etc/fstab
	echo guest >/newroot/etc/hostname
	# a machine id of its own: not the host's, and not a "first boot"
	echo 5e1f0000000000000000000000000001 >/newroot/etc/machine-id
	systemd_units "$1"
	cp /etc/guest-lib.sh /newroot/etc/guest-lib.sh
	cp /etc/guest-systemd-run /newroot/etc/guest/run
	for f in /guest.sh /guest.env; do
		[ -e "$f" ] && cp "$f" "/newroot/etc/guest/${f#/}"
	done
	umount /tmp /run /srv
	for m in dev proc sys; do
		mount --move "/$m" "/newroot/$m"
	done
	echo "GUEST-SYSTEMD $(cut -d' ' -f1 /newroot/proc/uptime)"
	exec switch_root /newroot /lib/systemd/systemd
}
