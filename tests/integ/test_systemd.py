"""systemd integration without systemd as PID 1: socket activation through
systemd-socket-activate (smbsplice takes the inherited socket and needs no
--listen; with a config file, a listener with no listen address takes
it and the others bind their own, and a reload keeps it there, while a
new listener with no address is refused in one line), and readiness
through a datagram socket in NOTIFY_SOCKET: READY=1 once listening,
RELOADING=1 and READY=1 around a SIGHUP, STOPPING=1 when SIGTERM starts
the drain."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import smbgen
from harness import SMBSPLICE, TMPDIR, Proxy, Server, check, free_port, free_ports, need, recv_exact, run


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
        self.sock.settimeout(10)

    def expect(self, what):
        """Wait for a message holding @what; return the message."""
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                msg = self.sock.recv(4096).decode()
            except socket.timeout:
                break
            if what in msg.split("\n"):
                return msg
        return None

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


def main():
    need("systemd-socket-activate", "systemd")
    srv = Server(echo)
    notify = Notify()
    env = dict(os.environ, NOTIFY_SOCKET=notify.path)

    # The command line, no --listen: the socket comes from systemd.
    port = free_port()
    act = ["systemd-socket-activate", "-l", f"127.0.0.1:{port}", "-E", f"NOTIFY_SOCKET={notify.path}"]
    px = Proxy(None, "--backend", srv.addr, listen=False, check_start=False, wrap=act, env=env)
    time.sleep(0.3)
    check(served(port), "socket activation: the first client starts smbsplice and is served")
    px.wait_log(r"listening on 127\.0\.0\.1:\d+ \(from systemd\)")
    check(True, "... on the socket systemd passed, without --listen")
    msg = notify.expect("READY=1")
    check(msg and "STATUS=forwarding on 1 listener" in msg, f"READY=1 once listening: {msg!r}")
    check(served(port), "... and serves the next client")
    px.proc.send_signal(signal.SIGTERM)
    check(notify.expect("STOPPING=1") is not None, "STOPPING=1 when SIGTERM starts the drain")
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
    time.sleep(0.3)
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
    px.proc.send_signal(signal.SIGTERM)
    check(px.proc.wait(10) == 0, "SIGTERM: exit status 0")
    px.stop(check_fds=False)
    notify.close()
    srv.close()


if __name__ == "__main__":
    run(main)
