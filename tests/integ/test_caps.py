"""--max-conns and --max-conns-per-source: a client over a cap is reset at
once, counted in smbsplice_refused_total{reason}, and logged in a
rate-limited line; clients under the caps are served as usual, IPv4 and
IPv6 alike, and a slot is free again as soon as a connection ends. IPv6
clients count per /64 (--source-prefix6), IPv4-mapped ones per address;
and on a dual-stack socket, IPv4-mapped clients match IPv4 --allow
networks only."""
import ctypes
import os
import socket
import subprocess
import time

from harness import NOT_SMB, Proxy, Server, TestFailure, check, metric, need, recv_exact, run, scrape

CLONE_NEWNET = 0x40000000
DUAL_PORT = 4450  # in the test's own namespace


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def connect(px, host, src=None):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    if src:
        s.bind((src, 0))
    try:
        s.connect((host, px.port))
    except ConnectionResetError:
        pass  # on loopback the reset can beat connect() itself
    return s


def served(s):
    """Echo one message through s: True if served, False if reset."""
    try:
        s.sendall(b"ping")
        return recv_exact(s, 4) == b"ping"
    except (ConnectionError, TestFailure):  # reset, or EOF
        return False


def test_max_conns():
    srv = Server(echo)
    px = Proxy(srv.addr, "--max-conns", "3", "--workers", "2", *NOT_SMB, stats=True)
    held = [connect(px, "127.0.0.1") for _ in range(3)]
    check(all(served(s) for s in held), "--max-conns 3: three clients served")
    t0 = time.monotonic()
    extra = connect(px, "127.0.0.1")
    check(not served(extra), "--max-conns 3: the fourth is reset")
    check(time.monotonic() - t0 < 1, "... at once")
    extra.close()
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_refused_total", reason="max_conns") == 1, "counted as reason=max_conns")
    held.pop().close()
    px.wait_log(r" end=fin ")
    again = connect(px, "127.0.0.1")
    check(served(again), "a slot is free again once a connection ended")
    # A flood over the cap: every client reset, a handful of log lines.
    for _ in range(40):
        try:
            s = connect(px, "127.0.0.1")
            served(s)
            s.close()
        except OSError:
            pass
    # The lines reach the log by the log's writer thread: wait (bounded)
    # for the first rather than reading the log 0.3 s later.
    lines = len(px.wait_log(r" refused by listener main: too many connections "))
    check(1 <= lines <= 2 * 10, f"41 refusals logged in {lines} lines (rate-limited per worker)")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_refused_total", reason="max_conns") == 41, "every refusal counted")
    again.close()
    for s in held:
        s.close()
    px.stop()
    srv.close()


def test_per_source(host, other_src, srv_host):
    srv = Server(echo, host=srv_host)
    px = Proxy(srv.addr, "--max-conns-per-source", "2", *NOT_SMB, listen_host=host, stats=True)
    a = [connect(px, host) for _ in range(2)]
    check(all(served(s) for s in a), f"{host}: two clients from one address served")
    third = connect(px, host)
    check(not served(third), f"{host}: a third from the same address is reset")
    third.close()
    if other_src:
        b = connect(px, host, src=other_src)
        check(served(b), f"{host}: another address ({other_src}) is still served")
        b.close()
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_refused_total", reason="max_conns_per_source") == 1,
          f"{host}: counted as reason=max_conns_per_source")
    a.pop().close()
    px.wait_log(r" end=fin ", count=2 if other_src else 1)
    c = connect(px, host)
    check(served(c), f"{host}: the address gets its slot back when a connection ends")
    c.close()
    for s in a:
        s.close()
    px.stop()
    srv.close()


def refused(px, host, src):
    """Connect from src and send nothing (smb mode waits for a byte): True
    if the per-source cap resets the client at once; the socket too."""
    s = connect(px, host, src)
    s.settimeout(0.3)
    try:
        return s.recv(1) == b"", s
    except ConnectionError:
        return True, s
    except (TimeoutError, socket.timeout):
        return False, s


def setns(path):
    """Move this thread (the test's only one) into the network namespace
    at path; the daemons it starts are born there."""
    with open(path) as f:
        if ctypes.CDLL(None, use_errno=True).setns(f.fileno(), CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), f"setns {path}")


def dual_stack(*args):
    """smbsplice on a dual-stack [::]:PORT socket, as the systemd unit
    passes it (smbsplice's own IPv6 listeners are IPv6 only), started by
    a first client; returns it once it listens."""
    act = ["systemd-socket-activate", "-l", f"[::]:{DUAL_PORT}"]
    px = Proxy(None, "--backend", "127.0.0.1:9", *args, listen=False, check_start=False, wrap=act)
    px.port = DUAL_PORT
    time.sleep(0.3)
    connect(px, "127.0.0.1", "127.0.0.3").close()
    px.wait_log(r"listening on .*\(from systemd\)")
    return px


def held(px, host, srcs):
    """Which clients from srcs are held (not reset at once), as 1 or 0; the
    sockets are appended to px.socks."""
    out = []
    for src in srcs:
        r, sock = refused(px, host, src)
        out.append(0 if r else 1)
        px.socks.append(sock)
    return out


def test_namespace():
    """In a namespace of the test's own, with 2001:db8::/64 and
    2001:db8:0:1::/64 on its lo, and a dual-stack [::] socket:
    - an IPv6 host has a /64 to pick addresses from, so its clients count
      per --source-prefix6 network (/64 by default) for
      --max-conns-per-source, while IPv4 clients, arriving IPv4-mapped,
      still count per address;
    - --allow ::/0 does not let in the IPv4 clients (::ffff:127.0.0.1):
      they are matched against IPv4 networks only."""
    need("systemd-socket-activate", "systemd")
    netns = f"smbs-caps-{os.getpid()}"
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    subprocess.run(["ip", "netns", "add", netns], check=True)
    try:
        setns(f"/run/netns/{netns}")
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        for a in ("2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8:0:1::1"):
            subprocess.run(["ip", "addr", "add", f"{a}/64", "dev", "lo", "nodad"], check=True)
        v6 = ("2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8:0:1::1")
        v4 = ("127.0.0.1", "127.0.0.1", "127.0.0.2")
        for args, want6 in ((("--max-conns-per-source", "2"), [1, 1, 0, 1]),
                            (("--max-conns-per-source", "2", "--source-prefix6", "128"), [1, 1, 1, 1])):
            px = dual_stack(*args)
            px.socks = []
            got6, got4 = held(px, "2001:db8::1", v6), held(px, "127.0.0.1", v4)
            check(got6 == want6, f"{' '.join(args)}: clients from ::1 ::2 ::3 and another /64 held: {got6}, "
                  f"want {want6}")
            check(got4 == [1, 1, 1], f"{' '.join(args)}: IPv4-mapped clients count per IPv4 address: {got4}")
            for sock in px.socks:
                sock.close()
            px.stop(check_fds=False)
        for args, want in ((("--allow", "::/0"), ([1], [0])), (("--allow", "127.0.0.0/8"), ([0], [1])),
                           (("--allow", "::/0", "--allow", "127.0.0.1"), ([1], [1]))):
            px = dual_stack(*args)
            px.socks = []
            got = (held(px, "2001:db8::1", ["2001:db8::1"]), held(px, "127.0.0.1", ["127.0.0.1"]))
            check(got == want, f"dual-stack [::], {' '.join(args)}: IPv6 and IPv4 clients served {got}, want {want}")
            for sock in px.socks:
                sock.close()
            px.stop(check_fds=False)
    finally:
        setns(f"/proc/self/fd/{home}")
        os.close(home)
        subprocess.run(["ip", "netns", "del", netns])


def main():
    test_max_conns()
    test_per_source("127.0.0.1", "127.0.0.2", "127.0.0.1")
    test_per_source("::1", None, "::1")
    test_namespace()


if __name__ == "__main__":
    run(main)
