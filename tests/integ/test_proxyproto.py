"""PROXY protocol v2 between gateways: a branch smbsplice with --send-proxy
in front of an HQ smbsplice with --accept-proxy --proxy-from 127.0.0.0/8,
in front of a throwaway Samba. smbclient's get works through the pair, and
HQ's end line names smbclient's own address and port, not the branch's
(the branch dials from 127.0.0.2 with --source). HQ's --allow judges the
header's client, not the gateway; HAProxy's send-proxy-v2 header is taken
too. A peer outside --proxy-from, a malformed header, a missing one (a
plain SMB NEGOTIATE) and one that trickles in and never completes
(--handshake-timeout) are each reset and counted in
smbsplice_refused_total{reason="proxy"}, and no byte of theirs reaches the
backend. Past a valid header the stream is the client's, byte for byte.
With --transparent (test_transparent.py's namespaces) HQ connects to the
server from the address the header names."""
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time

import smbgen
from harness import (NO_LOGIN, SMBSPLICE, TMPDIR, Proxy, Samba, Server, TestFailure, check, file_sha256, free_port,
                     random_file, recv_exact, run, wait_metric)

SIG = b"\r\n\r\n\0\r\nQUIT\n"


def pp2(src, dst):
    """A PROXY TCP/IPv4 v2 header from src to dst, (host, port) each."""
    body = socket.inet_aton(src[0]) + socket.inet_aton(dst[0]) + struct.pack("!HH", src[1], dst[1])
    return SIG + bytes([0x21, 0x11]) + struct.pack("!H", len(body)) + body


def reset_without_reply(s, timeout=5.0):
    """Whether smbsplice reset the socket without sending a byte."""
    s.settimeout(timeout)
    try:
        data = s.recv(1)
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    return False  # a reply or a clean close is not a reset


def pair(smb):
    hq = Proxy(smb.addr, "--accept-proxy", "--proxy-from", "127.0.0.0/8", *NO_LOGIN, stats=True)
    branch = Proxy(hq.addr, "--send-proxy", "--source", "127.0.0.2", *NO_LOGIN)
    return hq, branch


def get_through_pair(smb):
    path = os.path.join(smb.share, "f.bin")
    random_file(path, 4)
    hq, branch = pair(smb)
    got = os.path.join(smb.dir, "got.bin")
    smb.smbclient(branch.port, cmd=f"get f.bin {got}")
    check(file_sha256(got) == file_sha256(path), "smbclient get through the pair: the file arrives whole")
    # smbclient is gone once the file is in; each gateway's end line follows
    # when both of its sockets have ended, a moment later
    branch.wait_log(r" end=fin ")
    hq.wait_log(r" end=fin ")
    b = [c for c in branch.conn_lines() if c["end"] == "fin"]
    h = [c for c in hq.conn_lines() if c["end"] == "fin"]
    check(len(b) == 1 and len(h) == 1 and h[0]["client"] == b[0]["client"] and h[0]["client"].startswith("127.0.0.1:"),
          f"HQ's end line names the client as the branch saw it ({h[0]['client'] if h else None}, "
          f"branch {b[0]['client'] if b else None}), not the branch's 127.0.0.2")
    hq.stop()
    branch.stop()


def allow_sees_client(smb):
    hq = Proxy(smb.addr, "--accept-proxy", "--proxy-from", "127.0.0.0/8", "--allow", "127.0.0.2/32", *NO_LOGIN)
    branch = Proxy(hq.addr, "--send-proxy", "--source", "127.0.0.2", *NO_LOGIN)
    try:
        smb.smbclient(branch.port, cmd="ls")
        refused = False
    except TestFailure:
        refused = True
    hq.wait_log(r"conn 127\.0\.0\.1:\d+ .*refused by listener main: not in --allow")
    check(refused, "HQ's --allow 127.0.0.2/32 refuses the client 127.0.0.1 though its gateway is 127.0.0.2")
    hq.stop()
    branch.stop()


def haproxy_header(smb):
    if not shutil.which("haproxy"):
        print("SKIP haproxy: not installed")
        return
    hq = Proxy(smb.addr, "--accept-proxy", "--proxy-from", "127.0.0.0/8", *NO_LOGIN)
    port = free_port()
    d = tempfile.mkdtemp(prefix="haproxy-", dir=TMPDIR)
    cfg = os.path.join(d, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(f"""defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server hq {hq.addr} send-proxy-v2
""")
    hp = subprocess.Popen(["haproxy", "-f", cfg, "-db"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                time.sleep(0.05)
        out = smb.smbclient(port, cmd="ls")
        check("f.bin" in out or "blocks" in out, "smbclient ls through HAProxy's send-proxy-v2 and HQ works")
        # haproxy closes its side to HQ a moment after smbclient's close
        end, served = time.monotonic() + 10, False
        while not served and time.monotonic() < end:
            served = any(c["end"] == "fin" for c in hq.conn_lines())
            time.sleep(0.1)
        check(served, "HQ took HAProxy's header and served the client")
    finally:
        hp.terminate()
        hp.wait(10)
    hq.stop()


def refusals():
    srv = Server(lambda c: c.recv(1))
    hq = Proxy(srv.addr, "--accept-proxy", "--proxy-from", "127.0.0.0/8", "--handshake-timeout", "1", *NO_LOGIN,
               stats=True)
    outsider = Proxy(srv.addr, "--accept-proxy", "--proxy-from", "192.0.2.0/24", *NO_LOGIN, stats=True)
    try:
        s = outsider.connect()
        was_reset = reset_without_reply(s)
    except ConnectionResetError:  # back before connect() returned: a busy machine
        was_reset = True
    check(was_reset, "a peer outside --proxy-from is reset")
    outsider.wait_log(r"refused by listener main: not in --proxy-from")
    check(wait_metric(outsider.stats_port, "smbsplice_refused_total", 1, reason="proxy"), "... and counted")

    bad = bytearray(pp2(("127.0.0.1", 1000), ("127.0.0.1", 445)))
    bad[12] = 0x31  # version 3
    s = hq.connect()
    s.sendall(bytes(bad) + smbgen.hello(2).buf)
    check(reset_without_reply(s), "a malformed header (version 3) is reset")
    hq.wait_log(r"bad PROXY header \(--accept-proxy\): .*reset before dialling the server")

    s = hq.connect()
    s.sendall(smbgen.hello(2).buf)
    check(reset_without_reply(s), "a missing header (a plain NEGOTIATE) is reset")
    hq.wait_log(r"bad PROXY header", count=2)

    s = hq.connect()
    hdr = pp2(("127.0.0.1", 1000), ("127.0.0.1", 445))
    for b in hdr[:-4]:
        s.sendall(bytes([b]))
        time.sleep(0.03)
    check(reset_without_reply(s, 5), "a header that trickles and never completes is reset")
    hq.wait_log(r"client sent no complete PROXY header within 1s \(--handshake-timeout\)")
    check(wait_metric(hq.stats_port, "smbsplice_refused_total", 3, reason="proxy"),
          "the malformed, the missing and the truncated header are counted")
    time.sleep(0.2)
    check(srv.accepted == 0, f"no refused connection reached the backend ({srv.accepted} did)")
    hq.stop()
    outsider.stop()


def exact_after_header():
    def echo(c):
        while (b := c.recv(65536)):
            c.sendall(b)

    srv = Server(echo)
    hq = Proxy(srv.addr, "--accept-proxy", "--proxy-from", "127.0.0.0/8", *NO_LOGIN)
    hello = smbgen.hello(2).buf
    s = hq.connect()
    # Header and first frame in one segment: only the header is consumed.
    s.sendall(pp2(("198.51.100.7", 40000), ("127.0.0.1", 445)) + hello)
    check(recv_exact(s, len(hello)) == hello, "past the header the backend gets the client's bytes, exactly")
    s.close()
    line = hq.wait_log(r"conn (198\.51\.100\.7:40000) .* end=")
    check(line, "the end line names the header's client 198.51.100.7:40000")
    hq.stop()


def pp2_v6(src, dst):
    """A PROXY TCP/IPv6 v2 header."""
    body = (socket.inet_pton(socket.AF_INET6, src[0]) + socket.inet_pton(socket.AF_INET6, dst[0]) +
            struct.pack("!HH", src[1], dst[1]))
    return SIG + bytes([0x21, 0x21]) + struct.pack("!H", len(body)) + body


def transparent_at_hq():
    """HQ with --transparent dials from the header's client: in
    test_transparent.py's topology (its recipe in P), a client in C that
    sends a header naming C's other address 10.71.3.2 is seen by the server
    in S as 10.71.3.2. A header naming an IPv6 client on this IPv4
    listener is reset, never dialled from a wrong address."""
    import test_transparent as T

    def ask_with(hdr):
        return T.ask(T.PC4, 7010, src=T.C4, hdr=hdr)

    try:
        T.build_topology()
        with T.inside(T.NS_S):
            echo = Server(T.tell_peer, host=T.S4)
        hq = T.proxy(T.PC4, 7010, echo.addr, "--mode", "tcp", "--transparent", "--accept-proxy", "--proxy-from",
                     "10.71.1.0/24", "--workers", "1", stats=True)
        seen = ask_with(pp2((T.C4_OUT, 40000), (T.PC4, 7010)))
        check(seen == T.C4_OUT, f"--transparent at HQ: the server sees the header's client {T.C4_OUT} (saw {seen})")
        hq.wait_log(rf"conn {T.C4_OUT}:40000 .* end=fin")
        seen = ask_with(pp2_v6(("2001:db8::7", 40000), ("2001:db8::1", 7010)))
        hq.wait_log(r"PROXY header names an IPv6 client: --transparent on an IPv4 listener cannot connect from it")
        check(seen is None and echo.accepted == 1, f"an IPv6 header client on an IPv4 --transparent listener is "
              f"reset, never dialled ({echo.accepted} backend connections)")
        hq.stop()
        echo.close()
    finally:
        T.remove_topology()


def safe_by_default():
    r = subprocess.run([SMBSPLICE, "--listen", "127.0.0.1:1", "--backend", "127.0.0.1:2", "--accept-proxy"],
                       capture_output=True, text=True, timeout=10)
    check(r.returncode == 2 and "accept-proxy needs proxy-from" in r.stderr,
          f"--accept-proxy without --proxy-from refuses to start: {r.returncode} {r.stderr.strip()}")
    d = tempfile.mkdtemp(prefix="pp-conf-", dir=TMPDIR)
    conf = os.path.join(d, "smbsplice.conf")
    for extra, want in (("proxy-from = 192.0.2.1/32\nproxy-from = 198.51.100.1/32\n", 0), ("", 2)):
        with open(conf, "w") as f:
            f.write(f"[hq]\nlisten = 127.0.0.1:1\nbackend = 127.0.0.1:2\naccept-proxy = yes\n{extra}"
                    "[branch]\nlisten = 127.0.0.1:3\nbackend = 127.0.0.1:1\nsend-proxy = yes\n")
        r = subprocess.run([SMBSPLICE, "-c", conf, "--check"], capture_output=True, text=True, timeout=10)
        check(r.returncode == want, f"config file keys accept-proxy, proxy-from (twice), send-proxy: --check exits "
              f"{r.returncode}, want {want} ({r.stderr.strip()})")
    r = subprocess.run([SMBSPLICE, "--listen", "127.0.0.1:1", "--backend", "127.0.0.1:2", "--accept-proxy",
                        "--proxy-from", "127.0.0.0/8", "--transparent", "--user", "nobody", "--check"],
                       capture_output=True, text=True, timeout=10)
    check(r.returncode == 2 and "transparent with accept-proxy cannot run under user" in r.stderr,
          f"--transparent --accept-proxy --user: refused, the helper cannot trust a header ({r.stderr.strip()})")


def main():
    safe_by_default()
    exact_after_header()
    refusals()
    smb = Samba()
    get_through_pair(smb)
    allow_sees_client(smb)
    haproxy_header(smb)
    smb.stop()
    transparent_at_hq()


if __name__ == "__main__":
    run(main)
