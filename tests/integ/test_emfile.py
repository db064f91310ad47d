"""Few file descriptors: smbsplice keeps a budget of them, serves as many
clients as it allows, leaves the rest waiting in the listen backlog
instead of resetting them or spinning, says what to do in one line, and
serves the waiting clients as soon as descriptors are free again."""
import re
import socket
import time

from harness import NOT_SMB, Proxy, Server, check, recv_exact, run

CLIENTS = 12


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def served(s, msg):
    """Did `msg` come back on `s` within a short while?"""
    s.settimeout(0.5)
    try:
        return recv_exact(s, len(msg)) == msg
    except (TimeoutError, socket.timeout):
        return False
    finally:
        s.settimeout(10)


def main():
    srv = Server(echo, backlog=512)
    px = Proxy(srv.addr, "--workers", "1", *NOT_SMB, rlimit_nofile=24)
    room = int(re.search(r"max conns (\d+)", px.log()).group(1))
    check(1 <= room < CLIENTS, f"open-files limit 24 leaves room for {room} connections, said at start")

    clients = []
    for i in range(CLIENTS):
        s = socket.socket()
        s.settimeout(10)
        s.connect(("127.0.0.1", px.port))  # completes in the kernel backlog
        s.sendall(b"%02d" % i)
        clients.append(s)
    ok = [served(s, b"%02d" % i) for i, s in enumerate(clients)]
    check(sum(ok) == room, f"{room} clients served at once, the rest wait: {ok}")
    px.wait_log(r"pausing accepts", timeout=10)
    cpu0 = px.cpu_seconds()
    time.sleep(1.0)
    used = px.cpu_seconds() - cpu0
    check(used < 0.3, f"no spin while out of descriptors: {used:.2f} CPU s in 1 s")
    log = px.log()
    check("budget" in log and "ulimit -n" in log, "log names the cause and what to do")
    check(" refused" not in log and " rejected" not in log and " end=" not in log,
          "no client was reset for want of descriptors")

    # Close the served ones: the waiting ones get their turn, in batches.
    waiting = [(i, s) for i, s in enumerate(clients) if not ok[i]]
    for i, s in enumerate(clients):
        if ok[i]:
            s.close()
    end = time.monotonic() + 20
    while waiting and time.monotonic() < end:
        still = []
        for i, s in waiting:
            if served(s, b"%02d" % i):
                s.close()
            else:
                still.append((i, s))
        waiting = still
    check(not waiting, f"every waiting client was served once descriptors were free ({len(waiting)} left)")
    c = px.connect()
    c.sendall(b"again")
    check(recv_exact(c, 5) == b"again", "serves new clients again")
    c.close()
    check(px.proc.poll() is None, "proxy still running")
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
