"""The independent SMB-over-QUIC tools of tests/quic (README.md there),
against a real smbd: smbqc (quic-go and go-smb2, stacks other than
smbsplice's) through `quicrelay server` puts and gets 0 B, 1 MiB and
64 MiB byte-exact, signed and sealed, many files, 4 sessions at once, and
a get whose client changes UDP port mid-transfer; a wrong ALPN, an
unknown CA, a wrong password and a missing client certificate each end
with their own exit code and line; and smbclient gets and puts through
the relay pair (`quicrelay client` -> `quicrelay server` -> smbd). This
proves the client the QUIC listener's tests use and the benchmark's
quic-go contestant. Certificates as Windows wants them: ECDSA P-256, a
DNS SAN, the Server Authentication EKU."""
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import threading

from harness import (CLEANUPS, Samba, TMPDIR, TestFailure, check, end_process, file_sha256, free_port, need,
                     random_file, run, sh, wait_for)

BIN = os.environ.get("QUIC_BIN", os.path.join(os.environ.get("BUILDDIR", os.getcwd()), "tests", "quic", "bin"))
GOCODE = "/usr/share/gocode/src/github.com"
GO_PACKAGES = {"lucas-clemente/quic-go": "golang-github-lucas-clemente-quic-go-dev",
               "hirochachacha/go-smb2": "golang-github-hirochachacha-go-smb2-dev"}
NAME = "smb.test"
EXIT_QUIC, EXIT_SMB, EXIT_IO, EXIT_VERIFY = 2, 3, 4, 5


def tools():
    """The two binaries; skip with a clear line where Go or its packages
    are missing, fail where they are there and the tools were not built."""
    smbqc, relay = os.path.join(BIN, "smbqc"), os.path.join(BIN, "quicrelay")
    if os.access(smbqc, os.X_OK) and os.access(relay, os.X_OK):
        return smbqc, relay
    if os.environ.get("GO") == "no":
        print("SKIP: configure found no go, or was given GO=no: the QUIC test tools are not built", flush=True)
        sys.exit(77)
    need("go", "golang-go")
    for path, pkg in GO_PACKAGES.items():
        if not os.path.isdir(os.path.join(GOCODE, path)):
            print(f"SKIP: {GOCODE}/{path} not found: install the Debian package {pkg}", flush=True)
            sys.exit(77)
    raise TestFailure(f"go and its packages are installed but {smbqc} or {relay} is not built (make)")


def openssl(*args):
    sh("openssl", *args)


def make_certs(d):
    """A CA, a server certificate for NAME as Windows demands it, a client
    certificate (Client Authentication EKU) and a second, unrelated CA."""
    def key(name):
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{d}/{name}.key")

    def ca(name):
        key(name)
        openssl("req", "-x509", "-new", "-key", f"{d}/{name}.key", "-out", f"{d}/{name}.pem", "-days", "2",
                "-sha256", "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def leaf(name, cn, ext):
        key(name)
        openssl("req", "-new", "-key", f"{d}/{name}.key", "-out", f"{d}/{name}.csr", "-subj", f"/CN={cn}")
        with open(f"{d}/{name}.ext", "w") as f:
            f.write(ext)
        openssl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
                "-CAcreateserial", "-out", f"{d}/{name}.pem", "-days", "2", "-sha256", "-extfile", f"{d}/{name}.ext")

    ca("ca")
    ca("otherca")
    leaf("srv", NAME, f"subjectAltName=DNS:{NAME}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n")
    leaf("cli", "client1", "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n")
    text = sh("openssl", "x509", "-in", f"{d}/srv.pem", "-noout", "-text").stdout
    check("prime256v1" in text and f"DNS:{NAME}" in text and "TLS Web Server Authentication" in text,
          "server certificate: ECDSA P-256, DNS SAN, serverAuth EKU")


class Relay:
    """A quicrelay process; its standard error goes to a log in TMPDIR."""

    def __init__(self, relay, mode, *args, ready):
        self.log = os.path.join(TMPDIR, f"quicrelay-{mode}-{id(self):x}.log")
        self.f = open(self.log, "w")
        self.p = subprocess.Popen([relay, mode, *args], stdout=self.f, stderr=subprocess.STDOUT)
        CLEANUPS.append(self.stop)
        wait_for(f"quicrelay {mode} ready", lambda: ready in self.text() or self.p.poll() is not None)
        if self.p.poll() is not None:
            raise TestFailure(f"quicrelay {mode} exited: {self.text()}")

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        end_process(self.p)
        self.f.close()


def echo_server():
    """A TCP echo server on loopback (FIN answered with FIN): its port."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen()

    def serve(c):
        while (b := c.recv(1 << 16)):
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
        c.close()

    def accept():
        while True:
            c, _ = ls.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return ls.getsockname()[1]


class Client:
    """smbqc with the flags every run shares."""

    def __init__(self, smbqc, port, certs, password):
        self.base = [smbqc, "-addr", f"127.0.0.1:{port}", "-name", NAME, "-ca", f"{certs}/ca.pem",
                     "-user", "root", "-pass", password, "-timeout", "10s"]

    def __call__(self, *args, code=0, stdin=None, timeout=60):
        """Run smbqc; check its exit code; return (stdout, stderr)."""
        argv = self.base + list(args)
        r = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=stdin)
        out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
        if r.returncode != code:
            raise TestFailure(f"{' '.join(argv[len(self.base):])}: exit {r.returncode}, want {code}:\n{out}{err}")
        return out, err


def sum_of(out, op, path):
    """The (bytes, sha256) smbqc printed for `op path`."""
    m = re.search(rf"^{op} {re.escape(path)} bytes=(\d+) sha256=([0-9a-f]{{64}})$", out, re.M)
    if not m:
        raise TestFailure(f"no '{op} {path}' line in: {out}")
    return int(m.group(1)), m.group(2)


def frames(out):
    m = re.search(r"^session frames plain=(\d+) signed=(\d+) encrypted=(\d+)", out, re.M)
    if not m:
        raise TestFailure(f"no session frames line in: {out}")
    return tuple(int(x) for x in m.groups())


def transfers(q, smb, sizes):
    """put and get of each size, byte-exact on the share and on the wire."""
    for mib in sizes:
        local = os.path.join(smb.dir, f"local-{mib}.bin")
        if mib:
            want = random_file(local, mib)
        else:
            open(local, "wb").close()
            want = hashlib.sha256(b"").hexdigest()
        name = f"f{mib}.bin"
        out, _ = q("put", local, name)
        check(sum_of(out, "put", name) == (mib << 20, want) and
              file_sha256(os.path.join(smb.share, name)) == want, f"put of {mib} MiB byte-exact on the share")
        out, _ = q("get", name, "-")
        check(sum_of(out, "get", name) == (mib << 20, want), f"get of {mib} MiB byte-exact over the wire")
        os.unlink(local)


def security(q, smb):
    """-sign and -seal: what the wire carried, and that -seal can fail."""
    want = random_file(os.path.join(smb.share, "s.bin"), 1)
    out, _ = q("-sign", "get", "s.bin", "-")
    plain, signed, _ = frames(out)
    check(sum_of(out, "get", "s.bin")[1] == want and plain == 0 and signed > 0,
          f"signed get: every answer after the mount signed ({signed})")
    out, _ = q("-sign", "put", os.path.join(smb.share, "s.bin"), "s2.bin")
    check(frames(out)[0] == 0 and file_sha256(os.path.join(smb.share, "s2.bin")) == want, "signed put byte-exact")
    out, _ = q("-share", "sealed", "-seal", "get", "s.bin", "-")
    plain, signed, enc = frames(out)
    check(sum_of(out, "get", "s.bin")[1] == want and plain + signed == 0 and enc > 0,
          f"sealed get (share with smb encrypt = required): {enc} answers encrypted, none clear")
    out, _ = q("-share", "sealed", "-seal", "put", os.path.join(smb.share, "s.bin"), "s3.bin")
    check(file_sha256(os.path.join(smb.share, "s3.bin")) == want, "sealed put byte-exact")
    _, err = q("-seal", "get", "s.bin", "-", code=EXIT_VERIFY)
    check("smbqc: verify: not sealed" in err, "-seal on a share that does not encrypt fails (exit 5)")


def rebinding(q, smb):
    """A get whose client changes UDP port mid-transfer. quic-go's server
    keeps answering the first address, so the old port keeps receiving
    (-rebind-keep-old); without it, the get stalls: that is what a server
    without NAT-rebinding support does, and what smbqc reports."""
    want = random_file(os.path.join(smb.share, "r.bin"), 64)
    out, err = q("-rebind-after", "8M", "-rebind-keep-old", "get", "r.bin", "-", timeout=60)
    m = re.search(r"smbqc: rebound udp \S+:(\d+) -> \S+:(\d+) after (\d+) bytes", err)
    check(m and m.group(1) != m.group(2) and sum_of(out, "get", "r.bin") == (64 << 20, want),
          "get of 64 MiB across a change of UDP port mid-transfer is byte-exact")
    _, err = q("-rebind-after", "8M", "-idle", "2s", "get", "r.bin", "-", code=EXIT_IO, timeout=30)
    check("rebound udp" in err and "timeout" in err,
          "without the old port, a server that does not follow the new address stalls the get (exit 4, timeout)")


def refusals(q, smb, relay, certs, smbd_port):
    """Wrong ALPN, unknown CA, wrong name, wrong password, client certs."""
    _, err = q("-alpn", "nosmb", "ls", ".", code=EXIT_QUIC)
    check("tls-alert=120" in err, "wrong ALPN: exit 2, tls-alert=120 (no_application_protocol)")
    _, err = q("-ca", f"{certs}/otherca.pem", "ls", ".", code=EXIT_QUIC)
    check("tls-alert=42 (local)" in err and "unknown authority" in err, "server certificate of an unknown CA: exit 2")
    _, err = q("-name", "other.test", "ls", ".", code=EXIT_QUIC)
    check("tls-alert=42 (local)" in err, "server certificate for another name: exit 2")
    _, err = q("-pass", "wrong", "ls", ".", code=EXIT_SMB)
    check(err.startswith("smbqc: smb:") or "smbqc: smb:" in err, "wrong password: exit 3, an smb line")
    port = free_port()
    Relay(relay, "server", "-listen", f"127.0.0.1:{port}", "-backend", f"127.0.0.1:{smbd_port}",
          "-cert", f"{certs}/srv.pem", "-key", f"{certs}/srv.key", "-client-ca", f"{certs}/ca.pem",
          ready="listening on")
    qa = Client(q.base[0], port, certs, smb.password)
    out, _ = qa("-cert", f"{certs}/cli.pem", "-key", f"{certs}/cli.key", "ls", ".")
    check("s.bin" in out, "client certificate from the required CA: admitted")
    _, err = qa("ls", ".", code=EXIT_QUIC)
    check("smbqc: quic:" in err, f"no client certificate where one is required: exit 2 ({err.strip()[-60:]})")


def pair(relay, smb, certs, qport):
    """smbclient -> quicrelay client -> quicrelay server -> smbd."""
    tport = free_port()
    Relay(relay, "client", "-listen", f"127.0.0.1:{tport}", "-remote", f"127.0.0.1:{qport}", "-name", NAME,
          "-ca", f"{certs}/ca.pem", ready="listening on")
    want = random_file(os.path.join(smb.share, "p.bin"), 64)
    got = os.path.join(smb.dir, "p-got.bin")
    smb.smbclient(tport, cmd=f"get p.bin {got}")
    check(file_sha256(got) == want, "smbclient get of 64 MiB through the quicrelay pair byte-exact")
    smb.smbclient(tport, "--client-protection=encrypt", cmd=f"put {got} p-up.bin")
    check(file_sha256(os.path.join(smb.share, "p-up.bin")) == want,
          "smbclient encrypted put of 64 MiB through the quicrelay pair byte-exact")
    os.unlink(got)


def main():
    smbqc, relay = tools()
    need("openssl", "openssl")
    certs = os.path.join(TMPDIR, "certs")
    os.makedirs(certs)
    make_certs(certs)
    sealed = os.path.join(TMPDIR, "sealed")
    os.makedirs(sealed)
    # go-smb2 1.1.0 cannot take an asynchronous answer (it reads the
    # AsyncId as a TreeId): Samba answers synchronously without aio. A
    # share's section may be opened again; a later [global] would not
    # reach a share already defined.
    sync = "\taio read size = 0\n\taio write size = 0\n"
    smb = Samba(conf_extra=f"[share]\n{sync}[sealed]\n\tpath = {sealed}\n\tread only = no\n"
                f"\tsmb encrypt = required\n{sync}")
    shutil.rmtree(sealed)
    os.symlink(smb.share, sealed)  # the same files under both shares
    qport = free_port()
    Relay(relay, "server", "-listen", f"127.0.0.1:{qport}", "-backend", smb.addr, "-cert", f"{certs}/srv.pem",
          "-key", f"{certs}/srv.key", ready="listening on")
    q = Client(smbqc, qport, certs, smb.password)

    eport = echo_server()
    nport = free_port()
    Relay(relay, "server", "-listen", f"127.0.0.1:{nport}", "-backend", f"127.0.0.1:{eport}",
          "-cert", f"{certs}/srv.pem", "-key", f"{certs}/srv.key", ready="listening on")
    data = os.urandom(1 << 20)
    r = subprocess.run(Client(smbqc, nport, certs, "").base + ["nc"], input=data, capture_output=True, timeout=30)
    check(r.returncode == 0 and r.stdout == data, "smbqc nc: 1 MiB through a TCP echo behind quicrelay, exact")

    transfers(q, smb, (0, 1, 64))
    security(q, smb)
    out, _ = q("-sign", "many", "40", "4K", "manydir")
    check("many files=40 bytes=163840 ok" in out and len(os.listdir(os.path.join(smb.share, "manydir"))) == 40,
          "40 files of 4 KiB written and read back in one signed session")
    out, _ = q("sessions", "4", "2M", "conc")
    lines = re.findall(r"^session (\d) conc\.\d bytes=2097152 sha256=([0-9a-f]{64})$", out, re.M)
    check(len(lines) == 4 and all(file_sha256(os.path.join(smb.share, f"conc.{i}")) == h for i, h in lines),
          "4 concurrent sessions, each on its own QUIC connection, byte-exact")
    rebinding(q, smb)
    refusals(q, smb, relay, certs, smb.port)
    pair(relay, smb, certs, qport)


if __name__ == "__main__":
    run(main, alarm=180)
