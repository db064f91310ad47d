"""Upgrade without refusing a client: a second smbsplice binds the address
the first one listens on (--share-address: SO_REUSEPORT), the first is sent SIGTERM and
drains, and through all of it clients that connect, send 1 KiB and read
it back in a loop see no refusal, no reset and no short read, while one
long connection to the old process runs on to its end, after which the
old process exits 0.

In a namespace of the test's own, with net.ipv4.tcp_migrate_req=1 there,
as the upgrade recipe in docs/operations.md sets it: smbsplice accepts every client
fully queued on a socket before closing it, and the sysctl lets the
kernel move the handshakes still half done to the new process's socket
(without it they are reset; on loopback the window is too narrow for
this test to hit, and it passes either way)."""
import json
import os
import signal
import subprocess
import time

from harness import Proxy, TestFailure, check, in_netns, need, run

NS = f"smbsp-upgrade{os.getpid()}"
SECONDS = 8.0

ECHO_SERVER = """
import socket, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1024)
print(s.getsockname()[1], flush=True)
def serve(c):
    while (b := c.recv(65536)):
        c.sendall(b)
    c.close()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
"""

CLIENTS = """
import json, socket, sys, threading, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
res = {"ok": 0, "fail": [], "long": 0, "long_fail": None}
lock = threading.Lock()
end = time.monotonic() + secs

def echo(c, n):
    c.sendall(b"x" * n)
    got = 0
    while got < n:
        b = c.recv(65536)
        if not b:
            raise ConnectionError(f"EOF after {got} of {n} bytes")
        got += len(b)

def short():
    while time.monotonic() < end:
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=5)
            echo(c, 1024)
            c.close()
            with lock:
                res["ok"] += 1
        except Exception as e:
            with lock:
                res["fail"].append(repr(e))

def long():
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        while time.monotonic() < end:
            echo(c, 100)
            res["long"] += 1
            time.sleep(0.05)
        c.close()
    except Exception as e:
        res["long_fail"] = repr(e)

ts = [threading.Thread(target=short) for _ in range(4)] + [threading.Thread(target=long)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(json.dumps(res), flush=True)
"""


def ip(*args):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if r.returncode:
        raise TestFailure(f"ip {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")


def conns(px):
    return len(px.conn_lines())


def upgrade(procs):
    echo = subprocess.Popen(in_netns(NS, ["python3", "-c", ECHO_SERVER]), stdout=subprocess.PIPE, text=True)
    procs.append(echo)
    backend = f"127.0.0.1:{int(echo.stdout.readline())}"
    port = 4450
    wrap = ["ip", "netns", "exec", NS]
    old = Proxy(backend, "--mode", "tcp", port=port, wrap=wrap)
    clients = subprocess.Popen(in_netns(NS, ["python3", "-c", CLIENTS, str(port), str(SECONDS)]),
                               stdout=subprocess.PIPE, text=True)
    procs.append(clients)
    time.sleep(1.5)
    new = Proxy(backend, "--mode", "tcp", "--share-address", port=port, wrap=wrap)
    check(True, f"a second smbsplice, --share-address, binds 127.0.0.1:{port} while the first listens there")
    time.sleep(1.0)
    before = conns(new)
    old.proc.send_signal(signal.SIGTERM)
    old.wait_log(r"draining: listeners closed, \d+ connections open")
    check(True, "SIGTERM: the old one drains, its long connection still open")
    out, _ = clients.communicate(timeout=SECONDS + 30)
    res = json.loads(out)
    check(not res["fail"] and res["ok"] > 100,
          f"{res['ok']} short connections across the upgrade, none refused, reset or cut short "
          f"({len(res['fail'])} failed: {res['fail'][:3]})")
    check(res["long_fail"] is None and res["long"] > 50,
          f"the long connection to the old process ran on to its end ({res['long']} round trips, "
          f"{res['long_fail']})")
    check(conns(new) > before + 50, f"the new process served the clients after the SIGTERM "
          f"({conns(new) - before} connections)")
    rc = old.proc.wait(30)
    check(rc == 0, f"the old process exits 0 once its last connection ended ({rc})")
    old.stop(check_fds=False)
    new.stop()


def main():
    need("ip", "iproute2")
    if os.geteuid():
        print("SKIP: making network namespaces needs root", flush=True)
        raise SystemExit(77)
    procs = []
    ip("netns", "add", NS)
    try:
        ip("-n", NS, "link", "set", "lo", "up")
        subprocess.run(in_netns(NS, ["sysctl", "-qw", "net.ipv4.tcp_migrate_req=1"]), check=True, timeout=10)
        upgrade(procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["ip", "netns", "del", NS], capture_output=True, timeout=10)


if __name__ == "__main__":
    run(main, alarm=120)
