"""Shared pieces of the integration tests: start smbsplice and test servers
on loopback, move and check bytes, and report results.

Every test is a script run by `make check`: exit 0 passes, 1 fails, 77 skips.
Each one arms an alarm first, so a hang fails the test instead of the suite.

Every smbsplice a test starts is checked when it stops (Proxy.stop): it must
exit 0 on SIGTERM, its log must hold no sanitizer report (a build with
--enable-sanitizers writes them there, leaks at exit included), and, unless
the test stopped it with connections open on purpose, it must hold no
socket or pipe it did not hold once it was listening.

Proxy.handover() sends a live handover's SIGUSR2 and follows the process
that takes over (its pid, exit status, descriptors, /metrics), checking
that the one it replaced exited 0; every process of the chain writes to
the same log, checked at the end as one.
"""
import atexit
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
import traceback
import threading
import time

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # parse_page() says what to install
    text_string_to_metric_families = None

SRCDIR = os.environ.get("SRCDIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
SMBSPLICE = os.environ.get("SMBSPLICE", os.path.join(SRCDIR, "proxy/smbsplice"))
# Scratch space under the build tree (smbd's directories, test files): one
# directory per test process, removed when the test passes (kept, with the
# logs, when it fails), so that a run of the suite leaves no gigabytes behind.
TMPDIR = os.path.join(os.getcwd(), "tests", "tmp",
                      f"{os.path.splitext(os.path.basename(sys.argv[0] or 'py'))[0]}-{os.getpid()}")
os.makedirs(TMPDIR, exist_ok=True)
_TMPDIR_PID = os.getpid()
_passed = False


def _tmpdir_cleanup():
    """At exit: the test's scratch directory goes if it passed; a process
    that imported the harness without running a test leaves nothing."""
    if os.getpid() != _TMPDIR_PID:
        return
    if _passed or not os.listdir(TMPDIR):
        shutil.rmtree(TMPDIR, ignore_errors=True)


atexit.register(_tmpdir_cleanup)
TIMEOUT = 60.0
# More things run() stops when a test ends, however it ends (guest.py's
# QEMU guests): functions of no argument.
CLEANUPS = []


class TestFailure(Exception):
    pass


def check(cond, what):
    """Fail the test with `what` unless `cond` holds; print it either way."""
    if not cond:
        raise TestFailure(what)
    print(f"ok: {what}", flush=True)


def run(main, alarm=600):
    """Run a test's main(), turn its outcome into an exit status. A daemon
    the test left running is stopped and checked like one it stopped."""
    global _passed
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TestFailure(f"test hung for {alarm}s")))
    signal.alarm(alarm)
    try:
        main()
        Proxy.stop_all()
        Proxy.remove_logs()  # kept only when the test fails
        _passed = True
    except Exception as e:  # an unexpected error too: the logs say why
        print(f"FAIL: {e if isinstance(e, TestFailure) else repr(e)}", flush=True)
        if not isinstance(e, TestFailure):
            traceback.print_exc()
        # Stopped first, so that what they report at exit is in the logs.
        Proxy.stop_all(check=False, dump=True)
        sys.exit(1)
    finally:
        Proxy.stop_all(check=False)
        Samba.stop_all()
        for stop in CLEANUPS:
            stop()
    sys.exit(0)


def end_process(proc, timeout=10):
    """SIGTERM `proc` and wait up to `timeout` for it; kill it past that.
    Return: True if it ended by itself (or had already)."""
    if proc.poll() is not None:
        return True
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False


def sh(*argv, timeout=30, ok=True):
    """Run a command; with `ok`, a non-zero exit fails the test with its
    standard error. Returns the CompletedProcess (text)."""
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if ok and r.returncode:
        raise TestFailure(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def need(tool, package):
    """Skip the test (exit 77) with one line naming the package to install."""
    if not shutil.which(tool):
        print(f"SKIP: {tool} not found: install the Debian package {package}", flush=True)
        sys.exit(77)


def wait_for(what, fn, timeout=10.0):
    """Poll fn() until it returns something true; return that."""
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > end:
            raise TestFailure(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.05)


def in_netns(netns, argv):
    """`argv` run inside the network namespace named `netns` (one made
    with `ip netns add`), or as it is if `netns` is None."""
    return ["ip", "netns", "exec", netns, *argv] if netns else list(argv)


class Samba:
    """A throwaway smbd on a loopback port (contrib/throwaway-smbd.sh):
    its own smb.conf and directories under tests/tmp, user root with
    password `password`, one share named "share".

    With `netns`, the name of a network namespace made with `ip netns add`
    (its lo up), the script runs under `ip netns exec`: smbd listens on
    127.0.0.1:PORT inside that namespace, and the script's readiness check
    connects there too. Its files stay where the host sees them."""

    running = []
    password = "smbsplice"

    def __init__(self, netns=None, interfaces=None, port=None, conf_extra=None):
        """By default on a free loopback port. netns: run smbd inside that
        network namespace (a name in /run/netns); interfaces: the addresses
        it binds to there, space-separated (the first is self.addr); port:
        its port, for a namespace of the test's own where none is taken;
        conf_extra: text appended to its smb.conf (see the script)."""
        need("smbd", "samba")
        if netns:
            need("ip", "iproute2")
        self.netns = netns
        os.makedirs(TMPDIR, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="smbd-", dir=TMPDIR)
        self.port = port or free_port()
        self.addr = fmt_addr(interfaces.split()[0] if interfaces else "127.0.0.1", self.port)
        self.share = os.path.join(self.dir, "share")
        self.conf = os.path.join(self.dir, "smb.conf")
        self.netns = netns
        self.script = os.path.join(SRCDIR, "contrib/throwaway-smbd.sh")
        env = dict(os.environ, SMB_PASS=self.password)
        if interfaces:
            env["SMB_INTERFACES"] = interfaces
        if conf_extra:
            env["SMB_CONF_EXTRA"] = conf_extra
        r = subprocess.run(in_netns(netns, [self.script, "start", self.dir, str(self.port)]), env=env,
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

    def smbclient(self, port, *args, cmd, netns=None):
        """Run smbclient against //127.0.0.1/share on `port`; with `netns`,
        inside that network namespace (`ip netns exec`).

        Its per-operation timeout is raised from 20 s to 120 s: on a
        loaded machine (the sanitizer pass of CI) a 256 MiB put once took
        46 s and smbclient gave up on the close that followed
        (NT_STATUS_IO_TIMEOUT) with every byte forwarded. A proxy that
        lost a reply still fails, after 120 s instead of 20."""
        need("smbclient", "smbclient")
        argv = in_netns(netns, ["smbclient", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{self.password}",
                                "-t", "120", *args, "-c", cmd])
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


# smbsplice renders /metrics at most once a second and serves that page
# in between. It renders a new page when its loop's clock, read once the
# request is in, is a second past the last page's rendering; and that page
# was rendered before its response was received here. So a page is fresh
# (rendered after the request was sent, with every counter as of then)
# when the request goes out a second after the last page's response came
# in. Counting from when the last request was sent is not enough: a
# response that took 0.1 s to come (a loaded machine, the sanitizers)
# left its page cached until 0.1 s later, and a test comparing counters
# before and after an event read the page from before it (copy +0).
METRICS_CACHE = 1.0
_last_scrape = {}


def note_scrape(port):
    """Record that a page of `port` was received just now (call it after
    reading the response of a scrape made by hand), so that the next
    scrape() waits until a fresh page is rendered."""
    _last_scrape[port] = time.monotonic()


def wait_fresh(port):
    """Wait until a scrape of `port` sent now gets a page rendered for it,
    not the one cached for the last (see METRICS_CACHE)."""
    wait = _last_scrape.get(port, 0) + METRICS_CACHE + 0.05 - time.monotonic()
    if wait > 0:
        time.sleep(wait)


def scrape_text(port, path="/metrics"):
    """GET a fresh metrics page (not the 1-s cached one), rendered after
    this call began; return its text, once `promtool check metrics` has
    passed it (check_page()). Every test that compares counters before
    and after an event goes through here (scrape())."""
    wait_fresh(port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            text = r.read().decode()
    finally:
        note_scrape(port)
    check_page(text, f"127.0.0.1:{port}{path}")
    return text


# Debian's prometheus package; contrib/install-deps.sh installs it.
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
_pages_checked = set()


def check_page(text, where="/metrics"):
    """Fail the test unless Prometheus's own `promtool check metrics`
    takes @text without a word: a page it cannot parse (an unescaped
    label value, a series given twice) is one Prometheus would refuse
    whole, and one it lints (a counter without _total, a unit not at the
    end of the name) is one its users' tools would flag. A page already
    passed is not checked again."""
    if text in _pages_checked:
        return
    try:
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True,
                           timeout=60)
    except FileNotFoundError:
        raise TestFailure(f"{PROMTOOL} not found: install Debian's prometheus (contrib/install-deps.sh)") from None
    if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
        raise TestFailure(f"promtool check metrics fails the page of {where} ({r.returncode}):\n"
                          f"{(r.stdout + r.stderr).strip()}")
    _pages_checked.add(text)


def parse_page(text):
    """A page of the Prometheus text format as {(name, ((label, value),
    ...) sorted): value}, label values unescaped, histograms as their
    _bucket, _sum and _count series. The parsing is prometheus_client's
    (Debian: python3-prometheus-client), the reference client's own; a
    page it cannot read, or a series given twice, fails the test, as
    Prometheus would refuse the page."""
    if text_string_to_metric_families is None:
        raise TestFailure("prometheus_client is missing: install Debian's python3-prometheus-client "
                          "(contrib/install-deps.sh) and run the tests with /usr/bin/python3")
    out = {}
    try:
        samples = [s for fam in text_string_to_metric_families(text) for s in fam.samples]
    except ValueError as e:
        raise TestFailure(f"/metrics does not parse: {e}") from None
    for s in samples:
        key = (s.name, tuple(sorted(s.labels.items())))
        if key in out:
            raise TestFailure(f"/metrics gives {s.name}{dict(key[1])} twice")
        out[key] = s.value
    return out


def scrape(port, path="/metrics"):
    """GET a fresh metrics page, checked by promtool; return
    {(name, ((label, value), ...)): value} (parse_page())."""
    return parse_page(scrape_text(port, path))


def metric(m, name, **labels):
    """The sum of @name's series whose labels include @labels: a series
    labelled with its listener (listener="main") is counted unless the
    caller names one."""
    want = set(labels.items())
    return sum(v for (n, ls), v in m.items() if n == name and want <= set(ls))


def wait_metric(port, name, want, timeout=10.0, **labels):
    """Scrape `port` until metric(@name, @labels) is @want, for up to
    @timeout seconds (each scrape a fresh page); whether it got there.
    For counts the log cannot give: end lines of connections that
    forwarded nothing are rate limited."""
    end = time.monotonic() + timeout
    while metric(scrape(port), name, **labels) != want:
        if time.monotonic() > end:
            return False
    return True


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    return free_ports(1, family, host)[0]


def free_ports(n, family=socket.AF_INET, host="127.0.0.1"):
    """n different free ports. Calls of free_port() one after another can
    return the same port twice (each socket is closed before the next
    bind); these are all held until all are chosen."""
    socks = [socket.socket(family, socket.SOCK_STREAM) for _ in range(n)]
    for s in socks:
        s.bind((host, 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def reserve_port(family=socket.AF_INET, host="127.0.0.1"):
    """A free port for smbsplice to listen on, and a socket that holds it
    until smbsplice does: bound with SO_REUSEPORT but not listening, it
    lets smbsplice's own SO_REUSEPORT sockets bind beside it, while every
    other bind(0) on the machine passes the port over. Without it, two
    tests running at once could pick the same port. SO_REUSEADDR too, so
    that smbsplice's probe for another process listening there (a socket
    with SO_REUSEADDR alone) binds beside it: a socket that only holds
    the port does not listen. Close the holder once smbsplice listens."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind((host, 0))
    return s.getsockname()[1], s


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


# The first line of a report from AddressSanitizer, LeakSanitizer or
# UndefinedBehaviorSanitizer, and the SUMMARY line that ends one.
# `make check-sanitizers` runs the suite against a build whose every
# call is instrumented: counts still hold there, timings do not.
SANITIZED = "ASAN_OPTIONS" in os.environ

SANITIZER_RE = re.compile(r"^.*(?:ERROR: \w*Sanitizer|runtime error:|SUMMARY: \w*Sanitizer).*$", re.M)


def sanitizer_report(text, lines=80):
    """The sanitizer report in `text` (a daemon's stderr), from its first
    line on and at most `lines` long; None if there is none."""
    m = SANITIZER_RE.search(text)
    if not m:
        return None
    return "\n".join(text[m.start():].splitlines()[:lines])


def fd_table(pid):
    """{fd: what it refers to} for a live process, from /proc/PID/fd:
    'socket:[inode]', 'pipe:[inode]', 'anon_inode:[eventpoll]', a path..."""
    out = {}
    base = f"/proc/{pid}/fd"
    for name in os.listdir(base):
        try:
            out[int(name)] = os.readlink(f"{base}/{name}")
        except FileNotFoundError:  # closed while we looked
            pass
    return out


TCP_STATES = {1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2",
              6: "TIME_WAIT", 7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN", 11: "CLOSING"}


def tcp_sockets(pid):
    """{'socket:[inode]': 'tcp LOCAL -> REMOTE STATE'} from /proc/PID/net/tcp
    and tcp6, to say what a leaked socket was."""
    def addr(hexaddr):
        ip, port = hexaddr.split(":")
        raw = bytes.fromhex(ip)
        # The kernel prints each 32-bit word in host (little-endian) order.
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
        host = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)
        return fmt_addr(host, int(port, 16))
    out = {}
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    out[f"socket:[{fields[9]}]"] = (f"{name} {addr(fields[1])} -> {addr(fields[2])} "
                                                    f"{TCP_STATES.get(int(fields[3], 16), fields[3])}")
        except (OSError, ValueError, StopIteration):
            pass
    return out


def pipe_write_end(pid, fd):
    """True if `fd` of `pid` is open for writing (the write end of a pipe)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as f:
            for line in f:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE == os.O_WRONLY
    except FileNotFoundError:
        return None
    return None


def user_copy(path):
    """A copy of the binary at @path that any user may run: the build tree
    may sit under a directory only root can enter (CI clones into /root)."""
    d = tempfile.mkdtemp(prefix="smbsplice-bin-")
    os.chmod(d, 0o755)
    dst = os.path.join(d, os.path.basename(path))
    shutil.copy2(path, dst)
    os.chmod(dst, 0o755)
    return dst


# In smb mode the backend is dialled only for a client that opens with an
# SMB NEGOTIATE: tests whose clients send other bytes (echoes, patterns)
# pass these to have it dialled on the first byte.
NOT_SMB = ("--first-frame", "any")
# Tests whose fake servers never let a client log in (no SESSION_SETUP
# response with STATUS_SUCCESS), with many clients at once or for long,
# lift the limits on connections not yet authenticated.
NO_LOGIN = ("--max-preauth-per-source", "off", "--auth-timeout", "off")


class Proxy:
    """smbsplice as a child process, with its log in a temporary file."""

    running = []
    stopped = []
    # How long stop() waits for the daemon's new sockets to go, and for it
    # to exit after SIGTERM (LeakSanitizer's scan at exit takes a moment).
    FD_WAIT = 5.0
    EXIT_WAIT = 30.0

    def __init__(self, backend, *args, listen_host="127.0.0.1", rlimit_nofile=None, check_start=True, stats=False,
                 user=None, port=None, listen=True, env=None, wrap=(), exe=None):
        """port: listen on this port rather than a free one reserved on the
        host: for a listen address in a network namespace of the test's
        own (--listen-netns among args), where no other test can take it.
        listen=False: args alone describe the listeners (a config file);
        backend is then ignored. env: the daemon's environment. wrap: a
        command that execs smbsplice (systemd-socket-activate ...). exe:
        the binary to start rather than the built one (a copy the test
        replaces before a handover, as an upgrade does)."""
        if not listen:
            self.port, holder = None, socket.socket()
        elif port:
            self.port, holder = port, socket.socket()  # nothing to hold
        else:
            self.port, holder = reserve_port(socket.AF_INET6 if ":" in listen_host else socket.AF_INET, listen_host)
        if user:
            # SO_REUSEPORT shares a port only between sockets of one user:
            # the holder (root's) would keep another user's smbsplice out.
            holder.close()
        self.addr = fmt_addr(listen_host, self.port)
        self.host = listen_host
        if stats:
            self.stats_port = free_port()
            args = (*args, "--stats", f"127.0.0.1:{self.stats_port}")
        self.logf = tempfile.NamedTemporaryFile(prefix="smbsplice-", suffix=".log", delete=False)
        self.binary = user_copy(SMBSPLICE) if user else None
        argv = [*wrap, self.binary or exe or SMBSPLICE,
                *(("--listen", self.addr, "--backend", backend) if listen else ()), *args]
        pre = None
        if rlimit_nofile or user:
            import pwd
            import resource

            pw = pwd.getpwnam(user) if user else None

            def pre():
                if rlimit_nofile:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (rlimit_nofile, rlimit_nofile))
                if pw:
                    os.setgroups([])
                    os.setgid(pw.pw_gid)
                    os.setuid(pw.pw_uid)

        self.argv = argv
        self.max_pipes = int(args[args.index("--max-pipes") + 1]) if "--max-pipes" in args else 1024
        self.stats = stats
        self.fds0 = None
        self.previous = []  # the processes a handover replaced, oldest first
        self.lingering = []  # of them, those that kept QUIC connections (handover(old_stays=True))
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.logf, preexec_fn=pre, env=env)
        Proxy.running.append(self)
        if not check_start:
            holder.close()
        if check_start:
            try:
                self.wait_log(r"listening on", 10)
            finally:
                holder.close()
            self.started()

    def started(self):
        """Take the descriptor snapshot stop() compares against, once the
        daemon listens: its listening sockets, the log, its epoll and event
        fds, its threads'. (Every listener's sockets are open before the
        first "listening on" line.)"""
        self.fds0 = fd_table(self.proc.pid)

    def handover(self, timeout=30.0, old_stays=False):
        """`kill -USR2` the daemon and follow the process it hands over to
        (NEW): wait for OLD's `handover: N connections to pid P, forwarding
        paused X ms` line and NEW's `handover: took ...` line, check OLD
        exited 0, then make NEW this Proxy's process, so that stop(),
        /metrics, the exit status and the descriptor check are NEW's from
        now on (the log is shared: NEW writes to OLD's stderr). Return
        {"conns", "pid", "paused_ms", "took_conns", "took_listeners"}.

        NEW is OLD's child (or, under NOTIFY_SOCKET, its parent's: this
        process's); this process becomes a child subreaper first so that
        NEW, orphaned when OLD exits, is adopted here and its exit status
        can be read (Adopted).

        old_stays: OLD keeps serving connections that cannot be carried
        (QUIC ones) after GO; it is not waited for, but kept in
        self.lingering (its exit is the test's to check), and NEW, still
        OLD's child, is adopted here only once OLD has gone."""
        become_subreaper()
        old = self.proc
        done = len(re.findall(HANDOVER_DONE_RE, self.whole_lines(), re.M))
        took = len(re.findall(HANDOVER_TOOK_RE, self.whole_lines(), re.M))
        # A process a handover started while the one before it lingers
        # is that one's child: its exit (it may have nothing to keep)
        # cannot be waited for here.
        own = not isinstance(old, Adopted) or old.adopted()
        old.send_signal(signal.SIGUSR2)
        line = self.wait_log(HANDOVER_DONE_RE, timeout, count=done + 1, own=own)[done]
        conns, pid, paused = int(line[0]), int(line[1]), float(line[2])
        # NEW's line: OLD may well have exited 0 before NEW logs it.
        taken = [t for t in self.wait_log(HANDOVER_TOOK_RE, timeout, count=took + 1, own=False)
                 if int(t[2]) == old.pid]
        if not taken:
            raise TestFailure(f"no `handover: took ... from pid {old.pid}` line:\n{self.log()}")
        if old_stays:
            self.lingering.append(old)
        else:
            self._old_exited(old, pid)
        self.previous.append(old)
        self.proc = Adopted(pid)
        if not old_stays:
            wait_for(f"pid {pid} adopted once pid {old.pid} exited", lambda: self.proc.adopted(), 10)
            reap_orphans()
        if self.stats:
            # NEW serves /metrics once it has taken everything; the
            # descriptor snapshot is taken after it does.
            wait_for(f"/metrics of pid {pid} answering", lambda: self._scrape_ok(), 10)
        if self.fds0 is not None:
            self.started()
        return {"conns": conns, "pid": pid, "paused_ms": paused,
                "took_conns": int(taken[0][0]), "took_listeners": int(taken[0][1])}

    def _old_exited(self, old, pid):
        """The process that handed over to pid exited 0, with no sanitizer
        report in the log."""
        try:
            old.wait(self.EXIT_WAIT)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"pid {old.pid} still runs {self.EXIT_WAIT:.0f} s after handing over to {pid}")
        if old.returncode != 0:
            raise TestFailure(f"pid {old.pid} exited {old.returncode} after handing over, not 0:\n{self.log()}")
        report = sanitizer_report(self.log())
        if report:
            raise TestFailure(f"sanitizer report in the log after the handover from pid {old.pid}:\n{report}")

    def handover_fails(self, why=r".*", timeout=30.0):
        """`kill -USR2` the daemon for a handover that must fail: wait for
        `handover failed: WHY; this process goes on forwarding` (WHY
        matching @why), check the daemon still runs and is still the same
        process; return WHY."""
        become_subreaper()
        n = len(re.findall(HANDOVER_FAILED_RE, self.whole_lines(), re.M))
        pid = self.proc.pid
        self.proc.send_signal(signal.SIGUSR2)
        got = self.wait_log(HANDOVER_FAILED_RE, timeout, count=n + 1)[n]
        if not re.search(why, got):
            raise TestFailure(f"handover failed for another reason than {why!r}: {got}")
        if self.proc.poll() is not None or self.proc.pid != pid:
            raise TestFailure(f"pid {pid} did not go on after a failed handover ({self.proc.returncode}):\n{self.log()}")
        reap_orphans()
        return got

    def _scrape_ok(self):
        """Whether /metrics answers at all (a cached page will do)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.stats_port}/metrics", timeout=5) as r:
                text = r.read().decode()
            note_scrape(self.stats_port)
        except (OSError, urllib.error.URLError):
            return False
        check_page(text, f"127.0.0.1:{self.stats_port}/metrics")
        return True

    def log(self):
        with open(self.logf.name, errors="replace") as f:
            return f.read()

    def whole_lines(self):
        """The log up to its last newline: the log writer's write() of a
        batch can be caught half done, and a line cut short must not be
        parsed or matched."""
        text = self.log()
        return text[:text.rfind("\n") + 1]

    def wait_log(self, pattern, timeout=10.0, count=1, own=True):
        """Wait until `pattern` matches `count` log lines; return the matches.

        own: the lines are the daemon's own (self.proc's), so its exit
        before it logged any ends the wait at once (the log is read after
        the exit is seen, so a line written just before it counts). For a
        line another process writes to the same log (the process a handover
        starts, whose line can come after the old one exited 0, as it
        should), pass own=False: then only the timeout ends the wait."""
        end = time.monotonic() + timeout
        while True:
            gone = own and self.proc.poll() is not None
            found = re.findall(pattern, self.whole_lines(), re.M)
            if len(found) >= count:
                return found
            if gone and not found:
                raise TestFailure(f"smbsplice exited ({self.proc.returncode}) before logging {pattern!r}:\n{self.log()}")
            if time.monotonic() > end:
                raise TestFailure(f"no log line matching {pattern!r} within {timeout}s:\n{self.log()}")
            time.sleep(0.02)

    def conn_lines(self):
        """The connection lines logged so far, parsed (whole lines only)."""
        return [parse_conn_line(l) for l in self.whole_lines().splitlines() if " conn " in l and " end=" in l]

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

    def fd_problems(self):
        """What the daemon holds now that it did not hold once listening,
        for a test whose connections are all closed: a list of lines, empty
        if nothing leaked.

        Sockets are compared one for one (fd and inode): every socket that
        was not there at start must be gone. Pipes cannot be compared so:
        the pool keeps free splice pipes open for reuse (and may close them
        later), so the pipes opened since start are checked as a pool: each
        must have both ends open, one read and one write end, and there may
        be no more than --max-pipes of them; with --stats, no more than the
        pool's smbsplice_pipes_open and none lent (smbsplice_pipes_lent 0,
        since no connection is open). Without --stats the pool's size is not
        known, so pipes are not counted closer than that. anon_inode entries
        (epoll, eventfd, timerfd, signalfd) and other files are not
        compared."""
        pid = self.proc.pid
        start_socks = {(fd, t) for fd, t in self.fds0.items() if t.startswith("socket:")}
        start_pipes = {(fd, t) for fd, t in self.fds0.items() if t.startswith("pipe:")}
        now = fd_table(pid)
        new_socks = sorted((fd, t) for fd, t in now.items()
                           if t.startswith("socket:") and (fd, t) not in start_socks)
        if new_socks:
            tcp = tcp_sockets(pid)
            return [f"fd {fd} -> {t} ({tcp.get(t, 'closed by both peers, or not TCP')}): "
                    "a socket opened since start, still open" for fd, t in new_socks]
        # A scrape makes a socket of its own: sockets are settled first,
        # then the pool is compared with a fresh scrape.
        pool = None
        if self.stats:
            m = scrape(self.stats_port)
            pool = (int(metric(m, "smbsplice_pipes_open")), int(metric(m, "smbsplice_pipes_lent")))
        now = fd_table(pid)
        ends = {}
        for fd, t in now.items():
            if t.startswith("pipe:") and (fd, t) not in start_pipes:
                ends.setdefault(t, []).append(fd)
        problems = []
        for t, fds in sorted(ends.items()):
            kinds = sorted(str(pipe_write_end(pid, fd)) for fd in fds)
            if kinds != ["False", "True"]:
                problems.append(f"fds {fds} -> {t}: a pipe that is not one read end and one write end")
        if len(ends) > self.max_pipes:
            problems.append(f"{len(ends)} pipes open, more than --max-pipes {self.max_pipes}")
        if pool is not None:
            if len(ends) > pool[0]:
                problems.append(f"{len(ends)} pipes open ({sum(map(len, ends.values()))} fds), "
                                f"but the pool counts {pool[0]} (smbsplice_pipes_open)")
            if pool[1]:
                problems.append(f"{pool[1]} pipes still lent with no connection open (smbsplice_pipes_lent)")
        return problems

    def wait_fds(self):
        """Wait, at most FD_WAIT seconds, until fd_problems() finds nothing;
        return what it found last."""
        end = time.monotonic() + self.FD_WAIT
        while True:
            try:
                problems = self.fd_problems()
            except (OSError, urllib.error.URLError) as e:
                problems = [f"cannot read the daemon's descriptors or metrics: {e}; {self._stats_listeners()}"]
            if not problems or time.monotonic() > end or self.proc.poll() is not None:
                return problems
            time.sleep(0.05)

    def _stats_listeners(self):
        """What listens on the --stats port, by `ss`, for a failure's text:
        a scrape refused by a daemon that still runs means its listening
        socket was closed or shut down under it."""
        if not self.stats:
            return "no --stats"
        r = subprocess.run(["ss", "-Htlnp", f"sport = :{self.stats_port}"], capture_output=True, text=True)
        return f"listening on port {self.stats_port}: {r.stdout.strip() or 'nothing'}"

    def stop(self, check_fds=True, check=True):
        """Stop the daemon with SIGTERM and check it: no descriptor leaked
        (check_fds; pass False when the test stops it with connections
        open, or has stopped it already), exit status 0, no sanitizer
        report in its log. A failed check raises TestFailure, after the
        daemon is gone. check=False only stops it (for cleanup). The fd
        check needs the snapshot taken at start (check_start=True)."""
        problems = []
        if check and check_fds:
            if self.proc.poll() is not None:
                problems.append("smbsplice had exited before the test stopped it")
            elif self.fds0 is not None:
                leaks = self.wait_fds()
                if leaks:
                    problems.append(f"descriptors leaked (still open {self.FD_WAIT:.0f} s after every "
                                    "connection closed):\n  " + "\n  ".join(leaks))
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(self.EXIT_WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problems.append(f"smbsplice did not exit within {self.EXIT_WAIT:.0f} s of SIGTERM: killed")
        if self in Proxy.running:
            Proxy.running.remove(self)
        if self.binary:
            shutil.rmtree(os.path.dirname(self.binary), ignore_errors=True)
            self.binary = None
        Proxy.stopped.append(self)
        if not check:
            return
        rc = self.proc.returncode
        if rc != 0 and not any("did not exit" in p for p in problems):
            problems.append(f"smbsplice exited with status {rc}, not 0"
                            + (" (sanitizer exit code)" if rc == 23 else ""))
        log = self.log()
        report = sanitizer_report(log)
        if report:
            problems.insert(0, f"sanitizer report in the log of {' '.join(self.argv)}:\n{report}")
        if problems:
            if not report:
                problems.append(f"log of {' '.join(self.argv)}:\n{log}")
            raise TestFailure("\n".join(problems))

    @classmethod
    def remove_logs(cls):
        """Delete the logs of every daemon the test ran."""
        for p in cls.stopped + cls.running:
            try:
                os.unlink(p.logf.name)
            except OSError:
                pass

    @classmethod
    def stop_all(cls, check=True, dump=False):
        """Stop every daemon still running. With check, the first failed
        check raises, after all are stopped."""
        failure = None
        for p in list(cls.running):
            try:
                p.stop(check=check)
            except TestFailure as e:
                failure = failure or e
            if dump:
                log = p.log()
                report = sanitizer_report(log)
                if report:
                    print(f"--- sanitizer report of {' '.join(p.argv)}:\n{report}", flush=True)
                print(f"--- log of {' '.join(p.argv)}\n{log}", flush=True)
        if failure:
            raise failure


# The lines of a live handover (`kill -USR2`, docs: HANDOVER.md): OLD's
# when NEW has taken everything, NEW's when it starts, OLD's when it goes on.
HANDOVER_DONE_RE = r"handover: (\d+) connections to pid (\d+), forwarding paused ([\d.]+) ms"
HANDOVER_TOOK_RE = r"handover: took (\d+) connections and (\d+) listeners from pid (\d+)"
HANDOVER_FAILED_RE = r"handover failed: (.*); this process goes on forwarding$"
PR_SET_CHILD_SUBREAPER = 36
_subreaper = False


def become_subreaper():
    """Make this process the child subreaper of what it starts: a daemon
    that a handover replaced leaves its successor (its child) orphaned,
    and the successor is adopted here instead of by init, so that its
    exit status can be read. Only processes orphaned from then on are
    adopted (start Samba first: smbd, a background job of its script, is
    orphaned at start)."""
    global _subreaper
    if _subreaper:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0):
        raise TestFailure(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    _subreaper = True


def reap_orphans(names=("smbsplice", "smbd")):
    """Reap the zombies adopted here (see become_subreaper) whose command
    is one of @names and that no Proxy is following: the helpers of a
    daemon that handed over, a script's smbd. Children this process
    started itself (subprocess) are waited for by their Popen, and left."""
    if not _subreaper:
        return
    mine = {p.proc.pid for p in Proxy.running + Proxy.stopped}
    mine |= {q.pid for p in Proxy.running + Proxy.stopped for q in p.previous}
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in mine:
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] == "Z" and int(fields[1]) == me and any(comm.startswith(n) for n in names):
            try:
                os.waitpid(int(name), os.WNOHANG)
            except ChildProcessError:
                pass


class Adopted:
    """A daemon started by a handover, followed by pid: the part of
    subprocess.Popen's interface Proxy uses (pid, poll, wait, send_signal,
    kill, returncode). Its exit status can be read once it is adopted here
    (its parent, the daemon that handed over, has exited; see
    become_subreaper)."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def adopted(self):
        """Whether this process is now its parent (or it has been reaped)."""
        if self.returncode is not None:
            return True
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                stat = f.read()
        except OSError:
            return False
        return int(stat[stat.rfind(")") + 2:].split()[1]) == os.getpid()

    def poll(self):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                # Not (yet) adopted: alive while /proc has it, not a zombie.
                try:
                    with open(f"/proc/{self.pid}/stat") as f:
                        alive = f.read().rsplit(")", 1)[1].split()[0] != "Z"
                except OSError:
                    alive = False
                if not alive:
                    raise TestFailure(f"pid {self.pid} ended before it was adopted: exit status unknown")
                return None
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self):
        self.send_signal(signal.SIGKILL)


CONN_RE = re.compile(r"conn (\S+) -> (\S+) listener=(\S+) worker=(\d+) end=(\w+)(?: \((.*?)\))? dur=([\d.]+)s "
                     r"c2s=(\d+) \(splice (\d+) copy (\d+)\) s2c=(\d+) \(splice (\d+) copy (\d+)\)")

# smb mode: which streams ended in the middle of an SMB message.
MIDFRAME_RE = re.compile(r" midframe=(\S+)")


def parse_conn_line(line):
    m = CONN_RE.search(line)
    if not m:
        raise TestFailure(f"malformed connection log line: {line}")
    g = m.groups()
    mid = MIDFRAME_RE.search(line)
    return {"client": g[0], "backend": g[1], "listener": g[2], "worker": int(g[3]), "end": g[4], "why": g[5],
            "dur": float(g[6]), "c2s": int(g[7]), "c2s_splice": int(g[8]), "c2s_copy": int(g[9]),
            "s2c": int(g[10]), "s2c_splice": int(g[11]), "s2c_copy": int(g[12]),
            "midframe": mid.group(1) if mid else None}


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
