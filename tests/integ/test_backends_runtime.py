"""Backends managed at run time and health checks (issue 31).

- `backend LISTENER BACKEND drain|maint|ready` on the control socket: a
  drained backend gets no new connection, while one already open to it
  keeps forwarding; `ready` brings new ones back; with every backend out
  a client is reset with a line saying so. `listeners` and /metrics show
  each backend's state; each change is a log line and counted; a reload
  that keeps a backend's address keeps its state.
- health-check = tcp|smb: a backend that stops answering is marked down within
  health-interval x health-fall (log line, smbsplice_backend_up 0) and new
  clients go straight to the next one, without waiting out
  --connect-timeout; back, it is marked up after health-rise probes.
- a backend that accepts TCP but never answers a NEGOTIATE is down for an
  smb check and up for a tcp one; a real smbd is up for an smb check.
"""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time

from harness import (SMBSPLICE, TMPDIR, Proxy, Samba, Server, TestFailure, check, free_port, metric,
                     recv_exact, run, scrape, wait_for)


def ctl(path, *args, ok=True):
    """`smbsplice ctl --control PATH ARGS`: the completed process."""
    r = subprocess.run([SMBSPLICE, "ctl", "--control", path, *args], capture_output=True, text=True, timeout=30)
    if ok and r.returncode:
        raise TestFailure(f"smbsplice ctl {' '.join(args)}: exit {r.returncode}: {r.stdout}{r.stderr}")
    return r


def backends(path):
    """The listener main's backends as `listeners --json` shows them."""
    ls = json.loads(ctl(path, "listeners", "--json").stdout)["listeners"]
    return [lst for lst in ls if lst["name"] == "main"][0]["backends"]


def named(tag):
    """A backend that says who it is (one byte) as soon as it accepts,
    then echoes: in tcp mode the proxy dials at once, so the client learns
    which backend it reached before sending anything."""
    def handler(s):
        s.sendall(tag)
        while True:
            d = s.recv(4096)
            if not d:
                return
            s.sendall(d)
    return Server(handler)


def reached(px):
    """Connect through px; return (the socket, the backend's tag)."""
    c = px.connect()
    c.settimeout(10)
    return c, recv_exact(c, 1)


def echo_ok(c, what):
    c.sendall(b"ping")
    check(recv_exact(c, 4) == b"ping", what)


def sock_path():
    return os.path.join(tempfile.mkdtemp(prefix="ctl-", dir=TMPDIR), "control")


def test_admin_states():
    a, b = named(b"A"), named(b"B")
    path = sock_path()
    px = Proxy(a.addr, "--backend", b.addr, "--mode", "tcp", "--control", path, stats=True)
    c1, tag = reached(px)
    check(tag == b"A", "both ready: a new client reaches the first backend")
    bs = backends(path)
    check([(x["admin"], x["health"]) for x in bs] == [("ready", "up"), ("ready", "up")],
          f"listeners --json shows both ready and up: {bs}")

    out = ctl(path, "backend", "main", a.addr, "drain").stdout
    check(f"backend {a.addr} drain" in out, f"the answer names what was done: {out.strip()}")
    px.wait_log(rf"listener main backend {a.addr}: ready -> drain \(by control socket \(uid 0 pid \d+\)\)")
    c2, tag = reached(px)
    check(tag == b"B", "first drained: a new client reaches the second")
    echo_ok(c1, "the connection open to the drained backend still forwards")
    check(backends(path)[0]["admin"] == "drain", "listeners --json shows it drained")
    text = ctl(path, "listeners").stdout
    check(f"{a.addr} (0 drain up)" in text, f"listeners (text) shows it drained:\n{text}")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_backend_admin_state", listener="main", backend=a.addr, state="drain") == 1
          and metric(m, "smbsplice_backend_admin_state", listener="main", backend=a.addr, state="ready") == 0,
          "/metrics: smbsplice_backend_admin_state says drain")
    check(metric(m, "smbsplice_backend_state_changes_total", listener="main", backend=a.addr) == 1,
          "/metrics: the change is counted")

    ctl(path, "backend", "main", "1", "ready")  # by its place, from 1
    c3, tag = reached(px)
    check(tag == b"A", "ready again: new clients reach the first backend again")

    # maint steers as drain does; live connections run on there too.
    out = ctl(path, "backend", "main", "1", "maint").stdout
    check(f"backend {a.addr} maint" in out, f"maint: the answer names what was done: {out.strip()}")
    px.wait_log(rf"listener main backend {a.addr}: ready -> maint \(by control socket")
    c6, tag = reached(px)
    check(tag == b"B", "first in maintenance: a new client reaches the second")
    echo_ok(c3, "the connection open to the backend in maintenance still forwards")
    check(backends(path)[0]["admin"] == "maint", "listeners --json shows it in maintenance")
    ctl(path, "backend", "main", "1", "ready")
    c7, tag = reached(px)
    check(tag == b"A", "ready after maint: new clients reach the first backend again")
    check(metric(scrape(px.stats_port), "smbsplice_backend_state_changes_total", listener="main",
                 backend=a.addr) == 4, "/metrics: four changes counted (drain, ready, maint, ready)")

    # Every backend out: refused, with a line that says what to do.
    ctl(path, "backend", "main", "1", "maint")
    ctl(path, "backend", "main", "2", "drain")
    c4 = None
    try:  # the reset can beat connect() itself on loopback
        c4 = px.connect()
        c4.settimeout(10)
        got = c4.recv(1)
    except ConnectionResetError:
        got = b""
    check(got == b"", "every backend out: the client is reset, not forwarded")
    line = px.wait_log(r"^.*no backend takes new connections.*$")[0]
    check("drained or in maintenance" in line and "ready" in line, f"the end line says why: {line.strip()}")
    echo_ok(c2, "the connection to the drained second backend still forwards")
    ctl(path, "backend", "main", "1", "ready")
    ctl(path, "backend", "main", "2", "ready")
    c5, tag = reached(px)
    check(tag == b"A", "both ready again: the first backend")

    # Bad arguments are refused, exit 1, and change nothing.
    for args, words in ((("nosuch", "1", "drain"), "no such listener"),
                        (("main", "9", "drain"), "no such backend"),
                        (("main", "1", "sleep"), "expected drain, maint or ready")):
        r = ctl(path, "backend", *args, ok=False)
        check(r.returncode == 1 and words in r.stdout, f"backend {' '.join(args)}: {r.stdout.strip()}")
    check([x["admin"] for x in backends(path)] == ["ready", "ready"], "refused commands changed nothing")
    for c in (c1, c2, c3, c4, c5, c6, c7):
        if c:
            c.close()
    px.stop()
    a.close()
    b.close()


def test_reload_keeps_state():
    a, b, c = named(b"A"), named(b"B"), named(b"C")
    path = sock_path()
    conf = os.path.join(tempfile.mkdtemp(prefix="conf-", dir=TMPDIR), "smbsplice.conf")
    port = free_port()

    def write(*bes):
        with open(conf, "w") as f:
            f.write(f"[main]\nlisten = 127.0.0.1:{port}\nmode = tcp\n")
            f.write("".join(f"backend = {x.addr}\n" for x in bes))

    write(a, b)
    px = Proxy(None, "--config", conf, "--control", path, listen=False)
    px.port, px.addr = port, f"127.0.0.1:{port}"
    ctl(path, "backend", "main", a.addr, "drain")
    # A reload that puts a new backend first and moves the drained one.
    write(c, b, a)
    px.proc.send_signal(signal.SIGHUP)
    wait_for("the reload to add the third backend", lambda: len(backends(path)) == 3)
    bs = {x["address"]: x["admin"] for x in backends(path)}
    check(bs == {c.addr: "ready", b.addr: "ready", a.addr: "drain"},
          f"a reload keeps the drained backend drained, wherever it moved: {bs}")
    s, tag = reached(px)
    check(tag == b"C", "the new first backend takes new clients")
    s.close()
    px.stop()
    for x in (a, b, c):
        x.close()


def full_listener():
    """A listening socket whose accept queue is full: a connect to it
    neither succeeds nor fails (its SYN is dropped), as a hung host's.
    Returns (listener, fillers)."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    fillers = []
    for _ in range(4):
        f = socket.socket()
        f.setblocking(False)
        f.connect_ex(lst.getsockname())
        fillers.append(f)
    time.sleep(0.2)
    return lst, fillers


def test_health_down_up():
    """A backend that hangs is marked down by the checks, and new clients
    go to the second at once rather than after --connect-timeout."""
    b = named(b"B")
    lst, fillers = full_listener()
    port = lst.getsockname()[1]
    addr = f"127.0.0.1:{port}"
    path = sock_path()
    # interval 0.2 s and fall 2: down within about 0.4 s (each probe times
    # out after the interval); the client's connect timeout is 4 s.
    px = Proxy(addr, "--backend", b.addr, "--mode", "tcp", "--control", path, "--health-check", "tcp",
               "--health-interval", "0.2", "--health-fall", "2", "--health-rise", "2",
               "--connect-timeout", "4", stats=True)
    t0 = time.monotonic()
    line = px.wait_log(rf"^smbsplice: warning: listener main backend {addr}: up -> down \(connect timed out\).*$")[0]
    took = time.monotonic() - t0
    check(took < 3.0, f"marked down {took:.2f} s after start (interval 0.2 x fall 2, loose bound 3 s)")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_backend_up", listener="main", backend=addr) == 0, "/metrics: backend_up 0")
    check(metric(m, "smbsplice_backend_up", listener="main", backend=b.addr) == 1, "/metrics: the other 1")
    check(backends(path)[0]["health"] == "down", "listeners --json: down")
    t0 = time.monotonic()
    c, tag = reached(px)
    took = time.monotonic() - t0
    check(tag == b"B" and took < 2.0,
          f"a new client reaches the second backend in {took:.2f} s, not after the 4 s connect timeout")
    c.close()

    # The first comes back on the same port: up after rise probes.
    for f in fillers:
        f.close()
    lst.close()
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(64)
    px.wait_log(rf"^.*listener main backend {addr}: down -> up \(2 tcp checks passed\).*$")
    check(metric(scrape(px.stats_port), "smbsplice_backend_up", listener="main", backend=addr) == 1,
          "/metrics: backend_up 1 again")
    c = px.connect()
    c.settimeout(10)
    s, _ = srv.accept()  # the probes' connections are accepted and closed too
    deadline, through = time.monotonic() + 10, False
    c.sendall(b"x")
    while not through and time.monotonic() < deadline:
        s.settimeout(0.5)
        try:
            through = s.recv(1) == b"x"
        except socket.timeout:
            pass
        s.close()
        if not through:
            s, _ = srv.accept()
    check(through, "a new client reaches the first backend again")
    c.close()
    s.close()

    # Killed (its port now refuses): down again after fall probes.
    srv.close()
    px.wait_log(rf"^smbsplice: warning: listener main backend {addr}: up -> down "
                rf"\(connect: Connection refused\)$")
    c, tag = reached(px)
    check(tag == b"B", "killed and found down: a new client reaches the second backend")
    c.close()
    px.stop()
    b.close()


def silent(s):
    """A backend that takes the connection and reads, and never answers."""
    while s.recv(4096):
        pass


def test_smb_vs_tcp_check():
    """An smb check calls a TCP sink that never answers a NEGOTIATE down,
    and a real smbd up; a tcp check calls the sink up."""
    sink = Server(silent)
    smb = Samba()
    args = ("--health-interval", "0.3", "--health-fall", "2", "--health-rise", "1", "--connect-timeout", "1")
    px = Proxy(sink.addr, "--backend", smb.addr, "--health-check", "smb", *args, stats=True)
    px.wait_log(rf"^.*listener main backend {sink.addr}: up -> down "
                rf"\(no answer to the NEGOTIATE in time\).*$")

    # Several probes of the smbd have run by now (the sink needed two that
    # timed out): it must still be up, and never have gone down.
    time.sleep(1.0)
    check(not any(f"backend {smb.addr}: up -> down" in x for x in px.whole_lines()),
          "a real smbd answers the probe's NEGOTIATE: never marked down")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_backend_up", listener="main", backend=sink.addr) == 0, "sink: backend_up 0")
    check(metric(m, "smbsplice_backend_up", listener="main", backend=smb.addr) == 1, "smbd: backend_up 1")
    # A client through the proxy is served by the smbd, the sink skipped.
    out = smb.smbclient(px.port, cmd="ls")
    check("blocks" in out or "blocks available" in out, f"smbclient through the proxy lists the share: {out[-200:]}")
    px.stop()

    px = Proxy(sink.addr, "--backend", smb.addr, "--health-check", "tcp", *args, stats=True)
    n0 = sink.accepted
    wait_for("three tcp probes of the sink", lambda: sink.accepted >= n0 + 3, timeout=10)
    check(metric(scrape(px.stats_port), "smbsplice_backend_up", listener="main", backend=sink.addr) == 1,
          "tcp check: sink backend_up 1")
    check(not any(f"backend {sink.addr}: up -> down" in x for x in px.whole_lines()),
          "a tcp check calls the sink up: it accepts")
    px.stop()
    smb.stop()
    sink.close()


def test_check_options():
    """The options are checked as the table says."""
    for args, words in ((("--health-check", "http"), "expected off, tcp or smb"),
                        (("--health-interval", "0"), "greater than 0"),
                        (("--health-fall", "0"), "health-fall"),
                        (("--health-rise", "101"), "health-rise")):
        r = subprocess.run([SMBSPLICE, "--listen", "127.0.0.1:1", "--backend", "127.0.0.1:2", *args, "--check"],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and words in r.stderr, f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")


def main():
    test_check_options()
    test_admin_states()
    test_reload_keeps_state()
    test_health_down_up()
    test_smb_vs_tcp_check()


if __name__ == "__main__":
    run(main)
