"""Write a seed corpus for fuzz_framer: one file per hand-built stream.

The first byte of each file is the harness's split seed; the rest is an SMB
byte stream like the ones the unit tests build.
"""
import os
import struct
import sys

SMB2 = b"\xfeSMB"


def prefix(n, typ=0):
    return bytes([typ, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff])


def hdr(cmd, flags=0, status=0, nxt=0):
    return SMB2 + struct.pack("<HHIHHIIQQQ16s", 64, 1, status, cmd, 1, flags, nxt, 7, 0, 99, b"")


def read_rsp(off, n, nxt=0):
    body = struct.pack("<HBBIII", 17, off, 0, n, 0, 0)
    m = hdr(8, 1, 0, nxt) + body
    return m + b"\xee" * (off - len(m)) + b"\xda" * n


def write_req(off, n):
    body = struct.pack("<HHIQ16sIIHHI", 49, off, n, 0, b"", 0, 0, 0, 0, 0)
    m = hdr(9) + body
    return m + b"\xee" * (off - len(m)) + b"\x77" * n


def frame(msg):
    return prefix(len(msg)) + msg


def hdr2(cmd, flags=0, status=0, mid=0, tree=0, sid=0):
    """An SMB2 header with the fields the session's view reads."""
    return SMB2 + struct.pack("<HHIHHIIQIIQ16s", 64, 1, status, cmd, 1, flags, 0, mid, 0, tree, sid, b"")


def ntlm_auth(dom, user):
    """An NTLMSSP AUTHENTICATE (UTF-16 names after a 300-byte NT
    response, as Samba's client writes them)."""
    fields = [b"\x5a" * 24, b"\x5a" * 300, dom.encode("utf-16-le"), user.encode("utf-16-le"), b"", b""]
    head, body, pos = b"NTLMSSP\0" + struct.pack("<I", 3), b"", 72
    for f in fields:
        head += struct.pack("<HHI", len(f), len(f), pos + len(body))
        body += f
    head += struct.pack("<I", 0xE2088215)
    return head + b"\0" * (72 - len(head)) + body


def session_req(mid, blob):
    return frame(hdr2(1, 0, 0, mid, 0, 0x77) + struct.pack("<HBBIIHHQ", 25, 0, 1, 0, 0, 88, len(blob), 0) + blob)


def small_rsp(cmd, status, mid, tree=0, sid=0):
    return frame(hdr2(cmd, 1, status, mid, tree, sid) + struct.pack("<H", 9 if cmd == 1 else 16) + b"\0" * 14)


def tree_req(mid, path):
    p = path.encode("utf-16-le")
    return frame(hdr2(3, 0, 0, mid, 0, 0x77) + struct.pack("<HHHH", 9, 0, 72, len(p)) + p)


def who_stream():
    """A session a view names: login, two tree connects, opens, a close."""
    sid = 0x1234
    return (session_req(2, ntlm_auth("EAST", "alice")) + small_rsp(1, 0, 2, 0, sid) +
            tree_req(3, "\\\\srv\\share") + small_rsp(3, 0, 3, 5, sid) +
            tree_req(4, "\\\\srv\\IPC$") + small_rsp(3, 0, 4, 6, sid) +
            small_rsp(5, 0, 5, 5, sid) + small_rsp(5, 0, 6, 5, sid) + small_rsp(6, 0, 7, 5, sid) +
            frame(hdr2(4, 0, 0, 8, 6, sid) + b"\x04\0\0\0") + small_rsp(4, 0, 8, 6, sid))


def seeds():
    yield frame(read_rsp(80, 5000))
    yield frame(read_rsp(88, 2000)) + frame(read_rsp(80, 10))
    yield frame(hdr(8, 3, 0x103) + struct.pack("<HHIB", 9, 0, 0, 0)) + frame(read_rsp(80, 3000))
    yield frame(write_req(112, 4000)) + frame(write_req(120, 5))
    a = hdr(5, 1, 0, 64 + 96) + b"\x33" * 96
    b = read_rsp(80, 2000, 80 + 2000)
    c = hdr(6, 5, 0xC0000034) + struct.pack("<HHIB", 9, 0, 0, 0)
    yield frame(a + b + c)
    neg = hdr(0, 1) + struct.pack("<HHHH16sIIII", 65, 1, 0x311, 0, b"", 0x2F, 8 << 20, 4 << 20, 2 << 20) + b"\0" * 64
    yield frame(neg)
    yield frame(b"\xfdSMB" + b"\xcc" * 6000)
    yield frame(b"\xfcSMB" + b"\xcd" * 5000)
    yield frame(b"\xffSMB" + b"\x72" * 40) + frame(hdr(13) + b"\0" * 4)
    yield prefix(68, 0x81) + b"\x20" * 68 + prefix(0, 0x82) + prefix(0, 0x85) + frame(hdr(13, 1) + b"\0" * 4)
    yield prefix(0) * 3 + frame(hdr(13, 8) + b"\0" * 4)
    # The session's view: NTLMSSP raw and in SPNEGO, a failed login, a
    # Kerberos one, then a sealed frame (a transform header).
    yield who_stream()
    tok = ntlm_auth("WORKGROUP", "bob")
    spnego = (b"\xa1\x82" + struct.pack(">H", len(tok) + 12) + b"\x30\x82" + struct.pack(">H", len(tok) + 8) +
              b"\xa2\x82" + struct.pack(">H", len(tok) + 4) + b"\x04\x82" + struct.pack(">H", len(tok)) + tok)
    yield session_req(9, spnego) + small_rsp(1, 0xC000006D, 9) + session_req(10, spnego) + small_rsp(1, 0, 10, 0, 7)
    krb = b"\x60\x82\x01\x00\x06\x06\x2b\x06\x01\x05\x05\x02\xa0\x82\x00\x20\x30\x82\x00\x1c\xa0\x82\x00\x18" \
        b"\x30\x82\x00\x14\x06\x09\x2a\x86\x48\x86\xf7\x12\x01\x02\x02" + b"\0" * 200
    yield session_req(1, krb) + small_rsp(1, 0, 1, 0, 9)
    yield who_stream() + frame(b"\xfdSMB" + b"\0" * 16 + struct.pack("<IHHQ", 64, 0, 1, 0x1234) + b"\xcc" * 64)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    for i, s in enumerate(seeds()):
        with open(os.path.join(outdir, f"seed{i:02d}"), "wb") as f:
            f.write(bytes([i * 37 & 0xff]) + s)


if __name__ == "__main__":
    main(sys.argv[1])
