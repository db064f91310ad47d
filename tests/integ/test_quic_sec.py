"""SMB over QUIC, the listener's defences and its client's freedoms,
each driven by the independent client (smbqc: quic-go 0.29 and go-smb2)
and each able to fail when the feature is switched off:

- Retry (--quic-retry always): smbqc's put and get through a real smbd
  stay byte-exact and each connection costs one Retry
  (smbsplice_quic_retries_total); a flood of client-Initial-looking
  datagrams from one socket is answered with Retries (at least the
  1,000 a second a worker sends at most) and makes no
  connection (no handshake counted, ctl conns empty, no growth of the
  daemon's memory). With --quic-retry auto, a flood above 200 new
  connections a second turns to Retries.
- Stateless reset: smbqc holds a connection (nc, through --mode tcp to
  an echo); the daemon is killed and started again on the same port with
  the same key; smbqc's next packet is answered with a Stateless Reset
  and smbqc ends within seconds of the crash ("stateless reset"), not
  after its 30 s idle timeout; smbsplice_quic_stateless_resets_total
  counts it. A packet shorter than a reset would be gets none.
- Migration (NAT rebinding): smbqc's get of 64 MiB moves to a new UDP
  port after 8 MiB, its old socket closed, and stays byte-exact; the
  daemon validated the new path (smbsplice_quic_migrations_total).
- Client certificates (--quic-client-ca, -allow, -deny), through
  --mode tcp to an echo: a certificate allowed by its SHA-256 passes; one
  both allowed and denied is refused with TLS alert 49 (any deny wins);
  one of the CA that no rule allows gets 49 too; one of another CA, or
  none at all, is refused; each refusal is logged and counted in
  smbsplice_quic_client_certs_denied_total. A reload (SIGHUP) that moves
  a hash from allow to deny and allows the CA's issuer takes effect for
  new connections without a restart. --check refuses a CA without an
  allow rule, rules without a CA, and a rule that is neither a hash nor
  issuer:DN.

Switched off, each fails (tried when written): --quic-retry off (no
Retry counted); no resets sent, or a random reset secret instead of the
key's (smbqc waits out its idle timeout); datagrams from a client's new
port dropped (the get fails, exit 4); no client certificate asked for
(the denied one is served).

smbqc is found at $SMBQC, else at tests/quic/bin/smbqc of the build; the
test is skipped (77) with one line when the daemon was built without
QUIC or smbqc is missing.
"""
import hashlib
import os
import re
import signal
import socket
import ssl
import subprocess
import time

from harness import Proxy, Samba, Server, TMPDIR, check, metric, random_file, run, scrape, SANITIZED
from test_quic import (NAME, SMBQC, Quic, certtool, check_fails, echo, free_udp_port, make_certs, quic_setup,
                       rss_kib)

# go-smb2 1.1.0 cannot take an asynchronous answer: Samba answers
# synchronously without aio, set per share (tests/quic/README.md).
SYNC = "\taio read size = 0\n\taio write size = 0\n"


def initial(dcid, scid, token=b""):
    """A datagram that looks like a client's first Initial of QUIC v1:
    long header, type Initial, the IDs, the token (under 64 bytes),
    padded to 1200 bytes (its payload is random: no TLS in it)."""
    head = (bytes([0xc3]) + b"\0\0\0\1" + bytes([len(dcid)]) + dcid + bytes([len(scid)]) + scid
            + bytes([len(token)]) + token)
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
    # At most 1,000 Retries a second per worker (QUIC_RETRY_MAX): the
    # rest of a flood is dropped unanswered.
    least = min(n // 2, 1000)
    check(len(retries) >= least and all(a[5] == 8 and a[6:14] in scids for a in retries),
          f"a flood of {n} Initials is answered with Retries to their source IDs ({len(retries)} of {len(answers)})")
    check(all(len(a) < 1200 for a in answers), "each answer is smaller than the Initial it answers (no amplification)")
    check(m1["handshakes"] == 2 and m1["retries"] - m["retries"] >= least,
          f"and makes no connection: handshakes still 2 ({m1['handshakes']}), "
          f"retries {m['retries']} -> {m1['retries']}")
    check(q.conns() == [], "ctl conns is empty")
    # AddressSanitizer keeps freed memory in quarantine (256 MiB by
    # default): there the handshake count and ctl above are the proof
    grow = 1024 if not SANITIZED else 64 * 1024
    check(rss1 - rss0 < grow, f"the daemon's memory did not grow with them ({rss0} -> {rss1} KiB)")
    # A forged Retry token (its magic byte, then noise): INVALID_TOKEN at once, no state.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(initial(os.urandom(18), os.urandom(8), bytes([0xb6]) + os.urandom(59)), ("127.0.0.1", q.port))
    a = s.recv(2048)
    s.close()
    check(a[0] & 0xf0 == 0xc0 and len(a) < 1200 and quic_metrics(q)["handshakes"] == 2,
          f"an Initial with a forged Retry token is closed at once (an Initial of {len(a)} bytes), no connection made")
    r = q.smbqc(*cred, "get", "retry.bin", "-")
    check(r.returncode == 0 and f"sha256={want}" in r.stdout.decode(),
          f"a client after the flood is served ({r.returncode}: {r.stderr.decode().strip()[-300:]})")
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
        t0 = time.monotonic()
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
        # quic-go's next packet (its own probe, or the byte written here)
        # names a connection the new daemon never had.
        if p.poll() is None:
            try:
                p.stdin.write(b"b")
                p.stdin.flush()
            except BrokenPipeError:
                pass
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
          f"after a restart the client's next packet gets a Stateless Reset: it ends {secs:.1f} s after the crash, "
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
    check(mig == 1, f"smbsplice_quic_migrations_total counts the move, once ({mig})")
    os.unlink(src)
    q.px.stop()


def client_cert(d, name, ca, ca_key):
    """A client certificate (ECDSA P-256, Client Authentication EKU) of
    the CA; its files and its SHA-256 (of the DER) in hex."""
    p = lambda n: os.path.join(d, n)  # noqa: E731
    with open(p(f"{name}.tmpl"), "w") as f:
        f.write(f'cn = "{name}"\ntls_www_client\nsigning_key\nexpiration_days = 2\n')
    certtool("--generate-privkey", "--key-type=ecdsa", "--curve=secp256r1", "--outfile", p(f"{name}.key"))
    certtool("--generate-certificate", "--load-privkey", p(f"{name}.key"), "--load-ca-certificate", ca,
             "--load-ca-privkey", ca_key, "--template", p(f"{name}.tmpl"), "--outfile", p(f"{name}.pem"))
    with open(p(f"{name}.pem")) as f:
        der = ssl.PEM_cert_to_DER_cert(f.read())
    return p(f"{name}.pem"), p(f"{name}.key"), hashlib.sha256(der).hexdigest()


def test_client_certs(certs):
    ca, cert, key, _ = certs
    d = os.path.join(TMPDIR, "clients")
    os.makedirs(d, exist_ok=True)
    ca_key = os.path.join(TMPDIR, "ca.key")
    c1 = client_cert(d, "client1", ca, ca_key)
    c2 = client_cert(d, "client2", ca, ca_key)
    c4 = client_cert(d, "client4", ca, ca_key)
    d2 = os.path.join(TMPDIR, "otherca")
    os.makedirs(d2, exist_ok=True)
    ca2 = make_certs(d2)[0]
    c3 = client_cert(d2, "client3", ca2, os.path.join(d2, "ca.key"))

    srv = Server(echo)
    port = free_udp_port()
    conf = os.path.join(TMPDIR, "certs.conf")
    head = (f"[q]\nlisten = quic:127.0.0.1:{port}\nquic-cert = {cert}\nquic-key = {key}\n"
            f"backend = {srv.addr}\nmode = tcp\nquic-client-ca = {ca}\n")
    with open(conf, "w") as f:
        f.write(head + f"quic-client-allow = {c1[2]}\nquic-client-allow = {c2[2].upper()}\n"
                f"quic-client-deny = {c2[2]}\n")
    px = Proxy(None, "-c", conf, listen=False, stats=True)

    def nc(c):
        extra = ["-cert", c[0], "-key", c[1]] if c else []
        r = subprocess.run([SMBQC, "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca, "-timeout", "5s", *extra,
                            "nc"], input=b"x", capture_output=True, timeout=30)
        return r.returncode, r.stdout, r.stderr.decode().strip()

    rc, out, err = nc(c1)
    check(rc == 0 and out == b"x", f"a client certificate allowed by its SHA-256 is served ({rc}: {err[-200:]})")
    rc, out, err = nc(c2)
    check(rc == 2 and "tls-alert=49" in err and out == b"",
          f"one allowed and denied is refused with alert 49, access_denied ({rc}: {err[-200:]})")
    px.wait_log(rf"quic 127\.0\.0\.1:\d+: listener q: client certificate {c2[2]} \(issuer CN=smbsplice test CA\) "
                r"denied by quic-client-deny: refused")
    rc, out, err = nc(c4)
    check(rc == 2 and "tls-alert=49" in err, f"one of the CA that no rule allows gets alert 49 ({rc}: {err[-200:]})")
    rc, out, err = nc(c3)
    check(rc == 2 and "tls-alert=" in err and out == b"", f"one of another CA is refused ({rc}: {err[-200:]})")
    rc, out, err = nc(None)
    check(rc == 2 and "tls-alert=" in err and out == b"",
          f"a client without a certificate is refused ({rc}: {err[-200:]})")
    denied = metric(scrape(px.stats_port), "smbsplice_quic_client_certs_denied_total", listener="q")
    check(denied == 4, f"smbsplice_quic_client_certs_denied_total counts the 4 refusals ({denied})")

    with open(conf, "w") as f:
        f.write(head + "quic-client-allow = issuer:CN=smbsplice test CA\n"
                f"quic-client-deny = {c1[2]}\n")
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"reload: .* read, 1 listener")
    rc, out, err = nc(c1)
    check(rc == 2 and "tls-alert=49" in err,
          f"after a reload that moves its hash from allow to deny, client1 is refused with 49 ({rc}: {err[-200:]})")
    rc, out, err = nc(c2)
    check(rc == 0 and out == b"x", f"and client2, no longer denied, passes by its issuer ({rc}: {err[-200:]})")
    rc, out, err = nc(c4)
    check(rc == 0 and out == b"x", f"as does client4 ({rc}: {err[-200:]})")
    px.stop()
    srv.close()

    base = ["--listen", f"quic:127.0.0.1:{port}", "--backend", "127.0.0.1:1", "--quic-cert", cert, "--quic-key", key]
    check_fails(base + ["--quic-client-ca", ca], r"quic-client-ca needs at least one quic-client-allow",
                "a client CA without an allow rule")
    check_fails(base + ["--quic-client-allow", c1[2]], r"quic-client-allow and quic-client-deny need quic-client-ca",
                "an allow rule without a client CA")
    check_fails(base + ["--quic-client-ca", ca, "--quic-client-allow", "abc"],
                r"expected a certificate's SHA-256 \(64 hex digits\) or issuer:DN", "a rule that is no rule")
    check_fails(base + ["--quic-client-ca", ca + ".missing", "--quic-client-allow", c1[2]],
                r"quic-client-ca .*missing: No such file", "a missing client CA")


def main():
    certs = quic_setup()
    smb = Samba(conf_extra=f"[share]\n{SYNC}")
    test_client_certs(certs)
    test_stateless_reset(certs)
    test_retry_always(certs, smb)
    test_retry_auto(certs, smb)
    test_migration(certs, smb)
    smb.stop()


if __name__ == "__main__":
    run(main)
