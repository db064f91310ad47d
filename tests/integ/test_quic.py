"""SMB over QUIC: a quic: listener in front of TCP backends, driven by an
independent client (smbqc: quic-go 0.29 and go-smb2, written apart from
smbsplice's ngtcp2).

- nc mode (a QUIC netcat, ALPN smb) through smbsplice --mode tcp to a TCP
  echo backend: 0 B, 1 MiB and 64 MiB byte-exact (sha256), the client's
  half-close (its FIN after its last byte, the echo still coming back);
  the backend's half-close (its FIN while the client still sends); the
  backend's reset resets the stream.
- a drain keeps a QUIC connection to its end (SIGUSR2:
  test_quic_handover.py); a
  client past --max-conns is not served.
- put and get through smbsplice (smb mode) to a real smbd (with --trace:
  tshark decodes from the trace every SMB2 message counted), signed, and
  sealed on a share that demands encryption, byte-exact.
- garbage datagrams (random bytes, truncated Initials, short headers for
  no connection, an Initial below 1200 bytes) make no connection, no
  conn line and no growth of the daemon's memory, and a client after
  them is served.
- a client offering another ALPN is refused with alert 120.
- ctl drain and resume hold and release a QUIC listener.
- ctl conns shows a QUIC client's stream as a connection from its UDP
  address, with its QUIC figures (version 1, the path with the client's
  port, 0 < RTT < 1 s, cwnd > 0, bytes in flight, packets lost) in text,
  --json and ctl conn ID; after smbqc -rebind-after moves the client to a
  new UDP port, the path's remote address shows the new port.
- a reload reads the certificate again (a renewal over the same files);
  a reload that removes a QUIC listener lets its connection finish.
- a stream that moved 16 MiB and is then quiet gives its rings' pages
  back (the daemon's resident memory falls to where it was).
- the closing period: a client whose copy of our CONNECTION_CLOSE was
  lost gets it again at its next packets (the 1st, 2nd, 4th...), and
  ends then rather than at its idle timeout; no reset, no new connection.
- --check: a missing certificate, a key that is not the certificate's,
  quic-cert on a TCP listener and a congestion control QUIC has not are
  each one line and exit status 2.

smbqc is found at $SMBQC, else at tests/quic/bin/smbqc of the build; the
test is skipped (77) with one line when the daemon was built without
QUIC or smbqc is missing.
"""
import json
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

from harness import (SMBSPLICE, SRCDIR, TMPDIR, Proxy, Samba, Server, check, file_sha256, free_port, metric,
                     need, random_file, run, scrape, scrape_text, wait_for, SANITIZED)
from test_trace import counted, messages

BUILDDIR = os.environ.get("BUILDDIR", SRCDIR)
SMBQC = os.environ.get("SMBQC", os.path.join(BUILDDIR, "tests/quic/bin/smbqc"))
NAME = "smb.test"


def skip(why):
    print(f"SKIP: {why}", flush=True)
    raise SystemExit(77)


def quic_built():
    """Whether this smbsplice was built with QUIC: a build without it says
    so in one line at --check."""
    r = subprocess.run([SMBSPLICE, "--check", "--listen", "quic:127.0.0.1:1", "--backend", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    return "built without QUIC" not in r.stderr


def certtool(*args):
    subprocess.run(["certtool", *args], check=True, capture_output=True, timeout=60)


def make_certs(d):
    """A CA, and an ECDSA P-256 server certificate for NAME (DNS SAN,
    Server Authentication EKU) signed by it; and a key of no certificate."""
    with open(os.path.join(d, "ca.tmpl"), "w") as f:
        f.write('cn = "smbsplice test CA"\nca\ncert_signing_key\nexpiration_days = 2\n')
    with open(os.path.join(d, "srv.tmpl"), "w") as f:
        f.write(f'cn = "{NAME}"\ndns_name = "{NAME}"\ntls_www_server\nsigning_key\nexpiration_days = 2\n')
    p = lambda n: os.path.join(d, n)  # noqa: E731
    for key in ("ca.key", "srv.key", "other.key"):
        certtool("--generate-privkey", "--key-type=ecdsa", "--curve=secp256r1", "--outfile", p(key))
    certtool("--generate-self-signed", "--load-privkey", p("ca.key"), "--template", p("ca.tmpl"),
             "--outfile", p("ca.pem"))
    certtool("--generate-certificate", "--load-privkey", p("srv.key"), "--load-ca-certificate", p("ca.pem"),
             "--load-ca-privkey", p("ca.key"), "--template", p("srv.tmpl"), "--outfile", p("srv.pem"))
    return p("ca.pem"), p("srv.pem"), p("srv.key"), p("other.key")


def quic_setup(*tools):
    """The start of every QUIC test: skip (77, one line) without QUIC in
    this build or without smbqc; need certtool and each (program, package)
    of tools; make TMPDIR and the certificates in it (make_certs)."""
    if not quic_built():
        skip("smbsplice was built without QUIC (configure says \"QUIC: no\"): install libngtcp2-dev "
             "libngtcp2-crypto-gnutls-dev libgnutls28-dev and rebuild")
    if not os.access(SMBQC, os.X_OK):
        skip(f"smbqc not found at {SMBQC} (set SMBQC, or build tests/quic with golang-go and quic-go)")
    need("certtool", "gnutls-bin")
    for prog, package in tools:
        need(prog, package)
    os.makedirs(TMPDIR, exist_ok=True)
    return make_certs(TMPDIR)


class Quic:
    """One quic: listener on a free UDP port, with its smbqc."""

    def __init__(self, backend, certs, *args):
        self.ca, cert, key, _ = certs
        self.port = free_udp_port()
        self.control = os.path.join(TMPDIR, f"ctl-{self.port}")
        self.px = Proxy(None, "--listen", f"quic:127.0.0.1:{self.port}", "--backend", backend,
                        "--quic-cert", cert, "--quic-key", key, "--control", self.control, *args,
                        listen=False, stats=True)

    def smbqc(self, *args, stdin=None, stdout=subprocess.PIPE, timeout=120):
        argv = [SMBQC, "-addr", f"127.0.0.1:{self.port}", "-name", NAME, "-ca", self.ca, *args]
        return subprocess.run(argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=timeout)

    def conns(self):
        r = subprocess.run([SMBSPLICE, "ctl", "--control", self.control, "conns", "--json"], capture_output=True,
                           text=True, timeout=30)
        return json.loads(r.stdout)["conns"]


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def echo(c):
    """The echo backend: every byte back, then its FIN after the client's."""
    while True:
        d = c.recv(1 << 20)
        if not d:
            break
        c.sendall(d)
    c.shutdown(socket.SHUT_WR)


def nc_exact(q, size, label):
    """size bytes through nc mode and back from the echo, byte-exact."""
    src = os.path.join(TMPDIR, f"nc-{size}.in")
    with open(src, "wb") as f:
        f.write(os.urandom(size))
    out = os.path.join(TMPDIR, f"nc-{size}.out")
    t0 = time.monotonic()
    with open(src, "rb") as i, open(out, "wb") as o:
        r = q.smbqc("nc", stdin=i, stdout=o)
    secs = time.monotonic() - t0
    check(r.returncode == 0, f"nc {label}: smbqc exits 0 ({r.stderr.decode().strip()[-200:]})")
    check(file_sha256(out) == file_sha256(src) and os.path.getsize(out) == size,
          f"nc {label}: the echo came back byte-exact over the client's half-close ({size / secs / 1e6:.0f} MB/s)")
    os.unlink(src)
    os.unlink(out)


def test_nc(certs):
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp", "--congestion", "client:bbr")
    for size, label in ((0, "0 B"), (1 << 20, "1 MiB"), (64 << 20, "64 MiB")):
        nc_exact(q, size, label)
    lines = q.px.wait_log(r"^.* conn 127\.0\.0\.1:\d+ -> .* end=fin .*$", count=3)
    check(any("c2s=67108864 " in l and "s2c=67108864 " in l for l in lines),
          "the end line counts the 64 MiB stream both ways")
    test_ctl(q)
    test_garbage(q)
    test_alpn(q)
    q.px.stop()
    srv.close()


def test_backend_fin(certs):
    """The backend's FIN reaches the client while the client's side of the
    stream is still open: the stream is half-closed the other way. (smbqc's
    nc ends at the server's FIN, so what the client would send after it is
    not tested here.)"""
    got = []

    def read_then_greet(c):
        n = 0
        while n < 100000:
            d = c.recv(1 << 20)
            if not d:
                break
            n += len(d)
        got.append(n)
        c.sendall(b"hello\n")
        c.shutdown(socket.SHUT_WR)
        while c.recv(1 << 20):
            pass

    srv = Server(read_then_greet)
    q = Quic(srv.addr, certs, "--mode", "tcp")
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(os.urandom(100000))
    p.stdin.flush()
    try:
        out = p.stdout.read()
        rc = p.wait(timeout=30)
    finally:
        p.stdin.close()
        p.stderr.close()
    check(got == [100000], f"the client's 100,000 bytes reach the backend ({got})")
    check(rc == 0 and out == b"hello\n",
          f"the backend's bytes and its FIN reach the client while the client's stdin is open ({rc}, {out[:20]!r})")
    q.px.stop()
    srv.close()


def test_backend_reset(certs):
    """A backend that resets while the client still sends: the stream is
    reset, not ended with a FIN a client would take for a clean end."""
    def reset_after_a_byte(c):
        c.recv(1)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    srv = Server(reset_after_a_byte)
    q = Quic(srv.addr, certs, "--mode", "tcp")
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(b"x")
    p.stdin.flush()
    try:
        rc = p.wait(timeout=30)
        err = p.stderr.read().decode()
    finally:
        p.stdin.close()
    check(rc == 4, f"the client's stream fails (exit 4) when the backend resets ({rc}: {err.strip()[-120:]})")
    q.px.wait_log(r"^.* conn .* end=rst .*$")
    q.px.stop()
    srv.close()


def test_config_ipv6(certs):
    """A quic listener from a config file, on IPv6 (quic:[::1]:PORT)."""
    ca, cert, key, _ = certs
    srv = Server(echo)
    s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s6.bind(("::1", 0))
    port = s6.getsockname()[1]
    s6.close()
    conf = os.path.join(TMPDIR, "quic6.conf")
    with open(conf, "w") as f:
        f.write(f"[files6]\nlisten = quic:[::1]:{port}\nquic-cert = {cert}\nquic-key = {key}\n"
                f"backend = {srv.addr}\nmode = tcp\n")
    r = subprocess.run([SMBSPLICE, "--check", "-c", conf], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"--check -c takes a quic listener section ({r.stderr.strip()})")
    px = Proxy(None, "-c", conf, listen=False)
    data = os.urandom(1 << 20)
    r = subprocess.run([SMBQC, "-addr", f"[::1]:{port}", "-name", NAME, "-ca", ca, "nc"], input=data,
                       capture_output=True, timeout=60)
    check(r.returncode == 0 and r.stdout == data, f"1 MiB over quic:[::1]:{port} from a config file, byte-exact")
    px.wait_log(r"^.* conn \[::1\]:\d+ -> .* listener=files6 .*end=fin .*$")
    px.stop()
    srv.close()


def test_no_stream(certs):
    """A client that completes the handshake and opens no stream holds its
    place only for --handshake-timeout: our keepalive PINGs would keep
    its connection from ever going idle."""
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp", "--handshake-timeout", "1")
    t0 = time.monotonic()
    # quic-go opens the stream with its first byte: none is sent.
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        rc = p.wait(timeout=15)
    finally:
        p.stdin.close()
    secs = time.monotonic() - t0
    check(rc != 0 and secs < 10, f"a QUIC connection with no stream is closed after --handshake-timeout 1 ({secs:.1f} s)")
    q.px.wait_log(r"quic 127\.0\.0\.1:\d+: listener main: no stream within 1s \(--handshake-timeout\): closed")
    q.px.stop()
    srv.close()


class Relay:
    """A UDP relay between one QUIC client and the listener, that can stop
    carrying packets either way (a path that fails) and remembers what it
    dropped and the IDs the client names in its short-header packets
    (dcid: the last one)."""

    def __init__(self, port):
        self.down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the client's side
        self.down.bind(("127.0.0.1", 0))
        self.up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the listener's side
        self.up.connect(("127.0.0.1", port))
        self.port = self.down.getsockname()[1]
        self.client, self.cut, self.dropped, self.dcids = None, False, [], set()
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        sel = selectors.DefaultSelector()
        sel.register(self.down, selectors.EVENT_READ)
        sel.register(self.up, selectors.EVENT_READ)
        while not self.stop:
            for key, _ in sel.select(0.1):
                d, frm = key.fileobj.recvfrom(4096)
                if key.fileobj is self.down:
                    self.client = frm
                    if d[0] & 0x80 == 0 and len(d) > 19:
                        self.dcids.add(d[1:19])
                        self.dcid = d[1:19]  # the one in use (others may be retired)
                    if not self.cut:
                        self.up.send(d)
                elif self.cut:
                    self.dropped.append(d)
                elif self.client:
                    self.down.sendto(d, self.client)

    def close(self):
        self.stop = True
        self.t.join(5)
        self.down.close()
        self.up.close()


def test_closing_period(certs):
    """Our CONNECTION_CLOSE lost on the way: the client's next packets get
    it again (the 1st, 2nd, 4th...), so it ends at once, not at its idle
    timeout; and packets for the closed connection make nothing else."""
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp", "--handshake-timeout", "2")
    relay = Relay(q.port)
    # quic-go opens the stream with its first byte: none is sent, so the
    # listener closes the connection after --handshake-timeout.
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{relay.port}", "-name", NAME, "-ca", q.ca, "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for("the client's first short-header packet", lambda: relay.dcids, timeout=10)
        relay.cut = True  # the path fails both ways: the close is lost
        q.px.wait_log(r"quic 127\.0\.0\.1:\d+: listener main: no stream within 2s \(--handshake-timeout\): closed")
        wait_for("the listener's CONNECTION_CLOSE, dropped", lambda: relay.dropped, timeout=5)
        time.sleep(0.3)
        close = relay.dropped[-1]
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.settimeout(1)
        dcid = relay.dcid
        got = []
        for _ in range(4):
            probe.sendto(bytes([0x40]) + dcid + os.urandom(40), ("127.0.0.1", q.port))
            try:
                got.append(probe.recv(4096))
            except socket.timeout:
                got.append(None)
        probe.close()
        check(got[0] == close and got[1] == close and got[2] is None and got[3] == close,
              f"packets for the closed connection get its CONNECTION_CLOSE again, the 1st, 2nd and 4th "
              f"({[len(g) if g else None for g in got]}, the close {len(close)} bytes)")
        relay.dropped.clear()
        relay.cut = False  # the path is back: the client's next packets draw the close
        t0 = time.monotonic()
        p.stdin.write(b"x")  # a byte to send: a STREAM frame, sent again until acknowledged
        p.stdin.flush()
        rc = p.wait(timeout=40)
        secs = time.monotonic() - t0
        check(rc != 0 and secs < 5,
              f"the client learns of the close from its next packets, not at its 30 s idle timeout "
              f"({secs:.1f} s, exit {rc})")
        m = scrape(q.px.stats_port)
        resets = metric(m, "smbsplice_quic_stateless_resets_total", listener="main")
        shakes = metric(m, "smbsplice_quic_handshakes_total", listener="main")
        check(resets == 0 and shakes == 1,
              f"and none of its packets drew a reset or made a connection ({resets:.0f} resets, {shakes:.0f} "
              f"handshakes: the client's own is one)")
    finally:
        p.stdin.close()
        if p.poll() is None:
            p.kill()
        relay.close()
    q.px.stop()
    srv.close()


def test_lend(certs):
    """A stream that moved 16 MiB and is then quiet gives its rings' pages
    back: the daemon's memory falls to about where it was before."""
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp")
    pid = q.px.proc.pid
    # smbqc's idle timeout of 4 s: our keepalive PINGs every 2 s, so the
    # connection's timer fires soon after the stream goes quiet.
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "-idle", "4s", "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(b"x")
    p.stdin.flush()
    check(p.stdout.read(1) == b"x", "a QUIC stream is open")
    time.sleep(3)
    rss0 = rss_kib(pid)
    data = os.urandom(16 << 20)

    def feed():
        p.stdin.write(data)
        p.stdin.flush()
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    got, rss1 = b"", rss0
    while len(got) < len(data):
        chunk = p.stdout.read1(1 << 20)
        if not chunk:
            break
        got += chunk
        rss1 = max(rss1, rss_kib(pid))  # the peak while bytes move
    t.join(30)
    check(got == data, "16 MiB went through and came back byte-exact")
    # Given back: at least 6 of the rings' 8 MiB leave the peak, and (in
    # the plain build) the daemon is back near where it was; under
    # sanitizers their allocator keeps other memory of the transfer.
    back = (lambda low: rss1 - low >= 6144) if SANITIZED else (lambda low: low - rss0 < 2048)
    low, end = rss_kib(pid), time.monotonic() + 15
    while not back(low) and time.monotonic() < end:
        time.sleep(0.1)
        low = min(low, rss_kib(pid))
    check(rss1 - rss0 >= 6144 and back(low),
          f"the daemon held its rings while bytes moved and gave their pages back once quiet "
          f"({rss0} -> {rss1} -> {low} KiB)")
    p.stdin.close()
    p.wait(timeout=30)
    q.px.stop()
    srv.close()


def test_reload_cert(certs):
    """A reload reads the certificate again, even under the same file
    name (a renewal): new connections get the new one, a connection open
    keeps its own to its end."""
    ca, cert, key, _ = certs
    d2 = os.path.join(TMPDIR, "ca2")
    os.makedirs(d2, exist_ok=True)
    ca2, cert2, key2, _ = make_certs(d2)
    live_cert, live_key = os.path.join(TMPDIR, "live.pem"), os.path.join(TMPDIR, "live.key")
    shutil.copy(cert, live_cert)
    shutil.copy(key, live_key)
    srv = Server(echo)
    port = free_udp_port()
    conf = os.path.join(TMPDIR, "cert.conf")
    with open(conf, "w") as f:
        f.write(f"[q]\nlisten = quic:127.0.0.1:{port}\nquic-cert = {live_cert}\nquic-key = {live_key}\n"
                f"backend = {srv.addr}\nmode = tcp\n")
    px = Proxy(None, "-c", conf, listen=False)
    nc = lambda ca_: subprocess.run([SMBQC, "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca_, "-timeout", "3s",  # noqa: E731
                                     "nc"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30).returncode
    check(nc(ca) == 0 and nc(ca2) == 2, "the first certificate is served (CA 1 verifies it, CA 2 does not)")
    errf = os.path.join(TMPDIR, "reload-cert.err")
    with open(errf, "wb") as err:
        p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca, "nc"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    p.stdin.write(b"a")
    p.stdin.flush()
    got, said = p.stdout.read(1), ""
    if got != b"a":  # what the client saw: this failed once in a CI run here, unexplained
        with open(errf, errors="replace") as f:
            said = f" (got {got!r}; smbqc said: {f.read().strip()[-400:]})"
    check(got == b"a", f"a connection under the first certificate{said}")
    shutil.copy(cert2, live_cert)
    shutil.copy(key2, live_key)
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"reload: .* read, 1 listener")
    check(wait_for("the new certificate", lambda: nc(ca2) == 0, timeout=10) and nc(ca) == 2,
          "SIGHUP after a renewal over the same files: the new certificate is served")
    p.stdin.write(b"b")
    p.stdin.close()
    out = p.stdout.read()
    check(p.wait(timeout=30) == 0 and out == b"b", "the connection opened before ran on to its end")
    px.stop()
    srv.close()


def test_reload_remove(certs):
    """A reload that removes a QUIC listener: its connection runs on to its
    end, no new client is served, and the UDP port is let go after."""
    ca, cert, key, _ = certs
    srv = Server(echo)
    port = free_udp_port()
    conf = os.path.join(TMPDIR, "reload.conf")
    tcp = free_port()
    quic = f"[q]\nlisten = quic:127.0.0.1:{port}\nquic-cert = {cert}\nquic-key = {key}\nbackend = {srv.addr}\nmode = tcp\n"
    plain = f"[t]\nlisten = 127.0.0.1:{tcp}\nbackend = {srv.addr}\nmode = tcp\n"
    with open(conf, "w") as f:
        f.write(quic + plain)
    px = Proxy(None, "-c", conf, listen=False)
    argv = [SMBQC, "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca]
    p = subprocess.Popen(argv + ["nc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(b"a")
    p.stdin.flush()
    check(p.stdout.read(1) == b"a", "a QUIC connection through listener q")
    with open(conf, "w") as f:
        f.write(plain)
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"reload: .* read, 1 listener")
    r = subprocess.run(argv + ["-timeout", "2s", "nc"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    check(r.returncode == 2, "SIGHUP removed q: a new QUIC client is not served")
    p.stdin.write(b"b")
    p.stdin.close()
    out = p.stdout.read()
    check(p.wait(timeout=30) == 0 and out == b"b", f"... while its connection ran on to its end ({out!r})")

    def port_free():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
        finally:
            s.close()
    wait_for("the removed QUIC listener's socket is closed", port_free, timeout=10)
    check(True, "then its UDP port was let go")
    px.stop()
    srv.close()


def test_drain(certs):
    """SIGTERM's drain keeps a QUIC connection running to its end, then
    the process stops (QUIC across SIGUSR2: test_quic_handover.py)."""
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp")
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(b"a")
    p.stdin.flush()
    wait_for("the stream is a connection", lambda: q.conns(), timeout=10)
    q.px.proc.send_signal(signal.SIGTERM)
    q.px.wait_log(r"draining: listeners closed, 1 connections open")
    p.stdin.write(b"b")
    p.stdin.close()
    out = p.stdout.read()
    check(p.wait(timeout=30) == 0 and out == b"ab", f"the QUIC connection runs on through the drain ({out!r})")
    q.px.wait_log(r"drained: every connection has ended")
    check(q.px.proc.wait(timeout=30) == 0, "then the process stops, exit status 0")
    q.px.stop(check_fds=False)
    srv.close()


def test_max_conns(certs):
    """A QUIC connection counts against --max-conns from its first
    Initial: one past the cap gets no answer and no state, and is served
    once a place is free."""
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp", "--max-conns", "1")
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(b"a")
    p.stdin.flush()
    wait_for("the first stream is a connection", lambda: q.conns(), timeout=10)
    r = q.smbqc("-timeout", "2s", "nc", stdin=subprocess.DEVNULL)
    check(r.returncode == 2, f"a second QUIC client past --max-conns 1 is not served ({r.stderr.decode().strip()})")
    q.px.wait_log(r"quic 127\.0\.0\.1:\d+ refused by listener main: too many connections \(--max-conns 1\)")
    p.stdin.close()
    out = p.stdout.read()
    check(p.wait(timeout=30) == 0 and out == b"a", "the first runs on")
    r = wait_for("a place is free", lambda: (lambda r: r if r.returncode == 0 else None)(
        q.smbqc("-timeout", "2s", "nc", stdin=subprocess.DEVNULL)), timeout=20)
    check(r.returncode == 0, "once it has ended, a new client is served")
    q.px.stop()
    srv.close()


def test_ctl_drain(certs):
    """ctl drain holds a QUIC listener: no new client is served, the
    connection open runs on; ctl resume serves new clients again."""
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp")
    ctl = lambda *a: subprocess.run([SMBSPLICE, "ctl", "--control", q.control, *a], capture_output=True,  # noqa: E731
                                    text=True, timeout=30)
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(b"a")
    p.stdin.flush()
    check(p.stdout.read(1) == b"a", "a QUIC connection is open")
    r = ctl("drain", "main")
    check(r.returncode == 0, f"ctl drain main ({r.stdout.strip()} {r.stderr.strip()})")
    r = q.smbqc("-timeout", "2s", "nc", stdin=subprocess.DEVNULL)
    check(r.returncode == 2, "a held QUIC listener serves no new client")
    p.stdin.write(b"b")
    p.stdin.close()
    out = p.stdout.read()
    check(p.wait(timeout=30) == 0 and out == b"b", "... while the connection open runs on to its end")
    r = ctl("resume", "main")
    check(r.returncode == 0 and q.smbqc("-timeout", "3s", "nc", stdin=subprocess.DEVNULL).returncode == 0,
          "ctl resume main: new clients are served again")
    q.px.stop()
    srv.close()


def test_allow(certs):
    """--allow judges a QUIC client by its UDP address at its first
    Initial: one outside it gets no answer and no state."""
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp", "--allow", "192.0.2.0/24")
    r = q.smbqc("-timeout", "2s", "nc", stdin=subprocess.DEVNULL)
    check(r.returncode == 2, f"a QUIC client outside --allow is not served ({r.stderr.decode().strip()})")
    q.px.wait_log(r"quic 127\.0\.0\.1:\d+ refused by listener main: not in --allow")
    check(q.conns() == [], "and holds nothing")
    q.px.stop()
    srv.close()


def ctl_text(q, *args):
    r = subprocess.run([SMBSPLICE, "ctl", "--control", q.control, *args], capture_output=True, text=True,
                       timeout=30)
    return r.stdout


def quic_plausible(f, what):
    """A side's QUIC figures as ctl conns --json has them, plausible on
    loopback: QUIC v1, an RTT above 0 and below 1 s, a congestion window."""
    check(f is not None and f["version"] == 1 and 0 < f["rtt_ms"] < 1000 and f["cwnd"] > 0
          and f["bytes_in_flight"] >= 0 and f["lost_packets"] >= 0,
          f"{what}: QUIC v1, 0 < RTT < 1 s, cwnd > 0, bytes in flight and packets lost counted ({f})")


def quic_line(text, side, remote):
    """The line of ctl's text that gives a side's QUIC figures, with the
    remote address wanted."""
    return re.search(rf"^ *quic {side} version 0x00000001 local \S+ remote {re.escape(remote)} "
                     rf"rtt [0-9.]+ms cwnd [1-9]\d* in_flight \d+ lost \d+$", text, re.M)


def test_ctl(q):
    """A held stream is a row of ctl conns, from the client's UDP port,
    with its QUIC figures (version, path, RTT, cwnd, bytes in flight,
    packets lost) in ctl conns, --json and ctl conn ID; once the client
    moved to a new UDP port (smbqc -rebind-after), the path's remote
    address is the new one."""
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, "-rebind-after", "3",
                          "nc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(b"x")
    p.stdin.flush()
    rows = wait_for("ctl conns shows the QUIC stream", lambda: q.conns(), timeout=10)
    first = rows[0]["quic_client"]
    quic_plausible(first, "ctl conns --json: quic_client")
    check(first["local"] == f"127.0.0.1:{q.port}" and rows[0]["quic_backend"] is None,
          f"its path's local address is the listener's, and a TCP backend has no QUIC figures ({rows[0]})")
    check(quic_line(ctl_text(q, "conns"), "client", first["remote"]),
          "ctl conns (text) gives the QUIC figures under the connection's row")
    check(quic_line(ctl_text(q, "conn", str(rows[0]["id"])), "client", first["remote"]),
          "ctl conn ID gives them too")
    # 1 byte out and 1 back: the third moves the client to a new port.
    p.stdin.write(b"y")
    p.stdin.flush()
    moved = wait_for("ctl conns shows the client's new UDP port",
                     lambda: [r for r in q.conns() if r["quic_client"] and r["quic_client"]["remote"] != first["remote"]],
                     timeout=15)
    quic_plausible(moved[0]["quic_client"], "after the move")
    out, err = p.communicate(timeout=30)
    err = err.decode()
    m = re.search(r"quic connected \S+:(\d+) ->", err)
    mv = re.search(r"rebound udp \S+:(\d+) -> \S+:(\d+)", err)
    check(m is not None and len(rows) == 1 and rows[0]["client"] == f"127.0.0.1:{m.group(1)}"
          and first["remote"] == rows[0]["client"],
          f"ctl conns shows the QUIC client's stream as a connection from its UDP address, and the path's "
          f"remote port is the client's ({rows}; {err.strip()})")
    check(mv is not None and mv.group(1) == m.group(1)
          and moved[0]["quic_client"]["remote"] == f"127.0.0.1:{mv.group(2)}",
          f"after smbqc moved to a new UDP port the path shows it ({moved[0]['quic_client']}; {err.strip()})")
    check(out == b"xy", f"and its bytes came back ({out})")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def garbage(port, n):
    """n datagrams of each kind that must make no state."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    to = ("127.0.0.1", port)
    for i in range(n):
        s.sendto(os.urandom(1 + i % 1400), to)
        # a long header, QUIC v1 Initial, cut short
        s.sendto(bytes([0xc3, 0, 0, 0, 1, 8]) + os.urandom(8) + bytes([8]) + os.urandom(8 + i % 30), to)
        # a well-formed-looking Initial header, but 600 bytes: below 1200
        s.sendto(bytes([0xc3, 0, 0, 0, 1, 8]) + os.urandom(8) + bytes([8]) + os.urandom(8) + bytes([0, 0x42, 0x40])
                 + os.urandom(580), to)
        # a short header for no connection
        s.sendto(bytes([0x40]) + os.urandom(18 + 40), to)
    s.close()


def test_garbage(q):
    m0 = scrape(q.px.stats_port)
    accepted0 = metric(m0, "smbsplice_listener_connections_total", listener="main")
    garbage(q.port, 200)  # warm the allocator's caches, if any
    time.sleep(0.5)
    rss0 = rss_kib(q.px.proc.pid)
    garbage(q.port, 5000)
    time.sleep(1)
    rss1 = rss_kib(q.px.proc.pid)
    check(q.px.proc.poll() is None, "20,800 garbage datagrams: the daemon runs on")
    check(q.conns() == [], "they made no connection (ctl conns is empty)")
    m1 = scrape(q.px.stats_port)
    check(metric(m1, "smbsplice_listener_connections_total", listener="main") == accepted0,
          "the listener counted no connection for them")
    check(rss1 - rss0 < 1024, f"the daemon's memory did not grow with them ({rss0} -> {rss1} KiB)")
    r = q.smbqc("nc", stdin=subprocess.DEVNULL)
    check(r.returncode == 0, "a client after them is served")
    # A full-sized Initial of a version we do not speak: Version
    # Negotiation (version 0) offering QUIC v1, with the IDs swapped.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    dcid, scid = os.urandom(8), os.urandom(8)
    s.sendto(bytes([0xc0]) + b"\x1a\x2a\x3a\x4a" + bytes([8]) + dcid + bytes([8]) + scid + os.urandom(1200), ("127.0.0.1", q.port))
    vn = s.recv(2048)
    s.close()
    check(vn[1:5] == b"\0\0\0\0" and vn[6:14] == scid and vn[15:23] == dcid and b"\0\0\0\1" in vn[23:],
          "an Initial of an unknown version is answered with Version Negotiation offering v1")


def test_alpn(q):
    r = q.smbqc("-alpn", "nosmb", "nc", stdin=subprocess.DEVNULL)
    err = r.stderr.decode()
    check(r.returncode == 2 and "tls-alert=120" in err,
          f"a client offering ALPN nosmb is refused with alert 120, no_application_protocol ({err.strip()})")


def test_samba(certs):
    # go-smb2 1.1.0 cannot take an asynchronous answer (it reads the
    # AsyncId as a TreeId): Samba answers synchronously without aio, set
    # per share (a later [global] does not reach a share defined before).
    sync = "\taio read size = 0\n\taio write size = 0\n"
    os.makedirs(os.path.join(TMPDIR, "sealed"), exist_ok=True)
    smb = Samba(conf_extra=f"[share]\n{sync}[sealed]\n\tpath = {os.path.join(TMPDIR, 'sealed')}\n"
                f"\tread only = no\n\tsmb encrypt = required\n{sync}")
    trace = os.path.join(TMPDIR, "quic-trace.pcap")
    q = Quic(smb.addr, certs, "--trace", trace)
    cred = ("-user", "root", "-pass", Samba.password)
    src = os.path.join(smb.dir, "up.bin")
    want = random_file(src, 32)
    r = q.smbqc(*cred, "-sign", "put", src, "up.bin")
    check(r.returncode == 0, f"signed put of 32 MiB over QUIC through smbsplice ({r.stderr.decode().strip()[-300:]})")
    check(file_sha256(os.path.join(smb.share, "up.bin")) == want, "the file Samba wrote is byte-exact")
    r = q.smbqc(*cred, "-sign", "get", "up.bin", "-")
    check(r.returncode == 0 and f"sha256={want}" in r.stdout.decode(),
          f"signed get of it is byte-exact ({r.stdout.decode().strip()})")
    sealed = os.path.join(TMPDIR, "sealed", "s.bin")
    want = random_file(sealed, 8)
    r = q.smbqc(*cred, "-share", "sealed", "-seal", "get", "s.bin", "-")
    check(r.returncode == 0 and f"sha256={want}" in r.stdout.decode(),
          f"sealed get from a share that demands encryption is byte-exact ({r.stderr.decode().strip()[-300:]})")
    r = q.smbqc(*cred, "-share", "sealed", "-seal", "put", src, "s2.bin")
    check(r.returncode == 0 and file_sha256(os.path.join(TMPDIR, "sealed", "s2.bin")) == file_sha256(src),
          "sealed put is byte-exact")
    lines = q.px.wait_log(r"^.* conn .* end=\w+ .*$", count=4)
    check(all(" smb dialect=3.1.1 " in l for l in lines), "the end lines name dialect 3.1.1 (the smb-mode framer ran)")
    check(any("encrypted=yes" in l for l in lines), "and note the sealed sessions")
    # the counters of a connection's last messages may reach the page a
    # moment after its end line: read until two reads agree
    counts, prev, end = None, {}, time.monotonic() + 10
    while counts != prev and time.monotonic() < end:
        prev, counts = counts, counted(scrape_text(q.px.stats_port))
        time.sleep(0.3)
    q.px.stop()  # the trace's writer flushes at the end
    traced = messages(trace, q.port)
    diff = {k: (traced.get(k), counts.get(k)) for k in set(traced) | set(counts) if traced.get(k) != counts.get(k)}
    check(not diff and traced.get(("to_server", 8)) and traced.get(("to_server", 9)),
          f"--trace: tshark decodes from the trace the SMB2 messages the streams carried, as counted "
          f"(READ and WRITE among them; {sum(traced.values())} messages; traced, counted where they differ: {diff})")
    smb.stop()


def check_fails(args, want, what):
    r = subprocess.run([SMBSPLICE, "--check", *args], capture_output=True, text=True, timeout=30)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and re.search(want, lines[0]),
          f"--check {what}: one line, exit 2 ({r.returncode}: {r.stderr.strip()})")


def test_check(certs):
    _, cert, key, other = certs
    base = ["--listen", "quic:127.0.0.1:1", "--backend", "127.0.0.1:1"]
    check_fails(base + ["--quic-cert", cert + ".missing", "--quic-key", key], r"quic-cert .*missing: No such file",
                "a missing certificate")
    check_fails(base + ["--quic-cert", cert, "--quic-key", other], r"quic-key .* is not the key of quic-cert",
                "a key that is not the certificate's")
    check_fails(base + ["--quic-cert", cert], r"quic-key is required", "no key")
    check_fails(["--listen", "127.0.0.1:1", "--backend", "127.0.0.1:1", "--quic-cert", cert, "--quic-key", key],
                r"need a QUIC listen address", "quic-cert on a TCP listener")
    check_fails(base + ["--quic-cert", cert, "--quic-key", key, "--congestion", "client:vegas"],
                r"congestion client:vegas: a quic: listener takes reno, cubic, bbr or bbr2",
                "a congestion control QUIC has not (TCP's vegas)")
    r = subprocess.run([SMBSPLICE, "--check", "--listen", f"quic:[::1]:{free_port()}", "--backend", "127.0.0.1:1",
                        "--quic-cert", cert, "--quic-key", key, "--congestion", "client:bbr2"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and "configuration OK" in r.stdout,
          f"--check passes quic:[::1]:PORT with ngtcp2's bbr2 on the QUIC leg ({r.stderr.strip()})")


def main():
    certs = quic_setup(("tshark", "tshark"))
    test_check(certs)
    test_nc(certs)
    test_backend_fin(certs)
    test_backend_reset(certs)
    test_config_ipv6(certs)
    test_reload_remove(certs)
    test_reload_cert(certs)
    test_no_stream(certs)
    test_closing_period(certs)
    test_lend(certs)
    test_drain(certs)
    test_max_conns(certs)
    test_allow(certs)
    test_ctl_drain(certs)
    test_samba(certs)


if __name__ == "__main__":
    run(main)
