"""systemd integration without systemd as PID 1: socket activation through
systemd-socket-activate (smbsplice takes the inherited socket and needs no
--listen; with a config file, a listener with no listen address takes
it and the others bind their own, and a reload keeps it there, while a
new listener with no address is refused in one line), and readiness
through a datagram socket in NOTIFY_SOCKET: READY=1 once listening,
RELOADING=1 and READY=1 around a SIGHUP, STOPPING=1 when SIGTERM starts
the drain. A handover (SIGUSR2) under both: the old process, the main one,
says MAINPID=<the new pid>, and the new one, now holding the socket systemd
passed, says READY=1 after it: each message from the process that is the
main one when systemd reads it (the sender's pid, from SCM_CREDENTIALS, is
what NotifyAccess=main checks). A connection open across the handover and
new clients are served by the new process; a second handover, from it,
goes the same way; a listener with no listen address keeps systemd's
socket across a handover too. (The log under journald: test_journal.py.)"""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import smbgen
from harness import (SMBSPLICE, TMPDIR, Proxy, Server, check, fd_table, free_port, free_ports, need, recv_exact,
                     run, tcp_sockets, wait_for)


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


class Notify:
    """A NOTIFY_SOCKET of the test's own: what smbsplice tells systemd."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="notify-", dir=TMPDIR)
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.settimeout(10)
        self.sender = None  # the pid that sent the message expect() returned

    def expect(self, what):
        """Wait for a message holding @what; return the message, and set
        self.sender to the pid that sent it (as systemd learns it, from
        SCM_CREDENTIALS)."""
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
            except socket.timeout:
                break
            msg = data.decode()
            if what in msg.split("\n"):
                self.sender = next((struct.unpack("3i", d[:12])[0] for lvl, typ, d in anc
                                    if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS), None)
                return msg
        return None

    def pending(self):
        """The messages waiting, not yet read."""
        out = []
        self.sock.setblocking(False)
        try:
            while True:
                out.append(self.sock.recv(4096).decode())
        except BlockingIOError:
            pass
        finally:
            self.sock.settimeout(10)
        return out

    def close(self):
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def served(port):
    """Does an SMB client's first frame go through and back (echoed)?"""
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    hello = smbgen.hello(0).buf
    c.sendall(hello)
    ok = recv_exact(c, len(hello)) == hello
    c.close()
    return ok


def listening_in(pid, port):
    """Does process @pid hold a socket listening on 127.0.0.1:@port?"""
    tcp = tcp_sockets(pid)
    return any(tcp.get(f, "").startswith(f"tcp 127.0.0.1:{port} -> ") and tcp[f].endswith(" LISTEN")
               for f in fd_table(pid).values())


def activated(px, port):
    """Wait (bounded) until systemd-socket-activate, started as @px, listens
    on @port: a client that connects before it does is refused, and it
    may take longer than any fixed pause to start on a loaded machine. A
    probe connection would start smbsplice itself: /proc is read instead."""
    wait_for(f"systemd-socket-activate listening on port {port}", lambda: listening_in(px.proc.pid, port))


def handover(px, notify, port, conn):
    """SIGUSR2 under systemd: MAINPID=<new> from the old (main) process,
    then READY=1 from the new one, which then holds systemd's socket and
    serves @conn (open across it) and new clients. Return the new pid."""
    old = px.proc.pid
    notify.pending()  # what came before it
    pid = px.handover()["pid"]
    msg = notify.expect(f"MAINPID={pid}")
    check(msg is not None and notify.sender == old,
          f"handover: pid {old} (the main one) says MAINPID={pid}, the new pid: {msg!r} from {notify.sender}")
    check(f"STATUS=handed over to pid {pid}" in msg.split("\n"), "... with a STATUS= saying so")
    msg = notify.expect("READY=1")
    check(msg is not None and notify.sender == pid,
          f"... then pid {pid}, the main one now, says READY=1: {msg!r} from {notify.sender}")
    check(px.proc.poll() is None and listening_in(pid, port) and not os.path.exists(f"/proc/{old}"),
          f"... pid {old} is gone and pid {pid} holds the socket systemd passed, listening on port {port}")
    hello = smbgen.hello(1).buf
    conn.sendall(hello)
    check(recv_exact(conn, len(hello)) == hello, "... the connection open across the handover goes on")
    check(served(port), "... and a new client is served")
    return pid


def main():
    need("systemd-socket-activate", "systemd")
    srv = Server(echo)
    notify = Notify()
    env = dict(os.environ, NOTIFY_SOCKET=notify.path)

    # The command line, no --listen: the socket comes from systemd.
    port = free_port()
    act = ["systemd-socket-activate", "-l", f"127.0.0.1:{port}", "-E", f"NOTIFY_SOCKET={notify.path}"]
    px = Proxy(None, "--backend", srv.addr, listen=False, check_start=False, wrap=act, env=env)
    activated(px, port)
    check(served(port), "socket activation: the first client starts smbsplice and is served")
    px.wait_log(r"listening on 127\.0\.0\.1:\d+ \(from systemd\)")
    check(True, "... on the socket systemd passed, without --listen")
    msg = notify.expect("READY=1")
    check(msg and "STATUS=forwarding on 1 listener" in msg, f"READY=1 once listening: {msg!r}")
    check(served(port), "... and serves the next client")
    check(notify.sender == px.proc.pid, f"READY=1 came from the main process, pid {px.proc.pid}")

    # A handover, twice: each time MAINPID=, then READY=1 from the new pid.
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    hello = smbgen.hello(0).buf
    conn.sendall(hello)
    check(recv_exact(conn, len(hello)) == hello, "a connection open before the handover")
    handover(px, notify, port, conn)
    pid = handover(px, notify, port, conn)
    conn.close()
    px.proc.send_signal(signal.SIGTERM)
    check(notify.expect("STOPPING=1") is not None and notify.sender == pid,
          f"STOPPING=1 when SIGTERM starts the drain, from pid {pid}")
    check(px.proc.wait(10) == 0, "... and exits 0")
    px.stop(check_fds=False)

    # A config file: the listener with no address takes the passed socket,
    # the other binds its own; SIGHUP tells systemd it reloads.
    port, other = free_ports(2)
    conf = os.path.join(notify.dir, "smbsplice.conf")
    sections = (f"[activated]\nbackend = {srv.addr}\n"
                f"[own]\nlisten = 127.0.0.1:{other}\nbackend = {srv.addr}\n")
    with open(conf, "w") as f:
        f.write(sections)
    r = subprocess.run([SMBSPLICE, "--check", "-c", conf], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and r.stdout.splitlines() == [
        "smbsplice: listener activated has no listen address: it needs a socket from systemd (socket activation)",
        "smbsplice: configuration OK: 2 listeners (activated, own)"],
        f"--check by hand accepts a listener with no address, and says what it needs: {r.stdout!r} {r.stderr!r}")
    act = ["systemd-socket-activate", "-l", f"127.0.0.1:{port}", "-E", f"NOTIFY_SOCKET={notify.path}"]
    px = Proxy(None, "-c", conf, listen=False, check_start=False, wrap=act, env=env)
    activated(px, port)
    check(served(port), "config file: the activated listener serves")
    log = px.wait_log(r"^.*listener activated: listening on.*$")[0]
    check("(from systemd)" in log, "... on the passed socket")
    check(notify.expect("READY=1") is not None and served(other), "... and the other listener binds its own")
    with open(conf, "w") as f:
        f.write(sections.replace("[own]", "mode = tcp\n[own]"))
    px.proc.send_signal(signal.SIGHUP)
    check(notify.expect("RELOADING=1") is not None and notify.expect("READY=1") is not None,
          "SIGHUP: RELOADING=1, then READY=1")
    px.wait_log(r"reload: .* read, 2 listeners")
    check(served(port) and served(other),
          "... and both listeners serve after the reload, the activated one still on systemd's socket")
    px.wait_log(r" listener=activated .* end=fin ", count=2)
    lines = [ln for ln in px.log().splitlines() if " listener=activated " in ln]
    check(" smb dialect=" in lines[0] and " smb dialect=" not in lines[-1],
          "... with the reload's settings (mode smb before, tcp after)")
    with open(conf, "w") as f:
        f.write(sections + f"[late]\nbackend = {srv.addr}\n")
    px.proc.send_signal(signal.SIGHUP)
    line = px.wait_log(r"^.*reload refused.*$")[0]
    check("listener late: no listen address, and no socket from systemd is left for it" in line,
          f"a new listener with no address and no socket left: {line.strip()}")
    check(served(port) and served(other), "... and the running listeners serve on")
    why = px.handover_fails()
    check("the new process refused" in why and served(port) and served(other),
          f"a handover with that file on disk fails and the old process serves on: {why}")
    with open(conf, "w") as f:
        f.write(sections.replace("[own]", "mode = tcp\n[own]"))
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    pid = handover(px, notify, port, conn)
    conn.close()
    check(served(other) and listening_in(pid, other),
          "handover: the listener with no address keeps systemd's socket, the other its own")
    px.proc.send_signal(signal.SIGHUP)
    check(notify.expect("READY=1") is not None and notify.sender == pid,
          f"... and pid {pid} reloads the file, listener with no address and all")
    px.wait_log(r"reload: .* read, 2 listeners", count=2)
    check(served(port) and served(other), "... both listeners serving after it")
    px.proc.send_signal(signal.SIGTERM)
    check(px.proc.wait(10) == 0, "SIGTERM: exit status 0")
    px.stop(check_fds=False)
    notify.close()
    srv.close()


if __name__ == "__main__":
    run(main)
