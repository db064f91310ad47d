"""TCP urgent data in the middle of a stream: every byte arrives, in order
(the urgent byte in line), without a stall, on the splice and copy paths.
splice() stops at the urgent mark; without care the proxy would spin there
for ever."""
import hashlib
import os
import socket
import threading
import time

from harness import Proxy, Server, check, recv_hash_n, run

N = 4 << 20
MARK = 1_000_000


def sink(results):
    def handler(c):
        c.setsockopt(socket.SOL_SOCKET, socket.SO_OOBINLINE, 1)
        results.append(recv_hash_n(c, N + 1))
    return handler


def main():
    data = os.urandom(N)
    want = hashlib.sha256(data[:MARK] + b"!" + data[MARK:]).hexdigest()
    for args in ([], ["--mode", "tcp"], ["--no-splice"], ["--mode", "tcp", "--pipe-size", "8K"]):
        results = []
        srv = Server(sink(results))
        px = Proxy(srv.addr, *args)
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
