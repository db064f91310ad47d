"""Half-close in each direction: a FIN is forwarded only after every byte
before it, and the other direction keeps flowing after it."""
import socket

from harness import NOT_SMB, Pattern, Proxy, Server, check, recv_all, recv_exact, recv_hash_n, run, send_stream

N = 8 << 20


def client_closes_first(c):
    # Read the client's stream to its FIN, then answer with ours.
    n, h = recv_all(c)
    c.sendall(f"{n} {h}\n".encode())
    send_stream(c, Pattern(6), N)


received = []


def server_closes_first(c):
    # Send our stream and FIN, then go on reading the client's. The
    # client's first byte comes first: in smb mode it is what makes the
    # proxy dial the server.
    recv_exact(c, 1)
    send_stream(c, Pattern(7), N)
    received.append(recv_all(c))


def test_client_fin(args):
    srv = Server(client_closes_first)
    px = Proxy(srv.addr, *args, *NOT_SMB)
    c = px.connect()
    sent = send_stream(c, Pattern(5), N)  # ends with shutdown(SHUT_WR)
    receipt = b""
    while not receipt.endswith(b"\n"):
        receipt += c.recv(1)
    n, h = receipt.split()
    check(int(n) == N and h.decode() == sent, f"{args}: server got all {N} bytes before the client's FIN")
    got = recv_hash_n(c, N + 1)
    check(got == (N, Pattern(6).digest(N)), f"{args}: {N} bytes flowed back after the client's FIN, then EOF")
    c.close()
    srv.join()
    check(not srv.errors, f"{args}: server saw no errors ({srv.errors})")
    check(px.wait_log(r" end=fin "), f"{args}: logged end=fin")
    px.stop()
    srv.close()


def test_server_fin(args):
    srv = Server(server_closes_first)
    px = Proxy(srv.addr, *args, *NOT_SMB)
    c = px.connect()
    c.sendall(b"!")
    got = recv_hash_n(c, N)
    check(c.recv(1) == b"", f"{args}: the server's FIN reached the client")
    check(got == (N, Pattern(7).digest(N)), f"{args}: all {N} bytes arrived before the server's FIN")
    received.clear()
    sent = send_stream(c, Pattern(8), N)
    srv.join()
    check(received == [(N, sent)], f"{args}: {N} bytes flowed up after the server's FIN")
    c.close()
    check(not srv.errors, f"{args}: server saw no errors ({srv.errors})")
    px.stop()
    srv.close()


def main():
    for args in ([], ["--no-splice"], ["--pipe-size", "8K", "--mode", "tcp"]):
        test_client_fin(args)
        test_server_fin(args)


if __name__ == "__main__":
    run(main)
