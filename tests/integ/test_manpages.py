"""The man pages keep step with the program.

- Every long option `smbsplice --help` lists has an entry in smbsplice(8)'s
  OPTIONS (`*--name*`, with its short form when it has one: `*-l*,
  *--listen*`).
- Every config-file key (every long option but config, check,
  share-address, help and version) has an entry in smbsplice.conf(5) (`*name* = ...`), under GLOBAL
  KEYS or LISTENER KEYS as the program itself places it: each key is tried
  in a listener's section of a scratch file with `smbsplice --check`, which
  says "belongs in [global]" for a process-wide key and "unknown key" for a
  command-line-only one.
- Every metric the /metrics page declares (its `# TYPE` lines, from a
  smbsplice started with --stats) has an entry in smbsplice(8)'s METRICS,
  with the page's type (Counter, Gauge) and its label names.
- Every long option `smbsplice-advise --help` lists has an entry in
  smbsplice-advise(1)'s OPTIONS, with its short form when it has one.
"""
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request

from harness import SMBSPLICE, SRCDIR, TMPDIR, Proxy, TestFailure, check, check_page, note_scrape, run

MAN8 = os.path.join(SRCDIR, "contrib/man/smbsplice.8.scd")
MAN5 = os.path.join(SRCDIR, "contrib/man/smbsplice.conf.5.scd")
MAN1_ADVISE = os.path.join(SRCDIR, "contrib/man/smbsplice-advise.1.scd")
ADVISE = os.environ.get("SMBSPLICE_ADVISE", os.path.join(SRCDIR, "advise/smbsplice-advise"))
CLI_ONLY = {"config", "check", "share-address", "help", "version"}


def sections(path):
    """{section title: its text} of an scdoc page (its `# TITLE` headers)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out, title = {}, None
    for line in text.splitlines(keepends=True):
        m = re.match(r"# (.+)$", line)
        if m:
            title = m.group(1).strip()
            out[title] = ""
        elif title:
            out[title] += line
    return out


def help_options(program=SMBSPLICE, at_least=30):
    """[(short letter or None, long name)] from `program --help`."""
    r = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=10)
    if r.returncode:
        raise TestFailure(f"{program} --help exited {r.returncode}: {r.stderr}")
    opts = re.findall(r"^  (?:-(\w), |    )--([a-z0-9-]+)", r.stdout, re.M)
    check(len(opts) >= at_least, f"{os.path.basename(program)} --help lists {len(opts)} long options")
    return [(s or None, name) for s, name in opts]


def key_scope(name, scratch):
    """Where the program takes `name` in a config file: "global", "listener",
    or "cli" (not a key)."""
    path = os.path.join(scratch, "probe.conf")
    with open(path, "w") as f:
        f.write(f"[probe]\n{name} = x\n")
    r = subprocess.run([SMBSPLICE, "--check", "-c", path], capture_output=True, text=True, timeout=10)
    if f"unknown key '{name}'" in r.stderr:
        return "cli"
    if f"{name} belongs in [global]" in r.stderr:
        return "global"
    return "listener"


def check_options(opts, page=MAN8, title="smbsplice(8)"):
    options = sections(page).get("OPTIONS", "")
    check(options, f"{os.path.basename(page)} has an OPTIONS section")
    missing = []
    for short, name in opts:
        entry = rf"^\*-{short}\*, \*--{name}\*(?: |$)" if short else rf"^\*--{name}\*(?: |$)"
        if not re.search(entry, options, re.M):
            missing.append(f"-{short}, --{name}" if short else f"--{name}")
    check(not missing, f"{title} OPTIONS has an entry for each of the {len(opts)} long options"
          + (f"; missing: {', '.join(missing)}" if missing else ""))


def check_keys(opts):
    page = sections(MAN5)
    where = {"global": page.get("GLOBAL KEYS", ""), "listener": page.get("LISTENER KEYS", "")}
    check(where["global"] and where["listener"], "smbsplice.conf.5.scd has GLOBAL KEYS and LISTENER KEYS")
    os.makedirs(TMPDIR, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="manpages-", dir=TMPDIR)
    try:
        scopes = {name: key_scope(name, scratch) for _, name in opts}
    finally:
        shutil.rmtree(scratch)
    cli = {n for n, s in scopes.items() if s == "cli"}
    check(cli == CLI_ONLY, f"the command-line-only options are {sorted(cli)}")
    wrong = []
    for name, scope in scopes.items():
        entry = re.compile(rf"^\*{re.escape(name)}\* = ", re.M)
        if scope == "cli":
            if any(entry.search(t) for t in where.values()):
                wrong.append(f"{name} is documented as a key but is command-line only")
            continue
        if not entry.search(where[scope]):
            other = "listener" if scope == "global" else "global"
            wrong.append(f"{name}: no entry in {scope.upper()} KEYS"
                         + (f" (it is in {other.upper()} KEYS)" if entry.search(where[other]) else ""))
    n = len(scopes) - len(cli)
    check(not wrong, f"smbsplice.conf(5) documents each of the {n} keys in its section"
          + (": " + "; ".join(wrong) if wrong else ""))


def page_metrics(port):
    """{name: (type, {label names})} from a /metrics page."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    note_scrape(port)
    check_page(text, f"127.0.0.1:{port}/metrics")
    metrics = {m.group(1): (m.group(2), set()) for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M)}
    seen = set()
    for m in re.finditer(r"^(\w+)\{([^}]*)\} ", text, re.M):
        name = m.group(1)
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name not in metrics and metrics.get(base, ("",))[0] == "histogram":
            name = base  # a histogram's series; le is the bucket, not a label
        if name in metrics:
            seen.add(name)
            metrics[name][1].update(x for x in re.findall(r'(\w+)="', m.group(2)) if x != "le")
    # A histogram with nothing observed yet has no series to take labels from.
    return {n: (t, ls if n in seen else None) for n, (t, ls) in metrics.items()}


def check_metrics():
    # No backend is ever dialled: nothing connects.
    px = Proxy("127.0.0.1:9", stats=True)
    metrics = page_metrics(px.stats_port)
    px.stop()
    check(len(metrics) >= 30, f"/metrics declares {len(metrics)} metrics")
    text = sections(MAN8).get("METRICS", "")
    check(text, "smbsplice.8.scd has a METRICS section")
    wrong = []
    for name, (mtype, labels) in sorted(metrics.items()):
        m = re.search(rf"^\*{name}\*(?:\{{([^}}]*)\}})?\n\t(\w+)\.", text, re.M)
        if not m:
            wrong.append(f"{name}: no entry")
            continue
        documented = {x.strip() for x in (m.group(1) or "").split(",") if x.strip()}
        if labels is not None and documented != labels:
            wrong.append(f"{name}: labels {sorted(documented)} in the page, {sorted(labels)} on /metrics")
        if m.group(2).lower() != mtype:
            wrong.append(f"{name}: {m.group(2)} in the page, {mtype} on /metrics")
    check(not wrong, f"smbsplice(8) METRICS has an entry, with type and labels, for each of the {len(metrics)} metrics"
          + (": " + "; ".join(wrong) if wrong else ""))


def main():
    opts = help_options()
    check_options(opts)
    check_keys(opts)
    check_metrics()
    check_options(help_options(ADVISE, at_least=5), MAN1_ADVISE, "smbsplice-advise(1)")


if __name__ == "__main__":
    run(main, alarm=120)
