#!/usr/bin/env python3
"""capture_quic_seeds.py SMBSPLICE SMBQC OUTDIR - seeds for fuzz_quic from
a real connection.

Runs a real smbsplice with a quic: listener (--mode tcp, to an echo
backend in this script) and the independent Go client smbqc (quic-go) in
nc mode against it, through a small UDP forwarder here that records each
datagram the client sends. They become fuzz_quic inputs (its head
comment has the format):

- the whole client flight (Initials, Handshake, 1-RTT packets, the
  stream's bytes, the close), one seed per --quic-retry setting;
- each datagram alone;
- the first Initial cut short (1199, 600, 40 and 7 bytes) and with
  bytes flipped in its header;
- if python3-cryptography is present, the first Initial's frames
  (decrypted with its Initial keys, RFC 9001 5.2) as a record of type 1
  and, under --quic-retry always, as type 1 then type 2: the fuzzer then
  mutates the ClientHello itself, not ciphertext that fails its tag; and
  the ClientHello without its QUIC transport parameters (the input that
  aborted the daemon, kept as a seed).

Exit 0 with the seeds written, 77 with one line when smbqc or openssl is
missing or the connection did not work (the fuzzer then runs from the
harness's own seeds).
"""
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# The Initial packet crypto is shared with tests/integ/test_quic_hostile.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integ"))
from quicinitial import have_crypto, open_initial, rename_transport_params, varint  # noqa: E402


def skip(why):
    print(f"capture_quic_seeds: SKIP: {why}")
    sys.exit(77)


def echo_server():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            while True:
                d = c.recv(65536)
                if not d:
                    break
                c.sendall(d)
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    return s


def forwarder(to, stop, got):
    """Client <-> daemon on a port of its own; records client datagrams."""
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(("127.0.0.1", 0))
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.connect(to)
    client = [None]

    def run():
        while not stop.is_set():
            r, _, _ = select.select([front, back], [], [], 0.1)
            if front in r:
                d, client[0] = front.recvfrom(65536)
                got.append(d)
                back.send(d)
            if back in r:
                d = back.recv(65536)
                if client[0]:
                    front.sendto(d, client[0])

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return front.getsockname()[1], t


def capture(smbsplice, smbqc, d):
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-days", "2", "-subj", "/CN=fuzz", "-addext", "subjectAltName=DNS:fuzz", "-keyout", key,
                        "-out", cert], capture_output=True)
    if r.returncode:
        skip("openssl could not make a certificate")
    srv = echo_server()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    port = u.getsockname()[1]
    u.close()
    px = subprocess.Popen([smbsplice, "--listen", f"quic:127.0.0.1:{port}", "--backend",
                           "127.0.0.1:%d" % srv.getsockname()[1], "--mode", "tcp", "--quic-cert", cert,
                           "--quic-key", key, "--quic-retry", "off"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop, got = threading.Event(), []
    try:
        time.sleep(0.5)
        fport, t = forwarder(("127.0.0.1", port), stop, got)
        r = subprocess.run([smbqc, "-addr", f"127.0.0.1:{fport}", "-name", "fuzz", "-ca", cert, "-timeout", "5s",
                            "nc"], input=b"\0\0\0\x04fuzz", capture_output=True, timeout=30)
        time.sleep(0.3)
        stop.set()
        t.join()
    finally:
        px.terminate()
        px.wait()
        srv.close()
    if r.returncode or r.stdout != b"\0\0\0\x04fuzz" or not got:
        skip(f"the captured connection failed ({r.returncode}: {r.stderr.decode().strip()[-200:]})")
    return got


def rec(kind, client, b):
    return struct.pack(">BBH", kind, client, len(b)) + b


def initial_frames(pkt):
    """The first Initial's IDs, packet number and frames, decrypted; None
    without python3-cryptography."""
    if not have_crypto():
        return None
    dcid, scid, _, pn, frames = open_initial(pkt, pkt[6:6 + pkt[5]], b"client in")
    return dcid, scid, pn, unpadded(frames)


def unpadded(frames):
    """The frames without PADDING (quic-go pads before its CRYPTO frame):
    what the harness seals again must fit in its 1200 bytes whole."""
    out, at = b"", 0
    while at < len(frames):
        t = frames[at]
        if t == 0:
            at += 1
        elif t == 1:
            out, at = out + b"\1", at + 1
        elif t == 6:
            _, e = varint(frames, at + 1)
            n, e = varint(frames, e)
            out, at = out + frames[at:e + n], e + n
        else:
            return out + frames[at:]
    return out


def no_transport_params(frames):
    """The frames' first CRYPTO frame with the ClientHello's
    quic_transport_parameters extension (57) renamed (56): the input that
    aborted the daemon before the ClientHello hook checked for them."""
    at = frames.find(b"\x06\x00")
    if at < 0 or frames[at + 2] >> 6 != 1:
        return None
    n = struct.unpack(">H", frames[at + 2:at + 4])[0] & 0x3fff
    ch = rename_transport_params(frames[at + 4:at + 4 + n])
    return None if ch is None else frames[:at + 4] + ch


def write(out, name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        sys.exit(1)
    smbsplice, smbqc, out = sys.argv[1:]
    if not os.access(smbqc, os.X_OK):
        skip(f"no smbqc at {smbqc} (tests/quic is built with Go)")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        got = capture(smbsplice, smbqc, d)
    flight = b"".join(rec(0, 0, d) for d in got)
    for mode in range(3):  # --quic-retry auto, always, off
        write(out, f"flight-{mode}", bytes([mode]) + flight)
    for i, d in enumerate(got[:32]):
        write(out, f"dgram-{i}", b"\2" + rec(0, 0, d))
    first = got[0]
    for n in (1199, 600, 40, 7):
        write(out, f"cut-{n}", b"\2" + rec(0, 0, first[:n]))
    for i in (0, 5, 6, 20):
        flip = bytearray(first)
        flip[i] ^= 0x55
        write(out, f"flip-{i}", b"\2" + rec(0, 0, bytes(flip)))
    write(out, "empty", b"\2" + rec(0, 0, b""))
    f = initial_frames(first)
    if f:
        dcid, scid, pn, frames = f
        body = bytes([len(dcid)]) + dcid + bytes([len(scid)]) + scid + bytes([pn & 0xff]) + frames
        write(out, "hello-1", b"\2" + rec(1, 0, body) + b"".join(rec(0, 0, d) for d in got[1:]))
        nt = no_transport_params(frames)
        if nt:
            write(out, "hello-no-tp", b"\2" + rec(1, 0, body[:-len(frames)] + nt))
        body2 = bytes([len(scid)]) + scid + bytes([pn & 0xff]) + frames
        write(out, "hello-retry", b"\1" + rec(1, 1, body) + rec(2, 1, body2))
    print(f"capture_quic_seeds: {len(got)} client datagrams captured, seeds in {out}")


if __name__ == "__main__":
    main()
