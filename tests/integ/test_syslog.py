"""--syslog: the log goes to syslog while something takes lines on
/dev/log; when nothing does, one line on standard error says so and why,
and the log stays there, so that a start that fails still says why
(syslog(3) alone drops every line without a word). SIGUSR1 looks at
/dev/log again: a syslog gone sends the log back to standard error, with a
line; one that answers again takes it back.

smbsplice runs in a mount namespace of its own (unshare -m) whose /dev is
an empty tmpfs; /dev/log in it is either missing or a symbolic link to a
Unix datagram socket the test binds, closes and binds again, standing in
for syslogd."""
import os
import signal
import socket
import subprocess
import time

from harness import SMBSPLICE, TMPDIR, check, free_port, run, sanitizer_report

# Hide the host's /dev (and its /dev/log); with $0 set, /dev/log names it.
HIDE_DEV = ('mount --make-rprivate / && mount -t tmpfs -o mode=755 smbsplice-test /dev && '
            '{ [ -z "$0" ] || ln -s "$0" /dev/log; } && exec "$@"')


def in_ns(sock_path, *args, **kw):
    """smbsplice with @args in a mount namespace where /dev/log is missing
    (@sock_path empty) or links to @sock_path."""
    return subprocess.Popen(["unshare", "-m", "sh", "-c", HIDE_DEV, sock_path, SMBSPLICE, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)


def fake_syslog(path):
    """A datagram socket at @path, as syslogd's /dev/log."""
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(10)
    return s


def syslog_until(s, needle):
    """The messages @s receives up to and with the first holding @needle
    (10 s at most between two)."""
    got = []
    while not got or needle not in got[-1]:
        got.append(s.recv(4096).decode(errors="replace"))
    return got


def stderr_until(p, needle, timeout=10):
    """Lines of @p's standard error up to one holding @needle."""
    lines = []
    end = time.monotonic() + timeout
    os.set_blocking(p.stderr.fileno(), False)
    while time.monotonic() < end and not any(needle in l for l in lines):
        line = p.stderr.readline()
        if line:
            lines.append(line.rstrip("\n"))
        else:
            time.sleep(0.05)
    return lines


def failed_start():
    """No /dev/log: a start that fails (its address in use) says why on
    standard error, after the line saying syslog is unavailable."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    p = in_ns("", "--syslog", "-l", f"127.0.0.1:{busy.getsockname()[1]}", "-b", "127.0.0.1:2")
    _, err = p.communicate(timeout=30)
    busy.close()
    lines = err.splitlines()
    check(p.returncode == 1 and len(lines) == 2 and
          lines[0] == "smbsplice: warning: syslog is unavailable (/dev/log: No such file or directory): "
                      "the log goes to standard error; SIGUSR1 looks again" and
          "cannot listen" in lines[1] and "in use" in lines[1],
          f"--syslog, no /dev/log, address in use: exit {p.returncode}, {lines}")


def syslog_comes_and_goes():
    """A syslog that answers gets the log; gone, SIGUSR1 sends the log to
    standard error with a line; back, SIGUSR1 sends it to syslog again."""
    path = os.path.join(TMPDIR, "log.sock")
    log = fake_syslog(path)
    port = free_port()
    p = in_ns(path, "--syslog", "-l", f"127.0.0.1:{port}", "-b", "127.0.0.1:2")
    try:
        got = syslog_until(log, "listening on")
        check(any(f"listening on 127.0.0.1:{port}" in m and "smbsplice[" in m for m in got),
              f"syslog answers: the start is logged there ({len(got)} messages)")
        log.close()  # syslogd stops: /dev/log refuses
        p.send_signal(signal.SIGUSR1)
        lines = stderr_until(p, "syslog is unavailable")
        check(any("syslog is unavailable (/dev/log: Connection refused): the log goes to standard error" in l
                  for l in lines), f"gone, SIGUSR1: said on standard error: {lines}")
        log = fake_syslog(path)
        p.send_signal(signal.SIGUSR1)
        got = syslog_until(log, "syslog answers")
        check("syslog answers on /dev/log again" in got[-1], f"back, SIGUSR1: said in syslog: {got[-1]}")
        p.send_signal(signal.SIGTERM)
        got = syslog_until(log, "stopped after")
        check(p.wait(30) == 0, "... and the stop is logged there, exit 0")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
    err = p.stderr.read()
    report = sanitizer_report(err)
    check(not report, f"no sanitizer report{': ' + report if report else ''}")


def main():
    failed_start()
    syslog_comes_and_goes()


if __name__ == "__main__":
    run(main)
