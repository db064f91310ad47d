"""smbgen - synthetic SMB byte streams, a reference framer, and a soak.

Stream model
============

A *stream* is the byte sequence one direction of one TCP connection
carries, as an SMB client or server would put it on port 445: a run of
Direct TCP frames (a zero byte and a 24-bit big-endian length, then the
body). Each stream is built from a seed and a *profile* and is exactly
reproducible from those two.

To the server (``direction="to_server"``) a stream holds:

- first, always, a *hello*: an SMB2 NEGOTIATE request whose ClientGuid
  carries a magic and the stream pair's seed, so that the test's server
  knows which stream pair a connection is and what to send back;
- WRITE requests with small (0..4 KiB) and large (4 KiB..1.5 MiB) data,
  at DataOffset 112 and now and then later (a gap before the data);
- READ requests and other small requests (CREATE, CLOSE, QUERY_INFO, ECHO,
  LOCK, CANCEL, ...), large ones (IOCTL, SET_INFO, SESSION_SETUP with
  buffers of 4 KiB and more: the "other" payload class), and commands
  past the last known one;
- compound requests (CREATE + WRITE + CLOSE, CREATE + QUERY_INFO +
  CLOSE, ...), elements padded to 8 bytes and chained with NextCommand;
- an SMB1 multi-protocol NEGOTIATE (FF 'SMB'); NetBIOS keepalives
  (85 00 00 00: on port 445 a NetBIOS type byte with a 17-bit length),
  a NetBIOS session request, empty Direct TCP frames;
- encryption transform frames (FD 'SMB', 52-byte header, ciphertext) and
  compression transform frames (FC 'SMB').

To the client (``direction="to_client"``):

- an SMB2 NEGOTIATE response first;
- READ responses with DataOffset 80 and 88, small and large data, error
  bodies (the 9-byte ERROR body), interim STATUS_PENDING async responses
  followed, a few frames later, by the final async response;
- other responses, small and large (QUERY_DIRECTORY, IOCTL, QUERY_INFO
  output buffers), OPLOCK_BREAK notifications, error responses;
- compound responses, every element padded to 8 bytes, with a READ
  response (and its data) inside;
- transform frames and keepalives as above.

Payload bytes are random, and sometimes hold decoys: bytes that look like
a Direct TCP prefix and an SMB2 READ header, so that a proxy that looked
for frames inside payloads would go wrong.

Profiles and corruption
-----------------------

A profile (see PROFILES) sets how many frames a stream has (60 to 300,
or 5 to 60 for "small"), a cap on its bytes, and the odds of two
accidents:

- *corruption*: at one random frame in the last three quarters of the
  stream, one field is made slightly wrong or absurd: the frame length
  (+-1..8; 0, 1, 3, 63, 0xFFFFFF), a READ or WRITE DataOffset (+-1, +-8;
  0, 64, 255, 0xFFFF), a DataLength (+-1, +8; 2^24, 2^31, 2^32-1), a
  compound's NextCommand (+-8, +1, -4; 8, 0xFFFFFFF8), the protocol id
  ('FE SMC', 'FB SMB', 'HTTP'), a StructureSize; or garbage bytes or a
  bad NetBIOS header are inserted between two frames. Many of these
  make smbsplice's framer give up on the stream and forward the rest
  opaque; some (a DataLength one short, a frame length that swallows the
  rest of the stream) do not. Either way every byte must still arrive
  exactly.
- *truncation*: the stream ends inside a frame (often inside a large
  payload): one last frame is cut short before EOF.

Reference framer
----------------

walk() reads a whole stream the way smb/framer.c reads it as it arrives
(docs/design.md, "Bad input", and smb/wire.h, the SMB wire facts it needs)
and returns what smbsplice's counters must show for it: messages per
command, transform, SMB1 and NetBIOS frames, payloads per class and
threshold decision, payload bytes, interim responses, READ error bodies,
and whether (and where, and why) the framer goes opaque. The framer's
counters do not depend on how the stream was split into reads, so the
integration test compares them with /metrics exactly, NetBIOS control
frames of length zero (keepalives, positive session responses) included.

Traffic
-------

run_batch() drives stream pairs through a running smbsplice: one
connection per pair, both directions at once, random chunk sizes (some
cut exactly at frame, header and payload boundaries, or a byte either
side) and random short pauses on both the sending and the receiving side,
every byte compared. The test's sockets use an Ethernet MSS and a small
receive buffer (see Pace), so that a pausing receiver soon pushes back on
smbsplice and a few pipes run out.

Soak
----

    python3 tests/integ/smbgen.py --smbsplice proxy/smbsplice --seconds 1800 [--seed N]

starts smbsplice in four configurations (4 KiB thresholds; 4, 2 or 1
pipes; 8 KiB and 4 KiB pipes; 4 KiB and 1 KiB buffers; or those given
with --config), loops rounds of random stream pairs (6 connections at
once, a random profile and pace each round) through them for that long,
then checks every configuration's counters against the reference framer
and prints the streams run, the bytes compared each way, the mismatches,
what was spliced and how often pipes ran out. It exits 1 on any
mismatch, transfer error or hang, counter difference, smbsplice crash or
non-zero exit, or sanitizer report in smbsplice's log.

    python3 tests/integ/smbgen.py --dump SEED --profile corrupt --out DIR

writes one stream pair to DIR/to_server.bin and DIR/to_client.bin, with a
listing of its frames, to reproduce a failure outside the soak.
"""
import argparse
import bisect
import collections
import hashlib
import os
import random
import socket
import struct
import sys
import threading
import time

# --- wire -------------------------------------------------------------------

SMB2 = b"\xfeSMB"
SMB1 = b"\xffSMB"
TRANSFORM = b"\xfdSMB"
COMPRESS = b"\xfcSMB"
HELLO_MAGIC = b"smbgen01"

NEGOTIATE, SESSION_SETUP, LOGOFF, TREE_CONNECT, TREE_DISCONNECT, CREATE, CLOSE, FLUSH, READ, WRITE, LOCK, IOCTL, \
    CANCEL, ECHO, QUERY_DIRECTORY, CHANGE_NOTIFY, QUERY_INFO, SET_INFO, OPLOCK_BREAK = range(19)
COMMAND_NAMES = ["negotiate", "session_setup", "logoff", "tree_connect", "tree_disconnect", "create", "close", "flush",
                 "read", "write", "lock", "ioctl", "cancel", "echo", "query_directory", "change_notify", "query_info",
                 "set_info", "oplock_break", "unknown"]

FLAG_RESPONSE, FLAG_ASYNC, FLAG_RELATED, FLAG_SIGNED = 1, 2, 4, 8
STATUS_PENDING = 0x00000103
STATUS_END_OF_FILE = 0xC0000011
ERROR_STATUSES = (0xC0000034, 0xC000000F, 0xC0000022, 0x80000006, 0xC0000120, 0xC00000BA)

SPLICE_MIN = 4096  # smb/threshold.h: SMB_SPLICE_MIN
CLASSES = ("read", "write", "other")
DIRECTIONS = ("to_server", "to_client")


def prefix(n, typ=0):
    """A transport prefix: Direct TCP (typ 0, 24-bit length) or NetBIOS."""
    return bytes([typ, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff])


def smb2_header(cmd, *, resp=False, status=0, flags=0, next_cmd=0, msg_id=0, credits=1, charge=1, async_id=None,
                tree=1, session=0, signature=None):
    """The 64-byte SMB2 header (sync, or async when async_id is given)."""
    fl = flags | (FLAG_RESPONSE if resp else 0) | (FLAG_ASYNC if async_id is not None else 0)
    if signature is not None:
        fl |= FLAG_SIGNED
    ids = struct.pack("<Q", async_id) if async_id is not None else struct.pack("<II", 0xFEFF, tree)
    return (SMB2 + struct.pack("<HHIHHIIQ", 64, charge, status, cmd & 0xffff, credits, fl, next_cmd, msg_id) + ids
            + struct.pack("<Q", session) + (signature or bytes(16)))


def pad8(b):
    return b + bytes(-len(b) % 8)


# --- frames -----------------------------------------------------------------

class Frame:
    """One unit of a stream: usually a whole transport frame.

    @buf holds its bytes; @fields names the places a corruption may hit,
    as offsets into @buf with their encoding ("len24" is the transport
    prefix's length, the rest struct formats); @marks are offsets into
    @buf where the sender likes to cut a chunk (the end of a header, the
    start and end of a payload).
    """

    def __init__(self, kind, buf, fields=None, marks=()):
        self.kind = kind
        self.buf = bytearray(buf)
        self.fields = fields or {}
        self.marks = list(marks)
        self.note = ""

    def get(self, name):
        off, fmt = self.fields[name]
        if fmt == "len24":
            return int.from_bytes(self.buf[off + 1:off + 4], "big")
        return struct.unpack_from(fmt, self.buf, off)[0]

    def set(self, name, value):
        off, fmt = self.fields[name]
        if fmt == "len24":
            self.buf[off + 1:off + 4] = (value & 0xffffff).to_bytes(3, "big")
        elif isinstance(value, bytes):
            struct.pack_into(fmt, self.buf, off, value)
        else:
            bits = struct.calcsize(fmt) * 8
            struct.pack_into(fmt, self.buf, off, value % (1 << bits))


def framed(kind, msg, fields=None, marks=()):
    """Wrap a message in a Direct TCP prefix; shift its field offsets."""
    f = {"len": (0, "len24")}
    for k, (off, fmt) in (fields or {}).items():
        f[k] = (off + 4, fmt)
    return Frame(kind, prefix(len(msg)) + msg, f, [4] + [m + 4 for m in marks] + [4 + len(msg)])


class Builder:
    """Makes the frames of one stream from its random generator."""

    def __init__(self, rng):
        self.rng = rng
        self.msg_id = rng.randrange(1, 1 << 20)
        self.session = rng.getrandbits(64)
        self.signed = rng.random() < 0.5
        self.pending = []  # interim responses whose final is still due

    # helpers

    def mid(self):
        self.msg_id += 1
        return self.msg_id

    def sig(self):
        return self.rng.randbytes(16) if self.signed else None

    def hdr(self, cmd, **kw):
        if "msg_id" not in kw:
            kw["msg_id"] = self.mid()
        kw.setdefault("session", self.session)
        if "signature" not in kw:
            kw["signature"] = self.sig()
        return smb2_header(cmd, **kw)

    def small(self):
        r = self.rng
        return r.choice((0, 1, 7, 100, 511, 1024, 3000, 4095, r.randrange(0, SPLICE_MIN)))

    def large(self):
        r = self.rng
        pick = r.random()
        if pick < 0.25:
            return r.choice((4096, 4097, 8191, 8192, 8193, 65535, 65536, 65537, 131072, 1 << 20, (1 << 20) + 1))
        if pick < 0.97:
            return int(2 ** r.uniform(12, 18))  # 4 KiB .. 256 KiB, log-uniform
        return r.randrange(1 << 18, 3 << 19)  # up to 1.5 MiB

    def blob(self, n):
        """Payload bytes: random, sometimes with decoy frame headers."""
        b = self.rng.randbytes(n)
        if n >= 200 and self.rng.random() < 0.25:
            b = bytearray(b)
            decoy = prefix(0x10000 + 80) + smb2_header(READ, resp=True, msg_id=1) + struct.pack(
                "<HBBIII", 17, 80, 0, 0x10000, 0, 0)
            for _ in range(self.rng.randint(1, 4)):
                at = self.rng.randrange(0, n - min(n, len(decoy)) + 1)
                b[at:at + len(decoy)] = decoy[:n - at]
            b = bytes(b)
        return b

    # to the server

    def write_req(self, size, *, related=False, next_cmd=0, gap=0, fid=None):
        """WRITE request: header, 48-byte fixed body, gap, data."""
        off = 112 + gap
        body = struct.pack("<HHIQ16sIIHHI", 49, off, size, self.rng.getrandbits(40) << 12,
                           fid or self.rng.randbytes(16), 0, 0, 0, 0, 0)
        msg = self.hdr(WRITE, next_cmd=next_cmd, flags=FLAG_RELATED if related else 0,
                       charge=max(1, (size + 65535) // 65536)) + body + bytes(gap) + self.blob(size)
        return msg, {"data_offset": (66, "<H"), "data_length": (68, "<I"), "body_ss": (64, "<H")}, [64, off, off + size]

    def read_req(self, *, related=False, next_cmd=0):
        size = self.rng.choice((4096, 65536, 1 << 20, 8 << 20, self.rng.randrange(1, 1 << 20)))
        body = struct.pack("<HBBIQ16sIIIHHB", 49, 0x50, 0, size, self.rng.getrandbits(40), self.rng.randbytes(16),
                           1, 0, 0, 0, 0, 0)
        return self.hdr(READ, next_cmd=next_cmd, flags=FLAG_RELATED if related else 0,
                        charge=max(1, (size + 65535) // 65536)) + body

    REQUESTS = ((CREATE, 57, (16, 200)), (CLOSE, 24, None), (FLUSH, 24, None), (ECHO, 4, None), (CANCEL, 4, None),
                (LOCK, 48, None), (QUERY_INFO, 41, (0, 64)), (SET_INFO, 33, (8, 200)), (IOCTL, 57, (0, 300)),
                (TREE_CONNECT, 9, (20, 80)), (SESSION_SETUP, 25, (40, 1500)), (QUERY_DIRECTORY, 33, (2, 60)),
                (CHANGE_NOTIFY, 32, None), (LOGOFF, 4, None), (TREE_DISCONNECT, 4, None))

    def other_req(self, *, big=False, cmd=None, related=False, next_cmd=0):
        """Any other request: StructureSize, a fixed body, a buffer."""
        r = self.rng
        if cmd is None:
            cmd, fixed, var = r.choice(self.REQUESTS)
        else:
            cmd, fixed, var = next(x for x in self.REQUESTS if x[0] == cmd)
        if big:
            cmd, fixed = r.choice(((IOCTL, 57), (SET_INFO, 33), (SESSION_SETUP, 25), (CREATE, 57)))
            n = self.large()
        else:
            n = r.randint(*var) if var else 0
        body = struct.pack("<H", fixed) + r.randbytes(fixed - 2 - (fixed & 1)) + self.blob(n)
        return self.hdr(cmd, next_cmd=next_cmd, flags=FLAG_RELATED if related else 0) + body

    # to the client

    def read_rsp(self, size, *, off=80, next_cmd=0, related=False, async_id=None, msg_id=None):
        """READ response: header, 16-byte body, padding to DataOffset, data."""
        body = struct.pack("<HBBIII", 17, off, 0, size, 0, 0)
        kw = {} if msg_id is None else {"msg_id": msg_id}
        msg = self.hdr(READ, resp=True, next_cmd=next_cmd, async_id=async_id,
                       flags=FLAG_RELATED if related else 0, **kw) + body
        msg += bytes(off - len(msg)) + self.blob(size)
        return msg, {"data_offset": (66, "<B"), "data_length": (68, "<I"), "body_ss": (64, "<H")}, [64, off, off + size]

    def error_rsp(self, cmd, status, *, next_cmd=0, related=False, async_id=None, msg_id=None):
        """A response with the 9-byte ERROR body (73 bytes with the header)."""
        kw = {} if msg_id is None else {"msg_id": msg_id}
        return self.hdr(cmd, resp=True, status=status, next_cmd=next_cmd, async_id=async_id,
                        flags=FLAG_RELATED if related else 0, **kw) + struct.pack("<HBBIB", 9, 0, 0, 0, 0)

    RESPONSES = ((CREATE, 89, (0, 200)), (CLOSE, 60, None), (FLUSH, 4, None), (WRITE, 17, None), (ECHO, 4, None),
                 (LOCK, 4, None), (QUERY_INFO, 9, (8, 400)), (SET_INFO, 2, None), (IOCTL, 49, (0, 300)),
                 (TREE_CONNECT, 16, None), (SESSION_SETUP, 9, (0, 400)), (QUERY_DIRECTORY, 9, (100, 3000)),
                 (CHANGE_NOTIFY, 9, (0, 200)), (LOGOFF, 4, None), (TREE_DISCONNECT, 4, None))

    def other_rsp(self, *, big=False, cmd=None, next_cmd=0, related=False):
        r = self.rng
        if r.random() < 0.15 and not big:
            return self.error_rsp(cmd if cmd is not None else r.choice((CREATE, QUERY_INFO, IOCTL, QUERY_DIRECTORY)),
                                  r.choice(ERROR_STATUSES), next_cmd=next_cmd, related=related)
        if cmd is None:
            cmd, fixed, var = r.choice(self.RESPONSES)
        else:
            cmd, fixed, var = next(x for x in self.RESPONSES if x[0] == cmd)
        if big:
            cmd, fixed = r.choice(((QUERY_DIRECTORY, 9), (IOCTL, 49), (QUERY_INFO, 9), (CHANGE_NOTIFY, 9)))
            n = self.large()
        else:
            n = r.randint(*var) if var else 0
        body = struct.pack("<H", fixed) + r.randbytes(max(0, fixed - 2 - (fixed & 1))) + self.blob(n)
        return self.hdr(cmd, resp=True, next_cmd=next_cmd, flags=FLAG_RELATED if related else 0) + body

    # frames of either direction

    def compound(self, elems, kind, pad_last):
        """Chain messages: NextCommand to each next one, 8-byte aligned.

        @elems are (message, fields, marks) with offsets into the message.
        """
        out, fields, marks = b"", {}, []
        for i, (msg, f, m) in enumerate(elems):
            last = i == len(elems) - 1
            start = len(out)
            if not last or pad_last:
                msg = pad8(msg)
            if not last:
                msg = msg[:20] + struct.pack("<I", len(msg)) + msg[24:]
                fields[f"next{i}"] = (start + 20, "<I")
            fields[f"proto{i}"] = (start, "4s")
            for k, v in f.items():
                fields[f"{k}{i}"] = (start + v[0], v[1])
            marks += [start] + [start + x for x in m]
            out += msg
        return framed(kind, out, fields, marks)

    def transform(self, size):
        """Encryption transform: FD 'SMB', 52-byte header, ciphertext."""
        hdr = TRANSFORM + self.rng.randbytes(16) + self.rng.randbytes(11) + bytes(5) + struct.pack(
            "<IHHQ", size, 0, 1, self.session)
        return framed("encrypted", hdr + self.rng.randbytes(size), {"proto": (0, "4s")}, [52])

    def compressed(self, size):
        """Compression transform: FC 'SMB', unchained (16 bytes) or chained."""
        if self.rng.random() < 0.5:
            hdr = COMPRESS + struct.pack("<IHHI", size * 2, self.rng.choice((1, 2, 3)), 0, 0)
        else:
            hdr = COMPRESS + struct.pack("<IHHI", size * 2, 0, 1, 0)  # chained: payload headers follow
        return framed("compressed", hdr + self.blob(size), {"proto": (0, "4s")}, [len(hdr)])

    def smb1_negotiate(self):
        dialects = b"".join(b"\x02" + d + b"\0" for d in (b"NT LM 0.12", b"SMB 2.002", b"SMB 2.???"))
        hdr = SMB1 + struct.pack("<BIBHH8sHHHHH", 0x72, 0, 0x18, 0xc853, 0, bytes(8), 0, 0xffff,
                                 self.rng.getrandbits(16), 0, 0)
        return framed("smb1", hdr + b"\0" + struct.pack("<H", len(dialects)) + dialects, {"proto": (0, "4s")})

    def keepalive(self):
        return Frame("keepalive", prefix(0, 0x85), {"len": (0, "len24")})

    def negotiate_rsp(self):
        sec = self.rng.randbytes(self.rng.randint(40, 160))
        body = struct.pack("<HHHH16sIIIIQQHHI", 65, 1, 0x311, 2, self.rng.randbytes(16), 0x7f, 8 << 20, 8 << 20,
                           8 << 20, 0, 0, 128, len(sec), 0) + sec
        return framed("negotiate_rsp", self.hdr(NEGOTIATE, resp=True, msg_id=0, signature=None) + body)


def hello(seed):
    """The first frame to the server: a NEGOTIATE request whose ClientGuid
    names the stream pair. Always HELLO_LEN bytes."""
    body = struct.pack("<HHHHI8sQIHH5H", 36, 5, 1, 0, 0x7f, HELLO_MAGIC, seed, 0, 0, 0,
                       0x202, 0x210, 0x300, 0x302, 0x311)
    return framed("hello", smb2_header(NEGOTIATE, msg_id=0) + body)


HELLO_LEN = len(hello(0).buf)


def parse_hello(b):
    if len(b) != HELLO_LEN or b[4:8] != SMB2 or b[4 + 64 + 12:4 + 64 + 20] != HELLO_MAGIC:
        raise ValueError(f"not a smbgen hello: {bytes(b[:32]).hex()}")
    return struct.unpack_from("<Q", b, 4 + 64 + 20)[0]


# --- streams ----------------------------------------------------------------

class Profile:
    """Frames per stream (a range), a cap on a stream's bytes, and the odds
    of corruption and truncation, per stream."""

    def __init__(self, name, frames_min, frames_max, size_max, corrupt, truncate):
        self.name, self.frames_min, self.frames_max, self.size_max = name, frames_min, frames_max, size_max
        self.corrupt, self.truncate = corrupt, truncate


PROFILES = {
    "valid": Profile("valid", 60, 300, 2 << 20, 0.0, 0.3),
    "corrupt": Profile("corrupt", 60, 300, 2 << 20, 0.6, 0.3),
    "small": Profile("small", 5, 60, 512 << 10, 0.3, 0.3),
}

CORRUPTIONS = ("frame_len_slight", "frame_len_absurd", "data_offset_slight", "data_offset_absurd",
               "data_length_slight", "data_length_absurd", "next_slight", "next_absurd", "protocol_id",
               "struct_size", "garbage", "netbios_bad")


class Stream:
    """One direction's bytes, how they were made, and what they should do.

    @data: the bytes; @frames: the Frame list they were joined from;
    @marks: absolute offsets where the sender may cut a chunk;
    @corruption: what was done to it, or None; @truncated: the last frame
    is cut short; @expect: walk()'s verdict under the thresholds given.
    """

    def __init__(self, direction, frames, corruption, truncated, thresholds):
        self.direction = direction
        self.frames = frames
        self.corruption = corruption
        self.truncated = truncated
        self.data = b"".join(bytes(f.buf) for f in frames)
        self.marks, self.starts, off = [], [], 0
        for f in frames:
            self.starts.append(off)
            self.marks += [off + m for m in f.marks]
            off += len(f.buf)
        self.marks.sort()
        self.sha256 = hashlib.sha256(self.data).hexdigest()
        self.expect = walk(self.data, thresholds)
        # In smb mode a stream that ends in the middle of a message, still
        # framed, is a cut: smbsplice delivers every byte and passes the
        # FIN on, as TCP would, and counts it in
        # smbsplice_streams_ended_midframe_total. A truncated tail is one
        # way; a frame length past the end of the stream is another.
        self.cut = self.expect.opaque_at is None and self.expect.mid_message

    def frame_at(self, off):
        """Describe the frame holding byte @off, for failure reports."""
        i = max(0, bisect.bisect_right(self.starts, off) - 1)
        f = self.frames[i]
        return f"frame {i} ({f.kind}{' ' + f.note if f.note else ''}) at {self.starts[i]}, {len(f.buf)} bytes"

    def describe(self):
        kinds = collections.Counter(f.kind for f in self.frames)
        c = f", corrupted: {self.corruption}" if self.corruption else ""
        t = ", truncated tail" if self.truncated else ""
        o = (f", framer opaque at {self.expect.opaque_at} ({self.expect.why})" if self.expect.opaque_at is not None
             else ", framed to the end")
        return f"{self.direction} {len(self.data)} bytes, {len(self.frames)} frames{c}{t}{o}; " + ", ".join(
            f"{k}={v}" for k, v in sorted(kinds.items()))


C2S_KINDS = (("write_large", 8), ("write_small", 14), ("read_req", 14), ("other_req", 20), ("other_req_big", 2),
             ("compound_req", 8), ("smb1", 2), ("keepalive", 3), ("empty", 1), ("encrypted", 3), ("compressed", 1),
             ("session_request", 1), ("unknown_cmd", 1))
S2C_KINDS = (("read_large", 8), ("read_small", 14), ("read_88", 3), ("read_error", 6), ("interim", 5),
             ("other_rsp", 24), ("other_rsp_big", 2), ("compound_rsp", 8), ("oplock_break", 2), ("keepalive", 3),
             ("encrypted", 3), ("compressed", 1), ("negotiate_rsp", 1))


def make_frame(b, kind):
    """One frame (or, for "interim", the interim response) of @kind."""
    r = b.rng
    if kind == "write_large" or kind == "write_small":
        size = b.large() if kind == "write_large" else b.small()
        msg, f, m = b.write_req(size, gap=8 * r.choice((0, 0, 0, 0, 1, 2)))
        return framed(kind, msg, {**f, "proto": (0, "4s"), "hdr_ss": (4, "<H")}, m)
    if kind == "read_req":
        return framed(kind, b.read_req())
    if kind in ("other_req", "other_req_big"):
        return framed(kind, b.other_req(big=kind == "other_req_big"), {"proto": (0, "4s"), "hdr_ss": (4, "<H")}, [64])
    if kind == "unknown_cmd":
        msg = b.hdr(r.choice((19, 0x20, 0xffff))) + r.randbytes(r.choice((0, 4, 100)))
        return framed(kind, msg)
    if kind == "compound_req":
        shape = r.randrange(4)
        if shape == 0:
            mid = b.write_req(b.large() if r.random() < 0.6 else b.small(), related=True)
        elif shape == 1:
            mid = (b.other_req(cmd=QUERY_INFO, related=True), {}, [])
        elif shape == 2:
            mid = (b.read_req(related=True), {}, [])
        else:
            mid = (b.other_req(big=True, related=True), {}, [64])
        elems = [(b.other_req(cmd=CREATE), {}, [64]), mid, (b.other_req(cmd=CLOSE, related=True), {}, [])]
        return b.compound(elems, kind, pad_last=r.random() < 0.5)
    if kind == "smb1":
        return b.smb1_negotiate()
    if kind == "keepalive":
        return b.keepalive()
    if kind == "empty":
        return Frame(kind, prefix(0), {"len": (0, "len24")})
    if kind == "session_request":
        return Frame(kind, prefix(68, 0x81) + b"\x20" + r.randbytes(32) + b"\0\x20" + r.randbytes(32) + b"\0",
                     {"len": (0, "len24")}, [4, 72])
    if kind == "encrypted":
        return b.transform(b.large() if r.random() < 0.6 else b.small() + 64)
    if kind == "compressed":
        return b.compressed(b.large() if r.random() < 0.5 else b.small())
    if kind in ("read_large", "read_small", "read_88"):
        size = b.small() if kind == "read_small" else b.large()
        msg, f, m = b.read_rsp(size, off=88 if kind == "read_88" else 80)
        return framed(kind, msg, {**f, "proto": (0, "4s"), "hdr_ss": (4, "<H")}, m)
    if kind == "read_error":
        return framed(kind, b.error_rsp(READ, r.choice((STATUS_END_OF_FILE,) + ERROR_STATUSES)),
                      {"body_ss": (64, "<H")})
    if kind == "interim":
        async_id, msg_id = r.getrandbits(64), b.mid()
        size = b.large() if r.random() < 0.8 else b.small()
        b.pending.append((async_id, msg_id, size, r.randint(0, 4)))
        return framed(kind, b.error_rsp(READ, STATUS_PENDING, async_id=async_id, msg_id=msg_id))
    if kind in ("other_rsp", "other_rsp_big"):
        return framed(kind, b.other_rsp(big=kind == "other_rsp_big"), {"proto": (0, "4s"), "hdr_ss": (4, "<H")},
                      [64])
    if kind == "compound_rsp":
        shape = r.randrange(3)
        if shape == 0:
            mid = b.read_rsp(b.large() if r.random() < 0.6 else b.small(), related=True)
        elif shape == 1:
            mid = (b.error_rsp(READ, STATUS_END_OF_FILE, related=True), {}, [])
        else:
            mid = (b.other_rsp(big=r.random() < 0.5, related=True), {}, [64])
        elems = [(b.other_rsp(cmd=CREATE), {}, [64]), mid, (b.other_rsp(cmd=CLOSE, related=True), {}, [])]
        if r.random() < 0.3:
            elems = elems[1:2]  # the middle one alone, padded: a one-element "compound"
        return b.compound(elems, kind, pad_last=True)
    if kind == "oplock_break":
        body = struct.pack("<HBBI16s", 24, 1, 0, 0, r.randbytes(16))
        return framed(kind, b.hdr(OPLOCK_BREAK, resp=True, msg_id=(1 << 64) - 1, signature=None) + body)
    if kind == "negotiate_rsp":
        return b.negotiate_rsp()
    raise ValueError(kind)


def final_for(b, pending):
    """The final async READ response that follows an interim one."""
    async_id, msg_id, size, _ = pending
    msg, f, m = b.read_rsp(size, async_id=async_id, msg_id=msg_id)
    fr = framed("read_final", msg, {**f, "proto": (0, "4s"), "hdr_ss": (4, "<H")}, m)
    return fr


def corrupt(rng, frames, b):
    """Apply one corruption at a random frame after the first; return its
    description. Picks a kind that the chosen frame supports."""
    kind = rng.choice(CORRUPTIONS)
    need = {"frame_len_slight": "len", "frame_len_absurd": "len", "data_offset_slight": "data_offset",
            "data_offset_absurd": "data_offset", "data_length_slight": "data_length",
            "data_length_absurd": "data_length", "next_slight": "next", "next_absurd": "next",
            "protocol_id": "proto", "struct_size": "ss"}.get(kind)
    # Late in the stream, so that the framer has a long valid stretch first.
    idx = list(range(max(1, len(frames) // 4), len(frames)))
    rng.shuffle(idx)
    for i in idx:
        f = frames[i]
        names = [n for n in f.fields if need and (n == need or n.startswith(need) or (need == "ss" and "_ss" in n))]
        if need is None or names:
            break
    else:
        kind, i, names = "garbage", rng.randrange(max(1, len(frames) // 4), len(frames) + 1), []
    if kind == "garbage":
        junk = rng.choice((rng.randbytes(rng.randint(1, 200)), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                           b"\0\0", bytes(rng.randint(1, 8)), b"\x42" + rng.randbytes(3000)))
        frames.insert(i, Frame("garbage", junk))
        return f"garbage ({len(junk)} bytes) before frame {i}"
    if kind == "netbios_bad":
        bad = rng.choice((bytes([0x85, 0x02, 0, 0]), bytes([0x86, 0, 0, 0]), bytes([0x80, 0, 0, 4]) + bytes(4),
                          bytes([0x81, 0xff, 0, 0])))
        frames.insert(i, Frame("netbios_bad", bad))
        return f"bad NetBIOS header {bad[:4].hex()} before frame {i}"
    name = rng.choice(names)
    old = f.get(name) if not name.startswith("proto") else None
    if kind == "frame_len_slight":
        new = max(0, old + rng.choice((-8, -4, -1, 1, 2, 4, 8)))
    elif kind == "frame_len_absurd":
        new = rng.choice((0, 1, 3, 63, 0xffffff, 0x800000))
    elif kind == "data_offset_slight":
        new = old + rng.choice((-8, -1, 1, 8))
    elif kind == "data_offset_absurd":
        new = rng.choice((0, 64, 255) if f.fields[name][1] == "<B" else (0, 64, 0xffff))
    elif kind == "data_length_slight":
        new = max(0, old + rng.choice((-1, 1, 8)))
    elif kind == "data_length_absurd":
        new = rng.choice((1 << 31, (1 << 32) - 1, 1 << 24))
    elif kind == "next_slight":
        new = old + rng.choice((-8, 8, 1, -4))
    elif kind == "next_absurd":
        new = rng.choice((8, 0xfffffff8, 0x00fffff8))
    elif kind == "protocol_id":
        new = rng.choice((b"\xfeSMC", b"\xfbSMB", b"HTTP", b"\xfe\xfe\xfe\xfe", b"\0SMB"))
    else:  # struct_size
        new = rng.choice((0, 65, 48, 16, 0xffff))
    f.set(name, new)
    f.note = f"{name} {old if old is not None else ''}->{new}"
    return f"{kind}: frame {i} ({f.kind}) {name} {old if old is not None else ''} -> {new}"


def make_stream(seed, direction, profile, thresholds):
    """Build one direction's stream of the pair named by @seed."""
    rng = random.Random(seed * 2 + (direction == "to_client"))
    b = Builder(rng)
    nframes = rng.randint(profile.frames_min, profile.frames_max)
    kinds = C2S_KINDS if direction == "to_server" else S2C_KINDS
    names, weights = [k for k, _ in kinds], [w for _, w in kinds]
    frames = [hello(seed) if direction == "to_server" else b.negotiate_rsp()]
    total = len(frames[0].buf)
    while len(frames) < nframes and total < profile.size_max:
        f = make_frame(b, rng.choices(names, weights)[0])
        frames.append(f)
        total += len(f.buf)
        for p in list(b.pending):  # finals follow their interim a few frames later
            if p[3] == 0:
                b.pending.remove(p)
                frames.append(final_for(b, p))
                total += len(frames[-1].buf)
            else:
                b.pending[b.pending.index(p)] = p[:3] + (p[3] - 1,)
    for p in b.pending:
        frames.append(final_for(b, p))
    corruption = corrupt(rng, frames, b) if rng.random() < profile.corrupt else None
    truncated = rng.random() < profile.truncate
    if truncated:
        kind = rng.choice(("read_large", "compound_rsp", "encrypted") if direction == "to_client"
                          else ("write_large", "compound_req", "encrypted"))
        f = make_frame(b, kind)
        cut = rng.choice((rng.randint(1, 3), rng.randint(4, 84), rng.randint(1, len(f.buf) - 1)))
        f.buf = f.buf[:cut]
        f.marks = [m for m in f.marks if m < cut]
        f.note = f"cut at {cut}"
        frames.append(f)
    return Stream(direction, frames, corruption, truncated, thresholds)


class Pair:
    """The two streams of one connection, named by @seed."""

    def __init__(self, seed, profile="valid", thresholds=None):
        self.seed = seed
        self.profile = PROFILES[profile] if isinstance(profile, str) else profile
        self.thresholds = thresholds or THRESHOLDS_4K
        self.up = make_stream(seed, "to_server", self.profile, self.thresholds)
        self.down = make_stream(seed, "to_client", self.profile, self.thresholds)

    def opaque(self):
        """smbsplice counts a connection as one fallback if either
        direction went opaque."""
        return self.up.expect.opaque_at is not None or self.down.expect.opaque_at is not None

    def truncated(self):
        return self.up.truncated or self.down.truncated


THRESHOLDS_4K = {"read": 4096, "write": 4096, "other": 4096}
ARGS_4K = ["--read-threshold", "4K", "--write-threshold", "4K", "--other-threshold", "4K"]


# --- the reference framer ---------------------------------------------------

class Expect:
    """What smbsplice's framer does with one stream: counters and verdict.

    @counts keys: ("messages", command name), ("frames", kind),
    ("payloads", class, "splice"|"copy"), ("payload_bytes", class),
    ("interim",), ("read_errors",).
    """

    def __init__(self):
        self.counts = collections.Counter()
        self.opaque_at = None
        self.why = None
        self.mid_message = False  # the stream ended inside a frame

    def opaque(self, at, why):
        self.opaque_at, self.why = at, why
        return self

    def ended_inside(self):
        self.mid_message = True
        return self


def walk(data, thresholds):
    """Read @data as smb/framer.c does; return an Expect.

    @thresholds maps each class to its threshold in bytes, or None for
    off. A payload is spliced when it is at or above its threshold and at
    least 4 KiB. Counting points follow the framer: a message is counted
    once its 64-byte header is in, a payload once the bytes that locate it
    are in, payload bytes as they pass; a stream that ends early counts
    what came before its end.
    """
    e = Expect()
    c = e.counts
    n = len(data)

    def payload(start, length, cls):
        if not length:
            return
        th = thresholds.get(cls)
        splice = th is not None and length >= th and length >= SPLICE_MIN
        c[("payloads", cls, "splice" if splice else "copy")] += 1
        c[("payload_bytes", cls)] += max(0, min(start + length, n) - start)

    p = 0
    while p + 4 <= n:
        typ, b1 = data[p], data[p + 1]
        if typ == 0:
            flen = int.from_bytes(data[p + 1:p + 4], "big")
        elif 0x81 <= typ <= 0x85:
            if b1 & 0xfe:
                return e.opaque(p, "NetBIOS frame with reserved flag bits set")
            flen = (b1 & 1) << 16 | data[p + 2] << 8 | data[p + 3]
        else:
            return e.opaque(p, "not an SMB transport frame (bad type byte)")
        base = p + 4
        if typ:
            c[("frames", "netbios")] += 1
        if flen == 0:
            p = base
            continue
        if typ:
            p = base + flen
            continue
        if flen < 4:
            return e.opaque(p, "frame too short for a protocol id")
        es = 0
        while True:
            a = base + es
            room = flen - es
            if a + 4 > n:
                return e.ended_inside()
            magic = data[a:a + 4]
            ee = flen
            if magic == SMB2:
                if room < 64:
                    return e.opaque(a, "SMB2 header does not fit in its frame")
                if a + 64 > n:
                    return e.ended_inside()
                ss, = struct.unpack_from("<H", data, a + 4)
                cmd, = struct.unpack_from("<H", data, a + 12)
                flags, nxt = struct.unpack_from("<II", data, a + 16)
                status, = struct.unpack_from("<I", data, a + 8)
                if ss != 64:
                    return e.opaque(a, "SMB2 header StructureSize is not 64")
                if nxt:
                    if nxt < 64 or nxt % 8 or nxt >= room:
                        return e.opaque(a, "NextCommand outside its frame or misaligned")
                    ee = es + nxt
                elen = ee - es
                c[("messages", COMMAND_NAMES[min(cmd, 19)])] += 1
                resp = bool(flags & FLAG_RESPONSE)
                if cmd == READ and resp or cmd == WRITE and not resp:
                    want = 72
                elif cmd == NEGOTIATE and resp:
                    want = min(elen, 104)
                elif cmd == SESSION_SETUP and resp:
                    want = min(elen, 68)  # SessionFlags: a guest or null session is no login
                elif cmd == SESSION_SETUP:
                    want = min(elen, 184)  # fixed body, 96 bytes of security buffer: an anonymous login?
                elif cmd == IOCTL and resp:
                    want = min(elen, 72)
                elif cmd == TREE_CONNECT and not resp:
                    want = min(elen, 72)  # fixed body: the view reads the share's path
                else:
                    want = 64
                if want > elen:
                    return e.opaque(a, "SMB2 message shorter than its fixed body")
                if want > 64 and a + want > n:
                    return e.ended_inside()
                held = want
                if cmd == READ and resp:
                    bss, = struct.unpack_from("<H", data, a + 64)
                    if bss == 9:
                        if status == STATUS_PENDING and flags & FLAG_ASYNC:
                            c[("interim",)] += 1
                        else:
                            c[("read_errors",)] += 1
                        payload(a + held, elen - held, "other")
                    elif bss != 17:
                        return e.opaque(a, "READ response body StructureSize is neither 17 nor 9")
                    else:
                        off, length = data[a + 66], struct.unpack_from("<I", data, a + 68)[0]
                        if length and off < 80:
                            return e.opaque(a, "READ response DataOffset inside the header")
                        if length > elen or off > elen - length:
                            return e.opaque(a, "READ response data past the end of the message")
                        payload(a + off, length, "read")
                elif cmd == WRITE and not resp:
                    bss, off, length = struct.unpack_from("<HHI", data, a + 64)
                    if bss != 49:
                        return e.opaque(a, "WRITE request body StructureSize is not 49")
                    if length and off < 112:
                        return e.opaque(a, "WRITE request DataOffset inside the header")
                    if length > elen or off > elen - length:
                        return e.opaque(a, "WRITE request data past the end of the message")
                    payload(a + off, length, "write")
                else:
                    payload(a + held, elen - held, "other")
            elif es:
                return e.opaque(a, "compound element is not SMB2")
            elif magic == TRANSFORM:
                if room < 52:
                    return e.opaque(a, "encryption transform header does not fit in its frame")
                c[("frames", "encrypted")] += 1
                # The view reads the header's SessionId: the payload is
                # placed once all 52 bytes are in.
                if a + 52 > n:
                    return e.ended_inside()
                payload(a + 52, room - 52, "other")
            elif magic == COMPRESS:
                if room < 8:
                    return e.opaque(a, "compression transform header does not fit in its frame")
                c[("frames", "compressed")] += 1
                held = 4
                payload(a + 8, room - 8, "other")
            elif magic == SMB1:
                c[("frames", "smb1")] += 1
                held = 10 if room >= 10 else 4  # command, status, flags: for SESSION_SETUP_ANDX
                if a + held > n:
                    return e.ended_inside()
                if held == 10 and room >= 39 and data[a + 4] == 0x73 and data[a + 9] & 0x80 and \
                        struct.unpack_from("<I", data, a + 5)[0] == 0:
                    held = 39  # a successful SESSION_SETUP_ANDX reply, to its Action word
                    if a + held > n:
                        return e.ended_inside()
                payload(a + held, room - held, "other")
            else:
                return e.opaque(a, "unknown protocol id")
            end = base + ee
            if ee == flen:
                p = end
                break
            # The next element: the framer looks at it once the last byte
            # of this one has passed.
            if end > n:
                return e.ended_inside()
            if flen - ee < 64:
                return e.opaque(end, "NextCommand leaves no room for a header")
            es = ee
    e.mid_message = p != n
    return e


# --- traffic ----------------------------------------------------------------

class Pace:
    """How bumpy the traffic is: pause odds and lengths, in seconds, and
    the receive buffer and MSS of the test's sockets.

    smbsplice holds a pipe across wake-ups only while the socket it writes
    to is full. On loopback (64 KiB MSS) the kernel lets some 4 MiB queue
    per socket before that happens; with an Ethernet MSS and a small
    receive buffer, a few hundred KiB. So a pausing receiver pushes back on
    smbsplice soon, its pipe stays lent while its bytes wait, and with
    --max-pipes 4 the other directions find none and copy.
    """

    def __init__(self, send_pause=0.03, recv_pause=0.03, short=0.002, long_p=0.02, long=0.03, rcvbuf=32768,
                 mss=1460, first_stall=0.1):
        self.send_pause, self.recv_pause, self.short = send_pause, recv_pause, short
        self.long_p, self.long, self.rcvbuf, self.mss = long_p, long, rcvbuf, mss
        self.first_stall = first_stall  # each receiver waits up to this long before its first read


def _nodelay(s):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def make_server(holder, pace):
    """A harness.Server whose handler serves holder[0], the current Batch.
    Accepted sockets inherit the listener's receive buffer."""
    from harness import Server
    srv = Server(lambda c: holder[0].serve(c))
    _peer_opts(srv.sock, pace)
    return srv


def _peer_opts(s, pace):
    if pace.rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, pace.rcvbuf)
    if pace.mss:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, pace.mss)


def connect(px, pace, timeout=60):
    """A client socket to proxy @px, its receive buffer set before connect."""
    s = socket.socket(socket.AF_INET6 if ":" in px.host else socket.AF_INET, socket.SOCK_STREAM)
    _peer_opts(s, pace)
    s.settimeout(timeout)
    s.connect((px.host, px.port))
    return s


def send_stream(s, stream, rng, pace, skip=0):
    """Send @stream (from byte @skip) in random chunks, some cut at its
    marks, with random pauses; then shut the write side."""
    data, marks = memoryview(stream.data), stream.marks
    off = skip
    while off < len(data):
        r = rng.random()
        at_mark = False
        if r < 0.3:
            i = bisect.bisect_right(marks, off)
            if i < len(marks):
                n = max(1, marks[i] - off + rng.choice((0, 0, 0, 0, -1, 1, 2)))
                at_mark = True
            else:
                n = len(data) - off
        elif r < 0.4:
            n = rng.randint(1, 16)
        elif r < 0.55:
            n = rng.randint(17, 4200)
        else:
            n = int(2 ** rng.uniform(12, 18.5))
        n = min(n, len(data) - off)
        s.sendall(data[off:off + n])
        off += n
        if rng.random() < (pace.send_pause * (3 if at_mark else 1)):
            time.sleep(rng.uniform(0.0001, pace.short))
    s.shutdown(socket.SHUT_WR)


def recv_stream(s, rng, pace, into):
    """Receive to EOF in random sizes with random pauses, into @into."""
    time.sleep(rng.uniform(0, pace.first_stall))
    while True:
        r = rng.random()
        n = (rng.randint(1, 100) if r < 0.05 else rng.randint(100, 8192) if r < 0.3
             else rng.choice((65536, 262144, 1 << 20)))
        b = s.recv(n)
        if not b:
            return
        into += b
        p = rng.random()
        if p < pace.long_p:
            time.sleep(rng.uniform(pace.long / 3, pace.long))
        elif p < pace.long_p + pace.recv_pause:
            time.sleep(rng.uniform(0.0001, pace.short))


class Result:
    """What one connection's two receivers got."""

    def __init__(self, pair):
        self.pair = pair
        self.up = None    # bytes the server received
        self.down = None  # bytes the client received
        self.errors = []
        self.served = threading.Event()  # the server side is done

    def mismatches(self):
        """Per direction: None if exact, else a description."""
        out = {}
        for d, stream, got in (("to_server", self.pair.up, self.up), ("to_client", self.pair.down, self.down)):
            if got is None:
                out[d] = "nothing received"
                continue
            if len(got) == len(stream.data) and hashlib.sha256(got).hexdigest() == stream.sha256:
                out[d] = None
                continue
            first = first_difference(got, stream.data)
            out[d] = (f"{len(got)} of {len(stream.data)} bytes, first difference at {first}: "
                      f"{stream.frame_at(first) if first < len(stream.data) else 'past the end'}")
        return out


def first_difference(a, b):
    """Offset of the first byte where @a and @b differ, or the shorter
    one's length."""
    n, step = min(len(a), len(b)), 1 << 16
    for off in range(0, n, step):
        x, y = a[off:min(n, off + step)], b[off:min(n, off + step)]
        if x != y:
            return off + next(i for i, (p, q) in enumerate(zip(x, y)) if p != q)
    return n


class Batch:
    """Stream pairs shared between the test's clients and its server.

    Every stream, cut mid-message or not, ends in a clean end of file after
    its last byte, in both modes."""

    def __init__(self, pairs, pace):
        self.pairs = {p.seed: p for p in pairs}
        self.results = {p.seed: Result(p) for p in pairs}
        self.pace = pace
        self.stray = []

    def serve(self, c):
        """Server side of one connection: read the hello, then receive the
        rest while sending the pair's stream to the client."""
        _nodelay(c)
        hello_b = bytearray()
        while len(hello_b) < HELLO_LEN:
            b = c.recv(HELLO_LEN - len(hello_b))
            if not b:
                raise ConnectionError(f"EOF after {len(hello_b)} bytes of the hello")
            hello_b += b
        seed = parse_hello(hello_b)
        res = self.results[seed]
        pair = res.pair
        got = bytearray(hello_b)
        t = threading.Thread(target=self._recv, args=(c, random.Random(seed ^ 0x5eed), got, res), daemon=True)
        t.start()
        try:
            send_stream(c, pair.down, random.Random(seed ^ 0xd0), self.pace)
        except OSError as e:
            res.errors.append(f"server send: {e!r}")
        t.join()
        res.up = bytes(got)
        res.served.set()

    def _recv(self, c, rng, into, res):
        """Receive a stream to its end of file."""
        try:
            recv_stream(c, rng, self.pace, into)
        except OSError as e:
            res.errors.append(f"recv: {e!r}")

    def client(self, connect, seed):
        """Client side: connect, send, receive, both at once."""
        res = self.results[seed]
        try:
            c = connect()
        except OSError as e:
            res.errors.append(f"connect: {e!r}")
            return
        _nodelay(c)
        got = bytearray()
        t = threading.Thread(target=self._recv, args=(c, random.Random(seed ^ 0xc1), got, res), daemon=True)
        t.start()
        try:
            send_stream(c, res.pair.up, random.Random(seed ^ 0xc5), self.pace)
        except OSError as e:
            res.errors.append(f"client send: {e!r}")
        t.join()
        c.close()
        res.down = bytes(got)


def run_batch(px, srv_batch_holder, pairs, pace, timeout=120):
    """Run @pairs through proxy @px, all connections at once.

    @srv_batch_holder is a one-element list the server handler reads the
    current Batch from. Returns the Batch, with its results filled in,
    once both ends of every connection are done, or after @timeout.
    """
    batch = Batch(pairs, pace)
    srv_batch_holder[0] = batch
    threads = [threading.Thread(target=batch.client, args=(lambda: connect(px, pace, timeout), p.seed), daemon=True)
               for p in pairs]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.1, end - time.monotonic()))
    for r in batch.results.values():
        if r.down is None:
            r.errors.append(f"client still running after {timeout}s")
        if not r.served.wait(max(0.1, end - time.monotonic())):
            r.errors.append(f"server side still running after {timeout}s")
    return batch


def wait_idle(scrape, stats_port, total, timeout=30):
    """Poll /metrics until @total connections were accepted and none is
    open; return the last scrape."""
    from harness import metric
    end = time.monotonic() + timeout
    while True:
        m = scrape(stats_port)
        if metric(m, "smbsplice_connections_total") >= total and metric(m, "smbsplice_connections_active") == 0:
            return m
        if time.monotonic() > end:
            return m
        time.sleep(0.05)


# --- expected counters against /metrics ----------------------------------------

class Totals:
    """Expected counters over many connections, per direction."""

    def __init__(self):
        self.dir = {d: collections.Counter() for d in DIRECTIONS}
        self.bytes = collections.Counter()
        self.midframe = collections.Counter()  # streams cut mid-message
        self.conns = 0
        self.opaque = 0

    def add(self, pair):
        self.conns += 1
        self.opaque += pair.opaque()
        for d, s in (("to_server", pair.up), ("to_client", pair.down)):
            self.dir[d].update(s.expect.counts)
            self.bytes[d] += len(s.data)
            self.midframe[d] += s.cut


def compare_metrics(m, tot):
    """Compare a scrape with expected totals; return [(ok, text)]."""
    from harness import metric
    out = []

    def eq(what, got, want):
        out.append((got == want, f"{what}: {got:.0f} (expected {want})"))

    for d in DIRECTIONS:
        e = tot.dir[d]
        eq(f"{d} bytes delivered", sum(metric(m, "smbsplice_bytes_total", direction=d, path=p)
                                       for p in ("splice", "copy")), tot.bytes[d])
        for cmd in COMMAND_NAMES:
            got = metric(m, "smbsplice_messages_total", direction=d, command=cmd)
            if got or e[("messages", cmd)]:
                eq(f"{d} {cmd} messages", got, e[("messages", cmd)])
        for kind in ("encrypted", "compressed", "smb1"):
            eq(f"{d} {kind} frames", metric(m, "smbsplice_frames_total", direction=d, kind=kind), e[("frames", kind)])
        eq(f"{d} netbios frames", metric(m, "smbsplice_frames_total", direction=d, kind="netbios"),
           e[("frames", "netbios")])
        for cls in CLASSES:
            for dec in ("splice", "copy"):
                eq(f"{d} {cls} payloads, {dec} decision",
                   metric(m, "smbsplice_payloads_total", direction=d, **{"class": cls}, decision=dec),
                   e[("payloads", cls, dec)])
            eq(f"{d} {cls} payload bytes", sum(metric(m, "smbsplice_payload_bytes_total", direction=d,
                                                      **{"class": cls}, path=p) for p in ("splice", "copy")),
               e[("payload_bytes", cls)])
        eq(f"{d} interim READ responses", metric(m, "smbsplice_read_interim_total", direction=d), e[("interim",)])
        eq(f"{d} READ error bodies", metric(m, "smbsplice_read_errors_total", direction=d), e[("read_errors",)])
        eq(f"{d} streams ended mid-message", metric(m, "smbsplice_streams_ended_midframe_total", direction=d),
           tot.midframe[d])
    eq("opaque fallbacks", metric(m, "smbsplice_opaque_fallbacks_total"), tot.opaque)
    eq("connections", metric(m, "smbsplice_connections_total"), tot.conns)
    return out


# --- soak -------------------------------------------------------------------

SOAK_CONFIGS = (
    ("4K thresholds, 4 pipes", ARGS_4K + ["--max-pipes", "4"]),
    ("4K thresholds, 4 pipes of 8K", ARGS_4K + ["--max-pipes", "4", "--pipe-size", "8K"]),
    ("4K thresholds, 2 pipes, 4K buffer", ARGS_4K + ["--max-pipes", "2", "--buffer-size", "4K"]),
    ("4K thresholds, 1 pipe of 4K, 1K buffer", ARGS_4K + ["--max-pipes", "1", "--pipe-size", "4K",
                                                           "--buffer-size", "1K"]),
)

# Round by round the soak picks one of these.
PACES = {
    "smooth": lambda: Pace(send_pause=0.005, recv_pause=0.005, long_p=0.0, first_stall=0.0),
    "bumpy": Pace,
    "stalling": lambda: Pace(send_pause=0.1, recv_pause=0.1, long_p=0.05, long=0.05),
}


def thresholds_of(argv):
    """The class thresholds an smbsplice command line sets (default 1M,
    and off for "other"), for the reference framer."""
    th = {"read": 1 << 20, "write": 1 << 20, "other": None}
    units = {"K": 1 << 10, "M": 1 << 20}
    for i, a in enumerate(argv[:-1]):
        for cls in CLASSES:
            if a == f"--{cls}-threshold":
                v = argv[i + 1]
                th[cls] = None if v == "off" else int(v[:-1]) * units[v[-1]] if v[-1] in units else int(v)
    return th


def soak(args):
    import harness
    from harness import Proxy, metric, scrape
    harness.SMBSPLICE = os.path.abspath(args.smbsplice)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    print(f"smbgen soak: {args.seconds} s, seed {seed}, {args.conns} connections per round, "
          f"smbsplice {harness.SMBSPLICE}", flush=True)
    holder = [None]
    srv = make_server(holder, Pace())
    setups = []
    configs = [(c, c.split()) for c in args.config] if args.config else SOAK_CONFIGS
    for label, a in configs:
        setups.append((label, a, Proxy(srv.addr, *a, stats=True), Totals()))
    streams = conns = rounds = 0
    compared = collections.Counter()
    mismatches = collections.Counter()
    failures = []
    coverage = []
    start = last_report = time.monotonic()
    next_seed = seed << 20
    try:
        while time.monotonic() - start < args.seconds:
            label, a, px, tot = setups[rounds % len(setups)]
            if px.proc.poll() is not None:
                failures.append(f"{label}: smbsplice exited with {px.proc.returncode}")
                break
            profile = rng.choice(("valid", "corrupt", "corrupt", "small"))
            pairs = []
            for _ in range(args.conns):
                next_seed += 1
                pairs.append(Pair(next_seed, profile, thresholds_of(a)))
            pace_name = rng.choice(sorted(PACES))
            pace = PACES[pace_name]()
            batch = run_batch(px, holder, pairs, pace, timeout=args.timeout)
            srv.threads = [t for t in srv.threads if t.is_alive()]
            rounds += 1
            for p in pairs:
                res = batch.results[p.seed]
                conns += 1
                streams += 2
                tot.add(p)
                what = f"seed {p.seed} profile {profile} pace {pace_name}"
                if res.errors:
                    failures.append(f"{label}: {what}: {'; '.join(res.errors)}")
                for d, why in res.mismatches().items():
                    stream = p.up if d == "to_server" else p.down
                    got = res.up if d == "to_server" else res.down
                    compared[d] += len(got or b"")
                    if why:
                        mismatches[d] += 1
                        failures.append(f"{label} ({' '.join(a)}): {what} {d} MISMATCH: {why}; "
                                        f"stream: {stream.describe()}")
            for e in srv.errors:
                failures.append(f"{label}: server: {e!r}")
            srv.errors.clear()
            if failures and args.stop_on_failure:
                break
            if time.monotonic() - last_report >= 60:
                last_report = time.monotonic()
                print(f"  {time.monotonic() - start:.0f} s: {streams} streams, {sum(compared.values())} bytes "
                      f"compared, {sum(mismatches.values())} mismatches", flush=True)
        for label, a, px, tot in setups:
            if px.proc.poll() is not None:
                continue
            m = wait_idle(scrape, px.stats_port, tot.conns)
            for ok, what in compare_metrics(m, tot):
                if not ok:
                    failures.append(f"{label}: counter {what}")
            sp = {c: sum(metric(m, "smbsplice_payload_bytes_total", direction=d, **{"class": c}, path="splice")
                         for d in DIRECTIONS) for c in CLASSES}
            coverage.append(f"  {label}: payload bytes spliced: read {sp['read']:.0f}, write {sp['write']:.0f}, "
                            f"other {sp['other']:.0f}; pipes denied {metric(m, 'smbsplice_pipe_denied_total'):.0f}; "
                            f"opaque fallbacks {metric(m, 'smbsplice_opaque_fallbacks_total'):.0f}")
    finally:
        exits = []
        for label, a, px, tot in setups:
            px.stop()
            log = px.log()
            san = [l for l in log.splitlines() if "AddressSanitizer" in l or "runtime error:" in l
                   or "LeakSanitizer" in l]
            exits.append((label, px.proc.returncode, len(san)))
            if px.proc.returncode != 0:
                failures.append(f"{label}: smbsplice exit status {px.proc.returncode} after SIGTERM")
            if san:
                failures.append(f"{label}: {len(san)} sanitizer lines in {px.logf.name}, first: {san[0]}")
        srv.close()
    dur = time.monotonic() - start
    print(f"ran {dur:.1f} s: {rounds} rounds, {conns} connections, {streams} streams")
    for label, a, px, tot in setups:
        print(f"  {label}: {tot.conns} connections, {tot.opaque} expected to fall back to opaque")
    for line in coverage:
        print(line)
    print(f"bytes compared: to_server {compared['to_server']}, to_client {compared['to_client']}")
    print(f"mismatches: {sum(mismatches.values())} (to_server {mismatches['to_server']}, "
          f"to_client {mismatches['to_client']})")
    print(f"other failures (transfer errors, hangs, counter differences, exits, sanitizer reports): "
          f"{len(failures) - sum(mismatches.values())}")
    print("smbsplice exits: " + ", ".join(f"{l}: {rc}" + (f" ({s} sanitizer lines)" if s else "")
                                          for l, rc, s in exits))
    for f in failures[:30]:
        print(f"FAIL: {f}")
    if len(failures) > 30:
        print(f"... and {len(failures) - 30} more")
    return 1 if failures else 0


def dump(args):
    p = Pair(args.dump, args.profile)
    os.makedirs(args.out, exist_ok=True)
    for s in (p.up, p.down):
        with open(os.path.join(args.out, f"{s.direction}.bin"), "wb") as f:
            f.write(s.data)
        with open(os.path.join(args.out, f"{s.direction}.txt"), "w") as f:
            f.write(s.describe() + "\n")
            for i, (fr, off) in enumerate(zip(s.frames, s.starts)):
                f.write(f"{i}\t{off}\t{len(fr.buf)}\t{fr.kind}\t{fr.note}\n")
        print(s.describe())
    return 0


def main():
    ap = argparse.ArgumentParser(description="Synthetic SMB streams through smbsplice (see the module docstring).")
    ap.add_argument("--smbsplice", help="the smbsplice binary to soak")
    ap.add_argument("--seconds", type=float, default=60, help="how long the soak runs")
    ap.add_argument("--seed", type=int, help="seed of the soak's choices and streams (default: random, printed)")
    ap.add_argument("--conns", type=int, default=6, help="connections per round")
    ap.add_argument("--timeout", type=float, default=120, help="seconds a round may take before it counts as a hang")
    ap.add_argument("--stop-on-failure", action="store_true", help="end the soak after the first failing round")
    ap.add_argument("--config", action="append", metavar="ARGS",
                    help="smbsplice options of one configuration, e.g. --config='--read-threshold 4K --max-pipes 2'"
                         "; repeat for more (default: four with 4K thresholds and few pipes)")
    ap.add_argument("--dump", type=int, metavar="SEED", help="write one stream pair to --out and exit")
    ap.add_argument("--profile", default="corrupt", choices=sorted(PROFILES))
    ap.add_argument("--out", default="smbgen-dump")
    args = ap.parse_args()
    if args.dump is not None:
        return dump(args)
    if not args.smbsplice:
        ap.error("--smbsplice PATH is required for a soak")
    return soak(args)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
