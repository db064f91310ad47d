"""A live handover that fails costs no connection (HANDOVER.md): when the
binary at the path smbsplice was started from is gone, is a script that
exits 1, rejects the configuration (the config file made invalid before
the USR2), would leave a listening socket of the old process untaken (a
listener moved to another address: its queue would be reset), would run another
number of workers than set, or dies after receiving everything but before it says TAKEN,
the running process logs `handover failed: WHY; this process goes on
forwarding` and goes on: a long smbclient get (paced, so that it runs
through every case) and 50 idle echo connections (a tcp listener) carry
on, new clients are served, no connection was counted gone; then a
good binary is put at the path and a USR2 hands everything over.

As a package upgrade does, the test starts the daemon from a copy of the
built binary and replaces the file at that path before each USR2. The
death before TAKEN is an LD_PRELOAD object (handover_die.c, built here)
loaded by a script that execs the real binary; under the sanitizers the
preload list starts with the ASan runtime the binary links."""
import os
import re
import shutil
import socket

from harness import (SMBSPLICE, SRCDIR, TMPDIR, Proxy, Samba, check, free_ports, metric, need, random_file,
                     run, scrape, sh, wait_metric)
from test_handover import Paced, echo_all
from test_scale import EchoServer

MIB = 64
SECONDS = 30.0
IDLE = 50


def install(path, content=None, source=None):
    """Put a new file at @path the way a package upgrade does: written
    beside it, then renamed over it (the running binary's file is never
    changed in place). @content: a script's text; @source: a file to copy."""
    tmp = path + ".new"
    if source:
        shutil.copy2(source, tmp)
    else:
        with open(tmp, "w") as f:
            f.write(content)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


def preload_list(so):
    """LD_PRELOAD for @so: after the ASan runtime when the binary links one
    (ASan must come first in the list, or it refuses to start)."""
    ldd = sh("ldd", SMBSPLICE).stdout
    asan = [l.split("=>")[1].split()[0] for l in ldd.splitlines() if "libasan" in l and "=>" in l]
    return ":".join(asan + [so])


def conf_text(ports, stats, smb, echo, extra="", workers="workers = 3\n"):
    return (f"[global]\nstats = 127.0.0.1:{stats}\n{workers}{extra}\n"
            f"[files]\nlisten = 127.0.0.1:{ports[0]}\nbackend = {smb.addr}\n\n"
            f"[echo]\nlisten = 127.0.0.1:{ports[1]}\nbackend = {echo.addr}\nmode = tcp\n")


def main():
    need("cc", "gcc")
    smb = Samba()  # before any handover: smbd is not adopted (harness.become_subreaper)
    echo = EchoServer()
    work = os.path.join(TMPDIR, "bin")
    os.makedirs(work)
    exe = os.path.join(work, "smbsplice")
    install(exe, source=SMBSPLICE)
    so = os.path.join(work, "handover_die.so")
    sh("cc", "-shared", "-fPIC", "-O2", "-Wall", "-o", so, os.path.join(SRCDIR, "tests/integ/handover_die.c"), "-ldl")
    mark = os.path.join(work, "died-at-taken")

    *ports, stats, moved = free_ports(4)
    conf = os.path.join(work, "smbsplice.conf")
    with open(conf, "w") as f:
        f.write(conf_text(ports, stats, smb, echo))
    px = Proxy(None, "-c", conf, listen=False, exe=exe, check_start=False)
    px.wait_log(r"listening on", count=2)
    px.started()
    px.stats, px.stats_port, px.port = True, stats, ports[0]

    src = os.path.join(smb.share, "big.bin")
    want = random_file(src, MIB)
    get = Paced(smb, ports[0], "get", "big.bin", MIB, SECONDS)
    idle = [socket.create_connection(("127.0.0.1", ports[1]), timeout=30) for _ in range(IDLE)]
    echo_all(idle, 0)
    held = IDLE + 1
    check(wait_metric(stats, "smbsplice_connections_active", held), f"{IDLE} idle echo connections and a get held")

    def still_forwarding(case, n):
        check(get.running() and get.proc.poll() is None, f"{case}: the get still runs ({get.moved >> 20} MiB in)")
        echo_all(idle, n)
        check(True, f"{case}: each of {IDLE} idle connections answers a round trip")
        m = scrape(stats)
        check(metric(m, "smbsplice_connections_active") == held,
              f"{case}: {held} connections active, as before ({metric(m, 'smbsplice_connections_active'):.0f})")
        fresh = socket.create_connection(("127.0.0.1", ports[1]), timeout=30)
        echo_all([fresh], n)
        fresh.close()
        out = smb.smbclient(ports[0], cmd="ls")
        check("big.bin" in out, f"{case}: a new echo client and a new smbclient are served")

    cases = [
        ("the binary is gone", lambda: os.unlink(exe)),
        ("the binary is a script that exits 1", lambda: install(exe, "#!/bin/sh\nexit 1\n")),
        ("the config file is invalid", lambda: (install(exe, source=SMBSPLICE), open(conf, "w").write(
            conf_text(ports, stats, smb, echo, "workers = banana\nno-such-key = 1\n")))),
        # Its old sockets' queued clients would be reset: refused, the
        # old process forwards on (a SIGHUP there drains them first).
        ("a listener's address changed", lambda: (install(exe, source=SMBSPLICE), open(conf, "w").write(
            conf_text([ports[0], moved], stats, smb, echo)))),
        # Connections are numbered by their workers: a count set to
        # another is refused, and the line says so.
        ("workers set to another count", lambda: open(conf, "w").write(
            conf_text(ports, stats, smb, echo, workers="workers = 1\n"))),
        ("the new process dies before TAKEN", lambda: (open(conf, "w").write(conf_text(ports, stats, smb, echo)),
                                                       install(exe, "#!/bin/sh\n"
                                                               f"HANDOVER_DIE_MARK='{mark}' "
                                                               f"LD_PRELOAD='{preload_list(so)}' "
                                                               f"exec '{SMBSPLICE}' \"$@\"\n"))),
    ]
    pid = px.proc.pid
    for n, (case, prepare) in enumerate(cases, 1):
        prepare()
        why = px.handover_fails()
        check(px.proc.pid == pid, f"{case}: `handover failed: {why}`; pid {pid} goes on")
        if "address" in case:
            check("listener echo is not in the configuration, or its address changed" in why,
                  f"{case}: the line names the listener and says what to do")
        if "workers" in case:
            check("the old process has 3 workers and this one 1 (set --workers)" in why,
                  f"{case}: the line gives both counts and the option to set")
        if "TAKEN" in case:
            check(os.path.exists(mark), f"{case}: it died as it sent TAKEN (the preload's mark file is there)")
        still_forwarding(case, n)

    # Left unset, the count is the old process's, whatever this machine's
    # default would be.
    install(exe, source=SMBSPLICE)
    with open(conf, "w") as f:
        f.write(conf_text(ports, stats, smb, echo, workers=""))
    d = px.handover()
    check(d["conns"] == held and d["took_conns"] == held and d["took_listeners"] == 2,
          f"then a good binary: the handover takes {held} connections and 2 listeners from pid {pid}: {d}")
    echo_all(idle, 99)
    check(True, f"each of {IDLE} idle connections answers the new process")
    started = re.findall(r"started: .*?, (\d+) workers?,", px.whole_lines())
    check(started[-1:] == ["3"], f"with no workers in the config, the new process runs the old one's 3 ({started})")
    get.finish(f"the {MIB} MiB get through {len(cases)} failed handovers and a good one", want)
    check(metric(scrape(stats), "smbsplice_connections_active") == IDLE, "/metrics of the new process: the idle ones")
    check(" end=error" not in px.log(), "no connection ended in error")
    for s in idle:
        s.close()
    px.wait_log(r"listener=echo .* end=fin ", count=IDLE + len(cases), timeout=60)
    px.stop()
    echo.close()
    smb.stop()


if __name__ == "__main__":
    run(main)
