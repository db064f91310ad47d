"""QUIC in the field (`bench.py --only quicfield`, issue 33): what idle
sessions cost, what a live upgrade does to open QUIC sessions, and how
long TCP sessions spread over the workers.

Theory of operation, all on loopback against bench.py's connstorm echo
(--mode tcp everywhere, so that the figures are the front's and not an
SMB server's):

- idle: N sessions (--quicfield-idle, default 9,000, or as many as a
  third of the open-files limit allows; --quick 300) held idle through
  each contestant, and the contestant's resident memory
  growth per session once they are open and quiet (after IDLE_SETTLE
  seconds: smbsplice gives back a quiet stream's ring pages after a
  second), against a base taken with WARM sessions open. Contestants:
  smbsplice with TCP clients (this process holds the sockets),
  smbsplice's quic: listener and the quic-go relay (tests/quic's
  quicrelay server), both held by tests/quic's qhold (quic-go). A QUIC
  session takes three of smbsplice's descriptors (its socketpair's two
  ends and the backend's socket), so N is kept under a third of the
  open-files limit (the report says when it was cut).
- census: whose heap those bytes are. smbsplice's quic: listener again,
  under contrib/bench/heapcensus.so, with WARM sessions and then
  CENSUS_N more: the live heap bytes each library allocated (libngtcp2,
  libgnutls, smbsplice itself, the rest), per session, from the
  difference of two censuses. Allocated, not resident: a page never
  touched is not resident, so a library's resident share can be smaller.
- handover: for each N of --quicfield-handover (default 10,1000), N idle
  QUIC sessions (qhold) and a transfer in flight (smbqc nc: 64 MiB
  through the echo and back) through smbsplice --workers 2, then one
  `kill -USR2`: the pause the old process logs, whether the transfer's
  bytes came back exact, how many of the N sessions answered 8 bytes
  after the handover (qhold -verify), and how long the old process took
  to exit once the sessions closed.
- flood: a transfer of XFER through smbsplice's quic: listener
  (--workers 2, --quic-retry auto) alone, then again with another
  process, started once an eighth of it has come back (a transfer in
  flight), sending real client Initials (smbqc's first, sealed again under
  fresh IDs: tests/integ/test_quic_flood.py's) from random 127/8 source
  addresses through a raw socket as fast as it can, until the transfer
  ends: both rates, their ratio, the flood's rate, and what the listener
  did with it (Retries, handshakes begun).
- split: ROUNDS rounds of four TCP connections at once, each moving
  SPLIT_BYTES through the echo while all four are open, through
  smbsplice --workers 2: in how many rounds `ctl conns` showed them 2+2,
  and how many clients were handed to the other worker.

Bounds: every wait has a time limit; whatever this part started is
stopped at the end.
"""
import collections
import hashlib
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(TOP, "tests/integ"))
from harness import wait_for  # noqa: E402
from test_quic import NAME, free_udp_port, make_certs, rss_kib  # noqa: E402
SMBSPLICE = os.path.join(TOP, "proxy/smbsplice")
BIN = os.path.join(TOP, "tests/quic/bin")
WARM = 20
IDLE_SETTLE = 5.0
CENSUS_N = 1000
ROUNDS = 8
SPLIT_BYTES = 4 << 20
XFER = 64 << 20
TIMEOUT = 120.0
DONE_RE = re.compile(r"handover: (\d+) connections to pid (\d+), forwarding paused ([\d.]+) ms")
STAY_RE = re.compile(r"handover: (\d+) QUIC connections stay in this process")


def certs(work):
    """A CA and a server certificate for NAME, as the tests make them:
    (ca, cert, key)."""
    d = os.path.join(work, "quicfield-certs")
    os.makedirs(d, exist_ok=True)
    return make_certs(d)[:3]


class Daemon:
    """A process of ours with its log in a file."""

    def __init__(self, argv, work, name, env=None):
        self.logname = os.path.join(work, f"{name}.log")
        self.logf = open(self.logname, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.logf, env=env)

    def log(self):
        with open(self.logname, errors="replace") as f:
            return f.read()

    def wait_log(self, rx, count=1, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = rx.findall(self.log())
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise RuntimeError(f"no {rx.pattern!r} within {timeout:.0f} s in {self.logname}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


def qhold(port, ca, n, *extra):
    p = subprocess.Popen([os.path.join(BIN, "qhold"), "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca,
                          "-n", str(n), *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    line = p.stdout.readline().decode()
    if not line.startswith(f"held {n}"):
        p.kill()
        raise RuntimeError(f"qhold -n {n}: {line.strip()} {p.stderr.read().decode().strip()[-300:]}")
    return p


def tcp_hold(port, n):
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        msg = b"%08d" % i
        s.sendall(msg)
        got = b""
        while len(got) < 8:
            more = s.recv(8 - len(got))
            if not more:
                raise RuntimeError("a held TCP session ended")
            got += more
        socks.append(s)
    return socks


def per_session(pid, base, n):
    time.sleep(IDLE_SETTLE)
    return (rss_kib(pid) - base) / n


def idle_one(name, n, echo, cert, work, tools):
    """One contestant's memory per idle session."""
    ca, crt, key = cert
    if name == "smbsplice tcp":
        port = tools["free_port"]()
        d = Daemon([SMBSPLICE, "--listen", f"127.0.0.1:{port}", "--backend", f"127.0.0.1:{echo}", "--mode", "tcp",
                    "--workers", "1"], work, "qf-idle-tcp")
        tools["wait_listening"](port)
        try:
            warm = tcp_hold(port, WARM)
            time.sleep(1)
            base = rss_kib(d.proc.pid)
            socks = tcp_hold(port, n)
            kib = per_session(d.proc.pid, base, n)
            for s in socks + warm:
                s.close()
        finally:
            d.stop()
        return kib
    port = free_udp_port()
    if name == "smbsplice quic":
        argv = [SMBSPLICE, "--listen", f"quic:127.0.0.1:{port}", "--backend", f"127.0.0.1:{echo}", "--mode", "tcp",
                "--workers", "1", "--quic-cert", crt, "--quic-key", key]
    else:
        argv = [os.path.join(BIN, "quicrelay"), "server", "-listen", f"127.0.0.1:{port}", "-backend",
                f"127.0.0.1:{echo}", "-cert", crt, "-key", key]
    d = Daemon(argv, work, "qf-idle-" + name.split()[0])
    time.sleep(1)
    try:
        warm = qhold(port, ca, WARM)
        time.sleep(2)
        base = rss_kib(d.proc.pid)
        q = qhold(port, ca, n)
        kib = per_session(d.proc.pid, base, n)
        for p in (q, warm):
            p.stdin.close()
            p.wait(timeout=60)
    finally:
        d.stop()
    return kib


def census_read(pid, path):
    """Ask heapcensus.so in process pid for a census: live heap bytes by
    the file (library or program) whose code asked for them."""
    if os.path.exists(path):
        os.unlink(path)
    os.kill(pid, signal.SIGRTMIN + 3)
    wait_for(f"heapcensus.so's census in {path}", lambda: os.path.exists(path))
    with open(path) as f:
        lines = f.read().split("\n")
    os.unlink(path)
    if lines[0] != "census":
        raise RuntimeError(f"heapcensus: {lines[0] or 'no census'}: its tables were full")
    maps = []
    with open(f"/proc/{pid}/maps") as f:
        for m in f:
            parts = m.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if len(parts) >= 6 and "x" in parts[1]:
                maps.append((lo, hi, os.path.basename(parts[5])))
    by = collections.Counter()
    for ln in lines[1:]:
        if not ln:
            continue
        addr, nbytes, _ = ln.split()
        a = int(addr, 16)
        lib = next((name for lo, hi, name in maps if lo <= a < hi), "?")
        by[lib] += int(nbytes)
    return by


def census(n, echo, cert, work, tools):
    """Heap bytes per idle QUIC session by the library that allocated them."""
    ca, crt, key = cert
    so = os.path.join(tools["bin"], "heapcensus.so")
    out = os.path.join(work, "heapcensus.txt")
    port = free_udp_port()
    d = Daemon([SMBSPLICE, "--listen", f"quic:127.0.0.1:{port}", "--backend", f"127.0.0.1:{echo}", "--mode", "tcp",
                "--workers", "1", "--quic-cert", crt, "--quic-key", key], work, "qf-census",
               env=dict(os.environ, LD_PRELOAD=so, HEAPCENSUS_OUT=out))
    held = []
    try:
        time.sleep(1)
        held.append(qhold(port, ca, WARM))
        time.sleep(2)
        before = census_read(d.proc.pid, out)
        held.append(qhold(port, ca, n))
        time.sleep(IDLE_SETTLE)
        after = census_read(d.proc.pid, out)
    finally:
        for p in held:
            p.stdin.close()
            p.wait(timeout=60)
        d.stop()
    libs = collections.Counter()
    for lib in set(before) | set(after):
        libs[lib.split(".so")[0]] += (after[lib] - before[lib]) / n
    return {"n": n, "bytes": {k: v for k, v in sorted(libs.items(), key=lambda kv: -kv[1]) if abs(v) >= 1}}


def xfer_file(work, name):
    """XFER random bytes in a file of the work directory: its path and
    SHA-256."""
    src = os.path.join(work, name)
    data = os.urandom(XFER)
    with open(src, "wb") as f:
        f.write(data)
    return src, hashlib.sha256(data).hexdigest()


def handover_one(n, echo, cert, work, log):
    """N idle QUIC sessions and a transfer in flight through one handover."""
    ca, crt, key = cert
    port = free_udp_port()
    d = Daemon([SMBSPLICE, "--listen", f"quic:127.0.0.1:{port}", "--backend", f"127.0.0.1:{echo}", "--mode", "tcp",
                "--workers", "2", "--quic-cert", crt, "--quic-key", key], work, f"qf-handover-{n}")
    time.sleep(1)
    src, want = xfer_file(work, "qf-xfer.in")
    q = None
    try:
        q = qhold(port, ca, n, "-verify")
        got = hashlib.sha256()
        xfer = subprocess.Popen([os.path.join(BIN, "smbqc"), "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca,
                                 "nc"], stdin=open(src, "rb"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        total = [0]

        def read():
            while (b := xfer.stdout.read1(1 << 20)):
                got.update(b)
                total[0] += len(b)

        t = threading.Thread(target=read)
        t.start()
        end = time.monotonic() + 30
        while total[0] < XFER // 8 and time.monotonic() < end:
            time.sleep(0.01)
        d.proc.send_signal(signal.SIGUSR2)
        done = d.wait_log(DONE_RE)[0]
        stay = d.wait_log(STAY_RE)[0]
        t.join(timeout=TIMEOUT)
        xfer.wait(timeout=TIMEOUT)
        q.stdin.close()
        line = q.stdout.readline().decode()
        m = re.match(r"verified (\d+) of (\d+)", line)
        closed = time.monotonic()
        q.wait(timeout=TIMEOUT)
        try:
            d.proc.wait(timeout=TIMEOUT)
            exit_s = time.monotonic() - closed
        except subprocess.TimeoutExpired:
            exit_s = None
        new = int(done[1])
        try:
            os.kill(new, signal.SIGINT)
        except ProcessLookupError:
            pass
        return {"n": n, "pause_ms": float(done[2]), "stayed": int(stay), "in_flight_at_signal": XFER // 8,
                "exact": total[0] == XFER and got.hexdigest() == want, "moved": total[0],
                "verified": int(m.group(1)) if m else 0, "old_exit_s": exit_s}
    finally:
        if q and q.poll() is None:
            q.kill()
        d.stop()
        os.unlink(src)


FLOODER = r"""
import pickle, random, socket, struct, sys
port = int(sys.argv[2])
with open(sys.argv[1], "rb") as f:
    datagrams = pickle.load(f)
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
dst = socket.inet_aton("127.0.0.1")
rnd = random.Random(33)
n = 0
while True:
    for d in datagrams:
        src = bytes([127, rnd.randrange(1, 255), rnd.randrange(0, 256), rnd.randrange(1, 255)])
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 0, 0, 0, 64, 17, 0, src, dst)
        udp = struct.pack(">HHHH", rnd.randrange(1024, 65535), port, 8 + len(d), 0)
        try:
            s.sendto(ip + udp + d, ("127.0.0.1", 0))
            n += 1
        except OSError:
            pass
        if n % 1000 == 0:
            print(n, flush=True)
"""


def nc_rate(port, ca, src, want, begun=None):
    """smbqc nc of src through the echo: (exact, MB/s). With begun, a
    callable run once an eighth has come back (the flood's start): the
    rate is then of what came back after it."""
    h = hashlib.sha256()
    n, mark = 0, None
    t0 = time.monotonic()
    with open(src, "rb") as i:
        p = subprocess.Popen([os.path.join(BIN, "smbqc"), "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", ca,
                              "nc"], stdin=i, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        while (b := p.stdout.read1(1 << 20)):
            h.update(b)
            n += len(b)
            if begun and mark is None and n >= XFER // 8:
                begun()
                mark = (time.monotonic(), n)
        p.wait(timeout=TIMEOUT)
    t1 = time.monotonic()
    rate = (XFER - mark[1]) / (t1 - mark[0]) / 1e6 if mark else XFER / (t1 - t0) / 1e6
    return p.returncode == 0 and n == XFER and h.hexdigest() == want, rate


def quic_counters(port):
    text = metrics(port)
    return {k: sum(float(v) for v in re.findall(rf"smbsplice_quic_{k}_total{{[^}}]*}} ([\d.e+]+)", text))
            for k in ("retries", "handshakes")}


def flood(echo, cert, work, tools):
    """A transfer alone and under a spoofed handshake flood."""
    import pickle
    from quicinitial import have_crypto
    if not have_crypto():
        return {"failed": "python3-cryptography is missing: the Initials cannot be sealed"}
    from test_quic_flood import forged
    from test_quic_hostile import Forwarder
    ca, crt, key = cert
    port, stats = free_udp_port(), tools["free_port"]()
    d = Daemon([SMBSPLICE, "--listen", f"quic:127.0.0.1:{port}", "--backend", f"127.0.0.1:{echo}", "--mode", "tcp",
                "--workers", "2", "--quic-retry", "auto", "--quic-cert", crt, "--quic-key", key, "--stats",
                f"127.0.0.1:{stats}"], work, "qf-flood")
    time.sleep(1)
    src, want = xfer_file(work, "qf-flood.in")
    fl = None
    try:
        fw = Forwarder(port)
        p = subprocess.Popen([os.path.join(BIN, "smbqc"), "-addr", f"127.0.0.1:{fw.port}", "-name", NAME, "-ca", ca,
                              "nc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        end = time.monotonic() + 10
        while not fw.got and time.monotonic() < end:
            time.sleep(0.01)
        p.communicate(b"x", timeout=30)
        fw.close()
        dg = os.path.join(work, "qf-flood.pickle")
        with open(dg, "wb") as f:
            pickle.dump(forged(fw.got[0], 5000), f)
        exact_calm, calm = nc_rate(port, ca, src, want)
        before = quic_counters(stats)
        script = os.path.join(work, "qf-flooder.py")
        with open(script, "w") as f:
            f.write(FLOODER)
        started = {}

        def begin():
            started["p"] = subprocess.Popen(["python3", script, dg, str(port)], stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL)
            started["p"].stdout.readline()  # it is sending
            started["t"] = time.monotonic()

        exact_flood, stormy = nc_rate(port, ca, src, want, begin)
        fl = started.get("p")
        secs = time.monotonic() - started.get("t", time.monotonic())
        sent = 0
        if fl:
            fl.send_signal(signal.SIGTERM)
            for line in fl.stdout.read().decode().split():
                sent = int(line)
        after = quic_counters(stats)
        return {"calm": calm, "flood": stormy, "exact": exact_calm and exact_flood, "flood_rate": sent / secs,
                "retries": after["retries"] - before["retries"],
                "handshakes": after["handshakes"] - before["handshakes"]}
    finally:
        if fl and fl.poll() is None:
            fl.kill()
        d.stop()
        os.unlink(src)


def split(echo, work, tools):
    """ROUNDS rounds of four long TCP connections over two workers."""
    port, stats = tools["free_port"](), tools["free_port"]()
    ctl = os.path.join(work, "qf-split.ctl")
    d = Daemon([SMBSPLICE, "--listen", f"127.0.0.1:{port}", "--backend", f"127.0.0.1:{echo}", "--mode", "tcp",
                "--workers", "2", "--control", ctl, "--stats", f"127.0.0.1:{stats}"], work, "qf-split")
    tools["wait_listening"](port)

    def conns():
        r = subprocess.run([SMBSPLICE, "ctl", "--control", ctl, "conns", "--json"], capture_output=True, text=True,
                           timeout=30)
        return json.loads(r.stdout)["conns"]

    even, spreads = 0, []
    try:
        for _ in range(ROUNDS):
            socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(4)]
            end = time.monotonic() + 20
            while len(conns()) < 4 and time.monotonic() < end:
                time.sleep(0.02)
            spread = sorted(collections.Counter(c["worker"] for c in conns()).values(), reverse=True)
            spreads.append(spread)
            even += spread == [2, 2]
            data = os.urandom(SPLIT_BYTES)

            def move(s):
                threading.Thread(target=s.sendall, args=(data,), daemon=True).start()
                got = 0
                while got < SPLIT_BYTES:
                    b = s.recv(1 << 20)
                    if not b:
                        break
                    got += len(b)

            ts = [threading.Thread(target=move, args=(s,)) for s in socks]
            for t in ts:
                t.start()
            for t in ts:
                t.join(timeout=TIMEOUT)
            for s in socks:
                s.close()
            end = time.monotonic() + 20
            while conns() and time.monotonic() < end:
                time.sleep(0.02)
        moved = sum(int(x) for x in re.findall(r'smbsplice_worker_connections_moved_total\{worker="\d+"\} (\d+)',
                                                 metrics(stats)))
    finally:
        d.stop()
    return {"rounds": ROUNDS, "even": even, "spreads": spreads, "moved": moved}


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        return r.read().decode()


def run_quicfield(args, work, echo, log, tools):
    """bench.py's entry."""
    res = {"idle": [], "handover": [], "flood": None, "split": None}
    if not all(os.access(os.path.join(BIN, b), os.X_OK) for b in ("qhold", "quicrelay", "smbqc")):
        res["skipped"] = "tests/quic's Go tools are not built (golang-go and quic-go)"
        return res
    cert = certs(work)
    n = args.quicfield_idle if not args.quick else min(args.quicfield_idle, 300)
    fits = (resource.getrlimit(resource.RLIMIT_NOFILE)[1] - 500) // 3
    if n > fits:
        log(f"quicfield idle: {n} sessions would need {3 * n} descriptors: {fits} fit under the limit")
        res["idle_cut"] = {"asked": n, "limit": resource.getrlimit(resource.RLIMIT_NOFILE)[1]}
        n = fits
    for name in ("smbsplice tcp", "smbsplice quic", "quic-go relay"):
        try:
            kib = idle_one(name, n, echo, cert, work, tools)
            res["idle"].append({"name": name, "n": n, "kib": kib})
            log(f"quicfield idle: {name}: {kib:.1f} KiB per session at {n}")
        except Exception as e:
            res["idle"].append({"name": name, "n": n, "failed": " ".join(str(e).split())[-300:]})
            log(f"quicfield idle: {name}: failed: {e}")
    try:
        res["census"] = census(min(n, CENSUS_N), echo, cert, work, tools)
        log(f"quicfield census: {res['census']}")
    except Exception as e:
        res["census"] = {"failed": " ".join(str(e).split())[-300:]}
        log(f"quicfield census: failed: {e}")
    for c in [int(x) for x in args.quicfield_handover.split(",") if x]:
        try:
            h = handover_one(c, echo, cert, work, log)
            res["handover"].append(h)
            log(f"quicfield handover: {c} sessions: {h}")
        except Exception as e:
            res["handover"].append({"n": c, "failed": " ".join(str(e).split())[-300:]})
            log(f"quicfield handover {c}: failed: {e}")
    try:
        res["flood"] = flood(echo, cert, work, tools)
        log(f"quicfield flood: {res['flood']}")
    except Exception as e:
        res["flood"] = {"failed": " ".join(str(e).split())[-300:]}
        log(f"quicfield flood: failed: {e}")
    try:
        res["split"] = split(echo, work, tools)
        log(f"quicfield split: {res['split']}")
    except Exception as e:
        res["split"] = {"failed": " ".join(str(e).split())[-300:]}
    return res


def table(r):
    """The report's tables (report.py)."""
    if not r:
        return ""
    if r.get("skipped"):
        return f"### QUIC in the field\n\nSkipped: {r['skipped']}.\n"
    cut = r.get("idle_cut")
    out = ["### QUIC in the field: idle sessions\n",
           f"Resident memory growth per idle session, {IDLE_SETTLE:g} s after they are open (--mode tcp to an echo; "
           "the base taken with a few open)." +
           (f" {cut['asked']:,} were asked for; a QUIC session takes three descriptors and the open-files limit "
            f"is {cut['limit']:,}, so fewer were held." if cut else "") + "\n", "| contestant | sessions | KiB per session | ÷ quic-go relay |",
           "|---|---|---|---|"]
    relay = next((x.get("kib") for x in r["idle"] if x["name"] == "quic-go relay"), None)
    for x in r["idle"]:
        if x.get("failed"):
            out.append(f"| {x['name']} | {x['n']:,} | failed: {x['failed'][:100]} | |")
            continue
        ratio = f"{x['kib'] / relay:.2f}×" if relay else ""
        out.append(f"| {x['name']} | {x['n']:,} | {x['kib']:.1f} | {ratio} |")
    ce = r.get("census") or {}
    if ce.get("failed"):
        out += ["", f"Whose heap: failed: {ce['failed'][:200]}"]
    elif ce:
        total = sum(ce["bytes"].values())
        out += ["", f"Whose heap an idle smbsplice QUIC session is (contrib/bench/heapcensus.so, {ce['n']:,} sessions): "
                "live bytes allocated per session, by the library that asked; allocated, not resident (pages never "
                "touched are not resident).\n", "| library | KiB per session | share |", "|---|---|---|"]
        for lib, b in ce["bytes"].items():
            out.append(f"| {lib} | {b / 1024:.1f} | {b / total:.0%} |")
        out.append(f"| all | {total / 1024:.1f} | |")
    out += ["", "### QUIC in the field: a live upgrade with open QUIC sessions\n",
            f"One `kill -USR2` with N idle sessions (qhold) and a {XFER >> 20} MiB transfer in flight, "
            "--workers 2: the pause the old process logs, the QUIC connections it kept, the transfer's bytes, the "
            "sessions that answered afterwards, and the old process's exit after they closed.\n",
            "| N idle | pause ms | kept by the old process | transfer | answered after | old process gone after |",
            "|---|---|---|---|---|---|"]
    for h in r["handover"]:
        if h.get("failed"):
            out.append(f"| {h['n']:,} | failed: {h['failed'][:100]} | | | | |")
            continue
        gone = f"{h['old_exit_s']:.2f} s" if h.get("old_exit_s") is not None else "did not exit"
        out.append(f"| {h['n']:,} | {h['pause_ms']:.1f} | {h['stayed']:,} | "
                   f"{'exact' if h['exact'] else 'NOT exact'} ({h['moved'] >> 20} MiB) | "
                   f"{h['verified']:,}/{h['n']:,} | {gone} |")
    fl = r.get("flood") or {}
    if fl.get("failed"):
        out += ["", f"Flood: failed: {fl['failed'][:200]}"]
    elif fl:
        out += ["", "### QUIC in the field: a handshake flood\n",
                f"A {XFER >> 20} MiB transfer through the QUIC listener (--workers 2, --quic-retry auto), alone, and "
                "in flight when another process starts sending real client Initials under fresh IDs from random "
                "127/8 addresses through a raw socket as fast as it can (the rate of what came back after the "
                "flood began).\n",
                "| alone MB/s | under the flood MB/s | ratio | flood, Initials a second | Retries sent | "
                "handshakes begun | bytes |", "|---|---|---|---|---|---|---|",
                f"| {fl['calm']:.0f} | {fl['flood']:.0f} | {fl['flood'] / fl['calm']:.2f}× | {fl['flood_rate']:,.0f} | "
                f"{fl['retries']:,.0f} | {fl['handshakes']:,.0f} | {'exact' if fl['exact'] else 'NOT exact'} |"]
    s = r.get("split") or {}
    if s.get("failed"):
        out += ["", f"Workers: failed: {s['failed'][:200]}"]
    elif s:
        out += ["", f"Workers (--workers 2, {s['rounds']} rounds of four long TCP connections at once): 2+2 in "
                f"{s['even']} of {s['rounds']} rounds, {s['moved']} clients handed to the other worker "
                f"({s['spreads']})."]
    return "\n".join(out) + "\n"
