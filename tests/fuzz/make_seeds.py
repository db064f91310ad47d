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


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    for i, s in enumerate(seeds()):
        with open(os.path.join(outdir, f"seed{i:02d}"), "wb") as f:
            f.write(bytes([i * 37 & 0xff]) + s)


if __name__ == "__main__":
    main(sys.argv[1])
