#!/usr/bin/env python3
"""render.py - a rendering of the Grafana dashboard's queries over real data.

Grafana is not in Debian, so docs/img/dashboard.png is drawn here instead:
the script runs smbsplice (the build tree's, or --smbsplice) with --stats
in front of a throwaway Samba (tests/integ/harness.py's), drives a short
workload through it with smbclient and raw sockets, scrapes /metrics
every --step seconds, and then evaluates the PromQL of nine of
contrib/grafana/smbsplice.json's panels over those scrapes, itself, and
plots them with gnuplot (Debian: gnuplot-nox) in the dashboard's order.

The evaluator knows only the forms the dashboard uses: a selector with
=, =~ matchers; rate() and increase() over a range (the difference of the
two scrapes the range spans, without Prometheus's extrapolation to the
range's edges); sum and max, with or without by (...);
histogram_quantile() (Prometheus's linear interpolation within a bucket).
Anything else stops it with the query it could not read. The template
variables are "All", but for $command, which the repeated heatmap panel
takes from --heatmap-command.

Workload, about --seconds long: smbclient gets of a 32 MiB file, one
client, then three at once, then one again, each session also listing the
share and, now and then, putting a file; in the middle, bursts of
connections from 127.0.0.3 past --max-conns-per-source (refused) and
from 127.0.0.2, which no --allow holds (denied). Every address is on loopback.

    contrib/grafana/render.py [--out docs/img/dashboard.png] [--seconds 120]
    contrib/grafana/render.py --save scrapes.json   # keep the scrapes
    contrib/grafana/render.py --load scrapes.json   # redraw from them
"""
import argparse
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "../.."))
DASHBOARD = os.path.join(HERE, "smbsplice.json")
PANELS = ["Throughput by path", "Connections open", "Server latency: $command", "Server latency p99 per command",
          "Pipes", "Buffers", "Refused by a cap", "Denied by --allow", "Multichannel notices"]


# --- the PromQL the dashboard uses ---------------------------------------------

TOKEN = re.compile(r'\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<str>"[^"]*")'
                   r'|(?P<range>\[\d+s\])|(?P<op>=~|[(){},=]))')


def tokens(expr):
    out, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            if expr[pos:].strip():
                raise ValueError(f"cannot read {expr[pos:]!r} in {expr!r}")
            break
        out.append((m.lastgroup, m.group(m.lastgroup)))
        pos = m.end()
    return out


class Parser:
    """Recursive descent over tokens(); returns a tree of tuples."""

    def __init__(self, expr):
        self.expr, self.toks, self.i = expr, tokens(expr), 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None, kind=None):
        k, v = self.peek()
        if (value is not None and v != value) or (kind is not None and k != kind):
            raise ValueError(f"expected {value or kind} at {v!r} in {self.expr!r}")
        self.i += 1
        return v

    def parse(self):
        tree = self.expr_()
        if self.i != len(self.toks):
            raise ValueError(f"trailing {self.peek()[1]!r} in {self.expr!r}")
        return tree

    def expr_(self):
        name = self.take(kind="ident")
        if name in ("sum", "max"):
            by = []
            if self.peek()[1] == "by":
                self.take("by")
                self.take("(")
                while self.peek()[1] != ")":
                    by.append(self.take(kind="ident"))
                    if self.peek()[1] == ",":
                        self.take(",")
                self.take(")")
            self.take("(")
            inner = self.expr_()
            self.take(")")
            return ("agg", name, tuple(by), inner)
        if name in ("rate", "increase"):
            self.take("(")
            sel = self.selector(self.take(kind="ident"))
            window = int(self.take(kind="range")[1:-2])
            self.take(")")
            return (name, sel, window)
        if name == "histogram_quantile":
            self.take("(")
            q = float(self.take(kind="num"))
            self.take(",")
            inner = self.expr_()
            self.take(")")
            return ("quantile", q, inner)
        return self.selector(name)

    def selector(self, name):
        matchers = []
        if self.peek()[1] == "{":
            self.take("{")
            while self.peek()[1] != "}":
                label = self.take(kind="ident")
                op = self.take()
                if op not in ("=", "=~"):
                    raise ValueError(f"matcher {op!r} in {self.expr!r}")
                matchers.append((label, op, self.take(kind="str")[1:-1]))
                if self.peek()[1] == ",":
                    self.take(",")
            self.take("}")
        return ("sel", name, tuple(matchers))


def matches(labels, matchers):
    for label, op, want in matchers:
        have = labels.get(label, "")
        if (op == "=" and have != want) or (op == "=~" and not re.fullmatch(want, have)):
            return False
    return True


def select(page, sel):
    _, name, matchers = sel
    return {ls: v for (n, ls), v in page.items() if n == name and matches(dict(ls), matchers)}


def evaluate(tree, scrapes, i):
    """The instant vector {labels: value} of tree at scrape i."""
    kind = tree[0]
    if kind == "sel":
        return select(scrapes[i][1], tree)
    if kind in ("rate", "increase"):
        _, sel, window = tree
        t = scrapes[i][0]
        j = i
        while j > 0 and t - scrapes[j - 1][0] <= window + 1e-6:
            j -= 1
        if j == i:
            return {}
        now, then, dt = select(scrapes[i][1], sel), select(scrapes[j][1], sel), t - scrapes[j][0]
        out = {}
        for ls, v in now.items():
            d = v - then.get(ls, 0.0)
            d = v if d < 0 else d  # a counter that went back restarted
            out[ls] = d / dt if kind == "rate" else d
        return out
    if kind == "agg":
        _, op, by, inner = tree
        out = {}
        for ls, v in evaluate(inner, scrapes, i).items():
            key = tuple((k, x) for k, x in ls if k in by)
            out[key] = out.get(key, 0.0 if op == "sum" else -math.inf)
            out[key] = out[key] + v if op == "sum" else max(out[key], v)
        return out
    if kind == "quantile":
        _, q, inner = tree
        groups = {}
        for ls, v in evaluate(inner, scrapes, i).items():
            d = dict(ls)
            le = float(d.pop("le"))
            groups.setdefault(tuple(sorted(d.items())), []).append((le, v))
        out = {}
        for key, buckets in groups.items():
            buckets.sort()
            total = buckets[-1][1]
            if total <= 0:
                continue
            rank, lo, below = q * total, 0.0, 0.0
            for le, n in buckets:
                if n >= rank:
                    out[key] = (buckets[-2][0] if math.isinf(le) else
                                lo + (le - lo) * ((rank - below) / (n - below) if n > below else 1.0))
                    break
                lo, below = le, n
        return out
    raise ValueError(f"unknown node {kind}")


def legend(fmt, labels):
    d = dict(labels)
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: d.get(m.group(1), ""), fmt) or "value"


def substitute(expr, window, command):
    expr = expr.replace("$__rate_interval", f"{window}s")
    expr = expr.replace('"$command"', f'"{command}"')
    return re.sub(r'"\$\w+"', '".*"', expr)


# --- the workload ------------------------------------------------------------------

def workload(seconds, step, save):
    sys.path.insert(0, os.path.join(TOP, "tests/integ"))
    os.environ.setdefault("SRCDIR", TOP)
    import harness
    from harness import Proxy, Samba, random_file, scrape

    smb = Samba()
    work = tempfile.mkdtemp(prefix="render-", dir=harness.TMPDIR)
    random_file(os.path.join(smb.share, "big.bin"), 32)
    random_file(os.path.join(work, "up.bin"), 8)
    px = Proxy(smb.addr, "--allow", "127.0.0.1/32", "--allow", "127.0.0.3/32", "--max-conns-per-source", "8",
               stats=True)
    t0 = time.monotonic()
    end = t0 + seconds
    stop = threading.Event()
    sessions = []

    def clients_now():
        f = (time.monotonic() - t0) / seconds
        return 1 if f < 0.25 else 3 if f < 0.7 else 1 if f < 0.9 else 0

    def client(k):
        n = 0
        while not stop.is_set() and time.monotonic() < end:
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
        while not stop.is_set() and time.monotonic() < end:
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
    scrapes = []
    try:
        while time.monotonic() < end + 3 * step:
            t = time.monotonic()
            page = scrape(px.stats_port)
            scrapes.append((t - t0, [[n, [list(x) for x in ls], v] for (n, ls), v in page.items()]))
            time.sleep(max(0.0, step - (time.monotonic() - t)))
    finally:
        stop.set()
        for t in threads:
            t.join(300)
        px.stop(check_fds=False)
        smb.stop()
        shutil.rmtree(work, ignore_errors=True)
    failed = sorted({x for x in sessions if x != "ok"})
    print(f"render: {len(sessions)} smbclient sessions, {sessions.count('ok')} whole"
          + "".join(f"\n  failed: {x}" for x in failed), file=sys.stderr)
    if save:
        with open(save, "w") as f:
            json.dump(scrapes, f)
    return scrapes


def load(path):
    with open(path) as f:
        return json.load(f)


def pages(raw):
    return [(t, {(n, tuple(tuple(x) for x in ls)): v for n, ls, v in page}) for t, page in raw]


# --- the picture -------------------------------------------------------------------

UNITS = {"Bps": (1e6, "MB/s"), "s": (1e-3, "ms"), "cps": (1, "per second"), "ops": (1, "per second"),
         "short": (1, ""), "reqps": (1, "per second")}


def render(scrapes, out, window, command):
    with open(DASHBOARD) as f:
        dash = json.load(f)
    by_title = {p["title"]: p for p in dash["panels"]}
    tmp = tempfile.mkdtemp(prefix="render-plot-")
    script = ["set terminal pngcairo size 1500,1150 font 'DejaVu Sans,9'", f"set output '{out}'",
              "set multiplot layout 3,3 title \"smbsplice dashboard: a rendering of contrib/grafana/smbsplice.json's "
              f"queries over real data ({len(scrapes)} scrapes, {window} s rate window)\" font ',11'",
              "set termoption noenhanced", "set key top left font ',8' samplen 2", "set grid lc rgb '#dddddd'", "set xlabel 'seconds'",
              "set border lc rgb '#555555'"]
    for k, title in enumerate(PANELS):
        p = by_title[title]
        scale, ylabel = UNITS.get(p["fieldConfig"]["defaults"].get("unit", "short"), (1, ""))
        shown = title.replace("$command", command)
        script += ["unset logscale", "set yrange [*:*]", "set autoscale", "set xrange [*:*]", "unset ytics",
                   "set ytics", "set style fill transparent solid 0.12", "unset colorbox",
                   f"set title \"{shown}\" font ',10'", f"set ylabel '{ylabel}'"]
        if p["type"] == "heatmap":
            script += heatmap(p, scrapes, window, command, tmp, k)
            continue
        right = {o["matcher"]["options"] for o in p["fieldConfig"].get("overrides", ())
                 if {"id": "custom.axisPlacement", "value": "right"} in o["properties"]}
        script += ["set y2tics" if right else "unset y2tics"]
        plots = []
        for t in p["targets"]:
            tree = Parser(substitute(t["expr"], window, command)).parse()
            series = {}
            for i, (ts, _) in enumerate(scrapes):
                for ls, v in evaluate(tree, scrapes, i).items():
                    series.setdefault(ls, []).append((ts, v / scale))
            for ls, pts in sorted(series.items()):
                path = os.path.join(tmp, f"p{k}-{len(plots)}.dat")
                with open(path, "w") as f:
                    f.writelines(f"{a:.2f} {b:.6g}\n" for a, b in pts)
                name = legend(t["legendFormat"], ls)
                axes = "x1y2" if name in right else "x1y1"
                plots.append(f"'{path}' using 1:2 axes {axes} with lines lw 1.5 title \"{name}\"")
        script.append("plot " + ", ".join(plots) if plots else "plot NaN title 'no data'")
    script.append("unset multiplot")
    path = os.path.join(tmp, "plot.gp")
    with open(path, "w") as f:
        f.write("\n".join(script) + "\n")
    subprocess.run(["gnuplot", path], check=True, timeout=120)
    print(f"render: wrote {out} from {len(scrapes)} scrapes", file=sys.stderr)


def heatmap(p, scrapes, window, command, tmp, k):
    """The repeated heatmap panel, for one command: increase() of each
    bucket (not cumulative: each minus the one below), per scrape."""
    tree = Parser(substitute(p["targets"][0]["expr"], window, command)).parse()
    rows, bounds = [], []
    for i, (ts, _) in enumerate(scrapes):
        vec = {float(dict(ls)["le"]): v for ls, v in evaluate(tree, scrapes, i).items()}
        if vec:
            bounds = sorted(vec)
            cum = [vec[b] for b in bounds]
            rows.append((ts, [c - (cum[j - 1] if j else 0.0) for j, c in enumerate(cum)]))
    if not rows:
        return ["plot NaN title 'no data'"]
    # Only the bucket rows that ever hold anything, and one either side.
    used = [j for j in range(len(bounds)) if any(r[j] > 0 for _, r in rows)]
    lo, hi = max(0, used[0] - 1), min(len(bounds) - 1, used[-1] + 1)
    path = os.path.join(tmp, f"p{k}.dat")
    with open(path, "w") as f:
        for ts, r in rows:
            for j in range(lo, hi + 1):
                f.write(f"{ts:.2f} {j - lo} {r[j]:.6g}\n")
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
    ap.add_argument("--step", type=float, default=2.0, help="seconds between scrapes")
    ap.add_argument("--window", type=int, default=10, help="the rate() window, seconds ($__rate_interval)")
    ap.add_argument("--heatmap-command", default="read")
    ap.add_argument("--save", help="write the scrapes to this file")
    ap.add_argument("--load", help="draw from scrapes saved with --save")
    ap.add_argument("--smbsplice", help="the smbsplice to run (default: the build tree's proxy/smbsplice)")
    a = ap.parse_args()
    if a.smbsplice:
        os.environ["SMBSPLICE"] = a.smbsplice
    raw = load(a.load) if a.load else workload(a.seconds, a.step, a.save)
    render(pages(raw), a.out, a.window, a.heatmap_command)


if __name__ == "__main__":
    main()
