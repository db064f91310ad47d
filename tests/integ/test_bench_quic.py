"""The quic benchmark's harness (contrib/bench/quic.py) says what it measured.

`make bench --only quic` runs pairs of fronts; one of them, the smbsplice
QUIC pair, exists only in a build with QUIC. Without running a transfer,
this checks:

- the contestants are well-formed data: unique names, every pair with a
  leg of tcp or udp, both sides' templates filled from the placeholders
  the harness gives (no unknown one);
- not_built() lists the QUIC pair as not built, in smbsplice's own words,
  when a binary's --help does not mention quic or its --check refuses a
  side's command line, and lets it run when both hold;
- the report renders a not-built contestant as such, turns the goals
  into "not measured" with the figure that would meet them, and computes
  met and missed from the medians when the pair ran;
- the AES-GCM floor is read from `openssl speed -mr`'s lines.
"""
import os
import shutil
import stat
import sys

from harness import SRCDIR, TMPDIR, check, run

sys.path.insert(0, os.path.join(SRCDIR, "contrib", "bench"))
import quic  # noqa: E402

VALUES = {"smbsplice": "/x/smbsplice", "quicrelay": "/x/quicrelay", "hq": "192.0.2.2:443", "smbd": "127.0.0.1:445",
          "listen": "127.0.0.1:4451", "cert": "c.pem", "key": "c.key", "ca": "ca.pem", "name": "smb.test",
          "hq_conf": "hq.conf", "branch_conf": "branch.conf"}


def check_data():
    names = [e["name"] for e in quic.CONTESTANTS]
    check(len(names) == len(set(names)) and {"direct", "stunnel", "quicrelay", "smbsplice-pair",
                                               quic.NEEDS_QUIC} <= set(names), f"the contestants: {names}")
    bad = []
    for e in quic.CONTESTANTS:
        if "hq" not in e:
            continue
        if e.get("leg") not in ("tcp", "udp") or "branch" not in e:
            bad.append(f"{e['name']}: leg or branch missing")
        for key in ("hq", "branch", "hq_conf", "branch_conf"):
            if key in e:
                try:
                    quic.fill(e[key], VALUES)
                except KeyError as k:
                    bad.append(f"{e['name']} {key}: unknown placeholder {k}")
    check(not bad, f"every pair has a leg and both sides, and only known placeholders {bad}")
    entry = [e for e in quic.CONTESTANTS if e["name"] == quic.NEEDS_QUIC][0]
    check(entry.get("needs") == "quic", "the smbsplice QUIC pair is marked as needing QUIC")


def fake_smbsplice(path, help_text, refuse):
    """A stand-in smbsplice: --help prints help_text; --check fails with
    a line when its arguments contain `refuse`."""
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
if [ "$1" = --help ]; then echo '{help_text}'; exit 0; fi
case "$*" in *'{refuse}'*) echo "smbsplice: --backend 'quic:...': no such transport" >&2; exit 2;; esac
echo 'smbsplice: configuration OK'
""")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def check_not_built():
    d = os.path.join(TMPDIR, "fake")
    os.makedirs(d, exist_ok=True)
    fake = os.path.join(d, "smbsplice")
    entry = [e for e in quic.CONTESTANTS if e["name"] == quic.NEEDS_QUIC][0]
    real, quic.SMBSPLICE = quic.SMBSPLICE, fake
    values = dict(VALUES, smbsplice=fake)
    try:
        fake_smbsplice(fake, "--listen HOST:PORT", "@never@")
        why = quic.not_built(entry, values)
        check(why and "--help does not mention quic" in why, f"no quic in --help: not built ({why})")
        fake_smbsplice(fake, "--quic-cert FILE  QUIC listener", "--backend quic:")
        why = quic.not_built(entry, values)
        check(why and why.startswith("branch side: ") and "no such transport" in why,
              f"--check refuses the branch's QUIC backend: not built, in smbsplice's words ({why})")
        fake_smbsplice(fake, "--quic-cert FILE  QUIC listener", "@never@")
        check(quic.not_built(entry, values) is None, "both sides pass --check: the QUIC pair runs")
        check(all(quic.not_built(e, values) is None for e in quic.CONTESTANTS if not e.get("needs")),
              "the other contestants need nothing of smbsplice's build")
    finally:
        quic.SMBSPLICE = real
        shutil.rmtree(d, ignore_errors=True)


def runs(mbyte_s, cpu, busy=2.0, n=3):
    gib = 1 << 30
    return [{"mbyte_s": mbyte_s, "bytes": gib, "proxy_cpu": cpu, "busy": busy} for _ in range(n)]


def results(quic_runs):
    lo = {w: {"direct": runs(1000, 0), "stunnel": runs(500, 3), "quicrelay": runs(200, 20),
              "smbsplice-pair": runs(900, 1)} for w in ("get", "put")}
    cell = {"rtt": 40, "loss": 1, "rate": 100,
            **{w: {"direct": runs(0.4, 0), "stunnel": runs(0.5, 1), "quicrelay": runs(0.4, 2),
                   "smbsplice-pair": runs(8, 1)} for w in ("get", "put")}}
    q = {"mib": 1024, "runs": 3, "version": "smbsplice 0.1.0", "floor": {"1350": 1.8e9, "16384": 4e9},
         "not_built": {}, "loopback": lo, "wan": {"cap": 30, "mtu": 1500, "cells": [cell]}}
    if quic_runs:
        for w in ("get", "put"):
            lo[w][quic.NEEDS_QUIC] = runs(600, 8)        # 1.2x stunnel, 3x quicrelay, 0.4x its CPU: met
            cell[w][quic.NEEDS_QUIC] = runs(6, 1)        # 0.75x the TCP pair: missed; 12x stunnel: met
    else:
        q["not_built"][quic.NEEDS_QUIC] = "not built: this smbsplice has no QUIC"
    return q


def check_report():
    text = quic.table(results(False))
    check(f"| {quic.NEEDS_QUIC} | not built: this smbsplice has no QUIC |" in text,
          "a contestant not built has its row, saying so")
    goals = [l for l in text.splitlines() if l.startswith("| loopback") or l.startswith("| WAN")]
    check(len(goals) == 10 and all(l.endswith("| not measured |") for l in goals),
          f"five goals per workload, each not measured while the pair is not built ({len(goals)})")
    check(all(x in text for x in ("to meet it: ≥ 500.00 MB/s (stunnel 500.00)",
                                  "to meet it: ≥ 400.00 MB/s (quicrelay 200.00)",
                                  "to meet it: ≤ 10.00 pair CPU s/GiB (quicrelay 20.00)",
                                  "to meet it: ≥ 7.20 MB/s (smbsplice-pair 8.00)",
                                  "to meet it: ≥ 2.50 MB/s (stunnel 0.50)")),
          "a goal not measured says what would meet it")
    check("AES-128-GCM floor" in text and "1.80 GB/s" in text and "1.19 core-s per GiB" in text,
          "the AES-GCM floor, and what 2 GiB of it per GiB moved costs")
    text = quic.table(results(True))
    goals = [l for l in text.splitlines() if l.startswith("| loopback") or l.startswith("| WAN")]
    met = [l for l in goals if l.endswith("| met |")]
    missed = [l for l in goals if l.endswith("| missed |")]
    check(len(met) == 8 and len(missed) == 2 and all("smbsplice-pair's" in l for l in missed),
          f"from the medians: loopback goals met, over the lossy WAN 0.75x the TCP pair missed "
          f"and 12x stunnel met ({len(met)} met, {len(missed)} missed)")
    check("| 1.20× (600.00 against 500.00 MB/s)" in text and "| 0.40× (8.00 against 20.00 pair CPU s/GiB)" in text,
          "each goal gives the ratio and both figures")


def check_floor():
    got = quic.parse_speed("version: 3.0.19\n+H:16:64:16384\n+F:25:AES-128-GCM:37393321.74:143916047.06:"
                           "3804637866.67\n")
    check(got == {16: 37393321.74, 64: 143916047.06, 16384: 3804637866.67},
          f"openssl speed -mr's +H and +F lines give bytes/s per block size ({got})")
    check(quic.parse_speed("Error: unknown cipher") == {}, "no figures from openssl: an empty floor")


def main():
    check_data()
    check_not_built()
    check_report()
    check_floor()


if __name__ == "__main__":
    run(main)
