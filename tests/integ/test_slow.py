"""A slow reader cannot slow the others down or hold the pool, and a crowd
of stalled readers cannot take the pipes from everyone.

The backend (readstream.py) streams 1 MiB READ responses for ever, one
process per connection; clients are processes that check every byte.
smbsplice runs in smb mode with --read-threshold 64K, so the payloads are
spliced, one worker (so that every client shares one event loop and one
pool, and the kernel's spreading of connections over workers cannot
change the figures between runs), and --pipe-size 256K with
--buffer-size 256K, so that a pipe's bytes moved to a buffer go to a
pool buffer and are counted in smbsplice_buffers_lent.

Slow reader. Nine fast clients read at full speed for about 6 s; 2.5 s
in, a slow client starts that reads 1 KiB every 100 ms (with a 4 KiB
receive buffer). Each fast client's throughput is taken from its own
byte counts over two windows: before the slow client came (0.5 s to
2.5 s) and while it was there (0.5 s to 3 s after it connected: holding
its pipe, then, from 1 to 1.5 s on, a buffer). The measure is the median
of the nine, taken the same way in both windows, and the median with the
slow client must be at least half the median without it. If it is not,
the next 2 s are measured too and the better window counts: the two
cores are shared, and a burst of load from outside can halve one window,
but a slow client that holds the others back does so in both. A lone
client's throughput is measured first and printed, but it is not the
yardstick: nine clients on two cores, which also run the backend and the
clients, cannot each get half of what one gets alone, slow client or not.
Once the nine have gone, with the slow client the only connection (3.5 s
or more after it came), it holds no pipe (its pipe was moved to a
buffer: smbsplice_pipe_stalls_total >= 1) and exactly one buffer, and
every byte it got was the stream's.

Stalled crowd. With --max-pipes 8, twenty clients send their request and
never read. They take every pipe at first (smbsplice_pipe_denied_total >
0), but 2.5 s later no pipe is lent (their bytes sit in one buffer each:
smbsplice_buffers_lent 20, smbsplice_pipe_stalls_total >= 1), and a new
client that reads 32 READ responses gets them spliced: smbsplice_bytes_total
{direction="to_client",path="splice"} grows by at least 90% of its bytes.

Moved bytes are bounded. With --max-pipes 1 and 16K buffers (so that a
256K pipe's bytes go to a buffer of their own), the bytes moved out of
stalled pipes may take 256K in all: clients stall one after another,
each one's pipe moved (its bytes never pass the bound), until one keeps
its pipe, since its bytes would pass it (the second on a quiet machine,
whose pipes hold 157,948 bytes each; later on a loaded one, whose pipes
hold less: see moved_bytes_bounded()); once the others go, its pipe is
moved too.
"""
import socket
import statistics
import time

from harness import NOT_SMB, NO_LOGIN, Proxy, check, metric, run, scrape
from readstream import Backend, Client, Proc, Stream, request

ARGS = ["--read-threshold", "64K", "--workers", "1", "--pipe-size", "256K", "--buffer-size", "256K"]
FAST = 9
SLOW_PACE = "1024,0.1"   # 1 KiB every 100 ms
MB = 1e6


def solo_rate(px):
    """One client alone: its throughput from 0.5 s to 2.5 s after it
    connected."""
    cl = Client(px.port)
    t0 = float(cl.wait(lambda w: w[0] == "connected", 10, "connect")[1])
    cl.wait(lambda w: w[0] == "got" and float(w[2]) >= t0 + 2.6, 20, "2.6 s of reading")
    rate = cl.rate(t0 + 0.5, t0 + 2.5)
    cl.send("close")
    cl.end(10)
    cl.stop()
    return rate


def slow_reader(px):
    label = "slow reader"
    solo = solo_rate(px)
    print(f"{label}: one client alone reads {solo / MB:.0f} MB/s", flush=True)

    fast = [Client(px.port) for _ in range(FAST)]
    starts = [float(c.wait(lambda w: w[0] == "connected", 10, "connect")[1]) for c in fast]
    t0 = max(starts)
    time.sleep(max(0.0, t0 + 2.5 - time.monotonic()))
    slow = Client(px.port, "--pace", SLOW_PACE, "--rcvbuf", 4096)
    ts = float(slow.wait(lambda w: w[0] == "connected", 10, "connect")[1])
    # Sample the pools while all ten run.
    samples = []
    while time.monotonic() < ts + 3.5:
        m = scrape(px.stats_port)
        samples.append((metric(m, "smbsplice_pipes_lent"), metric(m, "smbsplice_buffers_lent")))
    bad = [w for c in fast for w in c.find(lambda w: w[0] in ("mismatch", "end", "exit"))]
    check(not bad, f"{label}: the nine fast clients read on, and got only the stream's bytes "
          f"({bad or 'all nine still reading'})")
    before = [c.rate(t0 + 0.5, t0 + 2.5) for c in fast]
    during = [c.rate(ts + 0.5, ts + 3.0) for c in fast]
    b, d = statistics.median(before), statistics.median(during)
    print(f"{label}: fast clients without the slow one, MB/s: {' '.join(f'{x / MB:.0f}' for x in before)}", flush=True)
    print(f"{label}: fast clients with the slow one,    MB/s: {' '.join(f'{x / MB:.0f}' for x in during)}", flush=True)
    print(f"{label}: pools sampled while all ten ran (pipes lent, buffers lent): {samples}", flush=True)
    again = ""
    if d < 0.5 * b:
        # Two cores shared with whatever else runs: a burst of load from
        # outside can halve one window. Measure the next 2 s as well;
        # a slow client that does hold the others back does it in both.
        time.sleep(max(0.0, ts + 5.2 - time.monotonic()))
        later = [c.rate(ts + 3.0, ts + 5.0) for c in fast]
        print(f"{label}: fast clients with the slow one, again: {' '.join(f'{x / MB:.0f}' for x in later)}",
              flush=True)
        again = f" (first window: {d / MB:.0f} MB/s, measured again)"
        d = max(d, statistics.median(later))
    check(d >= 0.5 * b, f"{label}: the nine fast clients keep at least half their throughput: median "
          f"{d / MB:.0f} MB/s with the slow client{again}, {b / MB:.0f} MB/s without ({d / b:.2f}x); "
          f"one alone: {solo / MB:.0f} MB/s")
    for c in fast:
        c.send("close")
    ends = [c.end(10) for c in fast]
    for c in fast:
        c.stop()
    check(all(e[:2] == ["end", "closed"] for e in ends),
          f"{label}: the nine fast clients got only the stream's bytes ({[' '.join(e[:3]) for e in ends]})")

    # Only the slow client is left now, and it has been stalled for > 4 s.
    time.sleep(0.2)
    m = scrape(px.stats_port)
    lent, bufs = metric(m, "smbsplice_pipes_lent"), metric(m, "smbsplice_buffers_lent")
    stalls = metric(m, "smbsplice_pipe_stalls_total")
    check(metric(m, "smbsplice_connections_active") == 1, f"{label}: the slow client is the only connection left")
    check(lent == 0 and stalls >= 1, f"{label}: the slow client holds no pipe "
          f"(smbsplice_pipes_lent {lent:.0f}, smbsplice_pipe_stalls_total {stalls:.0f})")
    check(bufs == 1, f"{label}: the slow client holds one buffer (smbsplice_buffers_lent {bufs:.0f})")
    got = slow.got()
    slow.send("close")
    e = slow.end(10)
    slow.stop()
    check(e[:2] == ["end", "closed"] and 10 * 1024 <= got,
          f"{label}: the slow client got {got} bytes, all the stream's, and was never cut off ({' '.join(e[:3])})")


def stalled_crowd(be):
    label = "twenty stalled clients, 8 pipes"
    px = Proxy(be.addr, *ARGS, "--max-pipes", "8", *NOT_SMB, *NO_LOGIN, stats=True)
    stalled = []
    for _ in range(20):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", px.port))
        s.sendall(request())
        stalled.append(s)
    # Twenty clients on 8 pipes stall in waves: a pipe that waited a second
    # (PIPE_HOLD_MAX) is moved at the next half-second check, and a client
    # still without one may take it. Three waves take up to 4.5 s, and a
    # fixed 2.5 s found the second still holding its pipes on a loaded
    # machine: poll instead, for at most three waves and 1.5 s more.
    t0 = time.monotonic()
    while True:
        m = scrape(px.stats_port)
        lent, bufs = metric(m, "smbsplice_pipes_lent"), metric(m, "smbsplice_buffers_lent")
        took = time.monotonic() - t0
        if (lent == 0 and bufs == 20) or took > 3 * 1.5 + 1.5:
            break
    denied = metric(m, "smbsplice_pipe_denied_total")
    stalls = metric(m, "smbsplice_pipe_stalls_total")
    check(metric(m, "smbsplice_connections_active") == 20, f"{label}: all twenty connected")
    check(denied > 0, f"{label}: they took every pipe at first (smbsplice_pipe_denied_total {denied:.0f})")
    check(lent == 0 and stalls >= 1, f"{label}: {took:.1f} s later no pipe is lent (smbsplice_pipes_lent {lent:.0f}, "
          f"smbsplice_pipe_stalls_total {stalls:.0f})")
    check(bufs == 20, f"{label}: each holds its bytes in one buffer (smbsplice_buffers_lent {bufs:.0f})")

    spliced0 = metric(m, "smbsplice_bytes_total", direction="to_client", path="splice")
    n = Stream().frame_len * 32
    cl = Client(px.port, "--frames", 32)
    e = cl.end(60)
    cl.stop()
    check(e[:3] == ["end", "eof", str(n)], f"{label}: a new client gets 32 READ responses exact ({' '.join(e[:3])})")
    m = scrape(px.stats_port)
    spliced = metric(m, "smbsplice_bytes_total", direction="to_client", path="splice") - spliced0
    check(spliced >= 0.9 * n, f"{label}: and they were spliced: {spliced:.0f} of its {n} bytes "
          f"(smbsplice_bytes_total to_client splice)")
    for s in stalled:
        s.close()
    px.stop()


def stall_one(port):
    """A client that sends its READ request and never reads."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(request())
    return s


MOVED_BOUND = 256 << 10  # --max-pipes 1 of --pipe-size 256K
MOST_STALLED = 12


def moved_bytes_bounded(be):
    """Stalled clients, one at a time, each once the last one's pipe was
    moved, until one keeps its pipe. How many it takes depends on what
    their pipes held, which the clients cannot arrange: a stalled pipe
    holds what the last splice read, less what the client's socket still
    took, and that splice reads what the backend's socket has queued by
    then: 256K on a quiet machine (157,948 bytes left in the pipe), 176K
    on a loaded one (76,028 left, in a CI run and beside a busy loop here),
    so two pipes of a loaded machine fit under the bound together."""
    label = "moved bytes bounded, 1 pipe of 256K, 16K buffers"
    px = Proxy(be.addr, *ARGS[:-1], "16K", "--max-pipes", "1", *NOT_SMB, *NO_LOGIN, stats=True)

    def gauges():
        m = scrape(px.stats_port)
        return (metric(m, "smbsplice_pipes_lent"), metric(m, "smbsplice_pipe_stalls_total"),
                metric(m, "smbsplice_buffer_lent_bytes"))

    clients, held, moved = [], 0, []
    for k in range(1, MOST_STALLED + 1):
        clients.append(stall_one(px.port))
        # Its pipe is moved once it waited PIPE_HOLD_MAX (1 s), at the next
        # half-second check: poll for that, for up to 4 s (a fixed 2.5 s was
        # tight on a loaded machine); the one that finds no room keeps its
        # pipe, and is looked at once the 4 s are over.
        t0 = time.monotonic()
        while True:
            lent, stalls, now = gauges()
            if stalls >= k or time.monotonic() - t0 > 4.0:
                break
        # Beside the moved bytes, a connection may hold one 16K pool
        # buffer (a header waiting for the client).
        most = MOVED_BOUND + k * (16 << 10)
        check(now <= most, f"{label}: stalled client {k}: the bytes moved out of pipes stay within their "
              f"bound ({now:.0f} bytes in buffers, at most {most})")
        if lent == 1:
            break
        check(lent == 0 and stalls == k and now > held,
              f"{label}: stalled client {k}'s pipe is moved to a buffer (pipes lent {lent:.0f}, stalls "
              f"{stalls:.0f}, {now - held:.0f} bytes more in buffers, {now:.0f} in all)")
        moved.append(now - held)
        held = now
    check(lent == 1 and stalls == k - 1 and k >= 2,
          f"{label}: stalled client {k} keeps its pipe, the bytes moved out of the {k - 1} before "
          f"({', '.join(f'{b:.0f}' for b in moved)}: {held:.0f} in all) leaving no room for its own "
          f"(pipes lent {lent:.0f}, stalls {stalls:.0f})")
    for c in clients[:-1]:
        c.close()
    end = time.monotonic() + 5
    while time.monotonic() < end and (lent, stalls) != (0, k):
        time.sleep(1.05)
        lent, stalls, _ = gauges()
    check((lent, stalls) == (0, k), f"{label}: once the others go, its pipe is moved "
          f"(pipes lent {lent:.0f}, stalls {stalls:.0f})")
    clients[-1].close()
    px.stop()


def main():
    try:
        be = Backend()
        px = Proxy(be.addr, *ARGS, *NOT_SMB, *NO_LOGIN, stats=True)
        slow_reader(px)
        px.stop()
        stalled_crowd(be)
        moved_bytes_bounded(be)
        be.stop()
    finally:
        Proc.stop_all()


if __name__ == "__main__":
    run(main, alarm=180)
