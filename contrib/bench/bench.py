#!/usr/bin/env python3
"""bench.py - smbsplice beside direct, haproxy, socat and pasta, in one run.

Theory of operation: every figure comes from one run on one machine, with
the contestants interleaved (run 1 of each, then run 2 of each, ...), so
that drift in the machine's speed hits them all alike. Each measurement
starts a fresh front (proxy) in front of the same backend, runs one
workload through it, reads the front's CPU time and peak RSS from /proc,
the machine's busy time from /proc/stat, and stops the front. The report
gives medians with min and max, and the ratios the README quotes.

Workloads:
  bulk   1 GiB up and 1 GiB down with contrib/bench/loadgen (checked);
  rr     round trips at the sizes of the pasta cork bug, 8 KiB and default
         pipes: mean, p99 and worst;
  get    smbclient get of a 1 GiB file from a throwaway smbd (and put, and
         an encrypted get);
  echo   smbtorture smb2.bench.echo, 4 connections, 5 s;
  sweep  contrib/bench/smbread, one synchronous reader at a fixed READ
         size, against splice thresholds off, 4K, 16K, 64K and 256K;
  cost   syscalls per MiB on the splice and copy paths (strace -c);
  scale  a storm of N connections at once (contrib/bench/connstorm), each
         with one 64 KiB round trip, then held open: the front's RSS added
         per connection, held and after some idle seconds, and the time
         until all N connected and all N round-tripped; N from
         --scale-counts;
  parallel  several clients at once through smbsplice --workers 1 and
         --workers 2 (and direct, haproxy): 8 smbclient gets of the same
         256 MiB file, and 4 loadgen streams of 256 MiB up, then down, all
         started together. Total throughput is all their bytes over the
         wall time until the last one finished; each client's own
         throughput gives the spread (slowest, fastest); costs per GiB are
         over all bytes. The front's log says which worker served each
         connection, since SO_REUSEPORT spreads them by a hash and 8
         connections need not split 4/4.

Contestants: each workload has its own list (direct, smbsplice and its
modes, haproxy, socat, pasta; scale and parallel name smbsplice with
--workers). --fronts N1,N2 keeps only the named ones, in each workload's
order. --baseline PATH adds, right after each smbsplice contestant of bulk,
rr, get, echo and parallel, a twin "base:NAME" that runs the binary at PATH
with NAME's arguments: an older build, for a before/after comparison in the
same run. A twin is made only for contestants without --workers, which an
older build may not know; the report puts each base: twin beside its
namesake. tune, sweep and cost measure settings of the current binary and
take neither option.

Usage: bench.py [--out DIR] [--runs N] [--quick] [--only W1,W2]
                [--fronts N1,N2] [--baseline PATH]
                [--scale-counts N1,N2] [--scale-idle SEC]
Writes DIR/results.json, DIR/results.md and DIR/*.png (gnuplot); with the
default DIR (contrib/bench/results) it also embeds results.md in README.md.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
BENCH = os.path.join(TOP, "contrib/bench")
SMBSPLICE = os.path.join(TOP, "proxy/smbsplice")
PASSWORD = "smbsplice"
# One namespace per harness: two engineers' runs must not share (or delete)
# each other's.
NETNS = f"smbsplice-bench-{os.getpid()}"
CLK = os.sysconf("SC_CLK_TCK")
GIB = 1 << 30


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def listening(port):
    """Is something listening on 127.0.0.1:port (read from /proc/net/tcp)?"""
    want = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for line in f.readlines()[1:]:
                    cols = line.split()
                    if cols[1].endswith(want) and cols[3] == "0A":
                        return True
        except OSError:
            pass
    return False


def wait_listening(port, proc=None, timeout=10):
    end = time.monotonic() + timeout
    while not listening(port):
        if proc and proc.poll() is not None:
            raise RuntimeError(f"front exited with {proc.returncode} before listening on {port}")
        if time.monotonic() > end:
            raise RuntimeError(f"nothing listening on {port} after {timeout}s")
        time.sleep(0.02)


def proc_cpu(pid):
    """CPU seconds of a process and its reaped children (socat forks)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in v[11:15]) / CLK
    except OSError:
        return 0.0


def proc_hwm_kib(pid, key="VmHWM"):
    """A line of /proc/PID/status in KiB: VmHWM (peak RSS), VmRSS."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def machine_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return (sum(v[:8]) - idle) / CLK


# --- fronts: what stands between the client and the backend ------------------


class FrontFailed(RuntimeError):
    """The front exited before it listened: a bad option, a bind error."""


def haproxy_limits(maxconn):
    """haproxy's global limits: its usual maxconn of 1000, or room for
    `maxconn` connections within the hard open-files limit. haproxy wants
    2 fds per connection plus 2 per pipe, and by default maxconn / 4
    pipes for splice-auto; it refuses to start (strict-limits) when it
    cannot raise its own limit that far, and the hard limit is a ceiling
    even for root here. So maxpipes shrinks to what fits."""
    if not maxconn:
        return "    maxconn 1000"
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    pipes = max(0, min(maxconn // 4, (hard - 64 - 2 * maxconn) // 2))
    return f"    maxconn {maxconn}\n    maxpipes {pipes}"


class Front:
    """One contestant in front of `backend_port`; direct is no front."""

    def __init__(self, name, backend_port, netns_port=None, maxconn=None):
        self.name = name
        self.backend_port = backend_port
        self.netns_port = netns_port
        self.maxconn = maxconn
        self.proc = None
        self.cfg = None
        self.err = None
        self.port = backend_port
        self.worker_conns = {}

    def tool(self):
        """The program this front runs, to check it is installed."""
        if self.name.startswith("base:"):
            return BASELINE
        return {"haproxy": "haproxy", "socat": "socat", "pasta": "pasta"}.get(self.name, SMBSPLICE)

    def argv(self, port):
        if self.name.startswith("base:"):
            # the namesake's command line, run from the baseline binary
            twin = Front(self.name[5:], self.backend_port)
            argv = twin.argv(port)
            if argv[0] != SMBSPLICE or "--workers" in argv:
                raise FrontFailed(f"{self.name}: a base: twin must be smbsplice without --workers")
            return [BASELINE] + argv[1:]
        b = f"127.0.0.1:{self.backend_port}"
        sp = [SMBSPLICE, "--listen", f"127.0.0.1:{port}", "--backend", b, "--idle-timeout", "0"]
        if self.name == "smbsplice":
            return sp
        if self.name == "smbsplice-tcp":
            return sp + ["--mode", "tcp"]
        if self.name == "smbsplice-copy":
            return sp + ["--no-splice"]
        if self.name.startswith("smbsplice+"):
            return sp + self.name.split("+", 1)[1].split()
        if self.name == "haproxy":
            self.cfg = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
            fe_max = f"\n    maxconn {self.maxconn}" if self.maxconn else ""
            self.cfg.write(f"""global
{haproxy_limits(self.maxconn)}
defaults
    mode tcp{fe_max}
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    option splice-auto
frontend f
    bind 127.0.0.1:{port}
    default_backend b
backend b
    server s {b}
""")
            self.cfg.close()
            return ["haproxy", "-db", "-f", self.cfg.name]
        if self.name == "socat":
            return ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr", f"TCP:{b}"]
        if self.name == "pasta":
            return ["pasta", "--runas", "0", "-f", "-q", "--netns", f"/run/netns/{NETNS}",
                    "-t", f"127.0.0.1/{port}:{self.netns_port}"]
        raise ValueError(self.name)

    def start(self):
        if self.name == "direct":
            self.port = self.backend_port
            self.cpu0 = 0.0
            return self
        self.port = free_port()
        self.worker_conns = {}
        argv = self.argv(self.port)
        # standard error goes to a file, so that a front that will not
        # start can say why in its own words
        self.err = tempfile.TemporaryFile("w+", dir=work_bin())
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.err)
        try:
            wait_listening(self.port, self.proc)
        except RuntimeError as e:
            why = self.last_error()
            self.stop()
            raise FrontFailed(f"{e}{': ' + why if why else ''}") from None
        self.cpu0 = proc_cpu(self.proc.pid)
        return self

    def last_error(self):
        """The last line the front wrote to standard error, if any."""
        if not self.err:
            return ""
        self.err.flush()
        self.err.seek(0)
        lines = [l.strip() for l in self.err.read().splitlines() if l.strip()]
        return lines[-1] if lines else ""

    def cpu(self):
        return proc_cpu(self.proc.pid) - self.cpu0 if self.proc else 0.0

    def hwm_mib(self):
        return proc_hwm_kib(self.proc.pid) / 1024 if self.proc else 0.0

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.cfg:
            os.unlink(self.cfg.name)
            self.cfg = None
        if self.err:
            self.worker_conns = self.count_workers()
            self.err.close()
            self.err = None

    def count_workers(self):
        """{worker: connections} from smbsplice's per-connection log lines
        ("conn ... worker=N end=..."); empty for other fronts and for
        builds that do not name the worker."""
        self.err.flush()
        self.err.seek(0)
        out = {}
        for w in re.findall(r" conn \S+ -> \S+ worker=(\d+) ", self.err.read()):
            out[w] = out.get(w, 0) + 1
        return out


def measure(front, fn):
    """Run fn(port) through a fresh front; return fn's dict plus costs."""
    front.start()
    busy0, t0 = machine_busy(), time.monotonic()
    try:
        r = fn(front.port)
    finally:
        r_cpu, r_hwm = front.cpu(), front.hwm_mib()
        busy, secs = machine_busy() - busy0, time.monotonic() - t0
        front.stop()
    r.update(proxy_cpu=r_cpu, busy=busy, secs=secs, rss_mib=r_hwm)
    if front.worker_conns:
        r["worker_conns"] = front.worker_conns
    return r


# --- backends -------------------------------------------------------------------


class Backends:
    """loadgen servers (host and netns) and a throwaway smbd."""

    def __init__(self, work):
        self.work = work
        self.procs = []
        self.netns = False
        self.smbd_dir = None

    def loadgen(self):
        port = free_port()
        self.procs.append(subprocess.Popen([os.path.join(work_bin(), "loadgen"), "serve", str(port)],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_listening(port)
        return port

    def connstorm(self):
        """A connstorm echo server; it says which port it took."""
        p = subprocess.Popen([os.path.join(work_bin(), "connstorm"), "serve"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        self.procs.append(p)
        line = p.stdout.readline()
        m = re.match(r"listening port=(\d+)", line)
        if not m:
            raise RuntimeError(f"connstorm serve did not start: {line!r}")
        return int(m.group(1))

    def netns_loadgen(self):
        """A loadgen server inside a network namespace, for pasta."""
        if not shutil.which("pasta"):
            log("pasta not found (Debian package passt): pasta left out")
            return None
        subprocess.run(["ip", "netns", "del", NETNS], stderr=subprocess.DEVNULL)
        if subprocess.run(["ip", "netns", "add", NETNS], stderr=subprocess.DEVNULL).returncode:
            log("cannot create a network namespace (needs root): pasta left out")
            return None
        self.netns = True
        subprocess.run(["ip", "-n", NETNS, "link", "set", "lo", "up"], check=True)
        port = 24000 + os.getpid() % 1000
        self.procs.append(subprocess.Popen(["ip", "netns", "exec", NETNS, os.path.join(work_bin(), "loadgen"),
                                            "serve", str(port)], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))
        time.sleep(0.3)
        return port

    def smbd(self):
        self.smbd_dir = os.path.join(self.work, "smbd")
        port = free_port()
        subprocess.run([os.path.join(TOP, "contrib/throwaway-smbd.sh"), "start", self.smbd_dir, str(port)],
                       check=True, env=dict(os.environ, SMB_PASS=PASSWORD))
        return port

    def close(self):
        for p in self.procs:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        if self.smbd_dir:
            subprocess.run([os.path.join(TOP, "contrib/throwaway-smbd.sh"), "stop", self.smbd_dir])
        if self.netns:
            # `ip netns exec` execs loadgen in place, so the terminate()
            # above ended it: nothing is killed by name, which could hit
            # another harness's servers
            subprocess.run(["ip", "netns", "del", NETNS], stderr=subprocess.DEVNULL)


_BIN = None


def work_bin():
    return _BIN


def build_tools(bindir):
    """Build loadgen, connstorm and smbread into bindir."""
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-Wall", "-o", os.path.join(bindir, "loadgen"),
                    os.path.join(BENCH, "loadgen.c"), "-lm", "-lpthread"], check=True)
    subprocess.run([cc, "-O2", "-Wall", "-o", os.path.join(bindir, "connstorm"),
                    os.path.join(BENCH, "connstorm.c")], check=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "smbclient"], capture_output=True,
                           text=True)
    if flags.returncode == 0 and os.path.exists(os.path.join(BENCH, "smbread.c")):
        subprocess.run([cc, "-O2", "-Wall", "-o", os.path.join(bindir, "smbread"),
                        os.path.join(BENCH, "smbread.c"), *flags.stdout.split(), "-lm"], check=True)
    else:
        log("libsmbclient-dev missing: the READ-size sweep is left out")


# --- workloads -------------------------------------------------------------------


def parse_kv(line):
    return {k: (float(v) if re.fullmatch(r"-?[\d.]+", v) else v)
            for k, v in (f.split("=", 1) for f in line.split() if "=" in f)}


def run_checked(argv, timeout=600):
    """Run a command; return its standard output and error together."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stdout[-500:]}{r.stderr[-500:]}")
    return r.stdout + r.stderr


def bulk(direction, mib):
    def fn(port):
        out = run_checked([os.path.join(work_bin(), "loadgen"), "bulk", str(port), str(mib), direction])
        kv = parse_kv([l for l in out.splitlines() if l.startswith("bulk")][-1])
        return {"gbit": kv["gbit"], "bytes": mib << 20}
    return fn


def rr(iters):
    def fn(port):
        out = run_checked([os.path.join(work_bin(), "loadgen"), "rr", str(port), str(iters)])
        sizes = [parse_kv(l) for l in out.splitlines() if l.startswith("rr kind=")]
        return {"mean_us": statistics.mean(s["mean_us"] for s in sizes),
                "p99_us": max(s["p99_us"] for s in sizes),
                "worst_us": max(s["max_us"] for s in sizes),
                "sizes": sizes}
    return fn


def smbclient(cmd, mib, extra=()):
    def fn(port):
        t0 = time.monotonic()
        run_checked(["smbclient", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{PASSWORD}", *extra,
                     "-c", cmd])
        secs = time.monotonic() - t0
        return {"gbyte_s": (mib << 20) / secs / 1e9, "bytes": mib << 20}
    return fn


def echo_rate(out):
    """Mean of smbtorture's per-second "num/s=N" samples."""
    nums = [int(n) for n in re.findall(r"num/s=(\d+)", out)]
    if not nums:
        raise RuntimeError(f"cannot read the echo rate from smbtorture:\n{out[-800:]}")
    return statistics.mean(nums)


def echo(port):
    out = run_checked(["smbtorture", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{PASSWORD}",
                       "smb2.bench.echo", "--option=torture:nprocs=4", "--option=torture:timelimit=5"])
    return {"ops_s": echo_rate(out)}


def all_at_once(argvs, timeout=600):
    """Start every command at once and wait for all of them. Returns the
    wall time from the first start until the last exit, and per command
    (seconds from its own start to its exit, its standard output and
    error). Any command that fails fails the whole measurement."""
    outs = [tempfile.TemporaryFile("w+", dir=work_bin()) for _ in argvs]
    procs, starts, ends = [], [], [None] * len(argvs)
    try:
        t0 = time.monotonic()
        for argv, out in zip(argvs, outs):
            starts.append(time.monotonic())
            procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))

        def wait(i):
            try:
                procs[i].wait(timeout)
            except subprocess.TimeoutExpired:
                procs[i].kill()
                procs[i].wait()
            ends[i] = time.monotonic()
        waiters = [threading.Thread(target=wait, args=(i,)) for i in range(len(procs))]
        for w in waiters:
            w.start()
        for w in waiters:
            w.join()
        res = []
        for argv, p, out, t_start, t_end in zip(argvs, procs, outs, starts, ends):
            out.seek(0)
            text = out.read()
            if p.returncode:
                raise RuntimeError(f"{' '.join(argv)} failed ({p.returncode}) beside {len(argvs) - 1} "
                                   f"others: {text[-500:]}")
            res.append((t_end - t_start, text))
        return max(ends) - t0, res
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for out in outs:
            out.close()


def par_get(clients, mib):
    """`clients` smbclient gets of par.bin (mib MiB) at once: total GB/s,
    and each client's GB/s from its own start to its own exit."""
    def fn(port):
        argv = ["smbclient", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{PASSWORD}",
                "-c", "get par.bin /dev/null"]
        wall, res = all_at_once([argv] * clients)
        each = [(mib << 20) / secs / 1e9 for secs, _ in res]
        total = clients * (mib << 20)
        return {"gbyte_s": total / wall / 1e9, "bytes": total, "clients": each,
                "client_min": min(each), "client_max": max(each)}
    return fn


def par_bulk(streams, mib, direction):
    """`streams` loadgen bulk transfers of mib MiB at once, one way: total
    Gbit/s over the wall time, and each stream's Gbit/s as loadgen timed
    it (from its first byte to its last, checked)."""
    def fn(port):
        argv = [os.path.join(work_bin(), "loadgen"), "bulk", str(port), str(mib), direction]
        wall, res = all_at_once([argv] * streams)
        each = []
        for _, out in res:
            kv = parse_kv([l for l in out.splitlines() if l.startswith("bulk")][-1])
            if kv.get("ok") != 1:
                raise RuntimeError(f"loadgen reports a bad transfer: {out[-300:]}")
            each.append(kv["gbit"])
        total = streams * (mib << 20)
        return {"gbit": total * 8 / wall / 1e9, "bytes": total, "clients": each,
                "client_min": min(each), "client_max": max(each)}
    return fn


def smbread(size, secs):
    def fn(port):
        out = run_checked([os.path.join(work_bin(), "smbread"), f"smb://127.0.0.1:{port}/share/sweep.bin",
                           "root", PASSWORD, str(size), str(secs)])
        return parse_kv(out.strip().splitlines()[-1])
    return fn


# --- the run --------------------------------------------------------------------


def summarize(vals):
    vals = sorted(vals)
    return {"median": statistics.median(vals), "min": vals[0], "max": vals[-1], "n": len(vals)}


# The contestants of bulk, rr, get and echo; of parallel. pasta joins the
# first list when it can (bulk, rr), base: twins join with --baseline.
STD_FRONTS = ("direct", "smbsplice", "smbsplice-tcp", "smbsplice-copy", "haproxy", "socat")
PAR_FRONTS = ("direct", "smbsplice+--workers 1", "smbsplice+--workers 2", "haproxy")
PAR_GETS = 8            # smbclient gets at once
PAR_STREAMS = 4         # loadgen streams at once
PAR_MIB = 256           # MiB per client
BASELINE = None         # --baseline: the older smbsplice for base: twins
FRONTS = None           # --fronts: the only contestants wanted, or None
PICKED = set()          # the contestants some workload kept


def with_twins(names):
    """names, each smbsplice contestant without --workers followed by its
    base: twin when there is a baseline."""
    out = []
    for n in names:
        out.append(n)
        if BASELINE and n.startswith("smbsplice") and "--workers" not in n:
            out.append("base:" + n)
    return out


def wanted(name):
    return FRONTS is None or name in FRONTS


def pick(names, backend_port, **kw):
    """Fronts for the names --fronts keeps whose program is installed."""
    out = []
    for n in names:
        f = Front(n, backend_port, **kw)
        if not wanted(n):
            continue
        PICKED.add(n)
        if n != "direct" and not (f.tool() and shutil.which(f.tool())):
            log(f"{f.tool()} not found: {n} left out")
            continue
        out.append(f)
    return out


def interleaved(fronts, fn, runs, label):
    """{front name: [result, ...]}, run r of every front before run r+1."""
    res = {f.name: [] for f in fronts}
    for r in range(runs):
        for f in fronts:
            try:
                res[f.name].append(measure(f, fn))
            except Exception as e:  # one contestant failing must not sink the run
                log(f"{label}: {f.name} run {r + 1} failed: {e}")
        log(f"{label}: run {r + 1}/{runs} done")
    return res


def main():
    global _BIN
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(TOP, "contrib/bench/results"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes, one run: for trying the harness")
    ap.add_argument("--only", default="bulk,rr,get,echo,sweep,tune,cost,scale,parallel")
    ap.add_argument("--fronts", help="only these contestants, comma-separated (e.g. direct,smbsplice,"
                    "base:smbsplice); tune, sweep and cost ignore it")
    ap.add_argument("--baseline", metavar="PATH",
                    help="an older smbsplice binary: adds base:NAME twins of the smbsplice contestants "
                         "without --workers")
    ap.add_argument("--sweep-sizes", default=",".join(str(x) for x in SWEEP_SIZES),
                    help="READ sizes in bytes, comma-separated")
    ap.add_argument("--sweep-thresholds", default=",".join(SWEEP_THRESHOLDS))
    ap.add_argument("--scale-counts", default=",".join(str(x) for x in SCALE_COUNTS),
                    help="connections per storm, comma-separated")
    ap.add_argument("--scale-idle", type=float, default=SCALE_IDLE,
                    help="seconds held idle before the second RSS reading")
    args = ap.parse_args()
    global BASELINE, FRONTS
    only = set(args.only.split(","))
    runs = 1 if args.quick else args.runs
    mib = 128 if args.quick else 1024
    par_mib = 32 if args.quick else PAR_MIB
    if args.baseline:
        BASELINE = os.path.abspath(args.baseline)
        if not os.access(BASELINE, os.X_OK):
            ap.error(f"--baseline {args.baseline}: not an executable file")
    if args.fronts:
        FRONTS = [n.strip() for n in args.fronts.split(",") if n.strip()]
        if any(n.startswith("base:") for n in FRONTS) and not BASELINE:
            ap.error("base: contestants need --baseline PATH")

    work = tempfile.mkdtemp(prefix="smbsplice-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    _BIN = work
    os.makedirs(args.out, exist_ok=True)
    build_tools(work)
    be = Backends(work)
    results = {"machine": machine_info(), "runs": runs, "mib": mib}
    if BASELINE:
        results["baseline"] = {"path": BASELINE, "version": subprocess.run(
            [BASELINE, "--version"], capture_output=True, text=True).stdout.strip()}
    if FRONTS:
        results["fronts"] = FRONTS
    try:
        if only & {"bulk", "rr", "cost", "parallel"}:
            lg = be.loadgen()
        if only & {"bulk", "rr", "cost"}:
            ns = be.netns_loadgen() if only & {"bulk", "rr"} and wanted("pasta") else None
            fronts = pick(with_twins(STD_FRONTS), lg)
            if ns:
                fronts.append(Front("pasta", lg, netns_port=ns))
                PICKED.add("pasta")
            if "bulk" in only:
                for d in ("up", "down"):
                    results[f"bulk_{d}"] = interleaved(fronts, bulk(d, mib), runs, f"bulk {d}")
            if "rr" in only:
                rr_fronts = fronts + pick(with_twins(("smbsplice+--pipe-size 8K",
                                                      "smbsplice+--mode tcp --pipe-size 8K")), lg)
                results["rr"] = interleaved(rr_fronts, rr(50 if args.quick else 200), runs, "rr")
            if "tune" in only:
                results["tune_bulk"] = interleaved([Front(n, lg) for n in TUNE_TCP], bulk("down", mib), runs,
                                                   "tune: bulk down")
            if "cost" in only:
                results["syscalls"] = syscalls_per_mib(lg, mib)
        if "parallel" in only:
            results["par"] = {"gets": PAR_GETS, "streams": PAR_STREAMS, "mib": par_mib}
            fronts = pick(with_twins(PAR_FRONTS), lg)
            for d in ("up", "down"):
                results[f"par_bulk_{d}"] = interleaved(fronts, par_bulk(PAR_STREAMS, par_mib, d), runs,
                                                       f"parallel bulk {d}")
        if only & {"get", "echo", "sweep", "parallel"}:
            sp = be.smbd()
            share = os.path.join(be.smbd_dir, "share")
            if "parallel" in only:
                make_file(os.path.join(share, "par.bin"), par_mib)
                results["par_get"] = interleaved(pick(with_twins(PAR_FRONTS), sp), par_get(PAR_GETS, par_mib),
                                                 runs, "parallel get")
        if only & {"get", "echo", "sweep"}:
            make_file(os.path.join(share, "get.bin"), mib)
            make_file(os.path.join(work, "put.bin"), mib)
            fronts = pick(with_twins(STD_FRONTS), sp)
            if "get" in only:
                results["get"] = interleaved(fronts, smbclient("get get.bin /dev/null", mib), runs, "smbclient get")
                results["put"] = interleaved(fronts, smbclient(f"put {work}/put.bin put.bin", mib), runs,
                                             "smbclient put")
                results["get_encrypted"] = interleaved(
                    fronts, smbclient("get get.bin /dev/null", mib, ("--client-protection=encrypt",)), runs,
                    "encrypted get")
            if "echo" in only and shutil.which("smbtorture"):
                results["echo"] = interleaved(fronts, echo, runs, "smb2.bench.echo")
            if "tune" in only:
                results["tune_get"] = interleaved([Front(n, sp) for n in TUNE_SMB],
                                                  smbclient("get get.bin /dev/null", mib), runs, "tune: get")
            if "sweep" in only and os.path.exists(os.path.join(work, "smbread")):
                make_file(os.path.join(share, "sweep.bin"), 256)
                results["sweep"] = sweep(sp, 1 if args.quick else 2, runs,
                                         [int(x) for x in args.sweep_sizes.split(",")],
                                         args.sweep_thresholds.split(","))
        if "scale" in only:
            counts = args.scale_counts
            if args.quick and counts == ap.get_default("scale_counts"):
                counts = "200,1000"
            names = [n for n in SCALE_FRONTS if wanted(n)]
            PICKED.update(names)
            results["scale"] = scale(be.connstorm(), [int(x) for x in counts.split(",")], runs,
                                     args.scale_idle, names)
    finally:
        be.close()
        shutil.rmtree(work, ignore_errors=True)
    results["loadavg"] = [results["machine"]["loadavg"], loadavg()]
    for n in FRONTS or ():
        if n not in PICKED:
            log(f"--fronts: {n} is not a contestant of --only {args.only}; nothing ran it")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    import report
    report.write(results, args.out)
    log(f"wrote {args.out}/results.md")
    if os.path.abspath(args.out) == os.path.join(TOP, "contrib/bench/results"):
        report.embed(os.path.join(TOP, "README.md"), args.out)
        log("embedded it in README.md")


def make_file(path, mib):
    with open("/dev/urandom", "rb") as src, open(path, "wb") as dst:
        for _ in range(mib):
            dst.write(src.read(1 << 20))


# Pipe sizes for the splice path and buffer sizes for the copy path.
TUNE_TCP = tuple(f"smbsplice+--mode tcp --pipe-size {p}" for p in ("64K", "256K", "1M")) + \
    tuple(f"smbsplice+--mode tcp --no-splice --buffer-size {b}" for b in ("16K", "64K", "256K", "1M"))
TUNE_SMB = tuple(f"smbsplice+--pipe-size {p}" for p in ("64K", "256K", "1M")) + \
    tuple(f"smbsplice+--no-splice --buffer-size {b}" for b in ("64K", "256K", "1M"))
SWEEP_SIZES = (4 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20)
SWEEP_THRESHOLDS = ("off", "4K", "16K", "64K", "256K")


def sweep(smb_port, secs, runs, sizes, thresholds):
    """{size: {threshold: [smbread result, ...]}}, thresholds interleaved."""
    out = {}
    for size in sizes:
        fronts = [Front("direct", smb_port)] + [Front(f"smbsplice+--read-threshold {t}", smb_port)
                                                for t in thresholds]
        res = interleaved(fronts, smbread(size, secs), runs, f"sweep {size >> 10}K")
        out[str(size)] = res
    return out


def syscalls_per_mib(lg_port, mib):
    """strace -c on smbsplice --mode tcp during 1 GiB up+down, splice and copy."""
    if not shutil.which("strace"):
        log("strace not found (Debian package strace): syscall counts left out")
        return {}
    out = {}
    for name, extra in (("splice", []), ("copy", ["--no-splice"])):
        port = free_port()
        px = subprocess.Popen([SMBSPLICE, "-l", f"127.0.0.1:{port}", "-b", f"127.0.0.1:{lg_port}",
                               "--mode", "tcp", *extra], stderr=subprocess.DEVNULL)
        wait_listening(port, px)
        trace = os.path.join(_BIN, f"strace-{name}.txt")
        st = subprocess.Popen(["strace", "-c", "-f", "-o", trace, "-p", str(px.pid)],
                              stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        run_checked([os.path.join(_BIN, "loadgen"), "bulk", str(port), str(mib), "both"])
        st.send_signal(signal.SIGINT)
        st.wait(30)
        px.terminate()
        px.wait()
        calls = {}
        with open(trace) as f:
            for line in f:
                m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
                if m and m.group(2) != "total":
                    calls[m.group(2)] = int(m.group(1))
        total_mib = 2 * mib
        out[name] = {"per_mib": sum(calls.values()) / total_mib,
                     "calls": {k: v / total_mib for k, v in sorted(calls.items(), key=lambda kv: -kv[1])[:6]}}
    return out


# --- scale: connection storms and the memory of held connections ---------------

# The scale workload's contestants: edit freely. A front that exits before
# it listens (an option this smbsplice does not know, say) is reported as
# failed with its own last line of standard error, and not tried again.
SCALE_FRONTS = ("smbsplice", "smbsplice+--workers 1", "smbsplice+--workers 2", "haproxy")
SCALE_COUNTS = (1000, 5000, 9000)
SCALE_SIZE = 64 << 10   # one round trip of this size per connection
SCALE_SETTLE = 1.0      # seconds between the front's start and its base RSS
SCALE_IDLE = 5.0        # seconds held idle before the second RSS reading
SCALE_TIMEOUT = 60      # connstorm's --timeout: SYN retries take 1, 3, 7 s ...
# Machine-wide TCP counters read around each storm: accept-queue overflows
# (a SYN or handshake ACK dropped because the front accepts too slowly),
# SYN cookies, retransmitted segments.
NETSTAT = {"listen_overflows": "TcpExt.ListenOverflows", "listen_drops": "TcpExt.ListenDrops",
           "syncookies": "TcpExt.SyncookiesSent", "retrans": "Tcp.RetransSegs"}
FAIL_KINDS = ("refused", "reset", "eof", "timeout", "mismatch", "other")


def netstat():
    """/proc/net/netstat and /proc/net/snmp as {"TcpExt.Name": value}."""
    out = {}
    for table in ("/proc/net/netstat", "/proc/net/snmp"):
        with open(table) as f:
            lines = f.read().splitlines()
        for head, vals in zip(lines[::2], lines[1::2]):
            names, nums = head.split(), vals.split()
            for k, v in zip(names[1:], nums[1:]):
                if v.lstrip("-").isdigit():
                    out[f"{names[0][:-1]}.{k}"] = int(v)
    return out


def open_conns(port):
    """Connections, in any state but LISTEN and TIME_WAIT, with local port `port`."""
    want, n = f":{port:04X}", 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split(None, 4)
                    n += cols[1].endswith(want) and cols[3] not in ("0A", "06")
        except OSError:
            pass
    return n


def read_line(proc, timeout):
    """One line of proc's standard output, or "" after `timeout` seconds."""
    import select
    if select.select([proc.stdout], [], [], timeout)[0]:
        return proc.stdout.readline()
    return ""


def storm_once(front, backend_port, n, idle):
    """One storm of n connections through a fresh front, held open while
    the front's RSS is read right after the round trips and again after
    `idle` seconds. Raises FrontFailed if the front will not start."""
    front.start()
    client = errf = None
    try:
        time.sleep(SCALE_SETTLE)
        pid = front.proc.pid
        base = proc_hwm_kib(pid, "VmRSS")
        cpu0, ns0 = proc_cpu(pid), netstat()
        errf = tempfile.TemporaryFile("w+", dir=work_bin())
        client = subprocess.Popen([os.path.join(work_bin(), "connstorm"), "client", "-c",
                                   f"127.0.0.1:{front.port}", "-n", str(n), "-s", str(SCALE_SIZE), "--smb",
                                   "--hold", "--timeout", str(SCALE_TIMEOUT)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, text=True)
        line = read_line(client, SCALE_TIMEOUT + 30)
        held_kib, hwm = proc_hwm_kib(pid, "VmRSS"), proc_hwm_kib(pid)
        cpu, ns1 = proc_cpu(pid) - cpu0, netstat()
        if not line.startswith("storm "):
            errf.seek(0)
            raise RuntimeError(f"connstorm client gave no report: {line!r} {errf.read()[-300:]}")
        r = parse_kv(line)
        time.sleep(idle)
        idle_kib = proc_hwm_kib(pid, "VmRSS")
        alive = front.proc.poll() is None
        client.stdin.write("\n")
        client.stdin.close()
        hold = parse_kv(read_line(client, 30))
        client.wait(30)
        errf.seek(0)
        client_err = errf.read().strip()
        front_err = "" if alive else f"front exited with {front.proc.returncode}: {front.last_error()}"
    finally:
        if client and client.poll() is None:
            client.kill()
            client.wait()
        if errf:
            errf.close()
        front.stop()
    # the backend must be rid of this storm before the next one starts
    end = time.monotonic() + 30
    while open_conns(backend_port) and time.monotonic() < end:
        time.sleep(0.1)
    done = int(r["done"])
    r.update(rss_base_kib=base, rss_held_kib=held_kib, rss_idle_kib=idle_kib, hwm_kib=hwm,
             kib_per_conn=(held_kib - base) / done if done else None,
             kib_per_conn_idle=(idle_kib - base) / done if done else None,
             proxy_cpu=cpu, held=hold.get("held", 0), lost=hold.get("lost", 0),
             front_error=front_err, client_error=client_err[-500:],
             **{k: ns1.get(v, 0) - ns0.get(v, 0) for k, v in NETSTAT.items()})
    return r


def scale(backend_port, counts, runs, idle, names=SCALE_FRONTS):
    """{"counts": {n: {front: [storm result, ...]}}, "failed": {front: why}},
    contestants interleaved within each count."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    names = [n for n in names if shutil.which(Front(n, 0).tool())]
    out = {"size": SCALE_SIZE, "idle_s": idle, "nofile_hard": hard, "counts": {}, "failed": {}, "errors": []}
    maxconn = max(counts) + 50
    for n in counts:
        res = out["counts"][str(n)] = {name: [] for name in names}
        for r in range(runs):
            for name in names:
                if name in out["failed"]:
                    continue
                try:
                    try:
                        x = storm_once(Front(name, backend_port, maxconn=maxconn), backend_port, n, idle)
                    except FrontFailed:  # once more, on another port: bind races happen
                        x = storm_once(Front(name, backend_port, maxconn=maxconn), backend_port, n, idle)
                    res[name].append(x)
                    log(f"scale {n}: {name}: {x['kib_per_conn_idle'] or 0:.1f} KiB/conn, all round-tripped "
                        f"in {x['done_s']:.2f} s, {int(x['failed'])} failed")
                except FrontFailed as e:
                    out["failed"][name] = str(e)
                    log(f"scale: {name} will not start, left out: {e}")
                except Exception as e:  # one contestant failing must not sink the run
                    out["errors"].append(f"{n} connections, {name}, run {r + 1}: {e}")
                    log(f"scale {n}: {name} run {r + 1} failed: {e}")
            log(f"scale {n}: run {r + 1}/{runs} done")
    return out


def loadavg():
    """The 1-minute load average: other work on the machine skews every figure."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def machine_info():
    def sh(cmd):
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    return {"cpus": os.cpu_count(), "model": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
            "kernel": os.uname().release, "mem_gib": round(os.sysconf("SC_PAGE_SIZE") *
                                                          os.sysconf("SC_PHYS_PAGES") / GIB),
            "samba": sh("smbd --version"), "haproxy": sh("haproxy -v | head -1"),
            "date": time.strftime("%Y-%m-%d"), "loadavg": loadavg()}


if __name__ == "__main__":
    sys.path.insert(0, BENCH)
    main()
