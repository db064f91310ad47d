"""smbsplice run as an unprivileged user never splices through small pipes.

Without CAP_SYS_RESOURCE, once a user's pipes hold more than
/proc/sys/fs/pipe-user-pages-soft pages (64 MiB by default), the kernel
makes new pipes of two pages and will not grow them: every stream past
that point would be spliced 8 KiB at a time. So smbsplice, started as
`nobody`, caps --max-pipes at what the limit allows (64 pipes of 1 MiB)
and says so in one line; 100 bulk streams at once then use at most 64
pipes, the rest are copied, and every byte arrives. A second smbsplice of
the same user, while the first still holds its 64 pipes, gets small pipes
from the kernel: it closes them unused, counts them, says so, and copies
instead.

The streams are SMB2 READ responses of 1 MiB, spliced by the framer's
decision (--read-threshold 64K), so every stream wants a pipe whatever the
read sizes on a busy machine."""
import hashlib
import pwd
import re
import socket
import struct
import threading
import time

from harness import NO_LOGIN, NOT_SMB, Proxy, Server, check, metric, recv_hash_n, run, scrape

STREAMS = 100
FRAMES = 4
DATA = 1 << 20
STALL = 1.5  # clients wait this long before reading: pipes fill and are held


def read_response(i):
    """One Direct TCP frame: an SMB2 READ response carrying DATA bytes."""
    hdr = bytearray(64)
    hdr[0:4] = b"\xfeSMB"
    struct.pack_into("<HH", hdr, 4, 64, 1)
    struct.pack_into("<HHI", hdr, 12, 8, 1, 1)  # READ, credits, response
    struct.pack_into("<Q", hdr, 24, i)
    body = struct.pack("<BBBBIII", 17, 0, 80, 0, DATA, 0, 0)
    data = bytes([i & 0xff]) * DATA
    msg = bytes(hdr) + body + data
    return struct.pack(">I", len(msg)) + msg


STREAM = b"".join(read_response(i) for i in range(FRAMES))
SIZE = len(STREAM)


def source(c):
    """Send the READ responses once the client's first byte came."""
    c.recv(1)
    c.sendall(STREAM)
    c.shutdown(socket.SHUT_WR)
    c.recv(1)


def pipe_pages_soft():
    with open("/proc/sys/fs/pipe-user-pages-soft") as f:
        return int(f.read())


def connect_small(px):
    """A client with an Ethernet MSS and a small receive buffer: smbsplice's
    socket to it fills after a few hundred KiB (on loopback's 64 KiB MSS
    the kernel would queue a whole stream), so a stalled client holds its
    pipe, as a stalled client on a real network does."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1460)
    s.settimeout(60)
    s.connect(("127.0.0.1", px.port))
    return s


def streams(px, n, results, stall=STALL):
    def one(i):
        s = connect_small(px)
        s.sendall(b"\0")
        time.sleep(stall)
        results[i] = recv_hash_n(s, SIZE + 1)
        s.close()

    ts = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in ts:
        t.start()
    return ts


def main():
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        print("SKIP: no user 'nobody' to run smbsplice as", flush=True)
        raise SystemExit(77)
    soft = pipe_pages_soft()
    fit = soft // 256  # pages in a 1 MiB pipe
    want = (SIZE, hashlib.sha256(STREAM).hexdigest())
    srv = Server(source, backlog=256)

    px = Proxy(srv.addr, "--read-threshold", "64K", *NOT_SMB, *NO_LOGIN, stats=True, user="nobody")
    m = re.search(r"--max-pipes 1024 lowered to (\d+)", px.log())
    check(m and int(m.group(1)) == fit,
          f"as nobody: one line at start caps --max-pipes at {fit} (pipe-user-pages-soft {soft})")
    results = [None] * STREAMS
    ts = streams(px, STREAMS, results)
    time.sleep(STALL * 0.8)
    mid = scrape(px.stats_port)
    for t in ts:
        t.join(60)
    check(all(r == want for r in results), f"{STREAMS} streams of {SIZE >> 20} MiB at once: every byte arrived")
    open_mid = metric(mid, "smbsplice_pipes_open")
    check(0 < open_mid <= fit, f"at most {fit} pipes open while {STREAMS} streams wait ({open_mid:.0f})")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_pipe_denied_total") > 0, "streams past the cap were copied "
          f"({metric(m, 'smbsplice_pipe_denied_total'):.0f} pipes denied)")
    check(metric(m, "smbsplice_pipe_small_total") == 0, "no pipe came out small")
    spliced = metric(m, "smbsplice_bytes_total", direction="to_client", path="splice")
    check(spliced > 0, f"the capped pipes still spliced ({spliced / 2**20:.0f} MiB)")

    # The first daemon keeps its pipes open a while for reuse: the user's
    # pages are spent, and the second one's pipes come out small.
    px2 = Proxy(srv.addr, "--read-threshold", "64K", *NOT_SMB, *NO_LOGIN, stats=True, user="nobody")
    results = [None] * 4
    for t in streams(px2, 4, results):
        t.join(60)
    check(all(r == want for r in results), "a second daemon of the same user: every byte arrived")
    m2 = scrape(px2.stats_port)
    small = metric(m2, "smbsplice_pipe_small_total")
    check(small > 0, f"... its small pipes were refused and counted ({small:.0f})")
    check(metric(m2, "smbsplice_pipes_open") == 0, "... none of them was kept")
    px2.wait_log(r"not --pipe-size")  # written by the log's own thread
    check("not --pipe-size" in px2.log() and "pipe-user-pages-soft" in px2.log(),
          "... and it said why, once, with what to change")
    copied = metric(m2, "smbsplice_bytes_total", direction="to_client", path="copy")
    check(copied >= 4 * SIZE, f"... the copy pump served instead ({copied / 2**20:.0f} MiB)")
    px2.stop()
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main, alarm=300)
