"""QUIC v1 Initial packets by hand, for tests that record, open, change
and seal them again: tests/integ/test_quic_hostile.py and
tests/fuzz/capture_quic_seeds.py.

An Initial's keys are public (RFC 9001 5.2): they come from the client's
first Destination Connection ID alone, so a test can read the ClientHello
a real client sent and forge one of its own. Standard library and
python3-cryptography only; this module imports without it (the crypto is
imported where it is used), and have_crypto() says whether it is there,
so that a caller can do less and say so instead of failing.
"""
import struct

INITIAL_SALT_V1 = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")


def have_crypto():
    """Whether python3-cryptography can be imported (the keys need it)."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return False
    return True


def varint(b, at):
    """A QUIC variable-length integer at b[at]: its value and the next offset."""
    w = 1 << (b[at] >> 6)
    return int.from_bytes(bytes([b[at] & 0x3f]) + b[at + 1:at + w], "big"), at + w


def initial_keys(dcid, label):
    """RFC 9001 5.2: key, IV and header protection key of the Initials of
    one side (label b"client in" or b"server in") for a client's DCID:
    HKDF-Extract with the v1 salt, then HKDF-Expand-Label (one block of
    SHA-256 is enough for each)."""
    from cryptography.hazmat.primitives import hashes, hmac

    def mac(key, data):
        h = hmac.HMAC(key, hashes.SHA256())
        h.update(data)
        return h.finalize()

    def expand(secret, lab, n):
        lab = b"tls13 " + lab
        return mac(secret, struct.pack(">HB", n, len(lab)) + lab + b"\0\1")[:n]

    sec = expand(mac(INITIAL_SALT_V1, dcid), label, 32)
    return expand(sec, b"quic key", 16), expand(sec, b"quic iv", 12), expand(sec, b"quic hp", 16)


def hp_mask(hp, sample):
    """The header protection mask (AES-ECB of the 16-byte sample)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    e = Cipher(algorithms.AES(hp), modes.ECB()).encryptor()
    return e.update(sample) + e.finalize()


def open_initial(pkt, dcid, label):
    """A long-header Initial's DCID, SCID, token, packet number and frames
    (decrypted, padding and all) with the Initial keys of dcid (the
    client's first DCID) for label's side."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    k, iv, hp = initial_keys(dcid, label)
    at = 6 + pkt[5]
    scid = pkt[at + 1:at + 1 + pkt[at]]
    at += 1 + pkt[at]
    n, at = varint(pkt, at)
    token = pkt[at:at + n]
    length, at = varint(pkt, at + n)
    mask = hp_mask(hp, pkt[at + 4:at + 20])
    first = pkt[0] ^ (mask[0] & 0x0f)
    pnlen = (first & 3) + 1
    pn = bytes(a ^ b for a, b in zip(pkt[at:at + pnlen], mask[1:]))
    nonce = iv[:12 - pnlen] + bytes(a ^ b for a, b in zip(iv[12 - pnlen:], pn))
    frames = AESGCM(k).decrypt(nonce, pkt[at + pnlen:at + length], bytes([first]) + pkt[1:at] + pn)
    return pkt[6:6 + pkt[5]], scid, token, int.from_bytes(pn, "big"), frames


def seal_initial(dcid, scid, frames, pn=0):
    """A client Initial of QUIC v1 carrying frames, padded to 1200 bytes."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    k, iv, hp = initial_keys(dcid, b"client in")
    head = bytes([0xc3]) + b"\0\0\0\1" + bytes([len(dcid)]) + dcid + bytes([len(scid)]) + scid + b"\0"
    plen = 1200 - len(head) - 2 - 4 - 16
    frames = frames + bytes(plen - len(frames))
    head += struct.pack(">H", 0x4000 | (plen + 4 + 16)) + struct.pack(">I", pn)
    nonce = iv[:8] + bytes(a ^ b for a, b in zip(iv[8:], struct.pack(">I", pn)))
    body = AESGCM(k).encrypt(nonce, frames, head)
    mask = hp_mask(hp, body[:16])
    head = bytearray(head)
    head[0] ^= mask[0] & 0x0f
    for i in range(4):
        head[-4 + i] ^= mask[1 + i]
    return bytes(head) + body


def rename_transport_params(ch):
    """The ClientHello ch (its handshake message, header and all) with its
    quic_transport_parameters extension (57) renamed to an unknown one
    (56), so that it reads as if it had none; None if it has none."""
    ch = bytearray(ch)
    q = 4 + 2 + 32
    q += 1 + ch[q]
    q += 2 + struct.unpack(">H", ch[q:q + 2])[0]
    q += 1 + ch[q]
    end = q + 2 + struct.unpack(">H", ch[q:q + 2])[0]
    q += 2
    while q + 4 <= end:
        et, el = struct.unpack(">HH", ch[q:q + 4])
        if et == 57:
            ch[q:q + 2] = struct.pack(">H", 56)
            return bytes(ch)
        q += 4 + el
    return None
