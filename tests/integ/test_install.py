"""make install DESTDIR=...: from the build tree (BUILDDIR, set by `make
check`), into a scratch directory. Checks that it installs the binary and
smbsplice-advise, the three man pages (which groff renders without a
warning), the two systemd units (the service naming this build's binary
and config file) and the example config, which the installed smbsplice
--check accepts; that it leaves a smbsplice.conf already there alone; that
systemd-analyze, when there is one, verifies the units and rates the
service "OK" or better; and that make uninstall takes every file away
again."""
import os
import re
import shutil
import subprocess
import tempfile

from harness import TMPDIR, TestFailure, check, run

BUILDDIR = os.environ.get("BUILDDIR", os.getcwd())
# A make run by `make check` would inherit its jobserver, whose
# descriptors this process does not pass on.
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
MAKE = os.environ.get("MAKE", "make")


def make(*args, timeout=120, stdin=None):
    r = subprocess.run([MAKE, "-C", BUILDDIR, *args], env=ENV, input=stdin, capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode:
        raise TestFailure(f"make {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def build_dirs():
    """The build's installation directories, from its Makefile."""
    names = ("bindir", "sysconfdir", "mandir", "systemdsystemunitdir")
    rule = "print-dirs:\n" + "".join(f"\t@echo '{n}=$({n})'\n" for n in names)
    out = make("-s", "--no-print-directory", "-f", "Makefile", "-f", "-", "print-dirs", stdin=rule)
    dirs = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    for n in names:
        if n == "systemdsystemunitdir" and not dirs.get(n):
            continue  # configure --with-systemdsystemunitdir=no
        if not dirs.get(n, "").startswith("/"):
            raise TestFailure(f"the Makefile's {n} is {dirs.get(n)!r}, not an absolute path")
    return dirs


def groff_check(path):
    """The page renders with groff -man without a warning."""
    if not shutil.which("groff"):
        with open(path) as f:
            head = f.read(4096)
        check(re.search(r'^\.TH "?smbsplice', head, re.M) is not None, f"{path} has a .TH header (no groff)")
        return
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and not r.stderr.strip(), f"groff -man -ww renders {os.path.basename(path)} "
          f"without a warning{': ' + r.stderr.strip() if r.stderr.strip() else ''}")
    r = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", path], capture_output=True, text=True, timeout=30)
    left = sorted(set(re.findall(r"@\w+@", r.stdout)))
    check("SYNOPSIS" in r.stdout and not left, f"{os.path.basename(path)} has a SYNOPSIS and no unsubstituted "
          f"@name@{': ' + ', '.join(left) if left else ''}")


def systemd_checks(dest, d, service, socket_unit):
    """systemd-analyze verify on the units (the service's ExecStart pointed
    into DESTDIR, man pages looked up there) and its security rating."""
    if not shutil.which("systemd-analyze"):
        print("note: no systemd-analyze (Debian package systemd): units not verified", flush=True)
        return
    scratch = tempfile.mkdtemp(prefix="units-", dir=TMPDIR)
    with open(service) as f:
        text = f.read().replace(f"{d['bindir']}/smbsplice", f"{dest}{d['bindir']}/smbsplice")
    with open(os.path.join(scratch, "smbsplice.service"), "w") as f:
        f.write(text)
    shutil.copy(socket_unit, scratch)
    env = dict(ENV, MANPATH=dest + d["mandir"])
    r = subprocess.run(["systemd-analyze", "verify", "smbsplice.socket", "smbsplice.service"], cwd=scratch,
                       env=env, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and not r.stderr.strip(),
          f"systemd-analyze verify passes both units{': ' + r.stderr.strip() if r.stderr.strip() else ''}")
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "smbsplice.service"], cwd=scratch, env=env,
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for smbsplice\.service: (\d+\.\d+) (\w+)", r.stdout)
    check(m is not None and m.group(2) in ("OK", "SAFE", "PERFECT"),
          f"systemd-analyze security rates the service {m.group(1) + ' ' + m.group(2) if m else r.stdout[-300:]}")
    shutil.rmtree(scratch)


def check_units(service, socket_unit, d):
    """The installed units name this build's paths."""
    with open(service) as f:
        unit = f.read()
    want = f"ExecStart={d['bindir']}/smbsplice -c {d['sysconfdir']}/smbsplice.conf"
    check(re.search(rf"^{re.escape(want)}$", unit, re.M) is not None, f"the service has {want}")
    left = sorted(set(re.findall(r"@\w+@", unit)))
    check(not left, f"the service has no unsubstituted @name@{': ' + ', '.join(left) if left else ''}")
    check(re.search(r"^Type=notify$", unit, re.M) and re.search(r"^ExecReload=/bin/kill -HUP \$MAINPID$", unit, re.M),
          "the service is Type=notify and reloads with SIGHUP")
    with open(socket_unit) as f:
        sock = f.read()
    check(re.search(r"^ListenStream=", sock, re.M) and re.search(r"^Service=smbsplice\.service$", sock, re.M),
          "the socket unit listens and names smbsplice.service")



def main():
    check(os.path.exists(os.path.join(BUILDDIR, "Makefile")), f"build tree {BUILDDIR}")
    d = build_dirs()
    os.makedirs(TMPDIR, exist_ok=True)
    dest = tempfile.mkdtemp(prefix="install-", dir=TMPDIR)
    # A real configuration, which make install must leave as it is.
    conf = dest + d["sysconfdir"] + "/smbsplice.conf"
    os.makedirs(os.path.dirname(conf))
    mine = "# the administrator's own\n[files]\nlisten = 127.0.0.1:1445\nbackend = 127.0.0.1:2445\n"
    with open(conf, "w") as f:
        f.write(mine)

    make("install", f"DESTDIR={dest}", timeout=180)
    binary = dest + d["bindir"] + "/smbsplice"
    man8 = dest + d["mandir"] + "/man8/smbsplice.8"
    man5 = dest + d["mandir"] + "/man5/smbsplice.conf.5"
    advise = dest + d["bindir"] + "/smbsplice-advise"
    man1 = dest + d["mandir"] + "/man1/smbsplice-advise.1"
    wanem = dest + d["bindir"] + "/smbsplice-wanem"
    man1_wanem = dest + d["mandir"] + "/man1/smbsplice-wanem.1"
    units = bool(d["systemdsystemunitdir"])
    service = dest + d["systemdsystemunitdir"] + "/smbsplice.service"
    socket_unit = dest + d["systemdsystemunitdir"] + "/smbsplice.socket"
    example = dest + d["sysconfdir"] + "/smbsplice.conf.example"
    for path in (binary, man8, man5, advise, man1, wanem, man1_wanem, example) + ((service, socket_unit) if units else ()):
        check(os.path.isfile(path), f"installed {path[len(dest):]}")
    # The emulator is smbsplice-wanem: a bare `wanem` would collide with
    # TCS's WANem emulator.
    for path in (dest + d["bindir"] + "/wanem", dest + d["mandir"] + "/man1/wanem.1"):
        check(not os.path.exists(path), f"nothing installed as {path[len(dest):]}")
    check(os.access(binary, os.X_OK), "the binary is executable")
    r = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and r.stdout.startswith("smbsplice "), f"installed smbsplice --version: {r.stdout.strip()}")

    r = subprocess.run([advise, "--version"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and r.stdout.startswith("smbsplice-advise "),
          f"installed smbsplice-advise --version: {r.stdout.strip()}")

    r = subprocess.run([wanem, "--version"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and r.stdout.startswith("smbsplice-wanem "),
          f"installed smbsplice-wanem --version: {r.stdout.strip()}")

    for page in (man8, man5, man1, man1_wanem):
        groff_check(page)

    if units:
        check_units(service, socket_unit, d)
    else:
        print("note: configured --with-systemdsystemunitdir=no: no units to check", flush=True)

    with open(conf) as f:
        check(f.read() == mine, "make install left the existing smbsplice.conf alone")
    r = subprocess.run([binary, "--check", "-c", example], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and "configuration OK" in r.stdout,
          f"the installed smbsplice --check accepts the installed example: {(r.stdout + r.stderr).strip()}")

    if units:
        systemd_checks(dest, d, service, socket_unit)

    make("uninstall", f"DESTDIR={dest}")
    left = sorted(os.path.join(root, n)[len(dest):] for root, _, files in os.walk(dest) for n in files)
    check(left == [d["sysconfdir"] + "/smbsplice.conf"], f"make uninstall removes what make install put there "
          f"(left: {', '.join(left)})")
    shutil.rmtree(dest)


if __name__ == "__main__":
    run(main, alarm=300)
