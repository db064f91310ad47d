"""Shared pieces of the integration tests: start smbsplice and test servers
on loopback, move and check bytes, and report results.

Every test is a script run by `make check`: exit 0 passes, 1 fails, 77 skips.
Each one arms an alarm first, so a hang fails the test instead of the suite.
"""
import hashlib
import os
import shutil
import urllib.error
import urllib.request
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SRCDIR = os.environ.get("SRCDIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
SMBSPLICE = os.environ.get("SMBSPLICE", os.path.join(SRCDIR, "proxy/smbsplice"))
# Scratch space under the build tree (smbd's directories, test files).
TMPDIR = os.path.join(os.getcwd(), "tests", "tmp")
TIMEOUT = 60.0


class TestFailure(Exception):
    pass


def check(cond, what):
    """Fail the test with `what` unless `cond` holds; print it either way."""
    if not cond:
        raise TestFailure(what)
    print(f"ok: {what}", flush=True)


def run(main, alarm=600):
    """Run a test's main(), turn its outcome into an exit status."""
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TestFailure(f"test hung for {alarm}s")))
    signal.alarm(alarm)
    try:
        main()
    except TestFailure as e:
        print(f"FAIL: {e}", flush=True)
        Proxy.dump_logs()
        sys.exit(1)
    finally:
        Proxy.stop_all()
        Samba.stop_all()
    sys.exit(0)


def need(tool, package):
    """Skip the test (exit 77) with one line naming the package to install."""
    if not shutil.which(tool):
        print(f"SKIP: {tool} not found: install the Debian package {package}", flush=True)
        sys.exit(77)


class Samba:
    """A throwaway smbd on a loopback port (contrib/throwaway-smbd.sh):
    its own smb.conf and directories under tests/tmp, user root with
    password `password`, one share named "share"."""

    running = []
    password = "smbsplice"

    def __init__(self):
        need("smbd", "samba")
        os.makedirs(TMPDIR, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="smbd-", dir=TMPDIR)
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.share = os.path.join(self.dir, "share")
        self.script = os.path.join(SRCDIR, "contrib/throwaway-smbd.sh")
        env = dict(os.environ, SMB_PASS=self.password)
        r = subprocess.run([self.script, "start", self.dir, str(self.port)], env=env,
                           capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise TestFailure(f"throwaway smbd did not start: {r.stderr}")
        Samba.running.append(self)

    def stop(self):
        subprocess.run([self.script, "stop", self.dir], timeout=30)
        if self in Samba.running:
            Samba.running.remove(self)

    @classmethod
    def stop_all(cls):
        for s in list(cls.running):
            s.stop()

    def smbclient(self, port, *args, cmd):
        """Run smbclient against //127.0.0.1/share on `port`."""
        need("smbclient", "smbclient")
        argv = ["smbclient", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{self.password}", *args, "-c", cmd]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if r.returncode:
            raise TestFailure(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        return r.stdout + r.stderr


def random_file(path, mib):
    """Write `mib` MiB of random bytes to `path`; return their sha256."""
    h = hashlib.sha256()
    with open("/dev/urandom", "rb") as src, open(path, "wb") as dst:
        for _ in range(mib):
            b = src.read(1 << 20)
            h.update(b)
            dst.write(b)
    return h.hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while (b := f.read(1 << 20)):
            h.update(b)
    return h.hexdigest()


def scrape(port, path="/metrics"):
    """GET a metrics page; return {(name, ((label, value), ...)): value}."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, value = line.rsplit(" ", 1)
        name, _, labels = key.partition("{")
        pairs = tuple(sorted(tuple(kv.split("=", 1)) for kv in labels.rstrip("}").split(",") if kv))
        out[(name, tuple((k, v.strip('"')) for k, v in pairs))] = float(value)
    return out


def metric(m, name, **labels):
    return m.get((name, tuple(sorted(labels.items()))), 0.0)


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fmt_addr(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Server:
    """A threaded TCP server on loopback: handler(sock) runs per connection."""

    def __init__(self, handler, host="127.0.0.1", backlog=128):
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(backlog)
        self.host, self.port = host, self.sock.getsockname()[1]
        self.addr = fmt_addr(host, self.port)
        self.handler = handler
        self.errors = []
        self.threads = []
        self.accepted = 0
        t = threading.Thread(target=self._accept_loop, daemon=True)
        t.start()

    def _accept_loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            c.settimeout(TIMEOUT)
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            t.start()
            self.threads.append(t)
            self.accepted += 1

    def _serve(self, c):
        try:
            self.handler(c)
        except Exception as e:  # recorded, checked by the test
            self.errors.append(e)
        finally:
            c.close()

    def join(self, timeout=TIMEOUT, count=1):
        """Wait for `count` connections to be accepted, then for every
        handler to finish."""
        end = time.monotonic() + timeout
        while self.accepted < count and time.monotonic() < end:
            time.sleep(0.01)
        for t in list(self.threads):
            t.join(max(0.1, end - time.monotonic()))

    def close(self):
        self.sock.close()


class Proxy:
    """smbsplice as a child process, with its log in a temporary file."""

    running = []

    def __init__(self, backend, *args, listen_host="127.0.0.1", rlimit_nofile=None, check_start=True, stats=False):
        self.port = free_port(socket.AF_INET6 if ":" in listen_host else socket.AF_INET, listen_host)
        self.addr = fmt_addr(listen_host, self.port)
        self.host = listen_host
        if stats:
            self.stats_port = free_port()
            args = (*args, "--stats", f"127.0.0.1:{self.stats_port}")
        self.logf = tempfile.NamedTemporaryFile(prefix="smbsplice-", suffix=".log", delete=False)
        argv = [SMBSPLICE, "--listen", self.addr, "--backend", backend, *args]
        pre = None
        if rlimit_nofile:
            import resource

            def pre():
                resource.setrlimit(resource.RLIMIT_NOFILE, (rlimit_nofile, rlimit_nofile))

        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.logf, preexec_fn=pre)
        Proxy.running.append(self)
        if check_start:
            self.wait_log(r"listening on", 10)

    def log(self):
        with open(self.logf.name, errors="replace") as f:
            return f.read()

    def wait_log(self, pattern, timeout=10.0, count=1):
        """Wait until `pattern` matches `count` log lines; return the matches."""
        end = time.monotonic() + timeout
        while True:
            found = re.findall(pattern, self.log(), re.M)
            if len(found) >= count:
                return found
            if self.proc.poll() is not None and not found:
                raise TestFailure(f"smbsplice exited ({self.proc.returncode}) before logging {pattern!r}:\n{self.log()}")
            if time.monotonic() > end:
                raise TestFailure(f"no log line matching {pattern!r} within {timeout}s:\n{self.log()}")
            time.sleep(0.02)

    def conn_lines(self):
        return [parse_conn_line(l) for l in self.log().splitlines() if " conn " in l and " end=" in l]

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def connect(self):
        fam = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(TIMEOUT)
        s.connect((self.host, self.port))
        return s

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self in Proxy.running:
            Proxy.running.remove(self)

    @classmethod
    def stop_all(cls):
        for p in list(cls.running):
            p.stop()

    @classmethod
    def dump_logs(cls):
        for p in cls.running:
            print(f"--- log of {' '.join(p.argv)}\n{p.log()}", flush=True)


CONN_RE = re.compile(r"conn (\S+) -> (\S+) worker=(\d+) end=(\w+)(?: \((.*?)\))? dur=([\d.]+)s "
                     r"c2s=(\d+) \(splice (\d+) copy (\d+)\) s2c=(\d+) \(splice (\d+) copy (\d+)\)")


def parse_conn_line(line):
    m = CONN_RE.search(line)
    if not m:
        raise TestFailure(f"malformed connection log line: {line}")
    g = m.groups()
    return {"client": g[0], "backend": g[1], "worker": int(g[2]), "end": g[3], "why": g[4], "dur": float(g[5]),
            "c2s": int(g[6]), "c2s_splice": int(g[7]), "c2s_copy": int(g[8]),
            "s2c": int(g[9]), "s2c_splice": int(g[10]), "s2c_copy": int(g[11])}


def recv_exact(s, n):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        r = s.recv_into(view[got:])
        if not r:
            raise TestFailure(f"EOF after {got} of {n} bytes")
        got += r
    return bytes(buf)


def recv_all(s, bufsize=1 << 20):
    """Read to EOF; return (byte count, sha256 hex)."""
    h, n, buf = hashlib.sha256(), 0, bytearray(bufsize)
    while True:
        r = s.recv_into(buf)
        if not r:
            return n, h.hexdigest()
        h.update(memoryview(buf)[:r])
        n += r


def recv_hash_n(s, n, bufsize=1 << 20):
    """Read exactly n bytes, or to EOF if sooner; return (count, sha256 hex)."""
    h, got, buf = hashlib.sha256(), 0, bytearray(bufsize)
    while got < n:
        r = s.recv_into(buf, min(bufsize, n - got))
        if not r:
            break
        h.update(memoryview(buf)[:r])
        got += r
    return got, h.hexdigest()


class Pattern:
    """A long pseudo-random stream, cheap to make: 1 GiB costs no memory."""

    def __init__(self, seed, block=1 << 20):
        rng = random.Random(seed)
        self.base = rng.randbytes(block + 65536)
        self.block = block
        self.seed = seed

    def chunks(self, total):
        i = 0
        while total > 0:
            off = (i * 7919 + self.seed) % 65536
            n = min(self.block, total)
            yield memoryview(self.base)[off:off + n]
            total -= n
            i += 1

    def digest(self, total):
        h = hashlib.sha256()
        for c in self.chunks(total):
            h.update(c)
        return h.hexdigest()


def send_stream(s, pattern, total, shut=True):
    h = hashlib.sha256()
    for c in pattern.chunks(total):
        s.sendall(c)
        h.update(c)
    if shut:
        s.shutdown(socket.SHUT_WR)
    return h.hexdigest()


def median(xs):
    return statistics.median(xs)
