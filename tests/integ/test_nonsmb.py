"""In smb mode, traffic that is not SMB (or stops being SMB) still passes
byte-exact: the connection falls back to opaque forwarding, says so in one
log line, and counts it in the metrics. (A client that opens with
anything but a NEGOTIATE is refused unless --first-frame any, which this
test gives; test_preauth.py tests the refusal.)"""
import hashlib
import os
import struct

from harness import NOT_SMB, Proxy, Server, check, metric, recv_exact, run, scrape


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def smb2_echo_frame():
    hdr = b"\xfeSMB" + struct.pack("<HHIHHIIQQQ16s", 64, 1, 0, 13, 1, 0, 0, 1, 0, 0, b"")
    msg = hdr + struct.pack("<HH", 4, 0)
    return struct.pack(">I", len(msg)) + msg


def roundtrip(px, payload):
    c = px.connect()
    c.sendall(payload)
    got = recv_exact(c, len(payload))
    c.close()
    return got


def main():
    srv = Server(echo)
    px = Proxy(srv.addr, *NOT_SMB, stats=True)
    http = b"GET / HTTP/1.1\r\nHost: example\r\n\r\n" * 100
    check(roundtrip(px, http) == http, "HTTP text through smb mode is byte-exact")
    blob = os.urandom(3 << 20)
    check(hashlib.sha256(roundtrip(px, blob)).digest() == hashlib.sha256(blob).digest(),
          "3 MiB of random bytes through smb mode are byte-exact")
    mixed = smb2_echo_frame() * 3 + b"\x42not smb any more" + os.urandom(1 << 20)
    check(roundtrip(px, mixed) == mixed, "SMB2 frames, then garbage: byte-exact")
    px.wait_log(r" end=fin ", count=3)
    log = px.log()
    check(log.count("forwarding it opaque") >= 3, "each fallback logged once per direction")
    check("(not an SMB transport frame" in log, "the log line says why")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_opaque_fallbacks_total") == 3, "three connections fell back to opaque")
    check(metric(m, "smbsplice_messages_total", direction="to_server", command="echo") == 3,
          "the SMB2 frames before the garbage were parsed")
    px.stop()
    srv.close()


if __name__ == "__main__":
    run(main)
