"""Out of file descriptors: accept pauses instead of spinning, clients that
cannot be served are closed with a log line, and service resumes once
descriptors are free again."""
import socket
import time

from harness import Proxy, Server, check, recv_exact, run


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def main():
    srv = Server(echo, backlog=512)
    px = Proxy(srv.addr, rlimit_nofile=24)
    clients = []
    for _ in range(40):
        s = socket.socket()
        s.settimeout(5)
        s.connect(("127.0.0.1", px.port))  # completes in the kernel backlog
        clients.append(s)
    px.wait_log(r"pausing accepts|rejected: .*open files", timeout=10)
    cpu0 = px.cpu_seconds()
    time.sleep(1.0)
    used = px.cpu_seconds() - cpu0
    check(used < 0.3, f"no spin while out of fds: {used:.2f} CPU s in 1 s")
    log = px.log()
    check("Too many open files" in log, "log names the cause")
    check("ulimit -n" in log, "log says what to do")

    for s in clients:
        s.close()
    time.sleep(0.5)
    c = px.connect()
    c.sendall(b"again")
    check(recv_exact(c, 5) == b"again", "serves again once fds are free")
    c.close()
    check(px.proc.poll() is None, "proxy still running")
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
