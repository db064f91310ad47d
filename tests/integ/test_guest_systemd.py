"""The Debian package under systemd as PID 1 (issue 31): a QEMU guest
(tests/integ/guest.py, Guest(systemd=True)) boots the host's own Debian,
read-only over 9p under a tmpfs overlay, with the host's systemd as its
init (tests/guest/systemd.sh), and its script, run by a unit of its own
as root, does what an administrator does:

- `dpkg -i` the package built from this tree as test_package.py builds
  it (dpkg-buildpackage from `make distdir`), then writes
  /etc/smbsplice/smbsplice.conf: one listener on the guest's port 4445,
  whose backend is a plain TCP echo server on the host (10.0.2.2 from the
  guest), clients allowed from 127.0.0.0/8 only, and `control =
  /run/smbsplice/control`;
- `systemctl start smbsplice`: active, its main process run as the user
  smbsplice (the package's drop-in);
- a session through it: a client in the guest sends an SMB2 NEGOTIATE and
  reads the echo, and holds the connection open;
- `smbsplice ctl conns`, with no path (the default,
  /run/smbsplice/control, which the unit's RuntimeDirectory= makes), lists
  that session, by the client's port;
- a warning provoked: a client from the guest's own 10.0.2.15, which
  `allow` refuses; `journalctl -p warning -u smbsplice` shows that line and
  no info line (before issue 31, every line was PRIORITY 6 and this showed
  nothing), the entry came through journald's native socket
  (_TRANSPORT=journal, PRIORITY=4);
- the upgrade: `dpkg -i` of the same package with a higher version (the
  .deb repacked with dpkg-deb), whose postinst sends SIGUSR2: the unit's
  MainPID changes, it stays active, postinst says "handed over", and the
  session goes on on the same connection (a second echo, the same id and
  client port in `ctl conns`);
- `systemctl stop smbsplice` drains: while the stop waits, the unit is
  `deactivating` and the session still works (a third echo), then the
  client closes, and the stop returns at once (not after the 60 s drain
  timeout): Result=success, status 0, the session's end line `end=fin`,
  and "drained: every connection has ended" in the journal; `journalctl
  SMBSPLICE_CLIENT=127.0.0.1:<its port>` selects that end line alone,
  with SMBSPLICE_CONN (the id `ctl conns` showed), SMBSPLICE_LISTENER and
  SMBSPLICE_END=fin.

Skips (77) where guests cannot run, when not root, without
dpkg-buildpackage, debhelper or systemd on the host, and in a sanitizer
build (the package builds with its own flags).
"""
import base64
import json
import os
import re
import shutil
import sys
import tempfile

import smbgen
import test_package
from guest import Guest
from harness import SANITIZED, TMPDIR, Server, check, need, run

PORT = 4445
CLIENT = r"""
import os, socket, sys, time
hello = bytes.fromhex(os.environ["HELLO"])
c = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=60)


def report(n, what):
    with open(f"/tmp/echo.{n}.tmp", "w") as f:
        f.write(f"{what} {c.getsockname()[1]}\n")
    os.rename(f"/tmp/echo.{n}.tmp", f"/tmp/echo.{n}")


for n in (1, 2, 3):
    end = time.monotonic() + 120
    while n > 1 and not os.path.exists(f"/tmp/go.{n}") and time.monotonic() < end:
        time.sleep(0.1)
    try:
        c.sendall(hello)
        got = b""
        while len(got) < len(hello) and (b := c.recv(len(hello) - len(got))):
            got += b
        report(n, "ok" if got == hello else f"bad:{len(got)}")
    except OSError as e:
        report(n, f"error:{e.errno}")
c.close()
"""

SCRIPT = r"""
CONF=/etc/smbsplice/smbsplice.conf
step() { say step "$1" $(uptime_s); }
# lines KEY CMD...: each line CMD prints, as `say KEY LINE`
lines() { k=$1; shift; "$@" 2>&1 | while IFS= read -r l; do say "$k" "$l"; done; }
# b64 KEY CMD...: what CMD prints, as one word
b64() { k=$1; shift; say "$k" "$("$@" 2>&1 | base64 -w0)"; }
state() { systemctl show -P "$1" smbsplice.service; }
echoed() { wait_file /tmp/echo.$1 60 && say echo $1 $(cat /tmp/echo.$1); }
journal() { lines journal journalctl -q -u smbsplice.service -o cat; }

step boot
say pid1 $(cat /proc/1/comm) $(systemctl is-system-running)
# man-db's trigger reindexes every page: minutes under emulation, and
# nothing this test looks at
rm -f /var/lib/man-db/auto-update
dpkg -i "$DEB" >/tmp/dpkg1 2>&1
say installed $? $(dpkg-query -W -f '${Version}' smbsplice)
lines dpkg1 cat /tmp/dpkg1
cat >$CONF <<EOF
[global]
control = /run/smbsplice/control
[guest]
listen = 0.0.0.0:$PORT
backend = $BACKEND
allow = 127.0.0.0/8
EOF
lines check smbsplice --check -c $CONF

step start
systemctl start smbsplice.service
say started $? $(state ActiveState) $(state MainPID) $(stat -c %U /proc/$(state MainPID))
[ "$(state ActiveState)" = active ] || { lines status systemctl status smbsplice; journal; exit 1; }

step session
python3 -c "$CLIENT" & client=$!
echoed 1 || exit 1
smbsplice ctl conns >/tmp/conns 2>&1
say ctl $?
lines conns cat /tmp/conns
b64 conns1 smbsplice ctl conns --json

step warning
python3 -c 'import socket, sys
s = socket.create_connection(("10.0.2.15", int(sys.argv[1])), timeout=10)
try:
    print("refused client read", s.recv(1))
except OSError as e:
    print("refused client:", e)' $PORT | while IFS= read -r l; do say refused "$l"; done
i=0
while ! journalctl -q -u smbsplice.service -p warning -o cat | grep -q 'refused by listener' && [ $i -lt 100 ]; do
	i=$((i + 1))
	sleep 0.1
done
lines pwarning journalctl -q -u smbsplice.service -p warning -o cat
b64 warnjson journalctl -q -u smbsplice.service -p warning -o json
say infolines $(journalctl -q -u smbsplice.service -o cat | grep -c 'listening on')

step upgrade
old=$(state MainPID)
dpkg -i "$DEB2" >/tmp/dpkg2 2>&1
say upgraded $? $old $(state MainPID) $(state ActiveState) $(dpkg-query -W -f '${Version}' smbsplice)
lines dpkg2 cat /tmp/dpkg2
touch /tmp/go.2
echoed 2 || exit 1
b64 conns2 smbsplice ctl conns --json

step stop
t0=$(uptime_s)
systemctl stop smbsplice.service & stopper=$!
i=0
while [ "$(state ActiveState)" != deactivating ] && [ $i -lt 100 ]; do
	i=$((i + 1))
	sleep 0.1
done
say stopping $(state ActiveState)
[ "$(state ActiveState)" = deactivating ] || lines status systemctl status smbsplice.service
touch /tmp/go.3
echoed 3
t1=$(uptime_s)
wait $stopper
say stopped $? $t0 $t1 $(uptime_s) $(state ActiveState) $(state Result) $(state ExecMainStatus)
wait $client
journal
cport=$(cut -d' ' -f2 /tmp/echo.1)
b64 byclient journalctl -q -u smbsplice.service -o json SMBSPLICE_CLIENT=127.0.0.1:$cport
step end
"""


def echo(c):
    """The backend: what comes in goes back, for as long as the session."""
    c.settimeout(600)
    while (b := c.recv(65536)):
        c.sendall(b)


def upgrade_deb(deb, work):
    """@deb with a higher version, repacked with dpkg-deb: installing it is
    an upgrade (postinst configure OLD), with the same files."""
    d = tempfile.mkdtemp(prefix="upgrade-", dir=work)
    test_package.cmd(["dpkg-deb", "-R", deb, d])
    control = os.path.join(d, "DEBIAN", "control")
    with open(control) as f:
        text = f.read()
    ver = re.search(r"^Version: (\S+)$", text, re.M).group(1)
    with open(control, "w") as f:
        f.write(text.replace(f"Version: {ver}\n", f"Version: {ver}+upgrade1\n"))
    out = os.path.join(work, f"smbsplice_{ver}+upgrade1.deb")
    test_package.cmd(["dpkg-deb", "-b", d, out])
    shutil.rmtree(d)
    return out, ver


def said1(g, key):
    """The words of the script's one `say KEY`."""
    got = g.said(key)
    return got[0] if got else []


def lines(g, key):
    return [" ".join(w) for w in g.said(key)]


def decoded(g, key):
    """What the script said as `b64 KEY`."""
    w = said1(g, key)
    return base64.b64decode(w[0]).decode(errors="replace") if w else ""


def conn_rows(g, key):
    text = decoded(g, key)
    try:
        return json.loads(text)["conns"]
    except (ValueError, KeyError):
        check(False, f"`smbsplice ctl conns --json` ({key}) is JSON: {text[:500]!r}")


def journal_json(g, key):
    return [json.loads(ln) for ln in decoded(g, key).splitlines() if ln.startswith("{")]


def main():
    if os.geteuid() != 0:
        print("SKIP: installs a package and boots a guest: needs root", flush=True)
        sys.exit(77)
    need("dpkg-buildpackage", "dpkg-dev")
    need("dh", "debhelper")
    need("systemctl", "systemd")  # the guest boots this host's own systemd
    if SANITIZED:
        print("SKIP: a sanitizer build: the package builds with its own flags", flush=True)
        sys.exit(77)
    os.makedirs(TMPDIR, exist_ok=True)
    work = tempfile.mkdtemp(prefix="systemd-", dir=TMPDIR)
    os.chmod(work, 0o755)
    deb = test_package.build(work, lint=False)[0]
    deb2, ver = upgrade_deb(deb, work)
    srv = Server(echo)
    g = Guest(SCRIPT, name="systemd", timeout=400, mem=1024, systemd=True, env={
        "DEB": deb, "DEB2": deb2, "PORT": PORT, "BACKEND": f"10.0.2.2:{srv.port}",
        "HELLO": smbgen.hello(0).buf.hex(), "CLIENT": CLIENT.replace("'", "'\"'\"'")})
    try:
        g.wait_exit(400)
    finally:
        steps = {w[0]: float(w[1]) for w in g.said("step")}
        print("note: guest steps at " + ", ".join(f"{k} {v:.1f} s" for k, v in steps.items()), flush=True)
    check(said1(g, "pid1")[:1] == ["systemd"], f"the guest's PID 1 is systemd ({' '.join(said1(g, 'pid1'))})")
    inst = said1(g, "installed")
    check(inst == ["0", ver], f"dpkg -i {os.path.basename(deb)}: status {' '.join(inst[:1])}, version "
          f"{' '.join(inst[1:])}" + ("" if inst[:1] == ["0"] else "\n" + "\n".join(lines(g, "dpkg1"))))
    chk = lines(g, "check")
    check(any("configuration OK" in ln for ln in chk), f"smbsplice --check accepts the test's config: {chk}")

    st = said1(g, "started")
    check(st[:2] == ["0", "active"] and len(st) == 4 and st[3] == "smbsplice",
          f"systemctl start smbsplice: status, ActiveState, MainPID, its user: {' '.join(st)}"
          + ("" if st[:2] == ["0", "active"] else "\n" + "\n".join(lines(g, "status") + lines(g, "journal"))))
    e1 = said1(g, "echo")
    check(e1[:2] == ["1", "ok"], f"a session through it: the NEGOTIATE came back from the host ({' '.join(e1)})")
    cport = e1[2]
    conns = lines(g, "conns")
    check(said1(g, "ctl") == ["0"] and any(f"127.0.0.1:{cport}" in ln for ln in conns),
          f"`smbsplice ctl conns` at the default path lists the session (127.0.0.1:{cport}):\n" + "\n".join(conns))
    rows1 = conn_rows(g, "conns1")
    mine = [r for r in rows1 if str(r.get("client", "")).endswith(f":{cport}")]
    check(len(mine) == 1, f"... and `ctl conns --json` has it once: {rows1}")
    cid = mine[0].get("id")

    warn = lines(g, "pwarning")
    check(any(re.search(r"conn 10\.0\.2\.15:\d+ refused by listener guest", ln) for ln in warn) and
          not any("listening on" in ln for ln in warn),
          "journalctl -p warning -u smbsplice: the refused client's warning, and no info line:\n" + "\n".join(warn))
    check(said1(g, "infolines") and said1(g, "infolines")[0] != "0",
          f"... which the unfiltered journal has ({' '.join(said1(g, 'infolines'))} 'listening on' lines)")
    refused = [e for e in journal_json(g, "warnjson") if "refused by listener" in e.get("MESSAGE", "")]
    check(refused and all(e.get("PRIORITY") == "4" and e.get("_TRANSPORT") == "journal" and
                          e.get("SYSLOG_IDENTIFIER") == "smbsplice" for e in refused),
          "the warning came through journald's native socket: " + json.dumps(
              [{k: e.get(k) for k in ("PRIORITY", "_TRANSPORT", "SYSLOG_IDENTIFIER")} for e in refused]))

    up = said1(g, "upgraded")
    dpkg2 = lines(g, "dpkg2")
    check(len(up) == 5 and up[0] == "0" and up[1] != up[2] and up[3] == "active" and up[4] == ver + "+upgrade1",
          f"dpkg -i of version {ver}+upgrade1: status, MainPID before and after, ActiveState, version: {' '.join(up)}"
          + ("" if up[:1] == ["0"] else "\n" + "\n".join(dpkg2)))
    check(any(f"pid {up[1]} handed over to pid {up[2]}" in ln for ln in dpkg2),
          "its postinst says the old process handed over to the new one:\n" + "\n".join(dpkg2))
    e2 = g.said("echo")[1] if len(g.said("echo")) > 1 else []
    check(e2 == ["2", "ok", cport], f"the session goes on across the upgrade, on the same connection ({' '.join(e2)})")
    rows2 = conn_rows(g, "conns2")
    mine2 = [r for r in rows2 if str(r.get("client", "")).endswith(f":{cport}")]
    check(len(mine2) == 1 and mine2[0].get("id") == cid,
          f"... `ctl conns` of the new process has it, with the same id ({cid}): {mine2}")

    check(said1(g, "stopping") == ["deactivating"],
          f"systemctl stop: the unit drains (ActiveState {' '.join(said1(g, 'stopping'))})"
          + ("" if said1(g, "stopping") == ["deactivating"] else "\n" + "\n".join(lines(g, "status") + lines(g, "journal"))))
    e3 = g.said("echo")[2] if len(g.said("echo")) > 2 else []
    check(e3 == ["3", "ok", cport], f"... and the session still works while it does ({' '.join(e3)})")
    stop = said1(g, "stopped")
    after = float(stop[3]) - float(stop[2]) if len(stop) == 7 else -1
    journal = lines(g, "journal")
    check(len(stop) == 7 and stop[0] == "0" and stop[4:] == ["inactive", "success", "0"] and 0 <= after < 20,
          f"... then the stop ends once the session has, {after:.1f} s after it, not at the drain timeout: "
          f"status, ActiveState, Result, ExecMainStatus {' '.join(stop[:1] + stop[4:])}")
    end = [ln for ln in journal if re.search(rf"^conn 127\.0\.0\.1:{cport} ", ln)]
    check(end and " end=fin " in end[-1], f"the session's end line says end=fin: {end}")
    check(any("drained: every connection has ended" in ln for ln in journal),
          "the journal says it drained:\n" + "\n".join(journal[-12:]))
    byclient = journal_json(g, "byclient")
    want = {"SMBSPLICE_CONN": str(cid), "SMBSPLICE_CLIENT": f"127.0.0.1:{cport}", "SMBSPLICE_LISTENER": "guest",
            "SMBSPLICE_END": "fin", "PRIORITY": "6", "_TRANSPORT": "journal"}
    check(len(byclient) == 1 and all(byclient[0].get(k) == v for k, v in want.items()),
          f"journalctl SMBSPLICE_CLIENT=127.0.0.1:{cport} selects the session's end line, with its fields: "
          + json.dumps([{k: e.get(k) for k in want} for e in byclient]))
    check(g.rc == 0, f"the guest's script exited {g.rc}")
    srv.close()
    shutil.rmtree(work)


if __name__ == "__main__":
    run(main, alarm=900)
