"""Long-lived TCP connections spread evenly over the workers
(proxy/worker/balance.c).

The kernel's SO_REUSEPORT hash spread four connections over two workers
2+2 only 3 times in 8. With --workers 2, eight rounds of four clients
connecting at once, each moving 4 MiB through an echo while all four are
open: in every round `ctl conns` shows two on each worker, every byte
comes back exact, and smbsplice_worker_connections_moved_total counts
the clients handed from the worker that accepted them to the other (a
round needs none only when the hash alternated: 1 in 4, so eight
rounds without a move would be 1 in 65,536). With --workers 1 nothing
moves.

Switched off (balance_place() opening every client where it was
accepted), the rounds split 3+1 or 4+0 within the eight (tried when
written).
"""
import collections
import json
import os
import socket
import subprocess
import threading

from harness import (NO_LOGIN, NOT_SMB, SMBSPLICE, TMPDIR, Proxy, Server, check, metric, recv_exact, run,
                     scrape, wait_for)
from test_quic import echo

ROUNDS = 8
CLIENTS = 4
BYTES = 4 << 20


def conns(control):
    r = subprocess.run([SMBSPLICE, "ctl", "--control", control, "conns", "--json"], capture_output=True,
                       text=True, timeout=30)
    return json.loads(r.stdout)["conns"]


def one_round(px, control, workers, i):
    """CLIENTS clients at once; where they are while all are open; their
    bytes back."""
    socks = [socket.create_connection((px.host, px.port)) for _ in range(CLIENTS)]
    ours = {s.getsockname()[1] for s in socks}
    wait_for("every client a connection", lambda: len(conns(control)) == CLIENTS, timeout=20)
    where = collections.Counter(c["worker"] for c in conns(control))
    data = os.urandom(BYTES)
    ok = [False] * CLIENTS

    def move(k, s):
        t = threading.Thread(target=s.sendall, args=(data,))
        t.start()
        ok[k] = recv_exact(s, BYTES) == data
        t.join()

    threads = [threading.Thread(target=move, args=(k, s)) for k, s in enumerate(socks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in socks:
        s.close()
    wait_for("the round's connections end", lambda: not conns(control), timeout=20)
    spread = sorted(where.values(), reverse=True) + [0] * (workers - len(where))
    return spread, all(ok), len(ours)


def rounds(workers):
    srv = Server(echo)
    control = os.path.join(TMPDIR, f"balance-{workers}.ctl")
    px = Proxy(srv.addr, "--workers", str(workers), "--mode", "tcp", *NOT_SMB, *NO_LOGIN, "--control", control,
               stats=True)
    spreads = []
    for i in range(ROUNDS):
        spread, exact, n = one_round(px, control, workers, i)
        check(exact and n == CLIENTS, f"--workers {workers}, round {i + 1}: {CLIENTS} clients' {BYTES >> 20} MiB "
              f"came back exact", )
        spreads.append(spread)
    m = scrape(px.stats_port)
    moved = sum(metric(m, "smbsplice_worker_connections_moved_total", worker=str(w)) for w in range(workers))
    served = [metric(m, "smbsplice_worker_connections_total", worker=str(w)) for w in range(workers)]
    px.stop()
    srv.close()
    return spreads, moved, served


def main():
    os.makedirs(TMPDIR, exist_ok=True)
    spreads, moved, served = rounds(2)
    check(all(s == [2, 2] for s in spreads),
          f"--workers 2: four clients at once split 2+2 in each of {ROUNDS} rounds ({spreads})")
    check(moved > 0 and served == [ROUNDS * 2, ROUNDS * 2],
          f"--workers 2: {moved:.0f} clients handed to the other worker; each served {served}")
    spreads, moved, served = rounds(1)
    check(moved == 0 and served == [ROUNDS * CLIENTS], f"--workers 1: nothing moves ({moved:.0f}, served {served})")


if __name__ == "__main__":
    run(main)
