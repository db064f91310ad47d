"""Round trips through smbsplice must never stall on a cork or Nagle timer.

A request/response server (the shape of the rr.py tool from the pasta cork
fix) answers each request with a response of a chosen size. For each size,
in each direction, five round trips must all finish under 5 ms. Loopback
round trips take well under 1 ms; the bugs this catches cost 40 ms (Nagle
against delayed ACK) or 200 ms (a MORE tail waiting for the kernel's probe
timer). Timing on a shared machine is noisy, so a size gets three tries at
five clean trips: a real stall repeats every time, noise does not. A
message of a megabyte also needs time to move: its bound grows by what it
takes at 100 MB/s (10 ms a MiB), far below the stalls it must catch.
"""
import socket
import struct
import time

from harness import NOT_SMB, Proxy, Server, check, recv_exact, run

SIZES = (4000, 7372, 7380, 8000, 9000, 16000, 20000, 64000)
LIMIT_MS = 5.0
TRIPS, TRIES = 5, 3
SLOWEST_BYTES_PER_MS = 100e3


def limit_ms(req, resp):
    """The bound on one round trip: LIMIT_MS, plus moving time."""
    return LIMIT_MS + (req + resp) / SLOWEST_BYTES_PER_MS


def rr_handler(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        hdr = c.recv(8, socket.MSG_WAITALL)
        if len(hdr) < 8:
            return
        req, resp = struct.unpack("!II", hdr)
        recv_exact(c, req)
        c.sendall(b"r" * resp)


def trips(s, req, resp):
    out = []
    msg = struct.pack("!II", req, resp) + b"q" * req
    for _ in range(TRIPS):
        t0 = time.perf_counter()
        s.sendall(msg)
        recv_exact(s, resp)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def check_config(srv, label, args, fills=()):
    """Round trips at SIZES, plus `fills`: message sizes that end exactly
    on a full read (buffer or pipe), so their last write carries MORE and
    only the uncork can push it."""
    px = Proxy(srv.addr, *args, *NOT_SMB)
    s = px.connect()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    trips(s, 100, 100)  # warm up
    cases = [(n, 16, f"request {n} B") for n in SIZES]
    cases += [(16, n, f"response {n} B") for n in SIZES]
    # A request carries an 8-byte header: n - 8 makes the message n bytes.
    cases += [(n - 8, 16, f"request message of exactly {n} B") for n in fills]
    cases += [(16, n, f"response of exactly {n} B") for n in fills]
    for req, resp, what in cases:
        bound = limit_ms(req, resp)
        for attempt in range(TRIES):
            ts = trips(s, req, resp)
            if max(ts) < bound:
                break
            print(f"retry: {label}: {what}: " + " ".join(f"{t:.2f}" for t in ts), flush=True)
        check(max(ts) < bound,
              f"{label}: {what}: round trips " + " ".join(f"{t:.2f}" for t in ts) + f" ms (bound {bound:.1f})")
    s.close()
    px.stop()


def main():
    srv = Server(rr_handler)
    check_config(srv, "default pipes", [], fills=(65536, 65536 + 1048576))
    check_config(srv, "8K pipes", ["--pipe-size", "8K"], fills=(65536, 65536 + 8192))
    check_config(srv, "tcp, 8K pipes", ["--mode", "tcp", "--pipe-size", "8K"], fills=(65536 + 2 * 8192,))
    # A 1 KiB buffer sends nearly every message through the splice pump,
    # with pipes that fill on every read: the case of the pasta stall.
    check_config(srv, "8K pipes, 1K buffer", ["--pipe-size", "8K", "--buffer-size", "1K"],
                 fills=(1024, 1024 + 8192, 1024 + 3 * 8192))
    check_config(srv, "default pipes, 1K buffer", ["--buffer-size", "1K"], fills=(1024 + 1048576,))
    # 16 full 4 KiB reads use up the pump's budget with MORE pending and
    # the socket empty: the pump must uncork before it yields.
    check_config(srv, "tcp, copy only, 4K buffer", ["--mode", "tcp", "--no-splice", "--buffer-size", "4K"],
                 fills=(65536,))
    srv.close()


if __name__ == "__main__":
    run(main)
