"""readstream - an SMB2 READ response stream, and the processes that serve
and read it, for tests that kill or stall a peer in the middle of one
(test_faults.py, test_slow.py).

The stream: after the client's first frame (request(), an SMB2 READ
request), the server sends READ responses, each a Direct TCP frame: the
4-byte prefix, the 64-byte SMB2 header (response flag, command READ,
MessageId = the frame's number), the READ response body (StructureSize
17, DataOffset 80, DataLength N) padded to offset 80, then N bytes of
data. The data of frame i is a window of a fixed random block that shifts
with i, so every frame differs and a lost, repeated or reordered stretch
shows. The request's Length field gives N; its Offset field how many
frames to send before a clean close (0: send for ever).

    python3 readstream.py serve

listens on a loopback port (printed first: "port P") and serves each
connection in a child process of its own, as smbd does, so that a test can
SIGKILL the server of one connection in the middle of its stream. Each
child prints, on the shared standard output, one line as it starts and
one as it ends:

    start PID T
    end PID reason T SENT

T is time.monotonic() (CLOCK_MONOTONIC, comparable across processes),
reason is "done" (every frame sent, socket closed cleanly), "reset"
(send() failed with ECONNRESET or EPIPE) or "error:..."; SENT is the bytes
sent before it.

    python3 readstream.py client PORT [--size N] [--frames K] [--rcvbuf B]
                                      [--pace BYTES,SECONDS [--fast BYTES]]
                                      [--stall-after BYTES]

connects, sends the request and reads the stream, checking every byte
(at most BYTES per recv() and a pause of SECONDS after each, with
--pace, once it has read the first --fast BYTES at full speed; it stops
reading after BYTES with --stall-after), and takes
commands on standard input, one a line: "stall" (stop reading),
"read" (read again), "reset" (SO_LINGER 0, then close: the peer gets a
reset) and "close". It prints "connected T", "got BYTES T" every 1 MiB
and at least every 100 ms (and after every read when paced), "stalled BYTES" once it has stopped
reading, and at the end one of

    end eof BYTES T            the stream ended cleanly
    end reset BYTES T          recv() failed with ECONNRESET
    end closed BYTES T         closed on command
    mismatch BYTES DETAIL      a byte differed from the stream (then exits 1)
"""
import os
import random
import select
import signal
import socket
import struct
import sys
import threading
import time

import smbgen

try:
    from harness import TestFailure
except ImportError:  # run alone
    TestFailure = RuntimeError

SIZE = 1 << 20     # data bytes per READ response
DATA_OFFSET = 80   # DataOffset: the 64-byte header and the body's 16 fixed bytes
HDR_LEN = 4 + DATA_OFFSET  # the bytes of a frame before its data
SEED = 0x5eed


class Stream:
    """The bytes of the stream for data size @size, frame by frame."""

    def __init__(self, size=SIZE, seed=SEED):
        self.size = size
        self.frame_len = HDR_LEN + size
        self.base = random.Random(seed ^ size).randbytes(size + 65536)
        self.view = memoryview(self.base)

    def header(self, i):
        hdr = smbgen.smb2_header(smbgen.READ, resp=True, msg_id=i, credits=1)
        body = struct.pack("<HBBIII", 17, DATA_OFFSET, 0, self.size, 0, 0)
        msg_len = len(hdr) + len(body) + self.size
        return smbgen.prefix(msg_len) + hdr + body

    def data(self, i):
        off = (i * 7919) % 65536
        return self.view[off:off + self.size]


def request(size=SIZE, frames=0):
    """The client's first frame: an SMB2 READ request for @size bytes,
    its Offset field carrying the frame count (0: endless)."""
    body = struct.pack("<HBBIQ16sIIIHHB", 49, DATA_OFFSET, 0, size, frames, bytes(16), 1, 0, 0, 0, 0, 0)
    msg = smbgen.smb2_header(smbgen.READ, msg_id=1) + body
    return smbgen.prefix(len(msg)) + msg


REQUEST_LEN = len(request())


def parse_request(b):
    if len(b) != REQUEST_LEN or b[4:8] != smbgen.SMB2:
        raise ValueError(f"not a READ request: {bytes(b[:16]).hex()}")
    size, frames = struct.unpack_from("<IQ", b, 4 + 64 + 4)
    return size, frames


class Checker:
    """Compares received bytes with the stream as they come."""

    def __init__(self, stream):
        self.s = stream
        self.total = 0
        self.i = 0
        self.off = 0
        self.hdr = stream.header(0)
        self.bad = None

    def feed(self, mv):
        """Check @mv, the next bytes received; False (and @bad set) at
        the first byte that differs."""
        while len(mv):
            if self.off < HDR_LEN:
                k = min(len(mv), HDR_LEN - self.off)
                ok = self.hdr.startswith(mv[:k], self.off)
            else:
                k = min(len(mv), self.s.frame_len - self.off)
                d = self.off - HDR_LEN
                ok = self.s.base.startswith(mv[:k], (self.i * 7919) % 65536 + d)
            if not ok:
                self.bad = (f"in the {k} bytes from byte {self.total} "
                            f"(frame {self.i}, offset {self.off} in it)")
                return False
            self.total += k
            self.off += k
            mv = mv[k:]
            if self.off == self.s.frame_len:
                self.i += 1
                self.off = 0
                self.hdr = self.s.header(self.i)
        return True


def out(line):
    os.write(1, (line + "\n").encode())


# --- server -------------------------------------------------------------------

def serve_one(c):
    sent = 0
    halt = []  # SIGUSR1: stop in the middle of a frame (see kill_child)
    signal.signal(signal.SIGUSR1, lambda *_: halt.append(True))
    try:
        req = bytearray()
        while len(req) < REQUEST_LEN:
            b = c.recv(REQUEST_LEN - len(req))
            if not b:
                raise ConnectionError("client closed before its request")
            req += b
        size, frames = parse_request(req)
        st = Stream(size)
        i = 0
        while not frames or i < frames:
            # Header and data in one sendmsg(), without copying the data:
            # the frames go out as fast as the kernel takes them, so a
            # kill almost never falls between two frames.
            parts = [memoryview(st.header(i)), st.data(i)]
            cut = bool(halt)
            if cut:  # told to stop at a frame's start: half of it first
                parts[1] = parts[1][:len(parts[1]) // 2]
            while parts:
                n = c.sendmsg(parts)
                sent += n
                while parts and n >= len(parts[0]):
                    n -= len(parts[0])
                    parts.pop(0)
                if parts:
                    parts[0] = parts[0][n:]
                if halt and (parts or cut):  # in the middle of a frame
                    out(f"halted {os.getpid()} {sent}")
                    time.sleep(3600)  # until the SIGKILL
            i += 1
        c.close()
        out(f"end {os.getpid()} done {time.monotonic():.6f} {sent}")
    except (ConnectionResetError, BrokenPipeError):
        out(f"end {os.getpid()} reset {time.monotonic():.6f} {sent}")
    except Exception as e:  # reported to the test
        why = f"error:{type(e).__name__}:{e}".replace(" ", "_").replace("\n", "_")
        out(f"end {os.getpid()} {why} {time.monotonic():.6f} {sent}")


def serve():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(256)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    out(f"port {ls.getsockname()[1]}")
    while True:
        c, _ = ls.accept()
        pid = os.fork()
        if pid == 0:
            ls.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            out(f"start {os.getpid()} {time.monotonic():.6f}")
            serve_one(c)
            os._exit(0)
        c.close()


# --- client -------------------------------------------------------------------

def client(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--size", type=int, default=SIZE)
    ap.add_argument("--frames", type=int, default=0)
    ap.add_argument("--rcvbuf", type=int, default=0)
    ap.add_argument("--pace", default="")
    ap.add_argument("--fast", type=int, default=0)
    ap.add_argument("--stall-after", type=int, default=0)
    a = ap.parse_args(argv)
    chunk, pause = (int(a.pace.split(",")[0]), float(a.pace.split(",")[1])) if a.pace else (1 << 20, 0)

    cmds = []
    cmd_ready = threading.Event()

    def read_cmds():
        for line in sys.stdin:
            cmds.append(line.strip())
            cmd_ready.set()
        cmds.append("eof")
        cmd_ready.set()

    threading.Thread(target=read_cmds, daemon=True).start()

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if a.rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
    s.connect(("127.0.0.1", a.port))
    s.sendall(request(a.size, a.frames))
    out(f"connected {time.monotonic():.6f}")
    chk = Checker(Stream(a.size))
    buf = bytearray(max(chunk, 1 << 20))
    mv = memoryview(buf)
    stalled = False
    reported, reported_at = 0, time.monotonic()
    s.setblocking(False)
    while True:
        while cmds:
            cmd = cmds.pop(0)
            if cmd == "stall":
                stalled = True
                out(f"stalled {chk.total}")
            elif cmd == "read":
                stalled = False
            elif cmd == "reset":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
                out(f"end closed {chk.total} {time.monotonic():.6f}")
                return 0
            elif cmd == "close":
                s.close()
                out(f"end closed {chk.total} {time.monotonic():.6f}")
                return 0
        now = time.monotonic()
        if stalled:
            cmd_ready.wait(0.01)
            cmd_ready.clear()
            continue
        if now - reported_at >= 0.1:
            # At least ten lines a second, bytes or none, so that the test
            # knows how much had come at any time.
            out(f"got {chk.total} {now:.6f}")
            reported, reported_at = chk.total, now
        r, _, _ = select.select([s], [], [], 0.01)
        if not r:
            continue
        paced = pause and chk.total >= a.fast
        want = chunk if paced else 1 << 20
        if a.stall_after:
            want = max(1, min(want, a.stall_after - chk.total))
        try:
            n = s.recv_into(mv, want)
        except BlockingIOError:
            continue
        except ConnectionResetError:
            out(f"end reset {chk.total} {time.monotonic():.6f}")
            return 0
        t = time.monotonic()
        if not n:
            out(f"end eof {chk.total} {t:.6f}")
            return 0
        if not chk.feed(mv[:n]):
            out(f"mismatch {chk.total} {chk.bad}")
            return 1
        if paced or chk.total - reported >= (1 << 20):
            out(f"got {chk.total} {t:.6f}")
            reported, reported_at = chk.total, t
        if a.stall_after and chk.total >= a.stall_after and not stalled:
            cmds.append("stall")
            a.stall_after = 0
        if paced:
            time.sleep(pause)


# --- the test's side -----------------------------------------------------------

class Proc:
    """A `readstream.py` child process; its output lines, collected by a
    thread, each as a list of words."""

    running = []

    def __init__(self, *args):
        import subprocess
        # A session of its own, so that stop() can take its children too.
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), *map(str, args)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                  start_new_session=True)
        Proc.running.append(self)
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append(line.split())
                self.cv.notify_all()
        with self.cv:
            self.lines.append(["exit"])
            self.cv.notify_all()

    def wait(self, pred, timeout, what):
        """The first line pred() accepts, waiting at most @timeout seconds;
        raises TestFailure naming @what."""
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for w in self.lines:
                    if pred(w):
                        return w
                left = end - time.monotonic()
                if left <= 0:
                    raise TestFailure(f"no {what} within {timeout} s; its last lines: {self.tail()}")
                self.cv.wait(left)

    def find(self, pred):
        with self.cv:
            return [w for w in self.lines if pred(w)]

    def tail(self, n=6):
        return [" ".join(w) for w in self.lines[-n:]]

    def send(self, cmd):
        try:
            self.p.stdin.write(cmd + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def kill(self):
        """SIGKILL, and wait for it to be gone; returns when it was sent."""
        t = time.monotonic()
        self.p.kill()
        self.p.wait()
        return t

    def stop(self):
        """Kill it and whatever children it left (its process group)."""
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()
        for f in (self.p.stdin, self.p.stdout):
            try:
                f.close()
            except OSError:
                pass
        if self in Proc.running:
            Proc.running.remove(self)

    @classmethod
    def stop_all(cls):
        for p in list(cls.running):
            p.stop()


class Backend(Proc):
    """`readstream.py serve`: a listener that serves each connection in a
    child process."""

    def __init__(self):
        super().__init__("serve")
        self.port = int(self.wait(lambda w: w[0] == "port", 10, "port line")[1])
        self.addr = f"127.0.0.1:{self.port}"
        self.taken = set()

    def next_child(self, timeout=10):
        """The pid of the next connection's child, once it has started."""
        w = self.wait(lambda w: w[0] == "start" and int(w[1]) not in self.taken, timeout, "new connection")
        self.taken.add(int(w[1]))
        return int(w[1])

    def child_end(self, pid, timeout):
        """(reason, time, bytes sent) from the child's end line."""
        w = self.wait(lambda w: w[0] == "end" and int(w[1]) == pid, timeout, f"end of server child {pid}")
        return w[2], float(w[3]), int(w[4])

    def kill_child(self, pid):
        """SIGKILL the child in the middle of a frame; returns when the kill
        was sent. A kill at full speed falls between two frames now and
        then (the kernel took a whole one), which is no cut: so the child
        is first told (SIGUSR1) to stop sending in the middle of one."""
        os.kill(pid, signal.SIGUSR1)
        self.wait(lambda w: w[0] == "halted" and int(w[1]) == pid, 10, f"server child {pid} halting mid-frame")
        t = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        return t


class Client(Proc):
    """`readstream.py client`."""

    def __init__(self, port, *args):
        super().__init__("client", port, *args)

    def got(self):
        """Bytes checked so far."""
        with self.cv:
            for w in reversed(self.lines):
                if w[0] in ("got", "stalled"):
                    return int(w[1])
        return 0

    def wait_got(self, n, timeout):
        return self.wait(lambda w: (w[0] == "got" and int(w[1]) >= n) or w[0] in ("end", "mismatch", "exit"),
                         timeout, f"{n} bytes")

    def bytes_at(self, t):
        """Bytes received by time @t, interpolated between the "got" lines
        and the "end" line."""
        pts = [(float(self.wait(lambda w: w[0] == "connected", 0, "connected")[1]), 0)]
        pts += [(float(w[2]), int(w[1])) for w in self.find(lambda w: w[0] == "got")]
        pts += [(float(w[3]), int(w[2])) for w in self.find(lambda w: w[0] == "end")]
        for (t0, b0), (t1, b1) in zip(pts, pts[1:]):
            if t0 <= t <= t1:
                return b0 + (b1 - b0) * (t - t0) / (t1 - t0) if t1 > t0 else b1
        if t < pts[0][0]:
            return 0
        raise TestFailure(f"a client printed nothing after {pts[-1][0]:.3f}, so its bytes at {t:.3f} are unknown")

    def rate(self, t0, t1):
        """Bytes per second between @t0 and @t1."""
        return (self.bytes_at(t1) - self.bytes_at(t0)) / (t1 - t0)

    def end(self, timeout):
        """The end line: ["end", how, bytes, time] or ["mismatch", ...]."""
        return self.wait(lambda w: w[0] in ("end", "mismatch", "exit"), timeout, "end of the stream")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "serve":
        serve()
    elif len(sys.argv) >= 2 and sys.argv[1] == "client":
        sys.exit(client(sys.argv[2:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
