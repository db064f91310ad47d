"""Signals: SIGINT stops at once; SIGTERM drains. A drain closes every
listener at once (a new client is refused), lets the open connections run
(bytes still flow both ways) until they end, then exits 0; or, when
--drain-timeout is spent, resets what is left with a log line; a second
SIGTERM stops at once. Every connection is logged, and a stream cut short
ends in a reset, never in a clean end."""
import signal
import socket
import time

from harness import NOT_SMB, Proxy, Server, check, recv_exact, run


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def open_conns(px, n):
    conns = [px.connect() for _ in range(n)]
    for c in conns:
        c.sendall(b"hello")  # not SMB: forwarded opaque, FIN a clean end
        recv_exact(c, 5)
    return conns


def refused(px):
    """Is a new client refused (the listeners are closed)?"""
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", px.port))
    except ConnectionRefusedError:
        return True
    finally:
        s.close()
    return False


def was_reset(c):
    try:
        while c.recv(1 << 20):
            pass
    except ConnectionResetError:
        return True
    return False


def test_sigint(srv):
    px = Proxy(srv.addr, *NOT_SMB)
    conns = open_conns(px, 3)
    px.proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    rc = px.proc.wait(5)
    check(rc == 0 and time.monotonic() - t0 < 2, f"SIGINT: stopped at once, exit status 0 ({rc})")
    log = px.log()
    check(log.count(" end=shutdown ") == 3 and "stopped after 3 connections" in log,
          "SIGINT: all 3 connections logged, and the final line")
    check(all(was_reset(c) for c in conns), "SIGINT: the clients saw a reset, not a clean end")
    px.stop(check_fds=False)


def test_drain_runs_out(srv):
    px = Proxy(srv.addr, *NOT_SMB)
    conns = open_conns(px, 2)
    px.proc.send_signal(signal.SIGTERM)
    px.wait_log(r"draining: listeners closed, 2 connections open")
    check(refused(px), "SIGTERM: the listeners close at once: a new client is refused")
    for i, c in enumerate(conns):
        c.sendall(b"still")
        check(recv_exact(c, 5) == b"still", f"SIGTERM: open connection {i} still flows both ways")
    conns[0].close()
    time.sleep(0.3)
    check(px.proc.poll() is None, "SIGTERM: smbsplice waits for the last connection")
    conns[1].close()
    rc = px.proc.wait(5)
    check(rc == 0, f"SIGTERM: exit status 0 once the last connection ended ({rc})")
    log = px.log()
    check("drained: every connection has ended" in log and log.count(" end=fin ") == 2,
          "SIGTERM: both connections ended cleanly, and the drain logged")
    px.stop(check_fds=False)  # it has exited: exit status and log checks only


def test_drain_timeout(srv):
    px = Proxy(srv.addr, "--drain-timeout", "1", *NOT_SMB)
    conns = open_conns(px, 3)
    t0 = time.monotonic()
    px.proc.send_signal(signal.SIGTERM)
    rc = px.proc.wait(5)
    took = time.monotonic() - t0
    check(rc == 0 and 0.9 <= took < 3, f"--drain-timeout 1: reset after {took:.2f} s, exit status 0 ({rc})")
    log = px.log()
    check("--drain-timeout 1s is spent; resetting the 3 connections still open" in log,
          "--drain-timeout: the reset is logged with the count")
    check(log.count(" end=shutdown ") == 3 and all(was_reset(c) for c in conns),
          "--drain-timeout: every connection was reset and logged")
    px.stop(check_fds=False)


def test_second_sigterm(srv):
    px = Proxy(srv.addr, *NOT_SMB)
    conns = open_conns(px, 2)
    px.proc.send_signal(signal.SIGTERM)
    px.wait_log(r"draining")
    px.proc.send_signal(signal.SIGTERM)
    rc = px.proc.wait(5)
    check(rc == 0, f"a second SIGTERM stops at once, exit status 0 ({rc})")
    check(px.log().count(" end=shutdown ") == 2 and all(was_reset(c) for c in conns),
          "... resetting both open connections")
    px.stop(check_fds=False)


def main():
    srv = Server(echo)
    test_sigint(srv)
    test_drain_runs_out(srv)
    test_drain_timeout(srv)
    test_second_sigterm(srv)
    srv.close()


if __name__ == "__main__":
    run(main)
