"""SMB over QUIC, hostile input that test_quic.py (garbage, truncated
and short Initials, wrong ALPN) and test_quic_sec.py (a flood of forged
Initials, forged Retry tokens) do not cover:

- an empty UDP datagram: ngtcp2 asserted on it and the daemon aborted
  (found by tests/fuzz/fuzz_quic.c); now it is dropped and a client after
  it is served. A quic: backend (the client side) that gets an empty
  datagram from its server's address (a forwarder between it and a
  second smbsplice's quic: listener injects one before the server's
  first answer) drops it: it ended the dial with INTERNAL_ERROR.
- a ClientHello without the quic_transport_parameters extension (smbqc's
  first Initial, recorded, decrypted with its public Initial keys, the
  extension renamed, sealed again): ngtcp2 0.12 went on with the
  handshake and aborted the daemon at its first 1-RTT packet (found by
  fuzz_quic); now the client is closed with CRYPTO_ERROR 0x16d
  (missing_extension, RFC 9001 8.2), read from the server's Initial.
  Needs python3-cryptography, and says so when it is missing.
- replayed Initials: the independent client's (smbqc) real datagrams are
  recorded by a UDP forwarder between it and the daemon, and its first
  Initial is replayed 2,000 times while its 32 MiB get runs (half from
  the very address and port the daemon sees it at, half from 20 other
  ports) and 1,000 times after: the get stays byte-exact; a replay names
  the client's first connection ID, so while the connection lives it
  reaches that connection (which ignores it), and once it is gone at
  most one new handshake follows per replayed ID at a time (the rest of
  the replays reach it); those never finish, and --handshake-timeout
  frees them (then the same Initial cut to 1199, 600, 40 and 20 bytes
  begins none): ctl conns is empty afterwards, and the daemon's memory did
  not grow. With --quic-retry always, the replayed first Initial draws
  only Retries, and the replayed Initial that carried the Retry's token
  makes no connection from another port (the token binds the address
  and port; in the connection's closing period the replays draw its
  CONNECTION_CLOSE again instead) nor, from the client's own port, once
  the token is stale (10 s): INVALID_TOKEN closes, no handshake counted.
- a stream that lies about lengths: the same bytes are sent over TCP
  (a TCP listener) and over QUIC (smbqc nc, a quic: listener), both
  smb mode, to one recording backend: a Direct TCP prefix announcing
  16 MiB then 8 bytes and FIN, one announcing more than the first-frame
  cap (SMB_OPENING_MAX, 4096), one announcing 200 bytes then 20 and FIN
  (those three as the first frame: refused before any dial), and after a
  real NEGOTIATE a prefix announcing 16 MiB then a few bytes, a type byte
  that is no transport frame, a header whose StructureSize is 63, a
  WRITE whose DataOffset and Length point past its frame. Each must be
  handled alike over both: the same bytes reach the backend (or none),
  the same end= in the end line, the same reason logged; and the QUIC
  listener serves a client afterwards.
- Initials past the descriptor budget: with room for a connection's two
  descriptors but not the listener's third, admit() gave back a unit
  that budget_take() had already undone, so each such Initial let the
  budget drift one below what is held (and the limit be passed). Under
  a small open-files limit, k handshakes hold 3k of 3k+2, and three
  more Initials are refused with the gauge staying at 3k.

Switched off, each fails (tried when written): with admit()'s extra
budget_give() back, the gauge falls to 3k-1 at the first refusal; without ngq_peek()'s
empty-datagram check the daemon aborts at the first datagram ("the
daemon runs on" fails); without ngqc_read()'s, the quic: backend's dial
ends ("backend QUIC error 0x1") and the client's connection is reset;
without on_client_hello()'s check of the transport parameters the
daemon aborts (ngtcp2's assertion of a negotiated version); with --handshake-timeout 600 (the defence left
long) the warm-up replay's handshake is never freed and the replays after
the get begin none ("at most one handshake at a time": 0 new); with
--quic-retry off there is no Retry to replay (it fails there); with the
first-frame gate off on the QUIC listener only (--first-frame any), the
16 MiB first frame reaches the backend over QUIC (12 bytes) and not over
TCP: the comparison fails; sending the Initial whole instead of cut to
1199 bytes, a handshake is counted and the cut-Initial check fails.

smbqc is found at $SMBQC, else at tests/quic/bin/smbqc of the build;
skipped (77) with one line without QUIC or smbqc.
"""
import errno
import os
import re
import select
import socket
import struct
import subprocess
import threading
import time

import smbgen
from quicinitial import have_crypto, open_initial, rename_transport_params, seal_initial, varint
from harness import (Proxy, Samba, Server, SANITIZED, TestFailure, check, metric, random_file, recv_exact, run,
                     scrape)
from test_quic import NAME, SMBQC, Quic, echo, free_udp_port, quic_setup, rss_kib
from test_quic_sec import SYNC, quic_metrics


class Forwarder:
    """A UDP forwarder between a client and the daemon that records the
    client's datagrams; its back socket is the client's address as the
    daemon sees it."""

    def __init__(self, port, inject=None):
        self.inject = inject  # sent to the client before its first datagram is forwarded
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind(("127.0.0.1", 0))
        self.port = self.front.getsockname()[1]
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.connect(("127.0.0.1", port))
        self.got, self.client = [], None
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while True:
            # Once stopping, what the client already sent is relayed first:
            # its last datagram is often its CONNECTION_CLOSE, sent as it
            # exits; left behind, the daemon would hold the connection
            # until its idle timeout (30 s with smbqc's default), past the
            # test's end.
            stopping = self.stopping.is_set()
            r, _, _ = select.select([self.front, self.back], [], [], 0 if stopping else 0.1)
            if stopping and self.front not in r:
                return
            if self.front in r:
                d, self.client = self.front.recvfrom(65536)
                self.got.append(d)
                if self.inject is not None:
                    self.front.sendto(self.inject, self.client)
                    self.inject = None
                try:
                    with self.lock:
                        self.back.send(d)
                except ConnectionRefusedError:  # the daemon is gone
                    continue
            if self.back in r:
                try:
                    d = self.back.recv(65536)
                except ConnectionRefusedError:
                    continue
                if self.client:
                    self.front.sendto(d, self.client)

    def replay(self, d):
        """d from the client's own address and port."""
        with self.lock:
            self.back.send(d)

    def close(self):
        """Stop, after relaying what the client already sent (_run())."""
        self.stopping.set()
        self.t.join()
        self.front.close()
        self.back.close()


def initials(got):
    """The client's Initial datagrams (long header, type 0), in order."""
    return [d for d in got if len(d) >= 1200 and d[0] & 0xf0 == 0xc0]


def token_of(d):
    """An Initial's token (its length a one- or two-byte varint)."""
    at = 6 + d[5]
    at += 1 + d[at]
    n, w = (d[at] & 0x3f, 1) if d[at] < 0x40 else (((d[at] & 0x3f) << 8) | d[at + 1], 2)
    return d[at + w:at + w + n]


def spray(port, d, n, socks):
    """n copies of d, spread over the sockets, paced for the socket buffer."""
    for i in range(n):
        socks[i % len(socks)].sendto(d, ("127.0.0.1", port))
        if i % 100 == 99:
            time.sleep(0.01)


def udp_socks(n):
    return [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]


def wait_first(fw, what, n=1):
    end = time.monotonic() + 10
    while len(fw.got) < n and time.monotonic() < end:
        time.sleep(0.005)
    check(len(fw.got) >= n, f"the forwarder recorded {what}")


def test_empty_datagram(q):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(3):
        s.sendto(b"", ("127.0.0.1", q.port))
    s.close()
    time.sleep(0.3)
    check(q.px.proc.poll() is None, "three empty datagrams: the daemon runs on")
    r = q.smbqc("nc", stdin=subprocess.DEVNULL)
    check(r.returncode == 0, f"a client after them is served ({r.stderr.decode().strip()[-200:]})")


def without_transport_params(frames):
    """The Initial's frames with the ClientHello's quic_transport_parameters
    extension (57) renamed to an unknown one (56): as if it had none."""
    at = frames.index(b"\x06\x00")  # CRYPTO at offset 0
    n, at = varint(frames, at + 2)
    ch = rename_transport_params(frames[at:at + n])
    if ch is None:
        raise ValueError("no quic_transport_parameters in the ClientHello")
    return b"\x06\x00" + struct.pack(">H", 0x4000 | n) + ch  # the CRYPTO frame alone


def test_no_transport_params(q):
    """A ClientHello without QUIC transport parameters: ngtcp2 0.12 went on
    with the handshake and asserted at the first 1-RTT packet."""
    if not have_crypto():
        print("note: no python3-cryptography: the ClientHello without transport parameters is not tried")
        return
    fw = Forwarder(q.port)
    r = subprocess.run([SMBQC, "-addr", f"127.0.0.1:{fw.port}", "-name", NAME, "-ca", q.ca, "nc"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    fw.close()
    check(r.returncode == 0 and fw.got, f"a client through the forwarder is served ({r.returncode})")
    dcid, scid, _, _, frames = open_initial(fw.got[0], fw.got[0][6:6 + fw.got[0][5]], b"client in")
    dcid = os.urandom(len(dcid))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(seal_initial(dcid, scid, without_transport_params(frames)), ("127.0.0.1", q.port))
    try:
        ans = s.recv(2048)
    except socket.timeout:
        ans = b""
    s.close()
    time.sleep(0.3)
    check(q.px.proc.poll() is None, "a ClientHello without QUIC transport parameters: the daemon runs on")
    code = None
    if ans and ans[0] & 0xf0 == 0xc0:
        f = open_initial(ans, dcid, b"server in")[4]
        at = f.find(b"\x1c")
        if at >= 0:
            code = varint(f, at + 1)[0]
    check(code == 0x16d, f"and the client is closed with CRYPTO_ERROR 0x16d, TLS alert missing_extension "
          f"(RFC 9001 8.2) ({code if code is None else hex(code)})")


def test_backend_empty(certs):
    srv = Server(echo)
    far = Quic(srv.addr, certs, "--mode", "tcp")
    fw = Forwarder(far.port, inject=b"")
    near = Proxy(f"quic:127.0.0.1:{fw.port}", "--mode", "tcp", "--quic-name", NAME, "--quic-ca", far.ca)
    c = near.connect()
    c.sendall(b"hello")
    try:
        got = recv_exact(c, 5)
    except (OSError, TestFailure) as e:
        got = repr(e)
    c.close()
    check(got == b"hello" and "backend QUIC error" not in near.log(),
          f"a quic: backend sent an empty datagram from its server's address before the server's first answer "
          f"still connects, and the bytes go through ({got!r})")
    near.stop()
    fw.close()
    far.px.stop()
    srv.close()


def test_replay(certs, smb):
    timeout = 3
    q = Quic(smb.addr, certs, "--quic-retry", "off", "--handshake-timeout", str(timeout))
    test_empty_datagram(q)
    test_no_transport_params(q)
    src = os.path.join(smb.share, "replay.bin")
    want = random_file(src, 32)
    fw = Forwarder(q.port)
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{fw.port}", "-name", NAME, "-ca", q.ca, "-user", "root",
                          "-pass", Samba.password, "get", "replay.bin", "-"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_first(fw, "the client's first Initial")
    first = fw.got[0]
    check(len(first) >= 1200 and first[0] & 0xf0 == 0xc0, f"its first datagram is an Initial ({len(first)} bytes)")
    others = udp_socks(20)
    m0 = quic_metrics(q)
    for _ in range(10):  # 2,000 while the get runs
        for _ in range(100):
            fw.replay(first)
        spray(q.port, first, 100, others)
        time.sleep(0.02)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 0 and f"sha256={want}".encode() in out,
          f"2,000 replays of its first Initial while its get of 32 MiB runs: the get is byte-exact "
          f"({p.returncode}: {err.decode().strip()[-300:]})")
    m1 = quic_metrics(q)
    check(m1["handshakes"] - m0["handshakes"] == 0,
          f"while the connection lives, the replays reach it (they name its ID): no new handshake "
          f"({m0['handshakes']} -> {m1['handshakes']})")
    time.sleep(0.5)
    spray(q.port, first, 200, others)  # warm the allocator's caches, if any
    time.sleep(timeout + 1.5)
    rss0 = rss_kib(q.px.proc.pid)
    m2 = quic_metrics(q)
    for _ in range(5):  # 1,000 after it
        for _ in range(100):
            fw.replay(first)
        spray(q.port, first, 100, others)
        time.sleep(0.02)
    m3 = quic_metrics(q)
    new = m3["handshakes"] - m2["handshakes"]
    check(1 <= new <= 2, f"after it, 1,000 replays of one Initial begin at most one handshake at a time "
          f"(the rest reach it by its ID): {new} new")
    conns = q.conns()
    check(len(conns) == 0, f"the replays' handshakes open no stream, so no connection in ctl conns ({conns})")
    time.sleep(timeout + 1.5)
    rss1 = rss_kib(q.px.proc.pid)
    q.px.wait_log(rf"no stream within {timeout}s \(--handshake-timeout\): closed")
    m4 = quic_metrics(q)
    for cut in (1199, 600, 40, 20):  # the real Initial cut short: below 1200, in its header
        spray(q.port, first[:cut], 50, others)
    time.sleep(0.3)
    m4b = quic_metrics(q)
    check(m4b["handshakes"] == m4["handshakes"],
          f"the real Initial cut to 1199, 600, 40 and 20 bytes (200 datagrams) begins no handshake "
          f"({m4['handshakes']} -> {m4b['handshakes']})")
    spray(q.port, first, 1, others)  # a new one could begin only if the last was freed
    time.sleep(0.3)
    m5 = quic_metrics(q)
    check(m5["handshakes"] == m4["handshakes"] + 1,
          f"--handshake-timeout freed the replays' last connection: one more replay begins a new one "
          f"({m4['handshakes']} -> {m5['handshakes']})")
    grow = 1024 if not SANITIZED else 64 * 1024
    check(rss1 - rss0 < grow, f"the daemon's memory did not grow with the replays ({rss0} -> {rss1} KiB)")
    for s in others:
        s.close()
    fw.close()
    os.unlink(src)
    q.px.stop()


def test_replay_retry(certs, smb):
    q = Quic(smb.addr, certs, "--quic-retry", "always", "--handshake-timeout", "3")
    fw = Forwarder(q.port)
    r = subprocess.run([SMBQC, "-addr", f"127.0.0.1:{fw.port}", "-name", NAME, "-ca", q.ca, "-user", "root",
                        "-pass", Samba.password, "ls", "."], capture_output=True, timeout=60)
    check(r.returncode == 0, f"--quic-retry always: a client through the forwarder is served "
          f"({r.stderr.decode().strip()[-200:]})")
    ini = initials(fw.got)
    with_token = [d for d in ini if token_of(d)]
    check(ini and not token_of(ini[0]) and with_token,
          f"it sent an Initial without a token, then one with the Retry's ({len(ini)} Initials)")
    m0 = quic_metrics(q)
    others = udp_socks(10)
    seen = []
    for s in others:
        s.settimeout(0.5)
    spray(q.port, ini[0], 200, others)
    spray(q.port, with_token[0], 200, others)
    for s in others:
        try:
            while True:
                seen.append(s.recv(2048))
        except socket.timeout:
            pass
    m1 = quic_metrics(q)
    retries = [a for a in seen if a[0] & 0xf0 == 0xf0]
    # The token's Initial names the connection that just ended (its
    # destination ID is the one our Retry gave). While the daemon still
    # holds that ID in the connection's closing period, it answers with
    # the connection's CONNECTION_CLOSE again (a short header, at the
    # 1st, 2nd, 4th... replay), or nothing if the client closed first
    # (the daemon then drains, silent); otherwise, an INVALID_TOKEN
    # close. Which one depends on whether the ID was retired before the
    # end; none of them is a handshake.
    closes = [a for a in seen if a[0] & 0xf0 == 0xc0 or a[0] & 0xc0 == 0x40]
    check(m1["handshakes"] == m0["handshakes"] and m1["retries"] - m0["retries"] >= 100
          and len(closes) <= 200,
          f"replayed from other ports, the first Initial draws Retries ({m1['retries'] - m0['retries']}) and "
          f"the token's Initial closes ({len(closes)}), no handshake "
          f"({m0['handshakes']} -> {m1['handshakes']}); {len(retries)} Retries read")
    time.sleep(11)  # the token is good for 10 s
    for _ in range(50):
        fw.replay(with_token[0])
    time.sleep(0.5)
    m2 = quic_metrics(q)
    check(m2["handshakes"] == m0["handshakes"],
          f"replayed from the client's own port once stale, the token makes no connection "
          f"({m0['handshakes']} -> {m2['handshakes']})")
    check(q.conns() == [], "ctl conns is empty")
    for s in others:
        s.close()
    fw.close()
    q.px.stop()


def framed(b):
    return struct.pack(">I", len(b)) + b


def lies():
    """(name, bytes) of each lie, with the first-frame ones first."""
    hello = smbgen.hello(1).buf
    hdr = smbgen.smb2_header(smbgen.ECHO, msg_id=1)
    bad_size = b"\xfeSMB" + struct.pack("<H", 63) + hdr[6:]
    write_hdr = smbgen.smb2_header(smbgen.WRITE, msg_id=1)
    # WRITE body: StructureSize 49, DataOffset 0x70 (after header and
    # body), Length 1 MiB: past its 200-byte frame.
    write = write_hdr + struct.pack("<HHIQQQIIHHI", 49, 0x70, 1 << 20, 0, 0, 0, 0, 0, 0, 0, 0) + bytes(64)
    return [
        ("first frame announcing 16 MiB, 8 bytes, FIN", b"\x00\xff\xff\xff" + b"\xfeSMB" + bytes(4)),
        ("first frame announcing 4097 bytes (over the cap)", struct.pack(">I", 4097) + b"\xfeSMB" + bytes(100)),
        ("first frame announcing 200 bytes, 20, FIN", struct.pack(">I", 200) + b"\xfeSMB" + bytes(16)),
        ("a frame announcing 16 MiB after a NEGOTIATE, 70 bytes, FIN", hello + b"\x00\xff\xff\xff" + hdr[:66]),
        ("a type byte that is no transport frame", hello + b"\x01\x00\x00\x40" + hdr),
        ("an SMB2 header with StructureSize 63", hello + framed(bad_size + struct.pack("<HH", 4, 0))),
        ("a WRITE whose data lies past its frame", hello + framed(write)),
    ]


class Recorder:
    """The backend: records each connection's bytes until the client's
    FIN, then closes."""

    def __init__(self):
        self.got = []
        self.srv = Server(self._serve)

    def _serve(self, c):
        b = b""
        while (d := c.recv(65536)):
            b += d
        self.got.append(b)


END_RE = re.compile(r"conn (\S+) -> \S+ listener=(\S+) .*?end=(\S+)")


def ends(px, listener):
    return [m.group(3) for m in END_RE.finditer(px.log()) if m.group(2) == listener]


def via_tcp(px, b):
    """b over TCP, then FIN; the proxy may reset the connection at any
    point of it (a first frame it refuses), as it may a QUIC stream."""
    s = px.connect()
    try:
        s.sendall(b)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError, socket.timeout):
        pass
    except OSError as e:
        if e.errno != errno.ENOTCONN:  # reset before our shutdown
            raise
    s.close()


def test_lying_stream(certs):
    rec = Recorder()
    tcp = Proxy(rec.srv.addr, "--handshake-timeout", "3", stats=True)
    q = Quic(rec.srv.addr, certs, "--handshake-timeout", "3")
    for name, b in lies():
        results = []
        for way in ("tcp", "quic"):
            n0, e0 = len(rec.got), len(ends(tcp if way == "tcp" else q.px, "main"))
            if way == "tcp":
                via_tcp(tcp, b)
            else:
                subprocess.run([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "-timeout", "5s",
                                "nc"], input=b, capture_output=True, timeout=60)
            px = tcp if way == "tcp" else q.px
            px.wait_log(r"conn .* end=", count=e0 + 1)
            time.sleep(0.3)  # the backend's handler records after the FIN
            got = rec.got[n0] if len(rec.got) > n0 else None
            results.append((got, ends(px, "main")[e0]))
        (tb, te), (qb, qe) = results
        check(tb == qb and te == qe,
              f"{name}: over QUIC as over TCP: backend got {None if tb is None else len(tb)} / "
              f"{None if qb is None else len(qb)} bytes, end={te} / end={qe}")
    tlog, qlog = tcp.log(), q.px.log()
    for why in ("not an SMB transport frame (bad type byte)", "SMB2 header StructureSize is not 64",
                "WRITE request data past the end of the message"):
        check(why in tlog and why in qlog, f"the same reason is logged over both: {why}")
    hello = smbgen.hello(2).buf
    r = subprocess.run([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "nc"], input=hello,
                       capture_output=True, timeout=60)
    time.sleep(0.3)
    check(r.returncode == 0 and rec.got[-1] == hello and q.px.proc.poll() is None,
          f"the QUIC listener serves a client after the lies ({r.returncode})")
    tcp.stop()
    q.px.stop()
    rec.srv.close()


def fd_gauges(q):
    m = scrape(q.px.stats_port)
    return int(metric(m, "smbsplice_descriptors_used")), int(metric(m, "smbsplice_descriptors_limit"))


def wait_used(q, want):
    end = time.monotonic() + 10
    while (used := fd_gauges(q)[0]) != want and time.monotonic() < end:
        time.sleep(0.05)
    return used


def test_fd_budget(certs):
    """Initials refused for want of a descriptor give back what they took,
    no more: with room for a connection's two (the socketpair's client
    end, the backend's) but not the third (our end), admit() gave back a
    unit budget_take() had already undone, so that each such Initial let
    the budget drift by one below what is held, and past its limit."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        print("note: no python3-cryptography: the descriptor budget of refused Initials is not tried")
        return
    srv = Server(echo)
    for nofile in range(40, 46):  # a limit that leaves room for 2 more after k handshakes of 3
        q = Quic.__new__(Quic)
        q.ca, cert, key, _ = certs
        q.port = free_udp_port()
        q.px = Proxy(None, "--listen", f"quic:127.0.0.1:{q.port}", "--backend", srv.addr, "--quic-cert", cert,
                     "--quic-key", key, "--mode", "tcp", "--workers", "1", "--handshake-timeout", "30",
                     listen=False, stats=True, rlimit_nofile=nofile)
        used, limit = fd_gauges(q)
        if used == 0 and limit >= 5 and (limit - 2) % 3 == 0:
            break
        q.px.stop()
    else:
        raise TestFailure(f"no open-files limit in 40..45 gave a descriptor limit of 3k+2 ({limit})")
    fw = Forwarder(q.port)
    r = subprocess.run([SMBQC, "-addr", f"127.0.0.1:{fw.port}", "-name", NAME, "-ca", q.ca, "nc"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    fw.close()
    check(r.returncode == 0 and fw.got, f"a client through the forwarder is served ({r.returncode})")
    check(wait_used(q, 0) == 0, "its descriptors are given back")
    _, scid, _, _, frames = open_initial(fw.got[0], fw.got[0][6:6 + fw.got[0][5]], b"client in")
    at = frames.index(b"\x06\x00")  # the CRYPTO frame at offset 0: the ClientHello, without the padding
    n, end = varint(frames, at + 2)
    frames = frames[at:end + n]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    k = (limit - 2) // 3
    for _ in range(k):
        s.sendto(seal_initial(os.urandom(18), scid, frames), ("127.0.0.1", q.port))
    check(wait_used(q, 3 * k) == 3 * k, f"{k} handshakes hold 3 descriptors each: {3 * k} of {limit}")
    for i in range(3):
        s.sendto(seal_initial(os.urandom(18), scid, frames), ("127.0.0.1", q.port))
        q.px.wait_log(r"refused by listener main: out of descriptors", count=i + 1)
        used = fd_gauges(q)[0]
        check(used == 3 * k, f"Initial {i + 1} past the budget is refused and the budget stays {3 * k} ({used})")
    s.close()
    q.px.stop()
    srv.close()


def main():
    certs = quic_setup()
    test_backend_empty(certs)
    test_fd_budget(certs)
    test_lying_stream(certs)
    smb = Samba(conf_extra=f"[share]\n{SYNC}")
    test_replay(certs, smb)
    test_replay_retry(certs, smb)
    smb.stop()


if __name__ == "__main__":
    run(main)
