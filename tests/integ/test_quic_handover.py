"""QUIC sessions survive live upgrades (SIGUSR2): a QUIC connection's
state is inside ngtcp2 and cannot be carried, so the process that has it
keeps serving it to its end while the next process takes every new one;
the kernel program that steers datagrams by connection ID
(proxy/io/reuseport.c) sends each to the process whose slot its ID names
(the handover carries the map of slots), and every new client's Initial
to the newest process.

With --workers 2 and --mode tcp, driven by the independent client
(smbqc nc: quic-go 0.29):

- A get in flight (the backend sends 24 MiB in pieces over about six
  seconds) and two idle sessions (an echo, opened before the first
  handover), one of smbqc's and one through smbsplice's own QUIC client
  side (a gateway whose backend is quic:), go on through three
  handovers: the get's bytes are exact, and both idle sessions echo after
  the third.
- Each handover says how many QUIC connections stay with the old process
  ("handover: 3 QUIC connections stay in this process (pid P) ..."), and
  after each a new client is served (by the newest process).
- The old process exits 0 once its last QUIC connection has ended
  ("drained: every connection has ended"), and the processes in between,
  which had none, exit at once.

Switched off (the IDs' first byte left random, so that datagrams are not
steered by the slot their ID names), the get and the idle session end
with a Stateless Reset after the first handover (tried when written:
smbqc exit 4).

Skipped (77) with one line, as test_quic.py is, without QUIC or smbqc.
"""
import hashlib
import random
import socket
import subprocess
import threading
import time

from harness import Proxy, Server, check, recv_exact, run, wait_for
from test_quic import NAME, SMBQC, free_udp_port, quic_setup

GET = 24 << 20
PIECES = 96


def backend(c):
    """'G': GET bytes in PIECES pieces over about six seconds, then FIN;
    'E': an echo of everything after it."""
    kind = c.recv(1)
    if kind == b"G":
        rnd = random.Random(7)
        for _ in range(PIECES):
            c.sendall(rnd.randbytes(GET // PIECES))
            time.sleep(6 / PIECES)
        c.shutdown(socket.SHUT_WR)
        while c.recv(65536):
            pass
    elif kind == b"E":
        while (d := c.recv(65536)):
            c.sendall(d)
        c.shutdown(socket.SHUT_WR)


def want_get():
    rnd = random.Random(7)
    h = hashlib.sha256()
    for _ in range(PIECES):
        h.update(rnd.randbytes(GET // PIECES))
    return h.hexdigest()


def nc(port, ca, kind=b"E"):
    """An smbqc nc whose stream opens with kind ('E' or 'G')."""
    p = subprocess.Popen([SMBQC, "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca, "nc"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(kind)
    p.stdin.flush()
    return p


def echo_once(p, data):
    p.stdin.write(data)
    p.stdin.flush()
    got = b""
    while len(got) < len(data):
        more = p.stdout.read1(len(data) - len(got))
        if not more:
            break
        got += more
    return got == data


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] == "Z"


def main():
    ca, cert, key, _ = quic_setup()
    srv = Server(backend)
    port = free_udp_port()
    px = Proxy(None, "--listen", f"quic:127.0.0.1:{port}", "--backend", srv.addr, "--mode", "tcp", "--workers", "2",
               "--quic-cert", cert, "--quic-key", key, listen=False, stats=True)
    first = px.proc.pid
    idle = nc(port, ca)
    check(echo_once(idle, b"before--"), "an idle session echoes before the handovers")
    # smbsplice's own client side: a gateway whose backend is the
    # listener above, over QUIC, holding an idle session of its own.
    near = Proxy(f"quic:127.0.0.1:{port}", "--mode", "tcp", "--quic-name", NAME, "--quic-ca", ca)
    gw = near.connect()
    gw.sendall(b"Egateway")
    check(recv_exact(gw, 7) == b"gateway", "an idle session through smbsplice's own QUIC client side echoes")
    get = nc(port, ca, b"G")
    digest, got = hashlib.sha256(), [0]

    def read_get():
        while (d := get.stdout.read1(1 << 20)):
            digest.update(d)
            got[0] += len(d)

    reader = threading.Thread(target=read_get)
    reader.start()
    wait_for("the get to begin", lambda: got[0] > 0, timeout=10)
    pids = [first]
    for i in range(3):
        h = px.handover(old_stays=True)
        pids.append(h["pid"])
        line = px.wait_log(rf"handover: (\d+) QUIC connections stay in this process \(pid {pids[-2]}\)",
                           own=False)[-1] if i == 0 else None
        if i == 0:
            check(line == "3", f"handover 1: the old process (pid {first}) keeps its 3 QUIC connections, "
                  f"{h['took_conns']} handed over, paused {h['paused_ms']:.1f} ms")
        new = nc(port, ca)
        ok = echo_once(new, b"new-%d---" % i)
        new.stdin.close()
        new.wait(timeout=30)
        check(ok and got[0] < GET, f"after handover {i + 1} (pid {h['pid']}), a new client is served while the get "
              f"is in flight ({got[0] >> 20} of {GET >> 20} MiB)")
    reader.join(timeout=60)
    get.stdin.close()
    rc = get.wait(timeout=30)
    check(rc == 0 and got[0] == GET and digest.hexdigest() == want_get(),
          f"the get in flight through three handovers: {got[0]} bytes, exact ({rc}: "
          f"{get.stderr.read().decode().strip()[-200:]})")
    check(echo_once(idle, b"after---"), "the idle session opened before them echoes after the third")
    gw.sendall(b"after---")
    check(recv_exact(gw, 8) == b"after---", "so does the one through smbsplice's own QUIC client side")
    gw.close()
    near.stop()
    wait_for("the processes between the first and the last to exit", lambda: all(gone(p) for p in pids[1:-1]),
             timeout=30)
    check(not gone(first), f"the first process (pid {first}) still serves its idle session")
    idle.stdin.close()
    idle.wait(timeout=30)
    wait_for(f"pid {first} to exit once its last QUIC connection ended", lambda: gone(first), timeout=30)
    old = px.lingering[0]
    rc = old.wait(timeout=10)
    check(rc == 0, f"pid {first} exited {rc} once its QUIC connections had ended")
    px.wait_log(r"drained: every connection has ended", own=False)
    wait_for(f"pid {pids[-1]} adopted", lambda: px.proc.adopted(), 10)
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
