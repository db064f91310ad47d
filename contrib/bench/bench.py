#!/usr/bin/env python3
"""bench.py - smbsplice beside direct, haproxy, socat and pasta, in one run.

Theory of operation: every figure comes from one run on one machine, with
the contestants interleaved (run 1 of each, then run 2 of each, ...), so
that drift in the machine's speed hits them all alike. Each measurement
starts a fresh front (proxy) in front of the same backend, runs one
workload through it, reads the front's CPU time and peak RSS from /proc,
the machine's busy time from /proc/stat, and stops the front. The report
gives medians with min and max, and the ratios docs/benchmarks.md quotes.

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
  office small files, the way an office uses a share: smbclient mget and
         mput of 1,000 files of 1 KiB to 1 MiB (a fixed, seeded log-uniform
         mix); smbclient ls of a directory of 20,000 entries; smbtorture
         smb2.bench.path-contention-shared (open/close storms on one path,
         4 connections) and smb2.bench.echo; with direct, smbsplice and
         haproxy (and pasta in the namespace). Rates are per session, from
         smbclient's connect() to its exit (contrib/bench/filetimes.c, an
         LD_PRELOAD shim, stamps both, and each file's local open, which
         gives a time per file and its p99); smbtorture gives its own mean
         and worst latency. On loopback the echo figures are the echo
         workload's when it ran too.
  obs    what the observability features cost, each beside plain
         smbsplice, interleaved, at least 5 runs: --trace FILE (a file
         on disk, not tmpfs, with the default rotation) on the 1 GiB
         smbclient get and on smb2.bench.echo, and --no-latency (the
         per-command histograms off) on echo: throughput and proxy CPU
         per GiB, echoes per second, and their ratios.
  ns     the namespace topology (--topology ns): a throwaway smbd and a
         loadgen server inside a network namespace the harness makes,
         listening on its loopback, reached from the host through pasta
         -t, smbsplice --backend-netns (smb and tcp mode), haproxy with
         its `namespace` server option (spliced and not) and, as the
         reference, a client run inside the namespace (direct-ns, with
         nsenter): smbclient get and put of 1 GiB, bulk both ways, and the
         rr sizes with 8 KiB and default pipes. office runs on this
         topology too.
  wan    smbsplice as a WAN gateway, over smbsplice-wanem between namespaces
         of its own (contrib/bench/wan.py): direct (cubic), direct with bbr
         on the server, haproxy at HQ, smbsplice at HQ (--congestion
         client:bbr), the smbsplice pair, and the pair over two MPTCP
         paths; smbclient get and put (--mib, default 256), mget of the
         office files and ls of the office directory, over the cells of
         --wan-grid RTTS:LOSSES:RATES (default 10,40,100:0,0.1,1:100,1000;
         --quick 40:0,1:100 with get and put of 32 MiB), --wan-work and
         --wan-fronts pick workloads and contestants, --wan-mtu the MTU.
         Get, put and mget stop at --wan-seconds (default 10) and count
         what came by then (TCP bytes for get and put, whole files for
         mget): a 1 % cubic get at 100 ms moves about 0.2 MB/s, and the
         grid would take days run to the end. Even capped, the whole
         grid takes about 2.5 hours.

  handover  the live handover (contrib/bench/handover.py): N idle
         connections (--handover-counts, default 10,1000,9000) and 3
         probe connections doing round trips through smbsplice --mode
         tcp, across 5 `kill -USR2` handovers: the pause each old process
         logs, the probes' round trips in steady state and around the
         handovers, and every idle connection answering afterwards.
  quicfield  QUIC in the field (contrib/bench/quicfield.py): memory per
         idle session (--quicfield-idle, default 9000, at most a third of
         the open-files limit) through smbsplice
         with TCP clients, smbsplice's quic: listener and the quic-go
         relay, and whose heap a QUIC session is by library (the
         heapcensus.so shim); one `kill -USR2` with 10 and 1000 (--quicfield-handover)
         idle QUIC sessions and a transfer in flight (the pause, the
         sessions the old process kept and that answered after, its exit);
         and how four long TCP connections spread over --workers 2.
  quic   SMB over QUIC (contrib/bench/quic.py): smbclient get and put of
         --mib MiB through a pair of fronts (a branch front for the client,
         an HQ front before smbd): direct, the stunnel4 pair (TLS 1.3), the
         quic-go relay pair (tests/quic's quicrelay), the smbsplice TCP
         pair and the smbsplice QUIC pair (listed "not built" when this
         smbsplice lacks QUIC); on loopback (with the loopback topology)
         and over smbsplice-wanem in the cells of --quic-grid (default
         40:0,1:100, BBR on the smbsplice pairs' WAN leg, a transfer stopped
         at --quic-seconds, default 30), with the AES-128-GCM floor from
         `openssl speed`. The contestants are data: quic.CONTESTANTS.

--topology loopback,ns picks the topologies: loopback runs every
workload but ns, the namespace topology runs ns and office. The report
says how long each part took.

Contestants: each workload has its own list (direct, smbsplice and its
modes, haproxy, socat, pasta; scale and parallel name smbsplice with
--workers; sockfloor, an in-kernel BPF sockmap forwarder that shows what
no forwarder can beat, runs in rr, get, put, echo, office and the
namespace's get, put and rr). --fronts N1,N2 keeps only the named ones, in each workload's
order. --baseline PATH adds, beside each smbsplice contestant of bulk,
rr, get, echo, obs, parallel, ns and office, a twin "base:NAME" that runs the binary at PATH
with NAME's arguments: an older build, for a before/after comparison in the
same run. A twin is made only for contestants without --workers, which an
older build may not know; the report puts each base: twin beside its
namesake. tune, sweep and cost measure settings of the current binary and
take neither option.

Usage: bench.py [--out DIR] [--runs N] [--quick] [--only W1,W2] [--mib N]
                [--topology loopback,ns] [--fronts N1,N2] [--baseline PATH]
                [--office-files N] [--office-entries N] [--office-seconds S]
                [--scale-counts N1,N2] [--scale-idle SEC] [--handover-counts N1,N2]
                [--wan-grid RTTS:LOSSES:RATES] [--wan-work W1,W2] [--wan-fronts F1,F2] [--wan-seconds S] [--wan-mtu N]
                [--quic-grid RTTS:LOSSES:RATES|none] [--quic-seconds S]
                [--quicfield-idle N] [--quicfield-handover N1,N2]
Writes DIR/results.json, DIR/results.md and DIR/*.png (gnuplot); with the
default DIR (contrib/bench/results) it also embeds results.md in
docs/benchmarks.md.
"""
import argparse
import contextlib
import functools
import hashlib
import itertools
import json
import math
import os
import random
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


def listening(port, pid=None):
    """Is something listening on 127.0.0.1:port (read from /proc/net/tcp)?
    With pid, in that process's network namespace (/proc/PID/net/tcp)."""
    want = f":{port:04X}"
    net = f"/proc/{pid}/net" if pid else "/proc/net"
    for table in (f"{net}/tcp", f"{net}/tcp6"):
        try:
            with open(table) as f:
                for line in f.readlines()[1:]:
                    cols = line.split()
                    if cols[1].endswith(want) and cols[3] == "0A":
                        return True
        except OSError:
            pass
    return False


def wait_listening(port, proc=None, timeout=10, netns_pid=None):
    end = time.monotonic() + timeout
    while not listening(port, netns_pid):
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


def in_netns(netns):
    """The argv prefix that runs a client inside a network namespace.
    nsenter --net only joins the namespace; `ip netns exec` would also
    unshare and remount /sys, a few milliseconds more inside the timing."""
    return ("nsenter", f"--net=/run/netns/{netns}", "--")


DIRECT = ("direct", "direct-ns")    # the references: no front at all
# The in-kernel floor (contrib/bench/sockfloor.c): what no forwarder can
# beat here. In the SMB and round-trip workloads only: loadgen's bulk
# upload streams from its first byte, which races with sockfloor's one
# copy of the bytes that came before the pair was linked.
FLOOR = "sockfloor"


class Front:
    """One contestant in front of `backend_port`; direct is no front.

    With `netns`, the namespace topology: the backend listens on
    127.0.0.1:backend_port inside that network namespace; smbsplice
    connects there with --backend-netns, haproxy with its server's
    `namespace` option, pasta forwards a host port to it, and direct-ns
    runs the client itself inside the namespace (self.wrap)."""

    def __init__(self, name, backend_port, netns_port=None, maxconn=None, netns=None):
        self.name = name
        self.backend_port = backend_port
        self.netns_port = netns_port    # loopback topology's pasta: its server's port in NETNS
        self.netns = netns
        self.maxconn = maxconn
        self.proc = None
        self.cfg = None
        self.err = None
        self.port = backend_port
        self.wrap = ()                  # argv prefix for the client
        self.worker_conns = {}
        self.trace_dir = None           # smbsplice-trace: where its file goes
        self.trace_bytes = None         # and how large it grew, once stopped

    def tool(self):
        """The program this front runs, to check it is installed; None for direct."""
        if self.name in DIRECT:
            return None
        if self.name.startswith("base:"):
            return BASELINE
        if self.name == FLOOR:
            return os.path.join(work_bin(), "sockfloor")
        return {"haproxy": "haproxy", "haproxy-nosplice": "haproxy", "socat": "socat",
                "pasta": "pasta"}.get(self.name, SMBSPLICE)

    def argv(self, port):
        if self.name.startswith("base:"):
            # the namesake's command line, run from the baseline binary
            twin = Front(self.name[5:], self.backend_port, netns=self.netns)
            argv = twin.argv(port)
            if argv[0] != SMBSPLICE or "--workers" in argv:
                raise FrontFailed(f"{self.name}: a base: twin must be smbsplice without --workers")
            # a build older than RAW_ARGS needs none of them (it dials on
            # the first byte and has no caps before login) and would
            # refuse them; a newer one needs them as much as this one
            for flag in RAW_ARGS[::2]:
                if flag in argv and not baseline_knows(flag):
                    i = argv.index(flag)
                    del argv[i:i + 2]
            return [BASELINE] + argv[1:]
        b = f"127.0.0.1:{self.backend_port}"
        sp = [SMBSPLICE, "--listen", f"127.0.0.1:{port}", "--backend", b, "--idle-timeout", "0"]
        if self.backend_port in RAW_BACKENDS:
            sp += RAW_ARGS
        if self.netns:
            sp += ["--backend-netns", self.netns]
        if self.name == "smbsplice":
            return sp
        if self.name == "smbsplice-tcp":
            return sp + ["--mode", "tcp"]
        if self.name == "smbsplice-copy":
            return sp + ["--no-splice"]
        if self.name == "smbsplice-trace":
            # on disk, as a trace would be kept: /dev/shm would hide the
            # writer's cost
            self.trace_dir = tempfile.mkdtemp(prefix="smbsplice-trace-", dir=TRACE_DIR)
            return sp + ["--trace", os.path.join(self.trace_dir, "smb.pcap")]
        if self.name == "smbsplice-nolat":
            return sp + ["--no-latency"]
        if self.name.startswith("smbsplice+"):
            return sp + self.name.split("+", 1)[1].split()
        if self.name in ("haproxy", "haproxy-nosplice"):
            self.cfg = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
            fe_max = f"\n    maxconn {self.maxconn}" if self.maxconn else ""
            # haproxy-nosplice copies through its buffers: the other way
            # a forwarder can pace a stream.
            splice = "\n    option splice-auto" if self.name == "haproxy" else ""
            self.cfg.write(f"""global
{haproxy_limits(self.maxconn)}
defaults
    mode tcp{fe_max}
    timeout connect 5s
    timeout client 1h
    timeout server 1h{splice}
frontend f
    bind 127.0.0.1:{port}
    default_backend b
backend b
    server s {b}{f" namespace {self.netns}" if self.netns else ""}
""")
            self.cfg.close()
            return ["haproxy", "-db", "-f", self.cfg.name]
        if self.name == FLOOR:
            return [self.tool(), str(port), str(self.backend_port)] + \
                ([f"/run/netns/{self.netns}"] if self.netns else [])
        if self.name == "socat":
            return ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr", f"TCP:{b}"]
        if self.name == "pasta":
            return ["pasta", "--runas", "0", "-f", "-q", "--netns", f"/run/netns/{self.netns or NETNS}",
                    "-t", f"127.0.0.1/{port}:{self.netns_port or self.backend_port}"]
        raise ValueError(self.name)

    def start(self):
        if self.name in DIRECT:
            self.port = self.backend_port
            self.wrap = in_netns(self.netns) if self.name == "direct-ns" else ()
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
        if self.trace_dir:
            self.trace_bytes = sum(os.path.getsize(os.path.join(self.trace_dir, n))
                                   for n in os.listdir(self.trace_dir))
            shutil.rmtree(self.trace_dir, ignore_errors=True)
            self.trace_dir = None
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
        r = fn(front.port, front.wrap)
    finally:
        r_cpu, r_hwm = front.cpu(), front.hwm_mib()
        busy, secs = machine_busy() - busy0, time.monotonic() - t0
        front.stop()
    # the floor's work is the kernel's, in no process of its own to count
    r.update(proxy_cpu=None if front.name == FLOOR else r_cpu, busy=busy, secs=secs, rss_mib=r_hwm)
    if front.worker_conns:
        r["worker_conns"] = front.worker_conns
    if front.trace_bytes is not None:
        r["trace_bytes"] = front.trace_bytes
        front.trace_bytes = None
    return r


# --- backends -------------------------------------------------------------------


class Backends:
    """loadgen servers (host and netns), throwaway smbds (host and netns)."""

    def __init__(self, work):
        self.work = work
        self.procs = []
        self.netns = False
        self.smbd_dir = None
        self.smbd_port = None
        self.ns_smbd_dir = None
        self.ns_loadgen_port = None

    def loadgen(self):
        port = free_port()
        self.procs.append(subprocess.Popen([os.path.join(work_bin(), "loadgen"), "serve", str(port)],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_listening(port)
        RAW_BACKENDS.add(port)
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
        RAW_BACKENDS.add(int(m.group(1)))
        return int(m.group(1))

    def netns_create(self):
        """The harness's own network namespace NETNS with its loopback up,
        made once; False when it cannot be made."""
        if self.netns:
            return True
        subprocess.run(["ip", "netns", "del", NETNS], stderr=subprocess.DEVNULL)
        if subprocess.run(["ip", "netns", "add", NETNS], stderr=subprocess.DEVNULL).returncode:
            log("cannot create a network namespace (needs root): pasta and the namespace topology left out")
            return False
        self.netns = True
        subprocess.run(["ip", "-n", NETNS, "link", "set", "lo", "up"], check=True)
        return True

    def netns_loadgen(self):
        """A loadgen server inside the namespace, on its loopback, started
        once: for pasta on loopback and for the namespace topology. Its
        port there, or None."""
        if self.ns_loadgen_port:
            return self.ns_loadgen_port
        if not self.netns_create():
            return None
        port = 24000 + os.getpid() % 1000
        p = subprocess.Popen(["ip", "netns", "exec", NETNS, os.path.join(work_bin(), "loadgen"), "serve",
                              str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        # `ip netns exec` execs loadgen in place: its /proc/PID/net is the namespace's
        wait_listening(port, p, netns_pid=p.pid)
        self.ns_loadgen_port = port
        RAW_BACKENDS.add(port)
        return port

    def smbd(self):
        self.smbd_dir = os.path.join(self.work, "smbd")
        port = free_port()
        subprocess.run([os.path.join(TOP, "contrib/throwaway-smbd.sh"), "start", self.smbd_dir, str(port)],
                       check=True, env=dict(os.environ, SMB_PASS=PASSWORD))
        self.smbd_port = port
        return port

    def netns_smbd(self):
        """A throwaway smbd inside the namespace, on port 445 of its
        loopback (the namespace is ours alone, so the port is free), as
        the deployment recipe has it; started once. Returns the port, or
        None."""
        if self.ns_smbd_dir:
            return NS_SMB_PORT
        if not self.netns_create():
            return None
        self.ns_smbd_dir = os.path.join(self.work, "smbd-ns")
        subprocess.run(["ip", "netns", "exec", NETNS, os.path.join(TOP, "contrib/throwaway-smbd.sh"), "start",
                        self.ns_smbd_dir, str(NS_SMB_PORT)], check=True, env=dict(os.environ, SMB_PASS=PASSWORD))
        return NS_SMB_PORT

    def close(self):
        for p in self.procs:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        for d in (self.smbd_dir, self.ns_smbd_dir):
            if d:
                subprocess.run([os.path.join(TOP, "contrib/throwaway-smbd.sh"), "stop", d])
        if self.netns:
            # `ip netns exec` execs loadgen in place, so the terminate()
            # above ended it, and the smbd was stopped by its pid file:
            # nothing is killed by name, which could hit another harness's
            # servers
            subprocess.run(["ip", "netns", "del", NETNS], stderr=subprocess.DEVNULL)


_BIN = None


def work_bin():
    return _BIN


def build_tools(bindir):
    """Build loadgen, connstorm, the filetimes.so and heapcensus.so shims and smbread into bindir."""
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-Wall", "-o", os.path.join(bindir, "loadgen"),
                    os.path.join(BENCH, "loadgen.c"), "-lm", "-lpthread"], check=True)
    subprocess.run([cc, "-O2", "-Wall", "-o", os.path.join(bindir, "connstorm"),
                    os.path.join(BENCH, "connstorm.c")], check=True)
    subprocess.run([cc, "-O2", "-Wall", "-o", os.path.join(bindir, "sockfloor"),
                    os.path.join(BENCH, "sockfloor.c"), "-lpthread"], check=True)
    subprocess.run([cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", os.path.join(bindir, "filetimes.so"),
                    os.path.join(BENCH, "filetimes.c"), "-ldl"], check=True)
    subprocess.run([cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", os.path.join(bindir, "heapcensus.so"),
                    os.path.join(BENCH, "heapcensus.c"), "-ldl", "-lpthread"], check=True)
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
    def fn(port, wrap=()):
        out = run_checked([*wrap, os.path.join(work_bin(), "loadgen"), "bulk", str(port), str(mib), direction])
        kv = parse_kv([l for l in out.splitlines() if l.startswith("bulk")][-1])
        return {"gbit": kv["gbit"], "bytes": mib << 20}
    return fn


def rr(iters):
    def fn(port, wrap=()):
        out = run_checked([*wrap, os.path.join(work_bin(), "loadgen"), "rr", str(port), str(iters)])
        sizes = [parse_kv(l) for l in out.splitlines() if l.startswith("rr kind=")]
        setup = parse_kv([l for l in out.splitlines() if l.startswith("rr setup_us=")][-1])
        return {"setup_us": setup["setup_us"],
                "mean_us": statistics.mean(s["mean_us"] for s in sizes),
                "p99_us": max(s["p99_us"] for s in sizes),
                "worst_us": max(s["max_us"] for s in sizes),
                "sizes": sizes}
    return fn


def smb_argv(port, cmd, extra=()):
    return ["smbclient", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{PASSWORD}", *extra, "-c", cmd]


def smbclient(cmd, mib, extra=()):
    def fn(port, wrap=()):
        t0 = time.monotonic()
        run_checked([*wrap, *smb_argv(port, cmd, extra)])
        secs = time.monotonic() - t0
        return {"gbyte_s": (mib << 20) / secs / 1e9, "bytes": mib << 20}
    return fn


def echo_rate(out):
    """Mean of smbtorture's per-second "num/s=N" samples."""
    nums = [int(n) for n in re.findall(r"num/s=(\d+)", out)]
    if not nums:
        raise RuntimeError(f"cannot read the echo rate from smbtorture:\n{out[-800:]}")
    return statistics.mean(nums)


def torture_summary(out, kind):
    """(operations/s, mean latency s, worst latency s) from the last
    `KIND[num/s=N,avslat=S,minlat=S,maxlat=S]` smbtorture's bench tests
    print: the whole run's (the ones before it are per second). They give
    no percentiles."""
    m = re.findall(re.escape(kind) + r"\[num/s=(\d+),avslat=([\d.]+),minlat=([\d.]+),maxlat=([\d.]+)\]", out)
    if not m:
        raise RuntimeError(f"cannot read {kind}[...] from smbtorture:\n{out[-800:]}")
    n, avg, _, worst = m[-1]
    return int(n), float(avg), float(worst)


def torture(port, test, secs, wrap=()):
    return run_checked([*wrap, "smbtorture", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{PASSWORD}",
                        test, "--option=torture:nprocs=4", f"--option=torture:timelimit={secs}"])


def echo_bench(secs=5):
    """smb2.bench.echo, 4 connections: echoes/s (also as "rate", for the
    office tables), and smbtorture's mean and worst echo latency."""
    def fn(port, wrap=()):
        out = torture(port, "smb2.bench.echo", secs, wrap)
        _, avg, worst = torture_summary(out, "echo")
        ops = echo_rate(out)
        # "ops": echoes in the run, for the proxy's CPU per echo
        return {"ops_s": ops, "rate": ops, "ops": ops * secs, "mean_us": avg * 1e6, "worst_us": worst * 1e6}
    return fn


echo = echo_bench(5)


# --- office workloads -------------------------------------------------------------

OFFICE_PREFIX = "office-"   # the files' names; the filetimes shim stamps opens of these
OFFICE_SEED = 20261130      # the size mix is the same in every run


def office_sizes(n, seed=OFFICE_SEED):
    """n file sizes, log-uniform from 1 KiB to 1 MiB: as many files of 1-2
    KiB as of 512 KiB-1 MiB. Mean about 150 KiB."""
    rng = random.Random(seed)
    return [round(2 ** rng.uniform(10, 20)) for _ in range(n)]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def prepare_office(work, nfiles, nentries):
    """The office files, made once in work/office-src (random bytes, the
    seeded sizes), with the sha256 of five of them: the first, the last,
    the smallest, the largest and the middle one."""
    src = os.path.join(work, "office-src")
    os.makedirs(src)
    sizes = office_sizes(nfiles)
    names = [f"{OFFICE_PREFIX}{i:04d}.bin" for i in range(nfiles)]
    with open("/dev/urandom", "rb") as rnd:
        for name, size in zip(names, sizes):
            with open(os.path.join(src, name), "wb") as f:
                f.write(rnd.read(size))
    check = sorted({0, nfiles - 1, sizes.index(min(sizes)), sizes.index(max(sizes)), nfiles // 2})
    return {"src": src, "files": nfiles, "bytes": sum(sizes), "entries": nentries,
            "sizes": dict(zip(names, sizes)),
            "sha256": {names[i]: sha256(os.path.join(src, names[i])) for i in check}}


def share_office(share, spec):
    """Put the office files in a server's share: share/small holds hard
    links to the source files (no copy), share/list nentries empty files,
    made on disk directly."""
    small, lst = os.path.join(share, "small"), os.path.join(share, "list")
    os.makedirs(small)
    for name in spec["sizes"]:
        os.link(os.path.join(spec["src"], name), os.path.join(small, name))
    os.makedirs(lst)
    for i in range(spec["entries"]):
        os.close(os.open(os.path.join(lst, f"e{i:05d}"), os.O_CREAT | os.O_WRONLY, 0o644))


def check_files(d, spec, what):
    """d must hold exactly the office files, each of its size, and the
    checked ones with their sha256."""
    got = {n: os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)}
    if got != spec["sizes"]:
        missing = len(set(spec["sizes"]) - set(got))
        wrong = sum(1 for n in got if n in spec["sizes"] and got[n] != spec["sizes"][n])
        raise RuntimeError(f"{what}: {len(got)} files, {missing} missing, {wrong} of the wrong size, "
                           f"{len(set(got) - set(spec['sizes']))} unexpected")
    for name, digest in spec["sha256"].items():
        if sha256(os.path.join(d, name)) != digest:
            raise RuntimeError(f"{what}: {name} differs from the original")


def timed_client(argv, wrap=(), cwd=None):
    """Run a client (with its wrap) under the filetimes shim. Returns the
    session's seconds, from its first TCP connect() to its exit (the
    client's start-up, loading some 200 libraries, is the same for every
    contestant and left out), the wall time from start to exit, the
    monotonic times at which it opened each office file, and its output."""
    tlog = os.path.join(work_bin(), f"filetimes-{os.getpid()}-{next(_TLOG)}.log")
    env = dict(os.environ, LD_PRELOAD=os.path.join(work_bin(), "filetimes.so"), FILETIMES_OUT=tlog,
               FILETIMES_PREFIX=OFFICE_PREFIX)
    t0 = time.monotonic()
    r = subprocess.run([*wrap, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    t1 = time.monotonic()
    try:
        with open(tlog) as f:
            recs = [l.split() for l in f]
    except OSError:
        recs = []
    finally:
        if os.path.exists(tlog):
            os.unlink(tlog)
    if r.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stdout[-500:]}{r.stderr[-500:]}")
    connects = [float(x[1]) for x in recs if x[0] == "c"]
    if not connects:
        raise RuntimeError("the filetimes shim recorded no connect(): is filetimes.so preloaded?")
    start = connects[0]
    exits = [float(x[1]) for x in recs if x[0] == "x" and float(x[1]) > start]
    end = exits[-1] if exits else t1
    opens = [float(x[1]) for x in recs if x[0] == "o" and float(x[1]) > start]
    return {"session": end - start, "wall": t1 - t0, "opens": opens, "out": r.stdout + r.stderr}


_TLOG = itertools.count()


def percentile(vals, q):
    """Nearest-rank percentile of vals (0 < q <= 100)."""
    vals = sorted(vals)
    return vals[max(0, math.ceil(q / 100 * len(vals)) - 1)]


def per_file(t, spec, what):
    """Rates and times of one mget or mput: files per second of session;
    the session over the files ("per_op_us", what a user waits per file);
    and the gaps between consecutive local opens of the files, each one
    file's whole cycle (remote create, data, close), for the mean, p99
    and worst per file. The first file's gap (session set-up and, for
    mget, the listing) and the last's (log-off) are not among them."""
    n = spec["files"]
    r = {"rate": n / t["session"], "per_op_us": t["session"] / n * 1e6, "session_s": t["session"],
         "wall_s": t["wall"], "bytes": spec["bytes"]}
    gaps = [(b - a) * 1e6 for a, b in zip(t["opens"], t["opens"][1:])]
    if len(t["opens"]) == n and gaps:
        r.update(mean_us=statistics.mean(gaps), p99_us=percentile(gaps, 99), worst_us=max(gaps))
    else:
        log(f"{what}: the shim saw {len(t['opens'])} of {n} file opens: no per-file times")
    return r


def office_mget(spec):
    """mget of the office files into an empty scratch directory, checked."""
    def fn(port, wrap=()):
        scratch = tempfile.mkdtemp(prefix="mget-", dir=work_bin())
        try:
            t = timed_client(smb_argv(port, "prompt OFF; recurse ON; cd small; mget *"), wrap, cwd=scratch)
            check_files(scratch, spec, "mget")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return per_file(t, spec, "mget")
    return fn


def office_mput(spec, share):
    """mput of the office files into a fresh directory of the share,
    checked on the server's disk and removed afterwards."""
    def fn(port, wrap=()):
        d = f"put-{next(_TLOG)}"
        try:
            t = timed_client(smb_argv(port, f"prompt OFF; mkdir {d}; cd {d}; lcd {spec['src']}; mput *"), wrap,
                             cwd=spec["src"])
            check_files(os.path.join(share, d), spec, "mput")
        finally:
            shutil.rmtree(os.path.join(share, d), ignore_errors=True)
        return per_file(t, spec, "mput")
    return fn


def office_list(spec):
    """One smbclient `ls` of the directory of empty files: entries per
    second of session, every entry counted."""
    def fn(port, wrap=()):
        t = timed_client(smb_argv(port, "ls list\\*"), wrap)
        n = len(re.findall(r"^\s+e\d+\s+[A-Z]*\s+0\s", t["out"], re.M))
        if n != spec["entries"]:
            raise RuntimeError(f"ls listed {n} of {spec['entries']} entries")
        return {"rate": n / t["session"], "per_op_us": t["session"] / n * 1e6, "session_s": t["session"],
                "wall_s": t["wall"]}
    return fn


def office_contention(secs):
    """smb2.bench.path-contention-shared, 4 connections: opens and closes
    of one path per second (together), and smbtorture's mean (weighted
    over both) and worst latency."""
    def fn(port, wrap=()):
        out = torture(port, "smb2.bench.path-contention-shared", secs, wrap)
        on, oavg, omax = torture_summary(out, "open")
        cn, cavg, cmax = torture_summary(out, "close")
        return {"rate": on + cn, "opens_s": on, "closes_s": cn,
                "mean_us": (on * oavg + cn * cavg) / (on + cn) * 1e6 if on + cn else None,
                "open_mean_us": oavg * 1e6, "close_mean_us": cavg * 1e6, "worst_us": max(omax, cmax) * 1e6}
    return fn


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
    def fn(port, wrap=()):
        argv = [*wrap, *smb_argv(port, "get par.bin /dev/null")]
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
    def fn(port, wrap=()):
        argv = [*wrap, os.path.join(work_bin(), "loadgen"), "bulk", str(port), str(mib), direction]
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
    def fn(port, wrap=()):
        out = run_checked([*wrap, os.path.join(work_bin(), "smbread"), f"smb://127.0.0.1:{port}/share/sweep.bin",
                           "root", PASSWORD, str(size), str(secs)])
        return parse_kv(out.strip().splitlines()[-1])
    return fn


# --- the run --------------------------------------------------------------------


def summarize(vals):
    vals = sorted(vals)
    return {"median": statistics.median(vals), "min": vals[0], "max": vals[-1], "n": len(vals)}


# The contestants of bulk, rr, get and echo; of parallel. pasta joins the
# first list when it can (bulk, rr), base: twins join with --baseline.
STD_FRONTS = ("direct", "smbsplice", "smbsplice-tcp", "smbsplice-copy", "haproxy", "haproxy-nosplice", "socat")
PAR_FRONTS = ("direct", "smbsplice+--workers 1", "smbsplice+--workers 2", "haproxy")
PAR_GETS = 8            # smbclient gets at once
PAR_STREAMS = 4         # loadgen streams at once
PAR_MIB = 256           # MiB per client
# The namespace topology's contestants (get, put, bulk, rr), and the rr
# extras; office's, per topology (haproxy reaches into the namespace with
# its `namespace` server option).
NS_FRONTS = ("direct-ns", "pasta", "smbsplice", "smbsplice-tcp", "haproxy", "haproxy-nosplice")
NS_RR_EXTRA = ("smbsplice+--pipe-size 8K", "smbsplice+--mode tcp --pipe-size 8K")
OFFICE_FRONTS = {"loopback": ("direct", "smbsplice", "haproxy", FLOOR),
                 "ns": ("direct-ns", "pasta", "smbsplice", "haproxy", FLOOR)}
NS_SMB_PORT = 445       # smbd's port inside the namespace
OFFICE_FILES = 1000     # --office-files: files of mget and mput
OFFICE_ENTRIES = 20000  # --office-entries: entries of the listed directory
OFFICE_SECONDS = 5      # --office-seconds: smbtorture's time limit
# obs: each feature's contestant beside plain smbsplice, on the workloads
# where it costs most: the trace copies and queues a record per frame
# (echo) and runs a writer thread (get); the histograms read the clock
# twice per message (echo). At least OBS_RUNS runs each: the targets are
# a few per cent, under the noise of three.
OBS_GET_FRONTS = ("smbsplice", "smbsplice-trace")
OBS_ECHO_FRONTS = ("smbsplice", "smbsplice-nolat", "smbsplice-trace")
OBS_RUNS = 5
# Where smbsplice-trace writes: a disk, as in use (the work directory is
# in /dev/shm).
TRACE_DIR = "/var/tmp"
TOPOLOGIES = ("loopback", "ns")
WORKLOADS = ("bulk", "rr", "get", "echo", "sweep", "tune", "cost", "obs", "scale", "parallel", "ns",
             "office", "wan", "handover", "quic", "quicfield")
BASELINE = None         # --baseline: the older smbsplice for base: twins
# Backends that speak no SMB (loadgen, connstorm): smb mode dials them on
# the first byte and lets their clients stay unauthenticated, as a test's
# NOT_SMB and NO_LOGIN do.
RAW_BACKENDS = set()
RAW_ARGS = ["--first-frame", "any", "--max-preauth-per-source", "off", "--auth-timeout", "off"]
FRONTS = None           # --fronts: the only contestants wanted, or None
PICKED = set()          # the contestants some workload kept


@functools.lru_cache(maxsize=None)
def baseline_knows(flag):
    """Whether the --baseline binary's --help names @flag."""
    r = subprocess.run([BASELINE, "--help"], capture_output=True, text=True)
    return re.search(re.escape(flag) + r"\b", r.stdout + r.stderr) is not None


def with_twins(names):
    """names, and the smbsplice+OPTIONS variants --fronts asks for (so
    that a setting can be tried beside the standard contestants), each
    smbsplice contestant without --workers followed by its base: twin
    when there is a baseline."""
    out = []
    asked = [n for n in sorted(FRONTS or ()) if n.startswith("smbsplice+") and n not in names]
    for n in [*names, *asked]:
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
        if n not in DIRECT and not (f.tool() and shutil.which(f.tool())):
            log(f"{f.tool()} not found: {n} left out")
            continue
        out.append(f)
    return out


def run_order(n, r):
    """The order of round r over n contestants (indices): a Williams
    design. Over n rounds every contestant runs right after every other
    exactly once, and each one starts a round once; when n is odd that
    takes 2n rounds (the rows, then their mirror images), and twice.
    Rotating one fixed order would not do: a rotation keeps every
    neighbour, so the contestant after direct in round 1 would follow it
    in every round."""
    # the first row runs 0, 1, n-1, 2, n-2, ...; row r adds r to each
    first = [0] + [(j + 1) // 2 if j % 2 else n - j // 2 for j in range(1, n)]
    row = [(x + r) % n for x in first[:n]]
    return row[::-1] if n % 2 and (r // n) % 2 else row


def interleaved(fronts, fn, runs, label):
    """{front name: [result, ...]}, run r of every front before run r+1,
    in run_order()'s order: a run right after direct's was 3-5% slower
    for every proxy on path-contention (the server still busy with the
    faster run before it), so no contestant may always follow the same
    one. A run that fails is kept as {"failed": why}, so that the report
    can say how many of a contestant's runs failed rather than take the
    median of the rest as if nothing happened."""
    res = {f.name: [] for f in fronts}
    for r in range(runs):
        for f in (fronts[i] for i in run_order(len(fronts), r)):
            try:
                res[f.name].append(measure(f, fn))
            except Exception as e:  # one contestant failing must not sink the run
                log(f"{label}: {f.name} run {r + 1} failed: {e}")
                res[f.name].append({"failed": " ".join(str(e).split())[-400:]})
        log(f"{label}: run {r + 1}/{runs} done")
    return res


def main():
    global _BIN
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(TOP, "contrib/bench/results"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes, one run: for trying the harness")
    ap.add_argument("--only", default=",".join(WORKLOADS),
                    help="workloads, comma-separated: " + ",".join(WORKLOADS))
    ap.add_argument("--topology", default=",".join(TOPOLOGIES),
                    help="loopback (every workload but ns) and/or ns (the namespace topology: ns and office)")
    ap.add_argument("--fronts", help="only these contestants, comma-separated (e.g. direct,smbsplice,"
                    "base:smbsplice); smbsplice+OPTIONS adds smbsplice with those options to every "
                    "list (e.g. 'smbsplice+--socket-buffer kernel'); tune, sweep and cost ignore it")
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
    ap.add_argument("--handover-counts", default="10,1000,9000",
                    help="idle connections carried by each set of handovers, comma-separated (--quick 10,1000)")
    ap.add_argument("--quicfield-idle", type=int, default=9000,
                    help="idle sessions held through each contestant of quicfield, at most a third of the "
                    "open-files limit (--quick 300)")
    ap.add_argument("--quicfield-handover", default="10,1000",
                    help="idle QUIC sessions open at quicfield's handover, comma-separated")
    ap.add_argument("--office-files", type=int, help=f"files of mget and mput (default {OFFICE_FILES}, "
                    "--quick 100)")
    ap.add_argument("--office-entries", type=int, help=f"entries of the listed directory (default "
                    f"{OFFICE_ENTRIES}, --quick 2000)")
    ap.add_argument("--office-seconds", type=int, help=f"smbtorture's time limit in the office workloads "
                    f"(default {OFFICE_SECONDS}, --quick 2)")
    ap.add_argument("--mib", type=int, help="MiB per get, put and bulk transfer (default 1024, --quick 128); "
                    "pasta of Debian 12 stalls in most 1 GiB gets and in few of 256 MiB")
    ap.add_argument("--wan-grid", help="the WAN part's cells, RTTS:LOSSES:RATES (ms, %%, Mbit/s), each a comma "
                    "list (default 10,40,100:0,0.1,1:100,1000; --quick 40:0,1:100)")
    ap.add_argument("--wan-work", help="the WAN part's workloads (default get,put,mget,ls; --quick get,put)")
    ap.add_argument("--wan-fronts", default="direct,direct-bbr,haproxy,smbsplice,pair,pair-mptcp",
                    help="the WAN part's contestants (default all but smbsplice-buf and pair-buf)")
    ap.add_argument("--wan-seconds", type=float, default=10,
                    help="the WAN part's cap per get, put and mget: a transfer still running then is stopped "
                         "and measured by what came by then (default 10; 0: no cap)")
    ap.add_argument("--quic-grid", default=None,
                    help="the quic workload's WAN cells, RTTS:LOSSES:RATES as --wan-grid (default 40:0,1:100; "
                         "none: loopback only)")
    ap.add_argument("--quic-seconds", type=float, default=30,
                    help="the quic workload's cap per get and put over the WAN, as --wan-seconds (default 30; "
                         "0: no cap)")
    ap.add_argument("--wan-mtu", type=int, help="MTU of the WAN paths (default 1500, 9000 if a rate is above "
                    "100 Mbit/s: at 1500 smbsplice-wanem's packet rate is the bottleneck)")
    args = ap.parse_args()
    global BASELINE, FRONTS
    only = set(args.only.split(","))
    topo = set(args.topology.split(","))
    if only - set(WORKLOADS):
        ap.error(f"--only: unknown {','.join(sorted(only - set(WORKLOADS)))}; known: {','.join(WORKLOADS)}")
    if topo - set(TOPOLOGIES):
        ap.error(f"--topology: unknown {','.join(sorted(topo - set(TOPOLOGIES)))}; known: loopback,ns")
    runs = 1 if args.quick else args.runs
    mib = args.mib or (128 if args.quick else 1024)
    par_mib = 32 if args.quick else PAR_MIB
    n_files = args.office_files or (100 if args.quick else OFFICE_FILES)
    n_entries = args.office_entries or (2000 if args.quick else OFFICE_ENTRIES)
    o_secs = args.office_seconds or (2 if args.quick else OFFICE_SECONDS)
    if args.baseline:
        BASELINE = os.path.abspath(args.baseline)
        if not os.access(BASELINE, os.X_OK):
            ap.error(f"--baseline {args.baseline}: not an executable file")
    if args.fronts:
        FRONTS = [n.strip() for n in args.fronts.split(",") if n.strip()]
        if any(n.startswith("base:") for n in FRONTS) and not BASELINE:
            ap.error("base: contestants need --baseline PATH")
    # the loopback topology runs every workload but ns; the namespace
    # topology runs ns and office
    lo_only = only - {"ns", "wan"} if "loopback" in topo else set()
    ns_only = only & {"ns", "office"} if "ns" in topo else set()
    # the WAN part has its own topology (contrib/bench/wan.py)
    args.wan_grid = args.wan_grid or ("40:0,1:100" if args.quick else "10,40,100:0,0.1,1:100,1000")
    args.wan_work = args.wan_work or ("get,put" if args.quick else "get,put,mget,ls")
    args.mib_wan = args.mib or (32 if args.quick else 256)
    args.runs_wan = runs
    # the quic workload: loopback with the loopback topology, and its own
    # WAN cells (contrib/bench/quic.py)
    args.quic_grid = "40:0,1:100" if args.quic_grid is None else args.quic_grid
    if args.quic_grid not in ("", "none"):
        import wan
        try:
            wan.parse_grid(args.quic_grid)
        except ValueError as e:
            ap.error(str(e).replace("--wan-grid", "--quic-grid"))
    args.quic_loopback = "quic" in lo_only
    args.mib_quic = mib
    args.runs = runs
    lo_only.discard("quic")
    if not lo_only and not ns_only and "wan" not in only and not (
            "quic" in only and (args.quic_loopback or args.quic_grid not in ("", "none"))):
        ap.error(f"--only {args.only} --topology {args.topology}: nothing to run")

    t_start = time.monotonic()
    work = tempfile.mkdtemp(prefix="smbsplice-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    _BIN = work
    os.makedirs(args.out, exist_ok=True)
    build_tools(work)
    be = Backends(work)
    trips = 50 if args.quick else 200
    results = {"machine": machine_info(), "runs": runs, "mib": mib, "topology": sorted(topo),
               "only": sorted(only), "rr_trips": trips, "timing": {}}
    if BASELINE:
        results["baseline"] = {"path": BASELINE, "version": subprocess.run(
            [BASELINE, "--version"], capture_output=True, text=True).stdout.strip()}
    if FRONTS:
        results["fronts"] = FRONTS

    @contextlib.contextmanager
    def part(label):
        """Time a part of the run for the report's header."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            results["timing"][label] = results["timing"].get(label, 0) + time.monotonic() - t0
            log(f"{label}: {time.monotonic() - t0:.0f} s")

    spec = None
    if "office" in only or ("wan" in only and {"mget", "ls"} & set(args.wan_work.split(","))):
        spec = prepare_office(work, n_files, n_entries)
    if "office" in only:
        if not shutil.which("smbtorture"):
            log("smbtorture not found (Debian package samba-testsuite): path-contention and echo left out "
                "of office")
        results["office"] = {"files": n_files, "bytes": spec["bytes"], "entries": n_entries,
                             "seconds": o_secs, "seed": OFFICE_SEED}
    try:
        if lo_only & {"bulk", "rr", "cost", "parallel"}:
            lg = be.loadgen()
        if lo_only & {"bulk", "rr", "cost"}:
            with part("loopback: bulk, rr, tune, cost"):
                ns = None
                if lo_only & {"bulk", "rr"} and wanted("pasta"):
                    if shutil.which("pasta"):
                        ns = be.netns_loadgen()
                    else:
                        log("pasta not found (Debian package passt): pasta left out")
                fronts = pick(with_twins(STD_FRONTS), lg)
                if ns:
                    fronts.append(Front("pasta", lg, netns_port=ns))
                    PICKED.add("pasta")
                if "bulk" in lo_only:
                    for d in ("up", "down"):
                        results[f"bulk_{d}"] = interleaved(fronts, bulk(d, mib), runs, f"bulk {d}")
                if "rr" in lo_only:
                    rr_fronts = fronts + pick(with_twins(("smbsplice+--pipe-size 8K",
                                                          "smbsplice+--mode tcp --pipe-size 8K")) + [FLOOR], lg)
                    results["rr"] = interleaved(rr_fronts, rr(trips), runs, "rr")
                if "tune" in lo_only:
                    results["tune_bulk"] = interleaved([Front(n, lg) for n in TUNE_TCP], bulk("down", mib),
                                                       runs, "tune: bulk down")
                if "cost" in lo_only:
                    results["syscalls"] = syscalls_per_mib(lg, mib)
        if "parallel" in lo_only:
            with part("loopback: parallel"):
                results["par"] = {"gets": PAR_GETS, "streams": PAR_STREAMS, "mib": par_mib}
                fronts = pick(with_twins(PAR_FRONTS), lg)
                for d in ("up", "down"):
                    results[f"par_bulk_{d}"] = interleaved(fronts, par_bulk(PAR_STREAMS, par_mib, d), runs,
                                                           f"parallel bulk {d}")
        if lo_only & {"get", "echo", "sweep", "parallel", "office", "obs"}:
            sp = be.smbd()
            share = os.path.join(be.smbd_dir, "share")
            if "parallel" in lo_only:
                with part("loopback: parallel"):
                    make_file(os.path.join(share, "par.bin"), par_mib)
                    results["par_get"] = interleaved(pick(with_twins(PAR_FRONTS), sp),
                                                     par_get(PAR_GETS, par_mib), runs, "parallel get")
        if lo_only & {"get", "echo", "sweep"}:
            with part("loopback: get, put, echo, tune, sweep"):
                make_file(os.path.join(share, "get.bin"), mib)
                make_file(os.path.join(work, "put.bin"), mib)
                fronts = pick(with_twins(STD_FRONTS) + [FLOOR], sp)
                if "get" in lo_only:
                    results["get"] = interleaved(fronts, smbclient("get get.bin /dev/null", mib), runs,
                                                 "smbclient get")
                    results["put"] = interleaved(fronts, smbclient(f"put {work}/put.bin put.bin", mib), runs,
                                                 "smbclient put")
                    results["get_encrypted"] = interleaved(
                        fronts, smbclient("get get.bin /dev/null", mib, ("--client-protection=encrypt",)), runs,
                        "encrypted get")
                if "echo" in lo_only and shutil.which("smbtorture"):
                    results["echo"] = interleaved(fronts, echo, runs, "smb2.bench.echo")
                if "tune" in lo_only:
                    results["tune_get"] = interleaved([Front(n, sp) for n in TUNE_SMB],
                                                      smbclient("get get.bin /dev/null", mib), runs, "tune: get")
                if "sweep" in lo_only and os.path.exists(os.path.join(work, "smbread")):
                    make_file(os.path.join(share, "sweep.bin"), 256)
                    results["sweep"] = sweep(sp, 1 if args.quick else 2, runs,
                                             [int(x) for x in args.sweep_sizes.split(",")],
                                             args.sweep_thresholds.split(","))
        if "obs" in lo_only:
            with part("loopback: obs"):
                obs_runs = max(runs, 1 if args.quick else OBS_RUNS)
                get = os.path.join(share, "get.bin")
                if not (os.path.exists(get) and os.path.getsize(get) == mib << 20):
                    make_file(get, mib)
                results["obs"] = {"runs": obs_runs, "trace_dir": TRACE_DIR}
                results["obs_get"] = interleaved(pick(with_twins(OBS_GET_FRONTS), sp),
                                                 smbclient("get get.bin /dev/null", mib), obs_runs,
                                                 "obs: smbclient get")
                if shutil.which("smbtorture"):
                    results["obs_echo"] = interleaved(pick(with_twins(OBS_ECHO_FRONTS), sp), echo, obs_runs,
                                                      "obs: echo")
        if "office" in lo_only:
            with part("loopback: office"):
                share_office(share, spec)
                # the echo workload's runs serve when they had the same length
                reuse = results.get("echo") if o_secs == 5 else None
                results["office"]["loopback"] = office(pick(with_twins(OFFICE_FRONTS["loopback"]), sp), spec, share, o_secs,
                                                       runs, "office", reuse)
        if "scale" in lo_only:
            with part("loopback: scale"):
                counts = args.scale_counts
                if args.quick and counts == ap.get_default("scale_counts"):
                    counts = "200,1000"
                names = [n for n in SCALE_FRONTS if wanted(n)]
                PICKED.update(names)
                results["scale"] = scale(be.connstorm(), [int(x) for x in counts.split(",")], runs,
                                         args.scale_idle, names)
        if "handover" in lo_only:
            import handover
            with part("loopback: handover"):
                counts = args.handover_counts
                if args.quick and counts == ap.get_default("handover_counts"):
                    counts = "10,1000"
                results["handover"] = handover.run_handover(
                    [int(x) for x in counts.split(",")], be.connstorm(), work, log,
                    {"free_port": free_port, "wait_listening": wait_listening, "raw_args": RAW_ARGS})
        if "quicfield" in lo_only:
            import handover
            import quicfield
            with part("loopback: quicfield"):
                handover.subreaper()
                handover.raise_nofile()
                results["quicfield"] = quicfield.run_quicfield(
                    args, work, be.connstorm(), log, {"free_port": free_port, "wait_listening": wait_listening,
                                                      "bin": work_bin()})
        if ns_only and be.netns_create():
            if "ns" in ns_only:
                with part("namespace: get, put, bulk, rr"):
                    ns_sp, ns_lg = be.netns_smbd(), be.netns_loadgen()
                    ns_share = os.path.join(be.ns_smbd_dir, "share")
                    # the loopback get's file when it was made: a hard link costs nothing
                    lo_get = os.path.join(be.smbd_dir, "share", "get.bin") if be.smbd_dir else ""
                    if os.path.exists(lo_get) and os.path.getsize(lo_get) == mib << 20:
                        os.link(lo_get, os.path.join(ns_share, "get.bin"))
                    else:
                        make_file(os.path.join(ns_share, "get.bin"), mib)
                    put = os.path.join(work, "put.bin")
                    if not (os.path.exists(put) and os.path.getsize(put) == mib << 20):
                        make_file(put, mib)
                    fronts = pick(with_twins(NS_FRONTS) + [FLOOR], ns_sp, netns=NETNS)
                    results["ns_get"] = interleaved(fronts, smbclient("get get.bin /dev/null", mib), runs,
                                                    "namespace: smbclient get")
                    results["ns_put"] = interleaved(fronts, smbclient(f"put {put} put.bin", mib), runs,
                                                    "namespace: smbclient put")
                    fronts = pick(with_twins(NS_FRONTS), ns_lg, netns=NETNS)
                    for d in ("up", "down"):
                        results[f"ns_bulk_{d}"] = interleaved(fronts, bulk(d, mib), runs, f"namespace: bulk {d}")
                    results["ns_rr"] = interleaved(fronts + pick(NS_RR_EXTRA + (FLOOR,), ns_lg, netns=NETNS),
                                                   rr(trips), runs, "namespace: rr")
            if "office" in ns_only:
                with part("namespace: office"):
                    ns_sp = be.netns_smbd()
                    ns_share = os.path.join(be.ns_smbd_dir, "share")
                    share_office(ns_share, spec)
                    results["office"]["ns"] = office(pick(with_twins(OFFICE_FRONTS["ns"]), ns_sp, netns=NETNS), spec,
                                                     ns_share, o_secs, runs, "namespace: office")
        if "wan" in only:
            import wan
            with part("wan"):
                results["wan"] = wan.run_wan(args, work, spec, share_office, log)
        if "quic" in only and (args.quic_loopback or args.quic_grid not in ("", "none")):
            import quic
            with part("quic"):
                results["quic"] = quic.run_quic(args, work, be, sys.modules[__name__])
    finally:
        be.close()
        shutil.rmtree(work, ignore_errors=True)
    results["timing"]["total"] = time.monotonic() - t_start
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
        report.embed(os.path.join(TOP, "docs/benchmarks.md"), args.out)
        log("embedded it in docs/benchmarks.md")


def office(fronts, spec, share, secs, runs, label, echo_res=None):
    """The office workloads on one topology: {workload: {front: [result,
    ...]}}. echo_res: the echo workload's results, used for echo instead
    of running it again."""
    out = {"mget": interleaved(fronts, office_mget(spec), runs, f"{label}: mget"),
           "mput": interleaved(fronts, office_mput(spec, share), runs, f"{label}: mput"),
           "list": interleaved(fronts, office_list(spec), runs, f"{label}: ls")}
    if shutil.which("smbtorture"):
        out["contention"] = interleaved(fronts, office_contention(secs), runs, f"{label}: path-contention")
        if echo_res and all(echo_res.get(f.name) for f in fronts):
            out["echo"] = {f.name: echo_res[f.name] for f in fronts}
            out["echo_reused"] = True
        else:
            out["echo"] = interleaved(fronts, echo_bench(secs), runs, f"{label}: echo")
    return out


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
