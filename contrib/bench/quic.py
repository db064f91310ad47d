"""The SMB-over-QUIC part of the benchmark (`bench.py --only quic`):
smbclient get and put through a pair of fronts, on loopback and over
smbsplice-wanem(1), every contestant in one run, interleaved.

Theory of operation: each contestant is a PAIR of fronts, as a gateway
pair or an SMB-over-QUIC client and server are deployed: a branch front
(the client side: it listens on TCP 127.0.0.1 for smbclient) and an HQ
front (the server side, in front of a throwaway smbd), joined by a leg
that is TLS over TCP, QUIC, or plain TCP. Both fronts start fresh for
every measurement and stop after it (bench.py's interleaved() and
measure() run it, in their fair order); their CPU (both processes, from
/proc) and the machine's busy time give the pair's CPU and the machine's
core-seconds per GiB moved.

  direct          smbclient straight to smbd: no pair, no security
  stunnel         stunnel4 client mode -> stunnel4 server mode: TLS 1.3
                  over TCP (TLS_AES_128_GCM_SHA256, as the QUIC stacks
                  pick on this hardware; TCP_NODELAY on every socket),
                  the certificate from a throwaway CA, checked by name;
                  the kernel's congestion control: cubic
  quicrelay       tests/quic's quic-go relay pair (quicrelay client ->
                  quicrelay server), pipelined; quic-go 0.29's own
                  congestion control (NewReno)
  smbsplice-pair  two smbsplice processes, as docs/deployment.md's WAN
                  gateway pair; over the WAN --congestion bbr on the WAN
                  leg (branch backend:bbr, HQ client:bbr)
  smbsplice-quic  the smbsplice QUIC pair: a branch smbsplice whose
                  backend is QUIC, and a quic: listener at HQ; BBR on the
                  QUIC leg over the WAN. Marked `needs`: unless this
                  smbsplice's --help mentions quic and --check accepts
                  both sides' command lines, it is listed as "not built"
                  with smbsplice's own words, and not run.
  quicrelay-to-smbsplice  quicrelay client -> smbsplice's quic: listener:
                  the QUIC front door alone, before the QUIC backend
                  lands (needs QUIC too).

The contestants are data (CONTESTANTS): a new one, or a changed command
line when smbsplice's QUIC backend lands, is one entry.

Loopback: everything on 127.0.0.1, smbd on a free port, get and put of
--mib MiB run whole. WAN: wan.py's namespaces (client C, HQ G) joined by
one smbsplice-wanem path; smbd in G on port 445, the HQ front in G on
192.0.2.2, the branch front and smbclient in C; cells from --quic-grid
(default 40 ms, 0 and 1 % loss, 100 Mbit/s). A get or put still running
after --quic-seconds is stopped and measured by what came by then (TCP bytes
into smbclient for a get, into smbd for a put), as wan.py does.

The AES-GCM floor: `openssl speed -evp aes-128-gcm` on one core, at a
QUIC packet's size (1350 bytes) and at TLS's largest record (16 KiB).
"""
import os
import re
import shutil
import signal
import statistics
import subprocess
import time

import wan

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
SMBSPLICE = os.path.join(TOP, "proxy/smbsplice")
QUICRELAY = os.path.join(TOP, "tests/quic/bin/quicrelay")
NAME = "smb.test"           # the server certificate's DNS name
GIB = 1 << 30
GRID = "40:0,1:100"         # --quic-grid's default: the cells
CAP = 30                    # --quic-seconds's default
WAN_PORT = 4460             # first port of the fronts in the WAN namespaces
WORKS = ("get", "put")

STUNNEL_TLS = """foreground = yes
pid =
debug = 3
[smb]
sslVersionMin = TLSv1.3
ciphersuites = TLS_AES_128_GCM_SHA256
socket = l:TCP_NODELAY=1
socket = r:TCP_NODELAY=1
"""

# The contestants, in the report's order. Keys:
#   name    the contestant (also for --fronts)
#   leg     the transport between the fronts: tcp or udp (how the HQ
#           front's readiness is seen)
#   hq, branch   argv templates of the two fronts; placeholders
#           {smbsplice} {quicrelay} {hq} (the HQ front's HOST:PORT)
#           {smbd} (smbd's HOST:PORT as HQ reaches it) {listen} (the
#           branch's 127.0.0.1:PORT) {cert} {key} {ca} {name}
#           {hq_conf} {branch_conf} (files written from hq_conf and
#           branch_conf, templates with the same placeholders)
#   wan_hq, wan_branch   arguments added over the WAN only
#   needs   a feature the smbsplice binary must have ("quic"), else the
#           contestant is listed as not built
SP = ["{smbsplice}", "--idle-timeout", "0"]
CONTESTANTS = (
    {"name": "direct"},
    {"name": "stunnel", "leg": "tcp",
     "hq": ["stunnel4", "{hq_conf}"], "branch": ["stunnel4", "{branch_conf}"],
     "hq_conf": STUNNEL_TLS + "accept = {hq}\nconnect = {smbd}\ncert = {cert}\nkey = {key}\n",
     "branch_conf": STUNNEL_TLS + "client = yes\naccept = {listen}\nconnect = {hq}\nCAfile = {ca}\n"
                    "verifyChain = yes\ncheckHost = {name}\n"},
    {"name": "quicrelay", "leg": "udp",
     "hq": ["{quicrelay}", "server", "-listen", "{hq}", "-backend", "{smbd}", "-cert", "{cert}", "-key", "{key}"],
     "branch": ["{quicrelay}", "client", "-listen", "{listen}", "-remote", "{hq}", "-name", "{name}",
                "-ca", "{ca}"]},
    {"name": "smbsplice-pair", "leg": "tcp",
     "hq": SP + ["--listen", "{hq}", "--backend", "{smbd}"],
     "branch": SP + ["--listen", "{listen}", "--backend", "{hq}"],
     "wan_hq": ["--congestion", "client:bbr"], "wan_branch": ["--congestion", "backend:bbr"]},
    # The QUIC backend's options are not settled yet, nor whether
    # --congestion reaches a QUIC leg: whoever lands them makes these
    # lines their own (--check tells the harness whether they hold).
    {"name": "smbsplice-quic", "leg": "udp", "needs": "quic",
     "hq": SP + ["--listen", "quic:{hq}", "--quic-cert", "{cert}", "--quic-key", "{key}", "--backend", "{smbd}"],
     "branch": SP + ["--listen", "{listen}", "--backend", "quic:{hq}", "--quic-name", "{name}",
                     "--quic-ca", "{ca}"],
     "wan_hq": ["--congestion", "client:bbr"], "wan_branch": ["--congestion", "backend:bbr"]},
    # smbsplice's QUIC front door alone, behind quic-go's client side:
    # measurable as soon as the listener is built, before the backend
    {"name": "quicrelay-to-smbsplice", "leg": "udp", "needs": "quic",
     "hq": SP + ["--listen", "quic:{hq}", "--quic-cert", "{cert}", "--quic-key", "{key}", "--backend", "{smbd}"],
     "branch": ["{quicrelay}", "client", "-listen", "{listen}", "-remote", "{hq}", "-name", "{name}",
                "-ca", "{ca}"],
     "wan_hq": ["--congestion", "client:bbr"]},
)
NEEDS_QUIC = "smbsplice-quic"   # the contestant the goals are about


def sh(*argv, timeout=60):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if r.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    return r.stdout


def make_certs(d):
    """A throwaway CA and a server certificate for NAME as Windows wants
    it (ECDSA P-256, DNS SAN, serverAuth EKU), in d."""
    def key(n):
        sh("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{d}/{n}.key")
    key("ca")
    sh("openssl", "req", "-x509", "-new", "-key", f"{d}/ca.key", "-out", f"{d}/ca.pem", "-days", "2", "-sha256",
       "-subj", "/CN=bench-ca", "-addext", "basicConstraints=critical,CA:TRUE",
       "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    key("srv")
    sh("openssl", "req", "-new", "-key", f"{d}/srv.key", "-out", f"{d}/srv.csr", "-subj", f"/CN={NAME}")
    with open(f"{d}/srv.ext", "w") as f:
        f.write(f"subjectAltName=DNS:{NAME}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n")
    sh("openssl", "x509", "-req", "-in", f"{d}/srv.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
       "-CAcreateserial", "-out", f"{d}/srv.pem", "-days", "2", "-sha256", "-extfile", f"{d}/srv.ext")
    return {"cert": f"{d}/srv.pem", "key": f"{d}/srv.key", "ca": f"{d}/ca.pem", "name": NAME}


def parse_speed(text):
    """{block bytes: bytes/s} from `openssl speed -mr`'s lines
    "+H:16:64:..." (the block sizes) and "+F:N:NAME:V16:V64:..." (bytes
    per second at each)."""
    head = re.search(r"^\+H((?::\d+)+)$", text, re.M)
    vals = re.search(r"^\+F:\d+:[^:]+((?::[\d.]+)+)$", text, re.M)
    if not (head and vals):
        return {}
    return dict(zip(map(int, head.group(1)[1:].split(":")), map(float, vals.group(1)[1:].split(":"))))


def aes_floor():
    """openssl speed -evp aes-128-gcm on one core, one second a size:
    {str(block bytes): bytes/s}, at 1350 bytes (a QUIC packet) and
    OpenSSL's sizes up to 16 KiB (a full TLS record)."""
    out = {}
    for extra in (["-bytes", "1350"], []):
        r = subprocess.run(["openssl", "speed", "-mr", "-seconds", "1", "-evp", "aes-128-gcm", *extra],
                           capture_output=True, text=True, timeout=60)
        out.update(parse_speed(r.stdout))
    return {str(k): v for k, v in sorted(out.items())}


def fill(template, values):
    """A template (a string, or a list of strings) with its placeholders."""
    if isinstance(template, str):
        return template.format(**values)
    return [t.format(**values) for t in template]


def argv_of(entry, side, values, over_wan):
    return fill(entry[side], values) + (entry.get(f"wan_{side}", []) if over_wan else [])


def not_built(entry, values):
    """Why entry cannot run with this smbsplice, or None: its `needs` is
    not in smbsplice's --help, or --check refuses a smbsplice side's
    command line (with or without the WAN's arguments)."""
    need = entry.get("needs")
    if not need:
        return None
    r = subprocess.run([SMBSPLICE, "--help"], capture_output=True, text=True, timeout=30)
    if need not in (r.stdout + r.stderr).lower():
        return f"this smbsplice has no {need.upper()} (its --help does not mention {need})"
    for side in ("hq", "branch"):
        for over_wan in (False, True):
            argv = argv_of(entry, side, values, over_wan)
            if argv[0] != SMBSPLICE:
                continue
            r = subprocess.run([SMBSPLICE, "--check", *argv[1:]], capture_output=True, text=True, timeout=30)
            if r.returncode:
                lines = [l.strip() for l in (r.stderr + r.stdout).splitlines() if l.strip()]
                return f"{side} side: {lines[-1] if lines else f'--check exited {r.returncode}'}"
    return None


def udp_bound(port, pid=None):
    """Is a UDP socket bound to port (in pid's network namespace)?"""
    want = f":{port:04X}"
    net = f"/proc/{pid}/net" if pid else "/proc/net"
    for table in (f"{net}/udp", f"{net}/udp6"):
        try:
            with open(table) as f:
                if any(line.split()[1].endswith(want) for line in f.readlines()[1:]):
                    return True
        except OSError:
            pass
    return False


class Topology:
    """Where the fronts run: loopback (no namespaces) or the WAN lab's
    namespaces. Hands out ports and the client's target."""

    def __init__(self, b, smbd_port=None, lab=None):
        self.b, self.lab = b, lab
        self.next_port = WAN_PORT
        if lab:
            self.hq_host, self.ns = wan.PATHS[0][1], (wan.NS[0], wan.NS[1])
            self.smbd = "127.0.0.1:445"
            self.direct = (wan.PATHS[0][1], 445)
        else:
            self.hq_host, self.ns = "127.0.0.1", (None, None)
            self.smbd = f"127.0.0.1:{smbd_port}"
            self.direct = smbd_port

    def port(self, leg):
        if self.lab:
            self.next_port += 1
            return self.next_port
        if leg == "udp":
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
            s.close()
            return p
        return self.b.free_port()

    def target(self, branch_port):
        """What the workload's fn is given: a port on loopback, (host,
        port) in the WAN lab."""
        return ("127.0.0.1", branch_port) if self.lab else branch_port


class PairFront:
    """One contestant: its two fronts, started fresh for each measurement
    (bench.measure() calls start, cpu, hwm_mib and stop); direct starts
    nothing. Its port is what the workload's fn is given."""

    worker_conns = {}
    trace_bytes = None
    wrap = ()

    def __init__(self, entry, topo, files, workdir):
        self.entry, self.name, self.topo = entry, entry["name"], topo
        self.files, self.workdir = files, workdir
        self.procs, self.logs, self.cpu0 = [], [], []
        self.port = None

    def spawn(self, side, values, ns):
        argv = argv_of(self.entry, side, values, self.topo.lab is not None)
        path = os.path.join(self.workdir, f"quic-{self.name}-{side}.log")
        log = open(path, "w")
        self.logs.append(path)
        p = subprocess.Popen((["ip", "netns", "exec", ns] if ns else []) + argv, stdout=log,
                             stderr=subprocess.STDOUT)
        log.close()
        self.procs.append(p)
        return p

    def last_line(self):
        for path in reversed(self.logs):
            try:
                with open(path) as f:
                    lines = [l.strip() for l in f if l.strip()]
            except OSError:
                continue
            if lines:
                return lines[-1]
        return ""

    def wait_ready(self, proc, port, udp, what):
        """Until proc listens on port (TCP) or has it bound (UDP), 10 s at most."""
        end = time.monotonic() + 10
        while not (udp_bound(port, proc.pid) if udp else self.topo.b.listening(port, proc.pid)):
            if proc.poll() is not None or time.monotonic() > end:
                why = "exited" if proc.poll() is not None else "is not listening after 10 s"
                self.stop()
                raise self.topo.b.FrontFailed(f"{self.name}: the {what} front {why}: {self.last_line()}")
            time.sleep(0.02)

    def start(self):
        if "hq" not in self.entry:
            self.port, self.cpu0 = self.topo.direct, []
            return self
        hq_port, branch_port = self.topo.port(self.entry["leg"]), self.topo.port("tcp")
        values = dict(self.files, smbsplice=SMBSPLICE, quicrelay=QUICRELAY, hq=f"{self.topo.hq_host}:{hq_port}",
                      smbd=self.topo.smbd, listen=f"127.0.0.1:{branch_port}")
        for side in ("hq", "branch"):
            if f"{side}_conf" in self.entry:
                values[f"{side}_conf"] = os.path.join(self.workdir, f"quic-{self.name}-{side}.conf")
                with open(values[f"{side}_conf"], "w") as f:
                    f.write(fill(self.entry[f"{side}_conf"], values))
        hq = self.spawn("hq", values, self.topo.ns[1])
        self.wait_ready(hq, hq_port, self.entry["leg"] == "udp", "HQ")
        branch = self.spawn("branch", values, self.topo.ns[0])
        self.wait_ready(branch, branch_port, False, "branch")
        self.port = self.topo.target(branch_port)
        self.cpu0 = [self.topo.b.proc_cpu(p.pid) for p in self.procs]
        return self

    def cpu(self):
        """CPU seconds of both fronts since they were ready."""
        return sum(self.topo.b.proc_cpu(p.pid) - c for p, c in zip(self.procs, self.cpu0))

    def hwm_mib(self):
        return sum(self.topo.b.proc_hwm_kib(p.pid) for p in self.procs) / 1024

    def stop(self):
        """Stop both fronts: SIGTERM, then SIGKILL after 10 s."""
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs, self.cpu0 = [], []


def loopback_fn(b, cmd, mib):
    """smbclient CMD through the front on loopback, run whole: MB/s."""
    inner = b.smbclient(cmd, mib)

    def fn(port, wrap=()):
        r = inner(port, wrap)
        return {"mbyte_s": r["gbyte_s"] * 1e3, "bytes": r["bytes"]}
    return fn


class Lab(wan.Lab):
    """wan.py's lab with one path; a front's target is the (host, port)
    the fn is given."""

    def target(self, addr):
        return addr


def wan_fn(lab, work, name, mib, cap):
    """wan.py's get or put in the client namespace, stopped at cap: MB/s,
    and the bytes it moved (for the costs per GiB)."""
    inner = wan.workload(lab, work, name, mib, None, cap)

    def fn(addr, wrap=()):
        r = inner(addr)
        return {"mbyte_s": r["value"], "bytes": r["value"] * 1e6 * r["secs"], "capped": r.get("capped", False)}
    return fn


def contestants(b, topo, files, workdir, skip):
    """PairFronts for the entries --fronts keeps whose tools are here
    and which are built; those not built are in skip already."""
    out = []
    for e in CONTESTANTS:
        if not b.wanted(e["name"]):
            continue
        b.PICKED.add(e["name"])
        if e["name"] in skip:
            continue
        tools = [fill(e[side][0], {"smbsplice": SMBSPLICE, "quicrelay": QUICRELAY})
                 for side in ("hq", "branch") if side in e]
        missing = [t for t in tools if not shutil.which(t)]
        if missing:
            skip[e["name"]] = f"{missing[0]} not found"
            b.log(f"quic: {missing[0]} not found: {e['name']} left out")
            continue
        out.append(PairFront(e, topo, files, workdir))
    return out


def run_quic(args, work, be, b):
    """The quic workload: {"mib", "runs", "floor", "version", "not_built",
    "loopback": {"get": {front: [runs]}, "put": ...}, "wan": {"cap",
    "cells": [{rtt, loss, rate, "get": ..., "put": ...}]}}. b is bench.py."""
    mib, runs = args.mib_quic, args.runs
    certs = os.path.join(work, "quic-certs")
    os.makedirs(certs, exist_ok=True)
    files = make_certs(certs)
    # what --check is asked about: the WAN's addresses (no front binds)
    probe = {**files, "smbsplice": SMBSPLICE, "quicrelay": QUICRELAY, "hq": f"{wan.PATHS[0][1]}:443",
             "smbd": "127.0.0.1:445", "listen": "127.0.0.1:4451", "hq_conf": "", "branch_conf": ""}
    skip = {}
    for e in CONTESTANTS:
        if b.wanted(e["name"]):
            why = not_built(e, probe)
            if why:
                skip[e["name"]] = "not built: " + why
                b.log(f"quic: {e['name']} not built: {why}")
    out = {"mib": mib, "runs": runs, "floor": aes_floor(), "not_built": skip,
           "version": subprocess.run([SMBSPLICE, "--version"], capture_output=True, text=True).stdout.strip()}
    put_src = os.path.join(work, "quic-put.bin")
    if args.quic_loopback:
        port = be.smbd_port if be.smbd_dir else be.smbd()
        share = os.path.join(be.smbd_dir, "share")
        b.make_file(os.path.join(share, "quic.bin"), mib)
        b.make_file(put_src, mib)
        fronts = contestants(b, Topology(b, port), files, work, skip)
        out["loopback"] = {w: b.interleaved(fronts, loopback_fn(b, cmd, mib), runs, f"quic loopback: {w}")
                           for w, cmd in (("get", "get quic.bin /dev/null"), ("put", f"put {put_src} quic-put.bin"))}
    grid = wan.parse_grid(args.quic_grid) if args.quic_grid not in ("", "none") else []
    if grid:
        out["wan"] = run_wan_cells(args, work, b, grid, files, skip)
    return out


def run_wan_cells(args, work, b, grid, files, skip):
    """Every cell of the grid over one smbsplice-wanem path, MTU 1500, the
    contestants interleaved within each cell and workload."""
    res = {"cap": args.quic_seconds, "mtu": 1500, "cells": []}
    # a directory of its own: the wan part's lab, if it ran, left its
    # smbd's directory and a source file of its own size in work
    work = os.path.join(work, "quic-wan")
    os.makedirs(work)
    # __init__ inside the try: close() undoes whatever it got to
    lab = Lab.__new__(Lab)
    try:
        Lab.__init__(lab, work, 1500, npaths=1)
        fronts = contestants(b, Topology(b, lab=lab), files, work, skip)
        for rtt, loss, rate in grid:
            lab.cell(rtt, loss, rate)
            cell = {"rtt": rtt, "loss": loss, "rate": rate}
            for w in WORKS:
                label = f"quic wan {rtt:g} ms {loss:g}% {rate:g} Mbit/s: {w}"
                cell[w] = b.interleaved(fronts, wan_fn(lab, work, w, args.mib_quic, args.quic_seconds),
                                        args.runs, label)
            res["cells"].append(cell)
    finally:
        lab.close()
    return res


# --- the report ------------------------------------------------------------------

# The goals for the QUIC pair: (where, workload key, other
# contestant, measure, target ratio, at least (True) or at most).
GOALS = (
    ("loopback", "stunnel", "mbyte_s", 1.0, True),
    ("loopback", "quicrelay", "mbyte_s", 2.0, True),
    ("loopback", "quicrelay", "cpu", 0.5, False),
    ("lossy", "smbsplice-pair", "mbyte_s", 0.9, True),
    ("lossy", "stunnel", "mbyte_s", 5.0, True),
)


def ok_runs(rs):
    return [r for r in rs or [] if "failed" not in r]


def per_gib(rs, key):
    """Median of key (proxy_cpu, busy) per GiB moved."""
    vals = [r[key] / (r["bytes"] / GIB) for r in ok_runs(rs) if r.get("bytes") and r.get(key) is not None]
    return statistics.median(vals) if vals else None


def value(rs, what):
    """A contestant's median: MB/s ("mbyte_s"), or the pair's CPU s/GiB ("cpu")."""
    if what == "cpu":
        return per_gib(rs, "proxy_cpu")
    vals = [r[what] for r in ok_runs(rs) if what in r]
    return statistics.median(vals) if vals else None


def spread(rs, key):
    vals = sorted(r[key] for r in ok_runs(rs) if key in r)
    if not vals:
        return "–"
    m = statistics.median(vals)
    return f"{m:.1f}" if len(vals) == 1 else f"{m:.1f} ({vals[0]:.1f}–{vals[-1]:.1f})"


def cell_table(res, not_built, capped_note):
    """One table: a row per contestant, get and put side by side."""
    works = [w for w in WORKS if w in res]
    names = [e["name"] for e in CONTESTANTS if any(e["name"] in res[w] for w in works) or e["name"] in not_built]
    head = "| Contestant | " + " | ".join(f"{w} MB/s | × direct | pair CPU s/GiB | machine core-s/GiB"
                                          for w in works) + " |"
    rows = [head, "|---|" + "---|---|---|---|" * len(works)]
    for n in names:
        if n in not_built:
            rows.append(f"| {n} | {not_built[n]} |" + " |" * (4 * len(works) - 1))
            continue
        cols = []
        for w in works:
            rs = res[w].get(n, [])
            ok = ok_runs(rs)
            bad = len(rs) - len(ok)
            if not ok:
                cols += [f"failed ({bad} of {len(rs)})" if rs else "–", "", "", ""]
                continue
            star = "*" if any(r.get("capped") for r in ok) else ""
            d = value(res[w].get("direct"), "mbyte_s")
            m = value(rs, "mbyte_s")
            cpu, busy = per_gib(rs, "proxy_cpu"), per_gib(rs, "busy")
            cols += [spread(rs, "mbyte_s") + star + (f", {bad} failed" if bad else ""),
                     f"{m / d:.2f}×" if d and n != "direct" else "",
                     f"{cpu:.2f}" if cpu is not None and n != "direct" else "",
                     f"{busy:.2f}" if busy is not None else ""]
        rows.append(f"| {n} | " + " | ".join(cols) + " |")
    return "\n".join(rows) + "\n" + capped_note


def floor_text(q):
    fl = q.get("floor") or {}
    if not fl:
        return "AES-128-GCM floor: `openssl speed` gave nothing.\n"
    parts = []
    for size, label in (("1350", "1,350-byte blocks (a QUIC packet)"), ("16384", "16 KiB blocks (a full TLS record)")):
        if size in fl:
            gbs = fl[size] / 1e9
            parts.append(f"{label} {gbs:.2f} GB/s, so {2 * GIB / fl[size]:.2f} core-s per GiB moved")
    return ("**AES-128-GCM floor** (`openssl speed -evp aes-128-gcm`, one core): " + "; ".join(parts) +
            ". A pair encrypts every byte once and decrypts it once: 2 GiB of AES-GCM per GiB moved, "
            "whatever else it does.\n")


def goal_rows(q):
    rows = []
    where = []
    if q.get("loopback"):
        where.append(("loopback", "loopback", q["loopback"]))
    for c in (q.get("wan") or {}).get("cells", []):
        if c["loss"] > 0:
            where.append(("lossy", f"WAN {c['rtt']:g} ms {c['loss']:g}% {c['rate']:g} Mbit/s", c))
    nb = (q.get("not_built") or {}).get(NEEDS_QUIC)
    for kind, label, res in where:
        for w in WORKS:
            for g_kind, other, what, target, at_least in GOALS:
                if g_kind != kind or w not in res:
                    continue
                ref, ours = value(res[w].get(other), what), value(res[w].get(NEEDS_QUIC), what)
                unit = "MB/s" if what == "mbyte_s" else "pair CPU s/GiB"
                cmp = "≥" if at_least else "≤"
                goal = f"{label} {w}: {NEEDS_QUIC} {'throughput' if what == 'mbyte_s' else 'pair CPU per GiB'}"
                tgt = f"{cmp} {target:g}× {other}'s"
                if ref is None:
                    rows.append(f"| {goal} | {other}: no figure | {tgt} | unclear |")
                elif ours is None:
                    why = "not built" if nb else "failed every run" if res[w].get(NEEDS_QUIC) else "not run"
                    rows.append(f"| {goal} | {why}; to meet it: {cmp} {target * ref:.2f} {unit} "
                                f"({other} {ref:.2f}) | {tgt} | not measured |")
                else:
                    x = ours / ref
                    ok = x >= target if at_least else x <= target
                    rows.append(f"| {goal} | {x:.2f}× ({ours:.2f} against {ref:.2f} {unit}) | {tgt} | "
                                f"{'met' if ok else 'missed'} |")
    if not rows:
        return ""
    return "\n".join(["**Goals of the QUIC pair** (ratios of medians from this run)", "",
                      "| Goal | Measured | Target | |", "|---|---|---|---|"] + rows) + "\n"


def failures(q):
    out = []
    parts = [("loopback", q.get("loopback") or {})] + [
        (f"WAN {c['rtt']:g} ms {c['loss']:g}%", c) for c in (q.get("wan") or {}).get("cells", [])]
    for where, res in parts:
        for w in WORKS:
            for n, rs in (res.get(w) or {}).items():
                for i, r in enumerate(rs):
                    if "failed" in r:
                        out.append(f"- {where} {w}, {n}, run {i + 1}: {r['failed']}")
    return "\n".join(["**Failed runs** (left out of the medians)", ""] + out) + "\n" if out else ""


def table(q):
    """The quic workload's part of results.md."""
    size = f"{q['mib'] >> 10} GiB" if q["mib"] >= 1024 and q["mib"] % 1024 == 0 else f"{q['mib']} MiB"
    nb = q.get("not_built") or {}
    out = [f"### SMB over QUIC: smbclient get and put of {size} through a pair of fronts ({q['runs']} "
           f"interleaved runs)\n",
           f"{q.get('version') or 'smbsplice'}. Pair CPU: both fronts' processes; machine: every busy "
           "core-second (client, smbd, fronts, and smbsplice-wanem over the WAN) per GiB moved. stunnel: TLS 1.3 "
           "(TLS_AES_128_GCM_SHA256), cubic; quicrelay: quic-go 0.29; smbsplice-pair: BBR on the WAN leg; "
           "smbsplice-quic: BBR on the QUIC leg over the WAN.\n"]
    if q.get("loopback"):
        out += ["**Loopback** (MB/s; median (min–max))\n", cell_table(q["loopback"], nb, "")]
    w = q.get("wan") or {}
    for c in w.get("cells", []):
        note = (f"\nA transfer still running after {w['cap']:g} s was stopped and measured by what came by "
                "then; * marks a median with such runs.\n" if w.get("cap") else "")
        out += [f"**WAN: {c['rtt']:g} ms, {c['loss']:g} % loss, {c['rate']:g} Mbit/s** (smbsplice-wanem, MTU "
                f"{w.get('mtu', 1500)}; MB/s)\n", cell_table(c, nb, note)]
    out += [floor_text(q), goal_rows(q), failures(q)]
    return "\n".join(p for p in out if p)
