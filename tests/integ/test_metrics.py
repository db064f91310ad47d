"""--stats serves Prometheus text at /metrics: live counters that move with
the traffic, connection gauges, and plain HTTP errors for anything else."""
import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.request

import harness
from harness import Proxy, Server, check, metric, recv_exact, run, scrape


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def main():
    srv = Server(echo)
    px = Proxy(srv.addr, "--mode", "tcp", stats=True)
    with urllib.request.urlopen(f"http://127.0.0.1:{px.stats_port}/metrics", timeout=10) as r:
        check(r.status == 200, "GET /metrics: 200")
        check(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), "Prometheus text content type")
        body = r.read().decode()
    harness.note_scrape(px.stats_port)
    for name in ("smbsplice_bytes_total", "smbsplice_messages_total", "smbsplice_splice_calls_total",
                 "smbsplice_copy_calls_total", "smbsplice_cork_writes_total", "smbsplice_uncork_calls_total",
                 "smbsplice_connections_active", "smbsplice_connections_total",
                 "smbsplice_opaque_fallbacks_total", "smbsplice_payloads_total"):
        check(f"# TYPE {name} " in body, f"{name} is documented in the page")

    c = px.connect()
    c.sendall(b"x" * 100000)
    recv_exact(c, 100000)
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_connections_active") == 1, "one connection active")
    moved = sum(metric(m, "smbsplice_bytes_total", direction="to_server", path=p) for p in ("splice", "copy"))
    check(moved == 100000, f"live connection's bytes counted: {moved:.0f}")
    c.close()
    px.wait_log(r" end=fin ")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_connections_active") == 0, "no connection active after close")
    check(metric(m, "smbsplice_connections_total") == 1, "one connection in total")
    moved = sum(metric(m, "smbsplice_bytes_total", direction="to_client", path=p) for p in ("splice", "copy"))
    check(moved == 100000, f"closed connection's bytes kept: {moved:.0f}")

    # A page is cached for a second from when it was rendered, not from
    # when it was asked for: after a scrape the daemon was slow to answer
    # (stopped for 0.4 s here; a loaded machine, the sanitizers), the next
    # scrape() still gets a page newer than what happened in between.
    harness.wait_fresh(px.stats_port)
    os.kill(px.proc.pid, signal.SIGSTOP)
    resume = threading.Timer(0.4, os.kill, (px.proc.pid, signal.SIGCONT))
    resume.start()
    try:
        m0 = scrape(px.stats_port)
    finally:
        resume.join()
        os.kill(px.proc.pid, signal.SIGCONT)
    c = px.connect()
    c.sendall(b"z" * 5000)
    recv_exact(c, 5000)
    c.close()
    px.wait_log(r" end=fin ", count=2)
    m1 = scrape(px.stats_port)
    n0, n1 = (metric(m, "smbsplice_connections_total") for m in (m0, m1))
    check(n1 == n0 + 1, f"after a slow scrape, the next page is fresh: connections {n0:.0f} -> {n1:.0f}")

    try:
        urllib.request.urlopen(f"http://127.0.0.1:{px.stats_port}/nope", timeout=10)
        check(False, "GET /nope fails")
    except urllib.error.HTTPError as e:
        check(e.code == 404, "GET /nope: 404")
    s = socket.create_connection(("127.0.0.1", px.stats_port), timeout=10)
    s.sendall(b"POST /metrics HTTP/1.0\r\n\r\n")
    check(s.recv(100).startswith(b"HTTP/1.0 405"), "POST: 405")
    s.close()
    s = socket.create_connection(("127.0.0.1", px.stats_port), timeout=10)  # silent client: times out
    check(scrape(px.stats_port) is not None, "a silent client does not block other scrapes")
    s.close()

    # The page is rendered at most once a second: a flood of scrapes gets
    # the same page, and a fresh one after the second is over.
    raw = lambda: urllib.request.urlopen(f"http://127.0.0.1:{px.stats_port}/metrics", timeout=10).read()
    time.sleep(1.1)
    first = raw()
    c = px.connect()
    c.sendall(b"y" * 1000)
    recv_exact(c, 1000)
    pages = [raw() for _ in range(20)]
    check(all(p == first for p in pages), "20 scrapes within the second: one page, rendered once")
    time.sleep(1.1)
    check(raw() != first, "the next second renders a fresh page")
    c.close()

    # At most four scrapes are served at once; the fifth waits in the
    # backlog until one of them ends.
    silent = [socket.create_connection(("127.0.0.1", px.stats_port), timeout=10) for _ in range(4)]
    time.sleep(0.2)
    late = socket.create_connection(("127.0.0.1", px.stats_port), timeout=10)
    late.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    late.settimeout(0.5)
    try:
        check(late.recv(100) == b"", "a fifth scrape is not served while four are")
    except (TimeoutError, socket.timeout):
        check(True, "a fifth scrape is not served while four are")
    silent.pop().close()
    late.settimeout(10)
    check(late.recv(100).startswith(b"HTTP/1.0 200"), "... and is served as soon as one of them ends")
    late.close()
    for s in silent:
        s.close()
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
