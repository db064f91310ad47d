#!/usr/bin/python3
"""render.py - the Grafana dashboard's panels over what a real Prometheus returned.

Grafana is not in Debian, so docs/img/dashboard.png is drawn here instead,
from Prometheus's own answers: the script runs smbsplice (the build
tree's, or --smbsplice) with --stats in front of a throwaway Samba
(tests/integ/harness.py's), and Debian's prometheus scraping its /metrics
every --step seconds (tests/integ/promserver.py); it drives a short
workload through smbsplice with smbclient and raw sockets; then, for nine
of contrib/grafana/smbsplice.json's panels, it asks that Prometheus for
each query over the run (GET /api/v1/query_range, one point per
--step), and plots the answers with gnuplot (Debian: gnuplot-nox) in the
dashboard's order. The PromQL is Prometheus's, extrapolation of rate()
and increase() to the window's edges included, as Grafana would show it.
The template variables are "All" (.*), but for $command, which the
repeated heatmap panel takes from --heatmap-command; $__rate_interval is
--window seconds.

Workload, about --seconds long: smbclient gets of a 32 MiB file, one
client, then three at once, then one again, each session also listing the
share and, now and then, putting a file; in the middle, bursts of
connections from 127.0.0.3 past --max-conns-per-source (refused) and
from 127.0.0.2, which no --allow holds (denied). Every address is on
loopback.

    contrib/grafana/render.py [--out docs/img/dashboard.png] [--seconds 120]
    contrib/grafana/render.py --save answers.json   # keep Prometheus's answers
    contrib/grafana/render.py --load answers.json   # redraw from them

Run it as root from the top of a built tree, with /usr/bin/python3 (where
Debian's python3-prometheus-client is, which the harness reads pages
with). Times on the x axis are seconds from the workload's start, so a
redraw from the same answers gives the same picture.
"""
import argparse
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "../.."))
PANELS = ["Throughput by path", "Connections open", "Server latency: $command", "Server latency p99 per command",
          "Pipes", "Buffers", "Refused by a cap", "Denied by --allow", "Multichannel notices"]

sys.path.insert(0, os.path.join(TOP, "tests/integ"))
os.environ.setdefault("SRCDIR", TOP)
import harness  # noqa: E402
from promserver import Prometheus, dashboard, legend, substitute  # noqa: E402


# --- the workload ------------------------------------------------------------------

def run_workload(px, smb, seconds, work):
    """The clients and the bursts, for @seconds; the sessions' outcomes."""
    t0 = time.monotonic()
    end = t0 + seconds
    sessions = []

    def clients_now():
        f = (time.monotonic() - t0) / seconds
        return 1 if f < 0.25 else 3 if f < 0.7 else 1 if f < 0.9 else 0

    def client(k):
        n = 0
        while time.monotonic() < end:
            if k >= clients_now():
                time.sleep(0.5)
                continue
            n += 1
            cmd = f"get big.bin {work}/got{k}.bin; ls" + (f"; put {work}/up.bin up{k}.bin" if n % 3 == 0 else "")
            try:
                smb.smbclient(px.port, cmd=cmd)
                sessions.append("ok")
            except harness.TestFailure as e:
                sessions.append(str(e).splitlines()[-1])
                time.sleep(0.5)

    def bursts():
        """Past the per-source cap from 127.0.0.3 (refused), and from
        127.0.0.2, which --allow leaves out (denied)."""
        while time.monotonic() < end:
            f = (time.monotonic() - t0) / seconds
            if 0.4 <= f < 0.6:
                held = []
                for src in ["127.0.0.3"] * 10 + ["127.0.0.2"] * 2:
                    s = socket.socket()
                    s.bind((src, 0))
                    try:
                        s.connect(("127.0.0.1", px.port))
                    except OSError:
                        pass
                    held.append(s)
                time.sleep(1.0)
                for s in held:
                    s.close()
            time.sleep(2.0)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(3)] + [threading.Thread(target=bursts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 300)
    return sessions


def ask(prom, dash, start, end, step, window, command):
    """{panel title: [[legend, [[seconds from start, value], ...]], ...]}:
    each of PANELS' queries over [start, end] from Prometheus; the
    heatmap's as one series per bucket bound, its legend the bound."""
    by_title = {p["title"]: p for p in dash["panels"]}
    out = {}
    for title in PANELS:
        p = by_title[title]
        series = []
        for t in p["targets"]:
            expr = substitute(t["expr"], window, command)
            for labels, points in prom.query_range(expr, start, end, step):
                name = labels.get("le") if p["type"] == "heatmap" else legend(t.get("legendFormat", ""), labels)
                series.append([name, [[round(ts - start, 3), v] for ts, v in points]])
        out[title] = sorted(series, key=lambda s: s[0])
    return out


def measure(seconds, step, window, command):
    """Run the workload under a real Prometheus; its answers (ask())."""
    smb = harness.Samba()
    work = tempfile.mkdtemp(prefix="render-", dir=harness.TMPDIR)
    harness.random_file(os.path.join(smb.share, "big.bin"), 32)
    harness.random_file(os.path.join(work, "up.bin"), 8)
    px = harness.Proxy(smb.addr, "--allow", "127.0.0.1/32", "--allow", "127.0.0.3/32",
                       "--max-conns-per-source", "8", stats=True)
    prom = None
    try:
        prom = Prometheus([f"127.0.0.1:{px.stats_port}"], interval=step)
        prom.wait_scrapes(2)
        start = time.time()
        sessions = run_workload(px, smb, seconds, work)
        time.sleep(3 * step)  # the last scrapes, and the window's tail
        end = time.time()
        answers = {"seconds": seconds, "step": step, "window": window, "command": command,
                   "panels": ask(prom, dashboard(), start, end, step, window, command)}
    finally:
        if prom:
            prom.stop()
        px.stop(check_fds=False)
        smb.stop()
        shutil.rmtree(work, ignore_errors=True)
    failed = sorted({x for x in sessions if x != "ok"})
    print(f"render: {len(sessions)} smbclient sessions, {sessions.count('ok')} whole"
          + "".join(f"\n  failed: {x}" for x in failed), file=sys.stderr)
    return answers


# --- the picture -------------------------------------------------------------------

UNITS = {"Bps": (1e6, "MB/s"), "s": (1e-3, "ms"), "cps": (1, "per second"), "ops": (1, "per second"),
         "short": (1, ""), "reqps": (1, "per second")}


def render(answers, out):
    """Draw @answers (measure()'s) into the PNG @out with gnuplot."""
    by_title = {p["title"]: p for p in dashboard()["panels"]}
    command, window = answers["command"], answers["window"]
    tmp = tempfile.mkdtemp(prefix="render-plot-")
    script = ["set terminal pngcairo size 1500,1150 font 'DejaVu Sans,9'", f"set output '{out}'",
              "set multiplot layout 3,3 title \"smbsplice dashboard: contrib/grafana/smbsplice.json's queries as a "
              f"real Prometheus answered them (a {answers['step']:g} s scrape interval, {window} s rate window)\" "
              "font ',11'",
              "set termoption noenhanced", "set key top left font ',8' samplen 2", "set grid lc rgb '#dddddd'",
              "set xlabel 'seconds'", "set border lc rgb '#555555'"]
    for k, title in enumerate(PANELS):
        p = by_title[title]
        scale, ylabel = UNITS.get(p["fieldConfig"]["defaults"].get("unit", "short"), (1, ""))
        series = answers["panels"][title]
        script += ["unset logscale", "set yrange [*:*]", "set autoscale", "set xrange [*:*]", "unset ytics",
                   "set ytics", "set style fill transparent solid 0.12", "unset colorbox",
                   f"set title \"{title.replace('$command', command)}\" font ',10'", f"set ylabel '{ylabel}'"]
        if p["type"] == "heatmap":
            script += heatmap(series, tmp, k)
            continue
        right = {o["matcher"]["options"] for o in p["fieldConfig"].get("overrides", ())
                 if {"id": "custom.axisPlacement", "value": "right"} in o["properties"]}
        script += ["set y2tics" if right else "unset y2tics"]
        plots = []
        for name, pts in series:
            path = os.path.join(tmp, f"p{k}-{len(plots)}.dat")
            with open(path, "w") as f:
                # NaN (a quantile of no requests) is a gap, as in Grafana.
                f.writelines(f"{a:.2f} {b / scale:.6g}\n" if not math.isnan(b) else f"{a:.2f} NaN\n" for a, b in pts)
            axes = "x1y2" if name in right else "x1y1"
            plots.append(f"'{path}' using 1:2 axes {axes} with lines lw 1.5 title \"{name}\"")
        script.append("plot " + ", ".join(plots) if plots else "plot NaN title 'no data'")
    script.append("unset multiplot")
    path = os.path.join(tmp, "plot.gp")
    with open(path, "w") as f:
        f.write("\n".join(script) + "\n")
    subprocess.run(["gnuplot", path], check=True, timeout=120)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"render: wrote {out}", file=sys.stderr)


def heatmap(series, tmp, k):
    """The repeated heatmap panel, for one command: increase() of each
    bucket as Prometheus gave it (cumulative), drawn per bucket (each
    minus the one below), per point in time."""
    if not series:
        return ["plot NaN title 'no data'"]
    bounds = sorted(float(le) for le, _ in series)
    by_le = {float(le): dict((t, v) for t, v in pts) for le, pts in series}
    times = sorted({t for _, pts in series for t, _ in pts})
    rows = []
    for t in times:
        cum = [by_le[b].get(t, 0.0) for b in bounds]
        rows.append((t, [max(0.0, c - (cum[j - 1] if j else 0.0)) for j, c in enumerate(cum)]))
    # Only the bucket rows that ever hold anything, and one either side.
    used = [j for j in range(len(bounds)) if any(r[j] > 0 for _, r in rows)] or [0]
    lo, hi = max(0, used[0] - 1), min(len(bounds) - 1, used[-1] + 1)
    path = os.path.join(tmp, f"p{k}.dat")
    with open(path, "w") as f:
        for t, r in rows:
            for j in range(lo, hi + 1):
                f.write(f"{t:.2f} {j - lo} {r[j]:.6g}\n")
            f.write("\n")
    tics = ", ".join(f"'{'+Inf' if math.isinf(bounds[j]) else f'{bounds[j] * 1e3:g}'}' {j - lo}"
                     for j in range(lo, hi + 1))
    return ["set ylabel 'bucket (le, ms)'", f"set ytics ({tics}) font ',7'", "set colorbox",
            "set palette defined (0 '#fff7ec', 1 '#fdbb84', 2 '#d7301f', 3 '#7f0000')",
            f"set yrange [-0.5:{hi - lo + 0.5}]", f"plot '{path}' using 1:2:3 with image notitle"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(TOP, "docs/img/dashboard.png"))
    ap.add_argument("--seconds", type=int, default=120)
    ap.add_argument("--step", type=int, default=2, help="Prometheus's scrape interval and the points' step, seconds")
    ap.add_argument("--window", type=int, default=10, help="the rate() window, seconds ($__rate_interval)")
    ap.add_argument("--heatmap-command", default="read")
    ap.add_argument("--save", help="write Prometheus's answers to this file")
    ap.add_argument("--load", help="draw from answers saved with --save")
    ap.add_argument("--smbsplice", help="the smbsplice to run (default: the build tree's proxy/smbsplice)")
    a = ap.parse_args()
    if a.smbsplice:
        harness.SMBSPLICE = a.smbsplice
    if a.load:
        with open(a.load) as f:
            answers = json.load(f)
    else:
        answers = measure(a.seconds, a.step, a.window, a.heatmap_command)
        if a.save:
            with open(a.save, "w") as f:
                json.dump(answers, f)
    render(answers, a.out)


if __name__ == "__main__":
    main()
