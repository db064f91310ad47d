"""A throwaway Prometheus (Debian's prometheus package) that scrapes
smbsplice's /metrics, and the Grafana dashboard's queries in the form
Prometheus takes them.

Used by tests/integ/test_prometheus.py, which evaluates every query of
contrib/grafana/smbsplice.json on it, and by contrib/grafana/render.py,
which draws docs/img/dashboard.png from what it returns. It runs on a
free loopback port with its own temporary directory for its
configuration and its database, both removed when it stops.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import harness
from harness import TestFailure

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DASHBOARD = os.path.join(harness.SRCDIR, "contrib/grafana/smbsplice.json")


class Prometheus:
    """One prometheus process scraping @targets (HOST:PORT of /metrics
    pages) every @interval seconds, as job "smbsplice"."""

    running = []

    def __init__(self, targets, interval=1):
        harness.need("prometheus", "prometheus")
        os.makedirs(harness.TMPDIR, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="prometheus-", dir=harness.TMPDIR)
        self.interval = interval
        self.port = harness.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        conf = os.path.join(self.dir, "prometheus.yml")
        with open(conf, "w") as f:
            f.write(f"global:\n  scrape_interval: {interval}s\n  scrape_timeout: {interval}s\n"
                    f"  evaluation_interval: {interval}s\n"
                    "scrape_configs:\n  - job_name: smbsplice\n    static_configs:\n"
                    f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
        self.logf = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={conf}", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.logf, stderr=subprocess.STDOUT, cwd=self.dir)
        Prometheus.running.append(self)
        harness.wait_for(f"prometheus ready on {self.url}", self._ready, 30)

    def _ready(self):
        if self.proc.poll() is not None:
            raise TestFailure(f"prometheus exited {self.proc.returncode}:\n{self.log()}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                return r.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def log(self):
        with open(os.path.join(self.dir, "prometheus.log"), errors="replace") as f:
            return f.read()

    def api(self, path, **params):
        """GET /api/v1/@path?@params; its "data", or a failure with
        Prometheus's error (a query it cannot parse, say)."""
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            body = json.load(e)
        if body.get("status") != "success":
            raise TestFailure(f"prometheus {path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr, at=None):
        """The instant vector @expr gives now (or at unix time @at): a list
        of ({labels}, value)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self.api("query", **params)
        if data["resultType"] != "vector":
            raise TestFailure(f"{expr}: a {data['resultType']}, not an instant vector")
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def query_range(self, expr, start, end, step):
        """@expr from @start to @end (unix times) every @step seconds: a
        list of ({labels}, [(time, value), ...])."""
        data = self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=str(step))
        return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]

    def wait_scrapes(self, n, timeout=30.0):
        """Wait until every target has been scraped, successfully, @n times
        in a row (up is 1 in the last @n samples); fail with what
        Prometheus says of a target it could not scrape."""
        window = f"{int((n + 0.5) * self.interval * 1000)}ms"
        expr = f"min_over_time(up[{window}]) == 1 and count_over_time(up[{window}]) >= {n}"
        end = time.monotonic() + timeout
        while not self.query(expr):
            if time.monotonic() > end:
                targets = self.api("targets")["activeTargets"]
                raise TestFailure(f"prometheus did not scrape {n} times in {timeout:.0f} s: "
                                  + "; ".join(f"{t['scrapeUrl']}: {t['health']} {t['lastError']}" for t in targets))
            time.sleep(self.interval / 2)

    def stop(self):
        """Kill it (nothing of its database is kept) and remove its
        directory."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.logf.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self in Prometheus.running:
            Prometheus.running.remove(self)

    @classmethod
    def stop_all(cls):
        for p in list(cls.running):
            p.stop()


harness.CLEANUPS.append(Prometheus.stop_all)


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def panel_queries(dash):
    """(panel, target) for every query of every panel."""
    return [(p, t) for p in dash["panels"] for t in p.get("targets", ())]


def substitute(expr, rate_interval, command=".*"):
    """@expr with Grafana's variables replaced as Grafana would with every
    variable on "All" (the dashboard's allValue, .*) but $command, and
    $__rate_interval as @rate_interval seconds."""
    expr = expr.replace("$__rate_interval", f"{rate_interval}s")
    expr = re.sub(r"\$\{?command\}?", command, expr)
    return re.sub(r"\$\{?\w+\}?", ".*", expr)


def legend(fmt, labels):
    """A legendFormat with {{label}} filled in."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt) or "value"
