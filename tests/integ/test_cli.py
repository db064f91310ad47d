"""The command line: --help and --version exit 0; each bad argument gets
exactly one line on standard error and exit status 2; a listen address in
use is one line and exit status 1; --check accepts a good configuration
without listening on it, even while the address is in use, and refuses, as a
start would, a congestion algorithm the kernel lacks, --transparent
without CAP_NET_ADMIN, and a --user that does not exist or that a
process not root cannot become. A config line too long for libinih is
refused with FILE:LINE by --check, at start and on reload. A section
given twice is named, in a row or apart. A file that cannot be read
says so and why, not blaming --user. --check binds each listen address
once, so a port below 1024 without CAP_NET_BIND_SERVICE fails it as it
would fail the start. A second smbsplice on an address the first listens
on is refused in one line, exit 1, unless --share-address. Without
--workers, the workers are one per two CPUs of the affinity mask, at least
one."""
import os
import re
import signal
import socket
import subprocess
import tempfile

import smbgen
from harness import SMBSPLICE, TMPDIR, Proxy, Server, TestFailure, check, free_port, recv_exact, run, sanitizer_report

GOOD = ["--listen", "127.0.0.1:1", "--backend", "127.0.0.1:2"]

BAD = [
    ([], "--listen and --backend"),
    (["--listen", "127.0.0.1:1"], "--backend"),
    (GOOD + ["--pipe-size", "12Q"], "--pipe-size '12Q'"),
    (GOOD + ["--pipe-size", "1K"], "--pipe-size '1K'"),
    (GOOD + ["--max-pipes", "-3"], "--max-pipes '-3'"),
    (GOOD + ["--mode", "udp"], "--mode 'udp'"),
    (GOOD + ["--idle-timeout", "soon"], "--idle-timeout 'soon'"),
    (GOOD + ["--connect-timeout", "0"], "--connect-timeout '0'"),
    (["--listen", "127.0.0.1", "--backend", "127.0.0.1:2"], "--listen '127.0.0.1'"),
    (["--listen", "127.0.0.1:1", "--backend", "::1:445"], "--backend '::1:445'"),
    (GOOD + ["--bogus"], "unknown option '--bogus'"),
    (GOOD + ["-x"], "unknown option '-x'"),
    (GOOD + ["--pipe-size"], "missing value for option '--pipe-size'"),
    (GOOD + ["stray"], "'stray'"),
]


def smbsplice(*args):
    r = subprocess.run([SMBSPLICE, *args], capture_output=True, text=True, timeout=10)
    report = sanitizer_report(r.stderr)
    if report:
        raise TestFailure(f"sanitizer report from smbsplice {' '.join(args)}:\n{report}")
    return r


def main():
    r = smbsplice("--help")
    check(r.returncode == 0 and "--listen HOST:PORT" in r.stdout, "--help prints usage, exit 0")
    r = smbsplice("--version")
    check(r.returncode == 0 and r.stdout.startswith("smbsplice "), f"--version: {r.stdout.strip()}")
    for args, needle in BAD:
        r = smbsplice(*args)
        lines = r.stderr.splitlines()
        check(r.returncode == 2 and len(lines) == 1 and needle in lines[0],
              f"{args}: exit {r.returncode}, {lines}")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    r = smbsplice("--listen", f"127.0.0.1:{busy.getsockname()[1]}", "--backend", "127.0.0.1:2")
    lines = r.stderr.splitlines()
    check(r.returncode == 1 and len(lines) == 1 and "cannot listen" in lines[0] and "in use" in lines[0],
          f"listen address in use: exit {r.returncode}, {lines}")
    r = smbsplice("--check", "--listen", f"127.0.0.1:{busy.getsockname()[1]}", "--backend", "127.0.0.1:2")
    check(r.returncode == 0 and r.stdout.strip() == "smbsplice: configuration OK: 1 listener (main)",
          f"--check listens on nothing, so an address in use passes: exit {r.returncode}, {r.stdout.strip()!r}")
    busy.close()
    for side in ("", "client:", "backend:"):
        r = smbsplice("--check", *GOOD, "--congestion", f"{side}nosuchalg")
        lines = r.stderr.splitlines()
        check(r.returncode == 2 and len(lines) == 1 and "nosuchalg: No such file or directory" in lines[0],
              f"--check --congestion {side}nosuchalg: exit {r.returncode}, {lines}")
    nobody = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--inh-caps=-all"]
    for pre, args, needle in (
            (nobody, ["--transparent"], "--transparent needs CAP_NET_ADMIN"),
            ([], ["--user", "nosuchuser"], "--user nosuchuser: no such user"),
            (nobody, ["--user", "nobody"], "--user nobody: switching users needs root")):
        r = subprocess.run([*pre, SMBSPLICE, "--check", *GOOD, *args], capture_output=True, text=True, timeout=10)
        lines = r.stderr.splitlines()
        check(r.returncode == 2 and len(lines) == 1 and needle in lines[0],
              f"--check {' '.join(args)}{' as nobody' if pre else ''}: exit {r.returncode}, {lines}")

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    px = Proxy(f"127.0.0.1:{srv.getsockname()[1]}", "-v")
    c = px.connect()
    c.sendall(smbgen.hello(0).buf)  # an SMB client's first frame
    px.wait_log(r"debug: conn .* backend connected")
    check(True, "-v logs connection debug lines")
    c.close()
    # srv never accepted the proxy's connection: closing srv resets it, so
    # the proxy's connection ends and stop() can check its descriptors.
    srv.close()
    px.stop()
    default_workers()
    long_line()
    unresolved()
    section_twice()
    unreadable()
    privileged_port()
    second_instance()


def started_workers(cpus, *args):
    """The worker count of the `started:` line of smbsplice run with
    @args on the CPUs @cpus (its affinity mask, by taskset), then stopped."""
    px = Proxy("127.0.0.1:2", *args, wrap=("taskset", "-c", ",".join(map(str, sorted(cpus)))))
    try:
        return int(px.wait_log(r"started: .*?, (\d+) workers?,")[0])
    finally:
        px.stop()


def default_workers():
    """Without --workers: one worker per two CPUs of the affinity mask, at
    least one; --workers is taken as given."""
    cpus = sorted(os.sched_getaffinity(0))
    for k in sorted({1, 2, 3, 4, len(cpus)} & set(range(1, len(cpus) + 1))):
        got = started_workers(cpus[:k])
        check(got == max(1, k // 2), f"no --workers, {k} CPU{'s' if k > 1 else ''}: {got} worker{'s' if got > 1 else ''}")
    got = started_workers(cpus[:1], "--workers", "3")
    check(got == 3, f"--workers 3 on one CPU: {got}")


def long_line():
    """A config line longer than libinih takes is refused with FILE:LINE,
    never cut into a live setting (a long comment ending in workers = 0):
    by --check, at start, and by a reload, which keeps what runs."""
    hello = smbgen.hello(1).buf  # an SMB client's first frame, echoed
    srv = Server(lambda c: c.sendall(recv_exact(c, len(hello))))
    port = free_port()
    good = f"[global]\nworkers = 2\n\n[main]\nlisten = 127.0.0.1:{port}\nbackend = {srv.addr}\n"
    bad = good.replace("\n\n", f"\n# {'x' * 4000} workers = 0\n\n", 1)
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "smbsplice.conf")
        with open(conf, "w") as f:
            f.write(bad)
        for args in (["--check", "-c", conf], ["-c", conf]):
            r = smbsplice(*args)
            lines = r.stderr.splitlines()
            check(r.returncode == 2 and len(lines) == 1 and
                  re.search(rf"{re.escape(conf)}:3: line longer than \d+ bytes", lines[0]),
                  f"{' '.join(args[:-1])}: a 4 KB line: exit {r.returncode}, {lines}")
        with open(conf, "w") as f:
            f.write(good)
        px = Proxy(None, "-c", conf, listen=False)
        px.port, px.host = port, "127.0.0.1"
        with open(conf, "w") as f:
            f.write(bad)
        px.proc.send_signal(signal.SIGHUP)
        line = px.wait_log(r"^.*reload refused.*$")[0]
        check(re.search(r"smbsplice.conf:3: line longer than \d+ bytes; the running configuration stays", line),
              f"SIGHUP: refused in one line: {line.strip()}")
        c = px.connect()
        c.sendall(hello)
        check(recv_exact(c, len(hello)) == hello, "... and the running configuration serves")
        c.close()
        px.wait_log(r" end=")
        px.stop()
    srv.close()



def unresolved():
    """A backend name that does not resolve now is one line and exit 1, not
    2 (a bad configuration): the unit's RestartPreventExitStatus=2 must not
    leave the service down after a boot whose DNS came up late. The name
    is looked up with hosts: files alone (a mount namespace of the test's
    own), so that no resolver is waited for."""
    ns = os.path.join(TMPDIR, "nsswitch.conf")
    os.makedirs(TMPDIR, exist_ok=True)
    with open(ns, "w") as f:
        f.write("hosts: files\n")
    port = free_port()
    for args in (["-l", f"127.0.0.1:{port}", "-b", "no-such-host.invalid:445"],
                 ["-l", f"no-such-host.invalid:{port}", "-b", "127.0.0.1:445"]):
        r = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/nsswitch.conf && exec "$@"',
                            ns, SMBSPLICE, *args], capture_output=True, text=True, timeout=30)
        lines = r.stderr.splitlines()
        check(r.returncode == 1 and len(lines) == 1 and "does not resolve now" in lines[0],
              f"{args[1]} {args[3]}: a name that does not resolve: exit {r.returncode}, {lines}")


def section_twice():
    """A section given twice is named as such, whether the two are apart or
    in a row (which libinih alone reads as one section, so that its second
    listen was "given twice"), and [global] too."""
    lst = "listen = 127.0.0.1:1\nbackend = 127.0.0.1:2\n"
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "smbsplice.conf")
        for text, want in ((f"[a]\n{lst}[b]\n{lst.replace(':1', ':3')}[a]\n{lst}", ":7: [a] appears twice"),
                           (f"[a]\n{lst}[a]\n{lst}", ":4: [a] appears twice"),
                           (f"[global]\nworkers = 1\n[global]\nworkers = 2\n[a]\n{lst}", ":3: [global] appears twice"),
                           (f"[global]\nworkers = 1\n[a]\n{lst}[global]\nworkers = 2\n", ":6: [global] appears twice")):
            with open(conf, "w") as f:
                f.write(text)
            r = smbsplice("--check", "-c", conf)
            lines = r.stderr.splitlines()
            check(r.returncode == 2 and len(lines) == 1 and f"{conf}{want}" in lines[0],
                  f"{text.count('[')} sections, {want}: exit {r.returncode}, {lines}")


def unreadable():
    """A config file that cannot be read says so and why, and names --user
    only where --user is the cause (test_user.py: a reload as --user):
    here a user who is not root, with no --user anywhere, and a
    directory."""
    nobody = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--inh-caps=-all"]
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        conf = os.path.join(d, "smbsplice.conf")
        with open(conf, "w") as f:
            f.write("[a]\nlisten = 127.0.0.1:1\nbackend = 127.0.0.1:2\n")
        os.chmod(conf, 0o600)
        for pre, path, why in ((nobody, conf, "Permission denied"), ([], d, "Is a directory")):
            for args in (["--check", "-c", path], ["-c", path]):
                r = subprocess.run([*pre, SMBSPLICE, *args], capture_output=True, text=True, timeout=10)
                lines = r.stderr.splitlines()
                check(r.returncode == 2 and len(lines) == 1 and
                      lines[0] == f"smbsplice: {path}: cannot be read: {why}",
                      f"{' '.join(args[:-1])}{' as nobody' if pre else ''}, {why}: exit {r.returncode}, {lines}")


def privileged_port():
    """--check binds each listen address once, as a start would: a port
    below 1024 for a user without CAP_NET_BIND_SERVICE is refused by
    --check (exit 2) as by the start (exit 1), with the same line saying
    what to do; a port above passes, and so does root, and so does a
    --user that root would bind for. In a network namespace of the test's
    own, where net.ipv4.ip_unprivileged_port_start is the kernel's 1024
    whatever the host's."""
    nobody = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "--inh-caps=-all"]
    want = ("listener main: cannot listen on 0.0.0.0:445: Permission denied (ports below 1024 need root or "
            "CAP_NET_BIND_SERVICE: start smbsplice as root, with --user to give root up once it listens; "
            "grant it the capability")
    for args, status in ((["--check"], 2), ([], 1)):
        r = subprocess.run(["unshare", "-n", *nobody, SMBSPLICE, *args, "-l", "0.0.0.0:445", "-b", "127.0.0.1:2"],
                           capture_output=True, text=True, timeout=10)
        lines = r.stderr.splitlines()
        check(r.returncode == status and len(lines) == 1 and want in lines[0] and "smbsplice.socket" in lines[0],
              f"{' '.join(args) or 'start'} as nobody on port 445: exit {r.returncode}, {lines}")
    for pre, args in ((nobody, ["-l", "0.0.0.0:1445"]), ([], ["-l", "0.0.0.0:445"]),
                      ([], ["-l", "0.0.0.0:445", "--user", "nobody"])):
        r = subprocess.run(["unshare", "-n", *pre, SMBSPLICE, "--check", *args, "-b", "127.0.0.1:2"],
                           capture_output=True, text=True, timeout=10)
        check(r.returncode == 0 and "configuration OK" in r.stdout,
              f"--check {' '.join(args)}{' as nobody' if pre else ''}: exit {r.returncode}, {r.stderr.strip()}")


def answers(px):
    """What a client of @px reads: the backend's one line."""
    with px.connect() as c:
        return recv_exact(c, 2)


def second_instance():
    """A second smbsplice on the address the first listens on, with another
    backend, is refused in one line and exit 1 (without the check it would
    start, its SO_REUSEPORT sockets joining the first's group, and take
    about half its clients), also for the wildcard address over the first's
    127.0.0.1; the first serves on. --share-address lets it start (drain and
    start, test_upgrade.py). One process with listeners on 127.0.0.1:P and
    0.0.0.0:P is not refused by its own sockets."""
    srv_a = Server(lambda c: c.sendall(b"A\n"))
    srv_b = Server(lambda c: c.sendall(b"B\n"))
    px = Proxy(srv_a.addr, "--mode", "tcp")
    want = (f"smbsplice: error: listener main: cannot listen on HOST:{px.port}: Address already in use: another "
            "process listens there (if an smbsplice, the two would share its clients): stop it or choose another "
            "address; to start a new smbsplice beside an old one and then stop the old (drain and start), "
            "give --share-address")
    for host in ("127.0.0.1", "0.0.0.0"):
        p = subprocess.Popen([SMBSPLICE, "--mode", "tcp", "-l", f"{host}:{px.port}", "-b", srv_b.addr],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise TestFailure(f"a second smbsplice on {host}:{px.port}, where one listens, still runs after 10 s")
        lines = err.splitlines()
        check(p.returncode == 1 and lines == [want.replace("HOST", host)],
              f"a second smbsplice on {host}:{px.port}: exit {p.returncode}, {lines}")
    got = {answers(px) for _ in range(20)}
    check(got == {b"A\n"} and px.proc.poll() is None, f"... and the first serves on: 20 clients read {sorted(got)}")
    shared = Proxy(srv_b.addr, "--mode", "tcp", "--share-address", port=px.port)
    got = {answers(px) for _ in range(64)}
    check(got == {b"A\n", b"B\n"}, f"--share-address: the second starts, and 64 clients read {sorted(got)}")
    shared.stop()
    px.stop()
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "smbsplice.conf")
        with open(conf, "w") as f:
            f.write(f"[lo]\nlisten = 127.0.0.1:{port}\nbackend = {srv_a.addr}\nmode = tcp\n"
                    f"[any]\nlisten = 0.0.0.0:{port}\nbackend = {srv_b.addr}\nmode = tcp\n")
        both = Proxy(None, "-c", conf, listen=False)
        both.port, both.host = port, "127.0.0.1"
        got = answers(both)
        check(got == b"A\n", f"listeners on 127.0.0.1:{port} and 0.0.0.0:{port} in one process: both open, "
              f"127.0.0.1 answered by its own ({got})")
        both.stop()
    srv_a.close()
    srv_b.close()


if __name__ == "__main__":
    run(main)
