"""--user: smbsplice binds a port below 1024 as root, then runs as nobody
(uid and gid in /proc/PID/status, no supplementary group, no capability
left in any thread, the bounding set emptied) and still serves a get from
a real Samba; with --transparent it still has no capability in any thread
(the privileged helper holds CAP_NET_ADMIN, see test_privsep.py) and
serves; a reload of a file nobody cannot read is refused in one clear
line; and a reload that needs a new port below 1024 gets it from the
helper, as root, while the running listener serves on."""
import os
import pwd
import signal
import socket
import tempfile
import time

import smbgen
from harness import NOT_SMB, TMPDIR, Proxy, Samba, Server, check, file_sha256, free_port, random_file, recv_exact, run

def low_port():
    """A free port below 1024."""
    for p in range(1000, 600, -1):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise AssertionError("no free port below 1024")


def status(pid, task=None):
    path = f"/proc/{pid}/task/{task}/status" if task else f"/proc/{pid}/status"
    with open(path) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def threads_caps(pid):
    """{task: (uid line, CapEff, CapPrm)} for every thread."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        st = status(pid, t)
        out[t] = (st["Uid"], int(st["CapEff"], 16), int(st["CapPrm"], 16))
    return out


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def main():
    nobody = pwd.getpwnam("nobody")
    smb = Samba()
    sha = random_file(os.path.join(smb.share, "f.bin"), 16)
    port = low_port()
    px = Proxy(smb.addr, "--user", "nobody", port=port)
    st = status(px.proc.pid)
    ids = f"{nobody.pw_uid}\t{nobody.pw_uid}\t{nobody.pw_uid}\t{nobody.pw_uid}"
    check(st["Uid"] == ids and st["Gid"].split()[0] == str(nobody.pw_gid),
          f"--user nobody on port {port}: uid and gid in /proc/PID/status ({st['Uid']})")
    check(st["Groups"].strip() == "", f"... no supplementary group ({st['Groups']!r})")
    check(int(st["CapBnd"], 16) == 0 and int(st["NoNewPrivs"]) == 1,
          f"... bounding set empty (CapBnd {st['CapBnd']}), no-new-privs set")
    caps = threads_caps(px.proc.pid)
    check(len(caps) >= 3 and all(u.split()[0] == str(nobody.pw_uid) and e == 0 and p == 0
                                 for u, e, p in caps.values()),
          f"... no capability left in any of its {len(caps)} threads")
    dest = os.path.join(tempfile.mkdtemp(dir=TMPDIR), "f.bin")
    smb.smbclient(port, cmd=f"get f.bin {dest}")
    check(file_sha256(dest) == sha, "... and a get through it is byte-exact")
    px.stop()

    # --transparent: still nothing in any thread; the helper holds it.
    srv = Server(echo)
    px = Proxy(srv.addr, "--user", "nobody", "--transparent", *NOT_SMB)
    c = px.connect()
    c.sendall(b"hello")
    check(recv_exact(c, 5) == b"hello", "--user nobody --transparent: served")
    c.close()
    caps = threads_caps(px.proc.pid)
    check(all(e == 0 and p == 0 for _, e, p in caps.values()),
          f"... and no capability in any thread ({sorted({hex(e) for _, e, _ in caps.values()})})")
    px.wait_log(r" end=fin ")
    px.stop()

    # A reload needing a new privileged port: refused, clearly.
    conf = os.path.join(tempfile.mkdtemp(dir=TMPDIR), "smbsplice.conf")
    other = low_port() - 1
    first = f"[global]\nuser = nobody\n[a]\nlisten = 127.0.0.1:{port}\nbackend = {srv.addr}\n"
    with open(conf, "w") as f:
        f.write(first)
    px = Proxy(None, "-c", conf, listen=False)
    with open(conf, "w") as f:
        f.write(first + f"[b]\nlisten = 127.0.0.1:{other}\nbackend = {srv.addr}\n")
    px.proc.send_signal(signal.SIGHUP)
    line = px.wait_log(r"^.*reload refused.*$")[0]
    check(f"{conf}: cannot be read: Permission denied (smbsplice has run as --user nobody since it started:" in line,
          f"reload of a file nobody cannot read: {line.strip()}")
    os.chmod(os.path.dirname(conf), 0o755)
    os.chmod(conf, 0o644)
    px.proc.send_signal(signal.SIGHUP)
    line = px.wait_log(r"^.*reload: .* read.*$")[0]
    check(" read, 2 listeners" in line, f"reload with a new port below 1024 as nobody: {line.strip()}")
    time.sleep(0.2)  # the workers take the new sockets
    px.started()  # which stop() then expects open
    for p, what in ((other, "the new listener on port {p}, bound by the helper, serves"),
                    (port, "... and the running listener serves on")):
        c = socket.create_connection(("127.0.0.1", p), timeout=10)
        hello = smbgen.hello(0).buf  # smb mode: an SMB client's first frame
        c.sendall(hello)
        check(recv_exact(c, len(hello)) == hello, what.format(p=p))
        c.close()
    px.wait_log(r" end=fin ", count=2)
    px.stop()
    srv.close()
    smb.stop()


if __name__ == "__main__":
    run(main)
