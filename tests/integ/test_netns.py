"""--listen-netns and --backend-netns: one smbsplice, sockets in two network
namespaces, both ways round (the pasta use case).

In a namespace of the test's own (`ip netns add`, lo up):

1. Into it: smbd runs inside the namespace on 127.0.0.1:PORT, smbsplice
   listens on the host with --backend-netns NAME, and smbclient on the
   host gets and puts a 64 MiB random file through it, both byte-exact
   (sha256 of the fetched file, and of the uploaded file in the share).
   The PID form works too: --backend-netns PID of a process inside the
   namespace, one get.
2. Out of it: smbd runs on the host, smbsplice listens on 127.0.0.1:Q
   inside the namespace (--listen-netns NAME, and the /run/netns/NAME path
   form), and smbclient run inside the namespace gets and puts through it,
   byte-exact.
3. Where the sockets are, by ss: while smbclient holds a session open,
   smbsplice's backend connection is in the backend's namespace and not in
   the client's, and its client connection the other way round; its
   listening sockets are only in the namespace it was told to listen in.
4. Reloads with namespaces (SIGHUP, a config file). As root: listeners
   that listen in and dial into the namespace are reloaded with changed
   settings and a moved listening socket, and serve on. As nobody
   (--user, workers sitting in the backend namespace, the privileged
   helper making what needs a privilege): a reload with new settings, one
   adding a listener that listens in the namespace, and one dialling out
   of the workers' namespace all serve; and when no listener used a
   namespace at start, a reload naming one serves too.
6. A namespace path is resolved once (issue 28): with backend-netns the
   PID of a process in the namespace, as root and as nobody, a reload
   after that process exits keeps the namespace and serves; a reload
   whose path now names another namespace (a link moved to the namespace
   of a process in a user namespace of its own, as a local user whose
   process took the PID would have) is refused with one line and the
   listener serves on into the namespace it had; and a namespace owned by
   another user namespace is refused at start unless --foreign-netns.
5. Clear errors at start, one line on standard error and exit status 1: a
   name not in /run/netns and a PID that does not exist (No such file), a
   namespace file of another kind and a plain file (is not a network
   namespace), and, run as `nobody`, a namespace it may not enter (cannot
   enter it, entering needs CAP_SYS_ADMIN) and root's /proc/PID/ns/net,
   which it may not open (Permission denied).
"""
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import smbgen
from harness import (SMBSPLICE, TMPDIR, Proxy, Samba, TestFailure, check, file_sha256, free_port, free_ports,
                     in_netns, need, parse_conn_line, random_file, run, sanitizer_report, user_copy, wait_for)

MIB = 64
NS = f"smbsp-netns{os.getpid()}"


def ip(*args):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if r.returncode:
        raise TestFailure(f"ip {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")


def tcp_of(pid, netns=None, listening=False):
    """smbsplice's (pid's) TCP sockets that `ss` shows in the host's
    namespace or in `netns`: [(state, local, peer)]. Listening sockets with
    `listening`, the others without."""
    argv = in_netns(netns, ["ss", "-Htnp", *(["-l"] if listening else [])])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    if r.returncode:
        raise TestFailure(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and re.search(rf"\bpid={pid},", line):
            out.append((f[0], f[3], f[4]))
    return out


def where(netns):
    return f"namespace {netns}" if netns else "the host"


class Session:
    """An smbclient session held open (commands from a pipe) until
    close(): a live connection through smbsplice to look at."""

    def __init__(self, smb, port, netns=None):
        argv = in_netns(netns, ["smbclient", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{smb.password}"])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def start_error(*args, user=None):
    """Run smbsplice with `args` and a listen address that is free; it must
    not start. Return (exit status, stderr lines)."""
    binary, pre = SMBSPLICE, None
    if user:
        pw = pwd.getpwnam(user)
        binary = user_copy(SMBSPLICE)

        def pre():
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
    argv = [binary, "--listen", f"127.0.0.1:{free_port()}", "--backend", "127.0.0.1:2", *args]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10, preexec_fn=pre)
    except subprocess.TimeoutExpired:
        raise TestFailure(f"{' '.join(argv)} started instead of refusing")
    finally:
        if user:
            shutil.rmtree(os.path.dirname(binary), ignore_errors=True)
    report = sanitizer_report(r.stderr)
    if report:
        raise TestFailure(f"sanitizer report from {' '.join(argv)}:\n{report}")
    return r.returncode, r.stderr.splitlines()


def conn_line(px, client, backend):
    """The log line that ends the connection from `client` to `backend`."""
    return px.wait_log(rf"^.* conn {re.escape(client)} -> {re.escape(backend)} .*end=\w+.*$")[0]


def into_namespace(procs):
    """1 and 3: smbd in the namespace, smbsplice and smbclient on the host."""
    smb = Samba(netns=NS)
    try:
        backend = f"127.0.0.1:{smb.port}"
        src = os.path.join(smb.share, "big.bin")
        want = random_file(src, MIB)

        px = Proxy(backend, "--backend-netns", NS)
        px.wait_log(rf"listening on {re.escape(px.addr)}, forwarding to {re.escape(backend)} in /run/netns/{NS} ")
        got = os.path.join(smb.dir, "got.bin")
        t0 = time.monotonic()
        smb.smbclient(px.port, cmd=f"get big.bin {got}")
        secs = time.monotonic() - t0
        check(file_sha256(got) == want,
              f"into the namespace: get of {MIB} MiB byte-exact ({MIB / secs:.0f} MiB/s), "
              f"host 127.0.0.1:{px.port} -> {backend} in {NS}")
        os.unlink(got)
        up = os.path.join(smb.dir, "up.bin")
        up_sum = random_file(up, MIB)
        t0 = time.monotonic()
        smb.smbclient(px.port, cmd=f"put {up} uploaded.bin")
        secs = time.monotonic() - t0
        check(file_sha256(os.path.join(smb.share, "uploaded.bin")) == up_sum,
              f"into the namespace: put of {MIB} MiB byte-exact in the share ({MIB / secs:.0f} MiB/s)")
        os.unlink(up)
        os.unlink(os.path.join(smb.share, "uploaded.bin"))

        # 3: where the sockets of a live session are.
        pid = px.proc.pid
        sess = Session(smb, px.port)
        procs.append(sess.proc)
        try:
            to_smbd = wait_for(f"smbsplice's backend connection to {backend} in {NS}",
                               lambda: [s for s in tcp_of(pid, NS) if s[2] == backend and s[0] == "ESTAB"])
            ns_all = tcp_of(pid, NS)
            host = wait_for(f"smbsplice's client connection on {px.addr} on the host",
                            lambda: [s for s in tcp_of(pid) if s[1] == px.addr and s[0] == "ESTAB"])
            host_all = tcp_of(pid)
            check(len(to_smbd) == 1 and not [s for s in ns_all if s[1] == px.addr],
                  f"ss in {NS}: smbsplice's backend connection, not its client one: {ns_all}")
            check(len(host) == 1 and not [s for s in host_all if s[2] == backend],
                  f"ss on the host: smbsplice's client connection, not its backend one: {host_all}")
            listen_host = tcp_of(pid, listening=True)
            listen_ns = tcp_of(pid, NS, listening=True)
            check(listen_host and all(s[1] == px.addr for s in listen_host) and not listen_ns,
                  f"listening sockets on the host only: {len(listen_host)} on {px.addr}, {len(listen_ns)} in {NS}")
        finally:
            sess.close()
        c = parse_conn_line(conn_line(px, host[0][2], backend))
        check(c["end"] == "fin", f"the session ended cleanly: {c['client']} -> {c['backend']} end={c['end']}, "
              f"c2s {c['c2s']} B, s2c {c['s2c']} B")
        px.stop()

        # The PID form: a process inside the namespace names it.
        sleeper = subprocess.Popen(in_netns(NS, ["sleep", "60"]))
        procs.append(sleeper)
        ns_ino = os.stat(f"/run/netns/{NS}").st_ino
        wait_for("sleep inside the namespace", lambda: os.stat(f"/proc/{sleeper.pid}/ns/net").st_ino == ns_ino)
        px = Proxy(backend, "--backend-netns", str(sleeper.pid))
        px.wait_log(rf"forwarding to {re.escape(backend)} in /proc/{sleeper.pid}/ns/net ")
        smb.smbclient(px.port, cmd=f"get big.bin {got}")
        check(file_sha256(got) == want, f"--backend-netns {sleeper.pid} (a PID in {NS}): get of {MIB} MiB byte-exact")
        os.unlink(got)
        px.stop()
    finally:
        smb.stop()


def out_of_namespace(procs):
    """2 and 3: smbd on the host, smbsplice listening in the namespace,
    smbclient in the namespace."""
    smb = Samba()
    src = os.path.join(smb.share, "big.bin")
    want = random_file(src, MIB)

    px = Proxy(smb.addr, "--listen-netns", NS)
    px.wait_log(rf"listening on {re.escape(px.addr)} in /run/netns/{NS}, forwarding to {re.escape(smb.addr)} ")
    got = os.path.join(smb.dir, "got.bin")
    t0 = time.monotonic()
    smb.smbclient(px.port, cmd=f"get big.bin {got}", netns=NS)
    secs = time.monotonic() - t0
    check(file_sha256(got) == want,
          f"out of the namespace: get of {MIB} MiB byte-exact ({MIB / secs:.0f} MiB/s), "
          f"{px.addr} in {NS} -> host {smb.addr}")
    os.unlink(got)
    up = os.path.join(smb.dir, "up.bin")
    up_sum = random_file(up, MIB)
    t0 = time.monotonic()
    smb.smbclient(px.port, cmd=f"put {up} uploaded.bin", netns=NS)
    secs = time.monotonic() - t0
    check(file_sha256(os.path.join(smb.share, "uploaded.bin")) == up_sum,
          f"out of the namespace: put of {MIB} MiB byte-exact in the share ({MIB / secs:.0f} MiB/s)")
    os.unlink(up)
    os.unlink(os.path.join(smb.share, "uploaded.bin"))

    pid = px.proc.pid
    listen_ns = tcp_of(pid, NS, listening=True)
    listen_host = tcp_of(pid, listening=True)
    check(listen_ns and all(s[1] == px.addr for s in listen_ns) and not listen_host,
          f"ss -ltn: {len(listen_ns)} listening sockets on {px.addr} in {NS}, {len(listen_host)} on the host")
    sess = Session(smb, px.port, netns=NS)
    procs.append(sess.proc)
    try:
        to_smbd = wait_for(f"smbsplice's backend connection to {smb.addr} on the host",
                           lambda: [s for s in tcp_of(pid) if s[2] == smb.addr and s[0] == "ESTAB"])
        host_all = tcp_of(pid)
        client = wait_for(f"smbsplice's client connection on {px.addr} in {NS}",
                          lambda: [s for s in tcp_of(pid, NS) if s[1] == px.addr and s[0] == "ESTAB"])
        ns_all = tcp_of(pid, NS)
        check(len(to_smbd) == 1 and not [s for s in host_all if s[1] == px.addr],
              f"ss on the host: smbsplice's backend connection, not its client one: {host_all}")
        check(len(client) == 1 and not [s for s in ns_all if s[2] == smb.addr],
              f"ss in {NS}: smbsplice's client connection, not its backend one: {ns_all}")
    finally:
        sess.close()
    px.stop()

    # The path form.
    px = Proxy(smb.addr, "--listen-netns", f"/run/netns/{NS}")
    smb.smbclient(px.port, cmd=f"get big.bin {got}", netns=NS)
    check(file_sha256(got) == want, f"--listen-netns /run/netns/{NS}: get of {MIB} MiB byte-exact")
    os.unlink(got)
    px.stop()
    smb.stop()


def errors():
    """4: each namespace that cannot be used is one line at start, exit 1."""
    cases = [
        (["--backend-netns", f"nosuch-xyz-{os.getpid()}"],
         [f"--backend-netns /run/netns/nosuch-xyz-{os.getpid()}:", "No such file"]),
        (["--listen-netns", "999999999"], ["--listen-netns /proc/999999999/ns/net:", "No such file"]),
        (["--backend-netns", "/proc/self/ns/uts"], ["/proc/self/ns/uts is not a network namespace"]),
        (["--listen-netns", "/etc/hostname"], ["/etc/hostname is not a network namespace"]),
    ]
    for args, needles in cases:
        rc, lines = start_error(*args)
        check(rc == 1 and len(lines) == 1 and all(n in lines[0] for n in needles),
              f"{' '.join(args)}: exit {rc}, {lines}")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        print("note: no user 'nobody': the permission cases are not tried", flush=True)
        return
    # --max-pipes 16 fits nobody's pipe allowance, so no warning about it
    # comes before the error (see test_unpriv.py).
    for opt in ("--backend-netns", "--listen-netns"):
        rc, lines = start_error(opt, NS, "--max-pipes", "16", user="nobody")
        check(rc == 1 and len(lines) == 1 and f"{opt} /run/netns/{NS}: cannot enter it" in lines[0]
              and "CAP_SYS_ADMIN" in lines[0], f"as nobody, {opt} {NS}: exit {rc}, {lines}")
    # A namespace named by the PID of a process of root's: nobody may not
    # even open it.
    rc, lines = start_error("--backend-netns", str(os.getpid()), "--max-pipes", "16", user="nobody")
    check(rc == 1 and len(lines) == 1 and f"/proc/{os.getpid()}/ns/net: Permission denied" in lines[0],
          f"as nobody, --backend-netns {os.getpid()} (root's): exit {rc}, {lines}")


ECHO_SERVER = """
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
def serve(c):
    while (b := c.recv(65536)):
        c.sendall(b)
    c.close()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
"""

ECHO_CLIENT = """
import socket, sys
try:
    c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
except ConnectionRefusedError:
    sys.exit(1)
hello = bytes.fromhex(sys.argv[2])
c.sendall(hello)
got = b""
while len(got) < len(hello) and (b := c.recv(len(hello) - len(got))):
    got += b
sys.exit(0 if got == hello else 1)
"""


def echo_in(netns, procs):
    """An echo server inside `netns` (or on the host); return its port."""
    p = subprocess.Popen(in_netns(netns, ["python3", "-c", ECHO_SERVER]), stdout=subprocess.PIPE, text=True)
    procs.append(p)
    return int(p.stdout.readline())


def served(port, netns=None):
    """Does a client in `netns` (or on the host) get its bytes echoed
    through 127.0.0.1:port? It sends an SMB client's first frame, which
    smb mode dials for."""
    r = subprocess.run(in_netns(netns, ["python3", "-c", ECHO_CLIENT, str(port), smbgen.hello(0).buf.hex()]),
                       timeout=20)
    return r.returncode == 0


def reload_to(px, conf, text):
    """Write the config file, SIGHUP, and return the line saying how the
    reload went (no connection may be open: the descriptors open now are
    the ones stop() will expect)."""
    n = len(re.findall(r"reload(?:: .* read| refused)", px.log()))
    with open(conf, "w") as f:
        f.write(text)
    os.chmod(conf, 0o644)
    px.proc.send_signal(signal.SIGHUP)
    line = px.wait_log(r"^.*reload(?:: .* read| refused).*$", count=n + 1)[-1]
    time.sleep(0.2)  # the workers swap listening sockets
    px.started()  # which are now the ones stop() expects open
    return line


def reloads(procs):
    """4: SIGHUP with namespaces in the configuration."""
    in_ns, host = echo_in(NS, procs), echo_in(None, procs)
    work = tempfile.mkdtemp(prefix="netns-reload-", dir=TMPDIR)
    os.chmod(work, 0o755)
    conf = os.path.join(work, "smbsplice.conf")
    p_in, p_out, p_out2 = free_ports(3)
    into = f"[into]\nlisten = 127.0.0.1:{p_in}\nbackend = 127.0.0.1:{in_ns}\nbackend-netns = {NS}\n"
    out = f"[out]\nlisten-netns = {NS}\nlisten = 127.0.0.1:{p_out}\nbackend = 127.0.0.1:{host}\n"
    with open(conf, "w") as f:
        f.write(into + out)
    px = Proxy(None, "-c", conf, listen=False)
    check(served(p_in) and served(p_out, NS), "as root: a listener dialling into the namespace and one listening in it")
    line = reload_to(px, conf, into + "mode = tcp\n" + out.replace(str(p_out), str(p_out2)))
    check("reload: " in line and " read, 2 listeners" in line, f"as root: SIGHUP with namespaces: {line.strip()}")
    check(served(p_in) and served(p_out2, NS) and not served(p_out, NS),
          "... both serve, the moved one on its new port in the namespace only")
    px.stop()

    # As nobody: every listener dials into the namespace, so the workers
    # sit there; the daemon has no capability, the helper enters for it.
    glob = "[global]\nuser = nobody\n"
    with open(conf, "w") as f:
        f.write(glob + into)
    os.chmod(conf, 0o644)
    px = Proxy(None, "-c", conf, listen=False)
    check(served(p_in), "as nobody: the listener dialling into the namespace serves")
    line = reload_to(px, conf, glob + into + "mode = tcp\n")
    check(" read, 1 listener" in line and served(p_in), f"as nobody: SIGHUP with new settings: {line.strip()}")
    p_out3 = free_port()
    both = (f"[out]\nlisten-netns = {NS}\nlisten = 127.0.0.1:{p_out3}\n"
            f"backend = 127.0.0.1:{in_ns}\nbackend-netns = {NS}\n")
    line = reload_to(px, conf, glob + into + both)
    check(" read, 2 listeners" in line and served(p_out3, NS) and served(p_in),
          f"as nobody: SIGHUP adding a listener that listens in the namespace: {line.strip()}")
    p_home = free_port()
    line = reload_to(px, conf, glob + into + f"[home]\nlisten = 127.0.0.1:{p_home}\nbackend = 127.0.0.1:{host}\n")
    check(" read, 2 listeners" in line and served(p_home) and served(p_in),
          f"as nobody: a reload dialling out of the workers' namespace (the helper makes its sockets): {line.strip()}")
    px.stop()

    # As nobody, no namespace at start: the helper enters it all the same.
    plain = f"[plain]\nlisten = 127.0.0.1:{free_port()}\nbackend = 127.0.0.1:{host}\n"
    with open(conf, "w") as f:
        f.write(glob + plain)
    os.chmod(conf, 0o644)
    px = Proxy(None, "-c", conf, listen=False)
    line = reload_to(px, conf, glob + plain + into)
    check(" read, 2 listeners" in line and served(p_in),
          f"as nobody, no namespace at start: a reload naming one serves: {line.strip()}")
    px.stop()
    shutil.rmtree(work, ignore_errors=True)


def pinned(procs):
    """6: a namespace path is resolved once per process."""
    in_ns = echo_in(NS, procs)
    work = tempfile.mkdtemp(prefix="netns-pin-", dir=TMPDIR)
    os.chmod(work, 0o755)
    conf, link = os.path.join(work, "smbsplice.conf"), os.path.join(work, "ns")
    ns_ino = os.stat(f"/run/netns/{NS}").st_ino
    # An attacker's namespace: a user namespace of its own, as any user may make.
    foreign = subprocess.Popen(["unshare", "-U", "-n", "sleep", "120"])
    procs.append(foreign)
    wait_for("a namespace of another user namespace",
             lambda: os.stat(f"/proc/{foreign.pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino)
    for glob in ("", "[global]\nuser = nobody\n"):
        who = "as nobody" if glob else "as root"
        sleeper = subprocess.Popen(in_netns(NS, ["sleep", "120"]))
        procs.append(sleeper)
        wait_for("sleep inside the namespace", lambda: os.stat(f"/proc/{sleeper.pid}/ns/net").st_ino == ns_ino)
        port = free_port()
        text = f"{glob}[into]\nlisten = 127.0.0.1:{port}\nbackend = 127.0.0.1:{in_ns}\nbackend-netns = {sleeper.pid}\n"
        with open(conf, "w") as f:
            f.write(text)
        os.chmod(conf, 0o644)
        px = Proxy(None, "-c", conf, listen=False)
        check(served(port), f"{who}: backend-netns {sleeper.pid} serves")
        if glob:
            # The helper may not open another uid's, or a more capable
            # process's, /proc/PID/ns/net: it takes the daemon's pin.
            kids = open(f"/proc/{px.proc.pid}/task/{px.proc.pid}/children").read().split()
            names = sorted(open(f"/proc/{k}/comm").read().strip() for k in kids)
            check(names == ["smbsplice-launc", "smbsplice-priv"],
                  f"{who}: the helper is alive beside the launcher ({names})")
        sleeper.kill()
        sleeper.wait()
        line = reload_to(px, conf, text + "mode = tcp\n")
        check(" read, 1 listener" in line and served(port),
              f"{who}: the process named by PID exited; a reload keeps its namespace: {line.strip()}")
        px.stop()

        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(f"/run/netns/{NS}", link)
        text = f"{glob}[into]\nlisten = 127.0.0.1:{port}\nbackend = 127.0.0.1:{in_ns}\nbackend-netns = {link}\n"
        with open(conf, "w") as f:
            f.write(text)
        os.chmod(conf, 0o644)
        px = Proxy(None, "-c", conf, listen=False)
        check(served(port), f"{who}: backend-netns through a link serves")
        os.unlink(link)
        os.symlink(f"/proc/{foreign.pid}/ns/net", link)
        line = reload_to(px, conf, text + "mode = tcp\n")
        check("refused" in line and "now names another network namespace" in line,
              f"{who}: a reload whose unchanged path now names another namespace is refused: {line.strip()}")
        check(served(port), f"{who}: ... and the listener dials into the namespace it had")
        px.stop()

    rc, lines = start_error("--backend-netns", str(foreign.pid))
    check(rc == 1 and "another user namespace" in lines[-1] and "foreign-netns" in lines[-1],
          f"a namespace of another user namespace is refused at start: {lines[-1] if lines else rc}")
    px = Proxy(f"127.0.0.1:{in_ns}", "--backend-netns", str(foreign.pid), "--foreign-netns")
    px.stop()
    check(True, "... and taken with --foreign-netns")
    foreign.kill()
    shutil.rmtree(work, ignore_errors=True)


def main():
    need("ip", "iproute2")
    need("ss", "iproute2")
    need("smbd", "samba")
    need("smbclient", "smbclient")
    if os.geteuid():
        print("SKIP: making network namespaces needs root", flush=True)
        raise SystemExit(77)
    procs = []
    ip("netns", "add", NS)
    try:
        ip("-n", NS, "link", "set", "lo", "up")
        errors()
        into_namespace(procs)
        out_of_namespace(procs)
        reloads(procs)
        pinned(procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        # smbd (Samba.stop_all) and smbsplice (Proxy.stop_all) are stopped
        # by run(), after a failure with their logs; the name can go now:
        # the namespace itself lives until the last process in it is gone.
        subprocess.run(["ip", "netns", "del", NS], capture_output=True, timeout=10)


if __name__ == "__main__":
    run(main, alarm=120)
