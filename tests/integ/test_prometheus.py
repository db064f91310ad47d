"""A real Prometheus (Debian's prometheus) scrapes smbsplice while SMB
traffic runs through it, and every query of contrib/grafana/smbsplice.json
returns series through its HTTP API.

A throwaway Samba behind smbsplice, whose one listener is named
`my "files", east\\x` (a quote, a comma and a backslash, which must go out
escaped: issue 31 found one such name made Prometheus refuse every
scrape); smbclient sessions (get, ls, now and then a put) through it in a
loop; prometheus scraping /metrics every second (tests/integ/promserver.py).
Once it has five scrapes in a row that it took (up is 1):

- the listener label reads back in Prometheus as the section name;
- each of the dashboard's panel queries, with every variable on "All"
  (.*, the dashboard's allValue) and $__rate_interval as 10 s (Grafana
  takes at least four scrape intervals; ten leave room for a loaded
  machine's late scrapes), parses (GET /api/v1/query answers success)
  and returns at least one series;
- each template variable's label_values() has at least one value
  (GET /api/v1/label/NAME/values with its selector as match[]);
- the bytes moved are a rate above zero, and the p99 of the read
  latency is a number: the data flowed, not only the names.

prometheus is killed at the end, its database with it.
"""
import os
import re
import threading
import time

import harness
from harness import Proxy, Samba, check, random_file, run
from promserver import Prometheus, dashboard, panel_queries, substitute

NAME = 'my "files", east\\x'
RATE_INTERVAL = 10
SCRAPES = 5


def traffic(smb, port, work, stop, results):
    """smbclient sessions through @port until @stop is set."""
    n = 0
    while not stop.is_set():
        n += 1
        cmd = f"get f.bin {work}/got.bin; ls" + (f"; put {work}/got.bin up.bin" if n % 3 == 0 else "")
        try:
            smb.smbclient(port, cmd=cmd)
            results.append("ok")
        except harness.TestFailure as e:
            results.append(str(e).splitlines()[-1])
            stop.wait(0.5)


def check_variables(prom, dash):
    """Each query variable's label_values(SELECTOR, LABEL) has values."""
    problems, n = [], 0
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\s*\)", q)
        if not m:
            problems.append(f"${v['name']}: {q} is not label_values(SELECTOR, LABEL)")
            continue
        values = prom.api(f"label/{m.group(2)}/values", **{"match[]": substitute(m.group(1), RATE_INTERVAL)})
        n += 1
        if not values:
            problems.append(f"${v['name']}: {q} has no values")
    check(not problems and n, f"{n} template variables have values" + "".join(f"\n  {p}" for p in problems))


def main():
    dash = dashboard()
    smb = Samba()
    random_file(os.path.join(smb.share, "f.bin"), 4)
    work = os.path.join(harness.TMPDIR, "prom-work")
    os.makedirs(work, exist_ok=True)
    port = harness.free_port()
    conf = os.path.join(harness.TMPDIR, "prom.conf")
    with open(conf, "w") as f:
        f.write(f"[{NAME}]\nlisten = 127.0.0.1:{port}\nbackend = {smb.addr}\n")
    px = Proxy(None, "-c", conf, listen=False, stats=True)
    # One whole session first, so that the latency histograms have series
    # from the first scrape on.
    smb.smbclient(port, cmd=f"get f.bin {work}/got.bin; ls")
    prom = Prometheus([f"127.0.0.1:{px.stats_port}"], interval=1)
    stop, results = threading.Event(), []
    t = threading.Thread(target=traffic, args=(smb, port, work, stop, results))
    t.start()
    try:
        t0 = time.monotonic()
        prom.wait_scrapes(SCRAPES, timeout=40)
        print(f"note: {SCRAPES} scrapes in a row taken after {time.monotonic() - t0:.1f} s", flush=True)

        got = {m.get("listener") for m, _ in prom.query("smbsplice_listener_connections_total")}
        check(got == {NAME}, f"the listener label reads back in Prometheus as the section name: {got}")

        problems, n = [], 0
        for p, tgt in panel_queries(dash):
            expr = substitute(tgt["expr"], RATE_INTERVAL)
            try:
                res = prom.query(expr)
            except harness.TestFailure as e:
                problems.append(f"panel {p['title']!r} {tgt['refId']}: {e}")
                continue
            n += 1
            if not res:
                problems.append(f"panel {p['title']!r} {tgt['refId']}: {expr} returns no series")
        check(n and not problems, f"{n} panel queries of the dashboard each return series"
              + "".join(f"\n  {x}" for x in problems))
        check_variables(prom, dash)

        rate = sum(v for _, v in prom.query(f"sum(rate(smbsplice_bytes_total[{RATE_INTERVAL}s]))"))
        check(rate > 0, f"bytes moved at {rate / 1e6:.1f} MB/s over the last {RATE_INTERVAL} s")
        p99 = prom.query("histogram_quantile(0.99, sum by (le) (rate(smbsplice_request_seconds_bucket"
                         f"{{command=\"read\"}}[{RATE_INTERVAL}s])))")
        check(p99 and p99[0][1] == p99[0][1] and p99[0][1] > 0,
              f"read latency p99 a number: {p99[0][1] * 1e3 if p99 else None} ms")
    finally:
        stop.set()
        t.join(120)
        prom.stop()
    ok = results.count("ok")
    check(ok >= 1 and ok == len(results), f"{ok} of {len(results)} smbclient sessions whole"
          + "".join(f"\n  {x}" for x in sorted(set(results) - {'ok'})))
    px.stop()


if __name__ == "__main__":
    run(main, alarm=120)
