"""Live handover (`kill -USR2`, HANDOVER.md): the running smbsplice starts
the binary it was started from, hands it every listener and every live
connection, and exits 0; nobody's connection notices.

- an smbclient get (READ data spliced) and a put (WRITE data copied:
  --write-threshold off) each run across 5 handovers at random moments,
  byte-exact (sha256), smbclient exits 0 with no NT_STATUS error. The
  local end of each is a FIFO this test reads or fills at a set pace, so
  the transfer lasts long enough for every handover to fall in its middle;
- an SMB session holds an open file handle across a handover and goes on
  writing and reading it through the same handle (smb2client.py);
- smbtorture smb2.bench.echo (a short run) and smb2.rw (run again and
  again) give the same results across 3 handovers as against Samba
  directly;
- 2,000 idle connections (tcp mode, echo backend) are carried over, each
  answering a round trip afterwards; the new process's resident memory
  per connection is within 1.5x of the old one's (plus 4 KiB);
- the counters of /metrics never go down across a handover, and /metrics
  answers on the same address afterwards;
- the pause ("forwarding paused X ms") for 10 and for 2,000 connections,
  printed, and under 2 s (a hang, not a figure, is what that bound
  catches).

HANDOVER_MIB sets the transfers' size (256 MiB; `make check-handover-slow`
runs 1 GiB)."""
import hashlib
import os
import random
import selectors
import subprocess
import threading
import time

from harness import (NO_LOGIN, NOT_SMB, SANITIZED, TMPDIR, Pattern, Proxy, Samba, TestFailure, check, metric,
                     random_file, run, scrape)
from smb2client import Smb2Client
from test_scale import EchoServer, fleet_size, round_trips, rss_kib
from test_smbtorture import torture

MIB = int(os.environ.get("HANDOVER_MIB", "256"))
# The pace of a paced transfer: slow enough that 5 handovers fit in it.
SECONDS = max(10.0, MIB / 25)
PAUSE_BOUND_MS = 2000.0
RSS_FACTOR, RSS_SLACK_KIB = 1.5, 4.0
# Counters that only go up (summed over their labels).
COUNTERS = ("smbsplice_connections_total", "smbsplice_bytes_total", "smbsplice_messages_total",
            "smbsplice_payload_bytes_total")


def counters(m):
    return {name: metric(m, name) for name in COUNTERS}


def no_decrease(before, after, what):
    down = {n: (before[n], after[n]) for n in before if after[n] < before[n]}
    check(not down, f"{what}: no counter of /metrics went down ({down or 'all kept or grew'})")


def handovers(px, count, seconds, still=lambda: True):
    """@count handovers at random moments over @seconds (while still());
    return their results (Proxy.handover)."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    at = sorted(rng.uniform(0.1, 0.9) * seconds for _ in range(count))
    print(f"handovers at {', '.join(f'{t:.2f}' for t in at)} s (seed {seed})", flush=True)
    t0, done = time.monotonic(), []
    for t in at:
        time.sleep(max(0.0, t0 + t - time.monotonic()))
        if not still():
            break
        done.append(px.handover())
    return done


class Paced:
    """An smbclient get into, or put from, a FIFO this side reads or
    writes at a pace that makes the transfer last about @seconds: so it
    is in flight for as long as the test needs, whatever the machine."""

    def __init__(self, smb, port, kind, remote, mib, seconds, seed=1):
        self.fifo = os.path.join(TMPDIR, f"{kind}-{remote}.fifo")
        os.mkfifo(self.fifo)
        self.total, self.seconds, self.kind = mib << 20, seconds, kind
        cmd = f"get {remote} {self.fifo}" if kind == "get" else f"put {self.fifo} {remote}"
        self.proc = subprocess.Popen(["smbclient", "//127.0.0.1/share", "-p", str(port), "-U",
                                      f"root%{smb.password}", "-c", cmd],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.pattern = Pattern(seed)
        self.moved, self.digest, self.error = 0, None, None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            h, t0 = hashlib.sha256(), time.monotonic()
            rate = self.total / self.seconds
            with open(self.fifo, "rb" if self.kind == "get" else "wb") as f:
                chunks = self.pattern.chunks(self.total) if self.kind == "put" else None
                while True:
                    if self.kind == "get":
                        b = f.read(1 << 20)
                        if not b:
                            break
                    else:
                        b = next(chunks, None)
                        if b is None:
                            break
                        f.write(b)
                    h.update(b)
                    self.moved += len(b)
                    ahead = t0 + self.moved / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
            self.digest = h.hexdigest()
        except Exception as e:  # checked by finish()
            self.error = e

    def running(self):
        return self.thread.is_alive()

    def finish(self, what, want):
        """Wait for smbclient; check its exit, output and the bytes' sha256
        (@want: of what the get should read; None for a put, whose
        file the caller checks)."""
        try:
            out = self.proc.communicate(timeout=max(300, 4 * self.seconds))[0]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise TestFailure(f"{what}: smbclient still running after {max(300, 4 * self.seconds):.0f} s")
        self.thread.join(30)
        check(self.proc.returncode == 0 and "NT_STATUS" not in out and self.error is None,
              f"{what}: smbclient exited {self.proc.returncode}, no NT_STATUS error "
              f"({out.strip().splitlines()[-1] if out.strip() else 'no output'}; local side: {self.error})")
        if want is not None:
            check(self.moved == self.total and self.digest == want,
                  f"{what}: {self.moved} of {self.total} bytes, sha256 right")
        os.unlink(self.fifo)


def transfers(smb):
    """Case 1: a get and a put, each across 5 handovers; the counters of
    /metrics across them."""
    px = Proxy(smb.addr, "--write-threshold", "off", stats=True)
    src = os.path.join(smb.share, "big.bin")
    want = random_file(src, MIB)
    before = counters(scrape(px.stats_port))

    get = Paced(smb, px.port, "get", "big.bin", MIB, SECONDS)
    done = handovers(px, 5, SECONDS, get.running)
    check(len(done) == 5, f"get of {MIB} MiB: 5 handovers while it ran "
          f"(pids {[d['pid'] for d in done]}, paused {[d['paused_ms'] for d in done]} ms)")
    get.finish(f"get of {MIB} MiB across 5 handovers", want)
    m = scrape(px.stats_port)
    spliced = metric(m, "smbsplice_payload_bytes_total", direction="to_client", **{"class": "read"}, path="splice")
    check(spliced > (MIB << 20) * 0.9, f"READ payload spliced across the chain: {spliced:.0f} of {MIB << 20}")
    after = counters(m)
    no_decrease(before, after, "5 handovers during a get")

    put = Paced(smb, px.port, "put", "up.bin", MIB, SECONDS, seed=2)
    done = handovers(px, 5, SECONDS, put.running)
    check(len(done) == 5, f"put of {MIB} MiB: 5 handovers while it ran (paused {[d['paused_ms'] for d in done]} ms)")
    put.finish(f"put of {MIB} MiB across 5 handovers", None)
    up = os.path.join(smb.share, "up.bin")
    h = hashlib.sha256()
    with open(up, "rb") as f:
        while (b := f.read(1 << 20)):
            h.update(b)
    check(h.hexdigest() == put.pattern.digest(MIB << 20), f"put of {MIB} MiB across 5 handovers: the file's sha256 right")
    m = scrape(px.stats_port)
    copied = metric(m, "smbsplice_payload_bytes_total", direction="to_server", **{"class": "write"}, path="copy")
    check(copied >= (MIB << 20), f"WRITE payload copied (--write-threshold off): {copied:.0f} of {MIB << 20}")
    no_decrease(after, counters(m), "5 handovers during a put")
    check(" end=error" not in px.log(), "no connection ended in error")
    os.unlink(up)
    os.unlink(src)
    px.stop()


def held_handle(smb):
    """Case 2: one SMB2 session, one open handle, written and read before
    and after a handover, through the same handle."""
    px = Proxy(smb.addr)
    c = Smb2Client("127.0.0.1", px.port)
    c.login("root", smb.password)
    c.tree_connect(r"\\127.0.0.1\share")
    fid = c.create("held.bin")
    rng = random.Random(3)
    first = rng.randbytes(300000)
    c.write(fid, 0, first)
    check(c.read(fid, 0, len(first)) == first, "held handle: 300,000 bytes written and read back before the handover")
    d = px.handover()
    check(d["conns"] == 1 and d["took_conns"] == 1, f"the handover carried the session: {d}")
    second = rng.randbytes(300000)
    c.write(fid, len(first), second)
    check(c.read(fid, 0, len(first) + len(second)) == first + second,
          "held handle: after the handover the same handle writes 300,000 more bytes and reads all 600,000 back")
    d = px.handover()
    check(c.read(fid, 100000, 1000) == first[100000:101000], "... and reads again after a second handover")
    c.close(fid)
    c.logoff()
    with open(os.path.join(smb.share, "held.bin"), "rb") as f:
        check(f.read() == first + second, "the file on the share holds both writes")
    c.sock.close()
    px.wait_log(r" end=fin ")
    px.stop()


def smbtorture_runs(smb):
    """Case 3: smb2.bench.echo (6 s, 4 connections) across 3 handovers, and
    smb2.rw, run again and again over 4 s while 3 handovers happen (one run
    takes 0.2 s and has no knob to last longer): every run gives the
    results Samba gives directly."""
    px = Proxy(smb.addr)
    echo = ("smb2.bench.echo", "--option=torture:timelimit=6", "--option=torture:nprocs=4")
    for suite, seconds, repeat in ((echo, 5.0, False), (("smb2.rw",), 4.0, True)):
        direct = torture(smb.password, smb.port, suite)
        runs, stop = [], threading.Event()

        def loop():
            while True:
                try:
                    runs.append(torture(smb.password, px.port, suite))
                except Exception as e:  # a run that gave no results differs
                    runs.append({"error": repr(e)})
                if not repeat or stop.is_set():
                    return

        t = threading.Thread(target=loop, daemon=True)
        t.start()
        done = handovers(px, 3, seconds, t.is_alive)
        stop.set()
        t.join(600)
        check(not t.is_alive(), f"{suite[0]}: finished")
        bad = [{k: (direct.get(k), r.get(k)) for k in set(direct) | set(r) if direct.get(k) != r.get(k)}
               for r in runs if r != direct]
        check(runs and not bad and len(done) == 3,
              f"{suite[0]}: {len(runs)} run(s) across {len(done)} handovers (3 wanted), each with the results "
              f"Samba gives directly ({direct}; differences: {bad})")
    check(" end=error" not in px.log(), "no connection ended in error")
    px.stop()


def echo_all(socks, seed):
    """One round trip of a few bytes on each open socket in @socks, every
    byte checked, all at once."""
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        msg = f"{seed}:{i}:".encode() * 8
        s.setblocking(False)
        s.send(msg)
        sel.register(s, selectors.EVENT_READ, {"want": msg, "got": bytearray()})
    left, end = len(socks), time.monotonic() + 120
    while left:
        if time.monotonic() > end:
            raise TestFailure(f"{left} of {len(socks)} connections did not answer within 120 s")
        for key, _ in sel.select(1.0):
            st, s = key.data, key.fileobj
            try:
                b = s.recv(65536)
            except BlockingIOError:
                continue
            if not b:
                raise TestFailure("a connection carried over was closed")
            st["got"] += b
            if len(st["got"]) >= len(st["want"]):
                if bytes(st["got"]) != st["want"]:
                    raise TestFailure("a connection carried over answered other bytes")
                sel.unregister(s)
                left -= 1
    sel.close()


def fleet(n, rss=False):
    """Cases 4 and 6: @n idle connections carried over, each answering a
    round trip afterwards; the pause; with @rss, resident memory."""
    srv = EchoServer()
    px = Proxy(srv.addr, "--mode", "tcp", "--workers", "2", *NOT_SMB, *NO_LOGIN, stats=True)
    base = rss_kib(px.proc.pid)
    socks = round_trips(px, n)
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_connections_active") == n, f"{n} idle connections held")
    before = counters(m)
    old_per = None
    if rss:
        time.sleep(6)  # a trim interval: what the old process keeps, not its spare buffers
        old_per = (rss_kib(px.proc.pid) - base) / n
    d = px.handover()
    print(f"handover of {n} connections: forwarding paused {d['paused_ms']:.1f} ms", flush=True)
    check(d["conns"] == n and d["took_conns"] == n, f"{n} connections handed over and taken: {d}")
    check(d["paused_ms"] < PAUSE_BOUND_MS, f"{n} connections: paused {d['paused_ms']:.1f} ms (< {PAUSE_BOUND_MS:.0f})")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_connections_active") == n, f"/metrics of the new process, same address: {n} active")
    no_decrease(before, counters(m), f"a handover of {n} connections")
    echo_all(socks, 1)
    check(True, f"each of {n} connections answered a round trip after the handover")
    if rss:
        bound = RSS_FACTOR * old_per + RSS_SLACK_KIB
        new_per = (rss_kib(px.proc.pid) - base) / n
        end = time.monotonic() + 12
        while new_per > bound and time.monotonic() < end:
            time.sleep(0.5)
            new_per = (rss_kib(px.proc.pid) - base) / n
        check(new_per <= bound, f"RSS per connection: old {old_per:.2f} KiB, new {new_per:.2f} KiB "
              f"(bound {RSS_FACTOR}x + {RSS_SLACK_KIB:.0f} = {bound:.2f})")
    # Once more: a process started by a handover hands over too.
    d = px.handover()
    check(d["conns"] == n, f"the chain goes on: the new process handed {n} connections over again "
          f"(paused {d['paused_ms']:.1f} ms)")
    echo_all(socks, 2)
    check(True, f"each of {n} connections answered again")
    for s in socks:
        s.close()
    px.wait_log(r" end=fin ", count=n, timeout=60)
    px.stop()
    srv.close()


def main():
    n = fleet_size()
    smb = Samba()  # before any handover: smbd is not adopted (harness.become_subreaper)
    only = os.environ.get("HANDOVER_ONLY", "fleet,handle,torture,transfers").split(",")
    if "fleet" in only:
        fleet(10)
        fleet(n, rss=not SANITIZED)
    if "handle" in only:
        held_handle(smb)
    if "torture" in only:
        smbtorture_runs(smb)
    if "transfers" in only:
        transfers(smb)
    smb.stop()


if __name__ == "__main__":
    run(main, alarm=1200 if MIB > 256 else 600)
