"""Many idle connections cost almost nothing: 2,000 clients each make one
64 KiB round trip (an SMB2 WRITE frame, so smb mode stays framed) through
smbsplice to an echo backend, every byte checked, then hold their
connections open. smbsplice's resident memory may grow by at most
16 KiB per held connection: a connection that kept its copy buffers
(64 KiB each way) would cost eight times that. With --workers 2, the
workers serve as many connections each (worker/balance.c: SO_REUSEPORT's
hash alone would not) and /metrics sums them."""
import os
import random
import resource
import selectors
import socket
import struct
import threading
import time

from harness import NOT_SMB, NO_LOGIN, Proxy, check, metric, run, scrape

MSG = 64 << 10
RSS_BOUND_KIB = 16


def smb_write_frame(seed):
    """One Direct TCP frame of MSG bytes: an SMB2 WRITE request whose data
    is pseudo-random and different for every connection."""
    body_len = MSG - 4
    hdr = bytearray(64)
    hdr[0:4] = b"\xfeSMB"
    struct.pack_into("<HH", hdr, 4, 64, 1)  # StructureSize, CreditCharge
    struct.pack_into("<H", hdr, 12, 9)  # Command: WRITE
    struct.pack_into("<Q", hdr, 24, seed)  # MessageId
    data_len = body_len - 64 - 48
    body = struct.pack("<HHIQ", 49, 64 + 48, data_len, 0) + bytes(32)
    data = random.Random(seed).randbytes(data_len)
    return struct.pack(">I", body_len) + bytes(hdr) + body + data


class EchoServer:
    """A non-blocking echo backend for thousands of connections, in one
    thread."""

    def __init__(self):
        self.lst = socket.socket()
        self.lst.bind(("127.0.0.1", 0))
        self.lst.listen(4096)
        self.lst.setblocking(False)
        self.addr = f"127.0.0.1:{self.lst.getsockname()[1]}"
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.lst, selectors.EVENT_READ, None)
        self.conns = 0
        self.stop = False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        pending = {}
        while not self.stop:
            for key, ev in self.sel.select(0.2):
                s = key.fileobj
                if s is self.lst:
                    while True:
                        try:
                            c, _ = self.lst.accept()
                        except BlockingIOError:
                            break
                        c.setblocking(False)
                        pending[c] = bytearray()
                        self.sel.register(c, selectors.EVENT_READ, None)
                        self.conns += 1
                    continue
                out = pending[s]
                if ev & selectors.EVENT_READ:
                    try:
                        b = s.recv(1 << 20)
                    except ConnectionError:
                        b = b""
                    if not b:
                        self.sel.unregister(s)
                        del pending[s]
                        s.close()
                        continue
                    out += b
                if out:
                    try:
                        n = s.send(out)
                    except BlockingIOError:
                        n = 0
                    del out[:n]
                self.sel.modify(s, selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0), None)

    def close(self):
        self.stop = True
        self.thread.join()
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


def round_trips(px, n):
    """Open n connections at once, one MSG round trip each, checked; return
    the open sockets."""
    sel = selectors.DefaultSelector()
    socks = []
    for i in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", px.port))
        msg = smb_write_frame(i)
        state = {"out": memoryview(msg), "want": msg, "got": bytearray()}
        sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ, state)
        socks.append(s)
    done, end = 0, time.monotonic() + 120
    while done < n:
        if time.monotonic() > end:
            raise AssertionError(f"only {done} of {n} round trips within 120 s")
        for key, ev in sel.select(1.0):
            st, s = key.data, key.fileobj
            if ev & selectors.EVENT_WRITE and st["out"]:
                try:
                    k = s.send(st["out"])
                except BlockingIOError:
                    k = 0
                st["out"] = st["out"][k:]
                if not st["out"]:
                    sel.modify(s, selectors.EVENT_READ, st)
            if ev & selectors.EVENT_READ:
                try:
                    b = s.recv(1 << 20)
                except BlockingIOError:
                    continue
                if not b:
                    raise AssertionError("a connection closed before its echo came back")
                st["got"] += b
                if len(st["got"]) >= MSG:
                    check_once = st["got"] == st["want"]
                    if not check_once:
                        raise AssertionError(f"echo differs on a connection ({len(st['got'])} bytes)")
                    sel.unregister(s)
                    done += 1
    sel.close()
    return socks


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def hold(workers, n):
    srv = EchoServer()
    px = Proxy(srv.addr, "--workers", str(workers), *NOT_SMB, *NO_LOGIN, stats=True)
    base = rss_kib(px.proc.pid)
    t0 = time.monotonic()
    try:
        socks = round_trips(px, n)
    except AssertionError as e:
        check(False, f"--workers {workers}: {e}")
    took = time.monotonic() - t0
    check(True, f"--workers {workers}: {n} connections, one {MSG >> 10} KiB round trip each, byte-exact, in {took:.1f} s")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_connections_active") == n, f"--workers {workers}: {n} connections held open")
    per_worker = [metric(m, "smbsplice_worker_connections_total", worker=str(i)) for i in range(workers)]
    check(sum(per_worker) == n and metric(m, "smbsplice_connections_total") == n,
          f"--workers {workers}: /metrics sums the workers: {per_worker} = {n}")
    if workers > 1:
        check(max(per_worker) - min(per_worker) <= max(2, n // 100),
              f"--workers {workers}: the held connections are spread evenly over the workers: {per_worker}")
    check(metric(m, "smbsplice_opaque_fallbacks_total") == 0, f"--workers {workers}: every stream stayed framed")
    # Spare buffers go back to the allocator within a trim interval (5 s);
    # a buffer kept per connection never would.
    first = per_conn = (rss_kib(px.proc.pid) - base) / n
    end = time.monotonic() + 12
    while per_conn > RSS_BOUND_KIB / 2 and time.monotonic() < end:
        time.sleep(0.5)
        per_conn = (rss_kib(px.proc.pid) - base) / n
    check(per_conn <= RSS_BOUND_KIB,
          f"--workers {workers}: RSS grew {per_conn:.2f} KiB per held connection "
          f"(at once: {first:.2f}; bound {RSS_BOUND_KIB})")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_buffers_lent") == 0 and metric(m, "smbsplice_pipes_lent") == 0,
          f"--workers {workers}: idle connections hold no buffer and no pipe")
    for s in socks:
        s.close()
    px.wait_log(r" end=fin ", count=n, timeout=60)
    px.stop()
    srv.close()


def fleet_size(want=2000):
    """Raise this process's open-files limit to its hard limit; return how
    many connections it can hold, @want at most. This process holds both
    ends (client and echo backend); smbsplice, another process, holds two
    descriptors per connection of its own."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    n = min(want, (hard - 100) // 2)
    if n < want:
        print(f"open-files limit {hard}: holding {n} connections instead of {want}", flush=True)
    return n


def main():
    n = fleet_size()
    hold(1, n)
    hold(2, n)


if __name__ == "__main__":
    run(main, alarm=400)
