"""ksmbd, the Linux kernel's SMB server, behind smbsplice: a QEMU guest
(tests/integ/guest.py) serves a share with ksmbd; the host's smbclient gets
and puts files from 0 B to 64 MiB (16 MiB in `make check`) through
smbsplice and directly, checked by sha256 on both sides, then small ones
again over SMB 2.1, 3.0 and 3.1.1, each signed and (3.x) encrypted. smbsplice must splice ksmbd's READ
responses and the WRITE requests to it both ways, count what it forwarded,
time ksmbd's answers in its latency histograms, and end every connection
cleanly; smbsplice-advise must read a capture of ksmbd's traffic.

ksmbd answers differently from Samba (its own maximum READ and WRITE sizes,
credits, interim responses), which is what this test is for; the direct
runs show the guest itself is sound, so that a difference is smbsplice's."""
import json
import os
import shutil
import subprocess
import tempfile

from guest import PASSWORD, USER, Capture, Guest, randfill
from harness import (Proxy, TMPDIR, TestFailure, check, file_sha256, free_ports, metric, need, run,
                     scrape)

MIB = 1 << 20
# The big file: 16 MiB in `make check`, 64 MiB under `make check-guests`
# (GUEST_BIG_MIB=64), where the time is there to spend.
BIG = int(os.environ.get("GUEST_BIG_MIB", "16"))
# name: size in bytes; "big" is the one whose READs and WRITEs are spliced
SIZES = {"empty": 0, "one": 1, "page": 4097, "mib": MIB + 7, "eight": 8 * MIB + 1, "big": BIG * MIB}
# (max protocol, --client-protection): SMB 2.1 has no encryption
SESSIONS = [("SMB2_10", "sign"), ("SMB3_00", "sign"), ("SMB3_00", "encrypt"), ("SMB3_11", "sign"),
            ("SMB3_11", "encrypt")]

# The guest makes its files with randfill (seed 1, 2, ...), whose hashes
# the host computes; at the end it hashes what the host put.
SCRIPT = """
mkdir -p /srv/share
seed=0
for spec in $FILES; do seed=$((seed + 1)); randfill "${spec#*:}" $seed >"/srv/share/${spec%%:*}"; done
ksmbd_serve share=/srv/share || exit 1
ready
wait_file /srv/share/done 200 || exit 1
rm /srv/share/done
for spec in $FILES; do rm "/srv/share/${spec%%:*}"; done
sums /srv/share
"""


def smbclient(port, *args, cmd):
    argv = ["smbclient", "//127.0.0.1/share", "-p", str(port), "-U", f"{USER}%{PASSWORD}", *args, "-c", cmd]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if r.returncode or "NT_STATUS" in r.stdout + r.stderr:
        raise TestFailure(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout + r.stderr


def advise_capture(adv, port, cap, work, big_local):
    """Capture a direct session's get and put of the big file and return
    smbsplice-advise's report of it (JSON)."""
    c = Capture(cap, port)
    try:
        smbclient(port, cmd=f"get big {work}/cap-got.bin; put {big_local} cap-put-big")
    finally:
        c.stop()
    r = subprocess.run([adv, "--port", str(port), "--json", cap], capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise TestFailure(f"smbsplice-advise failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout)


def main():
    need("smbclient", "smbclient")
    guest_port, = free_ports(1)
    g = Guest(SCRIPT, fwd={guest_port: 445}, name="ksmbd",
              env={"FILES": " ".join(f"{n}:{s}" for n, s in SIZES.items())})
    served = {n: randfill(None, size, seed) for seed, (n, size) in enumerate(SIZES.items(), 1)}
    g.wait_ready()
    px = Proxy(f"127.0.0.1:{guest_port}", stats=True)
    os.makedirs(TMPDIR, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ksmbd-", dir=TMPDIR)
    local = {n: os.path.join(work, f"up-{n}") for n in SIZES}
    ups = {n: randfill(local[n], size, 100 + seed) for seed, (n, size) in enumerate(SIZES.items())}

    # every size, both ways, through smbsplice and directly
    for how, port in (("through smbsplice", px.port), ("directly", guest_port)):
        tag = "px" if port == px.port else "direct"
        cmd = "; ".join(f"get {n} {work}/{tag}-got-{n}" for n in SIZES) + "; " + \
            "; ".join(f"put {local[n]} {tag}-put-{n}" for n in SIZES)
        smbclient(port, cmd=cmd)
        bad = [n for n in SIZES if file_sha256(f"{work}/{tag}-got-{n}") != served[n]]
        check(not bad, f"get of 0 B to {BIG} MiB from ksmbd {how} is byte-exact (wrong: {bad})")

    m = scrape(px.stats_port)
    got = metric(m, "smbsplice_payload_bytes_total", direction="to_client", **{"class": "read"}, path="splice")
    put = metric(m, "smbsplice_payload_bytes_total", direction="to_server", **{"class": "write"}, path="splice")
    check(got > 0.9 * BIG * MIB, f"ksmbd's READ payloads spliced: {got:.0f} bytes ({BIG} MiB file)")
    check(put > 0.9 * BIG * MIB, f"WRITE payloads to ksmbd spliced: {put:.0f} bytes ({BIG} MiB file)")

    # signed and encrypted sessions, per dialect, with a file of each kind
    for proto, prot in SESSIONS:
        for how, port in (("through smbsplice", px.port), ("directly", guest_port)):
            tag = f"{proto}-{prot}-{'px' if port == px.port else 'direct'}"
            smbclient(port, "-m", proto, f"--client-protection={prot}",
                      cmd=f"get mib {work}/{tag}-got; put {local['page']} {tag}-page; put {local['mib']} {tag}-mib")
            check(file_sha256(f"{work}/{tag}-got") == served["mib"],
                  f"{proto} {prot}ed get from ksmbd {how} is byte-exact")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_frames_total", direction="to_client", kind="encrypted") > 0,
          "ksmbd's encrypted frames counted")

    # the latency histograms time ksmbd's answers
    reads = metric(m, "smbsplice_request_seconds_count", command="read")
    writes = metric(m, "smbsplice_request_seconds_count", command="write")
    check(reads > 0 and writes > 0 and metric(m, "smbsplice_request_seconds_count", command="create") > 0,
          f"request histograms time ksmbd's READ ({reads:.0f}), WRITE ({writes:.0f}) and CREATE answers")
    lines = px.wait_log(r"^.* conn .* end=fin .*$", count=1 + len(SESSIONS))
    check(any("encrypted=yes" in ln for ln in px.whole_lines().splitlines()), "a log line notes encryption")
    check(" end=error" not in px.log(), f"{len(lines)}+ connections to ksmbd ended cleanly, none in error")
    px.stop()

    # smbsplice-advise on a capture of ksmbd's traffic
    adv = os.environ.get("SMBSPLICE_ADVISE")
    captured = bool(adv and os.path.exists(adv) and shutil.which("dumpcap"))
    if captured:
        rep = advise_capture(adv, guest_port, os.path.join(work, "ksmbd.pcapng"), work, local["big"])
        rd, wr = rep["read"], rep["write"]
        print(f"note: smbsplice-advise on ksmbd: READ sizes {rd['sizes']}, WRITE sizes {wr['sizes']}, "
              f"recommends {rep['recommend'].get('read_threshold')}/{rep['recommend'].get('write_threshold')}, "
              f"{rep['completeness']['bytes_missing']} bytes missing from the capture", flush=True)
        check(rep["connections"] == 1 and rd["count"] > 0 and wr["count"] > 0 and rep["recommend"],
              f"smbsplice-advise reads a capture of ksmbd traffic: {rd['count']} READ responses "
              f"({rd['bytes']} bytes), {wr['count']} WRITEs, dialects {rep['dialects']}")
    else:
        print("note: no dumpcap or smbsplice-advise: the capture check is left out", flush=True)

    smbclient(guest_port, cmd=f"put {local['empty']} done")
    g.run()
    final = dict(g.said("sum"))
    bad = [k for k in final if "-put-" in k and final[k] != ups[k.split("-put-")[1]]]
    bad += [k for k in final for n in ("page", "mib") if k.endswith(f"-{n}") and "SMB" in k and final[k] != ups[n]]
    nputs = sum(1 for k in final if "-put-" in k or k.startswith("SMB"))
    check(nputs == 2 * len(SIZES) + 4 * len(SESSIONS) + captured and not bad,
          f"all {nputs} puts arrived in ksmbd's share byte-exact (wrong: {bad})")


if __name__ == "__main__":
    run(main)
