"""`ctl conns` joined with smbstatus (issue 31): for live sessions through
smbsplice, a record's session_id and backend_port find exactly one
session in `smbstatus --json` (its session_id, and the port in its
hostname), and that session has the user and the share the record names.

- smbclient, kept open by a pipe after a listing: user and share, by
  SPNEGO-wrapped NTLMSSP; the text table and `conn ID` say the same.
- a minimal client (smb2client.py, raw NTLMSSP, names after the NT
  response) that holds two files open and closes one: open_files 1.
- an encrypted smbclient session: it still joins by SessionId and port,
  and what it sealed reads "encrypted".
- a live handover (SIGUSR2) carries the view: the new process shows the
  same session, user, share and open file, and counts the files opened
  after it.
- --transparent, on loopback (no namespaces needed: 127.0.0.2 is this
  host's, so a backend socket bound to it gets smbd's replies): a client
  from 127.0.0.2 joins smbstatus's session whose hostname is
  ipv4:127.0.0.2:PORT, PORT still the backend port, and the record says
  "transparent": true (the text table marks the port with "t").
- `kill user` resets the connections of that user's sessions alone:
  not one whose session setup has not come, nor another user's name,
  and both "NAME" and "DOMAIN\\NAME" (any case) name it.
- none of the names reaches the log.
"""
import json
import os
import subprocess
import time

from harness import SMBSPLICE, Proxy, Samba, TMPDIR, TestFailure, check, need, run
from smb2client import Smb2Client


def ctl(path, *args):
    """`smbsplice ctl --control PATH ARGS`: its standard output."""
    r = subprocess.run([SMBSPLICE, "ctl", "--control", path, *args], capture_output=True, text=True, timeout=30)
    if r.returncode:
        raise TestFailure(f"smbsplice ctl {' '.join(args)}: exit {r.returncode}: {r.stdout}{r.stderr}")
    return r.stdout


def conns(path):
    return json.loads(ctl(path, "conns", "--json"))["conns"]


def smbstatus(smb):
    r = subprocess.run(["smbstatus", "-s", smb.conf, "--json"], capture_output=True, text=True, timeout=60)
    if r.returncode:
        raise TestFailure(f"smbstatus --json: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def wait_rec(path, pred, what, secs=30):
    """The one record of `ctl conns --json` for which pred holds."""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        got = [r for r in conns(path) if pred(r)]
        if len(got) == 1:
            return got[0]
        time.sleep(0.2)
    raise TestFailure(f"no record {what} within {secs}s: {conns(path)}")


def join(st, rec):
    """smbstatus's sessions that match a record by SessionId and port."""
    return [s for s in st["sessions"].values()
            if s["session_id"] == rec["session_id"] and s["hostname"].rsplit(":", 1)[-1] == str(rec["backend_port"])]


def tcons_of(st, sid):
    return sorted(t["service"] for t in st["tcons"].values() if t["session_id"] == sid)


def opens_of(st, session):
    """Files smbstatus has open by a session's smbd."""
    pid = session["server_id"]["pid"]
    return sum(o["server_id"]["pid"] == pid for f in st.get("open_files", {}).values() for o in f["opens"].values())


def held_smbclient(smb, port, *args):
    """smbclient on the share that lists it, then waits on its standard
    input: a session that stays open till stdin closes."""
    p = subprocess.Popen(["smbclient", "//127.0.0.1/share", "-p", str(port), "-U", f"root%{smb.password}", *args],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    p.stdin.write("ls\n")
    p.stdin.flush()
    return p


def release(p):
    p.stdin.close()
    p.wait(30)


def plain_session(smb, path, port):
    p = held_smbclient(smb, port)
    try:
        rec = wait_rec(path, lambda r: r["session_id"] and r["shares"] == ["share"] and not r["encrypted"],
                       "with a session and share")
        st = smbstatus(smb)
        m = join(st, rec)
        check(len(m) == 1, f"smbclient: session {rec['session_id']} port {rec['backend_port']} joins one smbstatus "
              f"session ({[s['hostname'] for s in st['sessions'].values()]})")
        check(m[0]["username"] == rec["user"] == "root" and rec["auth"] == "ntlmssp" and rec["domain"],
              f"... the same user: {rec['user']!r} (domain {rec['domain']!r}) and smbstatus's {m[0]['username']!r}")
        check(tcons_of(st, rec["session_id"]) == rec["shares"],
              f"... the same share: {rec['shares']} and smbstatus's {tcons_of(st, rec['session_id'])}")
        check(rec["transparent"] is False and rec["open_files"] == 0, "... not transparent, no file open after ls")
        line = [l for l in ctl(path, "conns").splitlines() if l.split()[0] == str(rec["id"])][0]
        check(f" {rec['backend_port']} " in line and f" {rec['session_id']} " in line and "\\root " in line
              and " share " in line, f"conns (text) shows port, session, user and share: {line}")
        detail = ctl(path, "conn", str(rec["id"]))
        check(f"session {rec['session_id']}\n" in detail and f"backend port {rec['backend_port']} " in detail
              and "shares share\n" in detail, "conn ID (text) too")
    finally:
        release(p)
    return rec


def files_held(smb, path, port):
    c = Smb2Client("127.0.0.1", port)
    try:
        c.login("root", smb.password)
        c.tree_connect("\\\\127.0.0.1\\share")
        a, b = c.create("a.txt"), c.create("b.txt")
        c.close(a)
        rec = wait_rec(path, lambda r: r["session_id"] and r["open_files"] == 1, "with one file open", secs=10)
        st = smbstatus(smb)
        m = join(st, rec)
        check(len(m) == 1 and m[0]["username"] == rec["user"] == "root",
              f"raw NTLMSSP (names after the NT response): joins, user {rec['user']!r}")
        check(rec["shares"] == ["share"] == tcons_of(st, rec["session_id"]), "... share 'share' both sides")
        check(rec["open_files"] == 1 == opens_of(st, m[0]),
              f"two CREATEs and a CLOSE: one file open, as smbstatus counts it ({opens_of(st, m[0])})")
        c.close(b)
        wait_rec(path, lambda r: r["id"] == rec["id"] and r["open_files"] == 0, "with no file open", secs=10)
        check(True, "... and none once the other is closed")
    finally:
        c.sock.close()


def ctl_fails(path, *args):
    r = subprocess.run([SMBSPLICE, "ctl", "--control", path, *args], capture_output=True, text=True, timeout=30)
    return r.returncode != 0, r.stdout + r.stderr


def user_kills(smb, path, port):
    """`kill user`: the logged-in connection goes, the one without a
    session (negotiated only) stays."""
    a, b = Smb2Client("127.0.0.1", port), Smb2Client("127.0.0.1", port)
    try:
        a.login("root", smb.password)
        rec = wait_rec(path, lambda r: r.get("user") == "root", "logged in as root", secs=10)
        other = wait_rec(path, lambda r: r["id"] != rec["id"] and not r.get("session_id"), "without a session", secs=10)
        out = ctl(path, "kill", "user", "nobody")
        check(out.strip() == "killed 0 connections of user nobody", f"kill user nobody kills none: {out.strip()!r}")
        out = ctl(path, "kill", "user", "OTHER\\root", "--json")
        check(json.loads(out)["killed"] == 0, f"... nor another domain's root: {out.strip()}")
        failed, out = ctl_fails(path, "kill", "user", "bad\x01name")
        check(failed and "bad user" in out, f"a control character is refused: {out.strip()!r}")
        out = ctl(path, "kill", "user", f"{rec['domain'].lower()}\\ROOT", "--json")
        check(json.loads(out) == {"kill": "user", "match": f"{rec['domain'].lower()}\\ROOT", "killed": 1},
              f"kill user DOMAIN\\ROOT (any case) kills root's connection: {out.strip()}")
        ids = [r["id"] for r in conns(path)]
        check(rec["id"] not in ids and other["id"] in ids, "... and not the one without a session")
        try:
            a.tree_connect("\\\\127.0.0.1\\share")
            raise TestFailure("the killed connection still answers")
        except (OSError, ConnectionError, TestFailure) as e:
            if isinstance(e, TestFailure):
                raise
        check(True, "... whose client sees its connection reset")
    finally:
        a.sock.close()
        b.sock.close()


def handed_over(smb, path, px):
    c = Smb2Client("127.0.0.1", px.port)
    try:
        c.login("root", smb.password)
        c.tree_connect("\\\\127.0.0.1\\share")
        c.create("a.txt")
        before = wait_rec(path, lambda r: r["session_id"] and r["open_files"] == 1, "with one file open", secs=10)
        px.handover()
        after = wait_rec(path, lambda r: r["id"] == before["id"], "handed over", secs=10)
        keep = ("session_id", "backend_port", "auth", "user", "domain", "shares", "open_files")
        check({k: after[k] for k in keep} == {k: before[k] for k in keep},
              f"a handover carries the view: {[after[k] for k in keep]}")
        check(len(join(smbstatus(smb), after)) == 1, "... which still joins smbstatus")
        c.create("b.txt")
        wait_rec(path, lambda r: r["id"] == before["id"] and r["open_files"] == 2, "with two files open", secs=10)
        check(True, "... and the new process counts a file opened after it")
    finally:
        c.sock.close()


def transparent(smb):
    """The join under --transparent: smbd sees the client's own address
    and the backend socket's port."""
    path = os.path.join(TMPDIR, "control-t")
    px = Proxy(smb.addr, "--transparent", "--control", path)
    c = Smb2Client("127.0.0.1", px.port, source="127.0.0.2")
    try:
        c.login("root", smb.password)
        c.tree_connect("\\\\127.0.0.1\\share")
        rec = wait_rec(path, lambda r: r["session_id"] and r["shares"] == ["share"], "transparent, with a share")
        m = join(smbstatus(smb), rec)
        check(rec["transparent"] is True and len(m) == 1 and m[0]["hostname"] == f"ipv4:127.0.0.2:{rec['backend_port']}",
              f"--transparent: joins smbstatus's session from the client's own address and the backend port "
              f"({m and m[0]['hostname']}, port {rec['backend_port']})")
        check(m[0]["username"] == rec["user"] == "root", "... the same user")
        line = [l for l in ctl(path, "conns").splitlines() if l.split()[0] == str(rec["id"])][0]
        check(f" {rec['backend_port']}t " in line, f"... and the text table marks the port: {line}")
        check("(smbd sees the client's own address)" in ctl(path, "conn", str(rec["id"])), "... and conn ID says so")
    finally:
        c.sock.close()
    px.stop()


def sealed_session(smb, path, port):
    p = held_smbclient(smb, port, "--client-protection=encrypt")
    try:
        rec = wait_rec(path, lambda r: r["encrypted"] and r["session_id"], "encrypted, with a session")
        # The listing's tree connect goes sealed: wait for smbd to have it.
        deadline = time.monotonic() + 20
        while True:
            st = smbstatus(smb)
            m = join(st, rec)
            if (m and tcons_of(st, rec["session_id"])) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        check(len(m) == 1 and m[0]["encryption"]["degree"] != "none",
              f"encrypted session {rec['session_id']} joins smbstatus's, which says it encrypts")
        check(m[0]["username"] == rec["user"], "... the user (its session setup is in clear)")
        check(rec["shares"] == "encrypted" and rec["open_files"] == "encrypted",
              f"... shares and files read 'encrypted': {rec['shares']}, {rec['open_files']}")
    finally:
        release(p)


def main():
    need("smbclient", "smbclient")
    need("smbstatus", "samba")
    smb = Samba()
    path = os.path.join(TMPDIR, "control")
    px = Proxy(smb.addr, "--control", path)
    plain_session(smb, path, px.port)
    files_held(smb, path, px.port)
    sealed_session(smb, path, px.port)
    user_kills(smb, path, px.port)
    handed_over(smb, path, px)
    transparent(smb)
    px.wait_log(r"end=", count=5)
    # what the admin typed (`kill user ...`) is logged as asked; no name
    # the wire carried is
    log = "\n".join(l for l in px.log().splitlines() if ": kill user " not in l)
    check("WORKGROUP" not in log and "SMBSPLICE" not in log and "root" not in log,
          "the log names no user or domain the wire carried")
    px.stop()
    smb.stop()


if __name__ == "__main__":
    run(main)
