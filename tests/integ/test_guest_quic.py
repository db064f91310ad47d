"""The Linux kernel's SMB client, cifs, over QUIC: a QEMU guest
(tests/integ/guest.py) mounts the host's throwaway Samba through a host
smbsplice with a quic: backend (the client side of docs/deployment.md's
"Linux to an SMB over QUIC server"), which dials QUIC to

- smbsplice's own quic: listener in front of Samba (the gateway pair over
  QUIC), and
- quicrelay server (quic-go, written apart from smbsplice's ngtcp2) in
  front of Samba.

The mount options are the page's own: its `mount -t cifs` line (the block
marked for this test) is read, its port replaced by the host smbsplice's
and its username by the guest's credentials, so that the line the page
gives is the one that is tested. On each path the guest mounts with them
as written (SMB 3.1.1), with `seal` added and with `sign` added; on each
mount it writes a file with dd (GUEST_BIG_MIB, 16 MiB by default), drops
its page cache, reads a file of Samba's as big with dd, copies a directory
tree there and back, and unmounts. The host checks every byte by sha256,
and that the connections went over QUIC: each of the client-side
smbsplice's end lines names its quic: backend and carried the bytes
(dialect 3.1.1; signed or encrypted as the mount asked), its `ctl conns`
showed each connection open to the quic: backend while it lived, the far
smbsplice counted the QUIC handshakes, and quicrelay logged each
connection's bytes. No daemon logged an error.

Skipped (77) with one line when the daemon was built without QUIC, when
quicrelay (tests/quic/bin of the build) is missing, or where guests
cannot run.
"""
import json
import os
import re
import subprocess
import tempfile
import threading
import time

from guest import Guest, dir_sums, randfill, tree_sums
from harness import (SMBSPLICE, SRCDIR, TMPDIR, Proxy, Samba, TestFailure, check, file_sha256, metric, need, run,
                     scrape, wait_for)
from test_quic_backend import BIN, NAME, Relay, free_udp_port, make_certs, quic_built, skip

MIB = 1 << 20
# 16 MiB in `make check`, 64 MiB under `make check-guests` (GUEST_BIG_MIB=64)
SIZE = int(os.environ.get("GUEST_BIG_MIB", "16")) * MIB
# The guest's life: 52 s for 16 MiB on an idle two-core host under TCG,
# about twice that when the host is busy; six mounts of SIZE each way.
GUEST_SECS = 180 + 6 * SIZE // MIB
# The page's mount line for the QUIC client side, in the block whose
# marker names this test.
DOC = "docs/deployment.md"
DOC_BLOCK = re.compile(r"^<!-- not a recipe: [^\n]*test_guest_quic\.py[^\n]*-->\n```\w*\n(.*?)^```$", re.M | re.S)
# The one warning expected: cifs asks Samba for its interfaces (it does
# not use them without multichannel, which no mount here asks for).
IFLIST = re.compile(r"the server sent the client its network interface list")
# What each mount adds to the page's options.
VARIANTS = {"plain": "", "seal": ",seal", "sign": ",sign"}

# Each MOUNTS entry: TAG:PORT:OPTIONS (OPTIONS carry the port already).
SCRIPT = """
set -e
randfill $SIZE 7 >/tmp/g.bin
make_tree /tmp/tree
readsum() { say read "$1" "$2" "$(sha256sum "$3" | cut -d' ' -f1)"; }
for m in $MOUNTS; do
	tag=${m%%:*}; opts=${m#*:}; t0=$(uptime_s)
	cifs_mount //10.0.2.2/share /mnt "$opts"
	say opts $tag "$(grep ' /mnt ' /proc/mounts | cut -d' ' -f4)"
	dd if=/tmp/g.bin of=/mnt/$tag-dd.bin bs=1M 2>/dev/null
	drop_caches
	dd if=/mnt/host.bin of=/tmp/h.bin bs=1M 2>/dev/null
	readsum $tag host /tmp/h.bin
	rm /tmp/h.bin
	cp -r /tmp/tree /mnt/$tag-tree
	drop_caches
	rm -rf /tmp/back; cp -r /mnt/$tag-tree /tmp/back
	if diff -r /tmp/tree /tmp/back; then say tree $tag same; else say tree $tag differs; fi
	umount /mnt
	say unmounted $tag $t0 $(uptime_s)
done
say cifserrors "$(dmesg | grep -c 'CIFS: VFS:' || :)"
"""


def doc_options():
    """The page's mount options but its port and username (the guest's
    are its own), once the line is checked against the page's quic-client
    recipe: its listener's port, SMB 3.1.1."""
    with open(os.path.join(SRCDIR, DOC), encoding="utf-8") as f:
        text = f.read()
    blocks = DOC_BLOCK.findall(text)
    lines = [ln for b in blocks for ln in b.splitlines() if ln.startswith("mount -t cifs ")]
    check(len(lines) == 1, f"{DOC} gives one mount line for this test ({lines})")
    m = re.fullmatch(r"mount -t cifs //127\.0\.0\.1/share /mnt -o (\S+)", lines[0].strip())
    if not m:
        raise TestFailure(f"{DOC}: the mount line is not `mount -t cifs //127.0.0.1/share /mnt -o OPTIONS`: "
                          f"{lines[0]}")
    opts = dict(o.split("=", 1) if "=" in o else (o, None) for o in m.group(1).split(","))
    listen = re.search(r"<!-- recipe: quic-client [^\n]*\n```ini\n.*?^listen = 127\.0\.0\.1:(\d+)$", text,
                       re.M | re.S)
    check(listen and opts.get("port") == listen.group(1) and opts.get("username") == "USER",
          f"the page's mount line ({lines[0].strip()}) dials its recipe's listener, port "
          f"{listen.group(1) if listen else None}, as USER")
    check(opts.get("vers") == "3.1.1", "the page's mount line asks for SMB 3.1.1, the dialect of SMB over QUIC")
    return ",".join(o if v is None else f"{o}={v}" for o, v in opts.items() if o not in ("port", "username"))


def quic_paths(certs, smb):
    """The two QUIC servers in front of Samba and, for each, a client-side
    smbsplice (TCP listener, quic: backend): {path: (near, far, relay)}."""
    far = Proxy(None, "--listen", f"quic:127.0.0.1:{free_udp_port()}", "--backend", smb.addr,
                "--quic-cert", f"{certs}/srv.pem", "--quic-key", f"{certs}/srv.key", listen=False, stats=True)
    qaddr = far.argv[far.argv.index("--listen") + 1][5:]
    relay = Relay(certs, smb.addr)
    ca = ("--quic-name", NAME, "--quic-ca", f"{certs}/ca.pem")
    return {"pair": (Proxy(f"quic:{qaddr}", *ca, "--control", f"{TMPDIR}/ctl-pair", stats=True), far, None),
            "relay": (Proxy(f"quic:127.0.0.1:{relay.port}", *ca, "--control", f"{TMPDIR}/ctl-relay", stats=True),
                      None, relay)}


class CtlWatch:
    """`smbsplice ctl conns --json` of each client-side smbsplice, every
    half second while the guest runs (a mount lives 5 s or more): the live
    connections each showed, by id."""

    def __init__(self, paths):
        self.seen = {p: {} for p in paths}
        self.done = threading.Event()
        self.t = threading.Thread(target=self._poll, args=(paths,), daemon=True)
        self.t.start()

    def _poll(self, paths):
        end = time.monotonic() + GUEST_SECS
        while not self.done.is_set() and time.monotonic() < end:
            for path in paths:
                r = subprocess.run([SMBSPLICE, "ctl", "--control", f"{TMPDIR}/ctl-{path}", "conns", "--json"],
                                   capture_output=True, text=True, timeout=30)
                try:
                    rows = json.loads(r.stdout)["conns"] if r.returncode == 0 else []
                except ValueError:
                    rows = []  # (a missed poll: the check after counts what was seen)
                for row in rows:
                    self.seen[path][row["id"]] = row
            self.done.wait(0.5)

    def stop(self):
        self.done.set()
        self.t.join(60)
        return self.seen


def check_bytes(g, smb, mounts, want_host, want_guest):
    """Every file the guest read or wrote, byte-exact, on both sides."""
    reads, trees, want_tree = {(t, w): s for t, w, s in g.said("read")}, dict(g.said("tree")), tree_sums()
    for tag, (_, opts) in mounts.items():
        check(reads.get((tag, "host")) == want_host, f"{tag}: cifs {opts}: dd read of Samba's file is byte-exact")
        check(file_sha256(os.path.join(smb.share, f"{tag}-dd.bin")) == want_guest,
              f"{tag}: cifs {opts}: dd write byte-exact in Samba's share")
        got = dir_sums(os.path.join(smb.share, f"{tag}-tree"))
        check(trees.get(tag) == "same" and got == want_tree,
              f"{tag}: a tree of {len(want_tree)} files copied there ({len(got)} in Samba's share, byte-exact) "
              f"and back ({trees.get(tag)})")


def check_quic(paths, mounts):
    """Each mount's connection went through its path's QUIC leg."""
    for path, (near, far, relay) in paths.items():
        tags = [t for t in mounts if t.startswith(path)]
        ends = near.wait_log(r"^.* conn \S+ -> quic:.* end=.*$", count=len(tags), timeout=30)
        conns = near.conn_lines()
        check(len(conns) == len(tags) and all(c["backend"].startswith("quic:") and c["end"] == "fin" for c in conns),
              f"{path}: the {len(tags)} mounts' connections went to the quic: backend and ended cleanly "
              f"({[(c['backend'], c['end']) for c in conns]})")
        for tag, line, c in zip(tags, ends, conns):
            want = {"plain": "signed=", "seal": "encrypted=yes", "sign": "signed=yes"}[tag.split("-")[1]]
            check(" smb dialect=3.1.1 " in line and want in line and c["c2s"] > SIZE and c["s2c"] > SIZE,
                  f"{tag}: over QUIC at 3.1.1, {want}, {c['c2s']} bytes up and {c['s2c']} down")
        m = scrape(near.stats_port)
        failed = metric(m, "smbsplice_backend_failures_total")
        check(failed == 0, f"{path}: no dial of the QUIC backend failed ({failed})")
        if far:
            hs = metric(scrape(far.stats_port), "smbsplice_quic_handshakes_total")
            fl = far.conn_lines()
            check(hs == len(tags) and len(fl) == len(tags) and all(c["end"] == "fin" for c in fl),
                  f"{path}: smbsplice's quic: listener took {hs:.0f} QUIC connections, ended cleanly "
                  f"({[c['end'] for c in fl]})")
        if relay:
            wait_for("quicrelay's end lines", lambda: len(re.findall(r" end up=", relay.text())) >= len(tags), 30)
            ups = [(int(u), int(d)) for u, d in re.findall(r" end up=(\d+) down=(\d+)", relay.text())]
            check(len(ups) == len(tags) and all(u > SIZE and d > SIZE for u, d in ups),
                  f"{path}: quicrelay carried each mount's connection ({ups})")
            check(not re.search(r": no stream: |: backend \S+: ", relay.text()), "quicrelay logged no error")
        for px in (near, far):
            if px:
                bad = [ln for ln in px.whole_lines().splitlines()
                       if re.search(r"error|refus|warning", ln, re.I) and not IFLIST.search(ln)]
                check(not bad, f"{path}: smbsplice logged no error, no warning but {IFLIST.pattern} ({bad[:3]})")


def main():
    if not quic_built():
        skip("smbsplice was built without QUIC (configure says QUIC: no)")
    if not os.access(os.path.join(BIN, "quicrelay"), os.X_OK):
        skip(f"{BIN}/quicrelay is not built (go and Debian's golang-github-lucas-clemente-quic-go-dev are needed)")
    need("openssl", "openssl")
    need("smbd", "samba")
    opts = doc_options()
    os.makedirs(TMPDIR, exist_ok=True)
    certs = tempfile.mkdtemp(prefix="gquic-certs-", dir=TMPDIR)
    make_certs(certs)
    smb = Samba()
    want_host = randfill(os.path.join(smb.share, "host.bin"), SIZE, 3)
    want_guest = randfill(None, SIZE, 7)
    paths = quic_paths(certs, smb)
    mounts = {f"{p}-{v}": (near.port, f"port={near.port},{opts}{extra}")
              for p, (near, _, _) in paths.items() for v, extra in VARIANTS.items()}
    g = Guest(SCRIPT, name="quic", timeout=GUEST_SECS, env={
        "GUEST_USER": "root", "GUEST_PASS": Samba.password, "SIZE": SIZE,
        "MOUNTS": " ".join(f"{t}:{o}" for t, (_, o) in mounts.items())})
    watch = CtlWatch(paths)
    g.run(GUEST_SECS)
    seen = watch.stop()
    check([w[0] for w in g.said("unmounted")] == list(mounts),
          f"the guest mounted and cleanly unmounted {len(mounts)} times")
    print("note: seconds from mount to umount: " +
          ", ".join(f"{t} {float(b) - float(a):.1f}" for t, a, b in g.said("unmounted")), flush=True)
    # (/proc/mounts shows seal but not sign: the end lines show signing)
    said = {t: o.split(",") for t, o in g.said("opts")}
    for tag in mounts:
        v = tag.split("-")[1]
        check("vers=3.1.1" in said.get(tag, ()) and (v != "seal" or v in said.get(tag, ())),
              f"{tag}: the kernel mounted with vers=3.1.1{',seal' if v == 'seal' else ''}")
    check(g.said("cifserrors") == [["0"]], f"the guest's cifs logged no error ({g.said('cifserrors')})")
    check_bytes(g, smb, mounts, want_host, want_guest)
    check_quic(paths, mounts)
    for path, rows in seen.items():
        live = [r for r in rows.values() if str(r.get("backend", "")).startswith("quic:") and r.get("state") == "open"]
        check(len(live) == len(rows) == len(VARIANTS),
              f"{path}: `ctl conns` showed each of the {len(VARIANTS)} mounts' connections live, to the quic: "
              f"backend ({[(r.get('backend'), r.get('state')) for r in rows.values()]})")
    for near, far, relay in paths.values():
        near.stop()
        if far:
            far.stop()
        if relay:
            relay.stop()
    smb.stop()


if __name__ == "__main__":
    run(main, alarm=GUEST_SECS + 120)
