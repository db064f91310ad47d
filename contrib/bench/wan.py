"""The WAN part of the benchmark (`bench.py --only wan`): every contestant
over smbsplice-wanem(1), between network namespaces the harness makes and
removes.

Topology: a client namespace C (the branch) and an HQ namespace G, joined
by smbsplice-wanem path 0 (192.0.2.1 in C, 192.0.2.2 in G) and, for the
MPTCP contestant, path 1 (198.51.100.1, 198.51.100.2) with the same
settings. smbd runs in G on port 445 of every address there (it skips
smbsplice-wanem's point-to-point tun devices in its interface list). Both
namespaces run cubic by default, as most client and server stacks do: cubic
is added to the global net.ipv4.tcp_allowed_congestion_control for the run
(a namespace may only pick an allowed default) and the list restored.

Contestants, the client always in C:
  direct       smbclient to smbd at HQ, cubic on both ends
  direct-bbr   the same with bbr on the server's side (a route in G with
               `congctl bbr`): the best a user can do without a gateway
  haproxy      haproxy in G in front of smbd (its sockets: cubic)
  smbsplice    smbsplice in G, --congestion client:bbr
  pair         smbsplice in C (--congestion backend:bbr) and in G
               (--congestion client:bbr), without the PROXY header, so HQ
               sees the branch gateway's address
  pair-mptcp   the pair with --mptcp over both paths: G signals its
               second address, both allow 2 subflows (ip mptcp limits),
               and G listens on the wildcard address (a join to the
               second address needs a listener there)
  smbsplice-buf  (only when --wan-fronts names it) smbsplice at HQ with
               --socket-buffer client:32M, the pair-buf's HQ gateway
  pair-buf     (only when --wan-fronts names it) the pair with
               --socket-buffer 32M on both WAN sockets, past the
               namespaces' autotuning maxima (tcp_wmem 4 MiB, tcp_rmem
               6 MiB): for a path whose bandwidth-delay product is above
               them, such as 1 Gbit/s at 100 ms (12.5 MB)

Each cell of the grid (RTT x loss x rate) sets both paths by
smbsplice-wanem's control file; each workload runs every contestant
interleaved, --runs times; figures are MB/s (get, put), files/s (mget),
entries/s (ls), with their ratio to direct's median.
"""
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
WANEM = os.path.join(TOP, "wanem/smbsplice-wanem")
SMBSPLICE = os.path.join(TOP, "proxy/smbsplice")
THROWAWAY = os.path.join(TOP, "contrib/throwaway-smbd.sh")
PASSWORD = "smbsplice"
NS = (f"bwanC{os.getpid()}", f"bwanG{os.getpid()}")
PATHS = (("192.0.2.1", "192.0.2.2"), ("198.51.100.1", "198.51.100.2"))
ALLOWED = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
FRONTS = ("direct", "direct-bbr", "haproxy", "smbsplice", "pair", "pair-mptcp", "smbsplice-buf", "pair-buf")
WORKS = ("get", "put", "mget", "ls")
# Ports in the harness's own namespaces: nothing else binds there.
HQ_PORT, BRANCH_PORT, HAPROXY_PORT = 4450, 4451, 4452


def sh(*argv, ok=True, timeout=60):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if ok and r.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def nsx(ns, *argv):
    return ["ip", "netns", "exec", ns, *argv]


def parse_grid(text):
    """'40:0,1:100' (RTTs ms : loss % : rates Mbit/s, each a comma list)
    -> [(rtt, loss, rate)]."""
    try:
        rtts, losses, rates = (list(map(float, part.split(","))) for part in text.split(":"))
    except ValueError:
        raise ValueError(f"--wan-grid {text!r}: RTTS:LOSSES:RATES, e.g. 10,40,100:0,0.1,1:100,1000")
    return [(r, l, m) for m in rates for r in rtts for l in losses]


class Path:
    """One smbsplice-wanem between C and G; cells are set through its
    control file."""

    def __init__(self, work, n, mtu):
        self.n = n
        self.control = os.path.join(work, f"wan{n}.ctl")
        open(self.control, "w").close()
        self.logpath = os.path.join(work, f"wanem{n}.log")
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(["chrt", "-f", "10", WANEM, "--a", f"{NS[0]}:wan{n}", "--b",
                                      f"{NS[1]}:wan{n}", "--mtu", str(mtu), "--control", self.control],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 10
        while "info: forwarding" not in self.text():
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"smbsplice-wanem did not start: {self.text().strip()}")
            time.sleep(0.05)
        for ns, a in zip(NS, PATHS[n]):
            sh("ip", "-n", ns, "addr", "add", f"{a}/24", "dev", f"wan{n}")

    def text(self):
        with open(self.logpath) as f:
            return f.read()

    def set(self, rtt, loss, rate, mtu):
        # The queue: twice the path's bandwidth-delay product in packets,
        # 100 at least, as a provisioned bottleneck would hold.
        bdp = rate * 1e6 / 8 * rtt / 1e3 / mtu
        queue = max(100, int(2 * bdp))
        before = self.text().count("info: reloaded")
        with open(self.control, "w") as f:
            f.write(f"delay {rtt / 2} loss {loss} rate {rate} queue {queue}\n")
        self.proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + 10
        while self.text().count("info: reloaded") <= before:
            if time.monotonic() > end:
                raise RuntimeError(f"smbsplice-wanem did not take the cell's settings: {self.text()[-300:]}")
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Lab:
    """The namespaces, both paths, smbd in G and the contestants' daemons."""

    def __init__(self, work, mtu, npaths=2):
        """npaths 1: path 0 alone (no MPTCP contestant will run)."""
        self.work, self.mtu = work, mtu
        self.paths, self.procs, self.allowed, self.smbd = [], {}, None, None
        for ns in NS:
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        with open(ALLOWED) as f:
            self.allowed = f.read().strip()
        if "cubic" not in self.allowed.split():
            with open(ALLOWED, "w") as f:
                f.write(self.allowed + " cubic")
        for ns in NS:
            sh(*nsx(ns, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=cubic"))
            sh("ip", "-n", ns, "mptcp", "limits", "set", "subflow", "2", "add_addr_accepted", "2")
        self.paths = [Path(work, n, mtu) for n in range(npaths)]
        if npaths > 1:
            sh("ip", "-n", NS[1], "mptcp", "endpoint", "add", PATHS[1][1], "dev", "wan1", "signal")
        self.smbd = os.path.join(work, "wan-smbd")
        env = dict(os.environ, SMB_PASS=PASSWORD, SMB_INTERFACES="127.0.0.1",
                   SMB_CONF_EXTRA="[global]\n\tserver multi channel support = no\n\tbind interfaces only = no")
        r = subprocess.run(nsx(NS[1], THROWAWAY, "start", self.smbd, "445"), env=env, capture_output=True,
                           text=True, timeout=60)
        if r.returncode:
            raise RuntimeError(f"smbd in {NS[1]} did not start: {r.stderr}")
        self.share = os.path.join(self.smbd, "share")

    def cell(self, rtt, loss, rate):
        for p in self.paths:
            p.set(rtt, loss, rate, self.mtu)

    def daemon(self, name, ns, argv):
        log = open(os.path.join(self.work, f"{name}.log"), "w")
        self.procs[name] = (subprocess.Popen(nsx(ns, *argv), stdout=log, stderr=subprocess.STDOUT), log)

    def start(self):
        """Every contestant's daemons, for the whole run (their sockets
        are per connection: a cell's settings apply to the next)."""
        hq = f"{PATHS[0][1]}:{HQ_PORT}"
        sp = [SMBSPLICE, "--idle-timeout", "0", "--backend", "127.0.0.1:445"]
        self.daemon("smbsplice", NS[1], [*sp, "--listen", hq, "--congestion", "client:bbr"])
        self.daemon("pair-hq", NS[1], [*sp, "--listen", f"{PATHS[0][1]}:{HQ_PORT + 10}",
                                       "--congestion", "client:bbr"])
        self.daemon("pair-branch", NS[0], [SMBSPLICE, "--idle-timeout", "0", "--listen",
                                           f"127.0.0.1:{BRANCH_PORT}", "--backend",
                                           f"{PATHS[0][1]}:{HQ_PORT + 10}", "--congestion", "backend:bbr"])
        self.daemon("mptcp-hq", NS[1], [*sp, "--listen", f"0.0.0.0:{HQ_PORT + 20}", "--mptcp", "listen",
                                        "--congestion", "client:bbr"])
        self.daemon("mptcp-branch", NS[0], [SMBSPLICE, "--idle-timeout", "0", "--listen",
                                            f"127.0.0.1:{BRANCH_PORT + 20}", "--backend",
                                            f"{PATHS[0][1]}:{HQ_PORT + 20}", "--mptcp", "backend",
                                            "--congestion", "backend:bbr"])
        self.daemon("buf-hq", NS[1], [*sp, "--listen", f"{PATHS[0][1]}:{HQ_PORT + 30}",
                                      "--congestion", "client:bbr", "--socket-buffer", "client:32M"])
        self.daemon("buf-branch", NS[0], [SMBSPLICE, "--idle-timeout", "0", "--listen",
                                          f"127.0.0.1:{BRANCH_PORT + 30}", "--backend",
                                          f"{PATHS[0][1]}:{HQ_PORT + 30}", "--congestion", "backend:bbr",
                                          "--socket-buffer", "backend:32M"])
        cfg = os.path.join(self.work, "wan-haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(f"global\n    maxconn 100\ndefaults\n    mode tcp\n    timeout connect 5s\n"
                    f"    timeout client 1h\n    timeout server 1h\nfrontend f\n"
                    f"    bind {PATHS[0][1]}:{HAPROXY_PORT}\n    default_backend b\n"
                    f"backend b\n    server s 127.0.0.1:445\n")
        if shutil.which("haproxy"):
            self.daemon("haproxy", NS[1], ["haproxy", "-db", "-f", cfg])
        time.sleep(1)
        for name, (p, _) in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited at start: {open(os.path.join(self.work, name + '.log')).read()}")

    def target(self, front):
        """(host, port) the client in C connects to for `front`."""
        return {"direct": (PATHS[0][1], 445), "direct-bbr": (PATHS[0][1], 445),
                "haproxy": (PATHS[0][1], HAPROXY_PORT), "smbsplice": (PATHS[0][1], HQ_PORT),
                "pair": ("127.0.0.1", BRANCH_PORT), "pair-mptcp": ("127.0.0.1", BRANCH_PORT + 20),
                "smbsplice-buf": (PATHS[0][1], HQ_PORT + 30), "pair-buf": ("127.0.0.1", BRANCH_PORT + 30)}[front]

    def server_bbr(self, on):
        """direct-bbr: the server's side of the path runs bbr, by a route
        in G (passively opened sockets take the route's congctl)."""
        sh("ip", "-n", NS[1], "route", "replace", "192.0.2.0/24", "dev", "wan0", "proto", "kernel",
           "scope", "link", "src", PATHS[0][1], *(["congctl", "bbr"] if on else []))

    def close(self):
        for name, (p, log) in self.procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log.close()
        if self.smbd:
            subprocess.run(nsx(NS[1], THROWAWAY, "stop", self.smbd), capture_output=True, timeout=30)
        for p in self.paths:
            p.stop()
        for ns in NS:
            sh("ip", "netns", "del", ns, ok=False)
        if self.allowed is not None:
            with open(ALLOWED) as f:
                now = f.read().strip()
            if now.split() == (self.allowed + " cubic").split():
                with open(ALLOWED, "w") as f:
                    f.write(self.allowed)


def smb(host, port, cmd, cwd=None, cap=None, probe=None):
    """smbclient in C; (seconds from start to exit, output, what probe()
    said at the cap or None). -t: one 8 MiB READ at 1% loss takes direct
    cubic longer than the default 20 s. With `cap`, a client still running
    after `cap` seconds is asked probe() and killed."""
    argv = nsx(NS[0], "smbclient", f"//{host}/share", "-p", str(port), "-U", f"root%{PASSWORD}", "-t", "600",
               "-c", cmd)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd)
    try:
        out, _ = p.communicate(timeout=cap or 1800)
    except subprocess.TimeoutExpired:
        secs = time.monotonic() - t0
        got = probe() if probe else True  # not None: the caller's "cut" mark
        p.kill()
        out, _ = p.communicate()
        if not cap:
            raise
        if "NT_STATUS" in out:
            raise RuntimeError(f"{' '.join(argv)} failed before its cap: {out[-400:]}")
        return secs, out, got
    secs = time.monotonic() - t0
    if p.returncode or "NT_STATUS" in out:
        raise RuntimeError(f"{' '.join(argv)} failed ({p.returncode}): {out[-400:]}")
    return secs, out, None


def tcp_bytes(ns, port_filter, field):
    """The sum of `field` (bytes_received, bytes_acked) over the
    established TCP sockets in ns that match port_filter, by ss -ti."""
    r = sh(*nsx(ns, "ss", "-tinH", "state", "established", port_filter))
    return sum(int(tok.split(":", 1)[1]) for tok in r.stdout.split() if tok.startswith(field + ":"))


def workload(lab, work, name, mib, office, cap):
    """fn(front) -> {"value": rate, "secs": s[, "capped": True]} for
    workload `name`. get, put and mget stop at `cap` seconds and count
    what came by then: bytes (get, put), files of their full size (mget);
    ls runs whole."""
    src = os.path.join(work, "wan-src")
    if name in ("get", "put") and not os.path.exists(src):
        with open("/dev/urandom", "rb") as r, open(src, "wb") as f:
            for _ in range(mib):
                f.write(r.read(1 << 20))
        shutil.copy(src, os.path.join(lab.share, "wan-file"))
    size = mib << 20

    def result(got, secs, cut, unit_of):
        """cut: what smb() said of a client stopped at the cap, or None."""
        r = {"value": got / secs / unit_of, "secs": secs}
        if cut is not None:
            r["capped"] = True
        return r

    # A cut get or put is measured in TCP bytes, not in the file: smbclient
    # moves 8 MiB per READ or WRITE, and at 1% loss direct cubic lands
    # none in 10 s. A get counts what the client's socket took in; a put
    # what smbd's took in (a gateway's buffers do not count).
    def get(front):
        dst = os.path.join(work, "wan-got")
        port = lab.target(front)[1]
        secs, _, cut = smb(*lab.target(front), f"get wan-file {dst}", cap=cap,
                           probe=lambda: tcp_bytes(NS[0], f"( dport = :{port} )", "bytes_received"))
        got = os.path.getsize(dst) if os.path.exists(dst) else 0
        if cut is None and got != size:
            raise RuntimeError(f"get through {front}: {got} of {size} bytes")
        if os.path.exists(dst):
            os.unlink(dst)
        return result(got if cut is None else cut, secs, cut, 1e6)

    def put(front):
        dst = os.path.join(lab.share, "wan-put")
        secs, _, cut = smb(*lab.target(front), f"put {src} wan-put", cap=cap,
                           probe=lambda: tcp_bytes(NS[1], "( sport = :445 )", "bytes_received"))
        if cut is None and os.path.getsize(dst) != size:
            raise RuntimeError(f"put through {front}: {os.path.getsize(dst)} of {size} bytes")
        if cut is not None:
            time.sleep(0.5)  # smbd finishes the writes it holds before the unlink
        if os.path.exists(dst):
            os.unlink(dst)
        return result(size if cut is None else cut, secs, cut, 1e6)

    def mget(front):
        # files over the time from the client's start to the last whole
        # file's landing (its mtime): at 40 ms a cut mget holds some 40
        # files, too few for a count over the cap to tell contestants apart
        d = tempfile.mkdtemp(prefix="wan-mget-", dir=work)
        try:
            t0 = time.time()
            secs, _, cut = smb(*lab.target(front), "prompt OFF; recurse ON; cd small; mget *", cwd=d, cap=cap)
            whole = [os.stat(os.path.join(d, n)).st_mtime for n in os.listdir(d)
                     if os.path.getsize(os.path.join(d, n)) == office["sizes"].get(n)]
            if len(whole) != office["files"] and cut is None:
                raise RuntimeError(f"mget through {front}: {len(whole)} of {office['files']} files whole")
            if whole:
                secs = max(whole) - t0
        finally:
            shutil.rmtree(d, ignore_errors=True)
        return result(len(whole), secs, cut, 1)

    def ls(front):
        secs, out, _ = smb(*lab.target(front), "ls list\\*")
        n = sum(1 for l in out.splitlines() if l.strip().startswith("e") and " 0 " in l)
        if n != office["entries"]:
            raise RuntimeError(f"ls through {front}: {n} of {office['entries']} entries")
        return {"value": n / secs, "secs": secs}

    return {"get": get, "put": put, "mget": mget, "ls": ls}[name]


UNITS = {"get": "MB/s", "put": "MB/s", "mget": "files/s", "ls": "entries/s"}


def run_wan(args, work, office_spec, share_office, log):
    """The WAN part: {"mtu", "mib", "cells": [{rtt, loss, rate, work,
    fronts: {front: [runs]}}]}. Failed runs are recorded with their error."""
    grid = parse_grid(args.wan_grid)
    works = args.wan_work.split(",")
    fronts = [f for f in args.wan_fronts.split(",") if f]
    if set(works) - set(WORKS) or set(fronts) - set(FRONTS):
        raise ValueError(f"--wan-work from {','.join(WORKS)}, --wan-fronts from {','.join(FRONTS)}")
    if "haproxy" in fronts and not shutil.which("haproxy"):
        log("wan: haproxy not found (contrib/install-deps.sh --bench): left out")
        fronts.remove("haproxy")
    mtu = args.wan_mtu or (9000 if max(r for _, _, r in grid) > 100 else 1500)
    out = {"mtu": mtu, "mib": args.mib_wan, "cap": args.wan_seconds, "runs": args.runs_wan, "fronts": fronts, "cells": []}
    lab = Lab(work, mtu)
    try:
        if {"mget", "ls"} & set(works):
            share_office(lab.share, office_spec)
        lab.start()
        for rtt, loss, rate in grid:
            lab.cell(rtt, loss, rate)
            for w in works:
                fn = workload(lab, work, w, args.mib_wan, office_spec, args.wan_seconds)
                cell = {"rtt": rtt, "loss": loss, "rate": rate, "work": w, "unit": UNITS[w],
                        "fronts": {f: [] for f in fronts}}
                for i in range(args.runs_wan):
                    for f in fronts:
                        if f == "direct-bbr":
                            lab.server_bbr(True)
                        try:
                            cell["fronts"][f].append(fn(f))
                        except (RuntimeError, subprocess.TimeoutExpired) as e:
                            cell["fronts"][f].append({"error": str(e)[:300]})
                        finally:
                            if f == "direct-bbr":
                                lab.server_bbr(False)
                base = median_value(cell["fronts"].get("direct", []))
                line = " ".join(f"{f}={median_value(rs):.2f}" + (f"({median_value(rs) / base:.2f}x)" if base else "")
                                for f, rs in cell["fronts"].items() if median_value(rs) is not None)
                log(f"wan {rtt:g} ms {loss:g}% {rate:g} Mbit/s {w} ({UNITS[w]}): {line}")
                out["cells"].append(cell)
    finally:
        lab.close()
    return out


def median_value(rs):
    vals = [r["value"] for r in rs if "value" in r]
    return statistics.median(vals) if vals else None
