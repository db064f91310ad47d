"""cifs reconnects through smbsplice: a QEMU guest (tests/integ/guest.py)
copies a 48 MiB file to the host's Samba over a cifs mount (hard), and,
mid-copy, the connection is dropped at once: through smbsplice by killing
smbsplice (SIGKILL, as in a crash) and starting it again on the same port;
directly, for comparison, by killing the smbd process that serves it. The
kernel client must reconnect (through the new smbsplice), reopen the file
the copy holds open, and finish the copy: Samba's file byte-exact, the
writer's status 0, and a file copied after the reconnect byte-exact too.

The drop comes at a known point: the writer has written and synced the
first half and waits, its file still open, for the host to say go (a file
the host creates in the share, which the guest's next stat finds over the
new connection). A drop in the middle of sending a WRITE is another matter,
the same directly: the 6.1 client fails that write() with ECONNABORTED
("Error -32 sending data on socket") and leaves its range unwritten, which
a test cannot tell from smbsplice's fault without a reference to compare
byte for byte; it is documented in docs/testing-guests.md."""
import os
import re
import signal
import subprocess
import time

from guest import Guest, randfill
from harness import Proxy, Samba, TestFailure, check, file_sha256, need, run

SIZE = 48 << 20

SCRIPT = """
randfill $SIZE 11 >/tmp/g.bin
cifs_mount //10.0.2.2/share /mnt "port=$PORT,vers=3.1.1,hard,echo_interval=1" || exit 1
exec 3>&1
{
	head -c $((SIZE / 2)) /tmp/g.bin
	sync
	say half >&3
	while [ ! -e /mnt/go-$NAME ]; do sleep 0.2; done
	tail -c +$((SIZE / 2 + 1)) /tmp/g.bin
} >/mnt/$NAME
say dd $?
sync
say copied
head -c 4194304 /tmp/g.bin >/mnt/after-$NAME; say after $?
drop_caches
say readback $(sha256sum /mnt/$NAME | cut -d' ' -f1)
umount /mnt
"""


def smbd_serving(port):
    """The pid of the smbd that serves the one connection to `port`."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True).stdout
    pids = set(re.findall(r'"smbd",pid=(\d+)', out))
    if len(pids) != 1:
        raise TestFailure(f"not one smbd serving port {port}: {out}")
    return int(pids.pop())


def copy_with_drop(smb, port, name, drop):
    """Boot a guest that copies to `name` through `port`; call drop() when
    its writer has synced half and waits; return the seconds from the drop
    to the guest's end."""
    want = randfill(None, SIZE, 11)
    want_after = randfill(None, 4 << 20, 11)
    g = Guest(SCRIPT, name="reconnect", env={"GUEST_USER": "root", "GUEST_PASS": Samba.password,
                                              "SIZE": SIZE, "PORT": port, "NAME": name})
    path = os.path.join(smb.share, name)
    end = time.monotonic() + 120
    while not g.said("half"):
        if time.monotonic() > end or g.proc.poll() is not None:
            raise TestFailure(f"the guest did not copy half its file:\n{g.tail()}")
        time.sleep(0.02)
    done = os.path.getsize(path)
    drop()
    t = time.monotonic()
    open(os.path.join(smb.share, f"go-{name}"), "w").close()
    check(done == SIZE // 2 and not g.said("dd"),
          f"{name}: connection dropped mid-copy ({done} of {SIZE} bytes in Samba's file, the writer waiting)")
    g.run(timeout=180)
    took = time.monotonic() - t
    check(g.said("dd") == [["0"]] and file_sha256(path) == want,
          f"{name}: the copy completed after cifs reconnected ({took:.1f} s), writer status 0, byte-exact")
    check(g.said("readback") == [[want]], f"{name}: the guest reads the file back byte-exact")
    check(file_sha256(os.path.join(smb.share, f"after-{name}")) == want_after,
          f"{name}: a copy made after the reconnect is byte-exact")
    return took


def main():
    need("smbd", "samba")
    need("ss", "iproute2")
    smb = Samba()
    px = Proxy(smb.addr)
    restarted = []

    def crash_and_restart():
        px.proc.kill()
        px.proc.wait()
        px.stop(check=False)
        restarted.append(Proxy(smb.addr, port=px.port))

    took_px = copy_with_drop(smb, px.port, "px.bin", crash_and_restart)
    # (cifs may try more than once while smbsplice starts again)
    sent = sum(c["c2s"] for c in restarted[0].conn_lines())
    check(sent > SIZE // 2, f"cifs reconnected through the new smbsplice and sent the second half through it "
          f"({sent} bytes to Samba, {len(restarted[0].conn_lines())} connections)")
    restarted[0].stop()
    took_direct = copy_with_drop(smb, smb.port, "direct.bin",
                                            lambda: os.kill(smbd_serving(smb.port), signal.SIGKILL))
    print(f"note: the guest ended {took_px:.1f} s after the drop through smbsplice, {took_direct:.1f} s "
          "directly", flush=True)
    smb.stop()


if __name__ == "__main__":
    run(main)
