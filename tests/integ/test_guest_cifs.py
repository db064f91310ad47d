"""The Linux kernel's SMB client, cifs, in front of smbsplice: a QEMU guest
(tests/integ/guest.py) mounts the host's throwaway Samba through smbsplice
and directly, and on each mount writes a 16 MiB file with dd, with splice
and with sendfile, reads Samba's file back the same three ways (its page
cache dropped in between, so that every read goes to the wire), and copies
a directory tree there and back, compared with the original. Then sealed
(encrypted, 3.1.1) and signed (3.0) mounts write and read again. The host
checks every file that landed in Samba's share by sha256.

cifs does what smbclient does not, and the test checks, on a capture of the
proxied connection, that it did so through smbsplice: compounded requests
(CREATE with QUERY_INFO and CLOSE in one frame), many credits asked for,
leases, and the ECHO keepalive (echo_interval=1 and an idle pause)."""
import os
import subprocess
import tempfile

from guest import Capture, Guest, dir_sums, randfill, tree_sums
from harness import Proxy, Samba, TMPDIR, check, file_sha256, metric, need, run, scrape

MIB = 1 << 20
SIZE = 16 * MIB

# Each MOUNTS entry: TAG:PORT:OPTIONS; a "full" one runs every operation.
SCRIPT = """
set -e
randfill $SIZE 7 >/tmp/g.bin
make_tree /tmp/tree
readsum() { say read "$1" "$2" "$(sha256sum "$3" | cut -d' ' -f1)"; }
for m in $MOUNTS; do
	tag=${m%%:*}; rest=${m#*:}; port=${rest%%:*}; opts=${rest#*:}
	cifs_mount //10.0.2.2/share /mnt "port=$port,$opts"
	case $tag in tree*) ;; *)
		dd if=/tmp/g.bin of=/mnt/$tag-dd.bin bs=1M 2>/dev/null
		drop_caches
		dd if=/mnt/host.bin of=/tmp/h.bin bs=1M 2>/dev/null
		readsum $tag dd /tmp/h.bin
	esac
	case $tag in full*)
		splicecp splice /tmp/g.bin /mnt/$tag-splice.bin
		splicecp sendfile /tmp/g.bin /mnt/$tag-sendfile.bin
		drop_caches
		splicecp splice /mnt/host.bin /tmp/h.bin
		readsum $tag splice /tmp/h.bin
		drop_caches
		splicecp sendfile /mnt/host.bin /tmp/h.bin
		readsum $tag sendfile /tmp/h.bin
		;;
	tree*)
		cp -r /tmp/tree /mnt/$tag-tree
		drop_caches
		rm -rf /tmp/back; cp -r /mnt/$tag-tree /tmp/back
		if diff -r /tmp/tree /tmp/back; then say tree $tag same; else say tree $tag differs; fi
		# idle, for the ECHO keepalive (echo_interval=1)
		sleep 3
		;;
	esac
	umount /mnt
	say mounted $tag
done
"""


def main():
    need("smbd", "samba")
    smb = Samba()
    px = Proxy(smb.addr, stats=True)
    want_host = randfill(os.path.join(smb.share, "host.bin"), SIZE, 3)
    want_guest = randfill(None, SIZE, 7)
    os.makedirs(TMPDIR, exist_ok=True)
    work = tempfile.mkdtemp(prefix="cifs-", dir=TMPDIR)
    # the tree's mount through a second smbsplice, whose port is captured:
    # metadata, not 100 MB of payload for tshark to go through
    px2 = Proxy(smb.addr, stats=True)
    cap = Capture(os.path.join(work, "tree.pcapng"), px2.port) if need_capture() else None
    mounts = {
        "fullpx": (px.port, "vers=3.1.1"),
        "fulldirect": (smb.port, "vers=3.1.1"),
        "treepx": (px2.port, "vers=3.1.1,echo_interval=1"),
        "treedirect": (smb.port, "vers=3.1.1,echo_interval=1"),
        "sealpx": (px.port, "vers=3.1.1,seal"),
        "sealdirect": (smb.port, "vers=3.1.1,seal"),
        "signpx": (px.port, "vers=3.0,sign"),
        "signdirect": (smb.port, "vers=3.0,sign"),
    }
    g = Guest(SCRIPT, name="cifs", env={
        "GUEST_USER": "root", "GUEST_PASS": Samba.password, "SIZE": SIZE,
        "MOUNTS": " ".join(f"{t}:{p}:{o}" for t, (p, o) in mounts.items())})
    g.run()
    if cap:
        cap.stop()
    check([w[0] for w in g.said("mounted")] == list(mounts), f"the guest mounted {len(mounts)} times and unmounted")

    reads = {(t, how): s for t, how, s in g.said("read")}
    for tag, (port, opts) in mounts.items():
        if tag.startswith("tree"):
            continue
        how = "through smbsplice" if port == px.port else "directly"
        ways = ("dd", "splice", "sendfile") if tag.startswith("full") else ("dd",)
        for w in ways:
            check(reads.get((tag, w)) == want_host, f"cifs {opts} {w} read {how} is byte-exact")
            got = file_sha256(os.path.join(smb.share, f"{tag}-{w}.bin"))
            check(got == want_guest, f"cifs {opts} {w} write {how} is byte-exact")
    trees, want_tree = dict(g.said("tree")), tree_sums()
    for tag in ("treepx", "treedirect"):
        check(trees.get(tag) == "same", f"a directory tree copied to {tag} and back is the same ({trees.get(tag)})")
        got = dir_sums(os.path.join(smb.share, f"{tag}-tree"))
        check(got == want_tree, f"Samba holds the {tag} tree's {len(want_tree)} files byte-exact ({len(got)} files)")

    m = scrape(px.stats_port)
    spliced_r = metric(m, "smbsplice_payload_bytes_total", direction="to_client", **{"class": "read"}, path="splice")
    spliced_w = metric(m, "smbsplice_payload_bytes_total", direction="to_server", **{"class": "write"}, path="splice")
    check(spliced_r > 2.5 * SIZE and spliced_w > 2.5 * SIZE,
          f"cifs READ and WRITE payloads spliced ({spliced_r:.0f} and {spliced_w:.0f} bytes)")
    echoes = metric(scrape(px2.stats_port), "smbsplice_messages_total", direction="to_server", command="echo")
    check(echoes > 0, f"cifs's ECHO keepalives went through smbsplice ({echoes:.0f})")
    check(metric(m, "smbsplice_frames_total", direction="to_client", kind="encrypted") > 0,
          "the sealed mount's frames are encrypted")
    if cap:
        cifs_only(cap)
    check(" end=error" not in px.log() + px2.log(), "no connection through smbsplice ended in error")
    px.stop()
    px2.stop()
    smb.stop()


def need_capture():
    import shutil
    if shutil.which("dumpcap") and shutil.which("tshark"):
        return True
    print("note: no dumpcap or tshark: the capture checks are left out", flush=True)
    return False


def cifs_only(cap):
    """What cifs did through smbsplice that smbclient does not do, from the
    capture of the tree mount's connection."""
    pkts = cap.fields("smb2.cmd", "smb2.flags.response", "smb2.credits.requested", "smb2.credits.granted",
                      "smb2.lease.lease_state")
    reqs = [p for p in pkts if p[1] and p[1][0] in ("0", "False")]
    compounds = [p[0] for p in reqs if len(p[0]) > 1]
    check(compounds, f"cifs sent {len(compounds)} compounded requests through smbsplice "
          f"(commands {sorted(set(','.join(c) for c in compounds))[:4]})")
    asked = max((int(c) for p in reqs for c in p[2] if c.isdigit()), default=0)
    granted = max((int(c) for p in pkts if p not in reqs for c in p[3] if c.isdigit()), default=0)
    check(asked >= 10, f"cifs asked for many credits (up to {asked} in one request; Samba granted up to {granted})")
    leases = sum(1 for p in reqs if p[4])
    check(leases, f"cifs asked for leases ({leases} CREATEs with a lease context)")
    # (smbsplice's own count of ECHO requests is checked in main; tshark
    # can lose a direction's framing in a capture, so any ECHO will do here)
    echo = sum(1 for p in pkts if "13" in p[0])
    check(echo, f"the capture holds {echo} ECHO messages")


if __name__ == "__main__":
    run(main)
