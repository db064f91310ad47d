#!/usr/bin/env python3
"""samba_soak.py - mixed Samba load through smbsplice for a long while,
watching its memory, descriptors and pools.

Theory of operation
===================

It starts a throwaway smbd on a loopback port (contrib/throwaway-smbd.sh,
through tests/integ/harness.py's Samba class) and one smbsplice in front of
it with default options and --stats (harness.Proxy). In the share it writes
a few files of random content whose sha256 it knows.

First it runs each smbtorture test it will loop once *directly* against
smbd, to learn the per-test results Samba itself gives (smb2.rw has a test
that fails against Samba); through smbsplice every run must give the same.

Then, for --minutes, these loops all run at once through smbsplice, each
starting its next operation as soon as the last one ended:

- --get-loops loops of `smbclient get FILE -`, the file's bytes read from
  smbclient's standard output and checked against the known sha256;
- --put-loops loops of `smbclient put LOCAL NAME` of a local random file,
  checked by reading NAME back on the server side (the share directory)
  and comparing sha256; the copy is then removed;
- --bench-loops loops of smbtorture smb2.bench.* tests (--bench, each with
  torture:nprocs=4, so 4 connections, for --bench-seconds), every loop
  going round the list from a different place, never two runs of one
  test at once (they would share file names and collide);
- one loop of smbtorture smb2.rw (--rw-pause seconds between runs).

Every --interval seconds (10) a sampler records smbsplice's VmRSS, its open
descriptors (/proc/PID/fd: all, pipes, sockets) and the gauges of
/metrics: connections_active, pipes_open, pipes_lent, buffers_lent,
buffers_free, descriptors_used. Descriptors are read before the scrape, so
the scrape's own socket is not in them.

When the time is up no new operation starts; those running finish. Once
smbsplice has no connection left, it waits until its descriptors are back
to the count it had once listening, before any load, and its free buffers
are trimmed, up to --settle seconds (two pool trim intervals, 10 s, should
do), and takes one more sample. Then it stops smbsplice with SIGTERM
(harness.Proxy.stop: exit status 0, no sanitizer report in its log, no
socket left that was not there at start), counts the connection log lines
by how they ended, and prints a summary: the samples at start, middle and end of the load and
idle before and after it, min and max over the run, and per workload the
operations, bytes, checksum failures and other failures.

It exits 1 if any of these fails:

- a checksum (get or put), an smbclient or smbtorture run that failed or
  timed out, an smbtorture result that differs from the direct baseline;
- a connection that did not end `fin` in smbsplice's log, except those of
  smbtorture's bench tests (see bench_reset(): they exit at their time
  limit with replies in flight, and their kernel resets the connection,
  straight to smbd as well); --strict-ends fails on those too;
- RSS growth: the last sample under load more than --rss-bound MiB
  (default 10) above the middle one;
- descriptors: once idle, not back to the count at start (same total,
  same number of sockets and pipes), or the gauges not back to zero
  (connections_active, pipes_lent, buffers_lent);
- smbsplice's exit status after SIGTERM not 0, a sanitizer report in its
  log, or a socket it still held.

Usage
=====

    nice -n 10 python3 contrib/soak/samba_soak.py --minutes 30 --out /tmp/soak-out

from anywhere in the source tree, after `make` (--smbsplice picks another
binary, e.g. a build with --enable-sanitizers). Needs, as root, the Debian
packages samba, smbclient and samba-testsuite (smbtorture), like `make
check`. --out DIR keeps samples.csv, summary.txt, smbtorture baselines and
smbsplice's log. Python 3 standard library only.
"""
import argparse
import csv
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "integ"))
os.environ.setdefault("SRCDIR", SRCDIR)

import harness  # noqa: E402
from harness import Proxy, Samba, TestFailure, fd_table, metric, parse_conn_line, scrape  # noqa: E402

RESULT = re.compile(r"^(success|failure|error|skip|xfail|uxsuccess): (\S+)", re.M)
GAUGES = ("connections_active", "pipes_open", "pipes_lent", "buffers_lent", "buffers_free", "descriptors_used")
MiB = 1 << 20


class Stats:
    """Per-workload counters, shared by the loops."""

    def __init__(self):
        self.lock = threading.Lock()
        self.w = {}
        self.failures = []  # (workload, text)

    def add(self, name, ops=0, nbytes=0, sum_bad=0, failed=0, what=None):
        with self.lock:
            d = self.w.setdefault(name, {"ops": 0, "bytes": 0, "checksum_failures": 0, "failures": 0, "secs": 0.0})
            d["ops"] += ops
            d["bytes"] += nbytes
            d["checksum_failures"] += sum_bad
            d["failures"] += failed
            if what:
                self.failures.append((name, what))

    def time(self, name, secs):
        with self.lock:
            self.w.setdefault(name, {"ops": 0, "bytes": 0, "checksum_failures": 0, "failures": 0, "secs": 0.0})
            self.w[name]["secs"] += secs

    def snapshot(self):
        with self.lock:
            return {k: dict(v) for k, v in self.w.items()}


def aux(name):
    """Counters kept beside the workloads': per suite, and rate samples."""
    return "num/s" in name or name.startswith("suite:")


def sha256_file(path):
    return harness.file_sha256(path)


def random_file(path, mib):
    return harness.random_file(path, mib)


def smb_argv(smb, port):
    return ["//127.0.0.1/share", "-p", str(port), "-U", f"root%{smb.password}"]


def torture_argv(smb, port, suite, bench_seconds):
    argv = ["smbtorture", *smb_argv(smb, port), suite]
    if ".bench." in suite:
        argv += ["--option=torture:nprocs=4", f"--option=torture:timelimit={bench_seconds}"]
    return argv


def torture(smb, port, suite, bench_seconds, timeout):
    """Run one smbtorture suite; return (results {test: outcome}, output)."""
    argv = torture_argv(smb, port, suite, bench_seconds)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return {name: res for res, name in RESULT.findall(r.stdout)}, r.stdout + r.stderr


def get_loop(i, smb, port, files, stats, stop, timeout):
    name = f"get-{i}"
    k = i
    while not stop.is_set():
        remote, mib, digest = files[k % len(files)]
        k += 1
        t0 = time.monotonic()
        argv = ["smbclient", *smb_argv(smb, port), "-c", f"get {remote} -"]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        h, n = hashlib.sha256(), 0
        try:
            while (b := p.stdout.read(MiB)):
                h.update(b)
                n += len(b)
            err = p.stderr.read().decode(errors="replace")
            rc = p.wait()
        finally:
            killer.cancel()
        stats.time(name, time.monotonic() - t0)
        if rc != 0:
            stats.add(name, ops=1, nbytes=n, failed=1, what=f"smbclient get {remote} exited {rc}: {err.strip()[-300:]}")
        elif n != mib * MiB or h.hexdigest() != digest:
            stats.add(name, ops=1, nbytes=n, sum_bad=1,
                      what=f"get {remote}: {n} bytes, sha256 {h.hexdigest()} (expected {mib * MiB}, {digest})")
        else:
            stats.add(name, ops=1, nbytes=n)


def put_loop(i, smb, port, local, mib, digest, stats, stop, timeout):
    name = f"put-{i}"
    k = 0
    while not stop.is_set():
        remote = f"soak-put-{i}-{k}.bin"
        k += 1
        t0 = time.monotonic()
        argv = ["smbclient", *smb_argv(smb, port), "-c", f"put {local} {remote}"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
            rc, out = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired:
            rc, out = "timeout", ""
        stats.time(name, time.monotonic() - t0)
        path = os.path.join(smb.share, remote)
        if rc != 0:
            stats.add(name, ops=1, failed=1, what=f"smbclient put {remote} exited {rc}: {out.strip()[-300:]}")
        else:
            try:
                n, got = os.path.getsize(path), sha256_file(path)
            except OSError as e:
                n, got = 0, f"unreadable: {e}"
            if n != mib * MiB or got != digest:
                stats.add(name, ops=1, nbytes=n, sum_bad=1,
                          what=f"put {remote}: server holds {n} bytes, sha256 {got} (expected {mib * MiB}, {digest})")
            else:
                stats.add(name, ops=1, nbytes=n)
        try:
            os.remove(path)
        except OSError:
            pass


# One run of a suite at a time over all loops: two runs of one bench test
# at once use the same file names and collide (smb2.bench.oplock1 then
# fails with NT_STATUS_SHARING_VIOLATION, straight to smbd as well).
SUITE_LOCKS = {}
SUITE_LOCKS_LOCK = threading.Lock()


def suite_lock(suite):
    with SUITE_LOCKS_LOCK:
        return SUITE_LOCKS.setdefault(suite, threading.Lock())


def take_suite(suites, k, stop):
    """The first suite from @k on in @suites that no other loop is
    running, with its lock held; waits while every one is busy."""
    while not stop.is_set():
        for j in range(len(suites)):
            suite = suites[(k + j) % len(suites)]
            if suite_lock(suite).acquire(blocking=False):
                return suite, k + j + 1
        time.sleep(0.1)
    return None, k


def failure_text(out):
    """smbtorture's failure or error blocks, for the report."""
    blocks = re.findall(r"^((?:failure|error): \S+(?: \[\n.*?\n\])?)", out, re.M | re.S)
    return " | ".join(b.replace("\n", " ") for b in blocks)[:600] or out.strip()[-400:]


def torture_loop(name, suites, smb, port, baseline, stats, stop, args, pause=0.0):
    k = 0
    while not stop.is_set():
        suite, k = take_suite(suites, k, stop)
        if suite is None:
            break
        t0 = time.monotonic()
        try:
            res, out = torture(smb, port, suite, args.bench_seconds, args.op_timeout)
        except subprocess.TimeoutExpired:
            stats.add(name, ops=1, failed=1, what=f"{suite}: smbtorture timed out after {args.op_timeout} s")
            stats.add(f"suite:{suite}", ops=1, failed=1)
            continue
        finally:
            suite_lock(suite).release()
        stats.time(name, time.monotonic() - t0)
        rate = [int(n) for n in re.findall(r"num/s=(\d+)", out)]
        if res != baseline[suite]:
            diff = {t: (baseline[suite].get(t), res.get(t)) for t in set(baseline[suite]) | set(res)
                    if baseline[suite].get(t) != res.get(t)}
            stats.add(name, ops=1, failed=1, what=f"{suite}: results differ from direct (direct, proxied): {diff}: "
                                                  f"{failure_text(out)}")
        else:
            stats.add(name, ops=1)
        stats.add(f"suite:{suite}", ops=1, failed=int(res != baseline[suite]))
        if rate:
            stats.add(f"{name} num/s samples", ops=len(rate), nbytes=sum(rate))
        if pause:
            stop.wait(pause)


CONN_SMB = re.compile(r" reads=(\d+)/\d+B writes=(\d+)/\d+B")


def bench_reset(c, line, bench_seconds):
    """Is this non-fin end a smbtorture bench client's? Those hold their
    connections for the whole time limit, move no READ or WRITE data, and
    exit with replies in flight: their kernel resets the connection, as it
    does straight to smbd. smbsplice logs that rst, or error (Transport
    endpoint is not connected) when it first notices the reset at the
    shutdown(SHUT_WR) that forwards the server's FIN."""
    m = CONN_SMB.search(line)
    if not m or m.group(1) != "0" or m.group(2) != "0" or c["dur"] < bench_seconds / 2:
        return False
    return c["end"] == "rst" or (c["end"] == "error" and c["why"] == "Transport endpoint is not connected")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sample(px, t0, stats):
    """One sample of smbsplice: RSS, descriptors (read before the scrape),
    gauges."""
    pid = px.proc.pid
    fds = fd_table(pid)
    s = {"t": round(time.monotonic() - t0, 1), "rss_kib": rss_kib(pid), "fds": len(fds),
         "pipes": sum(1 for v in fds.values() if v.startswith("pipe:")),
         "sockets": sum(1 for v in fds.values() if v.startswith("socket:"))}
    m = scrape(px.stats_port)
    for g in GAUGES:
        s[g] = int(metric(m, f"smbsplice_{g}"))
    s["connections_total"] = int(metric(m, "smbsplice_connections_total"))
    snap = stats.snapshot()
    s["ops"] = sum(v["ops"] for k, v in snap.items() if not aux(k))
    return s


def sampler(px, t0, stats, samples, stop, interval, errors):
    while not stop.wait(interval):
        try:
            samples.append(sample(px, t0, stats))
        except Exception as e:  # recorded; a dead daemon shows elsewhere
            errors.append(f"sampler: {e!r}")


COLS = ("t", "rss_kib", "fds", "pipes", "sockets") + GAUGES + ("connections_total", "ops")


def fmt_row(label, s):
    return (f"{label:<12} {s['t']:>7.0f} {s['rss_kib'] / 1024:>8.1f} {s['fds']:>5} {s['pipes']:>5} {s['sockets']:>5} "
            f"{s['connections_active']:>6} {s['pipes_open']:>6} {s['pipes_lent']:>6} {s['buffers_lent']:>6} "
            f"{s['buffers_free']:>6} {s['descriptors_used']:>6} {s['connections_total']:>8}")


HEADER = (f"{'':<12} {'t (s)':>7} {'RSS MiB':>8} {'fds':>5} {'pipes':>5} {'socks':>5} {'conns':>6} {'p_open':>6} "
          f"{'p_lent':>6} {'b_lent':>6} {'b_free':>6} {'d_used':>6} {'conn_tot':>8}")


def main():
    ap = argparse.ArgumentParser(description="Mixed Samba load through smbsplice (see the module docstring).")
    ap.add_argument("--minutes", type=float, default=30, help="how long the load runs (default 30)")
    ap.add_argument("--smbsplice", default=os.path.join(SRCDIR, "proxy", "smbsplice"), help="the binary to soak")
    ap.add_argument("--files-mib", default="64,128,256", help="sizes of the test files to get, in MiB")
    ap.add_argument("--put-mib", type=int, default=128, help="size of each put loop's file, in MiB")
    ap.add_argument("--get-loops", type=int, default=3)
    ap.add_argument("--put-loops", type=int, default=2)
    ap.add_argument("--bench-loops", type=int, default=2)
    ap.add_argument("--bench", default="smb2.bench.echo,smb2.bench.path-contention-shared,smb2.bench.oplock1",
                    help="smbtorture bench tests the bench loops go round")
    ap.add_argument("--bench-seconds", type=int, default=10, help="torture:timelimit of each bench run")
    ap.add_argument("--rw-pause", type=float, default=0.5, help="seconds between smb2.rw runs")
    ap.add_argument("--interval", type=float, default=10, help="seconds between samples")
    ap.add_argument("--rss-bound", type=float, default=10, help="MiB the end of the load may be above the middle")
    ap.add_argument("--settle", type=float, default=30, help="seconds to wait, idle, for descriptors to go back")
    ap.add_argument("--op-timeout", type=float, default=600, help="seconds one smbclient or smbtorture run may take")
    ap.add_argument("--strict-ends", action="store_true",
                    help="fail on every connection that did not end fin, smbtorture bench clients' resets included")
    ap.add_argument("--workdir", help="where smbd's directories and the local files go (default: a new one in /tmp,"
                                      " removed at the end)")
    ap.add_argument("--out", help="directory for samples.csv, summary.txt, baselines and smbsplice's log")
    args = ap.parse_args()

    for tool, pkg in (("smbd", "samba"), ("smbclient", "smbclient"), ("smbtorture", "samba-testsuite")):
        if not shutil.which(tool):
            sys.exit(f"samba_soak: {tool} not found: install the Debian package {pkg}")
    harness.SMBSPLICE = os.path.abspath(args.smbsplice)
    work = args.workdir or tempfile.mkdtemp(prefix="samba-soak-")
    os.makedirs(work, exist_ok=True)
    harness.TMPDIR = os.path.join(work, "smbd")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    out_lines = []

    def say(text=""):
        print(text, flush=True)
        out_lines.append(text)

    stats = Stats()
    samples, errors = [], []
    failures = []
    px = smb = None
    t_start = time.monotonic()
    try:
        smb = Samba()
        say(f"samba_soak: smbd on {smb.addr}, share {smb.share}; {args.minutes:g} min; smbsplice {harness.SMBSPLICE}")
        files = []
        for i, mib in enumerate(int(x) for x in args.files_mib.split(",")):
            remote = f"soak-get-{i}.bin"
            files.append((remote, mib, random_file(os.path.join(smb.share, remote), mib)))
        local = os.path.join(work, "local")
        os.makedirs(local, exist_ok=True)
        puts = []
        for i in range(args.put_loops):
            path = os.path.join(local, f"put-src-{i}.bin")
            puts.append((path, random_file(path, args.put_mib)))
        say("files: " + ", ".join(f"{r} {m} MiB sha256 {d[:16]}" for r, m, d in files)
            + "; put sources: " + ", ".join(f"{args.put_mib} MiB sha256 {d[:16]}" for _, d in puts))

        # The baseline: every smbtorture suite once, straight to smbd.
        benches = [b for b in args.bench.split(",") if b]
        baseline = {}
        for suite in benches + ["smb2.rw"]:
            res, text = torture(smb, smb.port, suite, args.bench_seconds, args.op_timeout)
            if not res:
                raise TestFailure(f"no results from smbtorture {suite} against smbd directly:\n{text[-1500:]}")
            baseline[suite] = res
            say(f"baseline (direct) {suite}: " + ", ".join(f"{t}={r}" for t, r in sorted(res.items())))
            if args.out:
                with open(os.path.join(args.out, f"baseline-{suite}.txt"), "w") as f:
                    f.write(text)

        px = Proxy(smb.addr, stats=True)
        say(f"smbsplice {' '.join(px.argv)} (pid {px.proc.pid})")
        t0 = time.monotonic()
        idle0 = sample(px, t0, stats)
        idle0_table = dict(px.fds0)

        stop = threading.Event()
        threads = []
        for i in range(args.get_loops):
            threads.append(threading.Thread(target=get_loop, args=(i, smb, px.port, files, stats, stop,
                                                                    args.op_timeout), daemon=True))
        for i, (path, digest) in enumerate(puts):
            threads.append(threading.Thread(target=put_loop, args=(i, smb, px.port, path, args.put_mib, digest, stats,
                                                                    stop, args.op_timeout), daemon=True))
        for i in range(args.bench_loops):
            order = benches[i % len(benches):] + benches[:i % len(benches)]
            threads.append(threading.Thread(target=torture_loop, args=(f"bench-{i}", order, smb, px.port, baseline,
                                                                        stats, stop, args), daemon=True))
        threads.append(threading.Thread(target=torture_loop, args=("rw", ["smb2.rw"], smb, px.port, baseline, stats,
                                                                    stop, args, args.rw_pause), daemon=True))
        samp_stop = threading.Event()
        samp = threading.Thread(target=sampler, args=(px, t0, stats, samples, samp_stop, args.interval, errors),
                                daemon=True)
        for t in threads:
            t.start()
        samp.start()
        load_secs = args.minutes * 60
        last = time.monotonic()
        while time.monotonic() - t0 < load_secs:
            time.sleep(1)
            if px.proc.poll() is not None:
                failures.append(f"smbsplice exited with status {px.proc.returncode} during the load")
                break
            if time.monotonic() - last >= 300:
                last = time.monotonic()
                s = samples[-1] if samples else None
                snap = stats.snapshot()
                say(f"  {time.monotonic() - t0:.0f} s: ops " + ", ".join(
                    f"{k} {v['ops']}" for k, v in sorted(snap.items()) if not aux(k))
                    + (f"; RSS {s['rss_kib'] / 1024:.1f} MiB, fds {s['fds']}" if s else "")
                    + f"; failures {len(stats.failures)}")
        stop.set()
        load_end = time.monotonic() - t0
        say(f"load ran {load_end:.0f} s; waiting for the running operations to finish")
        for t in threads:
            t.join(args.op_timeout + 60)
            if t.is_alive():
                failures.append(f"a workload thread ({t.name}) did not finish")
        samp_stop.set()
        samp.join(30)
        loaded = [s for s in samples if s["t"] <= load_end]

        # Idle: no connection left, then descriptors back to the count at start.
        idle1 = None
        end = time.monotonic() + args.settle
        while px.proc.poll() is None:
            s = sample(px, t0, stats)
            idle1 = s
            # Free buffers are waited for too (the pools trim them within
            # two 5 s intervals), but only descriptors fail the soak.
            if (s["connections_active"] == 0 and s["fds"] == idle0["fds"] and s["pipes"] == idle0["pipes"]
                    and s["sockets"] == idle0["sockets"] and s["buffers_free"] == 0):
                break
            if time.monotonic() > end:
                break
            time.sleep(1)
        settled = idle1["t"] - load_end if idle1 else None

        # --- checks --------------------------------------------------------
        say("")
        say("smbsplice, sampled every %g s (%d samples under load):" % (args.interval, len(loaded)))
        say(HEADER)
        say(fmt_row("idle before", idle0))
        if loaded:
            mid = min(loaded, key=lambda s: abs(s["t"] - load_end / 2))
            say(fmt_row("start", loaded[0]))
            say(fmt_row("middle", mid))
            say(fmt_row("end", loaded[-1]))
        if idle1:
            say(fmt_row("idle after", idle1))
        if loaded:
            mins = {k: min(s[k] for s in loaded) for k in COLS}
            maxs = {k: max(s[k] for s in loaded) for k in COLS}
            mins["t"], maxs["t"] = loaded[0]["t"], loaded[-1]["t"]
            say(fmt_row("min (load)", mins))
            say(fmt_row("max (load)", maxs))
            growth = (loaded[-1]["rss_kib"] - mid["rss_kib"]) / 1024
            if growth > args.rss_bound:
                failures.append(f"RSS grew {growth:.1f} MiB from the middle of the load to its end "
                                f"(bound {args.rss_bound:g} MiB)")
            say(f"RSS end - middle: {growth:+.1f} MiB (bound +{args.rss_bound:g} MiB); "
                f"end - start: {(loaded[-1]['rss_kib'] - loaded[0]['rss_kib']) / 1024:+.1f} MiB")
        else:
            failures.append("no sample under load")
        if idle1:
            say(f"idle after {settled:.0f} s: fds {idle1['fds']} (at start {idle0['fds']}), pipes {idle1['pipes']} "
                f"({idle0['pipes']}), sockets {idle1['sockets']} ({idle0['sockets']})")
            for k in ("fds", "pipes", "sockets"):
                if idle1[k] != idle0[k]:
                    failures.append(f"idle after the load, {idle1[k]} {k} open, {idle0[k]} at start "
                                    f"(waited {args.settle:g} s)")
            for g in ("connections_active", "pipes_lent", "buffers_lent"):
                if idle1[g]:
                    failures.append(f"idle after the load, smbsplice_{g} is {idle1[g]}, not 0")
            if idle1["fds"] != idle0["fds"]:
                now = fd_table(px.proc.pid)
                extra = {fd: t for fd, t in now.items() if idle0_table.get(fd) != t}
                failures.append(f"descriptors not there at start: {dict(sorted(extra.items()))}")
        if errors:
            failures += errors[:5]

        # Stop: SIGTERM, exit 0, no sanitizer report, no socket left.
        try:
            px.stop()
        except TestFailure as e:
            failures.append(f"smbsplice stop: {str(e)[:3000]}")
        rc = px.proc.returncode
        say(f"smbsplice exit status after SIGTERM: {rc}")

        ends, bench_resets, bad = {}, {}, []
        for line in px.log().splitlines():
            if " conn " not in line or " end=" not in line:
                continue
            c = parse_conn_line(line)
            key = c["end"] + (f" ({c['why']})" if c["why"] else "")
            ends[key] = ends.get(key, 0) + 1
            if c["end"] == "fin":
                continue
            if not args.strict_ends and bench_reset(c, line, args.bench_seconds):
                bench_resets[key] = bench_resets.get(key, 0) + 1
            else:
                bad.append(line.strip())
        say("connections by end: " + ", ".join(f"{k} {v}" for k, v in sorted(ends.items())))
        if bench_resets:
            say("  of which smbtorture bench connections reset as the client exited at its time limit (no READ or"
                " WRITE data, held >= half the time limit; the same resets happen straight to smbd): "
                + ", ".join(f"{k} {v}" for k, v in sorted(bench_resets.items())))
        for line in bad[:5]:
            failures.append(f"connection did not end cleanly: {line}")
        if len(bad) > 5:
            failures.append(f"... {len(bad)} connections in all did not end cleanly")

        # Workloads.
        say("")
        snap = stats.snapshot()
        say(f"{'workload':<10} {'ops':>7} {'GiB':>8} {'MB/s':>7} {'sum fail':>8} {'failures':>8}")
        tot = {"ops": 0, "bytes": 0, "checksum_failures": 0, "failures": 0}
        for k, v in sorted(snap.items()):
            if aux(k):
                continue
            mbs = v["bytes"] / v["secs"] / 1e6 if v["secs"] and v["bytes"] else 0
            say(f"{k:<10} {v['ops']:>7} {v['bytes'] / (1 << 30):>8.1f} {mbs:>7.0f} {v['checksum_failures']:>8} "
                f"{v['failures']:>8}")
            for f in tot:
                tot[f] += v[f]
        say(f"{'total':<10} {tot['ops']:>7} {tot['bytes'] / (1 << 30):>8.1f} {'':>7} {tot['checksum_failures']:>8} "
            f"{tot['failures']:>8}")
        say("smbtorture runs through smbsplice, by test (results the same as direct / all): " + ", ".join(
            f"{k[6:]} {v['ops'] - v['failures']}/{v['ops']}" for k, v in sorted(snap.items())
            if k.startswith("suite:")))
        for k, v in sorted(snap.items()):
            if "num/s" in k and v["ops"]:
                say(f"{k.split()[0]}: mean of smbtorture's per-second num/s samples {v['bytes'] / v['ops']:.0f} "
                    f"({v['ops']} samples, echo and open/close rates mixed)")
        for name, what in stats.failures[:30]:
            failures.append(f"{name}: {what}")
        if len(stats.failures) > 30:
            failures.append(f"... and {len(stats.failures) - 30} more workload failures")
        if tot["checksum_failures"] or tot["failures"]:
            failures.append(f"{tot['checksum_failures']} checksum failures, {tot['failures']} other workload failures")
    except TestFailure as e:
        failures.append(str(e))
    finally:
        if px is not None and px.proc.poll() is None:
            px.stop(check=False)
        if args.out and px is not None:
            shutil.copy(px.logf.name, os.path.join(args.out, "smbsplice.log"))
        if args.out and smb is not None and os.path.exists(os.path.join(smb.dir, "log.smbd")):
            shutil.copy(os.path.join(smb.dir, "log.smbd"), os.path.join(args.out, "log.smbd"))
        Samba.stop_all()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    say("")
    say(f"wall time {time.monotonic() - t_start:.0f} s")
    for f in failures:
        say(f"FAIL: {f}")
    say("samba_soak: " + ("FAILED" if failures else "passed"))
    if args.out:
        with open(os.path.join(args.out, "samples.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLS)
            w.writeheader()
            for s in samples:
                w.writerow({k: s[k] for k in COLS})
        with open(os.path.join(args.out, "summary.txt"), "w") as f:
            f.write("\n".join(out_lines) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
