"""--max-conns and --max-conns-per-source: a client over a cap is reset at
once, counted in smbsplice_refused_total{reason}, and logged in a
rate-limited line; clients under the caps are served as usual, IPv4 and
IPv6 alike, and a slot is free again as soon as a connection ends."""
import socket
import time

from harness import NOT_SMB, Proxy, Server, TestFailure, check, metric, recv_exact, run, scrape


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
    time.sleep(0.3)
    lines = px.log().count(" refused by listener main: too many connections ")
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


def main():
    test_max_conns()
    test_per_source("127.0.0.1", "127.0.0.2", "127.0.0.1")
    test_per_source("::1", None, "::1")


if __name__ == "__main__":
    run(main)
