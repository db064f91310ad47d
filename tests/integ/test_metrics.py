"""--stats serves Prometheus text at /metrics: live counters that move with
the traffic, connection gauges, and plain HTTP errors for anything else."""
import socket
import urllib.error
import urllib.request

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
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
