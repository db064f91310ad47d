"""In smb mode the backend is dialled only when the client's first frame
(a NEGOTIATE) arrives: a flood of empty connections never reaches the
server (Samba forks one smbd per connection), a client that sends nothing
is closed after --handshake-timeout, one that leaves without a byte is
logged as such, and a client that speaks is served as usual. tcp mode
dials at once, since other protocols may have the server speak first.
(test_preauth.py tests what else a client may open with, and the cap on
unauthenticated connections per source, off here for the flood.)"""
import socket
import time

import smbgen
from harness import Proxy, Server, check, metric, recv_exact, run, scrape


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def accepted(srv, want):
    """The server's accept count, once it reached `want` or a moment
    passed (the count is bumped after the handler starts)."""
    end = time.monotonic() + 2
    while srv.accepted < want and time.monotonic() < end:
        time.sleep(0.01)
    return srv.accepted


def main():
    srv = Server(echo)
    px = Proxy(srv.addr, "--handshake-timeout", "1", "--max-preauth-per-source", "off", stats=True)

    flood = [px.connect() for _ in range(200)]
    time.sleep(0.5)
    check(srv.accepted == 0, f"200 silent clients: the server saw {srv.accepted} connections")
    check(metric(scrape(px.stats_port), "smbsplice_connections_active") == 200,
          "... while smbsplice holds all 200")
    talker = px.connect()
    hello = smbgen.hello(1).buf
    talker.sendall(hello)
    check(recv_exact(talker, len(hello)) == hello, "a client that speaks is dialled and served meanwhile")
    check(accepted(srv, 1) == 1, "... on the one backend connection it needed")

    # Half of the flood leaves without a byte, the rest outwait the timeout.
    for s in flood[:100]:
        s.close()
    px.wait_log(r"end=fin \(client closed before sending a byte\)", count=100)
    t0 = time.monotonic()
    px.wait_log(r"end=timeout \(client sent nothing within 1s", count=100, timeout=5)
    for s in flood[100:]:
        s.settimeout(2)
        try:
            check(s.recv(1) == b"", "a silent client is closed")
        except ConnectionResetError:
            pass
        s.close()
    check(time.monotonic() - t0 < 2, "silent clients closed after --handshake-timeout")
    check(srv.accepted == 1, "the flood never reached the server")
    talker.sendall(b"still")
    check(recv_exact(talker, 5) == b"still", "the talking client outlived the handshake timeout")
    talker.close()
    px.stop()

    px = Proxy(srv.addr, "--mode", "tcp")
    c = px.connect()
    check(accepted(srv, 2) == 2, "tcp mode dials the backend at once, before any byte")
    c.close()
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
