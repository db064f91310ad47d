"""The live handover part of the benchmark (`bench.py --only handover`):
what `kill -USR2` costs the connections it carries (HANDOVER.md).

Theory of operation: for each N of --handover-counts (10, 1,000 and
9,000), one smbsplice (--mode tcp, bench.py's RAW_ARGS, --workers at its
default) in front of a connstorm echo server (its own process), N idle
connections held by a client process of their own (this file run as
`handover.py idle PORT N`: one process holds the N client sockets, the
echo server the N backend sockets, smbsplice both sides; each within the
open-files limit), and PROBES probe connections in this process, each
doing 64-byte round trips without pause (a short sleep between them, so
that the probes do not take a core from the handover they measure).
Then HANDOVERS handovers, one after the other: SIGUSR2 to the process
serving now, wait for its `handover: N connections to pid P, forwarding
paused X ms` line and the new process's `handover: took ...` line, the
old one's exit 0, then SETTLE seconds before the next; P is the target
of the next. This process is a child subreaper, so that each new
process, orphaned when the old one exits, is reaped here.

Figures per N: the pauses the old processes logged (median and max of
the handovers), the probes' round trips in steady state (every trip
that started more than STEADY_GAP seconds away from any handover) and
around the handovers (every trip that started from AROUND before the
signal until AROUND after the line), p50, p99 and max; and after the
last handover every idle connection must answer one round trip (the
idle client checks the echoed bytes) and every probe too.

Bounds: every wait has a time limit; the idle client gives up after its
own; whatever this part started is stopped at the end, by pid.
"""
import ctypes
import json
import os
import re
import resource
import select
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
SMBSPLICE = os.path.join(TOP, "proxy/smbsplice")
COUNTS = (10, 1000, 9000)
HANDOVERS = 5
PROBES = 3
PROBE_SIZE = 64
PROBE_GAP = 0.0005      # seconds between a probe's round trips
SETTLE = 1.0            # seconds between one handover's end and the next signal
AROUND = 0.25           # seconds either side of a handover counted as "around" it
STEADY_GAP = 1.0        # trips this close to a handover are not steady state
STEADY = 3.0            # seconds of steady state before the first handover
TIMEOUT = 60.0          # any one step
DONE_RE = re.compile(r"handover: (\d+) connections to pid (\d+), forwarding paused ([\d.]+) ms")
TOOK_RE = re.compile(r"handover: took (\d+) connections and (\d+) listeners from pid (\d+)")
FAILED_RE = re.compile(r"handover failed: .*|SIGUSR2: .*; no handover")


def subreaper():
    """Adopt orphaned descendants (PR_SET_CHILD_SUBREAPER), so that each
    new smbsplice can be waited for once its parent has exited."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0):
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def pct(xs, p):
    """The p-th percentile (nearest rank) of xs, or None."""
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * len(s) + 0.5)) - 1))]


def exchange(s, tag):
    """One round trip of PROBE_SIZE bytes on blocking socket s; the echo
    must be the bytes sent."""
    msg = (tag * PROBE_SIZE)[:PROBE_SIZE]
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        b = s.recv(len(msg) - len(got))
        if not b:
            raise ConnectionError("closed by the far side")
        got += b
    if got != msg:
        raise ValueError("echo differs from what was sent")


# --- the idle client: its own process, for the open-files limit -----------------


def idle_main(port, n):
    """`handover.py idle PORT N`: open N connections to 127.0.0.1:PORT,
    one round trip each, print `ready N`, wait for a line on stdin, then
    one round trip on every connection; print a JSON line
    {"ok": k, "failed": f, "first_error": text}."""
    raise_nofile()
    end = time.monotonic() + TIMEOUT
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=max(1.0, end - time.monotonic()))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        exchange(s, b"%d." % i)
        socks.append(s)
    print(f"ready {len(socks)}", flush=True)
    sys.stdin.readline()
    ok, failed, first = 0, 0, None
    end = time.monotonic() + TIMEOUT
    for i, s in enumerate(socks):
        try:
            s.settimeout(max(0.5, min(10.0, end - time.monotonic())))
            exchange(s, b"%d!" % i)
            ok += 1
        except Exception as e:
            failed += 1
            first = first or f"connection {i}: {e}"
    print(json.dumps({"ok": ok, "failed": failed, "first_error": first}), flush=True)


# --- the probes -------------------------------------------------------------------


class Probe(threading.Thread):
    """Round trips on one connection until stopped: [(start, seconds)]."""

    def __init__(self, port, i):
        super().__init__(daemon=True)
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.tag = b"p%d-" % i
        self.trips = []
        self.error = None
        self.halt = threading.Event()

    def run(self):
        try:
            while not self.halt.is_set():
                t0 = time.monotonic()
                exchange(self.s, self.tag)
                self.trips.append((t0, time.monotonic() - t0))
                time.sleep(PROBE_GAP)
        except Exception as e:
            self.error = f"probe {self.tag.decode()}: {e}"

    def stop(self):
        self.halt.set()
        self.join(15)
        try:
            exchange(self.s, self.tag)      # it still answers after the last handover
            ok = True
        except Exception as e:
            self.error = self.error or f"probe {self.tag.decode()} after the last handover: {e}"
            ok = False
        self.s.close()
        return ok


# --- one N ------------------------------------------------------------------------


class Log:
    """smbsplice's stderr (old and new processes write the same file)."""

    def __init__(self, path):
        self.path = path

    def text(self):
        with open(self.path, errors="replace") as f:
            return f.read()

    def wait(self, rx, count, timeout=TIMEOUT, fail_rx=None, fails=0):
        """The first @count matches of rx, once there are that many; a
        new match of fail_rx (beyond @fails) is an error."""
        end = time.monotonic() + timeout
        while True:
            t = self.text()
            got = rx.findall(t)
            if len(got) >= count:
                return got
            if fail_rx:
                bad = fail_rx.findall(t)
                if len(bad) > fails:
                    raise RuntimeError(bad[-1])
            if time.monotonic() > end:
                raise RuntimeError(f"no {rx.pattern!r} line #{count} after {timeout:.0f} s; log:\n{t[-2000:]}")
            time.sleep(0.005)


def wait_pid(pid, timeout):
    """The exit status of child pid (an adopted orphan), or None."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            p, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if p == pid:
            return os.waitstatus_to_exitcode(st)
        time.sleep(0.01)
    return None


def one_count(n, echo_port, work, log, tools):
    """The handovers with n idle connections: {"n", "pauses_ms", ...}."""
    port = tools["free_port"]()
    errpath = os.path.join(work, f"handover-{n}.log")
    err = open(errpath, "w")
    argv = [SMBSPLICE, "--listen", f"127.0.0.1:{port}", "--backend", f"127.0.0.1:{echo_port}",
            "--mode", "tcp", "--idle-timeout", "0", *tools["raw_args"]]
    first = subprocess.Popen(argv, stderr=err, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    pid, idle, probes = first.pid, None, []
    lg = Log(errpath)
    out = {"n": n, "handovers": HANDOVERS, "probes": PROBES, "pauses_ms": [], "windows": []}
    try:
        tools["wait_listening"](port, first)
        idle = subprocess.Popen([sys.executable, os.path.abspath(__file__), "idle", str(port), str(n)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = read_line(idle, TIMEOUT + 10)
        if not ready.startswith(f"ready {n}"):
            raise RuntimeError(f"idle client: {ready!r}")
        probes = [Probe(port, i) for i in range(PROBES)]
        for p in probes:
            p.start()
        time.sleep(STEADY)
        for k in range(HANDOVERS):
            fails = len(FAILED_RE.findall(lg.text()))
            t_sig = time.monotonic()
            os.kill(pid, signal.SIGUSR2)
            conns, new, ms = lg.wait(DONE_RE, k + 1, fail_rx=FAILED_RE, fails=fails)[k]
            t_done = time.monotonic()
            lg.wait(TOOK_RE, k + 1)
            old = pid
            st = first.wait(TIMEOUT) if k == 0 else wait_pid(old, TIMEOUT)
            if st != 0:
                raise RuntimeError(f"pid {old} exited {st} after handing over, not 0")
            pid = int(new)
            out["pauses_ms"].append(float(ms))
            out["windows"].append((t_sig, t_done))
            out.setdefault("conns", []).append(int(conns))
            log(f"handover {n}: {k + 1}/{HANDOVERS}: {conns} connections to pid {new}, paused {ms} ms")
            time.sleep(SETTLE)
        alive = [p.stop() for p in probes]
        idle.stdin.write("go\n")
        idle.stdin.flush()
        after = json.loads(read_line(idle, TIMEOUT + 10))
        out["idle_after"] = after
        out["probes_after_ok"] = sum(alive)
        errors = [p.error for p in probes if p.error]
        if errors:
            out["probe_errors"] = errors
        summarize(out, probes)
    finally:
        for p in probes:
            p.halt.set()
        if idle:
            if idle.poll() is None:
                idle.kill()
            idle.wait()
        stop_pid(pid, first)
        err.close()
    return out


def summarize(out, probes):
    """Steady and around-handover round-trip figures from the probes' trips."""
    wins = out["windows"]
    steady, around, worst = [], [], (0.0, 0.0, 0.0)
    for p in probes:
        for t0, rtt in p.trips:
            near = [(a, b) for a, b in wins if a - AROUND <= t0 <= b + AROUND]
            if near:
                around.append(rtt)
                if rtt > worst[0]:
                    # when the slowest trip started and ended, from its signal
                    worst = (rtt, t0 - near[0][0], t0 + rtt - near[0][0])
            elif all(t0 < a - STEADY_GAP or t0 > b + STEADY_GAP for a, b in wins):
                steady.append(rtt)
    ms = 1e3
    out["steady"] = {"trips": len(steady), "p50_ms": pct(steady, 50) * ms if steady else None,
                     "p99_ms": pct(steady, 99) * ms if steady else None,
                     "max_ms": max(steady) * ms if steady else None}
    out["around"] = {"trips": len(around), "p50_ms": pct(around, 50) * ms if around else None,
                     "p99_ms": pct(around, 99) * ms if around else None,
                     "max_ms": max(around) * ms if around else None}
    out["around"]["worst_from_signal_ms"] = (worst[1] * ms, worst[2] * ms)
    out["windows"] = [(b - a) * ms for a, b in wins]    # signal to the line, as seen here


def stop_pid(pid, first):
    """SIGTERM the serving process and reap it (Popen or adopted)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    if first.pid == pid:
        try:
            first.wait(15)
        except subprocess.TimeoutExpired:
            first.kill()
            first.wait()
    elif wait_pid(pid, 15) is None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_pid(pid, 5)


def read_line(proc, timeout):
    r, _, _ = select.select([proc.stdout], [], [], timeout)
    if not r:
        raise RuntimeError(f"no line from pid {proc.pid} in {timeout:.0f} s")
    return proc.stdout.readline()


def run_handover(counts, echo_port, work, log, tools):
    """bench.py's entry: {"counts": [one_count(), ...]}; a count that
    fails is kept as {"n", "failed": why}. tools: bench.py's free_port,
    wait_listening and raw_args (its RAW_ARGS)."""
    subreaper()
    raise_nofile()
    res = {"counts": [], "machine_load": os.getloadavg()[0]}
    for n in counts:
        try:
            res["counts"].append(one_count(n, echo_port, work, log, tools))
        except Exception as e:
            log(f"handover {n}: failed: {e}")
            res["counts"].append({"n": n, "failed": " ".join(str(e).split())[-400:]})
    # the old processes' helpers, orphaned here
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    return res


def table(h):
    """The report's table (report.py)."""
    if not h or not h.get("counts"):
        return ""
    rows = [f"### Live handover (`kill -USR2`, tcp mode, {HANDOVERS} handovers per N)\n",
            f"Pause: what the old process logs (`forwarding paused X ms`), median and max of the handovers. "
            f"Probe round trips: {PROBES} connections doing {PROBE_SIZE}-byte round trips throughout, "
            f"steady state (more than {STEADY_GAP:g} s from any handover) against the trips that started "
            f"from {AROUND:g} s before each signal to {AROUND:g} s after its log line. After: idle "
            f"connections that answered a round trip after the last handover.\n",
            "| N idle | pause median ms | pause max ms | probe RTT steady p50 ms | steady p99 ms | steady max ms "
            "| around-handover p99 ms | around-handover max ms | answered after |",
            "|---|---|---|---|---|---|---|---|---|"]

    def f(x, fmt="{:.2f}"):
        return "" if x is None else fmt.format(x)

    for c in h["counts"]:
        if c.get("failed"):
            rows.append(f"| {c['n']:,} | failed: {c['failed'][:120]} |" + " |" * 7)
            continue
        p, s, a, i = c["pauses_ms"], c["steady"], c["around"], c["idle_after"]
        rows.append(f"| {c['n']:,} | {f(statistics.median(p), '{:.1f}')} | {f(max(p), '{:.1f}')} | "
                    f"{f(s['p50_ms'], '{:.3f}')} | {f(s['p99_ms'])} | {f(s['max_ms'])} | {f(a['p99_ms'])} | "
                    f"{f(a['max_ms'])} | {i['ok']:,}/{c['n']:,}"
                    + (f", {i['failed']} failed ({i['first_error']})" if i["failed"] else "") + " |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "idle":
        idle_main(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit("usage: handover.py idle PORT N (bench.py --only handover runs the rest)")
