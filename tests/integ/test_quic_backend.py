"""SMB over QUIC, the client side: a quic: backend (`--backend
quic:HOST:PORT`, --quic-name, --quic-ca, --quic-pin), against an
independent SMB-over-QUIC server front (`quicrelay server`: quic-go 0.29,
written apart from smbsplice's ngtcp2) and against smbsplice's own quic:
listener.

- smbclient -> smbsplice (TCP listener, quic backend) -> quicrelay server
  -> smbd: get and put of 0 B, 1 MiB and 64 MiB byte-exact (sha256),
  signed and sealed (smbclient --client-protection=encrypt); a handover
  (SIGUSR2) is refused in one line.
- the gateway pair over QUIC end to end: smbclient -> smbsplice (TCP
  listener, quic backend, BBR on the QUIC leg) -> smbsplice (quic:
  listener) -> smbd, 64 MiB get and sealed put byte-exact.
- --mode tcp through to a TCP echo server: 0 B, 1 MiB, 64 MiB back
  byte-exact over the client's half-close; the server pinned by the
  SHA-256 of its certificate (--quic-pin).
- ctl conns (--json) and ctl conn ID show the quic: backend's QUIC
  figures: version 1, the path to quicrelay's port, 0 < RTT < 1 s,
  cwnd > 0, bytes in flight, packets lost.
- resets both ways: the server's (RESET_STREAM) resets the client; the
  client's reaches the server as RESET_STREAM, and its backend as a
  reset.
- a certificate of another CA, for another name, or not the pinned one is
  refused: one clear line, and the client is reset.
- a backend that never answers fails at --connect-timeout, the client
  reset; a UDP port with nothing behind it fails over to the next
  backend at once.
- health checks of quic: backends (--health-check smb and tcp): each
  probe is a QUIC dial (smbsplice's listener counts its handshakes); a
  QUIC server that stops is marked down with the reason and new clients
  reach the other; back on its port, up again; a certificate for another
  name and a server that never answers are down with their reasons; the
  probes leak no descriptor and leave no connection open at the server.
  With the connections holding the whole descriptor budget, a probe's
  dial that cannot take its two is no failure of the backend: it stays
  up (it was marked down with "out of descriptors" before).
- a stop (SIGINT) with a stream open tells the server at once: the far
  smbsplice's connection ends within 3 s (before, the dial was let go
  of in a loop never run again: never freed, and the server kept the
  connection until its idle timeout; the check failed).
- --check: quic-pin that is no SHA-256, quic-ca with no quic backend and a
  congestion control QUIC does not have are each one line.

Skipped (77) with one line when the daemon was built without QUIC or
quicrelay (tests/quic/bin of the build) is missing.
"""
import hashlib
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from harness import (CLEANUPS, SMBSPLICE, SRCDIR, TMPDIR, Proxy, Samba, Server, TestFailure, check, end_process,
                     file_sha256, metric, need, random_file, run, scrape, sh, wait_for)

BUILDDIR = os.environ.get("BUILDDIR", SRCDIR)
BIN = os.environ.get("QUIC_BIN", os.path.join(BUILDDIR, "tests", "quic", "bin"))
NAME = "smb.test"


def skip(why):
    print(f"SKIP: {why}", flush=True)
    sys.exit(77)


def quic_built():
    """Whether this smbsplice has QUIC: a build without it says so in one
    line at --check."""
    r = subprocess.run([SMBSPLICE, "--check", "--listen", "127.0.0.1:1", "--backend", "quic:127.0.0.1:1",
                        "--quic-pin", "00" * 32], capture_output=True, text=True, timeout=30)
    return "built without QUIC" not in r.stderr


def make_certs(d):
    """A CA, a server certificate for NAME (ECDSA P-256, DNS SAN, serverAuth)
    and a second, unrelated CA; the server certificate's SHA-256."""
    def key(name):
        sh("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{d}/{name}.key")

    for ca in ("ca", "otherca"):
        key(ca)
        sh("openssl", "req", "-x509", "-new", "-key", f"{d}/{ca}.key", "-out", f"{d}/{ca}.pem", "-days", "2",
           "-sha256", "-subj", f"/CN={ca}", "-addext", "basicConstraints=critical,CA:TRUE",
           "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    key("srv")
    sh("openssl", "req", "-new", "-key", f"{d}/srv.key", "-out", f"{d}/srv.csr", "-subj", f"/CN={NAME}")
    with open(f"{d}/srv.ext", "w") as f:
        f.write(f"subjectAltName=DNS:{NAME}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n")
    sh("openssl", "x509", "-req", "-in", f"{d}/srv.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
       "-CAcreateserial", "-out", f"{d}/srv.pem", "-days", "2", "-sha256", "-extfile", f"{d}/srv.ext")
    der = subprocess.run(["openssl", "x509", "-in", f"{d}/srv.pem", "-outform", "DER"], capture_output=True,
                         check=True, timeout=30).stdout
    return hashlib.sha256(der).hexdigest()


class Relay:
    """`quicrelay server` in front of a TCP address; its log in TMPDIR."""

    def __init__(self, certs, backend):
        self.port = free_udp_port()
        self.log = os.path.join(TMPDIR, f"quicrelay-{self.port}.log")
        self.f = open(self.log, "w")
        self.p = subprocess.Popen([os.path.join(BIN, "quicrelay"), "server", "-listen", f"127.0.0.1:{self.port}",
                                   "-backend", backend, "-cert", f"{certs}/srv.pem", "-key", f"{certs}/srv.key"],
                                  stdout=self.f, stderr=subprocess.STDOUT)
        CLEANUPS.append(self.stop)
        wait_for("quicrelay server ready", lambda: "listening on" in self.text() or self.p.poll() is not None)
        if self.p.poll() is not None:
            raise TestFailure(f"quicrelay server exited: {self.text()}")

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        end_process(self.p)
        self.f.close()


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def echo_server():
    """A TCP echo server on loopback (FIN answered with FIN): its port."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen()

    def serve(c):
        while (b := c.recv(1 << 16)):
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
        c.close()

    def accept():
        while True:
            c, _ = ls.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return ls.getsockname()[1]


def echo_exact(px, size, what):
    """size bytes to the echo and back through px, then the client's
    half-close: every byte back, then the FIN."""
    data = os.urandom(size)
    s = socket.create_connection(("127.0.0.1", px.port), timeout=60)

    def send():
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    h, n = hashlib.sha256(), 0
    while (b := s.recv(1 << 20)):
        h.update(b)
        n += len(b)
    t.join(30)
    s.close()
    check(n == size and h.hexdigest() == hashlib.sha256(data).hexdigest(),
          f"{what}: {size} bytes back byte-exact, then the FIN after the client's half-close")


def refused(px, reason, what):
    """A client of px is reset, and the log says why in one line."""
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", px.port), timeout=30)
    try:
        s.sendall(b"hello")
        got = s.recv(100)
        reset = False
    except (ConnectionResetError, BrokenPipeError):
        got, reset = b"", True
    secs = time.monotonic() - t0
    s.close()
    check(reset, f"{what}: the client is reset ({got!r})")
    lines = px.wait_log(rf"^.*{reason}.*$")
    check(len(lines) == 1 and "end=" in lines[0], f"{what}: one line says why: {lines}")
    return secs


def test_relay(certs, smb, pin):
    """smbclient -> smbsplice (quic backend) -> quicrelay server -> smbd."""
    relay = Relay(certs, smb.addr)
    px = Proxy(f"quic:127.0.0.1:{relay.port}", "--quic-name", NAME, "--quic-ca", f"{certs}/ca.pem")
    for mib in (0, 1, 64):
        local = os.path.join(smb.dir, f"l{mib}.bin")
        want = random_file(local, mib)
        smb.smbclient(px.port, "--client-protection=sign", cmd=f"put {local} s{mib}.bin")
        check(file_sha256(os.path.join(smb.share, f"s{mib}.bin")) == want, f"signed put of {mib} MiB byte-exact")
        got = os.path.join(smb.dir, f"g{mib}.bin")
        smb.smbclient(px.port, "--client-protection=sign", cmd=f"get s{mib}.bin {got}")
        check(file_sha256(got) == want, f"signed get of {mib} MiB byte-exact")
        smb.smbclient(px.port, "--client-protection=encrypt", cmd=f"put {local} e{mib}.bin")
        check(file_sha256(os.path.join(smb.share, f"e{mib}.bin")) == want, f"sealed put of {mib} MiB byte-exact")
        smb.smbclient(px.port, "--client-protection=encrypt", cmd=f"get e{mib}.bin {got}")
        check(file_sha256(got) == want, f"sealed get of {mib} MiB byte-exact")
        os.unlink(local)
        os.unlink(got)
    lines = px.wait_log(r"^.* conn 127\.0\.0\.1:\d+ -> quic:.* end=fin .*$", count=12)
    check(len(lines) >= 12, "each session ends with a clean end line naming the quic backend")
    px.proc.send_signal(signal.SIGUSR2)
    px.wait_log(r"^.*a QUIC backend's connections cannot be handed over yet \(restart instead\).*$")
    check(px.proc.poll() is None, "SIGUSR2 is refused with one line while the backend is QUIC, and the daemon runs on")
    px.stop()
    relay.stop()


def test_pair(certs, smb):
    """smbclient -> smbsplice (quic backend, BBR) -> smbsplice (quic:) -> smbd."""
    far = Proxy(None, "--listen", f"quic:127.0.0.1:{free_udp_port()}", "--backend", smb.addr,
                "--quic-cert", f"{certs}/srv.pem", "--quic-key", f"{certs}/srv.key", listen=False)
    qaddr = far.argv[far.argv.index("--listen") + 1][5:]
    near = Proxy(f"quic:{qaddr}", "--quic-name", NAME, "--quic-ca", f"{certs}/ca.pem", "--congestion",
                 "backend:bbr")
    want = random_file(os.path.join(smb.share, "pair.bin"), 64)
    got = os.path.join(smb.dir, "pair-got.bin")
    smb.smbclient(near.port, cmd=f"get pair.bin {got}")
    check(file_sha256(got) == want, "the gateway pair over QUIC: 64 MiB get byte-exact")
    smb.smbclient(near.port, "--client-protection=encrypt", cmd=f"put {got} pair-up.bin")
    check(file_sha256(os.path.join(smb.share, "pair-up.bin")) == want, "and a sealed 64 MiB put")
    os.unlink(got)
    near.stop()
    far.stop()


def test_echo(certs, pin):
    """--mode tcp through to an echo server, the server pinned."""
    relay = Relay(certs, f"127.0.0.1:{echo_server()}")
    px = Proxy(f"quic:127.0.0.1:{relay.port}", "--mode", "tcp", "--quic-pin", pin)
    for size in (0, 1 << 20, 64 << 20):
        echo_exact(px, size, "echo over QUIC, pinned")
    px.stop()
    return relay


def test_ctl(relay, pin):
    """ctl conns (--json) and ctl conn ID show a quic: backend's QUIC
    figures: version 1, the path from the dial's UDP socket to quicrelay's
    port, 0 < RTT < 1 s, cwnd > 0, bytes in flight, packets lost."""
    ctl = os.path.join(TMPDIR, "ctl-qbackend")
    px = Proxy(f"quic:127.0.0.1:{relay.port}", "--mode", "tcp", "--quic-pin", pin, "--control", ctl)
    s = socket.create_connection(("127.0.0.1", px.port), timeout=30)
    s.sendall(b"x")
    check(s.recv(1) == b"x", "a byte through the quic: backend and back")
    r = subprocess.run([SMBSPLICE, "ctl", "--control", ctl, "conns", "--json"], capture_output=True, text=True,
                       timeout=30)
    rows = json.loads(r.stdout)["conns"]
    f = rows[0]["quic_backend"] if len(rows) == 1 else None
    check(f is not None and f["version"] == 1 and 0 < f["rtt_ms"] < 1000 and f["cwnd"] > 0
          and f["bytes_in_flight"] >= 0 and f["lost_packets"] >= 0 and f["remote"] == f"127.0.0.1:{relay.port}"
          and re.fullmatch(r"127\.0\.0\.1:[1-9]\d*", f["local"]) and rows[0]["quic_client"] is None,
          f"ctl conns --json: quic_backend has QUIC v1, the path to quicrelay's port, 0 < RTT < 1 s, cwnd > 0; "
          f"a TCP client has no quic_client ({rows})")
    r = subprocess.run([SMBSPLICE, "ctl", "--control", ctl, "conn", str(rows[0]["id"])], capture_output=True,
                       text=True, timeout=30)
    check(re.search(rf"^quic backend version 0x00000001 local {re.escape(f['local'])} remote 127\.0\.0\.1:"
                    rf"{relay.port} rtt [0-9.]+ms cwnd [1-9]\d* in_flight \d+ lost \d+$", r.stdout, re.M),
          f"ctl conn ID gives them in a line ({r.stdout.strip()[-300:]})")
    s.close()
    px.stop()


def test_resets(certs, pin):
    """Resets cross both ways: a TCP reset behind quicrelay comes as
    RESET_STREAM and resets smbsplice's client; a client's reset goes out
    as RESET_STREAM and quicrelay resets its backend."""
    def reset_after_a_byte(c):
        c.recv(1)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    srv = Server(reset_after_a_byte)
    relay = Relay(certs, srv.addr)
    px = Proxy(f"quic:127.0.0.1:{relay.port}", "--mode", "tcp", "--quic-pin", pin)
    s = socket.create_connection(("127.0.0.1", px.port), timeout=30)
    s.sendall(b"x")
    try:
        while s.recv(1 << 16):
            pass
        reset = False
    except ConnectionResetError:
        reset = True
    s.close()
    check(reset, "the server's reset (RESET_STREAM from quicrelay) resets smbsplice's client")
    px.wait_log(r"^.*end=error \(the server reset the QUIC stream\).*$")
    px.stop()
    relay.stop()
    srv.close()

    seen = []

    def wait_end(c):
        try:
            while c.recv(1 << 16):
                pass
            seen.append("fin")
        except ConnectionResetError:
            seen.append("reset")

    srv = Server(wait_end)
    relay = Relay(certs, srv.addr)
    px = Proxy(f"quic:127.0.0.1:{relay.port}", "--mode", "tcp", "--quic-pin", pin)
    s = socket.create_connection(("127.0.0.1", px.port), timeout=30)
    s.sendall(b"hello")
    wait_for("the backend behind quicrelay is connected", lambda: srv.accepted)
    time.sleep(0.2)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    wait_for("the backend saw its connection end", lambda: seen)
    check(seen == ["reset"], f"the client's reset reaches the backend behind quicrelay as a reset ({seen})")
    px.stop()
    relay.stop()
    srv.close()


def test_refusals(certs, relay, pin):
    """Another CA, another name, another pin: one line, the client reset."""
    be = f"quic:127.0.0.1:{relay.port}"
    cases = [
        (("--quic-ca", f"{certs}/otherca.pem", "--quic-name", NAME), "certificate not accepted for name smb.test",
         "a certificate of another CA"),
        (("--quic-ca", f"{certs}/ca.pem", "--quic-name", "other.test"),
         "certificate not accepted for name other.test", "a certificate for another name"),
        (("--quic-pin", "ab" * 32), "is not the pinned one", "a certificate that is not the pinned one"),
    ]
    for args, reason, what in cases:
        px = Proxy(be, "--mode", "tcp", *args)
        refused(px, reason, what)
        px.stop()
    # The same pin, written with colons and in capitals, is the same pin.
    px = Proxy(be, "--mode", "tcp", "--quic-pin", ":".join(pin[i:i + 2] for i in range(0, 64, 2)).upper())
    echo_exact(px, 1 << 10, "a pin with colons")
    px.stop()


def test_timeout_failover(certs, relay, pin):
    """A backend that never answers: --connect-timeout; one with nothing
    behind its port: the next backend at once."""
    hole = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    hole.bind(("127.0.0.1", 0))  # takes datagrams, answers none
    hole.settimeout(5)
    px = Proxy(f"quic:127.0.0.1:{hole.getsockname()[1]}", "--mode", "tcp", "--quic-pin", pin,
               "--connect-timeout", "1")
    secs = refused(px, r"connect timed out after 1s", "a backend that does not answer")
    check(0.8 <= secs <= 4, f"it fails at --connect-timeout 1 ({secs:.2f} s)")
    check(hole.recv(2048)[0] & 0xc0 == 0xc0, "the dial sent QUIC long-header packets (its Initials)")
    px.stop()
    hole.close()
    dead = free_udp_port()
    px = Proxy(f"quic:127.0.0.1:{dead}", "--backend", f"quic:127.0.0.1:{relay.port}", "--mode", "tcp",
               "--quic-pin", pin, "--connect-timeout", "5")
    t0 = time.monotonic()
    echo_exact(px, 1 << 20, "failover from a UDP port with nothing behind it")
    secs = time.monotonic() - t0
    px.wait_log(r"^.*backend quic:127\.0\.0\.1:\d+: nothing listens on its UDP port .*; trying quic:.*$")
    check(secs < 4, f"the next backend is tried at once, not after the connect timeout ({secs:.2f} s)")
    px.stop()


def quic_far(certs, smb, port=None):
    """smbsplice's quic: listener in front of smbd, on port (or a free one)."""
    port = port or free_udp_port()
    return Proxy(None, "--listen", f"quic:127.0.0.1:{port}", "--backend", smb.addr, "--quic-cert",
                 f"{certs}/srv.pem", "--quic-key", f"{certs}/srv.key", listen=False, stats=True), port


def fewest_fds(pid):
    """The fewest descriptors pid held in 1 s: a probe in flight holds
    three (its UDP socket and socketpair), between probes none."""
    n = []
    for _ in range(20):
        n.append(len(os.listdir(f"/proc/{pid}/fd")))
        time.sleep(0.05)
    return min(n)


def test_health(certs, smb):
    """Health checks of two quic: backends, smbsplice's listener and quicrelay."""
    far, fport = quic_far(certs, smb)
    relay = Relay(certs, smb.addr)
    first, second = f"quic:127.0.0.1:{fport}", f"quic:127.0.0.1:{relay.port}"
    px = Proxy(first, "--backend", second, "--quic-name", NAME, "--quic-ca", f"{certs}/ca.pem",
               "--health-check", "smb", "--health-interval", "0.3", "--health-fall", "2", "--health-rise", "1",
               "--connect-timeout", "2", stats=True)
    wait_for("three probes reach smbsplice's listener over QUIC",
             lambda: metric(scrape(far.stats_port), "smbsplice_quic_handshakes_total", listener="main") >= 3,
             timeout=10)
    fds = fewest_fds(px.proc.pid)
    time.sleep(1.5)  # five probes more of each backend
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_backend_up", listener="main", backend=first) == 1
          and metric(m, "smbsplice_backend_up", listener="main", backend=second) == 1
          and not any("up -> down" in x for x in px.whole_lines()),
          "smb checks over QUIC: both QUIC servers answer the NEGOTIATE, up and never down")
    now = fewest_fds(px.proc.pid)
    check(now <= fds + 4, f"the probes' dials leave no descriptor behind ({fds} -> {now})")
    wait_for("the probes' connections at smbsplice's listener end",
             lambda: metric(scrape(far.stats_port), "smbsplice_connections_active", listener="main") <= 1,
             timeout=5)
    far.stop()
    line = px.wait_log(rf"^.*listener main backend {first}: up -> down \(QUIC: .*\).*$")[0]
    check("QUIC" in line, f"the stopped QUIC server is marked down, with why: {line.strip()[-160:]}")
    out = smb.smbclient(px.port, cmd="ls")
    check("blocks" in out, "a client through the proxy reaches the other QUIC server")
    far, _ = quic_far(certs, smb, fport)
    px.wait_log(rf"^.*listener main backend {first}: down -> up \(1 smb check passed\).*$")
    check(metric(scrape(px.stats_port), "smbsplice_backend_up", listener="main", backend=first) == 1,
          "back on its port: up again after one check")
    px.stop()
    # another name: the certificate is refused, and the probe says so
    px = Proxy(second, "--quic-name", "other.test", "--quic-ca", f"{certs}/ca.pem", "--health-check", "tcp",
               "--health-interval", "0.3", "--health-fall", "1", "--connect-timeout", "2")
    px.wait_log(rf"^.*backend {second}: up -> down \(QUIC: .*certificate not accepted for name other\.test.*$")
    px.stop()
    hole = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    hole.bind(("127.0.0.1", 0))  # takes datagrams, answers none
    px = Proxy(f"quic:127.0.0.1:{hole.getsockname()[1]}", "--quic-name", NAME, "--quic-ca", f"{certs}/ca.pem",
               "--health-check", "tcp", "--health-interval", "0.3", "--health-fall", "1", "--connect-timeout", "2")
    px.wait_log(r"^.*up -> down \(the QUIC handshake timed out\).*$")
    px.stop()
    hole.close()
    far.stop()
    relay.stop()


def test_health_budget(certs, pin):
    """A probe's dial that finds the descriptor budget spent (every unit
    held by connections) is no failure of the backend: a TCP probe's
    socket is not counted in the budget at all, so a quic: backend was
    marked down (QUIC: out of descriptors) only because the proxy was
    busy, and its clients' connections then went to it last."""
    relay = Relay(certs, f"127.0.0.1:{echo_server()}")
    backend = f"quic:127.0.0.1:{relay.port}"
    px = Proxy(backend, "--mode", "tcp", "--quic-pin", pin, "--workers", "1", "--health-check", "tcp",
               "--health-interval", "0.2", "--health-fall", "1", "--connect-timeout", "5", stats=True,
               rlimit_nofile=48)
    time.sleep(0.6)
    m = scrape(px.stats_port)
    limit = int(metric(m, "smbsplice_descriptors_limit"))
    check(metric(m, "smbsplice_backend_up", listener="main", backend=backend) == 1, "the probes pass")
    clients = []
    for _ in range(limit // 2 + 2):  # more than the budget holds: the rest wait
        s = socket.create_connection(("127.0.0.1", px.port), timeout=10)
        s.sendall(b"x")
        clients.append(s)
    wait_for("the connections hold the whole descriptor budget but one unit at most",
             lambda: metric(scrape(px.stats_port), "smbsplice_descriptors_used") >= limit - 1, timeout=10)
    time.sleep(1.2)  # six probes
    down = [x for x in px.whole_lines() if "up -> down" in x]
    check(not down and metric(scrape(px.stats_port), "smbsplice_backend_up", listener="main", backend=backend) == 1,
          f"the proxy out of descriptors does not mark the quic: backend down: {down[:1]}")
    for s in clients:
        s.close()
    px.stop()
    relay.stop()


def test_stop_closes(certs, pin):
    """A stop (SIGINT) with a connection's stream open on a quic: backend
    tells the server at once with a CONNECTION_CLOSE, as a TCP backend's
    socket is reset: the dial used to be let go of and left to end on its
    own in a loop that was never run again, never freed (2 MiB at exit),
    and the server, told nothing, kept the connection (an SMB session)
    until its idle timeout."""
    port = free_udp_port()
    far = Proxy(None, "--listen", f"quic:127.0.0.1:{port}", "--backend", f"127.0.0.1:{echo_server()}", "--mode",
                "tcp", "--quic-cert", f"{certs}/srv.pem", "--quic-key", f"{certs}/srv.key", listen=False, stats=True)
    near = Proxy(f"quic:127.0.0.1:{port}", "--mode", "tcp", "--quic-pin", pin)
    s = socket.create_connection(("127.0.0.1", near.port), timeout=10)
    s.sendall(b"hello")
    check(s.recv(5) == b"hello", "a connection's stream is open through the quic: backend")
    wait_for("the far listener has the connection",
             lambda: metric(scrape(far.stats_port), "smbsplice_connections_active", listener="main") == 1, timeout=5)
    near.proc.send_signal(signal.SIGINT)
    near.proc.wait(30)
    check(near.proc.returncode == 0, f"the stop is clean ({near.proc.returncode})")
    t0 = time.monotonic()
    wait_for("the server is told: its connection ends at once, not at its idle timeout",
             lambda: metric(scrape(far.stats_port), "smbsplice_connections_active", listener="main") == 0, timeout=3)
    print(f"note: the far connection ended {time.monotonic() - t0:.2f} s after the stop")
    s.close()
    near.stop(check_fds=False)
    far.stop()


def check_fails(args, want, what):
    r = subprocess.run([SMBSPLICE, "--check", "--listen", "127.0.0.1:1", *args], capture_output=True, text=True,
                       timeout=30)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and want in lines[0], f"--check: {what}: one line ({r.stderr!r})")


def test_check(certs):
    be = ("--backend", "quic:127.0.0.1:1")
    check_fails((*be, "--quic-pin", "12ab"), "expected the certificate's SHA-256", "a pin that is no SHA-256")
    check_fails(("--backend", "127.0.0.1:1", "--quic-ca", f"{certs}/ca.pem"), "need a QUIC backend",
                "quic-ca without a quic backend")
    check_fails((*be, "--quic-pin", "00" * 32, "--congestion", "backend:vegas"), "takes reno, cubic, bbr or bbr2",
                "a congestion control QUIC has not")
    check_fails((*be, "--quic-ca", f"{certs}/nothere.pem"), "quic-ca", "a CA file that is not there")
    r = subprocess.run([SMBSPLICE, "--check", "--listen", "127.0.0.1:1", *be, "--quic-ca", f"{certs}/ca.pem"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"--check: a quic backend with its CA is good ({r.stderr.strip()})")


def main():
    if not quic_built():
        skip("smbsplice was built without QUIC (configure says QUIC: no)")
    if not os.access(os.path.join(BIN, "quicrelay"), os.X_OK):
        skip(f"{BIN}/quicrelay is not built (go and Debian's golang-github-lucas-clemente-quic-go-dev are needed)")
    need("openssl", "openssl")
    certs = os.path.join(TMPDIR, "qcerts")
    os.makedirs(certs, exist_ok=True)
    pin = make_certs(certs)
    test_check(certs)
    relay = test_echo(certs, pin)
    test_ctl(relay, pin)
    test_refusals(certs, relay, pin)
    test_timeout_failover(certs, relay, pin)
    relay.stop()
    test_health_budget(certs, pin)
    test_stop_closes(certs, pin)
    test_resets(certs, pin)
    smb = Samba()
    test_relay(certs, smb, pin)
    test_pair(certs, smb)
    test_health(certs, smb)


if __name__ == "__main__":
    run(main, alarm=300)
