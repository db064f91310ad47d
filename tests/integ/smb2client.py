"""A minimal SMB2 client in the standard library, for tests that need what
smbclient cannot do: one session that keeps a file handle open for as
long as the test likes and reads and writes through it when it likes
(test_handover.py holds one across a live handover).

Dialect 2.1 (2.0.2 offered too), NTLMv2 login (raw NTLMSSP in the
SESSION_SETUP buffer, which Samba's SPNEGO accepts), no signing (a
server that requires it is refused with a clear error), one request in
flight at a time, at most 64 KiB per READ or WRITE. MD4, which the NT
hash needs and OpenSSL 3 no longer gives hashlib, is written out here."""
import hashlib
import hmac
import os
import socket
import struct
import time

NEGOTIATE, SESSION_SETUP, LOGOFF, TREE_CONNECT, CREATE, CLOSE, READ, WRITE = 0, 1, 2, 3, 5, 6, 8, 9
STATUS_SUCCESS, STATUS_PENDING, STATUS_MORE_PROCESSING = 0, 0x103, 0xC0000016
HDR = struct.Struct("<4sHHIHHIIQIIQ16s")
CHUNK = 65536


def md4(data):
    """RFC 1320 MD4 of @data."""
    def rol(x, n):
        x &= 0xFFFFFFFF
        return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF

    msg = bytearray(data) + b"\x80"
    msg += bytes((56 - len(msg) % 64) % 64) + struct.pack("<Q", len(data) * 8)
    a, b, c, d = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476
    for off in range(0, len(msg), 64):
        x = struct.unpack("<16I", msg[off:off + 64])
        aa, bb, cc, dd = a, b, c, d
        for i in range(16):
            k, s = i, (3, 7, 11, 19)[i % 4]
            f = (b & c) | (~b & d)
            a, b, c, d = d, rol(a + f + x[k], s), b, c
        for i in range(16):
            k, s = (i % 4) * 4 + i // 4, (3, 5, 9, 13)[i % 4]
            g = (b & c) | (b & d) | (c & d)
            a, b, c, d = d, rol(a + g + x[k] + 0x5A827999, s), b, c
        for i in range(16):
            k = (0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15)[i]
            s = (3, 9, 11, 15)[i % 4]
            h = b ^ c ^ d
            a, b, c, d = d, rol(a + h + x[k] + 0x6ED9EBA1, s), b, c
        a, b, c, d = [(v + w) & 0xFFFFFFFF for v, w in zip((a, b, c, d), (aa, bb, cc, dd))]
    return struct.pack("<4I", a, b, c, d)


class SmbError(Exception):
    pass


class Smb2Client:
    def __init__(self, host, port, timeout=60, source=None):
        """source: the address to connect from (any port), if not the
        kernel's choice."""
        self.sock = socket.create_connection((host, port), timeout=timeout,
                                             source_address=(source, 0) if source else None)
        self.msg_id = 0
        self.session = 0
        self.tree = 0
        self.negotiate()

    def _send(self, cmd, body):
        hdr = HDR.pack(b"\xfeSMB", 64, 1, 0, cmd, 32, 0, 0, self.msg_id, 0, self.tree, self.session, bytes(16))
        self.msg_id += 1
        msg = hdr + body
        self.sock.sendall(struct.pack(">I", len(msg)) + msg)

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            b = self.sock.recv(n - len(buf))
            if not b:
                raise SmbError(f"connection closed after {len(buf)} of {n} bytes")
            buf += b
        return bytes(buf)

    def _recv(self):
        while True:
            n = struct.unpack(">I", self._recv_exact(4))[0] & 0xFFFFFF
            msg = self._recv_exact(n)
            h = HDR.unpack_from(msg)
            if h[3] == STATUS_PENDING and h[6] & 2:  # an interim async response
                continue
            return h, msg

    def call(self, cmd, body, ok=(STATUS_SUCCESS,)):
        """Send one request; return (header fields, whole message) of its
        response, whose status must be one of @ok."""
        self._send(cmd, body)
        h, msg = self._recv()
        if h[3] not in ok:
            raise SmbError(f"command {cmd}: status 0x{h[3]:08x}")
        return h, msg

    def negotiate(self):
        dialects = (0x0202, 0x0210)
        body = struct.pack("<HHHHI16sQ", 36, len(dialects), 1, 0, 0, os.urandom(16), 0)
        body += struct.pack(f"<{len(dialects)}H", *dialects)
        h, msg = self.call(NEGOTIATE, body)
        mode, self.dialect = struct.unpack_from("<HH", msg, 64 + 2)
        if mode & 2:
            raise SmbError("the server requires signing, which this client does not do")

    def _setup(self, blob):
        body = struct.pack("<HBBIIHHQ", 25, 0, 1, 0, 0, 64 + 24, len(blob), 0) + blob
        return self.call(SESSION_SETUP, body, ok=(STATUS_SUCCESS, STATUS_MORE_PROCESSING))

    def login(self, user, password):
        """NTLMv2 login as @user (the domain is the server's own name, the
        local account database of a standalone Samba)."""
        flags = 0x1 | 0x4 | 0x200 | 0x8000 | 0x80000 | 0x800000 | 0x20000000 | 0x80000000
        h, msg = self._setup(b"NTLMSSP\0" + struct.pack("<II8s8s", 1, flags, bytes(8), bytes(8)))
        if h[3] != STATUS_MORE_PROCESSING:
            raise SmbError("no NTLMSSP challenge")
        self.session = h[11]
        off, length = struct.unpack_from("<HH", msg, 64 + 4)
        chal = msg[off:off + length]
        tlen, _, toff = struct.unpack_from("<HHI", chal, 12)
        domain = chal[toff:toff + tlen]
        server_challenge = chal[24:32]
        ilen, _, ioff = struct.unpack_from("<HHI", chal, 40)
        info = chal[ioff:ioff + ilen]
        nt_hash = md4(password.encode("utf-16-le"))
        key = hmac.new(nt_hash, user.upper().encode("utf-16-le") + domain, hashlib.md5).digest()
        stamp = int((time.time() + 11644473600) * 10_000_000)
        blob = b"\x01\x01" + bytes(6) + struct.pack("<Q", stamp) + os.urandom(8) + bytes(4) + info + bytes(4)
        nt = hmac.new(key, server_challenge + blob, hashlib.md5).digest() + blob
        fields = [bytes(24), nt, domain, user.encode("utf-16-le"), b"", b""]
        head, payload, pos = b"", b"", 64
        for f in fields:
            head += struct.pack("<HHI", len(f), len(f), pos + len(payload))
            payload += f
        auth = b"NTLMSSP\0" + struct.pack("<I", 3) + head + struct.pack("<I", flags & ~0x800000) + payload
        h, _ = self._setup(auth)
        if h[3] != STATUS_SUCCESS:
            raise SmbError(f"login: status 0x{h[3]:08x}")

    def tree_connect(self, unc):
        path = unc.encode("utf-16-le")
        h, _ = self.call(TREE_CONNECT, struct.pack("<HHHH", 9, 0, 64 + 8, len(path)) + path)
        self.tree = h[10]

    def create(self, name):
        """Open @name read-write, created or emptied; return its FileId."""
        n = name.encode("utf-16-le")
        body = struct.pack("<HBBIQQIIIIIHHII", 57, 0, 0, 2, 0, 0, 0x0012019F, 0x80, 7, 5, 0x40,
                           64 + 56, len(n), 0, 0) + n
        _, msg = self.call(CREATE, body)
        return msg[64 + 64:64 + 80]

    def write(self, fid, offset, data):
        for i in range(0, len(data), CHUNK):
            part = data[i:i + CHUNK]
            body = struct.pack("<HHIQ16sIIHHI", 49, 64 + 48, len(part), offset + i, fid, 0, 0, 0, 0, 0) + part
            _, msg = self.call(WRITE, body)
            if struct.unpack_from("<I", msg, 64 + 4)[0] != len(part):
                raise SmbError("short write")

    def read(self, fid, offset, length):
        out = bytearray()
        while len(out) < length:
            n = min(CHUNK, length - len(out))
            body = struct.pack("<HBBIQ16sIIIHH", 49, 0x50, 0, n, offset + len(out), fid, 0, 0, 0, 0, 0) + b"\0"
            _, msg = self.call(READ, body)
            doff, _, dlen = struct.unpack_from("<BBI", msg, 64 + 2)
            if not dlen:
                raise SmbError("read: no data")
            out += msg[doff:doff + dlen]
        return bytes(out)

    def close(self, fid):
        self.call(CLOSE, struct.pack("<HHI16s", 24, 0, 0, fid))

    def logoff(self):
        self.call(LOGOFF, struct.pack("<HH", 4, 0))
