#!/usr/bin/env bash
# build.sh - fetch, build and cache what a test guest boots: an uncompressed
# Debian 6.1 kernel (vmlinux) and an initramfs (initrd.gz) holding busybox,
# the SMB modules, ksmbd-tools, mount.cifs and this folder's helpers.
#
#   tests/guest/build.sh        print the cache directory holding vmlinux,
#                               initrd.gz and kver, building it first if
#                               it is not there yet
#
# Exits 77 with one line "SKIP: ..." when this machine cannot build or run
# guests (no QEMU, no busybox-static, no gcc or make, or apt-get cannot
# download the packages), 1 when a build step fails, 0 otherwise.
#
# Theory of operation. Nothing is installed on the host but qemu-system-x86
# and busybox-static (contrib/install-deps.sh): the kernel image, ksmbd-tools,
# cifs-utils and the kernel's linux-headers and linux-kbuild are fetched with
# `apt-get download` and unpacked with dpkg-deb in a scratch directory of
# the cache. (Installing ksmbd-tools would remove Samba: it Conflicts with
# it.) The cache lives outside the source tree, in $SMBSPLICE_GUEST_CACHE,
# else $XDG_CACHE_HOME/smbsplice-guest, else /var/cache/smbsplice-guest
# for root (~/.cache/smbsplice-guest for others), in a directory named
# by a hash of everything a build depends on: the versions of the four
# packages apt would fetch, this folder's files and the host's busybox. A
# rerun finds it and builds nothing; a new kernel in the archive or an edit
# here builds a new one, and the old ones are removed. Concurrent builds
# are serialised with flock.
#
# The kernel: the ELF vmlinux inside the bzImage's XZ payload. QEMU boots it
# through its PVH entry note, skipping the real-mode setup and the
# decompressor: under software emulation (TCG), 2 s to /init instead of 5.
#
# The initramfs: busybox-static and its applet links; the modules the tests
# use (SMB_MODULES, SYSTEMD_MODULES) with their modules.dep closure;
# opinfo_guard.ko, built against the downloaded headers; ksmbd-tools'
# multi-call binary and mount.cifs with the host's copies of their shared
# libraries (the same Debian release: the same sonames); ksmbd_shim.so and
# the static splicecp and randfill, built with the host's gcc; init,
# lib.sh, systemd.sh and systemd-run from this folder. randfill is left
# beside the image too, for the host. Each boot appends its own small cpio
# (the script and its environment) after it; tests/integ/guest.py does
# that. See docs/testing-guests.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUSYBOX=/bin/busybox
QEMU=${GUEST_QEMU:-qemu-system-x86_64}
# The crypto modules are those SMB3 signing (cmac, sha512) and encryption
# (ccm, gcm) need; aesni_intel is there so that a guest on real KVM gets AES-NI.
SMB_MODULES="virtio_pci virtio_net ksmbd cifs nls_utf8 cmac ccm gcm ecb ctr
 ghash_generic sha512_generic crc32_generic aesni_intel"
# A guest whose init is systemd (Guest(systemd=True)) runs the host's own
# Debian from a read-only 9p export of its root, under an overlay whose
# upper layer is a tmpfs; autofs4 is what systemd loads itself at boot.
SYSTEMD_MODULES="9p 9pnet_virtio overlay autofs4"
# The libraries ksmbd.tools and mount.cifs link, by Debian package, for the
# one line that names what to install when the host lacks them.
LIB_PKGS="libglib2.0-0 libnl-3-200 libnl-genl-3-200 libcap-ng0"

# skip WHAT: the one line the tests print when they cannot run here
skip() {
	echo "SKIP: $*"
	exit 77
}

die() {
	echo "build.sh: $*" >&2
	exit 1
}

# cache_root: where the builds live (see the header)
cache_root() {
	if [ -n "${SMBSPLICE_GUEST_CACHE:-}" ]; then
		echo "$SMBSPLICE_GUEST_CACHE"
	elif [ -n "${XDG_CACHE_HOME:-}" ]; then
		echo "$XDG_CACHE_HOME/smbsplice-guest"
	elif [ "$(id -u)" -eq 0 ]; then
		echo /var/cache/smbsplice-guest
	else
		echo "$HOME/.cache/smbsplice-guest"
	fi
}

# check_host: skip unless the tools a build and a boot need are here
check_host() {
	command -v "$QEMU" >/dev/null ||
		skip "$QEMU not found: install the Debian package qemu-system-x86"
	# busybox-static's binary is copied into the guest as it is: it must
	# need no shared library
	[ -x "$BUSYBOX" ] && ! ldd "$BUSYBOX" >/dev/null 2>&1 ||
		skip "no static $BUSYBOX: install the Debian package busybox-static"
	command -v gcc >/dev/null && command -v make >/dev/null ||
		skip "gcc or make not found: install the Debian packages gcc and make"
	command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
		skip "no apt-get or dpkg-deb: guests are built from Debian packages"
}

# kernel_pkg: the linux-image package to boot, $GUEST_KPKG or the one
# linux-image-amd64 depends on
kernel_pkg() {
	local k=${GUEST_KPKG:-}
	[ -n "$k" ] || k=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-/ && !k { k = $2 } END { print k }')
	[ -n "$k" ] || skip "apt knows no linux-image-amd64: run apt-get update"
	echo "$k"
}

# pkg_version PKG: the version `apt-get download PKG` fetches
pkg_version() {
	apt-cache show --no-all-versions "$1" 2>/dev/null | awk '/^Version:/ { v = $2 } END { print v }'
}

# build_key KPKG: the hash naming this build's directory
build_key() {
	local p
	{
		for p in "$1" ksmbd-tools cifs-utils; do echo "$p $(pkg_version "$p")"; done
		cat "$HERE"/build.sh "$HERE"/init "$HERE"/lib.sh "$HERE"/systemd.sh \
			"$HERE"/systemd-run "$HERE"/*.c "$BUSYBOX"
	} | sha256sum | cut -c1-16
}

# fetch DIR KPKG: download the packages into DIR/debs and unpack what the
# guest needs of them into DIR/pkg (the kernel package is 400 MB unpacked:
# only the image and the module trees the modules can reach) and the
# headers into DIR/hdr
fetch() {
	local d=$1 kpkg=$2 kver=${2#linux-image-} kbuild
	local m=lib/modules/${2#linux-image-}
	mkdir -p "$d/debs" "$d/pkg" "$d/hdr"
	kbuild=linux-kbuild-$(echo "$kver" | cut -d. -f1,2)
	(cd "$d/debs" &&
		apt-get download "$kpkg" ksmbd-tools cifs-utils "linux-headers-$kver" \
			"linux-headers-${kver%-amd64}-common" >download.log 2>&1) ||
		skip "apt-get download of $kpkg, ksmbd-tools, cifs-utils and its headers failed (offline?)"
	# the kbuild tools of the kernel's own version, else the newest
	(cd "$d/debs" && { apt-get download "$kbuild=$(pkg_version "$kpkg")" ||
		apt-get download "$kbuild"; } >>download.log 2>&1) ||
		skip "apt-get download $kbuild failed (offline?)"
	dpkg-deb --fsys-tarfile "$d/debs/${kpkg}"_*.deb | tar -x -C "$d/pkg" --wildcards \
		"./boot/vmlinuz-$kver" "./$m/kernel/fs/*" "./$m/kernel/crypto/*" "./$m/kernel/net/*" \
		"./$m/kernel/lib/*" "./$m/kernel/arch/*" "./$m/kernel/drivers/net/*" \
		"./$m/kernel/drivers/virtio/*"
	dpkg-deb -x "$d"/debs/ksmbd-tools_*.deb "$d/pkg"
	dpkg-deb -x "$d"/debs/cifs-utils_*.deb "$d/pkg"
	for p in "$d"/debs/linux-headers-*.deb "$d"/debs/linux-kbuild-*.deb; do
		dpkg-deb -x "$p" "$d/hdr"
	done
	# the package has no modules.dep: its postinst makes one
	"$BUSYBOX" depmod -b "$d/pkg" "$kver"
}

# extract_vmlinux BZIMAGE OUT: the ELF kernel inside BZIMAGE's XZ payload
extract_vmlinux() {
	local off
	off=$(LC_ALL=C grep -m1 -obUaP '\xfd7zXZ\x00' "$1" | cut -d: -f1 || :)
	[ -n "$off" ] || die "no XZ payload in $1"
	# xz stops after the payload: tail, writing the rest, must not be the
	# pipeline's writer under pipefail (SIGPIPE)
	xz -dc --single-stream < <(tail -c +$((off + 1)) "$1") >"$2"
}

# build_guard D KVER: opinfo_guard.ko, against the unpacked headers
build_guard() {
	local d=$1 kver=$2 src=$1/hdr/usr/src/linux-headers-$2
	# the arch headers' Makefile includes the common ones by absolute path
	sed -i "s#^include /usr/src/#include $d/hdr/usr/src/#" "$src/Makefile"
	mkdir -p "$d/guard"
	cp "$HERE/opinfo_guard.c" "$d/guard/"
	echo 'obj-m := opinfo_guard.o' >"$d/guard/Kbuild"
	make -s -C "$src" M="$d/guard" modules >"$d/guard/make.log" 2>&1 ||
		{ cat "$d/guard/make.log" >&2; die "building opinfo_guard.ko failed"; }
}

# add_modules D KVER ROOT: SMB_MODULES and SYSTEMD_MODULES with their
# closure over modules.dep, and opinfo_guard.ko, into ROOT with a
# modules.dep of their own
add_modules() {
	local d=$1 kver=$2 r=$3 m f want=" " mdir=lib/modules/$2
	local dep=$d/pkg/$mdir/modules.dep
	for m in $SMB_MODULES $SYSTEMD_MODULES; do
		f=$(grep -E "(^|/)${m//_/[_-]}\.ko:" "$dep" | cut -d: -f1 || :)
		[ -n "$f" ] || die "module $m is not in $kver"
		want+="$f $(grep -E "^$f:" "$dep" | cut -d: -f2) "
	done
	for f in $want; do
		mkdir -p "$r/$mdir/$(dirname "$f")"
		cp "$d/pkg/$mdir/$f" "$r/$mdir/$f"
	done
	mkdir -p "$r/$mdir/extra"
	cp "$d/guard/opinfo_guard.ko" "$r/$mdir/extra/"
	"$BUSYBOX" depmod -b "$r" "$kver"
}

# add_programs D ROOT: busybox, ksmbd-tools, mount.cifs and their libraries,
# the shim and splicecp
add_programs() {
	local d=$1 r=$2 a f libs t
	mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,usr/libexec,usr/lib/guest,etc/ksmbd}
	cp "$BUSYBOX" "$r/bin/busybox"
	"$BUSYBOX" --list-full | while read -r a; do
		[ -e "$r/$a" ] || ln -s /bin/busybox "$r/$a"
	done
	cp "$d/pkg/usr/libexec/ksmbd.tools" "$r/usr/libexec/"
	for t in mountd control adduser addshare; do
		ln -s ../libexec/ksmbd.tools "$r/usr/sbin/ksmbd.$t"
	done
	cp "$d/pkg/sbin/mount.cifs" "$r/sbin/"
	libs=$(ldd "$r/usr/libexec/ksmbd.tools" "$r/sbin/mount.cifs")
	! grep -q 'not found' <<<"$libs" ||
		skip "the host lacks libraries ksmbd-tools or mount.cifs need: install the Debian packages $LIB_PKGS"
	for f in $(grep -oE '/[^ ]+\.so[^ ]*' <<<"$libs" | sort -u); do
		mkdir -p "$r$(dirname "$f")"
		cp -L "$f" "$r$f"
	done
	gcc -shared -fPIC -O2 -Wall -o "$r/usr/lib/guest/ksmbd_shim.so" "$HERE/ksmbd_shim.c" -ldl
	gcc -static -O2 -Wall -o "$r/usr/bin/splicecp" "$HERE/splicecp.c"
	gcc -static -O2 -Wall -o "$r/usr/bin/randfill" "$HERE/randfill.c"
}

# make_root D KVER: the initramfs tree, in D/root
make_root() {
	local d=$1 r=$1/root
	mkdir -p "$r"/{proc,sys,dev,tmp,run,srv,mnt,root}
	add_programs "$d" "$r"
	add_modules "$d" "$2" "$r"
	cp "$HERE/init" "$r/init"
	chmod 755 "$r/init"
	cp "$HERE/lib.sh" "$r/etc/guest-lib.sh"
	cp "$HERE/systemd.sh" "$r/etc/guest-systemd.sh"
	cp "$HERE/systemd-run" "$r/etc/guest-systemd-run"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
}

# pack D: D/root as a gzipped cpio, padded to 512 bytes so that the
# per-boot archive appended after it starts aligned
pack() {
	local out=$1/initrd.gz
	(cd "$1/root" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null) | gzip -1 >"$out"
	truncate -s $((($(stat -c %s "$out") + 511) / 512 * 512)) "$out"
}

# build DIR KPKG: everything, in DIR.tmp, then renamed to DIR
build() {
	local dir=$1 kpkg=$2 kver=${2#linux-image-} t=$1.tmp
	rm -rf "$t"
	mkdir -p "$t"
	fetch "$t" "$kpkg"
	extract_vmlinux "$t/pkg/boot/vmlinuz-$kver" "$t/vmlinux"
	build_guard "$t" "$kver"
	make_root "$t" "$kver"
	pack "$t"
	# the host's copy, for the expected hashes of the guest's files
	cp "$t/root/usr/bin/randfill" "$t/randfill"
	echo "$kver" >"$t/kver"
	rm -rf "$t/debs" "$t/pkg" "$t/hdr" "$t/guard" "$t/root"
	mv "$t" "$dir"
}

main() {
	local root kpkg key dir old
	check_host
	root=$(cache_root)
	kpkg=$(kernel_pkg)
	key=$(build_key "$kpkg")
	dir=$root/$key
	mkdir -p "$root"
	exec 9>"$root/lock"
	flock 9
	if [ ! -s "$dir/initrd.gz" ]; then
		echo "build.sh: building a guest for $kpkg in $dir (once)" >&2
		build "$dir" "$kpkg"
		for old in "$root"/*/; do
			[ "${old%/}" = "$dir" ] || rm -rf "$old"
		done
	fi
	echo "$dir"
}

main "$@"
