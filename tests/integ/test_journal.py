"""The log under journald, without journald: standard error is "journald's
stream" when JOURNAL_STREAM names its device and inode, and journald's
native socket is a datagram socket of the test's own, bind-mounted at
/run/systemd/journal/socket in a mount namespace that only smbsplice
sees (the path is the real one: no knob for tests).

- Socket there: each record is one datagram of the native protocol,
  MESSAGE, PRIORITY (4 for a warning, 6 for info) and SYSLOG_IDENTIFIER;
  a connection's end line adds SMBSPLICE_CONN (its number, as `smbsplice
  ctl conns` shows it), SMBSPLICE_CLIENT, SMBSPLICE_LISTENER and
  SMBSPLICE_END, which `journalctl SMBSPLICE_CLIENT=...` selects by; none
  of those lines is also on standard error.
- Socket gone while smbsplice runs (journald stopped): the lines that
  cannot be sent are written to standard error with their "<N>" priority,
  not lost.
- No socket at all: every line on standard error with its priority ("<4>"
  for a warning, which journald's stream keeps as PRIORITY); the same
  variable with standard error redirected elsewhere (a child that
  inherited it): plain lines, and the socket is not used.
- --syslog: lines to syslog (a socket of the test's at /dev/log) at their
  priority, not to journald's socket."""
import os
import re
import signal
import socket
import struct
import subprocess
import tempfile
import time

import smbgen
from harness import SMBSPLICE, TMPDIR, Server, check, free_port, need, recv_exact, run, wait_for

# In a private mount namespace: an empty /run, and the test's socket (if
# any, $1) where journald's would be; a /dev with /dev/null and, if $2
# names one, the test's socket as /dev/log (syslog's); then smbsplice.
NS_SCRIPT = """set -e
mount -t tmpfs -o size=1m,mode=755 tmpfs /run
mkdir -p /run/systemd/journal
if [ -n "$1" ]; then
    touch /run/systemd/journal/socket
    mount --bind "$1" /run/systemd/journal/socket
fi
if [ -n "$2" ]; then
    mkdir /run/hostdev
    mount --rbind /dev /run/hostdev
    mount -t tmpfs -o size=1m,mode=755 tmpfs /dev
    touch /dev/null /dev/log
    mount --bind /run/hostdev/null /dev/null
    mount --bind "$2" /dev/log
fi
shift 2
exec "$@"
"""


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def parse_record(data):
    """One datagram of journald's native protocol as {FIELD: value}: lines
    NAME=value, or NAME, a newline, a 64-bit little-endian length, the
    value and a newline (a value holding a newline)."""
    fields, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            name, value = line.split(b"=", 1)
            i = nl + 1
        else:
            name, (n,) = line, struct.unpack_from("<Q", data, nl + 1)
            value = data[nl + 9:nl + 9 + n]
            check(data[nl + 9 + n:nl + 10 + n] == b"\n", f"binary field {name!r} ends with a newline")
            i = nl + 10 + n
        fields[name.decode()] = value.decode()
    return fields


class FakeJournal:
    """A datagram socket that stands in for journald's native one."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="journal-", dir=TMPDIR)
        self.path = os.path.join(self.dir, "socket")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.records = []

    def read(self):
        """Take the datagrams waiting; return every record so far."""
        self.sock.setblocking(False)
        try:
            while True:
                self.records.append(parse_record(self.sock.recv(1 << 16)))
        except BlockingIOError:
            pass
        return self.records

    def wait(self, what, fn):
        """Wait (bounded) for a record fn() accepts; return it."""
        wait_for(what, lambda: any(fn(r) for r in self.read()))
        return next(r for r in self.records if fn(r))

    def close(self):
        self.sock.close()


def start(sock_path, stderr_file, args, journal=True, syslog_path=None):
    """smbsplice in a mount namespace with @sock_path (or nothing) at
    journald's socket path, and @syslog_path (or nothing) at syslog's;
    standard error to @stderr_file, and JOURNAL_STREAM naming it (or,
    @journal false, another file)."""
    st = os.fstat(stderr_file.fileno()) if journal else os.stat("/dev/null")
    env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", NS_SCRIPT, "sh", sock_path or "",
            syslog_path or "", SMBSPLICE, *args]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr_file, env=env)


def stop(p):
    p.terminate()
    check(p.wait(timeout=30) == 0, "smbsplice exits 0 on SIGTERM")


def session(port):
    """A client whose first frame goes through and back; return its
    address as smbsplice names it."""
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    hello = smbgen.hello(0).buf
    c.sendall(hello)
    check(recv_exact(c, len(hello)) == hello, "a client is served")
    name = "%s:%d" % c.getsockname()
    c.close()
    return name


def native():
    """The socket there, then gone."""
    srv = Server(echo)
    j = FakeJournal()
    port = free_port()
    with tempfile.NamedTemporaryFile("w+", dir=TMPDIR, suffix=".log") as f:
        p = start(j.path, f, ["-l", f"127.0.0.1:{port}", "-b", srv.addr, "--first-frame", "any"])
        try:
            info = j.wait("the listening line in the journal", lambda r: "listening on" in r.get("MESSAGE", ""))
            check(info.get("PRIORITY") == "6" and info.get("SYSLOG_IDENTIFIER") == "smbsplice" and
                  info["MESSAGE"].startswith("listener "),
                  f"an info line: PRIORITY=6, SYSLOG_IDENTIFIER=smbsplice, the bare message: {info}")
            clients = [session(port), session(port)]
            ends = [j.wait(f"the end line of {cli}", lambda r, cli=cli: r.get("SMBSPLICE_CLIENT") == cli)
                    for cli in clients]
            for n, (cli, end) in enumerate(zip(clients, ends), 1):
                listener = re.search(r" listener=(\S+) ", end.get("MESSAGE", ""))
                check(end.get("MESSAGE", "").startswith(f"conn {cli} -> {srv.addr} ") and
                      " end=fin " in end["MESSAGE"] and end.get("SMBSPLICE_END") == "fin" and
                      end.get("SMBSPLICE_CONN") == str(n) and listener and
                      end.get("SMBSPLICE_LISTENER") == listener.group(1) and end.get("PRIORITY") == "6",
                      f"connection {n}'s end line has its fields: {end}")
            p.send_signal(signal.SIGHUP)  # no config file: a warning
            warn = j.wait("the reload's warning", lambda r: "nothing to reload" in r.get("MESSAGE", ""))
            check(warn.get("PRIORITY") == "4" and "SMBSPLICE_CONN" not in warn,
                  f"a warning: PRIORITY=4, and no connection's fields: {warn}")
            time.sleep(0.3)  # a line that went both ways would be on stderr by now
            text = open(f.name).read()
            check("nothing to reload" not in text and "listening on" not in text and " end=fin " not in text,
                  f"... and none of those lines is on standard error too: {text!r}")

            # journald goes away: what cannot be sent goes to stderr.
            j.close()
            p.send_signal(signal.SIGHUP)
            wait_for("the warning on standard error", lambda: "nothing to reload" in open(f.name).read())
            lines = open(f.name).read().splitlines()
            check(any(ln.startswith("<4>smbsplice: warning: ") and "nothing to reload" in ln for ln in lines),
                  f"the socket gone: the warning on standard error with its priority: {lines}")
            cli = session(port)
            wait_for("the end line on standard error", lambda: f"conn {cli} " in open(f.name).read())
            check(any(ln.startswith(f"<6>smbsplice: info: conn {cli} ") for ln in open(f.name).read().splitlines()),
                  "... and a connection's end line too")
        finally:
            if p.poll() is None:
                stop(p)
    srv.close()


def stream_only():
    """No socket: priorities on standard error, for journald's stream; and
    plain lines when standard error is not journald's."""
    for journal in (True, False):
        with tempfile.NamedTemporaryFile("w+", dir=TMPDIR, suffix=".log") as f:
            p = start(None, f, ["-l", f"127.0.0.1:{free_port()}", "-b", "127.0.0.1:9", "--first-frame", "any"],
                      journal)
            try:
                wait_for("smbsplice listening", lambda: "listening on" in open(f.name).read())
                p.send_signal(signal.SIGHUP)  # no config file: a warning
                wait_for("the reload's warning", lambda: "nothing to reload" in open(f.name).read())
            finally:
                stop(p)
            lines = open(f.name).read().splitlines()
        warn = [ln for ln in lines if "nothing to reload" in ln]
        info = [ln for ln in lines if "listening on" in ln]
        if journal:
            check(warn and warn[0].startswith("<4>smbsplice: warning: ") and info and
                  info[0].startswith("<6>smbsplice: info: ") and all(re.match(r"<[3-7]>smbsplice: ", ln) for ln in lines),
                  f"no native socket: every line on standard error with its priority ({warn[:1]}, {info[:1]})")
        else:
            check(warn and warn[0].startswith("smbsplice: warning: ") and not any(ln.startswith("<") for ln in lines),
                  f"JOURNAL_STREAM naming another stream: plain lines ({warn[:1]})")


def not_ours():
    """JOURNAL_STREAM naming another stream: the socket is not used, even
    when it is there (a program run by hand keeps its terminal)."""
    j = FakeJournal()
    with tempfile.NamedTemporaryFile("w+", dir=TMPDIR, suffix=".log") as f:
        p = start(j.path, f, ["-l", f"127.0.0.1:{free_port()}", "-b", "127.0.0.1:9", "--first-frame", "any"],
                  journal=False)
        try:
            wait_for("smbsplice listening", lambda: "listening on" in open(f.name).read())
        finally:
            stop(p)
    check(not j.read(), "standard error not journald's: nothing sent to the journal socket")
    j.close()


def to_syslog():
    """--syslog: each line to syslog at its level's priority, with the
    program's name and pid, the message without the level word; nothing
    to journald's socket or standard error, even under journald."""
    j, log = FakeJournal(), FakeJournal()
    got = []

    def logged(what):
        log.sock.setblocking(False)
        try:
            while True:
                got.append(log.sock.recv(4096).decode())
        except BlockingIOError:
            pass
        return next((g for g in got if what in g), None)

    with tempfile.NamedTemporaryFile("w+", dir=TMPDIR, suffix=".log") as f:
        p = start(j.path, f, ["--syslog", "-l", f"127.0.0.1:{free_port()}", "-b", "127.0.0.1:9", "--first-frame",
                              "any"], syslog_path=log.path)
        try:
            wait_for("the listening line in syslog", lambda: logged("listening on"))
            p.send_signal(signal.SIGHUP)
            wait_for("the reload's warning in syslog", lambda: logged("nothing to reload"))
        finally:
            stop(p)
        text = open(f.name).read()
    # <PRI> is facility daemon (3) * 8 + the priority.
    warn, info = logged("nothing to reload"), logged("listening on")
    check(re.match(rf"<28>.* smbsplice\[{p.pid}\]: signal 1: nothing to reload", warn) and
          re.match(rf"<30>.* smbsplice\[{p.pid}\]: listener main: listening on", info),
          f"syslog: a warning at daemon.warning, info at daemon.info, the bare message: {warn!r} {info!r}")
    check(not j.read() and "nothing to reload" not in text, "... and nothing to journald's socket or standard error")
    j.close()
    log.close()


def main():
    need("unshare", "util-linux")
    native()
    stream_only()
    not_ours()
    to_syslog()


if __name__ == "__main__":
    run(main)
