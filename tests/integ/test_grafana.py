"""contrib/grafana/smbsplice.json asks only for what /metrics serves, so
that the dashboard cannot drift from the metrics.

A throwaway Samba behind smbsplice --stats, smbclient's get, put and ls
through it (so that the latency histograms have series), one scrape of
/metrics. Then, for every query of the dashboard (each panel's targets
and each template variable's):

- every metric it names (smbsplice_...) is the name of series on the
  page: a histogram's buckets as NAME_bucket, its count as NAME_count;
- in a panel, a counter (or a histogram's series) is read only through
  rate() or increase(), and a gauge never is; histogram_quantile() reads
  _bucket series;
- every label it names (in a matcher, in by (...), in the legend's
  {{label}}) is a label of a series it reads, or one Prometheus adds at
  the scrape (instance, job);
- every $variable it uses is one the dashboard defines, or Grafana's own.

And the dashboard itself: JSON of schemaVersion 39 or later, panel ids
unique, every panel and target on the Prometheus datasource variable, and
the panels issue 22 asks for: throughput by path, connections, server
latency per command as a heatmap and as p99, pipes, buffers, refusals,
denials and multichannel notices.
"""
import json
import os
import re
import tempfile

from harness import SRCDIR, TMPDIR, Proxy, Samba, check, file_sha256, random_file, run, scrape_text

DASHBOARD = os.path.join(SRCDIR, "contrib/grafana/smbsplice.json")
# Labels Prometheus attaches to every series it scrapes.
SCRAPE_LABELS = {"instance", "job"}
GRAFANA_VARS = {"__rate_interval", "__interval", "__range", "__interval_ms", "__range_s"}
NAME = re.compile(r"\bsmbsplice_[a-z0-9_]+\b")


def page_series(text):
    """{series name: set of label names} and {metric name: TYPE} of a page."""
    series, types = {}, {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            types[m.group(1)] = m.group(2)
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition("{")
        name = name.split()[0]
        series.setdefault(name, set()).update(re.findall(r'(\w+)="', rest.rpartition("}")[0]))
    return series, types


def kind(name, types):
    """counter, gauge or histogram (for a histogram's _bucket, _sum, _count)."""
    if name in types:
        return types[name]
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    return "histogram" if types.get(base) == "histogram" else None


def queries(dash):
    """(where, expr, legend, is_panel) for every query of the dashboard."""
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append((f"panel {p['title']!r} {t['refId']}", t["expr"], t.get("legendFormat", ""), True))
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            out.append((f"variable ${v['name']}", q, "", False))
    return out


def check_query(where, expr, legend, is_panel, series, types, defined):
    """One query against the page; returns the problems found."""
    problems = []
    names = set(NAME.findall(expr))
    if not names:
        problems.append(f"{where}: names no smbsplice metric")
    for n in sorted(names - set(series)):
        problems.append(f"{where}: {n} is not served by /metrics")
    known = names & set(series)
    if is_panel:
        rated = set(re.findall(r"\b(?:rate|irate|increase)\(\s*(smbsplice_[a-z0-9_]+)", expr))
        for n in sorted(known):
            k = kind(n, types)
            if k in ("counter", "histogram") and n not in rated:
                problems.append(f"{where}: {n} is a {k} read without rate() or increase()")
            if k == "gauge" and n in rated:
                problems.append(f"{where}: {n} is a gauge read with rate() or increase()")
    for n in re.findall(r"histogram_quantile\([^,]+,.*?(smbsplice_[a-z0-9_]+)", expr):
        if not n.endswith("_bucket"):
            problems.append(f"{where}: histogram_quantile() of {n}, not of a _bucket series")
    allowed = set().union(*(series[n] for n in known)) | SCRAPE_LABELS if known else SCRAPE_LABELS
    labels = set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)\s*\"", expr))
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
        labels |= {x.strip() for x in group.split(",") if x.strip()}
    labels |= set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))
    m = re.match(r"label_values\((.*),\s*(\w+)\s*\)$", expr)
    if m:
        labels.add(m.group(2))
    for lab in sorted(labels - allowed):
        problems.append(f"{where}: label {lab} is on none of {', '.join(sorted(known)) or 'its metrics'}")
    for var in set(re.findall(r"\$\{?(\w+)", expr)) - defined - GRAFANA_VARS:
        problems.append(f"{where}: ${var} is not a variable of the dashboard")
    return problems


def check_dashboard(dash):
    """The dashboard's own shape."""
    check(dash.get("schemaVersion", 0) >= 39, f"schemaVersion {dash.get('schemaVersion')}")
    ids = [p["id"] for p in dash["panels"]]
    check(len(ids) == len(set(ids)), f"{len(ids)} panels, ids unique")
    ds = [v for v in dash["templating"]["list"] if v["type"] == "datasource" and v["query"] == "prometheus"]
    check(len(ds) == 1, "a Prometheus datasource variable")
    want = {"type": "prometheus", "uid": "${" + ds[0]["name"] + "}"}
    off = [p["title"] for p in dash["panels"] if p["type"] != "row" and (
        p.get("datasource") != want or any(t.get("datasource") != want for t in p.get("targets", ())))]
    check(not off, f"every panel and target reads ${ds[0]['name']}{': not ' + ', '.join(off) if off else ''}")


def check_panels(dash):
    """The panels issue 22 asks for."""

    def has(what, test):
        found = [p["title"] for p in dash["panels"] if p["type"] != "row" and test(p, " ".join(
            t["expr"] for t in p.get("targets", ())))]
        check(found, f"{what}: {', '.join(found) or 'no panel'}")

    has("throughput by path", lambda p, e: "smbsplice_bytes_total" in e and re.search(r"by \([^)]*\bpath\b", e))
    has("connections", lambda p, e: "smbsplice_connections_active" in e)
    has("server latency per command, a heatmap", lambda p, e: p["type"] == "heatmap" and
        "smbsplice_request_seconds_bucket" in e and (p.get("repeat") == "command" or "by (command" in e))
    has("server latency p99 per command", lambda p, e: re.search(
        r"histogram_quantile\(0\.99, sum by \(command, le\) \(rate\(smbsplice_request_seconds_bucket", e))
    for what, name in (("pipes", "smbsplice_pipes_open"), ("buffers", "smbsplice_buffers_lent"),
                       ("refusals", "smbsplice_refused_total"), ("denials", "smbsplice_denied_total"),
                       ("multichannel notices", "smbsplice_multichannel_total")):
        has(what, lambda p, e, name=name: name in e)


def main():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    check_dashboard(dash)

    smb = Samba()
    work = tempfile.mkdtemp(prefix="grafana-", dir=TMPDIR)
    px = Proxy(smb.addr, stats=True)
    sha = random_file(os.path.join(smb.share, "f.bin"), 4)
    smb.smbclient(px.port, cmd=f"get f.bin {work}/got.bin; put {work}/got.bin put.bin; ls")
    check(file_sha256(os.path.join(work, "got.bin")) == sha, "smbclient get, put and ls through smbsplice")
    series, types = page_series(scrape_text(px.stats_port))
    px.stop()
    check("smbsplice_request_seconds_bucket" in series, f"/metrics serves {len(series)} series names, "
          "the latency histograms' among them")

    defined = {v["name"] for v in dash["templating"]["list"]}
    problems, n = [], 0
    for where, expr, legend, is_panel in queries(dash):
        problems += check_query(where, expr, legend, is_panel, series, types, defined)
        n += 1
    check(not problems, f"{n} queries name only metrics, labels and variables that exist"
          + ("".join(f"\n  {p}" for p in problems)))
    check_panels(dash)
    names = {x for _, e, _, _ in queries(dash) for x in NAME.findall(e)}
    print(f"note: the dashboard reads {len(names)} of the {len(series)} series names: "
          f"{', '.join(sorted(names))}", flush=True)


if __name__ == "__main__":
    run(main, alarm=300)
