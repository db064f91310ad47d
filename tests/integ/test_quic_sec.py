"""SMB over QUIC, the listener's defences and its client's freedoms,
each driven by the independent client (smbqc: quic-go 0.29 and go-smb2)
and each able to fail when the feature is switched off:

- Retry (--quic-retry always): smbqc's put and get through a real smbd
  stay byte-exact and each connection costs one Retry
  (smbsplice_quic_retries_total); a flood of client-Initial-looking
  datagrams from one socket is answered with Retries and makes no
  connection (no handshake counted, ctl conns empty, no growth of the
  daemon's memory). With --quic-retry auto, a flood above 200 new
  connections a second turns to Retries.
- Stateless reset: smbqc holds a connection (nc, through --mode tcp to
  an echo); the daemon is killed and started again on the same port with
  the same key; smbqc's next byte is answered with a Stateless Reset and
  smbqc ends within seconds ("stateless reset"), not after its 30 s idle
  timeout; smbsplice_quic_stateless_resets_total counts it. A packet
  shorter than a reset would be gets none.
- Migration (NAT rebinding): smbqc's get of 64 MiB moves to a new UDP
  port after 8 MiB, its old socket closed, and stays byte-exact; the
  daemon validated the new path (smbsplice_quic_migrations_total).

smbqc is found at $SMBQC, else at tests/quic/bin/smbqc of the build; the
test is skipped (77) with one line when the daemon was built without
QUIC or smbqc is missing.
"""
import os
import re
import socket
import subprocess
import time

from harness import Proxy, Samba, Server, TMPDIR, check, metric, need, random_file, run, scrape
from test_quic import NAME, SMBQC, Quic, echo, make_certs, quic_built, rss_kib, skip

# go-smb2 1.1.0 cannot take an asynchronous answer: Samba answers
# synchronously without aio, set per share (tests/quic/README.md).
SYNC = "\taio read size = 0\n\taio write size = 0\n"


def initial(dcid, scid):
    """A datagram that looks like a client's first Initial of QUIC v1:
    long header, type Initial, 8-byte IDs, no token, padded to 1200 bytes
    (its payload is random: no TLS in it)."""
    head = bytes([0xc3]) + b"\0\0\0\1" + bytes([8]) + dcid + bytes([8]) + scid + bytes([0])
    rest = 1200 - len(head) - 2
    return head + bytes([0x40 | rest >> 8, rest & 0xff]) + os.urandom(rest)


def flood(port, n):
    """n Initials from one socket; the answers it got, as many as came."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    scids = []
    for i in range(n):
        scid = os.urandom(8)
        scids.append(scid)
        s.sendto(initial(os.urandom(8), scid), ("127.0.0.1", port))
        if i % 100 == 99:
            time.sleep(0.01)  # the daemon's socket buffer, not its logic, would drop them
    s.settimeout(1)
    answers = []
    try:
        while True:
            answers.append(s.recv(2048))
    except socket.timeout:
        pass
    s.close()
    return answers, set(scids)


def quic_metrics(q):
    m = scrape(q.px.stats_port)
    return {k: metric(m, f"smbsplice_quic_{k}_total", listener="main")
            for k in ("handshakes", "retries", "stateless_resets", "migrations", "client_certs_denied")}


def test_retry_always(certs, smb):
    q = Quic(smb.addr, certs, "--quic-retry", "always")
    cred = ("-user", "root", "-pass", Samba.password)
    src = os.path.join(smb.dir, "retry.bin")
    want = random_file(src, 8)
    r = q.smbqc(*cred, "put", src, "retry.bin")
    check(r.returncode == 0, f"--quic-retry always: put of 8 MiB ({r.stderr.decode().strip()[-300:]})")
    r = q.smbqc(*cred, "get", "retry.bin", "-")
    check(r.returncode == 0 and f"sha256={want}" in r.stdout.decode(),
          f"--quic-retry always: get of it is byte-exact ({r.stdout.decode().strip()})")
    m = quic_metrics(q)
    check(m["retries"] >= 2 and m["handshakes"] == 2,
          f"each of the 2 connections began after a Retry (retries {m['retries']}, handshakes {m['handshakes']})")

    n = 3000
    flood(q.port, 200)  # warm the allocator's caches, if any
    time.sleep(0.5)
    rss0 = rss_kib(q.px.proc.pid)
    answers, scids = flood(q.port, n)
    time.sleep(0.5)
    rss1 = rss_kib(q.px.proc.pid)
    m1 = quic_metrics(q)
    retries = [a for a in answers if a[0] & 0xf0 == 0xf0 and a[1:5] == b"\0\0\0\1"]
    check(len(retries) >= n // 2 and all(a[5] == 8 and a[6:14] in scids for a in retries),
          f"a flood of {n} Initials is answered with Retries to their source IDs ({len(retries)} of {len(answers)})")
    check(all(len(a) < 1200 for a in answers), "each answer is smaller than the Initial it answers (no amplification)")
    check(m1["handshakes"] == 2 and m1["retries"] - m["retries"] >= n // 2,
          f"and makes no connection: handshakes still 2 ({m1['handshakes']}), retries {m['retries']} -> {m1['retries']}")
    check(q.conns() == [], "ctl conns is empty")
    check(rss1 - rss0 < 1024, f"the daemon's memory did not grow with them ({rss0} -> {rss1} KiB)")
    r = q.smbqc(*cred, "get", "retry.bin", "-")
    check(r.returncode == 0 and f"sha256={want}" in r.stdout.decode(), "a client after the flood is served")
    q.px.stop()


def test_retry_auto(certs, smb):
    q = Quic(smb.addr, certs, "--handshake-timeout", "2")
    answers, _ = flood(q.port, 1000)
    m = quic_metrics(q)
    check(m["retries"] > 0 and m["handshakes"] <= 400,
          f"--quic-retry auto: a flood of 1000 Initials turns to Retries above 200 a second "
          f"(handshakes {m['handshakes']}, retries {m['retries']})")
    q.px.wait_log(r"listener main: over 200 new QUIC connections a second: new clients get a Retry")
    time.sleep(3)  # the flood's handshakes end at --handshake-timeout
    r = q.smbqc("-user", "root", "-pass", Samba.password, "ls", ".")
    check(r.returncode == 0, f"a client after the flood is served ({r.stderr.decode().strip()[-200:]})")
    q.px.stop()


def nc_client(port, ca):
    return subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca, "nc"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_stateless_reset(certs):
    ca, cert, key, _ = certs
    srv = Server(echo)
    q = Quic(srv.addr, certs, "--mode", "tcp")
    p = nc_client(q.port, ca)
    try:
        p.stdin.write(b"a")
        p.stdin.flush()
        check(p.stdout.read(1) == b"a", "a QUIC connection through the first daemon")
        q.px.proc.kill()  # a crash: no CONNECTION_CLOSE reaches the client
        q.px.proc.wait()
        q.px.stop(check=False)
        px = Proxy(None, "--listen", f"quic:127.0.0.1:{q.port}", "--backend", srv.addr, "--mode", "tcp",
                   "--quic-cert", cert, "--quic-key", key, listen=False, stats=True)
        # A packet shorter than the shortest reset (21 bytes) is not answered.
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(1)
        s.sendto(bytes([0x40]) + os.urandom(19), ("127.0.0.1", q.port))
        try:
            got = s.recv(2048)
        except socket.timeout:
            got = None
        check(got is None, f"a 20-byte short-header packet of no connection gets no answer ({got!r})")
        s.sendto(bytes([0x40]) + os.urandom(60), ("127.0.0.1", q.port))
        got = s.recv(2048)
        check(len(got) <= 42 and got[0] & 0xc0 == 0x40,
              f"a 61-byte one gets a Stateless Reset, shorter than itself ({len(got)} bytes)")
        s.close()
        t0 = time.monotonic()
        p.stdin.write(b"b")
        p.stdin.flush()
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        secs = time.monotonic() - t0
        err = p.stderr.read().decode()
    finally:
        for f in (p.stdin, p.stdout, p.stderr):
            try:
                f.close()
            except OSError:
                pass
    check(rc != 0 and secs < 5 and "stateless reset" in err,
          f"after a restart the client's next packet gets a Stateless Reset: it ends in {secs:.1f} s, "
          f"not after its idle timeout ({rc}: {err.strip()[-200:]})")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_quic_stateless_resets_total", listener="main") >= 2,
          "smbsplice_quic_stateless_resets_total counts them")
    px.stop()
    srv.close()


def test_migration(certs, smb):
    q = Quic(smb.addr, certs)
    src = os.path.join(smb.share, "big.bin")
    want = random_file(src, 64)
    r = q.smbqc("-user", "root", "-pass", Samba.password, "-rebind-after", "8M", "get", "big.bin", "-",
                timeout=300)
    err = r.stderr.decode()
    m = re.search(r"rebound udp \S+:(\d+) -> \S+:(\d+)", err)
    check(r.returncode == 0 and m and m.group(1) != m.group(2) and f"sha256={want}" in r.stdout.decode(),
          f"a get of 64 MiB whose client moves to a new UDP port after 8 MiB (old socket closed) is byte-exact "
          f"({r.returncode}: {err.strip()[-300:]})")
    mig = quic_metrics(q)["migrations"]
    check(mig >= 1, f"smbsplice_quic_migrations_total counts the move ({mig})")
    os.unlink(src)
    q.px.stop()


def main():
    if not quic_built():
        skip("smbsplice was built without QUIC")
    if not os.access(SMBQC, os.X_OK):
        skip(f"smbqc not found at {SMBQC} (set SMBQC, or build tests/quic with golang-go and quic-go)")
    need("certtool", "gnutls-bin")
    os.makedirs(TMPDIR, exist_ok=True)
    certs = make_certs(TMPDIR)
    smb = Samba(conf_extra=f"[share]\n{SYNC}")
    test_stateless_reset(certs)
    test_retry_always(certs, smb)
    test_retry_auto(certs, smb)
    test_migration(certs, smb)
    smb.stop()


if __name__ == "__main__":
    run(main)
