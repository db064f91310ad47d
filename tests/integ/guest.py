"""Throwaway QEMU guests for the tests that need the kernel's own SMB code:
ksmbd, the in-kernel server, and cifs, the in-kernel client, which this
host's kernel may lack. See docs/testing-guests.md.

tests/guest/build.sh builds (once, cached outside the tree) a Debian 6.1
kernel and an initramfs; Guest boots it under QEMU with a script of the
test's, as PID 1's child, and reads the guest's console for marker lines
(tests/guest/lib.sh): GUEST-READY, GUEST-SAY KEY VALUE..., and the script's
exit status on GUEST-EXIT. The guest reaches the host's 127.0.0.1 as
10.0.2.2; `fwd` maps host loopback ports to guest ports (QEMU user-mode
networking: no tap, nothing to clean up on the host).

A guest never outlives its test, by three separate means: Guest.stop_all
runs from harness.run's cleanup (the test passed, failed or hit its alarm);
QEMU is started with PR_SET_PDEATHSIG, so it is killed when the test
process dies however it dies; and the guest's init powers itself off after
`timeout` seconds (-no-reboot turns that into QEMU's exit) even when the
host has hung. Guests run one vCPU under software emulation (TCG) by
default, niced: GUEST_ACCEL=kvm for hardware KVM where it works;
GUEST_QEMU names another QEMU binary.
"""
import ctypes
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import harness
from harness import SRCDIR, TMPDIR, TestFailure

BUILD = os.path.join(SRCDIR, "tests/guest/build.sh")
USER, PASSWORD = "root", "guestpass"
PR_SET_PDEATHSIG = 1
# The kernel command line of a guest whose init is systemd (systemd.sh):
# its own target, the kernel's interface names (eth0, set up before
# systemd starts), and no status lines among the test's on the console.
SYSTEMD_APPEND = "guest.systemd=1 systemd.unit=guest.target net.ifnames=0 systemd.show_status=0"
_image = None


def image():
    """The cache directory holding vmlinux and initrd.gz, built on first
    use; skip the test (exit 77, the build's one line) where guests cannot
    run."""
    global _image
    if _image is None:
        t0 = time.monotonic()
        r = subprocess.run(["nice", "-n", "5", "bash", BUILD], capture_output=True, text=True, timeout=900)
        if r.returncode == 77:
            print(r.stdout.strip() or "SKIP: tests/guest/build.sh cannot build a guest here", flush=True)
            sys.exit(77)
        if r.returncode:
            raise TestFailure(f"{BUILD} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        _image = r.stdout.strip().splitlines()[-1]
        if "building" in r.stderr:
            print(f"note: built the guest image in {time.monotonic() - t0:.1f} s", flush=True)
    return _image


def randfill(path, size, seed):
    """Write tests/guest/randfill's SIZE bytes of SEED to `path` (None: hash
    them only); return their sha256: what a guest's `randfill SIZE SEED`
    writes, hashed natively."""
    argv = [os.path.join(image(), "randfill"), str(size), str(seed)]
    if path:
        with open(path, "wb") as f:
            subprocess.run(argv, stdout=f, check=True, timeout=120)
        return harness.file_sha256(path)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE)
    h = hashlib.sha256()
    while (b := p.stdout.read(1 << 20)):
        h.update(b)
    if p.wait(120):
        raise TestFailure(f"{' '.join(argv)} failed")
    return h.hexdigest()


class Capture:
    """dumpcap on lo, of TCP port `port`, into `path`, from construction to
    stop(): for tshark's and smbsplice-advise's view of a guest's traffic."""

    def __init__(self, path, port):
        self.path, self.log, self.port = path, path + ".log", port
        with open(self.log, "w") as log:
            self.p = subprocess.Popen(["dumpcap", "-q", "-B", "64", "-i", "lo", "-f", f"tcp port {port}", "-w", path],
                                      stdout=subprocess.DEVNULL, stderr=log)
        end = time.monotonic() + 10
        while "Capturing on" not in open(self.log).read():
            if self.p.poll() is not None or time.monotonic() > end:
                raise TestFailure(f"dumpcap did not start: {open(self.log).read()}")
            time.sleep(0.05)

    def stop(self):
        self.p.terminate()
        self.p.wait(30)
        return self.path

    def fields(self, *fields, filt="smb2"):
        """tshark's values of `fields` for each packet that matches `filt`
        (the port decoded as SMB), each a list of the field's occurrences
        (one per compound element)."""
        r = subprocess.run(["tshark", "-r", self.path, "-d", f"tcp.port=={self.port},nbss", "-Y", filt,
                            "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,",
                            *sum((["-e", f] for f in fields), [])],
                           capture_output=True, text=True, timeout=300)
        if r.returncode:
            raise TestFailure(f"tshark failed on {self.path}: {r.stderr}")
        return [[v.split(",") if v else [] for v in line.split("\t")] for line in r.stdout.splitlines()]


def tree_sums():
    """{relative path: sha256} of the tree lib.sh's make_tree makes."""
    sums, i = {}, 0
    for d in (".", "a", "a/b", "c"):
        for size in (0, 1, 4095, 70000, 300000):
            i += 1
            sums[os.path.normpath(os.path.join(d, f"f{size}"))] = randfill(None, size, i)
    return sums


def dir_sums(top):
    """{relative path: sha256} of every file under `top`."""
    return {os.path.relpath(os.path.join(d, f), top): harness.file_sha256(os.path.join(d, f))
            for d, _, fs in os.walk(top) for f in fs}


def _die_with_parent():
    """In QEMU's child before exec: SIGKILL it when the test process dies."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _cpio(files, out):
    """Write `files` ({name: text}) as an uncompressed newc cpio to `out`."""
    d = tempfile.mkdtemp(prefix="cpio-", dir=TMPDIR)
    try:
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        with open(out, "ab") as f:
            subprocess.run(["busybox", "cpio", "-o", "-H", "newc"], input="\n".join(files).encode(), cwd=d,
                           stdout=f, stderr=subprocess.DEVNULL, check=True)
    finally:
        shutil.rmtree(d)


class Guest:
    """One guest running `script` (busybox sh, with lib.sh's helpers).

    fwd: {host_port: guest_port}, on the host's 127.0.0.1. env: variables
    exported to the script. timeout: seconds the guest may live."""

    running = []
    MARK = re.compile(r"^GUEST-(READY|SAY|EXIT|DMESG)\b ?(.*)$", re.M)

    def __init__(self, script, fwd=None, env=None, timeout=240, name="guest", mem=768, systemd=False):
        img = image()
        os.makedirs(TMPDIR, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix=f"{name}-", dir=TMPDIR)
        self.console = os.path.join(self.dir, "console.log")
        self.timeout = timeout
        initrd = os.path.join(self.dir, "initrd")
        shutil.copyfile(os.path.join(img, "initrd.gz"), initrd)
        env = {"GUEST_USER": USER, "GUEST_PASS": PASSWORD, **(env or {})}
        envtext = "".join(f"export {k}='{v}'\n" for k, v in env.items())
        _cpio({"guest.sh": script, "guest.env": envtext}, initrd)
        hostfwd = "".join(f",hostfwd=tcp:127.0.0.1:{h}-:{g}" for h, g in (fwd or {}).items())
        accel = ["-enable-kvm", "-cpu", "host"] if os.environ.get("GUEST_ACCEL") == "kvm" else \
            ["-accel", "tcg", "-cpu", "max"]
        append, extra = f"console=ttyS0 quiet panic=-1 mitigations=off guest.timeout={timeout}", []
        if systemd:
            append += " " + SYSTEMD_APPEND
            extra = ["-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"]
        self.argv = ["nice", "-n", "5", os.environ.get("GUEST_QEMU", "qemu-system-x86_64"), "-nodefaults", "-no-user-config",
                     "-display", "none", "-no-reboot", *accel, "-m", str(mem), "-smp", "1",
                     "-kernel", os.path.join(img, "vmlinux"), "-initrd", initrd, "-append", append,
                     "-serial", f"file:{self.console}", *extra,
                     "-netdev", f"user,id=n0,ipv6=off{hostfwd}", "-device", "virtio-net-pci,netdev=n0,romfile="]
        self.qemu_log = open(os.path.join(self.dir, "qemu.log"), "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.qemu_log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        Guest.running.append(self)
        self.rc = None

    def text(self):
        try:
            with open(self.console, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def marks(self, kind):
        return [v for k, v in self.MARK.findall(self.text()) if k == kind]

    def said(self, key):
        """The values of every `say KEY VALUE...` so far, as lists of words."""
        return [v.split()[1:] for v in self.marks("SAY") if v.split()[:1] == [key]]

    def wait_said(self, key, timeout=120):
        """Wait for the script's `say KEY ...`; return its values (said)."""
        self._wait(lambda: self.said(key), timeout, f"`say {key}`")
        return self.said(key)

    def tail(self, n=40):
        return "\n".join(self.text().splitlines()[-n:])

    def _wait(self, cond, timeout, what):
        end = time.monotonic() + min(timeout, self.timeout)
        while not cond():
            if self.proc.poll() is not None and not cond():
                raise TestFailure(f"guest {self.dir} ended before {what} (QEMU status {self.proc.returncode}); "
                                  f"its console:\n{self.tail()}")
            if time.monotonic() > end:
                raise TestFailure(f"guest {self.dir}: no {what} after {timeout} s; its console:\n{self.tail()}")
            time.sleep(0.1)

    def wait_ready(self, timeout=120):
        """Wait for the script's `ready`; return its words."""
        self._wait(lambda: self.marks("READY") or self.marks("EXIT"), timeout, "GUEST-READY")
        if not self.marks("READY"):
            raise TestFailure(f"guest script ended before it was ready; its console:\n{self.tail()}")
        print(f"note: guest ready {time.monotonic() - self.t0:.1f} s after QEMU started", flush=True)
        return self.marks("READY")[0].split()

    def wait_exit(self, timeout=240):
        """Wait for the script to end and QEMU to exit; return the script's
        status. A kernel warning or oops the guest logged fails the test."""
        self._wait(lambda: self.marks("EXIT"), timeout, "GUEST-EXIT")
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"guest {self.dir} printed GUEST-EXIT but QEMU did not exit")
        self.rc = int(self.marks("EXIT")[-1].split()[0])
        print(f"note: guest ran {time.monotonic() - self.t0:.1f} s, boot to power-off", flush=True)
        Guest.running.remove(self)
        self.qemu_log.close()
        oops = self.marks("DMESG")
        if oops:
            raise TestFailure("the guest kernel complained:\n" + "\n".join(oops))
        return self.rc

    def run(self, timeout=240):
        """wait_exit, and fail the test unless the script exited 0."""
        rc = self.wait_exit(timeout)
        if rc:
            raise TestFailure(f"guest script exited {rc}; its console:\n{self.tail()}")
        return self

    def stop(self):
        """Kill QEMU (its process group) now; the guest is a throwaway."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self in Guest.running:
            Guest.running.remove(self)
        self.qemu_log.close()

    @classmethod
    def stop_all(cls):
        for g in list(cls.running):
            g.stop()


harness.CLEANUPS.append(Guest.stop_all)
