"""The --control socket (issue 22): every command in text and in --json
through `smbsplice ctl`, against real traffic.

- the socket is a Unix socket of mode 0600, and a stale one is replaced;
- `conns` while an smbclient get, a put and a listing are in flight
  through smbsplice to a throwaway Samba: their dialect, bytes spliced
  each way, the outstanding request; `conn ID` in full; `listeners`;
- `conns` while 2,000 connections move data: every one listed, their
  bytes growing, the data still echoed byte for byte;
- clients that connect and send nothing do not block the next one;
- `kill ID` resets that connection only, and the log says who asked;
- `kill client ADDR[:PORT]` resets every connection from 127.0.0.2 (or
  one port of it) while 127.0.0.3's forward on, its IPv4-mapped form
  names the same client; `kill backend HOST:PORT` resets one listener's
  connections while the other's forward on, `kill backend ADDR` those
  to any port of it;
- `info`: the pid, the version, an uptime that grows, workers,
  listeners, connections, --max-conns and the descriptor budget, build;
- `--control-ro`: a second socket that serves conns, conn, listeners,
  top, info and help and refuses drain, resume and kill (any argument)
  with "permission denied", while the admin socket acts; both serve on,
  at their levels, after a reload and after a live handover (the same
  nodes); one path for both is refused; without root and without
  chown() (the unit's system call filter), a daemon whose own group is
  --control-ro-group's makes the socket with it;
- `drain` stops new connections on one listener while another keeps
  accepting, and `resume` undoes it;
- `top` (not a terminal) prints one screen, the busiest first;
- with --control-group the node is born with that group and mode 0660:
  no chown() or chmod() ever names the path (which root would follow
  through a link swapped in by whoever may write the directory), and a
  set-group-ID directory that would give it another group is refused;
- ctl's default path lies in the shipped unit's RuntimeDirectory, and a
  socket whose directory is missing says what to do in its one line."""
import grp
import json
import os
import re
import select
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time

from harness import (NO_LOGIN, NOT_SMB, SMBSPLICE, TMPDIR, Proxy, Samba, Server, TestFailure, check,
                     free_port, random_file, recv_exact, run, user_copy, wait_for)
from test_scale import EchoServer


def ctl(path, *args, ok=True, timeout=30):
    """Run `smbsplice ctl --control PATH ARGS`; its output (stdout)."""
    r = subprocess.run([SMBSPLICE, "ctl", "--control", path, *args], capture_output=True, text=True,
                       timeout=timeout)
    if ok and r.returncode:
        raise TestFailure(f"smbsplice ctl {' '.join(args)}: exit {r.returncode}: {r.stdout}{r.stderr}")
    return r


def top_on_terminal(path, secs):
    """Run `smbsplice ctl top` with a pseudo-terminal as its standard
    output for `secs`, then interrupt it: how many screens it drew."""
    master, slave = os.openpty()
    p = subprocess.Popen([SMBSPLICE, "ctl", "--control", path, "top"], stdout=slave, stderr=slave)
    os.close(slave)
    out, end = b"", time.monotonic() + secs
    try:
        while time.monotonic() < end:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    out += os.read(master, 65536)
                except OSError:  # the client exited: its end is gone
                    break
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        os.close(master)
    return sum(1 for part in out.split(b"\x1b[H\x1b[2J")[1:] if b"smbsplice top: " in part)


def ctl_json(path, *args):
    return json.loads(ctl(path, *args, "--json").stdout)


def sock_path(name):
    return os.path.join(tempfile.mkdtemp(prefix="ctl-", dir=TMPDIR), name)


def samba_in_flight():
    """A get, a put and a listing in flight at once: conns sees all three."""
    smb = Samba()
    path = sock_path("control")
    px = Proxy(smb.addr, "--control", path)
    st = os.lstat(path)
    check(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
          f"--control: a Unix socket of mode {oct(stat.S_IMODE(st.st_mode))} (0600 wanted)")
    random_file(os.path.join(smb.share, "big.bin"), 1024)
    up = os.path.join(smb.dir, "up.bin")
    random_file(up, 1024)
    os.makedirs(os.path.join(smb.share, "dir"))
    for i in range(200):
        open(os.path.join(smb.share, "dir", f"f{i}"), "w").close()
    cmds = {"get": "get big.bin /dev/null", "put": f"put {up} up.bin", "ls": "; ".join(["ls dir/*"] * 1500)}
    errs = []

    def client(cmd):
        try:
            smb.smbclient(px.port, cmd=cmd)
        except Exception as e:  # noqa: BLE001 - reported by the test
            errs.append(e)
    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in cmds.values()]
    for t in threads:
        t.start()
    seen, screen, top, after, end = None, "", "", 0, time.monotonic() + 60
    # A request outstanding is looked for in every answer while the three
    # run, not only in the one that shows them all: on a loaded machine (one
    # core) the clients may not run while ctl does, and every request sent
    # so far has its response.
    pending = None
    while time.monotonic() < end and any(t.is_alive() for t in threads):
        recs = ctl_json(path, "conns")["conns"]
        pending = pending or next((r for r in recs if r["outstanding"] > 0 and r["oldest_command"]
                                   and r["dialect"] != "-"), None)
        if seen is not None:
            if pending:
                break
            time.sleep(0.1)
            continue
        moving = [r for r in recs if r["state"] == "open" and r["dialect"] != "-"]
        gets = [r for r in moving if r["down_spliced"] > 64 << 20]
        puts = [r for r in moving if r["up_spliced"] > 64 << 20]
        if len(moving) >= 3 and gets and puts:
            seen = recs
            # The listener's count now, and the connections just after:
            # between the two some may end (the get is quick), none start.
            lst_json = ctl_json(path, "listeners")
            after = len(ctl_json(path, "conns")["conns"])
            screen = ctl(path, "conns").stdout
            top = ctl(path, "top").stdout
            # The listing runs longest: ask for it in full.
            ls = max((r for r in moving if r not in gets and r not in puts), key=lambda r: r["age"],
                     default=gets[0])
            one = ctl_json(path, "conn", str(ls["id"]))
            detail = ctl(path, "conn", str(ls["id"])).stdout
            lst = ctl(path, "listeners").stdout
            if pending:
                break
        time.sleep(0.1)
    for t in threads:
        t.join(300)
    check(not errs, f"get, put and listing through smbsplice succeed: {errs}")
    check(seen is not None, "conns --json shows the get (down spliced), the put (up spliced) and a third session at once")
    print("conns:\n" + screen + "top:\n" + top, flush=True)
    check(all(r["backend"] == smb.addr and r["listener"] == "main" for r in seen),
          "each names its backend and listener")
    check(all(r["dialect"].startswith("3.") for r in seen if r["state"] == "open"), "each names its SMB3 dialect")
    check(screen.startswith("ID ") and len(screen.splitlines()) == len(seen) + 1,
          f"conns (text): a header and a line per connection ({len(seen)})")
    check(pending is not None and pending["oldest_age"] >= 0,
          f"conns: a request outstanding, with its command and age "
          f"({pending and (pending['outstanding'], pending['oldest_command'], pending['oldest_age'])})")
    check(one["id"] == ls["id"] and "down_in_pipe" in one and "up_buffer" in one,
          "conn ID --json: that connection, with its pipe and buffer holdings")
    check(f"id {ls['id']}\n" in detail and "pipe " in detail, "conn ID (text): the same, a field a line")
    l0 = lst_json["listeners"][0]
    check(l0["name"] == "main" and l0["conns"] >= max(after, 1) and l0["backends"][0]["address"] == smb.addr,
          f"listeners --json: main, {l0['conns']} connections then ({after} a moment later), its backend")
    check(lst.splitlines()[1].startswith("main "), "listeners (text): a line per listener")
    check(top.startswith("smbsplice top: ") and "UP_B/S" in top, "top: one screen, not a terminal")
    px.stop()
    # smbsplice stopped: the name is a stale socket; a new start replaces it.
    px = Proxy(smb.addr, "--control", path)
    check(ctl(path, "conns").stdout.startswith("ID "), "a stale control socket is replaced at start")
    screens = top_on_terminal(path, 3.5)
    check(screens >= 2, f"top on a terminal: the screen is cleared and drawn again each second ({screens} in 3.5 s)")
    px.stop()
    smb.stop()


def mover(port, n, stop, out):
    """n connections each sending 1 KiB and reading it back, again and
    again, until stop is set (at most 120 s); out gets the rounds done."""
    sel = selectors.DefaultSelector()
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        sel.register(s, selectors.EVENT_WRITE, {"want": bytes([i % 256]) * 1024, "got": 0})
    rounds, end = 0, time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < end:
        for key, ev in sel.select(0.5):
            s, st = key.fileobj, key.data
            if ev & selectors.EVENT_WRITE:
                s.send(st["want"])
                sel.modify(s, selectors.EVENT_READ, st)
                continue
            b = s.recv(4096)
            if not b or b != st["want"][:len(b)]:
                out["error"] = "a connection closed or echoed other bytes"
                return
            st["got"] += len(b)
            if st["got"] >= 1024:
                st["got"] = 0
                rounds += 1
                sel.modify(s, selectors.EVENT_WRITE, st)
    out["rounds"] = rounds
    for key in list(sel.get_map().values()):
        key.fileobj.close()


def many_moving():
    """conns while 2,000 connections move data."""
    n = 2000
    srv = EchoServer()
    path = sock_path("control")
    px = Proxy(srv.addr, "--mode", "tcp", "--workers", "2", "--control", path)
    stop, out = threading.Event(), {}
    t = threading.Thread(target=mover, args=(px.port, n, stop, out), daemon=True)
    t.start()
    first, last, times = None, None, []
    end = time.monotonic() + 60
    while time.monotonic() < end:
        t0 = time.monotonic()
        recs = ctl_json(path, "conns")["conns"]
        times.append(time.monotonic() - t0)
        if len(recs) == n and all(r["up_copied"] > 0 for r in recs):
            if first is None:
                first = {r["id"]: r["up_copied"] for r in recs}
            else:
                last = {r["id"]: r["up_copied"] for r in recs}
                if sum(last[i] > first[i] for i in first) > n * 0.9:
                    break
        time.sleep(0.2)
    stop.set()
    t.join(30)
    check("error" not in out, f"2,000 connections echo byte for byte while conns runs: {out}")
    check(first is not None, f"conns lists all {n} connections while they move data")
    check(last is not None, "... and their bytes grow between two conns")
    check(max(times) < 5, f"conns over {n} connections answers in {max(times):.2f} s at most ({len(times)} runs)")
    text = ctl(path, "conns").stdout
    check(text.startswith("ID "), "conns (text) answers after the load")
    px.stop()
    srv.close()


def silent_clients():
    """Clients that connect and send nothing do not block the next one."""
    srv = Server(lambda c: c.recv(1))
    path = sock_path("control")
    px = Proxy(srv.addr, *NOT_SMB, "--control", path)
    silent = []
    for _ in range(8):  # more than the slots served at once
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        silent.append(s)
    t0 = time.monotonic()
    r = ctl(path, "listeners", timeout=10)
    took = time.monotonic() - t0
    check(r.stdout.startswith("NAME ") and took < 1.5,
          f"8 silent clients, then listeners: answered in {took:.2f} s")
    bad = ctl(path, "frobnicate", ok=False)
    check(bad.returncode == 1 and bad.stdout.startswith("error: "), "an unknown command: an error line, exit 1")
    badj = json.loads(ctl(path, "frobnicate", "--json", ok=False).stdout)
    check("error" in badj, "... and in JSON")
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(b"conns " + b"x" * 300 + b"\n")
    s.settimeout(5)
    got = b""
    while (b := s.recv(4096)):
        got += b
    check(got == b"error: request longer than 255 bytes\n", f"a 300-byte line: one error line: {got[:80]!r}")
    s.close()
    for s in silent:
        s.close()
    px.stop()


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def kill_one():
    """kill ID resets that connection only."""
    srv = Server(echo)
    path = sock_path("control")
    px = Proxy(srv.addr, *NOT_SMB, "--control", path)
    socks = [px.connect() for _ in range(3)]
    for s in socks:
        s.sendall(b"ping")
        s.recv(4)
    recs = ctl_json(path, "conns")["conns"]
    check(len(recs) == 3, f"three connections listed: {len(recs)}")
    victim = recs[1]
    port = int(victim["client"].rsplit(":", 1)[1])
    target = [s for s in socks if s.getsockname()[1] == port][0]
    r = ctl_json(path, "kill", str(victim["id"]))
    check(r == {"killed": victim["id"]}, f"kill --json: {r}")
    try:
        got = target.recv(10)
        reset = False
    except ConnectionResetError:
        got, reset = b"", True
    check(reset, f"the killed connection's client is reset (got {got!r})")
    for s in socks:
        if s is not target:
            s.sendall(b"pong")
            check(s.recv(4) == b"pong", "another connection still echoes")
    line = px.wait_log(r"^.* end=error \(killed by control socket \(uid 0 pid \d+\)\).*$")[0]
    check(victim["client"] in line, "its end line says it was killed, and by whom")
    ids = [x["id"] for x in ctl_json(path, "conns")["conns"]]
    check(victim["id"] not in ids and len(ids) == 2, f"conns no longer lists it: {ids}")
    r = ctl(path, "kill", str(victim["id"]), ok=False)
    check(r.returncode == 1 and "no such connection" in r.stdout, "killing it again: no such connection")
    text = ctl(path, "kill", str(ids[0])).stdout
    check(text == f"killed {ids[0]}\n", f"kill (text): {text.strip()}")
    for s in socks:
        s.close()
    px.stop()


def from_addr(port, src):
    """A connection to 127.0.0.1:port from the loopback address src, one
    echo round trip done."""
    s = socket.socket()
    s.settimeout(5)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"ping")
    check(s.recv(4) == b"ping", f"a connection from {src} echoes")
    return s


def was_reset(s):
    """Whether the proxy reset this client (its next read says so)."""
    try:
        s.recv(10)
        return False
    except ConnectionResetError:
        return True


def still_echoes(s):
    s.sendall(b"again")
    return recv_exact(s, 5) == b"again"


def two_listeners(extra=""):
    """A daemon with listeners a and b, each to an echo server of its own,
    the admin socket and the read-only one: (proxy, admin, view, conf,
    a's port, b's port, a's backend, b's backend)."""
    sa, sb = Server(echo), Server(echo)
    path = sock_path("control")
    ro = os.path.join(os.path.dirname(path), "control-ro")
    pa, pb = free_port(), free_port()
    conf = os.path.join(os.path.dirname(path), "smbsplice.conf")
    with open(conf, "w") as f:
        f.write(f"[global]\ncontrol = {path}\ncontrol-ro = {ro}\nworkers = 2\n{extra}\n"
                f"[a]\nlisten = 127.0.0.1:{pa}\nbackend = {sa.addr}\nfirst-frame = any\n\n"
                f"[b]\nlisten = 127.0.0.1:{pb}\nbackend = {sb.addr}\nfirst-frame = any\n")
    px = Proxy(None, "-c", conf, listen=False)
    px.wait_log(r"listener b: listening on")
    return px, path, ro, conf, pa, pb, sa.addr, sb.addr


def group_kills():
    """kill client ADDR[:PORT] resets every connection from that address
    and no other; kill backend HOST:PORT every one to that backend."""
    px, path, _, _, pa, pb, ba, bb = two_listeners()
    two = [from_addr(pa, "127.0.0.2") for _ in range(2)]
    three = [from_addr(pa, "127.0.0.3") for _ in range(2)]
    on_b = [from_addr(pb, "127.0.0.4") for _ in range(3)]
    out = ctl(path, "kill", "client", "127.0.0.2").stdout
    check(out == "killed 2 connections of client 127.0.0.2\n", f"kill client 127.0.0.2 (text): {out!r}")
    check(all(was_reset(s) for s in two), "both of 127.0.0.2's connections are reset")
    check(all(still_echoes(s) for s in three + on_b), "127.0.0.3's and b's still forward bytes")
    px.wait_log(r"control socket \(uid 0 pid \d+\): kill client 127\.0\.0\.2: 2 connections reset")
    lines = px.wait_log(r"^.*conn 127\.0\.0\.2:\d+ .* end=error \(killed by control socket \(uid 0 pid \d+\)\).*$",
                        count=2)
    check(len(lines) == 2, f"each has its end line saying who killed it: {lines}")
    port = three[0].getsockname()[1]
    r = ctl_json(path, "kill", "client", f"127.0.0.3:{port}")
    check(r == {"kill": "client", "match": f"127.0.0.3:{port}", "killed": 1},
          f"kill client ADDR:PORT --json: that one connection: {r}")
    check(was_reset(three[0]) and still_echoes(three[1]), "... its sibling from the same address lives on")
    r = ctl_json(path, "kill", "client", "127.0.0.2")
    check(r["killed"] == 0, f"a client with nothing left: killed 0, no error: {r}")
    # The IPv4-mapped form names the same client.
    r = ctl_json(path, "kill", "client", "::ffff:127.0.0.3")
    check(r["killed"] == 1 and was_reset(three[1]), f"kill client ::ffff:127.0.0.3 names 127.0.0.3: {r}")
    named = [x["backends"][0]["address"] for x in ctl_json(path, "listeners")["listeners"] if x["name"] == "b"]
    check(named == [bb], f"listeners names b's backend {bb}: {named}")
    survivor = from_addr(pa, "127.0.0.5")
    out = ctl(path, "kill", "backend", bb).stdout
    check(out == f"killed 3 connections of backend {bb}\n", f"kill backend (as listeners names it): {out!r}")
    check(all(was_reset(s) for s in on_b) and still_echoes(survivor),
          "b's three connections are reset; a's, to another backend, still forwards bytes")
    r = ctl(path, "kill", "backend", "127.0.0.1:9", ok=False)
    check(r.returncode == 1 and "no listener has that backend" in r.stdout, f"a backend no listener has: {r.stdout!r}")
    ids = [x["id"] for x in ctl_json(path, "conns")["conns"]]
    check(len(ids) == 1, f"one connection is left: {ids}")
    check(ctl_json(path, "kill", str(ids[0])) == {"killed": ids[0]} and was_reset(survivor), "kill ID still works")
    # An address without a port names every backend there: a's and b's.
    last = [from_addr(pa, "127.0.0.6"), from_addr(pb, "127.0.0.6")]
    r = ctl_json(path, "kill", "backend", "127.0.0.1")
    check(r["killed"] == 2 and all(was_reset(s) for s in last), f"kill backend ADDR: every port of it: {r}")
    for s in two + three + on_b + [survivor] + last:
        s.close()
    px.stop()


def info_fields():
    """info: version, pid, uptime, workers, listeners, connections, limits
    and build, in text and JSON, and sane."""
    px, path, ro, _, pa, _, _, _ = two_listeners("max-conns = 500\n")
    held = [from_addr(pa, "127.0.0.2") for _ in range(3)]
    version = subprocess.run([SMBSPLICE, "--version"], capture_output=True, text=True).stdout.split()[1]
    i1 = ctl_json(path, "info")
    time.sleep(1.2)
    i2 = ctl_json(ro, "info")
    print("info:", json.dumps(i2), flush=True)
    check(i1["version"] == version and i1["pid"] == px.proc.pid, f"version {version} and pid {px.proc.pid}: {i1}")
    check(0 <= i1["uptime"] < 60 and i2["uptime"] >= i1["uptime"] + 1.0,
          f"uptime grows with the clock: {i1['uptime']} then {i2['uptime']}")
    check(i1["workers"] == 2 and i1["listeners"] == 2 and i1["listeners_drained"] == 0,
          "two workers, two listeners, none drained")
    check(i1["conns"] == 3 and i1["conns_total"] >= 3, f"three connections now: {i1['conns']}, {i1['conns_total']}")
    check(i1["state"] == "running" and i1["level"] == "admin" and i2["level"] == "view",
          "running; the level of the socket asked")
    lim = i1["limits"]
    nofile = int(open(f"/proc/{px.proc.pid}/limits").read().split("Max open files")[1].split()[0])
    check(lim["max_conns"] == 500 and lim["max_conns_per_source"] is None and lim["open_files"] == nofile
          and 0 < lim["descriptors_limit"] < nofile and lim["descriptors_used"] >= 6
          and lim["max_pipes"] == 1024 and lim["pipe_size"] > 0 and lim["buffer_size"] == 65536
          and lim["unpipe_limit"] == lim["max_pipes"] * lim["pipe_size"],
          f"limits: --max-conns, none per source, the open-files limit {nofile}, the descriptor budget: {lim}")
    b = i1["build"]
    check(b["allocator"] in ("jemalloc", "glibc", "AddressSanitizer") and isinstance(b["sanitizers"], bool)
          and b["libsystemd"] is True and b["compiler"], f"build: {b}")
    check(b["sanitizers"] == ("ASAN_OPTIONS" in os.environ or b["allocator"] == "AddressSanitizer"),
          "sanitizers: as this build was made")
    text = ctl(path, "info").stdout
    check(f"pid: {px.proc.pid}\n" in text and "max_conns: 500\n" in text
          and "max_conns_per_source: none\n" in text and text.startswith(f"version: {version}\n"),
          f"info (text): key: value lines: {text!r}")
    for s in held:
        s.close()
    px.stop()


def refused(sock, *cmd):
    r = ctl(sock, *cmd, ok=False)
    return r.returncode == 1 and r.stdout.startswith(
        "error: permission denied: this socket is read-only (level view)")


def view_serves(ro, path, pa):
    """What the read-only socket serves and refuses, the admin socket still
    acting: (the connection left, its id)."""
    victim, keep = from_addr(pa, "127.0.0.2"), from_addr(pa, "127.0.0.3")
    ids = {r["client"].split(":")[0]: r["id"] for r in ctl_json(ro, "conns")["conns"]}
    for cmd in (("conns",), ("conn", str(ids["127.0.0.2"])), ("listeners",), ("top",), ("info",), ("help",)):
        check(ctl(ro, *cmd, ok=False).returncode == 0 and ctl(ro, *cmd, "--json", ok=False).returncode == 0,
              f"the read-only socket serves {' '.join(cmd)}, in text and JSON")
    for cmd in (("drain", "a"), ("resume", "a"), ("kill", str(ids["127.0.0.2"])),
                ("kill", "client", "127.0.0.2"), ("kill", "backend", "127.0.0.1:1"), ("kill", "bogus"),
                ("drain", "no such listener")):
        check(refused(ro, *cmd), f"the read-only socket refuses {' '.join(cmd)}")
    r = ctl(ro, "frobnicate", ok=False)
    check(r.returncode == 1 and r.stdout.startswith("error: unknown command"),
          f"a word that names no command: unknown there too, not run: {r.stdout!r}")
    j = json.loads(ctl(ro, "kill", "client", "127.0.0.2", "--json", ok=False).stdout)
    check(j["error"].startswith("permission denied"), f"... in JSON too: {j}")
    check(still_echoes(victim) and still_echoes(keep), "nothing it refused was done: both connections live")
    check(from_addr(pa, "127.0.0.4") is not None, "... and listener a still accepts")
    help_ro = ctl(ro, "help").stdout
    check("conns" in help_ro and "kill" not in help_ro.split("this socket is read-only")[0],
          f"help on it lists only what it serves: {help_ro!r}")
    check(ctl_json(path, "kill", "client", "127.0.0.2")["killed"] == 1 and was_reset(victim),
          "the admin socket still acts: kill client")
    victim.close()
    return keep


def read_only_level():
    """--control-ro: a second socket that serves every command that looks
    and refuses every one that acts; both survive a reload and a live
    handover."""
    px, path, ro, conf, pa, pb, _, _ = two_listeners()
    st = os.lstat(ro)
    check(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
          f"--control-ro: a Unix socket of mode {oct(stat.S_IMODE(st.st_mode))} (0600 wanted)")
    px.wait_log(r"control socket at .*control-ro \(mode 0600, level view\)")
    keep = view_serves(ro, path, pa)
    px.wait_log(r"control socket: uid 0 pid \d+ refused to drain: the socket is read-only")
    # A reload leaves both sockets serving, each at its level.
    with open(conf, "a") as f:
        f.write("\n[c]\nlisten = 127.0.0.1:%d\nbackend = 127.0.0.1:9\n" % free_port())
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"listener c: listening on")
    check(sorted(x["name"] for x in ctl_json(ro, "listeners")["listeners"]) == ["a", "b", "c"],
          "after a reload the read-only socket serves listeners, c included")
    check(refused(ro, "drain", "c") and ctl_json(path, "drain", "c")["drained"], "... and refuses drain; admin drains")
    ctl(path, "resume", "c")
    # A live handover brings both sockets to the new process.
    ino = {p: os.lstat(p).st_ino for p in (path, ro)}
    d = px.handover()
    check({p: os.lstat(p).st_ino for p in (path, ro)} == ino, "after a handover both nodes are the same sockets")
    check(ctl_json(ro, "info")["pid"] == d["pid"] and ctl_json(path, "info")["pid"] == d["pid"],
          f"both answer from the new process, pid {d['pid']}")
    check(refused(ro, "kill", "client", "127.0.0.3") and still_echoes(keep),
          "the read-only socket still refuses to kill, and the connection handed over lives")
    r = ctl_json(path, "kill", "client", "127.0.0.3")
    check(r["killed"] == 1 and was_reset(keep), f"the admin socket still kills: {r}")
    keep.close()
    px.stop()
    check(not os.path.lexists(ro) and not os.path.lexists(path), "a stop removes both nodes")
    # One path for both is a mistake, said in one line.
    r = subprocess.run([SMBSPLICE, "-l", f"127.0.0.1:{free_port()}", "-b", "127.0.0.1:9", *NOT_SMB,
                        "--control", path, "--control-ro", path], capture_output=True, text=True, timeout=20)
    check(r.returncode != 0 and "--control and --control-ro name the same path" in r.stderr,
          f"--control-ro at --control's path: refused ({r.returncode}: {r.stderr.strip()})")


def ro_group_unprivileged():
    """The shipped unit runs without root, and its system call filter
    refuses chown() (SystemCallFilter=~@privileged): a daemon whose own
    group is --control-ro-group's (the unit's Group=) makes the socket
    with that group and mode 0660 without one."""
    path = sock_path("control-ro")
    d = os.path.dirname(path)
    users = grp.getgrnam("users").gr_gid
    os.chown(d, 65534, users)
    os.chmod(d, 0o750)
    binary = user_copy(SMBSPLICE)
    log = os.path.join(d, "strace.log")
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:  # LeakSanitizer cannot stop threads under ptrace
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    p = subprocess.Popen(["strace", "-f", "-qq", "-o", log, "-e", "trace=chown,fchown,fchownat,lchown,setfsgid",
                          "-e", "inject=chown,fchown,fchownat,lchown,setfsgid:error=EPERM",
                          "setpriv", "--reuid=65534", f"--regid={users}", "--clear-groups", binary,
                          "--listen", f"127.0.0.1:{free_port()}", "--backend", "127.0.0.1:9", *NOT_SMB,
                          "--control-ro", path, "--control-ro-group", "users"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for("the read-only socket of a start without root", lambda: os.path.lexists(path) or p.poll() is not None,
                 timeout=10)
        st = os.lstat(path) if os.path.lexists(path) else None
        check(st is not None and stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == users,
              f"without root and without chown(): the socket is born mode 0660, group users "
              f"({p.poll()}: {oct(stat.S_IMODE(st.st_mode)) if st else '-'}, gid {st.st_gid if st else '-'})")
        r = subprocess.run(["setpriv", "--reuid=65533", f"--regid={users}", "--clear-groups", binary, "ctl",
                            "--control", path, "info"], capture_output=True, text=True, timeout=20)
        check(r.returncode == 0 and "level: view" in r.stdout,
              f"another user of the group may look through it ({r.returncode}: {r.stderr.strip()})")
    finally:
        # SIGTERM to strace would detach it and leave smbsplice running.
        with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
            kids = f.read().split()
        if kids:
            os.kill(int(kids[0]), signal.SIGTERM)
        else:
            p.terminate()
        p.communicate(timeout=30)
        shutil.rmtree(os.path.dirname(binary), ignore_errors=True)
    calls = [ln for ln in open(log) if "chown" in ln or "setfsgid" in ln]
    check(not calls, f"no chown() or setfsgid() was made: {calls}")


def drain_resume():
    """drain stops new connections on one listener; resume undoes it."""
    srv = Server(echo)
    path = sock_path("control")
    pa, pb = free_port(), free_port()
    conf = os.path.join(os.path.dirname(path), "smbsplice.conf")
    with open(conf, "w") as f:
        f.write(f"[global]\ncontrol = {path}\nworkers = 2\n\n"
                f"[a]\nlisten = 127.0.0.1:{pa}\nbackend = {srv.addr}\nfirst-frame = any\n\n"
                f"[b]\nlisten = 127.0.0.1:{pb}\nbackend = {srv.addr}\nfirst-frame = any\n")
    px = Proxy(None, "-c", conf, listen=False)
    px.wait_log(r"listener b: listening on")

    def works(port):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=3)
            s.sendall(b"hi")
            ok = s.recv(2) == b"hi"
            s.close()
            return ok
        except OSError:
            return False
    held = socket.create_connection(("127.0.0.1", pa), timeout=3)
    held.sendall(b"x")
    held.recv(1)
    r = ctl_json(path, "drain", "a")
    check(r == {"listener": "a", "drained": True}, f"drain a --json: {r}")
    check(not works(pa), "after drain a, a new connection to a is refused")
    check(works(pb), "... while b keeps accepting")
    held.sendall(b"y")
    check(held.recv(1) == b"y", "... and a's open connection keeps running")
    states = {l["name"]: l["drained"] for l in ctl_json(path, "listeners")["listeners"]}
    check(states == {"a": True, "b": False}, f"listeners says which is drained: {states}")
    px.wait_log(r"listener a: drained by control socket \(uid 0 pid \d+\)")
    check(ctl(path, "resume", "a").stdout == "listener a resumed\n", "resume a (text)")
    check(works(pa), "after resume a, a accepts again")
    check(ctl(path, "drain", "nosuch", ok=False).returncode == 1, "drain of an unknown listener: an error")
    held.close()
    px.stop()


def group_at_birth():
    """--control-group: the node is made with its group and mode, nothing
    names the path after bind(), and a set-group-ID directory is refused."""
    gid = grp.getgrnam("nogroup").gr_gid
    path = sock_path("control")
    os.chmod(os.path.dirname(path), 0o777)  # anyone may swap names in it
    log = os.path.join(os.path.dirname(path), "strace.log")
    watched = "chown,fchown,lchown,fchownat,chmod,fchmod,fchmodat,bind"
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:  # LeakSanitizer cannot stop threads under ptrace
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    px = Proxy("127.0.0.1:9", *NOT_SMB, "--control", path, "--control-group", "nogroup",
               wrap=("strace", "-f", "-qq", "-o", log, "-e", f"trace={watched}"), env=env)
    st = os.lstat(path)
    check(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == gid,
          f"--control-group: a socket of mode {oct(stat.S_IMODE(st.st_mode))} and gid {st.st_gid}"
          f" (0660, {gid} wanted)")
    check(ctl(path, "conns").stdout.startswith("ID "), "... which answers")
    # SIGTERM to strace would detach it and leave smbsplice running.
    with open(f"/proc/{px.proc.pid}/task/{px.proc.pid}/children") as f:
        os.kill(int(f.read().split()[0]), signal.SIGTERM)
    px.proc.wait(30)
    px.stop(check_fds=False)
    calls = [ln for ln in open(log) if path in ln]
    binds = [ln for ln in calls if " bind(" in ln]
    by_path = [ln for ln in calls if " bind(" not in ln]
    check(len(binds) == 1 and not by_path,
          f"no chown() or chmod() names the control path, only its bind(): {calls}")

    path = sock_path("control")
    d = os.path.dirname(path)
    os.chown(d, 0, 0)
    os.chmod(d, 0o2755)
    r = subprocess.run([SMBSPLICE, "--listen", f"127.0.0.1:{free_port()}", "--backend", "127.0.0.1:9",
                        *NOT_SMB, "--control", path, "--control-group", "nogroup"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode != 0 and "set-group-ID" in r.stderr and not os.path.lexists(path),
          f"a set-group-ID directory giving another group: refused, nothing left ({r.returncode}: {r.stderr.strip()})")

    # Without root, a member of the group (a supplementary one) gives it
    # the socket: setfsgid() would not take that group.
    path = sock_path("control")
    d = os.path.dirname(path)
    os.chown(d, 65534, 65534)
    binary = user_copy(SMBSPLICE)
    users = grp.getgrnam("users").gr_gid
    p = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", f"--groups={users}", binary,
                          "--listen", f"127.0.0.1:{free_port()}", "--backend", "127.0.0.1:9", *NOT_SMB,
                          "--control", path, "--control-group", "users"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for("the control socket of a start without root", lambda: os.path.lexists(path) or p.poll() is not None,
                 timeout=10)
        st = os.lstat(path) if os.path.lexists(path) else None
        check(st is not None and stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == users,
              f"without root, a member of the group: the socket is given to it, mode 0660 "
              f"({p.poll()}: {oct(stat.S_IMODE(st.st_mode)) if st else '-'}, gid {st.st_gid if st else '-'})")
    finally:
        p.terminate()
        p.communicate(timeout=30)
        shutil.rmtree(os.path.dirname(binary), ignore_errors=True)


def unit_and_directory():
    """The path `smbsplice ctl` tries first is in the directory the
    shipped unit has systemd make (RuntimeDirectory=, as ProtectSystem=
    strict leaves the rest of /run read-only), and a control socket whose
    directory is missing says, in its one line, what to do."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "contrib", "systemd", "smbsplice.service.in")) as f:
        unit = f.read()
    rdir = re.search(r"^RuntimeDirectory=(\S+)$", unit, re.M)
    usage = subprocess.run([SMBSPLICE, "ctl", "--help"], capture_output=True, text=True, timeout=10)
    default = re.search(r"PATH defaults to (\S+),", usage.stdout + usage.stderr)
    check(rdir and default and os.path.dirname(default.group(1)) == "/run/" + rdir.group(1),
          f"ctl's default path ({default and default.group(1)}) is in the unit's RuntimeDirectory "
          f"({rdir and rdir.group(1)})")
    missing = os.path.join(tempfile.mkdtemp(dir=TMPDIR), "no-such-dir", "control")
    r = subprocess.run([SMBSPLICE, "-l", f"127.0.0.1:{free_port()}", "-b", "127.0.0.1:9", *NOT_SMB, "--control", missing],
                       capture_output=True, text=True, timeout=20)
    line = [l for l in r.stderr.splitlines() if "control socket" in l]
    check(r.returncode != 0 and len(line) == 1 and "RuntimeDirectory=smbsplice" in line[0],
          f"a missing directory: one line that says what to do ({r.returncode}: {line})")


def main():
    unit_and_directory()
    group_at_birth()
    silent_clients()
    kill_one()
    drain_resume()
    group_kills()
    info_fields()
    read_only_level()
    ro_group_unprivileged()
    samba_in_flight()
    many_moving()


if __name__ == "__main__":
    run(main)
