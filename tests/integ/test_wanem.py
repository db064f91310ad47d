"""smbsplice-wanem, the user-space WAN: between two network namespaces of
the test's own (192.0.2.0/24 and 2001:db8::/64 on its two tun devices),
checked with ping, iperf3 and a TCP transfer:

1. The command line: the program, its --help, --version, mistakes and
   log lines, and its man page all say smbsplice-wanem (not smbsplice-wanem, the
   name of TCS's WANem emulator); every option --help lists has an entry
   in smbsplice-wanem(1); mistakes are one line and exit status 2, a
   namespace that is not there one line and status 1.
2. Delay: the RTT by ping (IPv4 and IPv6) is within 0.5 ms of the two
   one-way delays added up (median; the minimum never below), per
   direction (--delay 10/5). Jitter keeps packets in order unless
   --reorder is given, and then it reorders.
3. Loss: --loss 10/0 over 2,000 pings loses within 4 sigma of the
   binomial mean, every loss counted by smbsplice-wanem on the A-to-B side, none
   the other way; --burst 2,25 loses its 7.4% in bursts (mean run of lost
   pings near 1/R = 4, where independent loss would give 1.08).
4. Rate: iperf3 (cubic) through --rate 100 gets within 5% of 100 Mbit/s
   (a short rate is measured again, up to three times, as for UDP);
   the queue drops at its tail (smbsplice-wanem counts it) and, with the link
   saturated, a ping's RTT stays within what --queue 200 can add.
5. No corruption: a 64 MiB TCP transfer through delay, jitter and loss
   arrives byte-exact (sha256), and neither stack counted a checksum or
   header error.
6. Cut and restore through --control and SIGHUP: "loss 100" cuts the path
   (no ping answered) while a TCP connection waits, an empty file brings
   it back (the connection carries on), and a file that does not parse is
   refused in one line and changes nothing.
7. Throughput at 0 delay with --mtu 65535: at least 0.5 Gbit/s by iperf3
   here (the machine is shared; the figure is printed).
"""
import hashlib
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

from harness import SRCDIR, TMPDIR, TestFailure, check, end_process, in_netns, need, run, sanitizer_report, sh, wait_for

WANEM = os.environ.get("SMBSPLICE_WANEM", os.path.join(SRCDIR, "wanem/smbsplice-wanem"))
MAN1 = os.path.join(SRCDIR, "contrib/man/smbsplice-wanem.1.scd")
NS = (f"wanemA{os.getpid()}", f"wanemB{os.getpid()}")
ADDR4 = ("192.0.2.1", "192.0.2.2")
ADDR6 = ("2001:db8::1", "2001:db8::2")
MIB = 64
SCRATCH = None  # main()'s scratch directory, for smbsplice-wanem's logs and the data


class Wan:
    """A smbsplice-wanem between the two namespaces, their addresses set."""

    def __init__(self, *args, tag="wan", realtime=True):
        """With `realtime`, at SCHED_FIFO priority (chrt), as
        smbsplice-wanem(1) advises on a busy machine: the tests share
        theirs."""
        self.logpath = os.path.join(SCRATCH, f"wanem-{tag}.log")
        self.log = open(self.logpath, "w")
        rt = ["chrt", "-f", "10"] if realtime else []
        self.proc = subprocess.Popen([*rt, WANEM, "--a", f"{NS[0]}:wan0", "--b", f"{NS[1]}:wan0", *args],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("smbsplice-wanem's forwarding line", lambda: "info: forwarding" in self.text() or self.proc.poll() is not None)
        if self.proc.poll() is not None:
            raise TestFailure(f"smbsplice-wanem exited {self.proc.returncode}: {self.text().strip()}")
        for ns, a4, a6 in zip(NS, ADDR4, ADDR6):
            sh("ip", "-n", ns, "addr", "add", f"{a4}/24", "dev", "wan0")
            sh("ip", "-n", ns, "addr", "add", f"{a6}/64", "dev", "wan0", "nodad")

    def text(self):
        with open(self.logpath) as f:
            return f.read()

    def signal_and_wait(self, sig, pattern, lines=1):
        """Send `sig`; wait until `lines` more lines match `pattern`."""
        before = len(re.findall(pattern, self.text(), re.M))
        self.proc.send_signal(sig)
        wait_for(f"smbsplice-wanem's answer to signal {sig}",
                 lambda: len(re.findall(pattern, self.text(), re.M)) >= before + lines)
        return self.text().splitlines()[-lines:]

    def stats(self):
        """{direction: {counter: n}} by SIGUSR1."""
        return parse_stats(self.signal_and_wait(signal.SIGUSR1, r"info: stats ", 2))

    def stop(self):
        """SIGTERM: it must exit 0; the last counters."""
        ended = end_process(self.proc)
        self.log.close()
        if not ended:
            raise TestFailure("smbsplice-wanem did not exit on SIGTERM within 10 s")
        report = sanitizer_report(self.text())
        check(self.proc.returncode == 0 and not report,
              f"smbsplice-wanem exits 0 on SIGTERM ({self.proc.returncode}){', ' + report if report else ''}")
        return parse_stats(self.text().splitlines()[-2:])


def parse_stats(lines):
    out = {}
    for line in lines:
        m = re.search(r"stats (\S+): (.*)", line)
        if m:
            out[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    if set(out) != {"a->b", "b->a"}:
        raise TestFailure(f"no counters in smbsplice-wanem's lines: {lines}")
    return out


def ping(dst, count, interval, netns=NS[0]):
    """(seqs answered in the order the answers came, their RTTs in ms)."""
    argv = in_netns(netns, ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", "1", dst])
    r = sh(*argv, timeout=count * interval + 30, ok=False)
    seqs, rtts = [], []
    for m in re.finditer(r"icmp_seq=(\d+) .*?time=([\d.]+) ms", r.stdout):
        seqs.append(int(m.group(1)))
        rtts.append(float(m.group(2)))
    return seqs, rtts


def out_of_order(seqs):
    return sum(1 for a, b in zip(seqs, seqs[1:]) if b < a)


def test_cli():
    check(os.path.basename(WANEM) == "smbsplice-wanem", f"the program is smbsplice-wanem ({WANEM})")
    r = sh(WANEM, "--help")
    check(r.stdout.startswith("Usage: smbsplice-wanem --a "), f"--help's usage names smbsplice-wanem: {r.stdout.splitlines()[0]}")
    opts = re.findall(r"^  --([a-z-]+)", r.stdout, re.M)
    check(len(opts) >= 14, f"smbsplice-wanem --help lists {len(opts)} options")
    r = sh(WANEM, "--version")
    check(re.fullmatch(r"smbsplice-wanem \S+\n", r.stdout), f"--version: {r.stdout.strip()}")
    with open(MAN1) as f:
        man = f.read()
    check(man.startswith("smbsplice-wanem(1) ") and "\nsmbsplice-wanem - " in man
          and not re.search(r"(?<![-\w])wanem(?![-\w])", man),
          "the man page is smbsplice-wanem(1) and never says the bare name wanem")
    missing = [o for o in opts if not re.search(rf"^\*--{o}\*", man, re.M)]
    check(not missing, f"every option has an entry in smbsplice-wanem(1) (missing: {missing})")
    for args, says in ((["--a", f"{NS[0]}:wan0"], "--a and --b are both needed"),
                       (["--a", "x:w", "--b", "y:w", "--delay", "ten"], "--delay: 'ten' is not"),
                       (["--a", "x:w", "--b", "y:w", "--queue", "900", "--limit", "100"], "raise --limit"),
                       (["--a", "x", "--b", "y:w"], "'x' is not NETNS:IFNAME"),
                       (["--a", "x:w", "--b", "y:w", "--burst", "5"], "--burst: '5' is not"),
                       (["--a", "x:w", "--b", "y:w", "--bogus"], "unknown option '--bogus'")):
        r = sh(WANEM, *args, ok=False)
        check(r.returncode == 2 and r.stderr.startswith("smbsplice-wanem: ") and says in r.stderr
              and len(r.stderr.splitlines()) == 1,
              f"smbsplice-wanem {' '.join(args)}: status 2, one line ({r.returncode}: {r.stderr.strip()})")
    r = sh(WANEM, "--a", f"nosuch{os.getpid()}:w", "--b", f"{NS[1]}:w", ok=False)
    check(r.returncode == 1 and r.stderr.startswith("smbsplice-wanem: error: side A: /run/netns/nosuch")
          and "No such file" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"a namespace that is not there: status 1, one line ({r.returncode}: {r.stderr.strip()})")


def test_delay():
    wan = Wan("--delay", "10/5", tag="delay")
    try:
        for dst in (ADDR4[1], ADDR6[1]):
            # ping's own wake-ups count in what it reports: beside a
            # CPU-bound test (make -j2) a median can run late by more than
            # the bound while smbsplice-wanem is right, so a late median is
            # measured again, up to three times; an early answer never is.
            for attempt in range(3):
                seqs, rtts = ping(dst, 100, 0.01)
                check(len(rtts) == 100, f"{dst}: 100 of 100 pings answered ({len(rtts)})")
                med = statistics.median(rtts)
                if abs(med - 15.0) <= 0.5 or min(rtts) < 15.0:
                    break
                print(f"note: {dst}: median RTT {med:.3f} ms, measured again (the machine is busy)", flush=True)
            print(f"  {dst}: RTT min {min(rtts):.3f} median {med:.3f} mean {statistics.mean(rtts):.3f} "
                  f"max {max(rtts):.3f} ms", flush=True)
            check(abs(med - 15.0) <= 0.5, f"{dst}: median RTT {med:.3f} ms is within 0.5 ms of 10 + 5")
            check(min(rtts) >= 15.0, f"{dst}: no ping is answered early (min {min(rtts):.3f} ms)")
    finally:
        wan.stop()
    for reorder in (False, True):
        wan = Wan("--delay", "5", "--jitter", "4", *(["--reorder"] if reorder else []), tag="jitter")
        try:
            seqs, rtts = ping(ADDR4[1], 300, 0.002)
            check(len(rtts) == 300, f"jitter: 300 of 300 pings answered ({len(rtts)})")
            spread = max(rtts) - min(rtts)
            check(spread > 3, f"jitter 4 ms each way spreads the RTT ({min(rtts):.2f} to {max(rtts):.2f} ms)")
            med = statistics.median(rtts)
            check(min(rtts) >= 2.0 and med <= 18 + 1,
                  f"none below 2 x (5 - 4) ms, the median below 2 x (5 + 4) ms, and scheduling "
                  f"({min(rtts):.2f}, median {med:.2f})")
            late = out_of_order(seqs)
            if reorder:
                check(late > 10, f"--reorder: answers come out of order ({late} of 300)")
            else:
                check(late == 0, f"without --reorder, every answer comes in order ({late} out of order)")
        finally:
            wan.stop()


def counted(c, what, lost, pings):
    """A direction's counter `what` counts the `lost` pings of `pings`,
    and at most the few other packets the stacks sent (IPv6 neighbour
    discovery and the like) besides."""
    others = c["forwarded"] + c["loss"] + c["burst"] + c["queue"] + c["limit"] - pings
    return 0 <= c[what] - lost <= others <= 20


def test_loss():
    n, p = 2000, 0.10
    wan = Wan("--loss", "10/0", tag="loss")
    try:
        seqs, _ = ping(ADDR4[1], n, 0.002)
        st = wan.stats()
    finally:
        wan.stop()
    lost = n - len(set(seqs))
    mean, sigma = n * p, math.sqrt(n * p * (1 - p))
    check(abs(lost - mean) <= 4 * sigma,
          f"--loss 10/0: {lost} of {n} pings lost, within 4 sigma of {mean:.0f} "
          f"({mean - 4 * sigma:.0f}..{mean + 4 * sigma:.0f})")
    check(counted(st["a->b"], "loss", lost, n) and st["b->a"]["loss"] == 0,
          f"smbsplice-wanem counted each, all A to B ({st['a->b']['loss']}, {st['b->a']['loss']})")

    # Gilbert-Elliott, A to B only: P = 2%, R = 25%, so 0.02/0.27 = 7.4%
    # lost in bursts of 4 on average.
    wan = Wan("--burst", "2,25/off", "--seed", "7", tag="burst")
    try:
        seqs, _ = ping(ADDR4[1], n, 0.002)
        st = wan.stats()
    finally:
        wan.stop()
    got = set(seqs)
    runs, cur = [], 0
    for s in range(1, n + 1):
        if s not in got:
            cur += 1
        elif cur:
            runs.append(cur)
            cur = 0
    if cur:
        runs.append(cur)
    lost = sum(runs)
    mean_run = lost / len(runs) if runs else 0
    check(0.03 * n <= lost <= 0.13 * n, f"--burst 2,25: {lost} of {n} lost (7.4% expected, 3..13% allowed)")
    check(2.0 <= mean_run <= 8.0, f"in bursts: {len(runs)} runs, {mean_run:.2f} pings each on average (4 expected)")
    check(counted(st["a->b"], "burst", lost, n) and st["a->b"]["loss"] == 0 and st["b->a"]["burst"] == 0,
          f"smbsplice-wanem counted them as burst losses ({st['a->b']['burst']})")


def iperf3(args, seconds, omit, tag):
    """One iperf3 run from A to B's server; its JSON's end section."""
    import json

    srv = subprocess.Popen(in_netns(NS[1], ["iperf3", "-s", "-1", "-B", ADDR4[1]]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def up():
            r = sh("ip", "netns", "exec", NS[1], "ss", "-Htln", "sport = :5201", ok=False)
            return r.stdout.strip()
        wait_for("iperf3 -s listening", up)
        r = sh(*in_netns(NS[0], ["iperf3", "-c", ADDR4[1], "-t", str(seconds), "-O", str(omit), "-J",
                                  "-C", "cubic", *args]), timeout=seconds + omit + 30)
        d = json.loads(r.stdout)
        srv.wait(timeout=10)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    return d["end"]


def test_rate():
    rate, delay, queue, mtu = 100, 5, 200, 1500
    goodput = rate * (mtu - 52) / mtu  # IP and TCP headers with timestamps
    # As for UDP below: a short rate is measured again, up to three times
    # (CI once saw 89.01 of 96.53 Mbit/s on a clean clone); a rate above
    # the bound never is.
    for attempt in range(3):
        wan = Wan("--rate", str(rate), "--delay", str(delay), "--queue", str(queue), tag="rate")
        try:
            pinger = subprocess.Popen(in_netns(NS[0], ["ping", "-n", "-c", "40", "-i", "0.1", ADDR4[1]]),
                                      stdout=subprocess.PIPE, text=True)
            end = iperf3([], 6, 2, "rate")
            out, _ = pinger.communicate(timeout=30)
            st = wan.stats()
        finally:
            wan.stop()
        got = end["sum_received"]["bits_per_second"] / 1e6
        print(f"  iperf3 through --rate {rate}: {got:.2f} Mbit/s, {got / rate:.4f} of the rate, "
              f"{got / goodput:.4f} of the TCP payload it leaves ({goodput:.2f})", flush=True)
        if got >= 0.95 * goodput:
            break
        print(f"note: TCP rate {got:.2f} Mbit/s, measured again (the machine is busy)", flush=True)
    check(end.get("sender_tcp_congestion") == "cubic" and end.get("receiver_tcp_congestion") == "cubic",
          f"both stacks ran cubic ({end.get('sender_tcp_congestion')}, {end.get('receiver_tcp_congestion')})")
    check(abs(got - goodput) <= 0.05 * goodput,
          f"iperf3 gets {got:.2f} Mbit/s, within 5% of the {goodput:.2f} Mbit/s of TCP payload --rate {rate} leaves")
    check(got <= goodput * 1.01, f"and never more ({got:.2f} <= {goodput:.2f})")
    check(st["a->b"]["queue"] > 0, f"the bottleneck queue dropped at its tail ({st['a->b']['queue']} packets)")
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]
    print(f"  ping under load: {sorted(rtts)}", flush=True)
    bound = 2 * delay + queue * mtu * 8 / (rate * 1e3) + 2
    med = statistics.median(rtts) if rtts else 0
    check(len(rtts) >= 35 and 2 * delay < med <= bound,
          f"RTT under load: median {med:.2f} ms of {len(rtts)} pings, above {2 * delay} ms "
          f"and within what the queue adds ({bound:.1f} ms)")

    # UDP, offered at 1.5 times the rate: what arrives is the rate itself,
    # less the IP and UDP headers, whatever TCP would have made of it.
    # A delay line in user space that a CPU-bound test beside it (make -j2)
    # keeps off the CPU drops packets at the tun device, so a short rate is
    # measured again, up to three times; a rate above the bound never is.
    for attempt in range(3):
        wan = Wan("--rate", str(rate), "--delay", str(delay), "--queue", str(queue), tag="udp")
        try:
            end = iperf3(["-u", "-b", f"{rate * 3 // 2}M", "-l", str(mtu - 28)], 4, 1, "udp")
            st = wan.stats()
        finally:
            wan.stop()
        got = end["sum_received"]["bits_per_second"] / 1e6
        ip_rate = got * mtu / (mtu - 28)
        print(f"  UDP through --rate {rate}: {got:.2f} Mbit/s of payload, {ip_rate:.2f} Mbit/s of IP packets, "
              f"{ip_rate / rate:.4f} of the rate", flush=True)
        if ip_rate >= 0.95 * rate:
            break
        print(f"note: UDP rate {ip_rate:.2f} Mbit/s, measured again (the machine is busy)", flush=True)
    check(abs(ip_rate - rate) <= 0.05 * rate and ip_rate <= rate * 1.01,
          f"UDP at 1.5 x the rate: {ip_rate:.2f} Mbit/s of IP packets arrive, within 5% of {rate} and not above")
    check(st["a->b"]["queue"] > 0, f"the rest dropped at the queue's tail ({st['a->b']['queue']} packets)")


SINK = r"""
import hashlib, socket, sys
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
s.settimeout(60)
c, _ = s.accept()
h, n = hashlib.sha256(), 0
while (b := c.recv(1 << 20)):
    h.update(b); n += len(b)
print(n, h.hexdigest(), flush=True)
"""

SOURCE = r"""
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60)
with open(sys.argv[3], "rb") as f:
    while (b := f.read(1 << 20)):
        c.sendall(b)
        if len(sys.argv) > 4:   # a pause (for the cut) after the first MiB
            sys.stdout.write("paused\n"); sys.stdout.flush()
            sys.stdin.readline(); del sys.argv[4:]
c.shutdown(socket.SHUT_WR)
c.recv(1)
"""


def transfer(path, pause=None):
    """The file from A to B over IPv6, through smbsplice-wanem: (bytes,
    sha256) the sink got. With `pause`, a callable run while the source
    waits after its first MiB with the connection open."""
    sink = subprocess.Popen(in_netns(NS[1], ["python3", "-c", SINK, ADDR6[1]]), stdout=subprocess.PIPE, text=True)
    try:
        port = sink.stdout.readline().strip()
        src = subprocess.Popen(in_netns(NS[0], ["python3", "-c", SOURCE, ADDR6[1], port, path,
                                                *(["pause"] if pause else [])]),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if pause:
                check(src.stdout.readline().strip() == "paused", "the source sent its first MiB and waits")
                pause()
                src.stdin.write("go\n")
                src.stdin.flush()
            src.wait(timeout=120)
        finally:
            if src.poll() is None:
                src.kill()
                src.wait()
        n, digest = sink.communicate(timeout=60)[0].split()
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait()
    return int(n), digest


def snmp_errors(ns):
    """The checksum and header error counters of a namespace's stack."""
    out = {}
    for path in ("/proc/net/snmp", "/proc/net/snmp6"):
        text = sh("ip", "netns", "exec", ns, "cat", path).stdout
        lines = text.splitlines()
        if path.endswith("6"):
            for line in lines:
                k, v = line.split()
                if k in ("Ip6InHdrErrors", "Udp6InCsumErrors", "Icmp6InCsumErrors"):
                    out[k] = int(v)
            continue
        for head, vals in zip(lines[::2], lines[1::2]):
            proto = head.split(":")[0]
            for k, v in zip(head.split()[1:], vals.split()[1:]):
                if k in ("InCsumErrors", "InHdrErrors"):
                    out[f"{proto}{k}"] = int(v)
    return out


def test_corruption(path, digest):
    wan = Wan("--delay", "1", "--jitter", "0.5", "--loss", "0.5", "--mtu", "9000", tag="corrupt")
    try:
        t0 = time.monotonic()
        n, got = transfer(path)
        secs = time.monotonic() - t0
        st = wan.stats()
        errs = {ns: snmp_errors(ns) for ns in NS}
    finally:
        wan.stop()
    check(n == MIB << 20 and got == digest,
          f"{MIB} MiB over TCP through delay, jitter and 0.5% loss arrive byte-exact ({n} bytes, {secs:.1f} s)")
    check(st["a->b"]["loss"] > 0, f"with losses to repair ({st['a->b']['loss']} + {st['b->a']['loss']} packets)")
    bad = {ns: {k: v for k, v in e.items() if v} for ns, e in errs.items()}
    check(len(errs[NS[0]]) >= 4 and not any(bad.values()),
          f"neither stack saw a checksum or header error ({bad})")
    check(st["a->b"]["errors"] == 0 and st["b->a"]["errors"] == 0, "no device refused a packet")


def test_cut(path, digest, scratch):
    control = os.path.join(scratch, "wan.ctl")
    open(control, "w").close()
    wan = Wan("--delay", "2", "--control", control, tag="cut")
    try:
        def reload(text):
            with open(control, "w") as f:
                f.write(text)
            return wan.signal_and_wait(signal.SIGHUP, r"info: reloaded|error: SIGHUP")[-1]

        # The path is shown open before it is cut and after it is restored:
        # 4 of 5 pings will do (CI once lost one on a busy machine), where
        # a cut answers none.
        seqs, _ = ping(ADDR4[1], 5, 0.05)
        check(len(seqs) >= 4, f"before the cut, at least 4 of 5 pings answered ({len(seqs)})")

        def cut_and_restore():
            line = reload("# cut the path\nloss 100\n")
            check("loss 100%" in line, f"SIGHUP with 'loss 100': {line}")
            seqs, _ = ping(ADDR4[1], 10, 0.05)
            check(not seqs, f"cut: 0 of 10 pings answered ({len(seqs)})")
            line = reload("--loss 100/0\n")
            check("a->b: delay 2.000 ms, jitter 0.000 ms, loss 100%" in line and "b->a: delay 2.000 ms, jitter 0.000 ms, loss 0%" in line,
                  f"one direction alone: {line}")
            seqs, _ = ping(ADDR4[1], 10, 0.05)
            check(not seqs, f"cut A to B alone: 0 of 10 pings answered ({len(seqs)})")
            line = reload("mtu 9000\n")
            check("error: SIGHUP: --mtu is fixed at start" in line and "nothing changed" in line,
                  f"a file that does not parse is refused in one line: {line}")
            seqs, _ = ping(ADDR4[1], 5, 0.05)
            check(not seqs, f"and the path stays cut ({len(seqs)} answered)")
            line = reload("")
            check("loss 0%" in line and "loss 100" not in line, f"an empty file restores the command line: {line}")
            seqs, _ = ping(ADDR4[1], 5, 0.05)
            check(len(seqs) >= 4, f"restored: at least 4 of 5 pings answered ({len(seqs)})")

        n, got = transfer(path, pause=cut_and_restore)
        check(n == MIB << 20 and got == digest, f"a TCP connection open across the cut carries on, byte-exact ({n})")
    finally:
        wan.stop()


def test_throughput():
    # Not at real-time priority: flat out, it would take a core from the
    # machine's other work.
    wan = Wan("--mtu", "65535", tag="fast", realtime=False)
    try:
        end = iperf3([], 5, 1, "fast")
    finally:
        wan.stop()
    got = end["sum_received"]["bits_per_second"] / 1e9
    load = os.getloadavg()[0]
    print(f"  throughput at 0 delay, MTU 65535: {got:.2f} Gbit/s (load average {load:.2f})", flush=True)
    check(got >= 0.5, f"smbsplice-wanem forwards {got:.2f} Gbit/s at 0 delay (at least 0.5 asked on a shared machine)")


def main():
    global SCRATCH
    need("iperf3", "iperf3")
    need("ping", "iputils-ping")
    os.makedirs(TMPDIR, exist_ok=True)
    SCRATCH = scratch = tempfile.mkdtemp(dir=TMPDIR, prefix="wanem-")
    path = os.path.join(scratch, "data")
    with open(path, "wb") as f:
        f.write(os.urandom(MIB << 20))
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    try:
        for ns in NS:
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        test_cli()
        test_delay()
        test_loss()
        test_rate()
        test_corruption(path, digest)
        test_cut(path, digest, scratch)
        test_throughput()
        shutil.rmtree(scratch)  # kept, with smbsplice-wanem's logs, when a check fails
    finally:
        for ns in NS:
            sh("ip", "netns", "del", ns, ok=False)
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    run(main)
