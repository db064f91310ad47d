"""--user: the daemon keeps no capability in any thread; a privileged helper
process makes the sockets that need one.

On the topology of test_transparent.py (client C, smbsplice's P, server
S, each a network namespace, with P's transparent-proxy recipe):

- smbsplice --user nobody --listen-netns P --backend-netns P --transparent:
  every task of the daemon has CapEff, CapPrm and CapBnd 0 and runs as
  nobody; exactly one child, the helper, runs as uid 0 with CapEff,
  CapPrm and CapBnd exactly CAP_NET_ADMIN, CAP_NET_BIND_SERVICE and
  CAP_SYS_ADMIN, no-new-privs, and holds nothing but sockets,
  namespaces and /dev/null; and the server in S still sees C's own address,
  IPv4 and IPv6 (the helper made the socket IP_TRANSPARENT and bound it);
- what the helper adds to a connection's set-up: the median time from
  connect() to the server's answer, through that smbsplice and through
  the same one run as root (no helper), interleaved, must differ by less
  than 1 ms;
- the helper killed: one line says so, a new client is reset at once,
  the daemon serves on and stops cleanly;
- the helper ignores the signals a service manager sends the whole group
  (SIGTERM, SIGHUP, SIGINT, SIGUSR1), and is gone once the daemon has
  stopped, or has been killed with SIGKILL.

On the host's loopback, with a config file:

- a listener a reload adds, under --user nobody, is made by root: a
  process running as nobody that binds the same address with SO_REUSEPORT
  gets EADDRINUSE (it would join the group, and take half the clients, of
  a socket nobody owned), and the new listener serves."""
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from harness import Proxy, Server, TMPDIR, check, free_ports, median, need, recv_exact, run
import test_transparent as tt

CAP_NET_BIND_SERVICE, CAP_NET_ADMIN, CAP_SYS_ADMIN = 10, 12, 21
HELPER_CAPS = 1 << CAP_NET_BIND_SERVICE | 1 << CAP_NET_ADMIN | 1 << CAP_SYS_ADMIN
PORT_USER, PORT_ROOT = 7100, 7101   # in P: --user (the helper), root (none)
PORT_KILLED = 7102                  # in P: the daemon whose helper must follow it
SETUP_CONNS = 300                   # per proxy, for the set-up time


def status(path):
    with open(path) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def helper_of(pid):
    """The daemon's privileged helper: of its two child processes, the one
    with the helper's capabilities; the other, the launcher a handover
    needs (proxy/handover/launcher.c), keeps root but holds nothing but standard
    input, output and error, its one socket to the daemon and the
    signalfd it reaps its child with."""
    kids = []
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/children") as f:
            kids += [int(k) for k in f.read().split()]
    check(len(kids) == 2, f"the daemon has two child processes, the helper and the launcher ({kids})")
    helper = [k for k in kids if int(status(f"/proc/{k}/status")["CapEff"], 16) == HELPER_CAPS]
    check(len(helper) == 1, f"one of them has the helper's capabilities ({kids})")
    launcher = [k for k in kids if k not in helper][0]
    fds = {int(fd): os.readlink(f"/proc/{launcher}/fd/{fd}") for fd in os.listdir(f"/proc/{launcher}/fd")}
    extra = sorted(f for fd, f in fds.items() if fd > 2)
    check(len(extra) == 2 and extra[0] == "anon_inode:[signalfd]" and extra[1].startswith("socket:"),
          f"the launcher (pid {launcher}) holds only 0, 1, 2, its socket and its SIGCHLD signalfd "
          f"({sorted(fds.items())})")
    return helper[0]


def check_caps(pid, nobody):
    tasks = {t: status(f"/proc/{pid}/task/{t}/status") for t in os.listdir(f"/proc/{pid}/task")}
    bad = {t: (st["CapEff"], st["CapPrm"], st["CapBnd"]) for t, st in tasks.items()
           if int(st["CapEff"], 16) or int(st["CapPrm"], 16) or int(st["CapBnd"], 16)
           or st["Uid"].split()[0] != str(nobody.pw_uid)}
    check(len(tasks) >= 3 and not bad,
          f"--user nobody --backend-netns --transparent: CapEff, CapPrm, CapBnd 0 and uid nobody "
          f"in all {len(tasks)} tasks of the daemon ({bad or 'none other'})")
    h = helper_of(pid)
    st = status(f"/proc/{h}/status")
    sets = {k: int(st[k], 16) for k in ("CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb")}
    check(st["Uid"].split() == ["0"] * 4 and sets == {"CapEff": HELPER_CAPS, "CapPrm": HELPER_CAPS,
                                                       "CapBnd": HELPER_CAPS, "CapInh": 0, "CapAmb": 0},
          f"the helper (pid {h}, {st['Name']}): uid 0, only CAP_NET_ADMIN, CAP_NET_BIND_SERVICE, "
          f"CAP_SYS_ADMIN ({ {k: hex(v) for k, v in sets.items()} })")
    check(st["NoNewPrivs"] == "1", "... no-new-privs set")
    fds = [os.readlink(f"/proc/{h}/fd/{fd}") for fd in os.listdir(f"/proc/{h}/fd")]
    others = [f for f in fds if not f.startswith(("socket:", "net:", "/run/netns/")) and f != "/dev/null"]
    check(not others,
          f"... and holds only its channels, namespaces and /dev/null ({sorted(fds)})")
    return h


def alive(pid):
    """Is the process there, and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def gone_within(pid, seconds):
    end = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not alive(pid)


def timed_ask(dst, port, src):
    """Connect from C, ask, read the answer: the seconds it took."""
    with tt.inside(tt.NS_C):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.bind((src, 0))
        t = time.perf_counter()
        s.connect((dst, port))
        s.sendall(b"who am I?\n")
        recv_exact(s, len(src) + 1)
        return time.perf_counter() - t
    finally:
        s.close()


def transparent_in_namespace():
    nobody = pwd.getpwnam("nobody")
    with tt.inside(tt.NS_S):
        peer4 = Server(tt.tell_peer, host=tt.S4)
        peer6 = Server(tt.tell_peer, host=tt.S6)
    args = ("--listen-netns", tt.NS_P, "--backend-netns", tt.NS_P, "--transparent", "--mode", "tcp",
            "--workers", "2")
    pu = Proxy(peer4.addr, *args, "--user", "nobody", listen_host=tt.PC4, port=PORT_USER)
    pu6 = Proxy(peer6.addr, *args, "--user", "nobody", listen_host=tt.PC6, port=PORT_USER)
    seen = tt.ask(tt.PC4, PORT_USER, src=tt.C4), tt.ask(tt.PC6, PORT_USER, src=tt.C6)
    check(seen == (tt.C4, tt.C6), f"--user nobody: the server sees the client's own address, IPv4 and IPv6 ({seen})")
    helper = check_caps(pu.proc.pid, nobody)

    # The helper's cost: the same smbsplice as root has none.
    pr = Proxy(peer4.addr, *args, listen_host=tt.PC4, port=PORT_ROOT)
    with_h, without = [], []
    for _ in range(SETUP_CONNS):
        with_h.append(timed_ask(tt.PC4, PORT_USER, tt.C4))
        without.append(timed_ask(tt.PC4, PORT_ROOT, tt.C4))
    added = (median(with_h) - median(without)) * 1e3
    print(f"set-up, median of {SETUP_CONNS}: {median(with_h) * 1e3:.3f} ms with the helper, "
          f"{median(without) * 1e3:.3f} ms without: {added:.3f} ms added", flush=True)
    check(added < 1.0, f"the helper adds {added:.3f} ms to a connection's set-up at the median (< 1 ms)")
    pr.wait_log(r" end=", count=SETUP_CONNS)
    pr.stop()

    # The helper killed: one line, clients reset, the daemon serves on.
    pu.wait_log(r" end=", count=SETUP_CONNS + 1)
    os.kill(helper, signal.SIGKILL)
    t = time.monotonic()
    seen = [tt.ask(tt.PC4, PORT_USER, src=tt.C4) for _ in range(3)]
    took = time.monotonic() - t
    check(seen == [None] * 3 and took < 1.5, f"helper gone: three clients reset at once ({seen}, {took:.2f} s)")
    lines = pu.wait_log(r"^.*privileged helper \(pid \d+\) is gone.*$")
    time.sleep(0.2)
    check(len(re.findall(r"privileged helper \(pid \d+\) is gone", pu.log())) == 1 and "restart smbsplice" in lines[0],
          f"... said once: {lines[0].strip()}")
    check(pu.proc.poll() is None, "... and the daemon runs on")
    pu.stop()

    # The signals a service manager sends the whole group are the
    # daemon's; the helper ends with the daemon, stopped or killed.
    h6 = helper_of(pu6.proc.pid)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1):
        os.kill(h6, sig)
    time.sleep(0.3)
    check(alive(h6), "the helper ignores SIGTERM, SIGHUP, SIGINT and SIGUSR1")
    pu6.stop()
    check(gone_within(h6, 2), "... and is gone once the daemon has stopped")
    pk = Proxy(peer4.addr, *args, "--user", "nobody", listen_host=tt.PC4, port=PORT_KILLED)
    hk = helper_of(pk.proc.pid)
    pk.proc.kill()
    pk.proc.wait()
    check(gone_within(hk, 2), "the daemon killed (SIGKILL): its helper is gone too (PR_SET_PDEATHSIG, its channels hung up)")
    pk.stop(check=False)
    peer4.close()
    peer6.close()


def bind_as(user, port):
    """As `user`, bind 127.0.0.1:port with SO_REUSEPORT: "ok" or the error.
    Run by the test's own interpreter (make check's, /usr/bin/python3):
    the python3 first on root's PATH may be one `user` cannot reach."""
    code = ("import socket, sys\n"
            "s = socket.socket()\n"
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n"
            "try:\n"
            f"    s.bind(('127.0.0.1', {port})); s.listen(); print('ok')\n"
            "except OSError as e:\n"
            "    print(e.errno)\n")
    pw = pwd.getpwnam(user)
    r = subprocess.run(["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
                        sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    return r.stdout.strip() or r.stderr.strip()


def reload_adds_root_listener():
    def echo(c):
        while (b := c.recv(65536)):
            c.sendall(b)

    srv = Server(echo)
    os.makedirs(TMPDIR, exist_ok=True)
    work = tempfile.mkdtemp(prefix="privsep-", dir=TMPDIR)
    os.chmod(work, 0o755)
    conf = os.path.join(work, "smbsplice.conf")
    p_a, p_b = free_ports(2)
    first = f"[global]\nuser = nobody\n[a]\nlisten = 127.0.0.1:{p_a}\nbackend = {srv.addr}\nmode = tcp\n"
    with open(conf, "w") as f:
        f.write(first)
    os.chmod(conf, 0o644)
    px = Proxy(None, "-c", conf, listen=False)
    with open(conf, "w") as f:
        f.write(first + f"[b]\nlisten = 127.0.0.1:{p_b}\nbackend = {srv.addr}\nmode = tcp\n")
    px.proc.send_signal(signal.SIGHUP)
    line = px.wait_log(r"^.*reload(?:: .* read| refused).*$")[0]
    check(" read, 2 listeners" in line, f"--user nobody: a reload adds listener b: {line.strip()}")
    time.sleep(0.2)  # the workers take the new sockets
    px.started()  # which stop() then expects open
    got = bind_as("nobody", p_b)
    check(got == str(__import__("errno").EADDRINUSE),
          f"as nobody, SO_REUSEPORT on the reload's new listener 127.0.0.1:{p_b}: EADDRINUSE (got {got})")
    c = socket.create_connection(("127.0.0.1", p_b), timeout=10)
    c.sendall(b"hello")
    check(recv_exact(c, 5) == b"hello", "... and the new listener serves")
    c.close()
    px.wait_log(r" end=fin ")
    px.stop()
    srv.close()
    shutil.rmtree(work, ignore_errors=True)


def main():
    if os.geteuid():
        print("SKIP: needs root (network namespaces, --user)", flush=True)
        raise SystemExit(77)
    need("ip", "iproute2")
    need("nft", "nftables")
    need("setpriv", "util-linux")
    reload_adds_root_listener()
    try:
        tt.build_topology()
        transparent_in_namespace()
    finally:
        tt.remove_topology()


if __name__ == "__main__":
    run(main, alarm=120)
