"""The config file in use, against a real Samba: two listeners in one
process, each serving a get, with their own metrics; SIGHUP adding a
listener while a 1 GiB get runs through another (the get completes
byte-exact, the new listener serves); new thresholds for a listener that
keeps its socket, applied to new connections only; a removed listener
refusing new clients while its open connection runs on; a bad file on
SIGHUP refused in one line, the running configuration still serving; a
listener moved to another port during a get (one series per name on
/metrics, counters that never go back, before and after the old socket's
last connection ends); [global] changes: drain-timeout applied, workers
said to need a restart, and a command-line -v still in force; and SIGTERM
during a get: new clients refused, the get completed byte-exact, exit
status 0."""
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

from harness import (Proxy, Samba, TMPDIR, check, file_sha256, free_port, free_ports, metric, random_file, run,
                     scrape)


def write_conf(path, text):
    with open(path + ".new", "w") as f:
        f.write(text)
    os.replace(path + ".new", path)


def section(name, port, backend, extra=""):
    return f"[{name}]\nlisten = 127.0.0.1:{port}\nbackend = {backend}\n{extra}\n"


def get(smb, port, name, dest):
    """smbclient get of share/name into dest; return its sha256."""
    smb.smbclient(port, cmd=f"get {name} {dest}")
    return file_sha256(dest)


def refused(port):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
        return False
    except ConnectionRefusedError:
        return True
    finally:
        s.close()


def background_get(smb, port, name, dest):
    """Start a get in a thread; return (thread, result dict)."""
    out = {}

    def go():
        try:
            out["sha"] = get(smb, port, name, dest)
        except Exception as e:  # checked by the caller
            out["error"] = e
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, out


def main():
    smb = Samba()
    big = random_file(os.path.join(smb.share, "big.bin"), 1024)
    small = random_file(os.path.join(smb.share, "small.bin"), 8)
    work = tempfile.mkdtemp(prefix="reload-", dir=TMPDIR)
    conf = os.path.join(work, "smbsplice.conf")
    pa, pb, pc, stats = free_ports(4)
    glob = f"[global]\nstats = 127.0.0.1:{stats}\nworkers = 2\n\n"
    write_conf(conf, glob + section("office", pa, smb.addr, "read-threshold = 64K")
               + section("plain", pb, smb.addr, "mode = tcp"))
    px = Proxy(smb.addr, "-c", conf, "-v", listen=False)
    px.stats_port, px.stats = stats, True

    check(get(smb, pa, "small.bin", os.path.join(work, "a")) == small, "listener office: a get, byte-exact")
    check(get(smb, pb, "small.bin", os.path.join(work, "b")) == small, "listener plain: a get, byte-exact")
    m = scrape(stats)
    spl = {n: metric(m, "smbsplice_payload_bytes_total", listener=n, path="splice") for n in ("office", "plain")}
    check(spl["office"] > 0 and metric(m, "smbsplice_messages_total", listener="plain") == 0,
          f"each listener has its own metrics: office spliced {spl['office']:.0f} B (64K threshold), "
          "plain parsed no SMB (tcp mode)")
    lines = px.conn_lines()
    check({l["listener"] for l in lines} == {"office", "plain"}, "each connection's log line names its listener")

    # SIGHUP adds a listener while a 1 GiB get runs through office.
    t, res = background_get(smb, pa, "big.bin", os.path.join(work, "big"))
    time.sleep(0.3)
    write_conf(conf, glob + section("office", pa, smb.addr, "read-threshold = 64K")
               + section("plain", pb, smb.addr, "mode = tcp") + section("late", pc, smb.addr))
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"reload: .* read, 3 listeners")
    check(get(smb, pc, "small.bin", os.path.join(work, "c")) == small, "SIGHUP: the added listener serves")
    t.join(120)
    check(res.get("sha") == big, f"... while a 1 GiB get through another ran on, byte-exact ({res.get('error')})")

    # New settings for a listener that keeps its socket (plain: smb mode,
    # 64K threshold), for new connections only; and late removed while one
    # of its connections is open.
    t, res = background_get(smb, pc, "big.bin", os.path.join(work, "big-late"))
    time.sleep(0.3)
    write_conf(conf, glob + section("office", pa, smb.addr, "read-threshold = 64K")
               + section("plain", pb, smb.addr, "mode = smb\nread-threshold = 64K"))
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"reload: .* read, 2 listeners")
    check(refused(pc), "SIGHUP: a removed listener refuses new clients")
    before = metric(scrape(stats), "smbsplice_payload_bytes_total", listener="plain", path="splice")
    check(get(smb, pb, "small.bin", os.path.join(work, "b2")) == small, "... the changed listener serves")
    after = metric(scrape(stats), "smbsplice_payload_bytes_total", listener="plain", path="splice")
    check(after > before, f"... its new settings (smb mode, 64K) apply to a new connection ({after - before:.0f} B spliced)")
    t.join(120)
    check(res.get("sha") == big, f"... and the removed listener's get in flight ran on, byte-exact ({res.get('error')})")

    # A file with an error: one line, and the running configuration stays.
    with open(conf, "a") as f:
        f.write("[broken]\nlisten = 127.0.0.1:1\nfrobnicate = yes\n")
    n = len(re.findall(r"reload refused", px.log()))
    px.proc.send_signal(signal.SIGHUP)
    line = px.wait_log(r"^.*reload refused.*$", count=n + 1)[-1]
    check(re.search(r"smbsplice.conf:\d+: unknown key 'frobnicate'; the running configuration stays", line),
          f"SIGHUP with a bad file: refused in one line: {line.strip()}")
    check(get(smb, pa, "small.bin", os.path.join(work, "a2")) == small, "... and the running configuration serves")

    # office moves to another port while a get runs through the old one.
    conns = [metric(scrape(stats), "smbsplice_listener_connections_total", listener="office")]
    t, res = background_get(smb, pa, "big.bin", os.path.join(work, "big-move"))
    time.sleep(0.3)
    pd = free_port()
    n = len(re.findall(r"reload: .* read", px.log()))
    write_conf(conf, glob.replace("workers = 2", "workers = 3") + "drain-timeout = 45\n"
               + section("office", pd, smb.addr, "read-threshold = 64K")
               + section("plain", pb, smb.addr, "mode = smb\nread-threshold = 64K"))
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"reload: .* read", count=n + 1)
    log = px.log()
    check("reload: [global] workers changed; that takes a restart, and the running values stay" in log,
          "SIGHUP: a change to [global] workers is said to need a restart")
    check(len(re.findall(r"listeners: \d+ added, \d+ changed", log)) == n + 2,
          "... and -v from the command line is still in force after every reload (a debug line each)")
    check(refused(pa) and get(smb, pd, "small.bin", os.path.join(work, "d")) == small,
          "SIGHUP: a listener moved to another port serves there, and not on the old one")
    conns.append(metric(scrape(stats), "smbsplice_listener_connections_total", listener="office"))
    t.join(120)
    check(res.get("sha") == big, f"... while a get through its old socket ran on, byte-exact ({res.get('error')})")
    time.sleep(6)  # the old listener is freed once its last connection ended
    conns.append(metric(scrape(stats), "smbsplice_listener_connections_total", listener="office"))
    check(conns[0] + 2 <= conns[1] <= conns[2],
          f"... one office series on /metrics throughout, counting on: connections {conns}")

    # SIGTERM during a get: new clients refused, the get completes, within
    # the drain-timeout the reload set.
    t, res = background_get(smb, pd, "big.bin", os.path.join(work, "big2"))
    time.sleep(0.3)
    px.proc.send_signal(signal.SIGTERM)
    line = px.wait_log(r"^.*draining.*$")[0]
    check("for up to 45s" in line, f"SIGTERM: the drain-timeout of the last reload applies: {line.strip()}")
    check(refused(pd) and refused(pb), "SIGTERM: every listener refuses new clients at once")
    t.join(120)
    check(res.get("sha") == big, f"SIGTERM: the get in flight completed byte-exact ({res.get('error')})")
    rc = px.proc.wait(30)
    check(rc == 0, f"SIGTERM: exit status 0 once it ended ({rc})")
    px.stop(check_fds=False)
    smb.stop()


if __name__ == "__main__":
    run(main, alarm=400)
