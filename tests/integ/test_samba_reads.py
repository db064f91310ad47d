"""READs of chosen sizes through smbsplice, from an independent client
(impacket), at random offsets, each compared with the file; and the
threshold at work: with --read-threshold 64K, the metrics show each READ
payload of 64 KiB and more spliced, and each smaller one copied."""
import os
import random
import sys

from harness import Proxy, Samba, check, metric, random_file, run, scrape

SIZES = (1, 4095, 65535, 65536, 65537, 1 << 20)
THRESHOLD = 64 << 10


def main():
    try:
        from impacket.smb3structs import SMB2_DIALECT_21
        from impacket.smbconnection import SMBConnection
    except ImportError:
        print(f"SKIP: impacket not importable by {sys.executable}: install the Debian package python3-impacket")
        sys.exit(77)
    smb = Samba()
    px = Proxy(smb.addr, "--read-threshold", "64K", stats=True)
    path = os.path.join(smb.share, "reads.bin")
    random_file(path, 8)
    with open(path, "rb") as f:
        data = f.read()

    # SMB 2.1: impacket encrypts its SMB 3 sessions with this Samba, and
    # encrypted READs are opaque frames (test_samba_files covers those).
    c = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=px.port, preferredDialect=SMB2_DIALECT_21)
    c.login("root", smb.password)
    tid = c.connectTree("share")
    fid = c.openFile(tid, "reads.bin")
    rng = random.Random()

    def decisions():
        m = scrape(px.stats_port)
        return tuple(metric(m, "smbsplice_payloads_total", direction="to_client", decision=d, **{"class": "read"})
                     for d in ("copy", "splice"))

    for size in SIZES:
        for _ in range(3):
            before = decisions()
            off = rng.randrange(len(data) - size)
            got = c.readFile(tid, fid, off, size)
            check(got == data[off:off + size], f"READ of {size} B at offset {off} matches the file")
            copy, splice = (a - b for a, b in zip(decisions(), before))
            want = (0, 1) if size >= THRESHOLD else (1, 0)
            check((copy, splice) == want,
                  f"READ of {size} B was {'spliced' if size >= THRESHOLD else 'copied'} (copy +{copy:.0f}, splice +{splice:.0f})")
    c.closeFile(tid, fid)
    c.logoff()
    c.close()  # the TCP connection: px.stop() checks that its sockets are gone
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_payload_bytes_total", direction="to_client", path="splice", **{"class": "read"}) > 0,
          "READ payload bytes went through the splice pump")
    px.stop()
    smb.stop()


if __name__ == "__main__":
    run(main)
