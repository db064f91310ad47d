"""--idle-timeout closes a connection that moved nothing for that long, and
leaves a busy one alone."""
import time

from harness import NOT_SMB, Proxy, Server, check, recv_exact, run


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def main():
    srv = Server(echo)
    px = Proxy(srv.addr, "--idle-timeout", "1", *NOT_SMB)
    idle = px.connect()
    busy = px.connect()
    idle.sendall(b"hi")  # past the handshake: now only idleness counts
    check(recv_exact(idle, 2) == b"hi", "idle connection echoed once")
    t0 = time.monotonic()
    ticks = 0
    while time.monotonic() - t0 < 2.5:
        busy.sendall(b"tick")
        ticks += recv_exact(busy, 4) == b"tick"
        time.sleep(0.2)
    check(ticks >= 10, f"busy connection echoed {ticks} ticks over 2.5 s")
    idle.settimeout(3)
    try:
        data = idle.recv(1)
    except ConnectionResetError:
        data = b""
    check(data == b"", "idle connection was closed")
    line = px.wait_log(r"^.* conn .* end=timeout.*$")[0]
    check("idle for 1s" in line, f"log says why: {line.strip()}")
    dur = float(line.split("dur=")[1].split("s")[0])
    check(0.9 <= dur < 2.0, f"closed after {dur}s of idleness (1s timeout)")
    busy.sendall(b"tock")
    check(recv_exact(busy, 4) == b"tock", "busy connection outlived the idle timeout")
    busy.close()
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
