"""A reset from either peer resets the other one (SO_LINGER 0), promptly,
and the connection is logged with end=rst; so is a reset smbsplice only
finds when it forwards the other side's FIN (shutdown() says ENOTCONN)."""
import socket
import struct
import threading
import time

from harness import NOT_SMB, Proxy, Server, check, recv_exact, run


def linger0(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def expect_reset(s, who):
    """Read until the peer's reset shows; a clean EOF is a failure."""
    t0 = time.monotonic()
    try:
        while s.recv(65536):
            pass
        check(False, f"{who} saw a reset, not a clean EOF")
    except ConnectionResetError:
        check(time.monotonic() - t0 < 2, f"{who} saw the reset within 2 s")


def test_client_resets(args):
    outcome = []

    def handler(c):
        recv_exact(c, 5)
        c.sendall(b"ready")
        try:
            while c.recv(65536):
                pass
            outcome.append("eof")
        except ConnectionResetError:
            outcome.append("rst")

    srv = Server(handler)
    px = Proxy(srv.addr, *args, *NOT_SMB)
    c = px.connect()
    c.sendall(b"hello")
    recv_exact(c, 5)
    c.sendall(b"x" * 100000)  # bytes in flight when the reset comes
    linger0(c)
    c.close()
    srv.join()
    check(outcome == ["rst"], f"{args}: server saw the client's reset as a reset ({outcome})")
    check(px.wait_log(r" end=rst "), f"{args}: logged end=rst")
    px.stop()
    srv.close()


def test_server_resets(args):
    def handler(c):
        recv_exact(c, 5)
        c.sendall(b"y" * 100000)
        linger0(c)

    srv = Server(handler)
    px = Proxy(srv.addr, *args, *NOT_SMB)
    c = px.connect()
    c.sendall(b"hello")
    time.sleep(0.2)
    expect_reset(c, f"{args}: client")
    c.close()
    check(px.wait_log(r" end=rst "), f"{args}: logged end=rst")
    px.stop()
    srv.close()


def test_reset_found_at_shutdown(args):
    """The client closes after a whole request; the server's reply draws a
    reset from the client's kernel, then the server closes: the reset is
    first seen by the shutdown() that forwards the server's FIN."""
    def handler(c):
        while c.recv(65536):
            pass
        time.sleep(0.2)
        c.sendall(b"x" * 1000)
        time.sleep(0.3)

    srv = Server(handler)
    px = Proxy(srv.addr, *args, *NOT_SMB)
    echo = b"\xfeSMB" + struct.pack("<H", 64) + bytes(6) + struct.pack("<H", 13) + bytes(50) + b"\x04\0\0\0"
    c = px.connect()
    c.sendall(b"\0" + len(echo).to_bytes(3, "big") + echo)
    c.close()
    line = px.wait_log(r"^.* end=\S+ .*$")[0]
    check(" end=rst " in line, f"{args}: a reset found by shutdown() is logged end=rst ({line.strip()})")
    px.stop()
    srv.close()


def main():
    for args in ([], ["--no-splice"], ["--buffer-size", "1K", "--pipe-size", "8K"]):
        test_client_resets(args)
        test_server_resets(args)
    for args in (["--mode", "tcp"], ["--mode", "smb"]):
        test_reset_found_at_shutdown(args)


if __name__ == "__main__":
    run(main)
