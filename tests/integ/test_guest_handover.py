"""The kernel client across live handovers (issue 19, HANDOVER.md): a QEMU
guest (tests/integ/guest.py) mounts the host's throwaway Samba with cifs
through smbsplice and, at once, copies one directory tree from the share
to its own tmpfs and another from its tmpfs to the share, a few hundred
files each (many small ones, a big one of some MiB per directory, all made
by randfill from fixed seeds). While both copies run, the host sends
`kill -USR2` to smbsplice three times (Proxy.handover, which follows the
new process), at a fifth, a half and four fifths of the bytes the copies
move (smbsplice's own byte counters), so each lands in the middle of a
copy however fast the machine is.

It checks that both copies complete (cp's status 0) and are byte-exact,
every file's sha256 on both sides: the guest hashes what it copied to its
tmpfs, the host hashes what landed in Samba's share, and both compare with
randfill's sums computed on the host. And that the mount never noticed:
cifs's reconnect counts in /proc/fs/cifs/Stats ("N session N share
reconnects") and its connection's reconnect instance in
/proc/fs/cifs/DebugData ("Instance: N") are what they were before the
copies, the guest's kernel log has no new cifs line ("reconnect", "CIFS:
VFS", ...), smbsplice accepted no connection other than the ones the mount
opened (a reconnect is a new TCP connection), and each handover's log line
says it took every one of them, the same number each time. The pause of
each handover is printed.

Before the handover (commit 8833590) SIGUSR2 ended smbsplice, and the test
fails at the first handover: no `handover: N connections` line, smbsplice
exited (status -12)."""
import os
import time

from guest import Guest, dir_sums, randfill
from harness import Proxy, Samba, TestFailure, check, metric, need, run, scrape

MIB = 1 << 20
# Each tree: NDIRS directories, each with NSMALL files of 0 to SMALLMAX - 1
# bytes and one "big" file of BIG bytes. The guest's script makes the same
# shape (mktree); SEEDS tells the two trees apart.
NDIRS, NSMALL, SMALLMAX, BIG = 5, 60, 40000, 4 * MIB
DOWN_SEED, UP_SEED = 1000, 50000
# Handovers at these fractions of the bytes both copies move.
AT = (0.2, 0.5, 0.8)
COPY_TIMEOUT = 120

SCRIPT = """
mktree() {
	local top=$1 base=$2 d f i=0
	for d in $(seq 0 $((NDIRS - 1))); do
		mkdir -p $top/d$d
		for f in $(seq 0 $((NSMALL - 1))); do
			randfill $(((i * 7919) % SMALLMAX)) $((base + i)) >$top/d$d/s$f
			i=$((i + 1))
		done
		randfill $BIG $((base + 10000 + d)) >$top/d$d/big
	done
}
cifsstate() {
	say reconnects $1 $(sed -n 's/^ *\\([0-9]*\\) session \\([0-9]*\\) share reconnects.*/\\1 \\2/p' /proc/fs/cifs/Stats)
	say instances $1 $(sed -n 's/.*Instance: \\([0-9]*\\).*/\\1/p' /proc/fs/cifs/DebugData)
}
mktree /tmp/up $UP_SEED
cifs_mount //10.0.2.2/share /mnt "port=$PORT,vers=3.1.1,hard" || exit 1
cifsstate before
n0=$(dmesg | wc -l)
say copying $(uptime_s)
cp -r /mnt/down /tmp/down & down=$!
cp -r /tmp/up /mnt/up & up=$!
wait $down; rd=$?
wait $up; ru=$?
sync
say cp $rd $ru $(uptime_s)
cifsstate after
dmesg | tail -n +$((n0 + 1)) | while read -r l; do say dmesg "$l"; done
sums /tmp/down
umount /mnt
say unmounted
"""


def tree(base):
    """{relative path: (size, seed)} of the tree mktree makes from seed @base."""
    files, i = {}, 0
    for d in range(NDIRS):
        for f in range(NSMALL):
            files[f"d{d}/s{f}"] = ((i * 7919) % SMALLMAX, base + i)
            i += 1
        files[f"d{d}/big"] = (BIG, base + 10000 + d)
    return files


def moved(px):
    """Bytes smbsplice has forwarded, both ways, since it started (the
    counters survive a handover)."""
    return metric(scrape(px.stats_port), "smbsplice_bytes_total")


def main():
    need("smbd", "samba")
    smb = Samba()
    px = Proxy(smb.addr, stats=True)
    down, up = tree(DOWN_SEED), tree(UP_SEED)
    want_down = {}
    for rel, (size, seed) in down.items():
        os.makedirs(os.path.join(smb.share, "down", os.path.dirname(rel)), exist_ok=True)
        want_down[rel] = randfill(os.path.join(smb.share, "down", rel), size, seed)
    want_up = {rel: randfill(None, size, seed) for rel, (size, seed) in up.items()}
    total = sum(s for s, _ in down.values()) + sum(s for s, _ in up.values())
    print(f"note: two trees of {len(down)} files, {total / MIB:.0f} MiB in all", flush=True)

    g = Guest(SCRIPT, name="handover", timeout=170, env={
        "GUEST_USER": "root", "GUEST_PASS": Samba.password, "PORT": px.port, "NDIRS": NDIRS,
        "NSMALL": NSMALL, "SMALLMAX": SMALLMAX, "BIG": BIG, "UP_SEED": UP_SEED})
    g.wait_said("copying")
    t0, base = time.monotonic(), moved(px)
    results = []
    for frac in AT:
        while moved(px) - base < frac * total:
            if g.said("cp") or g.proc.poll() is not None:
                raise TestFailure(f"the copies ended before the handover at {frac:.0%} of their bytes:\n{g.tail()}")
            if time.monotonic() > t0 + COPY_TIMEOUT:
                raise TestFailure(f"the copies moved {moved(px) - base:.0f} of {total} bytes in "
                                  f"{COPY_TIMEOUT} s:\n{g.tail()}")
            time.sleep(0.05)
        t = time.monotonic()
        r = px.handover()
        r["t"], r["took_s"] = t - t0, time.monotonic() - t
        check(not g.said("cp"), f"handover to pid {r['pid']} at {r['t']:.1f} s, {frac:.0%} of the bytes "
              f"copied: {r['conns']} connections, forwarding paused {r['paused_ms']:.1f} ms (followed in "
              f"{r['took_s']:.2f} s); the copies still run")
        results.append(r)
    g.run(timeout=COPY_TIMEOUT + 30)
    end = g.said("cp")
    took = float(end[0][2]) - float(g.said("copying")[0][0]) if end and len(end[0]) == 3 else 0.0
    check(end and end[0][:2] == ["0", "0"], f"both copies completed across {len(results)} handovers in "
          f"{took:.1f} s (cp status down, up: {' '.join(end[0][:2]) if end else 'none'})")
    got_down = {k: v for k, v, *_ in g.said("sum")}
    bad = sorted(k for k in want_down if got_down.get(k) != want_down[k])
    check(not bad and len(got_down) == len(want_down),
          f"the tree copied from the share: {len(got_down)} files in the guest, byte-exact (sha256) "
          f"({len(bad)} differ{': ' + ', '.join(bad[:5]) if bad else ''})")
    got_up = dir_sums(os.path.join(smb.share, "up"))
    bad = sorted(k for k in want_up if got_up.get(k) != want_up[k])
    check(not bad and len(got_up) == len(want_up),
          f"the tree copied to the share: {len(got_up)} files in Samba's share, byte-exact (sha256) "
          f"({len(bad)} differ{': ' + ', '.join(bad[:5]) if bad else ''})")

    rec = {w[0]: w[1:] for w in g.said("reconnects")}
    check(rec.get("before") and rec.get("before") == rec.get("after"),
          f"cifs counted no reconnect (/proc/fs/cifs/Stats: {rec.get('before')} session and share "
          f"reconnects before, {rec.get('after')} after)")
    inst = {w[0]: w[1:] for w in g.said("instances")}
    check(inst.get("before") and inst.get("before") == inst.get("after"),
          f"the connection's reconnect instance did not move (/proc/fs/cifs/DebugData Instance: "
          f"{inst.get('before')} before, {inst.get('after')} after)")
    klog = [" ".join(w) for w in g.said("dmesg")]
    cifs = [l for l in klog if any(s in l.lower() for s in ("cifs", "smb", "reconnect"))]
    check(not cifs, f"the guest's kernel logged no cifs line during the copies ({len(klog)} lines in all"
          f"{': ' + '; '.join(cifs[:5]) if cifs else ''})")

    # the mount's connections: every one smbsplice ever accepted (the
    # mount is gone, so each has logged its end), and each handover took
    # all of them
    conns = px.conn_lines()
    check(conns and all(r["conns"] == len(conns) for r in results),
          f"smbsplice accepted {len(conns)} connection(s), the mount's, and no other (cifs opened no new "
          f"one); each handover took them all ({', '.join(str(r['conns']) for r in results)})")
    check(all(c["end"] != "error" for c in conns), f"no connection ended in error "
          f"({', '.join(c['end'] for c in conns)})")
    took_lines = [r["took_conns"] for r in results]
    check(took_lines == [len(conns)] * len(results), f"each new process says it took {len(conns)} "
          f"connection(s) ({took_lines})")
    paused = [r["paused_ms"] for r in results]
    at = [r["t"] for r in results]
    print(f"note: forwarding paused {', '.join(f'{p:.1f}' for p in paused)} ms, at "
          f"{', '.join(f'{t:.1f}' for t in at)} s; the copies took {took:.1f} s", flush=True)
    px.stop()
    smb.stop()


if __name__ == "__main__":
    run(main, alarm=180)
