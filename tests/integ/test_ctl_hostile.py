"""`smbsplice ctl` against a hostile control socket (issue 28, item 5):
whatever sits at the control path (a fake socket, or a compromised
daemon) writes to root's terminal through it.

- control characters in an answer (OSC 0 window title, OSC 52
  clipboard, CSI, a C1 control in UTF-8 and as a raw byte, DEL, CR, an
  overlong and a surrogate UTF-8 form) come out escaped as \\xNN, on a
  terminal and through a pipe alike; newline, tab, é and € come out
  unchanged;
- an answer of 64 MiB is taken whole, one byte more is refused with one
  line naming the bound, exit 2;
- a peer that trickles a byte every 0.2 s, one that never answers, and
  one whose backlog is full (connect() waits) are given up on once
  --timeout has passed, with one line saying so, exit 2.

No daemon is started: the peers are this script's."""
import os
import select
import socket
import subprocess
import threading
import time

from harness import SMBSPLICE, TMPDIR, check, run

MIB = 1 << 20

HOSTILE = (b"ID W LISTENER\n"
           b"1 0 \x1b]0;pwned\x07 \x1b]52;c;aGVsbG8=\x07 \x1b[2J\x1b[31m"
           b" c1:\xc2\x9b raw:\x9b del:\x7f cr:\r overlong:\xe0\x80\x80 surrogate:\xed\xa0\x80"
           b" tab:\there caf\xc3\xa9 \xe2\x82\xac\n")
ESCAPED = (b"1 0 \\x1b]0;pwned\\x07 \\x1b]52;c;aGVsbG8=\\x07 \\x1b[2J\\x1b[31m"
           b" c1:\\xc2\\x9b raw:\\x9b del:\\x7f cr:\\x0d overlong:\\xe0\\x80\\x80 surrogate:\\xed\\xa0\\x80"
           b" tab:\there caf\xc3\xa9 \xe2\x82\xac\n")


class Peer:
    """A Unix socket at @path that answers every client with @serve(conn)
    in a thread of its own."""

    def __init__(self, path, serve, backlog=8):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(path)
        self.sock.listen(backlog)
        self.serve = serve
        self.path = path
        if serve:
            threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(conn,), daemon=True).start()

    def one(self, conn):
        try:
            conn.recv(256)
            self.serve(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.sock.close()
        os.unlink(self.path)


def ctl(path, *args, timeout=15):
    """`smbsplice ctl` through pipes: (exit status, stdout, stderr, seconds)."""
    t0 = time.monotonic()
    r = subprocess.run([SMBSPLICE, "ctl", "--control", path, *args], capture_output=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace"), time.monotonic() - t0


def ctl_tty(path, *args):
    """`smbsplice ctl` with a pseudo-terminal as its standard output, the
    terminal's output post-processing off (so \\n stays \\n): what reached
    the terminal."""
    import termios
    import tty

    master, slave = os.openpty()
    tty.setraw(slave, termios.TCSANOW)
    p = subprocess.Popen([SMBSPLICE, "ctl", "--control", path, *args], stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 10)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the client exited: its end is gone
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.wait(10)
    return p.returncode, out


def escapes(path):
    def serve(conn):
        conn.sendall(HOSTILE)

    peer = Peer(path, serve)
    rc, out = ctl_tty(path, "conns")
    check(rc == 0, f"on a terminal: exit 0 ({rc})")
    check(b"\x1b" not in out and b"\x07" not in out and b"\x9b" not in out and b"\x7f" not in out
          and b"\r" not in out, f"on a terminal: no ESC, BEL, C1, DEL or CR reached it: {out!r}")
    check(ESCAPED in out, f"on a terminal: each shown as \\xNN, newline, tab, é and € as they are: {out!r}")
    rc, out, err, _ = ctl(path, "conns")
    check(rc == 0 and out == HOSTILE.split(b"\n", 1)[0] + b"\n" + ESCAPED,
          f"through a pipe too (`ctl conns | grep` reaches the terminal all the same): {out!r} {err}")
    peer.close()


def bound(path):
    size = [64 * MIB]

    def serve(conn):
        conn.sendall(b"x" * size[0])

    peer = Peer(path, serve)
    rc, out, err, _ = ctl(path, "conns")
    check(rc == 0 and len(out) == 64 * MIB, f"an answer of 64 MiB is taken whole (exit {rc}, {len(out)} bytes) {err}")
    size[0] += 1
    rc, out, err, _ = ctl(path, "conns")
    check(rc == 2 and out == b"" and err == f"smbsplice ctl: {path}: answer longer than 64 MiB, refused\n",
          f"one byte more: refused, exit 2, nothing printed but one line: exit {rc}, {len(out)} bytes, {err!r}")
    peer.close()


def deadline(path):
    def trickle(conn):
        while True:
            conn.send(b"x")
            time.sleep(0.2)

    def silent(conn):
        time.sleep(30)

    want = f"smbsplice ctl: {path}: no whole answer within 2 s (--timeout)\n"
    for what, serve in (("a byte every 0.2 s", trickle), ("no answer", silent)):
        peer = Peer(path, serve)
        rc, out, err, secs = ctl(path, "--timeout", "2", "conns")
        check(rc == 2 and err == want and 1.9 < secs < 5,
              f"{what}: given up after --timeout 2 ({secs:.1f} s), exit {rc}: {err!r}")
        peer.close()
    # A listener that never accepts, its backlog full: connect() waits.
    peer = Peer(path, None, backlog=0)
    held = []
    for _ in range(4):
        s = socket.socket(socket.AF_UNIX)
        s.setblocking(False)
        try:
            s.connect(path)
        except BlockingIOError:
            s.close()
            break
        held.append(s)
    rc, out, err, secs = ctl(path, "--timeout", "2", "conns")
    check(rc == 2 and err == want and 1.9 < secs < 5,
          f"a full backlog ({len(held)} waiting): given up after --timeout 2 ({secs:.1f} s), exit {rc}: {err!r}")
    for s in held:
        s.close()
    peer.close()
    rc, _, err, _ = ctl(path, "--timeout", "0", "conns")
    check(rc == 2 and "--timeout 0: not a number of seconds from 1 to 86400" in err, f"--timeout 0 refused: {err!r}")


def main():
    path = os.path.join(TMPDIR, "control")
    escapes(path)
    bound(path)
    deadline(path)


if __name__ == "__main__":
    run(main)
