"""Both kernels' SMB code at once, as a user would deploy smbsplice: in one
QEMU guest (tests/integ/guest.py), ksmbd serves a share and cifs mounts it,
not directly but through smbsplice on the host (the guest reaches the host
as 10.0.2.2; smbsplice's backend is the host port QEMU forwards to the
guest's ksmbd). On a 3.1.1 mount the guest writes 16 MiB with dd, splice
and sendfile, reads ksmbd's file back the same three ways, and copies a
directory tree there and back; sealed and signed mounts write and read too.
The guest compares what cifs wrote with what ksmbd stored, on its own
disk; the host checks every hash against the files' generator and that
smbsplice spliced the payloads and saw every connection end cleanly."""
from guest import Guest, randfill
from harness import Proxy, check, free_ports, metric, run, scrape

SIZE = 16 << 20
MOUNTS = {"full": "vers=3.1.1", "seal": "vers=3.1.1,seal", "sign": "vers=3.0,sign"}

SCRIPT = """
set -e
mkdir -p /srv/share
randfill $SIZE 5 >/srv/share/served.bin
randfill $SIZE 6 >/tmp/g.bin
make_tree /tmp/tree
ksmbd_serve share=/srv/share
sum() { sha256sum "$1" | cut -d' ' -f1; }
for m in $MOUNTS; do
	tag=${m%%:*}; opts=${m#*:}
	cifs_mount //10.0.2.2/share /mnt "port=$PORT,$opts"
	dd if=/tmp/g.bin of=/mnt/$tag-dd.bin bs=1M 2>/dev/null
	drop_caches
	dd if=/mnt/served.bin of=/tmp/h.bin bs=1M 2>/dev/null
	say read $tag dd $(sum /tmp/h.bin)
	ways=dd
	if [ $tag = full ]; then
		ways="dd splice sendfile"
		splicecp splice /tmp/g.bin /mnt/$tag-splice.bin
		splicecp sendfile /tmp/g.bin /mnt/$tag-sendfile.bin
		drop_caches
		splicecp splice /mnt/served.bin /tmp/h.bin
		say read $tag splice $(sum /tmp/h.bin)
		drop_caches
		splicecp sendfile /mnt/served.bin /tmp/h.bin
		say read $tag sendfile $(sum /tmp/h.bin)
		cp -r /tmp/tree /mnt/tree
		drop_caches
		cp -r /mnt/tree /tmp/back
		if diff -r /tmp/tree /tmp/back && diff -r /tmp/tree /srv/share/tree; then
			say tree same
		else
			say tree differs
		fi
	fi
	umount /mnt
	for w in $ways; do say stored $tag $w $(sum /srv/share/$tag-$w.bin); done
done
"""


def main():
    guest_port, = free_ports(1)
    px = Proxy(f"127.0.0.1:{guest_port}", stats=True)
    g = Guest(SCRIPT, fwd={guest_port: 445}, name="both", env={
        "SIZE": SIZE, "PORT": px.port, "MOUNTS": " ".join(f"{t}:{o}" for t, o in MOUNTS.items())})
    g.run()
    served, written = randfill(None, SIZE, 5), randfill(None, SIZE, 6)
    reads = {(t, w): s for t, w, s in g.said("read")}
    stored = {(t, w): s for t, w, s in g.said("stored")}
    for tag, opts in MOUNTS.items():
        for w in ("dd", "splice", "sendfile") if tag == "full" else ("dd",):
            check(reads.get((tag, w)) == served,
                  f"cifs {opts} {w} read of ksmbd's file through smbsplice is byte-exact")
            check(stored.get((tag, w)) == written,
                  f"cifs {opts} {w} write through smbsplice is byte-exact in ksmbd's share")
    check(g.said("tree") == [["same"]], "a directory tree copied to ksmbd through smbsplice and back is the same")
    m = scrape(px.stats_port)
    r = metric(m, "smbsplice_payload_bytes_total", direction="to_client", **{"class": "read"}, path="splice")
    w = metric(m, "smbsplice_payload_bytes_total", direction="to_server", **{"class": "write"}, path="splice")
    check(r > 2.5 * SIZE and w > 2.5 * SIZE, f"ksmbd's READ and cifs's WRITE payloads spliced ({r:.0f}, {w:.0f} bytes)")
    lines = px.wait_log(r"^.* conn .* end=\w+ .*$", count=len(MOUNTS))
    check(all(" end=fin " in ln for ln in lines), f"all {len(lines)} cifs connections to ksmbd ended cleanly")
    px.stop()


if __name__ == "__main__":
    run(main)
