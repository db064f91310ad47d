"""--trace is safe to run: the file is its owner's alone, no link planted
at its name is followed, it holds no credentials, and what a client claims
costs no more records than what it sends.

- with --user nobody, the trace is created owned by nobody, mode 0600
  (the umask would have made it 0644), in a directory nobody may write;
- SIGHUP and SIGUSR1 with the file in place reopen it as nobody, and the
  records go on into it (no "records are dropped"); after a logrotate-like
  move, SIGUSR1 begins a new file, nobody's and 0600; --trace-max rotates
  into FILE.1 ... as nobody, every file nobody's and 0600, holding between
  them every record smbsplice_trace_records_total counts; in a directory
  nobody may not write, 16 000 frames make one "cannot rename" line and
  no byte past --trace-max (the records dropped and counted);
- a symbolic link planted at the trace's name, to a name in a directory
  only root may write, is refused in one line and exit status 1, with
  --user and without, and no file appears at the link's target;
- a hard link planted there, to an empty file of nobody's elsewhere or to
  one of root's, is refused likewise and that file is left as it was; a
  trace left by root is refused under --user with a line naming its owner,
  and one left 0644 (a reader may hold it open) is refused too;
- a real smbclient session (NTLMSSP) through smbsplice: tshark finds its
  SESSION_SETUP requests and responses in the trace, each record the SMB2
  header and nothing after it, and "NTLMSSP\\0" is nowhere in the file; in
  tcp mode (nothing framed), likewise;
- 50 connections that each send a WRITE header claiming a 16 MiB frame
  and 100 bytes of it make at most 6 records each (handshake, the frame's
  one, FINs), not 261; one that sends 200 000 bytes of it makes as many
  data records as 65 495-byte segments those bytes fill (4), and tshark's
  TCP analysis finds none missing.
"""
import math
import os
import pwd
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

from harness import (NOT_SMB, SMBSPLICE, Proxy, Samba, Server, check, free_port, metric, need, random_file, run, scrape,
                     wait_for)
from smbgen import prefix, smb2_header
from test_trace import pcap_records, settled, trace_records, tshark

SMB2_WRITE = 9
SEG_MAX = 65535 - 20 - 20  # the most one IPv4 segment's record stands for


def owned_0600(path, pw):
    st = os.lstat(path)
    return st.st_uid == pw.pw_uid and st.st_gid == pw.pw_gid and (st.st_mode & 0o7777) == 0o600


def describe(path):
    st = os.lstat(path)
    return f"{path}: uid {st.st_uid} gid {st.st_gid} mode {st.st_mode & 0o7777:o}"


def start_refused(*args):
    """Start smbsplice with @args; return (exit status, its error lines),
    or (None, ...) if it was still running after 5 s (it started)."""
    p = subprocess.Popen([SMBSPLICE, "--listen", f"127.0.0.1:{free_port()}", "--backend", "127.0.0.1:1", *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        p.wait(5)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.terminate()
        p.wait(10)
        rc = None
    return rc, [line for line in p.stderr.read().splitlines() if " error: " in line]


def signal_then_ls(px, smb, sig, path=None):
    """Send @sig, then give the trace a session to record: with @path (the
    file was moved away), once the writer has begun it again."""
    px.proc.send_signal(sig)
    if path:
        wait_for(f"{path} begun again after {signal.Signals(sig).name}", lambda: os.path.exists(path))
    else:
        time.sleep(0.3)
    smb.smbclient(px.port, cmd="ls")


def write_claim(total, sent):
    """A WRITE request whose frame claims @total bytes after its prefix,
    with @sent bytes of its data: 116 bytes, then the data."""
    body = struct.pack("<HHIQ16sIIHHI", 49, 64 + 48, total - 64 - 48, 0, bytes(16), 0, 0, 0, 0, 0)
    return prefix(total) + smb2_header(SMB2_WRITE, msg_id=1) + body + bytes(sent)


def smb2_msg(cmd, body):
    return prefix(64 + len(body)) + smb2_header(cmd, msg_id=1) + body


def rotation_broken(nobody, base):
    """--trace-max in a directory --user may not write: FILE cannot be
    renamed, one line says so, and nothing is written past the limit (the
    records counted as dropped), however many frames a client sends."""
    def drain(c):
        while c.recv(65536):
            pass
    d = os.path.join(base, "rootdir")
    os.mkdir(d, 0o755)
    tr = os.path.join(d, "t.pcap")
    open(tr, "w").close()
    os.chown(tr, nobody.pw_uid, nobody.pw_gid)
    os.chmod(tr, 0o600)
    srv = Server(drain)
    px = Proxy(srv.addr, "--user", "nobody", "--trace", tr, "--trace-max", "64K", stats=True)
    neg = smb2_msg(0, struct.pack("<HHHHI16sIHH", 36, 1, 1, 0, 0, bytes(16), 0, 0, 0) + b"\x02\x02")
    echo = smb2_msg(13, struct.pack("<HH", 4, 0))
    c = socket.create_connection(("127.0.0.1", px.port), timeout=10)
    c.sendall(neg)
    t0, n = time.monotonic(), 0
    while n < 16000 and time.monotonic() - t0 < 10:
        c.sendall(echo * 50)
        n += 50
        time.sleep(0.002)
    c.close()
    px.wait_log(r" end=")
    # The writer drops (and counts) what it cannot write as it comes to
    # it, which on a loaded machine can be seconds after the client sent
    # it: wait, bounded, for the count the check needs.
    end = time.monotonic() + 20
    while True:
        dropped = metric(scrape(px.stats_port), "smbsplice_trace_dropped_total")
        if dropped > n // 2 or time.monotonic() > end:
            break
    px.stop()
    lines = px.log().count("cannot rename")
    size = os.path.getsize(tr)
    check(lines == 1 and size < (64 << 10) + 600 and dropped > n // 2,
          f"{n} frames, --trace-max 64K, FILE not renamable: {lines} 'cannot rename' lines, "
          f"{size} bytes of trace, {dropped} records dropped and counted")
    srv.close()


def main():
    need("tshark", "tshark")
    nobody = pwd.getpwnam("nobody")
    # Under /tmp, not the build tree: nobody must reach the directory, and
    # the build tree may sit under one only root can enter.
    base = tempfile.mkdtemp(prefix="smbsplice-trace-safe-")
    os.chmod(base, 0o755)
    traces = os.path.join(base, "traces")  # nobody's: rotation needs it
    os.mkdir(traces, 0o700)
    os.chown(traces, nobody.pw_uid, nobody.pw_gid)
    rootonly = os.path.join(base, "rootonly")
    os.mkdir(rootonly, 0o700)
    theirs = os.path.join(base, "nobodys")
    os.mkdir(theirs, 0o700)
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    old_umask = os.umask(0o022)
    try:
        body(nobody, base, traces, rootonly, theirs)
    finally:
        os.umask(old_umask)
        shutil.rmtree(base, ignore_errors=True)


def body(nobody, base, traces, rootonly, theirs):
    smb = Samba()
    random_file(os.path.join(smb.share, "f.bin"), 1)

    # 1. Owned by --user, 0600; no credentials in it.
    tr = os.path.join(traces, "t.pcap")
    px = Proxy(smb.addr, "--user", "nobody", "--trace", tr, stats=True)
    smb.smbclient(px.port, cmd="ls")
    n, total = settled(px, lambda: [tr], 1)
    check(owned_0600(tr, nobody), f"--user nobody: the trace is nobody's and 0600 ({describe(tr)}, {n} records)")
    check(n == total, f"... and holds every record smbsplice wrote ({n} of {total})")
    raw = open(tr, "rb").read()
    setup = tshark(tr, px.port, "-Y", "smb2.cmd == 1", "-T", "fields", "-e", "smb2.flags.response",
                   "-e", "frame.cap_len", "-e", "frame.len").split("\n")
    setup = [line.split("\t") for line in setup if line]
    kinds = {r for r, _, _ in setup}
    check(len(kinds) == 2 and all(int(c) == 20 + 20 + 4 + 64 < int(l) for _, c, l in setup),
          f"SESSION_SETUP requests and responses are in the trace as their SMB2 header alone "
          f"(captured/frame lengths {[(c, l) for _, c, l in setup]})")
    check(b"NTLMSSP\0" not in raw, f"no NTLMSSP message anywhere in the trace ({len(raw)} bytes)")

    # 2. Reopened in place, after a move, and rotated, all as nobody.
    ends = 1
    for sig in (signal.SIGHUP, signal.SIGUSR1):
        n0 = n
        signal_then_ls(px, smb, sig)
        ends += 1
        n, total = settled(px, lambda: [tr], ends)
        check(n > n0 and n == total and "records are dropped" not in px.log() and owned_0600(tr, nobody),
              f"{signal.Signals(sig).name} with the file in place: the records go on into it "
              f"({n0} then {n} of {total}; {describe(tr)})")
    os.rename(tr, tr + ".moved")
    signal_then_ls(px, smb, signal.SIGUSR1, path=tr)
    ends += 1
    n, total = settled(px, lambda: [tr, tr + ".moved"], ends)
    moved = len(pcap_records(tr + ".moved"))
    check(n - moved > 0 and n == total and owned_0600(tr, nobody) and "records are dropped" not in px.log(),
          f"SIGUSR1 after a move: a new file, nobody's and 0600 ({n - moved} records, {moved} in the moved one, "
          f"of {total}; {describe(tr)})")
    px.stop()

    tr = os.path.join(traces, "rot.pcap")
    px = Proxy(smb.addr, "--user", "nobody", "--trace", tr, "--trace-max", "64K", stats=True)
    for ends in range(1, 61):
        smb.smbclient(px.port, cmd="; ".join(["ls"] * 16))
        if os.path.exists(tr + ".2"):
            break

    def rotated():
        return [os.path.join(traces, f) for f in sorted(os.listdir(traces)) if f.startswith("rot.pcap")]
    n, total = settled(px, rotated, ends)
    paths = rotated()
    files = [os.path.basename(p) for p in paths]
    check(len(files) >= 3 and all(owned_0600(p, nobody) for p in paths) and n == total
          and "records are dropped" not in px.log() and "cannot rename" not in px.log(),
          f"--trace-max 64K as nobody: {files}, each nobody's and 0600, {n} records between them "
          f"(smbsplice_trace_records_total {total})")
    px.stop()

    rotation_broken(nobody, base)

    # 3. A symbolic link planted at the name: refused, its target not made.
    target = os.path.join(rootonly, "made-through-link")
    lnk = os.path.join(traces, "sym.pcap")
    os.symlink(target, lnk)
    for user in (("--user", "nobody"), ()):
        rc, lines = start_refused(*user, "--trace", lnk)
        check(rc == 1 and len(lines) == 1 and "symbolic link" in lines[0] and not os.path.lexists(target),
              f"{' '.join(user) or 'as root'}: a symbolic link at the trace's name is refused, and nothing is "
              f"made at its target (exit {rc}, {lines}, target exists: {os.path.lexists(target)})")
        if os.path.lexists(target):
            os.unlink(target)

    # 4. Hard links planted at the name: refused, their files untouched.
    mine = os.path.join(theirs, "file")
    open(mine, "w").close()
    os.chown(mine, nobody.pw_uid, nobody.pw_gid)
    os.chmod(mine, 0o640)
    roots = os.path.join(rootonly, "secret")
    open(roots, "w").close()
    os.chmod(roots, 0o600)
    for victim, want in ((mine, "2 hard links"), (roots, "owned by uid 0")):
        hl = os.path.join(traces, "hard.pcap")
        os.link(victim, hl)
        before = describe(victim)
        rc, lines = start_refused("--user", "nobody", "--trace", hl)
        after = describe(victim)
        check(rc == 1 and len(lines) == 1 and want in lines[0] and os.path.getsize(victim) == 0 and before == after,
              f"a hard link at the trace's name to {victim} is refused and the file left as it was "
              f"(exit {rc}, {lines}; {after})")
        os.unlink(hl)

    # A trace root left (an older smbsplice opened it as root): refused.
    left = os.path.join(traces, "left.pcap")
    shutil.copy(os.path.join(traces, "t.pcap"), left)
    os.chown(left, 0, 0)
    rc, lines = start_refused("--user", "nobody", "--trace", left)
    check(rc == 1 and len(lines) == 1 and "owned by uid 0" in lines[0],
          f"a trace root left, under --user nobody: refused, naming its owner (exit {rc}, {lines})")
    # One of nobody's left 0644: whoever opened it keeps reading; refused.
    os.chown(left, nobody.pw_uid, nobody.pw_gid)
    os.chmod(left, 0o644)
    size = os.path.getsize(left)
    rc, lines = start_refused("--user", "nobody", "--trace", left)
    check(rc == 1 and len(lines) == 1 and "mode 0644 lets other users read it" in lines[0]
          and os.path.getsize(left) == size,
          f"a trace left readable by others (0644): refused, not appended to (exit {rc}, {lines})")

    # 5. tcp mode: nothing framed, yet no NTLMSSP either.
    tr = os.path.join(base, "tcp.pcap")
    px = Proxy(smb.addr, "--mode", "tcp", "--trace", tr)
    smb.smbclient(px.port, cmd="ls")
    px.wait_log(r" end=")
    px.stop()
    raw = open(tr, "rb").read()
    check(len(pcap_records(tr)) > 0 and b"NTLMSSP\0" not in raw,
          f"--mode tcp: no NTLMSSP message in the trace ({len(raw)} bytes)")
    smb.stop()

    # 6. Records follow the bytes, not the claim. The clients open with
    # the WRITE itself: NOT_SMB has it forwarded (and traced) all the same.
    def drain(c):
        while c.recv(65536):
            pass
    srv = Server(drain)
    tr = os.path.join(base, "amp.pcap")
    px = Proxy(srv.addr, "--trace", tr, *NOT_SMB, stats=True)
    conns = 50
    for _ in range(conns):
        c = socket.create_connection(("127.0.0.1", px.port), timeout=10)
        c.sendall(write_claim(0xFFFFFF, 100))
        c.close()
    px.wait_log(r" end=", count=conns, timeout=30)
    px.stop()
    n, size = len(pcap_records(tr)), os.path.getsize(tr)
    check(n <= conns * 6, f"{conns} connections, each a WRITE claiming a 16 MiB frame and 100 bytes of it "
          f"({len(write_claim(0xFFFFFF, 100))} bytes sent): {n} records, {size} bytes of trace")

    tr = os.path.join(base, "amp2.pcap")
    px = Proxy(srv.addr, "--trace", tr, *NOT_SMB)
    msg = write_claim(0xFFFFFF, 200000)
    c = socket.create_connection(("127.0.0.1", px.port), timeout=10)
    c.sendall(msg)
    c.close()
    px.wait_log(r" end=")
    px.stop()
    data = [r for r in pcap_records(tr) if struct.unpack_from(">H", r[2], 22)[0] == px.port and r[1] > 40]
    want = math.ceil(len(msg) / SEG_MAX)
    expert = tshark(tr, px.port, "-q", "-z", "expert,warn")
    check(len(data) == want and not re.search(r"not captured|overlap", expert, re.I),
          f"a WRITE claiming 16 MiB, {len(msg)} bytes of it sent: {len(data)} data records "
          f"(the bytes fill {want} segments), none missing for tshark")
    srv.close()


if __name__ == "__main__":
    run(main, alarm=300)
