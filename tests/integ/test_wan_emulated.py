"""smbsplice as a WAN gateway, over smbsplice-wanem (smbsplice-wanem(1))
between namespaces of the test's own: a client namespace C and a gateway
namespace G, with Samba inside G (on 127.0.0.1:445 and 192.0.2.2:445) and
smbsplice beside it. Path 0 is 192.0.2.0/24 (C .1, G .2), path 1
198.51.100.0/24.

1. Split TCP: with --congestion client:bbr, smbsplice's client-side
   socket runs bbr (ss -ti in G) while the client's own socket runs cubic
   (ss -ti in C), and a get of WAN_MIB (default 8) MiB over 40 ms RTT and
   1% loss through it completes at least 2x faster than the same get
   direct, cubic on both ends. The namespaces' default must be cubic:
   a namespace other than the host's may only pick an algorithm in the
   global net.ipv4.tcp_allowed_congestion_control, so cubic is added to
   it for the test and the list restored in `finally`. (A root socket
   could pick cubic by setsockopt regardless, CAP_NET_ADMIN passes the
   list; smbclient and smbd do not set it, so the default is what counts.)
2. Outages: a total outage (smbsplice-wanem 'loss 100', then restored) of
   WAN_OUTAGE seconds (default 8; 30 for the issue's case, which takes
   about a minute with TCP's backoff: `make check-wan-slow`) in the middle of a get through
   smbsplice with its default keepalive (60:10:6, so TCP_USER_TIMEOUT
   120 s): the session survives and the file arrives byte-exact. With
   --keepalive 2:1:2 (user timeout 4 s), an outage that does not end
   ends the connection within seconds, with one log line saying
   "Connection timed out".
3. MPTCP between a branch gateway (smbsplice in C, --mptcp backend) and
   an HQ gateway (smbsplice in G, --mptcp listen, listening on the
   wildcard address: a join to the second address finds no listener
   when the listener is bound to the first), over both paths: G signals
   its second address (`ip mptcp endpoint add 198.51.100.2 dev wan1
   signal`) and both sides allow it (`ip mptcp limits set subflow 2
   add_addr_accepted 2`). Data flows on a subflow over each path (ss -ti
   in C: bytes received on both); a get over both paths is at least 1.15x
   one over path 0 alone (path 1 cut) -- a loose bound that a second
   path carrying nothing (1.0x) fails, while the claim itself (1.7x)
   comes from `make bench --only wan`; a cut of path 0, the one the
   connection began on, in the middle of a get costs no byte (sha256);
   and once smbclient quits, both gateways log the connection's end
   (end=fin) within a few seconds, not at the drain timeout.
4. The gateway pair over QUIC: a branch gateway in C whose backend is
   quic: (through a NAT of the test's, a UDP relay in C) and an HQ
   gateway in G with a quic: listener, over 40 ms with jitter that
   reorders and 1% loss: the NAT gives the QUIC client a new UDP port
   twice during a get (closing the old, as a NAT that forgot its
   binding), HQ validates each new path, and the file arrives
   byte-exact over one connection at each gateway.
"""
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from harness import (SMBSPLICE, SRCDIR, TMPDIR, Proxy, Samba, TestFailure, check, end_process, file_sha256,
                     in_netns, need, random_file, run, sh, wait_for)

WANEM = os.environ.get("SMBSPLICE_WANEM", os.path.join(SRCDIR, "wanem/smbsplice-wanem"))
NS = (f"wanC{os.getpid()}", f"wanG{os.getpid()}")
PATHS = (("192.0.2.1", "192.0.2.2"), ("198.51.100.1", "198.51.100.2"))
MIB = int(os.environ.get("WAN_MIB", "8"))
OUTAGE = float(os.environ.get("WAN_OUTAGE", "8"))
SMB_PORT, HQ_PORT, BRANCH_PORT = 445, 4450, 4451
ALLOWED = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
SCRATCH = None


class Wan:
    """One smbsplice-wanem path between C and G (devices wanN), its
    addresses set, changed by its control file and SIGHUP."""

    def __init__(self, n, *args):
        self.n = n
        self.control = os.path.join(SCRATCH, f"wan{n}.ctl")
        open(self.control, "w").close()
        self.logpath = os.path.join(SCRATCH, f"wanem{n}.log")
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(["chrt", "-f", "10", WANEM, "--a", f"{NS[0]}:wan{n}", "--b", f"{NS[1]}:wan{n}",
                                      "--control", self.control, *args], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("smbsplice-wanem's forwarding line", lambda: "info: forwarding" in self.text() or self.proc.poll() is not None)
        if self.proc.poll() is not None:
            raise TestFailure(f"smbsplice-wanem exited {self.proc.returncode}: {self.text().strip()}")
        for ns, a in zip(NS, PATHS[n]):
            sh("ip", "-n", ns, "addr", "add", f"{a}/24", "dev", f"wan{n}")

    def text(self):
        with open(self.logpath) as f:
            return f.read()

    def set(self, text):
        """Apply `text` as the control file (empty: the command line)."""
        before = self.text().count("info: reloaded")
        with open(self.control, "w") as f:
            f.write(text)
        self.proc.send_signal(signal.SIGHUP)
        wait_for("smbsplice-wanem's reload", lambda: self.text().count("info: reloaded") > before)

    def stop(self):
        end_process(self.proc)
        self.log.close()


def smbclient(port, cmd, host=PATHS[0][1], timeout=300):
    """smbclient in C against host:port; (seconds, output). -t: a READ
    of 8 MiB at 1% loss takes longer than the default 20 s."""
    argv = in_netns(NS[0], ["smbclient", f"//{host}/share", "-p", str(port), "-U", f"root%{Samba.password}",
                            "-t", "300", "-c", cmd])
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    secs = time.monotonic() - t0
    if r.returncode or "NT_STATUS" in r.stdout + r.stderr:
        raise TestFailure(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return secs, r.stdout + r.stderr


def get(port, name, host=PATHS[0][1], during=None):
    """Get share file `name` into the scratch directory; with `during`, a
    callable run in a thread while the get runs. (seconds, sha256)."""
    dst = os.path.join(SCRATCH, f"got-{name}")
    if os.path.exists(dst):
        os.unlink(dst)
    t = threading.Thread(target=during, daemon=True) if during else None
    if t:
        t.start()
    try:
        secs, _ = smbclient(port, f"get {name} {dst}", host)
    finally:
        if t:
            t.join(120)
    digest = file_sha256(dst)
    os.unlink(dst)
    return secs, digest


def ss_info(ns, filt):
    """ss -tinH in `ns` for a filter: one string per socket."""
    out = sh(*in_netns(ns, ["ss", "-tinH", "state", "established", filt])).stdout
    socks, cur = [], ""
    for line in out.splitlines():
        if line and not line[0].isspace() and cur:
            socks.append(cur)
            cur = ""
        cur += " " + line.strip()
    return socks + ([cur] if cur else [])


def gateway(*args, netns=NS[1], listen=f"{PATHS[0][1]}:{HQ_PORT}", backend=f"127.0.0.1:{SMB_PORT}"):
    host, port = listen.rsplit(":", 1)
    px = Proxy(backend, *args, listen_host=host, port=int(port), wrap=("ip", "netns", "exec", netns))
    return px


def set_cubic():
    """Allow cubic and make it both namespaces' default; the list the
    host had, to restore."""
    with open(ALLOWED) as f:
        allowed = f.read().strip()
    if "cubic" not in allowed.split():
        with open(ALLOWED, "w") as f:
            f.write(allowed + " cubic")
    for ns in NS:
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=cubic")
    return allowed


def restore_allowed(allowed):
    """Restore the list, unless someone else changed it meanwhile."""
    with open(ALLOWED) as f:
        now = f.read().strip()
    if now.split() == (allowed + " cubic").split():
        with open(ALLOWED, "w") as f:
            f.write(allowed)


def test_split_tcp(wan, digest):
    wan.set("delay 20 rate 100 queue 500 loss 1\n")
    try:
        px = gateway("--congestion", "client:bbr")
        # A session held open to look at the sockets.
        sess = subprocess.Popen(in_netns(NS[0], ["smbclient", f"//{PATHS[0][1]}/share", "-p", str(HQ_PORT),
                                                 "-U", f"root%{Samba.password}", "-t", "60"]),
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            gw = wait_for("smbsplice's client socket", lambda: ss_info(NS[1], f"( sport = :{HQ_PORT} )"), 30)
            cl = wait_for("smbclient's socket", lambda: ss_info(NS[0], f"( dport = :{HQ_PORT} )"), 30)
            check(" bbr " in gw[0] + " ", f"smbsplice's client-side socket runs bbr: {gw[0].strip()[:120]}")
            check(" cubic " in cl[0] + " ", f"while the client's runs cubic: {cl[0].strip()[:120]}")
        finally:
            sess.communicate(b"quit\n", timeout=30)
        direct, d1 = get(SMB_PORT, "data")
        split, d2 = get(HQ_PORT, "data")
        px.wait_log(r" conn .* end=fin", 30, count=2)
        px.stop()
    finally:
        wan.set("")
    print(f"  {MIB} MiB at 40 ms, 1% loss, 100 Mbit/s: direct cubic {direct:.2f} s "
          f"({MIB * 8.39 / direct:.1f} Mbit/s), through smbsplice client:bbr {split:.2f} s "
          f"({MIB * 8.39 / split:.1f} Mbit/s): {direct / split:.1f}x", flush=True)
    check(d1 == digest and d2 == digest, "both gets byte-exact")
    check(direct >= 2 * split, f"split TCP with bbr is at least 2x direct cubic ({direct / split:.1f}x)")


def test_outages(wan, digest):
    base = "delay 20 rate 10 queue 200\n"
    wan.set(base)
    try:
        px = gateway()

        def cut(secs):
            def fn():
                time.sleep(1.5)
                wan.set(base + "loss 100\n")
                time.sleep(secs)
                wan.set(base)
            return fn
        secs, got = get(HQ_PORT, "data", during=cut(OUTAGE))
        check(got == digest, f"a {OUTAGE:.0f} s outage in the middle of a get, with the default keepalive: "
              f"the get completes byte-exact ({secs:.1f} s)")
        line = px.wait_log(r"^.* conn .* end=\w+.*$", 30)[0]
        check(" end=fin " in line, f"... and the session ended cleanly afterwards: {line[line.index('end='):][:40]}")
        px.stop()

        # Shortened keepalive: a user timeout of 2 + 1 x 2 = 4 s.
        px = gateway("--keepalive", "2:1:2")

        def cut_for_good():
            time.sleep(1.5)
            wan.set(base + "loss 100\n")
        t = threading.Thread(target=cut_for_good, daemon=True)
        t.start()
        argv = in_netns(NS[0], ["smbclient", f"//{PATHS[0][1]}/share", "-p", str(HQ_PORT), "-U",
                                f"root%{Samba.password}", "-t", "60", "-c", f"get data {SCRATCH}/lost"])
        cli = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t.join()
        t0 = time.monotonic()
        lines = px.wait_log(r"^.* conn .* end=\w+.*$", 30)
        took = time.monotonic() - t0
        cli.kill()
        cli.wait()
        print(f"  {lines[0]}", flush=True)
        check("Connection timed out" in lines[0] and took < 20,
              f"an outage past --keepalive 2:1:2's user timeout ends the connection in {took:.1f} s, "
              f"the log line saying why")
        wan.set(base)
        px.stop()
    finally:
        wan.set("")


# A NAT in C between the branch gateway's QUIC client and the WAN: a UDP
# relay whose outside socket it replaces on SIGUSR1 (closing the old, as
# a NAT that forgot the binding), so that HQ sees the client's address
# change mid-transfer.
NAT = r"""
import selectors, signal, socket, sys
inside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
inside.bind(("127.0.0.1", int(sys.argv[1])))
far = (sys.argv[2], int(sys.argv[3]))
state = {"out": None, "client": None, "moves": 0}
sel = selectors.DefaultSelector()
sel.register(inside, selectors.EVENT_READ)
def outside():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((sys.argv[4], 0))
    if state["out"]:
        sel.unregister(state["out"])
        old = state["out"].getsockname()
        state["out"].close()
        state["moves"] += 1
        print(f"rebound {old[1]} -> {s.getsockname()[1]}", flush=True)
    sel.register(s, selectors.EVENT_READ)
    state["out"] = s
outside()
signal.signal(signal.SIGUSR1, lambda *a: outside())
print("nat ready", flush=True)
while True:
    try:
        events = sel.select(1)
    except InterruptedError:
        continue
    for key, _ in events:
        s = key.fileobj
        try:
            d, a = s.recvfrom(65536)
        except OSError:
            continue
        if s is inside:
            state["client"] = a
            state["out"].sendto(d, far)
        elif state["client"]:
            inside.sendto(d, state["client"])
            state["back"] = state.get("back", 0) + 1
            if state["back"] == 300:
                print("flowing", flush=True)
"""


def test_quic_pair(wan, digest):
    """A gateway pair over QUIC, BBR on its QUIC leg: smbclient ->
    smbsplice in C (a quic: backend) -> a NAT -> smbsplice-wanem (20 ms
    each way, 4 ms of jitter that reorders, 1% loss) -> smbsplice in G
    (a quic: listener) -> smbd. The NAT moves the QUIC client to a new UDP port twice during a
    get: HQ validates each new path, and the session's bytes arrive
    exact, one connection at each gateway."""
    from test_quic import make_certs
    d = os.path.join(SCRATCH, "certs")
    os.makedirs(d)
    ca, cert, key, _ = make_certs(d)
    quic_port, nat_port = 4452, 4453
    wan.set("delay 20 jitter 4 reorder loss 1 rate 100 queue 500\n")
    nat_py = os.path.join(SCRATCH, "nat.py")
    with open(nat_py, "w") as f:
        f.write(NAT)
    hq = branch = nat = None
    try:
        hq = Proxy(None, "--listen", f"quic:{PATHS[0][1]}:{quic_port}", "--backend", f"127.0.0.1:{SMB_PORT}",
                   "--quic-cert", cert, "--quic-key", key, "--congestion", "client:bbr", listen=False,
                   wrap=("ip", "netns", "exec", NS[1]))
        hq.wait_log(r"listening on quic:")
        natlog = open(os.path.join(SCRATCH, "nat.log"), "w")
        nat = subprocess.Popen(in_netns(NS[0], ["python3", nat_py, str(nat_port), PATHS[0][1], str(quic_port),
                                                PATHS[0][0]]), stdout=natlog, stderr=subprocess.STDOUT)
        wait_for("the NAT to be ready", lambda: "nat ready" in open(natlog.name).read() or nat.poll() is not None)
        branch = gateway("--quic-name", "smb.test", "--quic-ca", ca, "--congestion", "backend:bbr", netns=NS[0],
                         listen=f"127.0.0.1:{BRANCH_PORT}",
                         backend=f"quic:127.0.0.1:{nat_port}")

        def move():
            # Mid-transfer: once 300 datagrams have come back through it.
            wait_for("the get to flow through the NAT", lambda: "flowing" in open(natlog.name).read(), 60)
            for _ in range(2):
                nat.send_signal(signal.SIGUSR1)
                time.sleep(0.3)

        secs, got = get(BRANCH_PORT, "data", host="127.0.0.1", during=move)
        with open(natlog.name) as f:
            moves = f.read().count("rebound")
        check(got == digest and moves == 2,
              f"a get of {MIB} MiB over the QUIC gateway pair (40 ms, jitter that reorders, 1% loss), its client "
              f"moved to a new UDP port twice by a NAT, arrives byte-exact ({secs:.1f} s, {moves} moves)")
        # A move leaves HQ sending to the NAT's old port until the branch
        # next sends; while it only receives, that is its keepalive PING,
        # 5 s (ngq_client.c). Whole gets took 2.0 to 11.5 s with it (9.4 s
        # under the sanitizers); with the 25 s one, 2.0 s when no move
        # stalled and 29 to 72 s when one did (once past the 120 s idle
        # timeout, in CI). So this catches a longer keepalive only in a run
        # where a move stalls: 9 of 13 here.
        check(secs < 20, f"and the moves stalled it for seconds, not tens of them ({secs:.1f} s, bound 20)")
        branch.wait_log(r" conn .* end=fin", 30)
        hq.wait_log(r" conn .* end=fin", 30)
        ends = [len(re.findall(r" conn .* end=", p.whole_lines())) for p in (branch, hq)]
        check(ends == [1, 1], f"one connection at each gateway carried it, not a reconnection ({ends})")
    finally:
        wan.set("")
        for p in (branch, hq):
            if p:
                p.stop()
        if nat:
            end_process(nat)


def quic_ok():
    """Whether this smbsplice has QUIC (else the pair is skipped, said)."""
    from test_quic import quic_built
    if quic_built():
        return True
    print("note: smbsplice was built without QUIC: the QUIC gateway pair is not tried", flush=True)
    return False


def test_mptcp(wan0, digest):
    for ns in NS:
        sh("ip", "-n", ns, "mptcp", "limits", "set", "subflow", "2", "add_addr_accepted", "2")
    base = "delay 5 rate 40 queue 300\n"
    wan0.set(base)
    wans = [wan0, Wan(1, "--delay", "5", "--rate", "40", "--queue", "300")]
    try:
        sh("ip", "-n", NS[1], "mptcp", "endpoint", "add", PATHS[1][1], "dev", "wan1", "signal")
        hq = gateway("--mptcp", "listen", listen=f"0.0.0.0:{HQ_PORT}")
        branch = gateway("--mptcp", "backend", netns=NS[0], listen=f"127.0.0.1:{BRANCH_PORT}",
                         backend=f"{PATHS[0][1]}:{HQ_PORT}")
        seen = set()

        def watch():
            end = time.monotonic() + 20
            while time.monotonic() < end and len(seen) < 2:
                for s in ss_info(NS[0], f"( dport = :{HQ_PORT} )"):
                    m = re.search(r"bytes_received:(\d+)", s)
                    if m and int(m.group(1)) > (1 << 20):
                        seen.update(p for p, (a, _) in enumerate(PATHS) if f"{a}:" in s)
                time.sleep(0.2)

        both, got = get(BRANCH_PORT, "data", host="127.0.0.1", during=watch)
        check(got == digest, f"a get through the MPTCP pair, byte-exact ({both:.2f} s)")
        check(seen == {0, 1}, f"data flowed on a subflow over each path (paths {sorted(seen)})")
        wans[1].set(base + "loss 100\n")
        one, got = get(BRANCH_PORT, "data", host="127.0.0.1")
        wans[1].set(base)
        print(f"  {MIB} MiB: two paths of 40 Mbit/s {both:.2f} s, one {one:.2f} s: {one / both:.2f}x", flush=True)
        # Loose on purpose: the 2 s transfer carries smbclient's fixed
        # session setup, and a sanitizer build on 2 loaded cores has
        # measured 1.26x; an idle second path gives 1.0x.
        check(got == digest and one >= 1.15 * both, f"two paths at least 1.15x one ({one / both:.2f}x)")

        def cut_primary():
            time.sleep(0.7)
            wans[0].set(base + "loss 100\n")
        secs, got = get(BRANCH_PORT, "data", host="127.0.0.1", during=cut_primary)
        check(got == digest, f"path 0 (the first subflow's) cut in the middle of a get: no byte lost ({secs:.2f} s)")
        wans[0].set(base)
        # The open question of issue 20: after the client quits, both
        # gateways end the connection at once, not at the drain timeout.
        for px in (branch, hq):
            px.wait_log(r" conn .* end=fin", 10, count=3)
        check(True, "after each get, both gateways logged the connection's end (end=fin) within seconds")
        branch.stop()
        hq.stop()
    finally:
        wans[1].stop()
        wan0.set("")
        sh("ip", "-n", NS[1], "mptcp", "endpoint", "flush", ok=False)


def main():
    global SCRATCH
    need("smbclient", "smbclient")
    need("ss", "iproute2")
    need("chrt", "util-linux")
    os.makedirs(TMPDIR, exist_ok=True)
    SCRATCH = tempfile.mkdtemp(dir=TMPDIR, prefix="wan-emulated-")
    allowed = None
    try:
        for ns in NS:
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        allowed = set_cubic()
        # Path 0 for the whole test (its addresses must exist before smbd
        # binds to them), each part setting it by its control file.
        wan = Wan(0)
        try:
            # smbd skips point-to-point devices such as smbsplice-wanem's
            # tun in its interface list: it binds to the wildcard address
            # here, in a namespace of the test's own.
            smb = Samba(netns=NS[1], port=SMB_PORT,
                        conf_extra="[global]\n\tserver multi channel support = no\n\tbind interfaces only = no")
            digest = random_file(os.path.join(smb.share, "data"), MIB)
            only = os.environ.get("WAN_ONLY", "split,outage,mptcp,quic").split(",")
            if "split" in only:
                test_split_tcp(wan, digest)
            if "outage" in only:
                test_outages(wan, digest)
            if "mptcp" in only:
                test_mptcp(wan, digest)
            if "quic" in only and quic_ok():
                test_quic_pair(wan, digest)
            smb.stop()
        finally:
            wan.stop()
        shutil.rmtree(SCRATCH)
    finally:
        if allowed is not None:
            restore_allowed(allowed)
        for ns in NS:
            sh("ip", "netns", "del", ns, ok=False)


if __name__ == "__main__":
    run(main, alarm=900)
