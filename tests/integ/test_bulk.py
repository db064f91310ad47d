"""1 GiB each way through smbsplice at once, byte counts and sha256 checked,
in the default configuration; then 256 MiB each way with 8 KiB pipes in tcp
mode. The connection's log line must agree with the byte counts and show
that the splice pump carried most of the bulk."""
import socket
import threading
import time

from harness import (NOT_SMB, Pattern, Proxy, Server, check, parse_conn_line, recv_all,
                     recv_hash_n, run, send_stream)

GIB = 1 << 30


def bulk_server(total):
    def handler(c):
        # Both ways at once: receive the client's stream while sending ours.
        res = {}
        t = threading.Thread(target=lambda: res.update(got=recv_all(c)))
        t.start()
        res["sent"] = send_stream(c, Pattern(2), total, shut=False)
        t.join()
        c.sendall(f"{res['got'][0]} {res['got'][1]}\n".encode())
        c.close()
    return handler


def bulk_through(total, *args):
    srv = Server(bulk_server(total))
    px = Proxy(srv.addr, *args, *NOT_SMB)
    c = px.connect()
    up = Pattern(1)
    res = {}
    t0 = time.monotonic()
    t = threading.Thread(target=lambda: res.update(sent=send_stream(c, up, total)))
    t.start()
    # The server's stream, then its one-line receipt for ours.
    data_n, down_h = recv_hash_n(c, total)
    tail = b""
    while (b := c.recv(4096)):
        tail += b
    t.join()
    secs = time.monotonic() - t0
    c.close()
    srv.join()
    check(not srv.errors, f"server saw no errors ({srv.errors})")
    got_n, got_h = tail.decode().split()
    check(int(got_n) == total, f"server received {got_n} of {total} bytes up")
    check(got_h == res["sent"], "up stream sha256 matches")
    check(data_n == total, f"client received {data_n} of {total} bytes down")
    check(down_h == Pattern(2).digest(total), "down stream sha256 matches")
    print(f"{total >> 20} MiB each way in {secs:.2f}s ({2 * total * 8 / secs / 1e9:.1f} Gbit/s both ways)", flush=True)
    line = px.wait_log(r"^.* conn .* end=\w+.*$")[0]
    st = parse_conn_line(line)
    check(st["end"] == "fin", f"connection ended with fin ({st['end']})")
    check(st["c2s"] == total and st["s2c"] == total + len(tail),
          f"log counts c2s={st['c2s']} s2c={st['s2c']}")
    check(st["c2s_splice"] > total // 2 and st["s2c_splice"] > total // 2,
          f"most bulk was spliced (c2s {st['c2s_splice']}, s2c {st['s2c_splice']})")
    px.stop()
    srv.close()


def main():
    bulk_through(GIB)
    bulk_through(256 << 20, "--mode", "tcp", "--pipe-size", "8K")


if __name__ == "__main__":
    run(main)
