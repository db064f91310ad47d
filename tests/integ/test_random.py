"""Random payloads in random chunk sizes, both directions at once, on
several connections in parallel, checked by sha256 on both ends; across
configurations that exercise both pumps, small pipes, tiny buffers and IPv6."""
import hashlib
import random
import socket
import struct
import threading
import time

from harness import NOT_SMB, Proxy, Server, check, recv_exact, run

CONNS = 4


def random_stream(seed, total):
    return random.Random(seed).randbytes(total)


def send_chunked(s, data, rng):
    off = 0
    while off < len(data):
        n = min(len(data) - off, rng.choice((1, 7, 100, 1460, 4096, 8191, 65536, 200000, rng.randint(1, 300000))))
        s.sendall(data[off:off + n])
        off += n
        if rng.random() < 0.05:
            time.sleep(0.001)
    s.shutdown(socket.SHUT_WR)


def recv_hash(s):
    h, n = hashlib.sha256(), 0
    while True:
        b = s.recv(random.randint(1, 300000))
        if not b:
            return n, h.hexdigest()
        h.update(b)
        n += len(b)


results = {}


def handler(c):
    seed, up_n, down_n = struct.unpack("!QQQ", recv_exact(c, 24))
    data = random_stream(seed + 1, down_n)
    got = {}
    t = threading.Thread(target=lambda: got.update(r=recv_hash(c)))
    t.start()
    send_chunked(c, data, random.Random(seed + 2))
    t.join()
    results[seed] = got["r"]


def one_conn(px, seed, out):
    rng = random.Random(seed)
    up_n, down_n = rng.randint(0, 6 << 20), rng.randint(0, 6 << 20)
    up = random_stream(seed, up_n)
    c = px.connect()
    c.sendall(struct.pack("!QQQ", seed, up_n, down_n))
    got = {}
    t = threading.Thread(target=lambda: got.update(r=recv_hash(c)))
    t.start()
    send_chunked(c, up, random.Random(seed + 3))
    t.join()
    c.close()
    out[seed] = (up_n, hashlib.sha256(up).hexdigest(), got["r"],
                 (down_n, hashlib.sha256(random_stream(seed + 1, down_n)).hexdigest()))


def run_config(label, args, host="127.0.0.1"):
    srv = Server(handler, host=host)
    px = Proxy(srv.addr, *args, *NOT_SMB, listen_host=host)
    out, threads = {}, []
    base = random.randrange(1 << 40)
    for i in range(CONNS):
        t = threading.Thread(target=one_conn, args=(px, base + 10 * i, out))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    srv.join()
    check(not srv.errors, f"{label}: server saw no errors ({srv.errors})")
    check(len(out) == CONNS, f"{label}: all {CONNS} clients finished")
    for seed, (up_n, up_h, down_got, down_want) in out.items():
        check(results.get(seed) == (up_n, up_h), f"{label}: seed {seed} up {up_n} bytes intact")
        check(down_got == down_want, f"{label}: seed {seed} down {down_want[0]} bytes intact")
    px.wait_log(r" conn .* end=fin", count=CONNS)
    px.stop()
    srv.close()


def main():
    run_config("default", [])
    run_config("tcp, 8K pipes", ["--mode", "tcp", "--pipe-size", "8K"])
    run_config("1K buffer, 8K pipes", ["--buffer-size", "1K", "--pipe-size", "8K"])
    run_config("2 pipes for 4 conns", ["--max-pipes", "2", "--buffer-size", "2K"])
    run_config("copy only", ["--no-splice"])
    run_config("IPv6", [], host="::1")


if __name__ == "__main__":
    run(main)
