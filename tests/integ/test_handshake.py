"""In smb mode the backend is dialled only when the client's first frame
(a NEGOTIATE) arrives: a flood of empty connections never reaches the
server (Samba forks one smbd per connection), a client that sends nothing
is closed after --handshake-timeout, one that leaves without a byte is
logged as such (rate limited: 2,000 of them write at most a burst of lines,
and the next line counts the rest), and a client that speaks is served as
usual. tcp mode dials at once, since other protocols may have the server
speak first. (test_preauth.py tests what else a client may open with, and
the cap on unauthenticated connections per source, off here for the
flood.)"""
import re
import socket
import struct
import time

import smbgen
from harness import NO_LOGIN, Proxy, Server, check, metric, recv_exact, run, scrape, wait_metric

# log.h: per-client lines of one kind a worker writes per window (s).
LOG_LIMIT_BURST, LOG_LIMIT_WINDOW = 10, 10
FLOOD = 2000


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def accepted(srv, want):
    """The server's accept count, once it reached `want` or a moment
    passed (the count is bumped after the handler starts)."""
    end = time.monotonic() + 5
    while srv.accepted < want and time.monotonic() < end:
        time.sleep(0.01)
    return srv.accepted


def flood_lines(srv):
    """2,000 connect-and-close pairs do not write 2,000 lines: end lines of
    connections that forwarded nothing are rate limited, and the next one
    let through counts those suppressed; a connection that moved bytes
    keeps its line. (Without a login, 2,000 connections in a row may
    outrun the per-source cap on them: NO_LOGIN.)"""
    px = Proxy(srv.addr, "--workers", "1", *NO_LOGIN, stats=True)
    size0 = len(px.whole_lines())
    t0, n = time.monotonic(), 0
    while n < FLOOD and time.monotonic() - t0 < 20:
        px.connect().close()
        n += 1
    took = time.monotonic() - t0
    talker = px.connect()
    hello = smbgen.hello(2).buf
    talker.sendall(hello)
    recv_exact(talker, len(hello))
    talker.close()
    px.wait_log(rf" end=\w+ .* c2s={len(hello)} ")
    check(wait_metric(px.stats_port, "smbsplice_connections_active", 0),
          f"{n} connect-and-close pairs in {took:.2f} s: every one ended")
    text = px.whole_lines()
    quiet = re.findall(r"^.* conn .*before sending a byte.*$", text, re.M)
    check(n == FLOOD and len(quiet) <= LOG_LIMIT_BURST,
          f"... logged in {len(quiet)} end lines, {len(text) - size0} bytes (at most {LOG_LIMIT_BURST} lines), "
          f"and the talker's line is there")
    # Once the window is over, one line says how many were left out (or
    # the next such line does, if it comes first).
    summary = px.wait_log(r"^.* (\d+) more connections that forwarded nothing ended \(fin\); "
                          r"their lines were suppressed$", timeout=LOG_LIMIT_WINDOW + 10)
    text = px.whole_lines()
    quiet = re.findall(r"^.* conn .*before sending a byte.*$", text, re.M)
    counted = len(quiet) + sum(int(x) for x in re.findall(r"\(and (\d+) more like it suppressed\)", text))
    counted += sum(int(x) for x in re.findall(r" (\d+) more connections that forwarded nothing ended \(fin\)", text))
    check(counted == n, f"the suppressed lines are counted: {len(quiet)} end lines and a summary of "
          f"{summary[0]} account for {counted} of {n} connections")
    px.stop()


def half_close_fin(srv):
    """A client that sends part of its first frame and half-closes gets a
    FIN, as from smbd, which would have read the bytes and seen the end:
    not a reset for data smbsplice had only peeked at."""
    px = Proxy(srv.addr, stats=True)
    before = srv.accepted
    c = px.connect()
    c.sendall(struct.pack(">I", 102) + b"\xfeSMB" + bytes(40))  # 44 of 106 bytes
    c.shutdown(socket.SHUT_WR)
    c.settimeout(3)
    try:
        got = c.recv(10)
    except ConnectionResetError as e:
        got = e
    check(got == b"", f"a client that half-closes mid first frame reads an end of file, not a reset ({got!r})")
    px.wait_log(r"end=fin \(client closed in the middle of its first frame\)")
    check(srv.accepted == before, "... and no server was dialled for it")
    c.close()
    px.stop()


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
    px.wait_log(r"end=fin \(client closed before sending a byte\)")
    t0 = time.monotonic()
    px.wait_log(r"end=timeout \(client sent nothing within 1s", timeout=5)
    for s in flood[100:]:
        s.settimeout(2)
        try:
            check(s.recv(1) == b"", "a silent client is closed")
        except ConnectionResetError:
            pass
        s.close()
    check(time.monotonic() - t0 < 2, "silent clients closed after --handshake-timeout")
    check(srv.accepted == 1, "the flood never reached the server")
    check(wait_metric(px.stats_port, "smbsplice_connections_active", 1), "every silent client ended; the talker is left")
    talker.sendall(b"still")
    check(recv_exact(talker, 5) == b"still", "the talking client outlived the handshake timeout")
    talker.close()
    px.wait_log(rf" end=fin .* c2s={len(hello) + 5} ")
    text = px.whole_lines()
    left, timed = (len(re.findall(w, text)) for w in ("before sending a byte", "sent nothing within"))
    check(left <= 2 * LOG_LIMIT_BURST and timed <= 2 * LOG_LIMIT_BURST,
          f"100 clients gone without a byte and 100 timed out, on 2 workers: {left} and {timed} end lines "
          f"(at most {LOG_LIMIT_BURST} of each a worker), and the client that spoke has its own")
    px.stop()

    flood_lines(srv)
    half_close_fin(srv)

    px = Proxy(srv.addr, "--mode", "tcp")
    before = srv.accepted
    c = px.connect()
    got = accepted(srv, before + 1)
    check(got == before + 1, f"tcp mode dials the backend at once, before any byte ({got - before} dialled)")
    c.close()
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
