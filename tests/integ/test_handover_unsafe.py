"""A handover under --user refuses a binary the --user account could have
written (issue 28, item 6): the root launcher would run it as root.

smbsplice runs from a copy of the built binary in a directory the test
hands to nobody, with --user nobody. At start it warns that SIGUSR2 will
not hand over, naming the directory and what to do; SIGUSR2 then fails
in one line (`handover failed: the launcher refused to start PATH: DIR
is owned by uid 65534, not root; ...`), and the daemon forwards on: a
connection open across the refusal still echoes. The directory given
back to root, the next SIGUSR2 hands over (the launcher checks at each
request, not once), and the connection carries on in the new process.
Made group-writable, the binary is refused again by that new process's
launcher."""
import os
import pwd
import shutil
import socket

from harness import NOT_SMB, SMBSPLICE, TMPDIR, Proxy, check, run
from test_handover import echo_all
from test_scale import EchoServer

HINT = "the --user account could replace what runs as root"


def main():
    nobody = pwd.getpwnam("nobody")
    echo = EchoServer()
    work = os.path.join(TMPDIR, "bin")
    os.makedirs(work)
    os.chmod(work, 0o755)
    exe = os.path.join(work, "smbsplice")
    shutil.copy2(SMBSPLICE, exe)
    os.chmod(exe, 0o755)
    os.chown(work, nobody.pw_uid, nobody.pw_gid)

    px = Proxy(echo.addr, "--user", "nobody", *NOT_SMB, exe=exe)
    want = (f"SIGUSR2 will not hand over to {exe}: {work} is owned by uid {nobody.pw_uid}, not root; {HINT}")
    check(want in px.log(), f"at start, a warning: {want}")
    conn = socket.create_connection(("127.0.0.1", px.port), timeout=30)
    echo_all([conn], 1)

    why = px.handover_fails(why="the launcher refused")
    check(why.startswith(f"the launcher refused to start {exe}: {work} is owned by uid {nobody.pw_uid}, not root; "
                         f"{HINT}: make the binary and every directory above it owned by root"),
          f"SIGUSR2: `handover failed: {why}`")
    echo_all([conn], 2)
    check(True, "the daemon forwards on: the connection open across the refusal echoes")

    os.chown(work, 0, 0)
    d = px.handover()
    check(d["took_conns"] == 1, f"the directory root's again: the next SIGUSR2 hands over ({d})")
    echo_all([conn], 3)
    check(True, "the connection carries on in the new process")

    os.chmod(work, 0o775)
    why = px.handover_fails(why="the launcher refused")
    check(f"{work} is writable by its group (mode 0775)" in why,
          f"made group-writable, the new process's launcher refuses it: {why}")
    echo_all([conn], 4)
    os.chmod(work, 0o755)
    conn.close()
    px.stop()
    echo.close()


if __name__ == "__main__":
    run(main)
