"""Backend refused or timed out: the client's connection is closed at once
(reset), with one log line that says why; the proxy keeps serving."""
import socket
import time

from harness import NOT_SMB, Proxy, Server, check, free_port, recv_exact, run


def expect_closed(px, within, who, send=b"\0"):
    """Connect through px, send a byte (in smb mode the backend is dialled
    only then; NOT_SMB lets any byte do), and expect the proxy to close us
    within `within` s. The reset can beat connect() itself on loopback:
    that counts too."""
    t0 = time.monotonic()
    try:
        c = px.connect()
        if send:
            c.sendall(send)
        data = c.recv(1)
        check(data == b"", f"{who}: no data, connection closed")
        c.close()
    except ConnectionResetError:
        pass
    took = time.monotonic() - t0
    check(took < within, f"{who}: client closed after {took:.3f}s (< {within}s)")


def test_refused():
    px = Proxy(f"127.0.0.1:{free_port()}", *NOT_SMB)
    expect_closed(px, 1.0, "refused backend")
    line = px.wait_log(r"^.* conn .* end=error.*$")[0]
    check("Connection refused" in line, f"log says why: {line.strip()}")
    # It keeps serving: a second client gets the same treatment.
    expect_closed(px, 1.0, "refused backend, second client")
    px.stop()


def test_timeout():
    # A listener whose accept queue is full drops new SYNs: the connect
    # neither succeeds nor fails, so only the timeout can end it.
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    fillers = []
    for _ in range(4):
        f = socket.socket()
        f.setblocking(False)
        f.connect_ex(lst.getsockname())
        fillers.append(f)
    time.sleep(0.2)
    px = Proxy(f"127.0.0.1:{lst.getsockname()[1]}", "--connect-timeout", "0.5", *NOT_SMB)
    t0 = time.monotonic()
    expect_closed(px, 3.0, "silent backend", send=b"hello")
    check(time.monotonic() - t0 >= 0.3, "closed by the timeout, not before")
    line = px.wait_log(r"^.* conn .* end=timeout.*$")[0]
    check("connect timed out" in line, f"log says why: {line.strip()}")
    px.stop()
    for f in fillers:
        f.close()
    lst.close()


def test_backend_back():
    # The same proxy serves again once the backend is up.
    port = free_port()
    px = Proxy(f"127.0.0.1:{port}", *NOT_SMB)
    expect_closed(px, 1.0, "backend down")
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("127.0.0.1", port))
    lst.listen(8)
    c = px.connect()
    c.sendall(b"ping")
    s, _ = lst.accept()
    check(recv_exact(s, 4) == b"ping", "backend up again: bytes flow")
    s.close()
    c.close()
    lst.close()
    px.stop()


def main():
    test_refused()
    test_timeout()
    test_backend_back()


if __name__ == "__main__":
    run(main)
