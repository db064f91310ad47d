"""A QUIC client is held to the caps and gates a TCP client is: the
per-source limits count QUIC connections, and the first-frame gate,
--max-preauth-per-source and --auth-timeout apply to the stream.
Driven by the independent client (smbqc nc: quic-go 0.29), each stream a
raw byte pipe, against test_preauth.py's fake SMB server:

- --max-conns-per-source 3 (--mode tcp, to an echo): three QUIC
  connections of 127.0.0.1 are held; a fourth is refused at its first
  Initial (one line, smbsplice_refused_total{reason="max_conns_per_source"}),
  and once one of the three ends, a new one is served.
- --max-preauth-per-source 2 --auth-timeout 4 (smb mode): two streams
  that sent a NEGOTIATE and never log in are held; a third client is
  refused at its Initial; both end at the deadline ("end=timeout (no
  session setup completed within 4s (--auth-timeout))",
  smbsplice_auth_timeouts_total), and smbqc sees its stream end.
- The first-frame gate: a stream that opens with an HTTP request is
  closed before the backend is dialled.

Seen to fail when written: a late client that kept trying past the
deadline was served as soon as the deadline freed its address's places
(which is right, and why it now gives up at 2 s).

Skipped (77) with one line, as test_quic.py is, without QUIC or smbqc.
"""
import subprocess
import time

import smbgen
from harness import Proxy, Server, check, metric, run, scrape, wait_for
from test_preauth import Backend
from test_quic import NAME, SMBQC, echo, free_udp_port, quic_setup


class Nc:
    """One smbqc nc, its stdin held open."""

    def __init__(self, q, data, *args):
        self.p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{q.port}", "-name", NAME, "-ca", q.ca, *args, "nc"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def read(self, n):
        return self.p.stdout.read(n)

    def end(self, timeout=30):
        """Wait for it to exit; its exit status and stderr."""
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        return self.p.returncode, self.p.stderr.read().decode()


class Q:
    def __init__(self, certs, backend, *args):
        self.ca, cert, key, _ = certs
        self.port = free_udp_port()
        self.px = Proxy(None, "--listen", f"quic:127.0.0.1:{self.port}", "--backend", backend, "--quic-cert", cert,
                        "--quic-key", key, *args, listen=False, stats=True)

    def active(self):
        return metric(scrape(self.px.stats_port), "smbsplice_connections_active")


def test_per_source(certs):
    srv = Server(echo)
    q = Q(certs, srv.addr, "--mode", "tcp", "--max-conns-per-source", "3")
    held = []
    for i in range(3):
        nc = Nc(q, b"%08d" % i)
        check(nc.read(8) == b"%08d" % i, f"--max-conns-per-source 3: QUIC connection {i + 1} is served")
        held.append(nc)
    late = Nc(q, b"late----", "-timeout", "3s")
    rc, err = late.end()
    check(rc == 2 and q.active() == 3,
          f"... a fourth of the same address is refused at its Initial (smbqc exit {rc}: {err.strip()[-120:]})")
    q.px.wait_log(r"quic 127\.0\.0\.1:\d+ refused by listener main: .*--max-conns-per-source")
    check(metric(scrape(q.px.stats_port), "smbsplice_refused_total", reason="max_conns_per_source") >= 1,
          "... counted in smbsplice_refused_total{reason=\"max_conns_per_source\"}")
    rc, _ = held.pop().end()
    check(rc == 0, "one of the three ends")
    wait_for("its connection to end", lambda: q.active() == 2)
    nc = Nc(q, b"again---")
    check(nc.read(8) == b"again---", "... and a new one of the address is served")
    for n in held + [nc]:
        n.end()
    q.px.stop()
    srv.close()


def test_preauth(certs):
    be = Backend()
    q = Q(certs, be.addr, "--max-preauth-per-source", "2", "--auth-timeout", "4", "--workers", "1")
    pre = []
    for i in range(2):
        hello = smbgen.hello(10 + i).buf
        nc = Nc(q, hello)
        pre.append(nc)
        wait_for(f"stream {i + 1}'s NEGOTIATE at the server", lambda: len(be.first) == i + 1, timeout=10)
        check(be.first[i] == hello, f"a stream that sent a NEGOTIATE ({i + 1}) reaches the server unchanged")
    t0 = time.monotonic()
    # It gives up before the deadline frees its address's places: its
    # Initials sent after that would be served.
    late = Nc(q, smbgen.hello(20).buf, "-timeout", "2s")
    rc, err = late.end()
    check(rc == 2, f"--max-preauth-per-source 2: a third client of the address, while two streams have not "
          f"logged in, is refused at its Initial (smbqc exit {rc}: {err.strip()[-120:]})")
    q.px.wait_log(r"quic 127\.0\.0\.1:\d+ refused by listener main: its address has 2 connections that have not "
                  r"completed a session setup \(--max-preauth-per-source\)")
    q.px.wait_log(r"end=timeout \(no session setup completed within 4s \(--auth-timeout\)\)", count=2, timeout=10)
    took = time.monotonic() - t0
    ends = [n.end(timeout=15) for n in pre]
    check(all(rc != 0 or "down=" in err for rc, err in ends) and took < 8,
          f"--auth-timeout 4: both streams end at the deadline ({took:.1f} s), and smbqc sees them end")
    m = scrape(q.px.stats_port)
    check(metric(m, "smbsplice_auth_timeouts_total") == 2 and
          metric(m, "smbsplice_refused_total", reason="max_preauth_per_source") >= 1,
          "... counted: smbsplice_auth_timeouts_total 2, and smbsplice_refused_total{reason=\"max_preauth_per_source\"} "
          "(once per Initial the client sent again)")

    dialled = be.srv.accepted
    nc = Nc(q, b"GET / HTTP/1.0\r\n\r\n")
    rc, err = nc.end()
    check(be.accepted(0.5) == dialled, f"the first-frame gate: a stream that opens with HTTP is closed before the "
          f"backend is dialled (smbqc exit {rc})")
    q.px.wait_log(r"end=\S+ \([^)]*not (an )?SMB")
    q.px.stop()
    be.srv.close()


def main():
    certs = quic_setup()
    test_per_source(certs)
    test_preauth(certs)


if __name__ == "__main__":
    run(main)
