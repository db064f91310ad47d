"""report.py - turn bench.py's results.json into results.md and PNG plots.

Theory of operation: every number in the report is a median over the runs
of one contestant in one run of the harness, shown with its min and max;
every ratio divides two such medians from the same run. The targets table
at the end recomputes the ratios the project promises and marks each met
or missed. The parallel tables add each client's own throughput (the
slowest and the fastest) and how smbsplice's workers shared the
connections; with a baseline binary, a before/after table sets each
`base:` contestant beside its namesake. The namespace topology's tables
take direct-ns (the client inside the namespace) as the reference and
compare with pasta; the obs table sets --trace and --no-latency beside
plain smbsplice; the office tables give each workload's rate against
the reference, haproxy (and pasta) with the latency per operation; the
SMB-over-QUIC tables (contrib/bench/quic.py's table()) the pairs of
fronts, the AES-GCM floor and the QUIC pair's goals. Each
has its own targets table. The header says how long each part took. Plots are drawn with gnuplot (Debian: gnuplot-nox) when it is
installed; the Markdown is written either way.

Usage: python3 report.py DIR [DOC]
Re-renders DIR/results.json; with DOC (docs/benchmarks.md), also embeds the
result there.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

GIB = 1 << 30


def med(rs, key):
    vals = [r[key] for r in rs if key in r]
    return statistics.median(vals) if vals else None


def spread(rs, key, fmt="{:.2f}"):
    vals = sorted(r[key] for r in rs if key in r)
    if not vals:
        return "–"
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ({fmt.format(vals[0])}–{fmt.format(vals[-1])})"


def ok_runs(rs):
    """The runs that did not fail (bench.py keeps a failed one as {"failed": why})."""
    return [r for r in rs if "failed" not in r]


def with_failures(name, rs):
    """The contestant's name, with how many of its runs failed, if any."""
    n = len(rs) - len(ok_runs(rs))
    return f"{name} ({n} of {len(rs)} runs failed)" if n else name


def failed_row(name, rs, cols, lead=None):
    """A row for a contestant none of whose runs succeeded, after a first
    cell `lead` (the workload) in tables that have one."""
    first = f"| {lead} " if lead else ""
    return f"{first}| {with_failures(name, rs)} | " + " | ".join(["–"] * cols) + " |"


def ratio(a, b):
    return a / b if a and b else None


def fmt_ratio(x):
    return f"{x:.2f}×" if x else "–"


def cpu_per_gib(rs):
    vals = [r["proxy_cpu"] / (r["bytes"] / GIB) for r in rs if r.get("bytes") and r.get("proxy_cpu") is not None]
    return statistics.median(vals) if vals else None


def cpu_spread(rs):
    """Proxy CPU s/GiB as median (min–max) over the runs."""
    return spread([{"c": r["proxy_cpu"] / (r["bytes"] / GIB)} for r in rs
                   if r.get("bytes") and r.get("proxy_cpu") is not None], "c")


def busy_per_gib(rs):
    vals = [r["busy"] / (r["bytes"] / GIB) for r in rs if r.get("bytes")]
    return statistics.median(vals) if vals else None


def throughput_table(res, key, unit, title, base="direct", other="haproxy"):
    """A table of one throughput workload with costs, ratios to the
    reference (direct, or direct-ns in the namespace topology) and to
    `other` (haproxy, or pasta), and the machine's extra core-seconds per
    GiB over the reference."""
    direct = med(res.get(base, []), key)
    hap = med(res.get(other, []), key)
    base_busy = busy_per_gib(res.get(base, [])) if res.get(base) else None
    lines = [f"**{title}** ({unit}; median (min–max))", "",
             f"| Contestant | {unit} | × {base} | × {other} | proxy CPU s/GiB | machine core-s/GiB over {base} "
             "| peak RSS MiB |",
             "|---|---|---|---|---|---|---|"]
    for name, all_rs in res.items():
        rs = ok_runs(all_rs)
        if not rs:
            if all_rs:
                lines.append(failed_row(name, all_rs, 6))
            continue
        m = med(rs, key)
        cpu = cpu_per_gib(rs)
        busy = busy_per_gib(rs)
        proxy = name != base
        extra = busy - base_busy if proxy and busy is not None and base_busy is not None else None
        cpu_s = f"{cpu:.2f}" if proxy and cpu is not None else ""
        extra_s = f"{extra:.2f}" if extra is not None else ""
        rss_s = f"{med(rs, 'rss_mib'):.1f}" if proxy else ""
        lines.append(f"| {with_failures(name, all_rs)} | {spread(rs, key)} | {fmt_ratio(ratio(m, direct))} | "
                     f"{fmt_ratio(ratio(m, hap))} | {cpu_s} | {extra_s} | {rss_s} |")
    return "\n".join(lines) + "\n"


def worker_split(name, rs):
    """How smbsplice's workers shared the connections, per run: "5/3, 4/4"
    (worker 0 first); empty for fronts that do not log it."""
    runs = [r["worker_conns"] for r in rs if r.get("worker_conns")]
    if not runs:
        return ""
    m = re.search(r"--workers (\d+)", name)
    n = int(m.group(1)) if m else max(int(w) for run in runs for w in run) + 1
    return ", ".join("/".join(str(run.get(str(w), 0)) for w in range(n)) for run in runs)


def parallel_table(res, key, unit, title):
    """A table of one parallel workload: total throughput, the slowest and
    the fastest client, costs per GiB over all clients' bytes, and a line
    comparing smbsplice --workers 2 with --workers 1."""
    direct = med(res.get("direct", []), key)
    hap = med(res.get("haproxy", []), key)
    base_busy = busy_per_gib(res.get("direct", [])) if res.get("direct") else None
    lines = [f"**{title}** ({unit}; median (min–max))", "",
             f"| Contestant | total {unit} | × direct | × haproxy | slowest client | fastest client "
             "| proxy CPU s/GiB | machine core-s/GiB over direct | peak RSS MiB | connections per worker |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    extra = {}
    for name, all_rs in res.items():
        rs = ok_runs(all_rs)
        if not rs:
            if all_rs:
                lines.append(failed_row(name, all_rs, 9))
            continue
        m = med(rs, key)
        proxy = name != "direct"
        busy = busy_per_gib(rs)
        extra[name] = busy - base_busy if proxy and busy is not None and base_busy is not None else None
        cpu_s = cpu_spread(rs) if proxy else ""
        extra_s = f"{extra[name]:.2f}" if extra[name] is not None else ""
        rss_s = f"{med(rs, 'rss_mib'):.1f}" if proxy else ""
        lines.append(f"| {with_failures(name, all_rs)} | {spread(rs, key)} | {fmt_ratio(ratio(m, direct))} | "
                     f"{fmt_ratio(ratio(m, hap))} | {spread(rs, 'client_min')} | {spread(rs, 'client_max')} | "
                     f"{cpu_s} | {extra_s} | {rss_s} | {worker_split(name, rs)} |")
    w1, w2 = res.get("smbsplice+--workers 1", []), res.get("smbsplice+--workers 2", [])
    if w1 and w2:
        parts = [f"total {fmt_ratio(ratio(med(w2, key), med(w1, key)))}",
                 f"slowest client {fmt_ratio(ratio(med(w2, 'client_min'), med(w1, 'client_min')))}",
                 f"proxy CPU per GiB {fmt_ratio(ratio(cpu_per_gib(w2), cpu_per_gib(w1)))}"]
        a, b = extra.get("smbsplice+--workers 2"), extra.get("smbsplice+--workers 1")
        if a is not None and b is not None:
            parts.append(f"machine core-s per GiB over direct {fmt_ratio(a / b)}" if a > 0 and b > 0 else
                         f"machine core-s per GiB over direct {a:.2f} against {b:.2f}")
        lines += ["", "Workers 2 vs workers 1 (ratio of medians): " + ", ".join(parts) + "."]
    return "\n".join(lines) + "\n"


# Throughput workloads: results key, unit, title.
THROUGHPUT = (("bulk_up", "Gbit/s", "Bulk TCP up (loadgen, client to server)"),
              ("bulk_down", "Gbit/s", "Bulk TCP down"),
              ("tune_bulk", "Gbit/s", "Tuning: bulk TCP down through smbsplice, by pipe and buffer size"),
              ("get", "GB/s", "smbclient get of a {size} file"),
              ("put", "GB/s", "smbclient put of a {size} file"),
              ("get_encrypted", "GB/s", "smbclient get, SMB3 encryption"),
              ("tune_get", "GB/s", "Tuning: smbclient get through smbsplice, by pipe and buffer size"))
# The namespace topology's throughput workloads: ratios to direct-ns (the
# client inside the namespace) and to pasta.
NS_THROUGHPUT = (("ns_get", "GB/s", "Namespace topology: smbclient get of a {size} file"),
                 ("ns_put", "GB/s", "Namespace topology: smbclient put of a {size} file"),
                 ("ns_bulk_up", "Gbit/s", "Namespace topology: bulk TCP up (loadgen, client to server)"),
                 ("ns_bulk_down", "Gbit/s", "Namespace topology: bulk TCP down"))
PARALLEL = (("par_get", "GB/s", "Parallel: {gets} smbclient gets of a {mib} MiB file at once"),
            ("par_bulk_up", "Gbit/s", "Parallel: {streams} bulk TCP streams of {mib} MiB each up at once (loadgen)"),
            ("par_bulk_down", "Gbit/s", "Parallel: {streams} bulk TCP streams of {mib} MiB each down at once"))
PAR_DEFAULT = {"gets": 8, "streams": 4, "mib": 256}


def unit_key(unit):
    return "gbit" if unit == "Gbit/s" else "gbyte_s"


def baseline_table(r):
    """Each base: contestant beside its namesake, in every throughput
    workload that ran both: new ÷ base for throughput and proxy CPU."""
    rows = []
    for key, unit, title in THROUGHPUT + PARALLEL + NS_THROUGHPUT:
        res = r.get(key) or {}
        for name, rs in res.items():
            bs = res.get("base:" + name)
            if name.startswith("base:") or not rs or not bs:
                continue
            k = unit_key(unit)
            rows.append(f"| {title.split(' (')[0].format(size=SIZE, **r.get('par', PAR_DEFAULT))} | {name} | {spread(rs, k)} | {spread(bs, k)} | "
                        f"{fmt_ratio(ratio(med(rs, k), med(bs, k)))} | {cpu_spread(rs)} | {cpu_spread(bs)} | "
                        f"{fmt_ratio(ratio(cpu_per_gib(rs), cpu_per_gib(bs)))} |")
    rates = baseline_rates(r)
    if not rows and not rates:
        return ""
    b = r.get("baseline", {})
    out = [f"**Before and after** (this build against `base:`, {b.get('path', '?')}, "
           f"{b.get('version') or 'version unknown'}; median (min–max) of interleaved runs; "
           "new ÷ base: throughput above 1 and CPU below 1 favour this build)", ""]
    if rows:
        out += ["| Workload | Contestant | throughput | base: throughput | new ÷ base | proxy CPU s/GiB "
                "| base: proxy CPU s/GiB | new ÷ base |",
                "|---|---|---|---|---|---|---|---|"] + rows + [""]
    if rates:
        out += ["| Workload | Contestant | rate | base: rate | new ÷ base |", "|---|---|---|---|---|"] + rates
    return "\n".join(out) + "\n"


def baseline_rates(r):
    """Rows of each base: contestant beside its namesake in the
    small-message and office workloads: echo (its own workload), and each
    office workload on each topology."""
    rows = []
    sets = [("echo", "ops/s", r.get("echo") or {})]
    for topo in ("loopback", "ns"):
        o = (r.get("office") or {}).get(topo) or {}
        if o.get("echo_reused"):
            o = {k: v for k, v in o.items() if k != "echo"}
        sets += [(f"{name}, {TOPO_NAME[topo]}", unit, o.get(key) or {}) for key, name, unit in OFFICE]
    for title, unit, res in sets:
        for name, all_rs in res.items():
            rs, bs = ok_runs(all_rs), ok_runs(res.get("base:" + name, []))
            if name.startswith("base:") or not rs or not bs:
                continue
            rows.append(f"| {title} | {name} | {spread(rs, 'rate', '{:.0f}')} {unit} | "
                        f"{spread(bs, 'rate', '{:.0f}')} {unit} | {fmt_ratio(ratio(med(rs, 'rate'), med(bs, 'rate')))} |")
    return rows


def rr_table(res, title="Round trips", trips=200):
    # results from before loadgen timed the first trip apart have no setup_us
    apart = any("setup_us" in x for rs in res.values() for x in rs)
    how = ", after one untimed first trip that carries the connection's set-up, shown apart" if apart else ""
    lines = [f"**{title}** (rr: 12 message sizes from the pasta cork bug, {trips} trips each{how}; µs, median "
             "(min–max) of runs)", "", "| Contestant | mean | p99 | worst | first trip (set-up) |",
             "|---|---|---|---|---|"]
    for name, all_rs in res.items():
        rs = ok_runs(all_rs)
        if rs:
            setup = spread(rs, "setup_us", "{:.0f}") if med(rs, "setup_us") else "–"
            lines.append(f"| {with_failures(name, all_rs)} | {med(rs, 'mean_us'):.0f} | {med(rs, 'p99_us'):.0f} | "
                         f"{spread(rs, 'worst_us', '{:.0f}')} | {setup} |")
        elif all_rs:
            lines.append(failed_row(name, all_rs, 4))
    return "\n".join(lines) + "\n"


def echo_table(res):
    direct, hap = med(res.get("direct", []), "ops_s"), med(res.get("haproxy", []), "ops_s")
    lines = ["**smb2.bench.echo** (smbtorture, 4 connections, 5 s; operations/s)", "",
             "| Contestant | ops/s | × direct | × haproxy |", "|---|---|---|---|"]
    for name, all_rs in res.items():
        rs = ok_runs(all_rs)
        if rs:
            m = med(rs, "ops_s")
            lines.append(f"| {with_failures(name, all_rs)} | {spread(rs, 'ops_s', '{:.0f}')} | "
                         f"{fmt_ratio(ratio(m, direct))} | {fmt_ratio(ratio(m, hap))} |")
        elif all_rs:
            lines.append(failed_row(name, all_rs, 3))
    return "\n".join(lines) + "\n"


# The office workloads: results key, name, unit of the rate.
OFFICE = (("mget", "mget", "files/s"),
          ("mput", "mput", "files/s"),
          ("list", "ls", "entries/s"),
          ("contention", "path-contention", "ops/s"),
          ("echo", "echo", "ops/s"))
TOPO_NAME = {"loopback": "loopback", "ns": "namespace topology"}
FLOOR = "sockfloor"     # bench.py's in-kernel forwarder: the floor
SIZE = "1 GiB"          # get, put and bulk transfers: --mib, set by write()


def reference(topo):
    return "direct-ns" if topo == "ns" else "direct"


def fmt_us(x):
    return "–" if x is None else f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def office_table(o, topo):
    """The office workloads on one topology: each contestant's rate, its
    ratios to the reference, to haproxy (and to pasta in the namespace),
    and the latency per operation."""
    res_all = o.get(topo) or {}
    base = reference(topo)
    others = ["haproxy"] + (["pasta"] if topo == "ns" else [])
    if any(FLOOR in (res_all.get(k) or {}) for k, _, _ in OFFICE):
        others.append(FLOOR)
    mib = o.get("bytes", 0) / (1 << 20)
    lines = [f"**Office workloads, {TOPO_NAME[topo]}** ({o.get('files', 0):,} files of 1 KiB to 1 MiB, "
             f"{mib:.0f} MiB in all, for mget and mput; a directory of {o.get('entries', 0):,} entries for ls; "
             f"smbtorture with 4 connections for {o.get('seconds')} s; rate median (min–max), latencies in µs, "
             "medians of the runs' figures)", "",
             f"| Workload | Contestant | rate | × {base} | " + " | ".join(f"× {x}" for x in others) +
             " | mean per op | p99 per op | worst per op |",
             "|---|---|---|---|" + "---|" * len(others) + "---|---|---|"]
    for key, name, unit in OFFICE:
        res = res_all.get(key) or {}
        ref = med(res.get(base, []), "rate")
        for front, all_rs in res.items():
            rs = ok_runs(all_rs)
            if not rs:
                if all_rs:
                    lines.append(failed_row(front, all_rs, 5 + len(others), lead=name))
                continue
            m = med(rs, "rate")
            mean = med(rs, "per_op_us") if key in ("mget", "mput", "list") else med(rs, "mean_us")
            worst = spread(rs, "worst_us", "{:.0f}") if med(rs, "worst_us") else "–"
            lines.append(f"| {name} | {with_failures(front, all_rs)} | {spread(rs, 'rate', '{:.0f}')} {unit} | {fmt_ratio(ratio(m, ref))} | "
                         + " | ".join(fmt_ratio(ratio(m, med(res.get(x, []), "rate"))) for x in others) +
                         f" | {fmt_us(mean)} | {fmt_us(med(rs, 'p99_us'))} | {worst} |")
    notes = ["mget and mput: files per second of the smbclient session, from its connect() to its exit (its "
             "start-up, the same for every contestant, is left out: contrib/bench/filetimes.c stamps both); "
             "mean per op is that session over the files; p99 and worst are of the gaps between the client's "
             "local opens of consecutive files, each one file's whole cycle (the first and last files' are left "
             "out). ls: entries per second of one session listing the directory; mean per op is that session "
             "over the entries. path-contention: opens plus closes per second of one path, 4 connections; "
             "mean (over both) and worst are smbtorture's own, which gives no percentiles; likewise echo."]
    if res_all.get("echo_reused"):
        notes.append("echo: the smb2.bench.echo workload's runs above.")
    return "\n".join(lines + [""] + notes) + "\n"


def obs_table(r):
    """What --trace and the latency histograms cost: each feature's
    contestant beside plain smbsplice (a base: twin beside
    base:smbsplice), as ratios of medians; for echo, the proxy's CPU per
    echo (a request and its response)."""
    g, e = r.get("obs_get") or {}, r.get("obs_echo") or {}
    if not g and not e:
        return ""
    o = r.get("obs") or {}
    lines = [f"**What the observability features cost** (each beside plain smbsplice, {o.get('runs', '?')} "
             f"interleaved runs; smbsplice-trace: `--trace` to a file in {o.get('trace_dir', '?')}, on disk, "
             "default rotation; smbsplice-nolat: `--no-latency`, the histograms off; median (min–max); "
             "proxy CPU per GiB for the get, per echo for echo)", "",
             "| Workload | Contestant | rate | × smbsplice | proxy CPU | × smbsplice | trace file |",
             "|---|---|---|---|---|---|---|"]

    def cpu_of(rs, key):
        if key == "gbyte_s":
            return cpu_per_gib(rs), cpu_spread(rs), "s/GiB"
        vals = [{"c": x["proxy_cpu"] / x["ops"] * 1e6} for x in rs if x.get("ops")]
        return (med(vals, "c"), spread(vals, "c", "{:.1f}"), "µs/echo") if vals else (None, "–", "")

    for title, res, key, unit, fmt in ((f"smbclient get, {SIZE}", g, "gbyte_s", "GB/s", "{:.2f}"),
                                       ("smb2.bench.echo", e, "ops_s", "ops/s", "{:.0f}")):
        for name, all_rs in res.items():
            rs = ok_runs(all_rs)
            if not rs:
                if all_rs:
                    lines.append(failed_row(name, all_rs, 5, lead=title))
                continue
            ref = "base:smbsplice" if name.startswith("base:") else "smbsplice"
            base = ok_runs(res.get(ref, []))
            cpu, cpu_s, cpu_u = cpu_of(rs, key)
            bcpu = cpu_of(base, key)[0] if base else None
            tb = med(rs, "trace_bytes")
            x = fmt_ratio(ratio(med(rs, key), med(base, key))) if name != ref else ""
            cx = fmt_ratio(ratio(cpu, bcpu)) if name != ref else ""
            lines.append(f"| {title} | {with_failures(name, all_rs)} | {spread(rs, key, fmt)} {unit} | {x} | "
                         f"{cpu_s} {cpu_u} | {cx} | {f'{tb / 1e6:.1f} MB' if tb is not None else ''} |")
    return "\n".join(lines) + "\n"


def obs_targets(r, row):
    """The targets: the trace costs under 5% of the get's
    throughput and proxy CPU, the histograms under 3% of the echo rate."""
    g, e = r.get("obs_get") or {}, r.get("obs_echo") or {}
    sp, tr = ok_runs(g.get("smbsplice", [])), ok_runs(g.get("smbsplice-trace", []))
    if sp and tr:
        x = ratio(med(tr, "gbyte_s"), med(sp, "gbyte_s"))
        c = ratio(cpu_per_gib(tr), cpu_per_gib(sp))
        if x and c:
            row(f"--trace: smbclient {SIZE} get", f"{x:.2f}× the throughput, {c:.2f}× the proxy CPU per GiB",
                "≥ 0.95× and ≤ 1.05×", x >= 0.95 and c <= 1.05)
    on, off = ok_runs(e.get("smbsplice", [])), ok_runs(e.get("smbsplice-nolat", []))
    if on and off:
        x = ratio(med(on, "ops_s"), med(off, "ops_s"))
        if x:
            row("latency histograms: smb2.bench.echo", f"{x:.2f}× the rate with --no-latency", "≥ 0.97×",
                x >= 0.97)


def sweep_table(sweep):
    """Per READ size: bandwidth, mean and p99 latency as ratios to copy-only
    (threshold off), like the matrix of the ksmbd splice RFC."""
    ths = [k.split()[-1] for k in next(iter(sweep.values())) if k.startswith("smbsplice")]
    lines = ["**READ-size sweep** (one synchronous reader, libsmbclient; ratios to threshold off, "
             "i.e. copy only: BW above 1 and latency below 1 are better; `S` where that threshold splices "
             "that size)", "",
             "| READ size | direct MiB/s | off MiB/s | " + " | ".join(f"{t}: BW / mean / p99" for t in ths[1:]) + " |",
             "|---|---|---|" + "---|" * (len(ths) - 1)]
    for size, res in sweep.items():
        base = res.get("smbsplice+--read-threshold off", [])
        b_bw, b_mean, b_p99 = med(base, "mib_s"), med(base, "mean_us"), med(base, "p99_us")
        cells = []
        for t in ths[1:]:
            rs = res.get(f"smbsplice+--read-threshold {t}", [])
            spl = int(size) >= parse_size(t)
            bw, mean, p99 = ratio(med(rs, "mib_s"), b_bw), ratio(med(rs, "mean_us"), b_mean), \
                ratio(med(rs, "p99_us"), b_p99)
            cells.append(f"{'S ' if spl else ''}{bw:.2f} / {mean:.2f} / {p99:.2f}" if bw else "–")
        lines.append(f"| {int(size) >> 10} KiB | {med(res.get('direct', []), 'mib_s') or 0:.0f} | "
                     f"{b_bw or 0:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def parse_size(t):
    return int(t[:-1]) << (10 if t[-1] == "K" else 20) if t[-1] in "KM" else int(t)


def syscall_table(sc):
    if not sc:
        return ""
    lines = [f"**System calls per MiB moved** (strace -c on smbsplice --mode tcp, {SIZE} up and down)", "",
             "| Path | calls/MiB | top calls per MiB |", "|---|---|---|"]
    for name, v in sc.items():
        top = ", ".join(f"{k} {n:.1f}" for k, n in v["calls"].items())
        lines.append(f"| {name} | {v['per_mib']:.1f} | {top} |")
    return "\n".join(lines) + "\n"


def failures(rs):
    """Failed connections over all runs, by kind: "0" or "reset 3, timeout 1"."""
    kinds = ("refused", "reset", "eof", "timeout", "mismatch", "other")
    tot = {k: sum(int(x.get(f"fail_{k}", 0)) for x in rs) for k in kinds}
    lost = sum(int(x.get("lost", 0)) for x in rs)
    parts = [f"{k} {v}" for k, v in tot.items() if v] + ([f"lost while held {lost}"] if lost else [])
    return ", ".join(parts) or "0"


def scale_table(sc):
    """Memory per held connection and storm times, per count and front."""
    idle = sc.get("idle_s", 0)
    lines = [f"**Scale: N connections at once, one {sc.get('size', 0) >> 10} KiB round trip each, then held "
             "open** (connstorm; the front's VmRSS added per held connection, right after the round trips and "
             f"after {idle:g} s idle; times from the first connect(), connected meaning the client had the "
             "SYN-ACK; listen overflows: the machine's TcpExt.ListenOverflows during the storm, each a SYN or "
             "handshake ACK dropped for a full accept queue; median (min–max); failures summed over the runs)",
             "",
             "| N | Contestant | KiB/conn held | KiB/conn idle | × haproxy (idle) | base RSS MiB | all connected s "
             "| all round-tripped s | proxy CPU s | failures | listen overflows |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, res in sc.get("counts", {}).items():
        hap = med(res.get("haproxy", []), "kib_per_conn_idle")
        for name, rs in res.items():
            if not rs:
                continue
            m = med(rs, "kib_per_conn_idle")
            x = "" if name == "haproxy" else fmt_ratio(ratio(m, hap))
            lines.append(f"| {int(n):,} | {name} | {spread(rs, 'kib_per_conn', '{:.1f}')} | "
                         f"{spread(rs, 'kib_per_conn_idle', '{:.1f}')} | {x} | "
                         f"{med(rs, 'rss_base_kib') / 1024:.1f} | {spread(rs, 'connect_s')} | "
                         f"{spread(rs, 'done_s')} | {med(rs, 'proxy_cpu'):.2f} | {failures(rs)} | "
                         f"{med(rs, 'listen_overflows'):.0f} |")
    notes = [f"Not measured: {name} ({why})." for name, why in sc.get("failed", {}).items()]
    notes += [f"Failed run: {e}." for e in sc.get("errors", [])]
    for n, res in sc.get("counts", {}).items():
        for name, rs in res.items():
            for x in rs:
                if x.get("front_error"):
                    notes.append(f"{int(n):,}, {name}: {x['front_error']}.")
    if notes:
        lines += [""] + notes
    return "\n".join(lines) + "\n"


def scale_targets(sc, row):
    """The scale issue's targets at the largest count measured."""
    counts = sc.get("counts", {})
    if not counts:
        return
    n = max(counts, key=int)
    res = counts[n]
    hap = med(res.get("haproxy", []), "kib_per_conn_idle")
    ours = {name: rs for name, rs in res.items() if name.startswith("smbsplice") and rs}
    if hap and ours:
        xs = {name: med(rs, "kib_per_conn_idle") / hap for name, rs in ours.items()}
        val = "; ".join(f"{name} {x:.2f}× ({med(ours[name], 'kib_per_conn_idle'):.1f} vs {hap:.1f} KiB)"
                        for name, x in xs.items())
        row(f"RSS per connection at {int(n):,} ≤ 0.9× haproxy's", val + ", idle reading", "≤ 0.9× haproxy's",
            all(x <= 0.9 for x in xs.values()))
    if ours:
        hap_t = med(res.get("haproxy", []), "done_s")
        val = "; ".join(f"{name} {failures(rs)} failed, all in {med(rs, 'done_s'):.2f} s" for name, rs in ours.items())
        if hap_t:
            val += f" (haproxy {failures(res['haproxy'])} failed, all in {hap_t:.2f} s)"
        row(f"storm of {int(n):,} connections: all served", val, "no failed connection",
            all(failures(rs) == "0" for rs in ours.values()))


def targets_table(title, rows):
    if not rows:
        return ""
    return "\n".join([f"**{title}** (ratios of medians from this run)", "",
                      "| Measure | Measured | Target | |", "|---|---|---|---|"] + rows) + "\n"


def ns_targets(r):
    """The namespace topology's targets, against pasta."""
    rows = []

    def row(what, val, target, ok):
        rows.append(f"| {what} | {val} | {target} | {ok if isinstance(ok, str) else 'met' if ok else 'missed'} |")

    g = r.get("ns_get") or {}
    sp, pa, d = (ok_runs(g.get(n, [])) for n in ("smbsplice", "pasta", "direct-ns"))
    get_target = "≥ 1.1× pasta's throughput, ≤ 0.8× its added machine CPU per GiB (over direct-ns)"
    if g.get("smbsplice") and g.get("pasta") and not (sp and pa):
        who = "smbsplice" if not sp else "pasta"
        row(f"smbclient {SIZE} get through smbsplice", f"{who} failed every run", get_target,
            False if who == "smbsplice" else "unclear")
    if sp and pa:
        x = ratio(med(sp, "gbyte_s"), med(pa, "gbyte_s"))
        val, ok = f"{x:.2f}× pasta's throughput", x >= 1.1
        if d:
            base = busy_per_gib(d)
            a, b = busy_per_gib(sp) - base, busy_per_gib(pa) - base
            if b > 0:
                val += f", {a / b:.2f}× pasta's added machine CPU per GiB ({a:.2f} against {b:.2f} core-s)"
                ok = ok and a <= 0.8 * b
            else:
                val += f"; added machine CPU per GiB {a:.2f} against pasta's {b:.2f} core-s: no ratio"
                ok = "unclear"
        else:
            ok = "unclear"
        row(f"smbclient {SIZE} get through smbsplice", val, get_target, ok)
    for dn in ("up", "down"):
        res = r.get(f"ns_bulk_{dn}") or {}
        a, b = med(res.get("smbsplice-tcp", []), "gbit"), med(res.get("pasta", []), "gbit")
        if a and b:
            smb = med(res.get("smbsplice", []), "gbit")
            extra = f" (smb mode {smb / b:.2f}×)" if smb else ""
            row(f"bulk TCP {dn} (tcp mode)", f"{a / b:.2f}× pasta{extra}", "≥ 1.0× pasta", a >= b)
    rr = r.get("ns_rr") or {}
    worst = [med(rs, "worst_us") for n, rs in rr.items() if n.startswith("smbsplice")]
    worst = [w for w in worst if w]
    if worst:
        pw = med(rr.get("pasta", []), "worst_us")
        pw_s = f" (pasta {pw / 1000:.1f} ms)" if pw else ""
        row("worst round trip through smbsplice, 8 KiB and default pipes", f"{max(worst) / 1000:.2f} ms{pw_s}",
            "≤ 1 ms", max(worst) <= 1000)
    fails = sum(len(rs) - len(ok_runs(rs)) for k, _, _ in NS_THROUGHPUT + (("ns_rr", "", ""),)
                for n, rs in (r.get(k) or {}).items() if n.startswith("smbsplice"))
    if fails:
        row("runs through smbsplice that failed", f"{fails} (see Failed runs)", "none", False)
    return targets_table("Targets: namespace topology", rows)


def floor_note(res, key, base):
    """The note ' (kernel floor R×)': what the in-kernel forwarder reached
    on the same workload against base, so that a target no forwarder can
    meet shows as such."""
    w = res.get(key) or {}
    v = ratio(med(w.get(FLOOR, []), "rate"), med(w.get(base, []), "rate"))
    return f" (kernel floor {v:.2f}×)" if v else ""


def office_targets(r):
    """The office targets, per topology: every workload ≥ 1.15× haproxy,
    small-message rates within 10% of the reference, p99 time per file
    ≤ 1.3× the reference's."""
    rows = []
    o = r.get("office") or {}

    def row(what, val, target, ok):
        rows.append(f"| {what} | {val} | {target} | {'met' if ok else 'missed'} |")

    for topo in ("loopback", "ns"):
        res = o.get(topo)
        if not res:
            continue
        base, where = reference(topo), TOPO_NAME[topo]

        def x(key, field, other):
            w = res.get(key) or {}
            return ratio(med(w.get("smbsplice", []), field), med(w.get(other, []), field))
        xs = [(name, x(key, "rate", "haproxy")) for key, name, _ in OFFICE]
        xs = [(n, v) for n, v in xs if v]
        if xs:
            row(f"office, {where}: every workload through smbsplice", ", ".join(f"{n} {v:.2f}×" for n, v in xs),
                "≥ 1.15× haproxy each", all(v >= 1.15 for _, v in xs))
        ys = [(key, name, x(key, "rate", base)) for key, name, _ in OFFICE if key in ("contention", "echo")]
        ys = [(k, n, v) for k, n, v in ys if v]
        if ys:
            row(f"office, {where}: small-message rate", ", ".join(f"{n} {v:.2f}× {base}{floor_note(res, k, base)}"
                                                                  for k, n, v in ys),
                f"≥ 0.9× {base} each", all(v >= 0.9 for _, _, v in ys))
        fails = sum(len(rs) - len(ok_runs(rs)) for key, _, _ in OFFICE
                    for n, rs in (res.get(key) or {}).items() if n.startswith("smbsplice"))
        if fails:
            row(f"office, {where}: runs through smbsplice that failed", f"{fails} (see Failed runs)", "none",
                False)
        zs = [(name, x(key, "p99_us", base)) for key, name, _ in OFFICE if key in ("mget", "mput")]
        zs = [(n, v) for n, v in zs if v]
        if zs:
            row(f"office, {where}: p99 time per file (mget, mput)", ", ".join(f"{n} {v:.2f}× {base}'s"
                                                                             for n, v in zs),
                f"≤ 1.3× {base}'s each", all(v <= 1.3 for _, v in zs))
    return targets_table("Targets: office workloads", rows)


def targets(r):
    """The issue's targets, each as measured ratio and met/missed."""
    rows = []

    def row(what, val, target, ok):
        rows.append(f"| {what} | {val} | {target} | {'met' if ok else 'missed'} |")

    def m(w, name, key):
        return med(r.get(w, {}).get(name, []), key)

    g_sp, g_d, g_h = m("get", "smbsplice", "gbyte_s"), m("get", "direct", "gbyte_s"), m("get", "haproxy", "gbyte_s")
    if g_sp and g_d and g_h:
        row(f"smbclient {SIZE} get", f"{g_sp / g_d:.2f}× direct, {g_sp / g_h:.2f}× haproxy",
            "≥ 0.95× direct and ≥ 1.15× haproxy", g_sp / g_d >= 0.95 and g_sp / g_h >= 1.15)
    for d in ("up", "down"):
        a, b = m(f"bulk_{d}", "smbsplice-tcp", "gbit"), m(f"bulk_{d}", "haproxy", "gbit")
        if a and b:
            row(f"bulk TCP {d} (tcp mode)", f"{a / b:.2f}× haproxy", "≥ 1.3× haproxy", a / b >= 1.3)
    a, b = m("echo", "smbsplice", "ops_s"), m("echo", "haproxy", "ops_s")
    if a and b:
        row("smb2.bench.echo rate", f"{a / b:.2f}× haproxy", "≥ 1.15× haproxy", a / b >= 1.15)
    rr = r.get("rr", {})
    worst = [med(rr.get(n, []), "worst_us") for n in rr if n.startswith("smbsplice")]
    worst = [w for w in worst if w]
    if worst:
        row("worst round trip, 8 KiB and default pipes", f"{max(worst) / 1000:.2f} ms", "≤ 1 ms",
            max(worst) <= 1000)
    for d in ("up", "down"):
        res = r.get(f"bulk_{d}", {})
        sp, cp = cpu_per_gib(res.get("smbsplice-tcp", [])), cpu_per_gib(res.get("smbsplice-copy", []))
        if sp and cp:
            row(f"proxy CPU per GiB, splice vs copy path (bulk {d})", f"{sp / cp:.2f}×", "≤ 0.5×", sp / cp <= 0.5)
    for w in ("bulk_up", "bulk_down", "get"):
        res = r.get(w, {})
        if not res.get("direct"):
            continue
        base = busy_per_gib(res["direct"])
        name = "smbsplice-tcp" if w.startswith("bulk") else "smbsplice"
        a, b = busy_per_gib(res.get(name, [])), busy_per_gib(res.get("haproxy", []))
        if a is not None and b is not None and b - base > 0:
            x = (a - base) / (b - base)
            row(f"machine core-s per GiB over direct ({w.replace('_', ' ')})", f"{x:.2f}× haproxy's",
                "≤ 0.5× haproxy's", x <= 0.5)
    if r.get("scale"):
        scale_targets(r["scale"], row)
    obs_targets(r, row)
    return targets_table("Targets", rows)


def gnuplot(script, out):
    if not shutil.which("gnuplot"):
        return False
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode:
        print(f"report: gnuplot failed for {out}: {r.stderr}", file=sys.stderr)
    return r.returncode == 0


def plot_sweep(sweep, outdir):
    names = list(next(iter(sweep.values())).keys())
    dat = os.path.join(outdir, "sweep.dat")
    with open(dat, "w") as f:
        f.write("# size_kib " + " ".join(n.replace(" ", "_") for n in names) + "\n")
        for size, res in sweep.items():
            f.write(f"{int(size) >> 10} " + " ".join(f"{med(res.get(n, []), 'mib_s') or 0:.1f}" for n in names) + "\n")
    titles = [n.replace("smbsplice+--read-threshold ", "threshold ") for n in names]
    plots = ", ".join(f"'{dat}' using 1:{i + 2} with linespoints lw 2 title '{t}'" for i, t in enumerate(titles))
    ok = gnuplot(f"""set terminal png size 900,520
set output '{outdir}/sweep.png'
set title 'READ throughput vs READ size, one synchronous reader (smbsplice, by splice threshold)'
set logscale x 2
set xlabel 'READ size (KiB)'
set ylabel 'MiB/s'
set key left top
set grid
plot {plots}
""", "sweep.png")
    os.unlink(dat)
    return ok


# Distinct colours: gnuplot's default cycle has 8, the rr plot 9 lines.
COLORS = ("#000000", "#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a65628", "#f781bf",
          "#17becf", "#999999")


def plot_rr(rr, outdir):
    names = [n for n, rs in rr.items() if rs and rs[0].get("sizes")]
    if not names:
        return False
    labels = [f"{'req' if s['kind'] == 'request' else 'resp'} {int(s['size'])}" for s in rr[names[0]][0]["sizes"]]
    dat = os.path.join(outdir, "rr.dat")
    with open(dat, "w") as f:
        for i, lab in enumerate(labels):
            vals = []
            for n in names:
                per_run = [r["sizes"][i]["mean_us"] for r in rr[n] if len(r.get("sizes", [])) > i]
                vals.append(f"{statistics.median(per_run):.1f}" if per_run else "0")
            f.write(f"{i} \"{lab}\" " + " ".join(vals) + "\n")
    plots = ", ".join(f"'{dat}' using 1:{j + 3}:xtic(2) with linespoints lw 2 lc rgb '{COLORS[j % len(COLORS)]}' "
                      f"title '{n}'" for j, n in enumerate(names))
    ok = gnuplot(f"""set terminal png size 1000,560
set output '{outdir}/latency.png'
set title 'Mean round trip per message size (rr), by contestant'
set ylabel 'microseconds'
set logscale y
set xtics rotate by -40
set key outside right
set grid
plot {plots}
""", "latency.png")
    os.unlink(dat)
    return ok


def failed_runs(r):
    """Every failed run, by workload and contestant, with why: each is
    left out of its contestant's medians, and its table says how many."""
    titles = {k: t.split(" (")[0].format(size=SIZE, **r.get("par", PAR_DEFAULT))
              for k, _, t in THROUGHPUT + NS_THROUGHPUT + PARALLEL}
    titles.update(rr="Round trips", ns_rr="Namespace topology: round trips", echo="smb2.bench.echo",
                  obs_get="Observability costs: smbclient get", obs_echo="Observability costs: echo")
    out = []

    def scan(where, res):
        for front, runs in res.items():
            for i, run in enumerate(runs if isinstance(runs, list) else []):
                if isinstance(run, dict) and "failed" in run:
                    out.append(f"- {where}, {front}, run {i + 1}: {run['failed']}")
    for k, v in r.items():
        if k == "sweep":
            for size, res in v.items():
                scan(f"READ-size sweep, {int(size) >> 10} KiB", res)
        elif k == "office":
            for topo in TOPO_NAME:
                for wk, name, _ in OFFICE:
                    scan(f"office, {TOPO_NAME[topo]}, {name}", (v.get(topo) or {}).get(wk) or {})
        elif k in titles and isinstance(v, dict):
            scan(titles[k].format(**r.get("par", PAR_DEFAULT)), v)
    if not out:
        return ""
    return "\n".join(["**Failed runs** (each left out of its contestant's medians)", ""] + out) + "\n"


def timing_line(r):
    """How long each part of the run took, from bench.py's timers."""
    t = dict(r.get("timing") or {})
    if not t:
        return ""
    total = t.pop("total", None)
    parts = [f"{label} {secs / 60:.1f} min" for label, secs in t.items()]
    return (" Time taken: " + "; ".join(parts) + (f"; {total / 60:.1f} min in all" if total else "") +
            " (set-up included).")


def size_str(mib):
    """A transfer size for titles: "1 GiB", or "256 MiB"."""
    return f"{mib >> 10} GiB" if mib >= 1024 and mib % 1024 == 0 else f"{mib} MiB"


def wan_table(w):
    """The WAN part: one row per cell and workload, each contestant's
    median with its ratio to direct's (cubic on both ends)."""
    if not w or not w.get("cells"):
        return ""
    fronts = w["fronts"]
    head = "| RTT | loss | rate | workload | " + " | ".join(fronts) + " |"
    cap = w.get("cap")
    capped = (f" Get, put and mget stop at {cap:g} s and count what came by then (TCP bytes into the "
              f"client for a get, into smbd for a put; whole files for mget); * marks a median with capped "
              f"runs." if cap else "")
    rows = [f"### WAN (smbsplice-wanem, MTU {w['mtu']}, {w['mib']} MiB get and put, {w['runs']} runs per cell)\n",
            "Medians; in brackets the ratio to direct (cubic on both ends)." + capped + "\n", head,
            "|" + "---|" * (4 + len(fronts))]
    for c in w["cells"]:
        vals = [r["value"] for r in c["fronts"].get("direct", []) if "value" in r]
        base = statistics.median(vals) if vals else None
        cols = []
        for f in fronts:
            v = [r["value"] for r in c["fronts"].get(f, []) if "value" in r]
            bad = len(c["fronts"].get(f, [])) - len(v)
            if not v:
                cols.append("failed" if bad else "")
                continue
            m = statistics.median(v)
            star = "*" if any(r.get("capped") for r in c["fronts"].get(f, [])) else ""
            cols.append(f"{m:.2f}{star} {c['unit']}" + (f" ({m / base:.2f}x)" if base and f != "direct" else "") +
                        (f", {bad} failed" if bad else ""))
        rows.append(f"| {c['rtt']:g} ms | {c['loss']:g}% | {c['rate']:g} Mbit/s | {c['work']} | " +
                    " | ".join(cols) + " |")
    return "\n".join(rows) + "\n"


def write(r, outdir):
    global SIZE
    SIZE = size_str(r.get("mib", 1024))
    mi = r.get("machine", {})
    # the transfer size of bulk, get and put; the parallel titles give theirs
    sized = any(r.get(k) for k, _, _ in THROUGHPUT + NS_THROUGHPUT)
    parts = [f"Machine: {mi.get('cpus')} cores ({mi.get('model', '').strip()}), {mi.get('mem_gib')} GiB, "
             f"kernel {mi.get('kernel')}, {mi.get('samba')}, {mi.get('haproxy')}; {mi.get('date')}; "
             f"{r.get('runs')} interleaved runs per figure" + (f", {r.get('mib')} MiB transfers" if sized else "") +
             ". Loopback: client, server and proxy share the cores." +
             (" Namespace topology: smbd and the loadgen server run inside a network namespace the harness "
              "makes, on its loopback, reached from the host through pasta -t, smbsplice --backend-netns "
              "and haproxy's `namespace` option; direct-ns runs the client inside the namespace."
              if any(r.get(k) for k, _, _ in NS_THROUGHPUT) or (r.get("office") or {}).get("ns") else "") +
             (" Load average (1 min) {:.1f} at the start, {:.1f} at the end (the end counts this run's own "
              "clients and servers; other work on the machine counts in its busy time and slows every "
              "contestant).".format(*r["loadavg"])
              if r.get("loadavg") else "") + timing_line(r) + "\n"]
    # Each throughput table names the CPUs it ran on: its ratios hold for
    # that machine (issue 30: the order of haproxy and smbsplice on a get
    # depends on it).
    on = f", on {mi.get('cpus')} × {mi.get('model', '').strip() or 'unknown CPU'}"
    for key, unit, title in THROUGHPUT:
        if r.get(key):
            parts.append(throughput_table(r[key], unit_key(unit), unit, title.format(size=SIZE) + on))
    for key, unit, title in PARALLEL:
        if r.get(key):
            parts.append(parallel_table(r[key], unit_key(unit), unit, title.format(**r.get("par", PAR_DEFAULT))))
    parts.append(baseline_table(r))
    if r.get("rr"):
        parts.append(rr_table(r["rr"], trips=r.get("rr_trips", 200)))
    if r.get("echo"):
        parts.append(echo_table(r["echo"]))
    parts.append(obs_table(r))
    if (r.get("office") or {}).get("loopback"):
        parts.append(office_table(r["office"], "loopback"))
    for key, unit, title in NS_THROUGHPUT:
        if r.get(key):
            parts.append(throughput_table(r[key], unit_key(unit), unit, title.format(size=SIZE) + on,
                                          "direct-ns", "pasta"))
    if r.get("ns_rr"):
        parts.append(rr_table(r["ns_rr"], "Namespace topology: round trips", r.get("rr_trips", 200)))
    if (r.get("office") or {}).get("ns"):
        parts.append(office_table(r["office"], "ns"))
    if r.get("sweep"):
        parts.append(sweep_table(r["sweep"]))
    parts.append(syscall_table(r.get("syscalls")))
    if r.get("scale"):
        parts.append(scale_table(r["scale"]))
    parts.append(wan_table(r.get("wan")))
    if r.get("handover"):
        import handover
        parts.append(handover.table(r["handover"]))
    if r.get("quic"):
        import quic
        parts.append(quic.table(r["quic"]))
    if r.get("quicfield"):
        import quicfield
        parts.append(quicfield.table(r["quicfield"]))
    parts.append(failed_runs(r))
    parts.append(targets(r))
    parts.append(ns_targets(r))
    parts.append(office_targets(r))
    if r.get("sweep") and plot_sweep(r["sweep"], outdir):
        parts.append("![READ throughput vs READ size](sweep.png)\n")
    if r.get("rr") and plot_rr(r["rr"], outdir):
        parts.append("![Mean round trip per size](latency.png)\n")
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write("\n".join(p for p in parts if p))


BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def embed(doc, outdir):
    """Put results.md into doc (docs/benchmarks.md) between the bench
    markers, with the plots' paths made relative to doc's directory."""
    rel = os.path.relpath(outdir, os.path.dirname(os.path.abspath(doc)))
    with open(os.path.join(outdir, "results.md")) as f:
        body = f.read().replace("](sweep.png)", f"]({rel}/sweep.png)").replace(
            "](latency.png)", f"]({rel}/latency.png)")
    with open(doc) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        print(f"report: no {BEGIN} ... {END} in {doc}; not embedded", file=sys.stderr)
        return
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(doc, "w") as f:
        f.write(f"{head}{BEGIN}\n{body}\n{END}{tail}")


if __name__ == "__main__":
    d = sys.argv[1]
    with open(os.path.join(d, "results.json")) as f:
        write(json.load(f), d)
    if len(sys.argv) > 2:
        embed(sys.argv[2], d)
