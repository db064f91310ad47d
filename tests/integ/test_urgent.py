"""TCP urgent data in the middle of a stream: every byte arrives, in order
(the urgent byte in line), without a stall, on the splice and copy paths.
splice() stops at the urgent mark; without care the proxy would spin there
for ever. Also two urgent bytes in a row, and an urgent byte as the very
first byte, sent before smbsplice has even dialled the backend."""
import hashlib
import os
import socket
import threading
import time

from harness import NOT_SMB, Proxy, Server, check, recv_hash_n, run

N = 4 << 20
MARK = 1_000_000


def sink(results):
    def handler(c):
        c.setsockopt(socket.SOL_SOCKET, socket.SO_OOBINLINE, 1)
        results.append(recv_hash_n(c, N + 1))
    return handler


def stream_with_urgent(px, srv, results, data, marks):
    """Send data with an urgent byte b"!" before each offset in marks (two
    marks at one offset: two urgent bytes in a row); return the digest the
    server must see and the seconds it took."""
    c = px.connect()
    t0 = time.monotonic()
    want, prev = hashlib.sha256(), 0
    for m in marks:
        c.sendall(data[prev:m])
        c.send(b"!", socket.MSG_OOB)
        want.update(data[prev:m] + b"!")
        prev = m
    c.sendall(data[prev:])
    want.update(data[prev:])
    c.shutdown(socket.SHUT_WR)
    srv.join(20)
    c.close()
    return want.hexdigest(), time.monotonic() - t0


def edge_cases():
    """Two urgent bytes in a row, and an urgent first byte."""
    data = os.urandom(N - 1)
    for args in ([], ["--mode", "tcp"]):
        for marks, what in (([MARK, MARK], "two urgent bytes in a row"),
                            ([0, 0], "urgent bytes first, before the backend is dialled")):
            results = []
            srv = Server(sink(results))
            px = Proxy(srv.addr, *args, *NOT_SMB)
            want, secs = stream_with_urgent(px, srv, results, data, marks)
            check(results == [(N + 1, want)], f"{args}: {what}: every byte in order")
            check(secs < 5, f"{args}: {what}: no stall ({secs:.2f}s)")
            px.stop()
            srv.close()


def main():
    edge_cases()
    data = os.urandom(N)
    want = hashlib.sha256(data[:MARK] + b"!" + data[MARK:]).hexdigest()
    for args in ([], ["--mode", "tcp"], ["--no-splice"], ["--mode", "tcp", "--pipe-size", "8K"]):
        results = []
        srv = Server(sink(results))
        px = Proxy(srv.addr, *args, *NOT_SMB)
        c = px.connect()
        t0 = time.monotonic()
        c.sendall(data[:MARK])
        c.send(b"!", socket.MSG_OOB)
        c.sendall(data[MARK:])
        c.shutdown(socket.SHUT_WR)
        srv.join(20)
        secs = time.monotonic() - t0
        check(results == [(N + 1, want)], f"{args}: {N + 1} bytes with the urgent byte in line, in order")
        check(secs < 5, f"{args}: no stall at the urgent mark ({secs:.2f}s)")
        c.close()
        px.stop()
        srv.close()


if __name__ == "__main__":
    run(main)
