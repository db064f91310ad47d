"""The Debian package (debian/): built, linted, installed on this machine,
checked and purged, leaving the machine as it found it.

From the build tree's `make distdir` (the distributed files, so that a
file debian/ needs and EXTRA_DIST lacks fails here too), in a scratch
directory, `dpkg-buildpackage -us -uc -b` builds smbsplice,
smbsplice-advise and smbsplice-wanem and no other package (none named
wanem, TCS's WANem emulator's name), and lintian finds no error in them.
Then, twice:

- with no user smbsplice on the machine: `dpkg -i` installs all three; the
  installed smbsplice --version is this build's version and --check
  accepts the installed /etc/smbsplice/smbsplice.conf, which dpkg lists as
  a conffile; smbsplice-advise and smbsplice-wanem --version run, and
  nothing is installed as /usr/bin/wanem; the man pages, both units
  and the drop-in that makes the service run as the user smbsplice are
  there; postinst made the system user smbsplice (no login shell) and its
  group; neither unit is enabled, and none runs; the installed smbsplice,
  started as root with --user smbsplice --trace, writes a trace owned by
  that user;
- with a user smbsplice an administrator made first: postinst keeps it;

and each time `dpkg --purge` removes every file, /etc/smbsplice,
/var/lib/smbsplice and deb-systemd-helper's state of the units, and keeps
the user and group (issue 28, item 7): the trace written the first time
still belongs to the user smbsplice after the purge (a removed user would
leave it to a free uid, readable by the next account that gets it), and
/etc/passwd, group, shadow and gshadow are byte for byte what they were
before but for the lines of smbsplice. Whatever fails, the packages are
purged (and the user removed) before the test ends.

Skips (77) when not root, without dpkg-buildpackage or debhelper, in a
sanitizer build (which would build the same package again), or when a
smbsplice package, /etc/smbsplice or a user or group smbsplice is on the
machine already.
"""
import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import SANITIZED, TMPDIR, TestFailure, check, free_port, need, run

BUILDDIR = os.environ.get("BUILDDIR", os.getcwd())
# A make run by `make check` would inherit its jobserver, whose
# descriptors this process does not pass on.
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
MAKE = os.environ.get("MAKE", "make")
PACKAGES = ("smbsplice", "smbsplice-advise", "smbsplice-wanem")
ACCOUNTS = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow")
CONF = "/etc/smbsplice/smbsplice.conf"
UNITDIR = "/lib/systemd/system"
DSH = "/var/lib/systemd/deb-systemd-helper-*"
# What the package owns, and what its maintainer scripts make.
LEFTOVERS = ("/usr/bin/smbsplice", "/usr/bin/smbsplice-advise", "/usr/bin/smbsplice-wanem", "/usr/share/man/man1/smbsplice-wanem.1.gz", "/etc/smbsplice", "/var/lib/smbsplice",
             f"{UNITDIR}/smbsplice.service", f"{UNITDIR}/smbsplice.socket", f"{UNITDIR}/smbsplice.service.d",
             "/usr/share/doc/smbsplice", "/usr/share/doc/smbsplice-advise", "/usr/share/man/man8/smbsplice.8.gz",
             "/usr/share/man/man5/smbsplice.conf.5.gz", "/usr/share/man/man1/smbsplice-advise.1.gz")


def cmd(argv, timeout=120, env=None, cwd=None):
    """Run argv; fail the test with its output unless it exits 0."""
    r = subprocess.run(argv, env=env or ENV, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if r.returncode:
        raise TestFailure(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r.stdout + r.stderr


def dpkg(*args):
    """dpkg, waiting up to a minute for a lock another apt or dpkg holds."""
    end = time.monotonic() + 60
    while True:
        r = subprocess.run(["dpkg", *args], env=ENV, capture_output=True, text=True, timeout=120)
        if r.returncode == 0:
            return r.stdout + r.stderr
        if "lock" not in r.stderr or time.monotonic() > end:
            raise TestFailure(f"dpkg {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        time.sleep(1)


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", pkg], capture_output=True, text=True)
    return r.returncode == 0 and not r.stdout.endswith("not-installed")


def getent(db, name):
    r = subprocess.run(["getent", db, name], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def accounts():
    out = {}
    for path in ACCOUNTS:
        if os.path.exists(path):
            with open(path, "rb") as f:
                out[path] = f.read()
    return out


def version():
    with open(os.path.join(os.environ.get("SRCDIR", "."), "configure.ac")) as f:
        return re.search(r"AC_INIT\(\[smbsplice\], \[([^]]+)\]", f.read()).group(1)


def build(work, lint=True):
    """The packages, built from `make distdir` in work/ (and, @lint,
    linted); their paths. test_guest_systemd.py builds them so too."""
    src = os.path.join(work, "smbsplice-" + version())
    cmd([MAKE, "-C", BUILDDIR, f"distdir={src}", f"top_distdir={src}", "distdir"])
    check(os.path.isfile(os.path.join(src, "debian/rules")), "make distdir carries debian/")
    t = time.monotonic()
    # The unit tests run in `make check` already; no debug symbol packages.
    env = dict(ENV, DEB_BUILD_OPTIONS="nocheck noddebs parallel=2")
    cmd(["dpkg-buildpackage", "-us", "-uc", "-b"], timeout=600, env=env, cwd=src)
    debs = {p: glob.glob(os.path.join(work, f"{p}_*.deb")) for p in PACKAGES}
    check(all(len(d) == 1 for d in debs.values()),
          f"dpkg-buildpackage -us -uc -b built {', '.join(os.path.basename(d[0]) for d in debs.values() if d)} "
          f"in {time.monotonic() - t:.0f} s")
    built = sorted(os.path.basename(d).split("_")[0] for d in glob.glob(os.path.join(work, "*.deb")))
    check(built == sorted(PACKAGES), f"the packages built are {', '.join(PACKAGES)} and no other ({built})")
    changes = glob.glob(os.path.join(work, "*.changes"))
    if lint and shutil.which("lintian"):
        r = subprocess.run(["lintian", "--fail-on", "error", *changes], env=ENV, capture_output=True, text=True,
                           timeout=300)
        tags = [line for line in r.stdout.splitlines() if re.match(r"[EWI]: ", line)]
        check(r.returncode == 0 and not any(t.startswith("E: ") for t in tags),
              f"lintian: no error{' (' + '; '.join(tags) + ')' if tags else ''}")
    elif lint:
        print("note: no lintian (Debian package lintian): packages not linted", flush=True)
    return [d[0] for d in debs.values()]


def check_installed(ver, ours):
    """The installed packages: binaries, config, pages, units and user."""
    r = subprocess.run(["/usr/bin/smbsplice", "--version"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and r.stdout.split()[:2] == ["smbsplice", ver],
          f"installed smbsplice --version: {r.stdout.strip()}")
    r = subprocess.run(["/usr/bin/smbsplice", "--check", "-c", CONF], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and "configuration OK" in r.stdout,
          f"installed smbsplice --check -c {CONF}: {(r.stdout + r.stderr).strip()}")
    r = subprocess.run(["/usr/bin/smbsplice-advise", "--version"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and r.stdout.startswith("smbsplice-advise "),
          f"installed smbsplice-advise --version: {r.stdout.strip()}")
    r = subprocess.run(["/usr/bin/smbsplice-wanem", "--version"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and r.stdout.startswith("smbsplice-wanem "),
          f"installed smbsplice-wanem --version: {r.stdout.strip()}")
    # Not `wanem`: that name is TCS's WANem emulator's.
    check(not os.path.exists("/usr/bin/wanem"), "no package installs /usr/bin/wanem")
    conffiles = cmd(["dpkg-query", "-W", "-f", "${Conffiles}", "smbsplice"])
    check(re.search(rf"^ {re.escape(CONF)} [0-9a-f]{{32}}$", conffiles, re.M) is not None,
          f"{CONF} is a conffile")
    for path in LEFTOVERS:
        if not path.startswith("/var/lib"):
            check(os.path.exists(path), f"installed {path}")
    with open(f"{UNITDIR}/smbsplice.service") as f:
        check(f"ExecStart=/usr/bin/smbsplice -c {CONF}\n" in f.read(), f"the service runs smbsplice -c {CONF}")
    with open(f"{UNITDIR}/smbsplice.service.d/debian.conf") as f:
        dropin = f.read()
    check(re.search(r"^User=smbsplice$", dropin, re.M) and re.search(r"^Group=smbsplice$", dropin, re.M),
          "its drop-in runs it as User=smbsplice, Group=smbsplice")

    pw = pwd.getpwnam("smbsplice")
    check(pw.pw_uid < 1000 and pw.pw_shell in ("/usr/sbin/nologin", "/bin/false") and getent("group", "smbsplice"),
          f"{'postinst made' if ours else 'postinst kept'} the system user smbsplice "
          f"(uid {pw.pw_uid}, shell {pw.pw_shell}) and its group")
    check(not os.path.exists("/var/lib/smbsplice"), "postinst leaves no state in /var/lib/smbsplice")

    wants = glob.glob("/etc/systemd/system/*.wants/smbsplice.*")
    check(not wants, f"neither unit is enabled{': ' + ', '.join(wants) if wants else ''}")
    if os.path.isdir("/run/systemd/system"):
        r = subprocess.run(["systemctl", "is-active", "smbsplice.service", "smbsplice.socket"], capture_output=True,
                           text=True, timeout=30)
        check(r.stdout.split() == ["inactive", "inactive"], f"neither unit runs: {' '.join(r.stdout.split())}")
    else:
        r = subprocess.run(["pgrep", "-x", "smbsplice"], capture_output=True, text=True)
        others = [p for p in r.stdout.split() if os.path.realpath(f"/proc/{p}/exe") == "/usr/bin/smbsplice"]
        check(not others, "no /usr/bin/smbsplice runs (no systemd here to start one)")


def write_trace(work):
    """The installed smbsplice, started as root with --user smbsplice
    --trace, as an administrator would: the path of the trace it wrote,
    owned by that user."""
    d = tempfile.mkdtemp(prefix="trace-", dir=work)
    pw = pwd.getpwnam("smbsplice")
    os.chown(d, pw.pw_uid, pw.pw_gid)
    os.chmod(work, 0o755)
    trace = os.path.join(d, "smb.pcap")
    with open(os.path.join(work, "trace.log"), "w") as log:
        p = subprocess.Popen(["/usr/bin/smbsplice", "--listen", f"127.0.0.1:{free_port()}", "--backend",
                              "127.0.0.1:9", "--user", "smbsplice", "--trace", trace], stdout=log, stderr=log)
    try:
        end = time.monotonic() + 10
        while not os.path.exists(trace) and p.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
    with open(os.path.join(work, "trace.log")) as f:
        log = f.read()
    check(os.path.exists(trace) and os.stat(trace).st_uid == pw.pw_uid,
          f"/usr/bin/smbsplice --user smbsplice --trace wrote {trace}, owned by smbsplice (uid {pw.pw_uid})"
          f"{'' if os.path.exists(trace) else ': ' + log}")
    return trace


def check_purged(before, trace=None):
    for p in PACKAGES:
        check(not installed(p), f"dpkg --purge: {p} is gone")
    left = [p for p in LEFTOVERS if os.path.lexists(p)] + glob.glob(f"{DSH}/*smbsplice*")
    check(not left, f"... with every file and deb-systemd-helper's state{': left ' + ', '.join(left) if left else ''}")
    check(getent("passwd", "smbsplice") and getent("group", "smbsplice"), "... and the user and group smbsplice kept")
    if trace:
        uid = os.stat(trace).st_uid
        try:
            owner = pwd.getpwuid(uid).pw_name
        except KeyError:
            owner = None
        check(owner == "smbsplice",
              f"... so the trace it wrote still belongs to the user smbsplice, not to a free uid ({uid}: {owner})")
    changed = []
    for p, text in accounts().items():
        was = before.get(p, b"").splitlines()
        now = text.splitlines()
        if [l for l in was if l not in now] or [l for l in now if l not in was and not l.startswith(b"smbsplice:")]:
            changed.append(p)
    check(not changed, f"... {', '.join(ACCOUNTS)} are as they were, but for smbsplice's lines"
          f"{': not ' + ', '.join(changed) if changed else ''}")


def install_and_purge(debs, ver, ours, work):
    before = accounts()
    trace = None
    try:
        dpkg("-i", *debs)
        check(all(installed(p) for p in PACKAGES), f"dpkg -i installed {', '.join(PACKAGES)}")
        check_installed(ver, ours)
        if ours:
            trace = write_trace(work)
    finally:
        if any(installed(p) for p in PACKAGES):
            dpkg("--purge", *PACKAGES)
    check_purged(before, trace)


def remove_user():
    """Take away the user, group and record smbsplice, which were not on
    the machine when the test began."""
    if getent("passwd", "smbsplice"):
        subprocess.run(["deluser", "--quiet", "--system", "smbsplice"], capture_output=True)
    if getent("group", "smbsplice"):
        subprocess.run(["delgroup", "--quiet", "--system", "smbsplice"], capture_output=True)
    shutil.rmtree("/var/lib/smbsplice", ignore_errors=True)


def main():
    if os.geteuid() != 0:
        print("SKIP: installs a package: needs root", flush=True)
        sys.exit(77)
    need("dpkg-buildpackage", "dpkg-dev")
    need("dh", "debhelper")
    need("adduser", "adduser")
    if SANITIZED:
        print("SKIP: a sanitizer build: the package builds with its own flags, and the first pass built it",
              flush=True)
        sys.exit(77)
    there = [p for p in PACKAGES if installed(p)] + [p for p in ("/etc/smbsplice", "/var/lib/smbsplice")
                                                     if os.path.lexists(p)]
    there += [f"{db} smbsplice" for db in ("passwd", "group") if getent(db, "smbsplice")]
    if there:
        print(f"SKIP: this machine has {', '.join(there)} already: the test would change it", flush=True)
        sys.exit(77)

    os.makedirs(TMPDIR, exist_ok=True)
    work = tempfile.mkdtemp(prefix="package-", dir=TMPDIR)
    debs = build(work)
    ver = version()
    try:
        install_and_purge(debs, ver, ours=True, work=work)
    finally:
        remove_user()  # a postinst or postrm that went wrong left it

    # An administrator's user smbsplice, made before the package: kept.
    before = accounts()
    cmd(["adduser", "--quiet", "--system", "--group", "--no-create-home", "--home", "/nonexistent", "smbsplice"])
    try:
        install_and_purge(debs, ver, ours=False, work=work)
    finally:
        remove_user()
    changed = [p for p, text in accounts().items() if before.get(p) != text]
    check(not changed, f"the administrator's user removed again: {', '.join(ACCOUNTS)} as they were"
          f"{': not ' + ', '.join(changed) if changed else ''}")
    shutil.rmtree(work)


if __name__ == "__main__":
    run(main, alarm=400)
