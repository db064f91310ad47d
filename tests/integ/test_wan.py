"""The WAN gateway options, on loopback: keepalive and congestion control
on each side (read back from the kernel with ss), and again for new clients
after a SIGHUP changed them, socket buffers per side (fixed, held by
RTT by default, or autotuned), --source, backends
tried in order when one refuses or stays silent (each failure counted per
backend), and Multipath TCP on both sides, byte-exact, with the legs shown
as MPTCP by `ss -M`."""
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from harness import NOT_SMB, SMBSPLICE, TMPDIR, Proxy, Server, TestFailure, check, free_port, metric, recv_exact, run, scrape

IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def ss(*args):
    r = subprocess.run(["ss", *args], capture_output=True, text=True, timeout=10)
    return r.stdout


def sock_info(port_filter):
    """ss -tnio lines (state and the info line joined) matching a filter."""
    out = ss("-tnioH", "state", "established", port_filter)
    lines, cur = [], ""
    for line in out.splitlines():
        if line and not line[0].isspace() and cur:
            lines.append(cur)
            cur = ""
        cur += " " + line.strip()
    if cur:
        lines.append(cur)
    return lines


def client_side(px):
    """(seconds to the first keepalive probe, congestion control) of a new
    client connection's socket in smbsplice, read with ss."""
    c = px.connect()
    c.sendall(b"\0ping")
    recv_exact(c, 5)
    cli = sock_info(f"( sport = :{px.port} )")
    c.close()
    m = re.search(r"timer:\(keepalive,(\d+)", cli[0] if cli else "")
    cc = re.search(r" (reno|cubic) ", cli[0] + " " if cli else "")
    return (int(m.group(1)) if m else None, cc.group(1) if cc else None)


def test_keepalive_and_congestion():
    srv = Server(echo)
    px = Proxy(srv.addr, "--keepalive", "7:3:2", "--congestion", "client:reno", "--congestion", "backend:cubic", *NOT_SMB)
    c = px.connect()
    c.sendall(b"\0ping")
    check(recv_exact(c, 5) == b"\0ping", "a connection with keepalive and congestion control set")
    cli = sock_info(f"( sport = :{px.port} )")
    be = sock_info(f"( dport = :{srv.port} )")
    check(len(cli) == 1 and len(be) == 1, f"ss finds smbsplice's two sockets ({len(cli)}, {len(be)})")
    check(" reno " in cli[0] + " " and "timer:(keepalive" in cli[0],
          f"client side: reno and the keepalive timer: {cli[0].strip()[:160]}")
    check(" cubic " in be[0] + " " and "timer:(keepalive" in be[0],
          f"backend side: cubic and the keepalive timer: {be[0].strip()[:160]}")
    m = re.search(r"timer:\(keepalive,(\d+)", cli[0])
    check(m and int(m.group(1)) <= 7, f"the first probe is due within --keepalive's 7 s ({m and m.group(1)} s)")
    c.close()
    px.stop()

    # A reload that keeps the listener's socket gives new clients the new
    # keepalive and congestion control: the workers hold the listening
    # sockets, and must set them there.
    conf = os.path.join(tempfile.mkdtemp(prefix="wan-", dir=TMPDIR), "smbsplice.conf")

    def write(keepalive, cc):
        with open(conf + ".new", "w") as f:
            f.write(f"[global]\nworkers = 2\n\n[main]\nlisten = 127.0.0.1:{port}\nbackend = {srv.addr}\n"
                    f"mode = tcp\nkeepalive = {keepalive}\ncongestion = client:{cc}\n")
        os.replace(conf + ".new", conf)

    port = free_port()
    write("50:3:2", "reno")
    px = Proxy(srv.addr, "-c", conf, listen=False)
    px.port = port
    before = [client_side(px) for _ in range(4)]
    write("7:3:2", "cubic")
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"reload: .* read, 1 listener")
    after = [client_side(px) for _ in range(8)]
    px.wait_log(r" conn \S+ -> .* end=", count=12)
    workers = sorted({l["worker"] for l in px.conn_lines()[4:]})
    check(all(k is not None and 10 < k <= 50 and cc == "reno" for k, cc in before) and
          all(k is not None and k <= 7 and cc == "cubic" for k, cc in after),
          f"SIGHUP: new clients get the new keepalive and congestion control, on workers {workers} "
          f"(before {before}, after {after})")
    px.stop()

    px = Proxy(srv.addr, "--keepalive", "off", *NOT_SMB)
    c = px.connect()
    c.sendall(b"\0ping")
    recv_exact(c, 5)
    cli = sock_info(f"( sport = :{px.port} )")
    check(cli and "keepalive" not in cli[0], "--keepalive off: no keepalive timer")
    c.close()
    px.stop()
    srv.close()

    bad = subprocess.run([px.argv[0], "-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--congestion", "nosuchcc"],
                         capture_output=True, text=True, timeout=10)
    lines = bad.stderr.strip().splitlines()
    check(bad.returncode == 1 and len(lines) == 1 and "nosuchcc" in lines[0],
          f"an unknown algorithm: one line and exit 1 ({bad.returncode}: {lines})")


def test_source():
    seen = []

    def who(c):
        seen.append(c.getpeername()[0])
        c.sendall(b"ok")

    srv = Server(who)
    px = Proxy(srv.addr, "--source", "127.0.0.5", *NOT_SMB)
    c = px.connect()
    c.sendall(b"\0")
    check(recv_exact(c, 2) == b"ok" and seen == ["127.0.0.5"], f"--source 127.0.0.5: the server sees {seen}")
    c.close()
    px.stop()
    srv.close()


def silent_listener():
    """A listener whose accept queue is full: new connects go unanswered."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    fillers = []
    for _ in range(4):
        f = socket.socket()
        f.setblocking(False)
        f.connect_ex(lst.getsockname())
        fillers.append(f)
    time.sleep(0.2)
    return lst, fillers


def test_failover():
    srv = Server(echo)
    down = f"127.0.0.1:{free_port()}"
    lst, fillers = silent_listener()
    silent = f"127.0.0.1:{lst.getsockname()[1]}"
    px = Proxy(down, "--backend", silent, "--backend", srv.addr, "--connect-timeout", "0.5", *NOT_SMB, stats=True)
    t0 = time.monotonic()
    c = px.connect()
    c.sendall(b"hello")  # not SMB: forwarded opaque, and its FIN a clean end
    check(recv_exact(c, 5) == b"hello", "refused, then silent, then the third backend serves")
    took = time.monotonic() - t0
    check(0.4 <= took < 2, f"... after the silent one's --connect-timeout ({took:.2f} s)")
    c.close()
    px.wait_log(r" end=fin ")
    line = px.conn_lines()[-1]
    check(line["backend"] == srv.addr, f"the log names the backend that served ({line['backend']})")
    m = scrape(px.stats_port)
    fails = [metric(m, "smbsplice_backend_failures_total", backend=b) for b in (down, silent, srv.addr)]
    check(fails == [1, 1, 0], f"failures counted per backend: {fails}")
    log = px.log()
    check(f"backend {down}: connect: Connection refused; trying {silent}" in log
          and f"backend {silent}: connect timed out after 0.5s; trying {srv.addr}" in log,
          "each failover logged with its reason")
    px.stop()

    px = Proxy(down, "--backend", silent, "--connect-timeout", "0.3", *NOT_SMB)
    c = px.connect()
    c.sendall(b"\0")
    try:
        check(c.recv(1) == b"", "every backend failing: the client is closed")
    except ConnectionResetError:
        pass
    line = px.wait_log(r"^.* end=\w+.*$")[0]
    check("all 2 backends failed" in line, "... and the log says all failed: "
          + line[line.index("end="):line.index(" dur=")])
    c.close()
    px.stop()
    for f in fillers:
        f.close()
    lst.close()
    srv.close()


def test_mptcp():
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
        probe.close()
    except OSError as e:
        print(f"SKIP: MPTCP sockets unavailable ({e}): sysctl net.mptcp.enabled=1", flush=True)
        raise SystemExit(77)
    data = os.urandom(16 << 20)
    want = hashlib.sha256(data).hexdigest()
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    lst.settimeout(30)
    be_port = lst.getsockname()[1]
    px = Proxy(f"127.0.0.1:{be_port}", "--mptcp", "both", "--mode", "tcp")
    for proto, what in ((IPPROTO_MPTCP, "an MPTCP client"), (0, "a plain TCP client (fallback)")):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
        c.settimeout(30)
        c.connect(("127.0.0.1", px.port))
        s, _ = lst.accept()
        s.settimeout(30)
        legs = ss("-MnH")
        if proto:
            check(f":{px.port}" in legs and f":{be_port}" in legs,
                  f"{what}: ss -M shows MPTCP on both legs")
        else:
            check(f":{be_port}" in legs, f"{what}: ss -M still shows the backend leg as MPTCP")
        # Each way at once: one side sends while the other reads.
        t = threading.Thread(target=c.sendall, args=(data,))
        t.start()
        got = hashlib.sha256(recv_exact(s, len(data))).hexdigest()
        t.join()
        t = threading.Thread(target=s.sendall, args=(data,))
        t.start()
        back = hashlib.sha256(recv_exact(c, len(data))).hexdigest()
        t.join()
        check(got == want and back == want, f"{what}: 16 MiB each way through MPTCP legs, byte-exact")
        c.close()
        s.close()
    px.stop()
    lst.close()


def skmem(port_filter):
    """(rb, tb) of the one established socket matching a filter (ss -tm)."""
    out = ss("-tnmH", "state", "established", port_filter)
    m = re.search(r"skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def held(srv, *opts):
    """(client side, backend side) (rb, tb) of a connection through a
    proxy started with opts, once a message went both ways, and each
    side's RTT the proxy went by when it held that side (debug log), or
    None where it left the side as it was."""
    p = Proxy(srv.addr, "-v", *opts, *NOT_SMB)
    c = p.connect()
    c.sendall(b"\0ping")
    recv_exact(c, 5)
    got = skmem(f"( sport = :{p.port} )"), skmem(f"( dport = :{srv.port} )")
    c.close()
    p.stop()
    rtts = dict(re.findall(r"conn \S+: (client|backend) RTT (\d+) us: socket buffers", p.log()))
    return got, (rtts.get("client"), rtts.get("backend"))


def test_socket_buffer():
    """--socket-buffer SIDE:SIZE fixes SO_RCVBUF and SO_SNDBUF on that side
    (the kernel doubles what it is given, for its bookkeeping); auto, the
    default, holds a socket whose handshake's RTT was under 200 us (a
    loopback one, unless the machine is very busy) at 256K once connected,
    and leaves the others; kernel leaves a side to autotuning; a reload
    that takes a fixed client size away says that new clients keep it; a
    size out of range or a wrong word is one line, exit 2."""
    srv = Server(echo)
    (cli, be), _ = held(srv, "--socket-buffer", "backend:1M", "--socket-buffer", "client:384K")
    check(be == (2 << 20, 2 << 20), f"backend side: rb and tb fixed at twice 1M: {be}")
    check(cli == (768 << 10, 768 << 10), f"client side (inherited from the listening socket): twice 384K: {cli}")
    short = (512 << 10, 512 << 10)
    (cli, be), (rc, rb) = held(srv)
    check((cli == short) == (rc is not None) and (be == short) == (rb is not None) and (rc or rb),
          f"auto, by default: a side is held at twice 256K exactly when its RTT was short: client {cli} "
          f"(RTT {rc} us), backend {be} (RTT {rb} us)")
    (cli, be), (rc, rb) = held(srv, "--socket-buffer", "client:kernel")
    check(cli and cli != short and rc is None and (be == short) == (rb is not None),
          f"client:kernel: the client side left to autotuning ({cli}), the backend's as auto has it ({be}, RTT {rb})")
    (cli, be), (rc, rb) = held(srv, "--socket-buffer", "kernel", "--socket-buffer", "backend:auto")
    check(cli and cli != short and rc is None and (be == short) == (rb is not None),
          f"kernel, then backend:auto: the client side autotuned ({cli}), the backend's as auto has it ({be})")

    conf = os.path.join(tempfile.mkdtemp(prefix="sockbuf-", dir=TMPDIR), "smbsplice.conf")
    port = free_port()

    def write(extra):
        with open(conf + ".new", "w") as f:
            f.write(f"[main]\nlisten = 127.0.0.1:{port}\nbackend = {srv.addr}\nmode = tcp\n{extra}")
        os.replace(conf + ".new", conf)

    write("socket-buffer = client:384K\n")
    px = Proxy(srv.addr, "-c", conf, listen=False)
    write("")
    px.proc.send_signal(signal.SIGHUP)
    px.wait_log(r"reload: .* read, 1 listener")
    px.wait_log(r"listener main: socket-buffer: new clients keep the fixed 393216 bytes until smbsplice is restarted")
    px.stop()
    srv.close()
    for arg in ("backend:1K", "client:automatic"):
        bad = subprocess.run([SMBSPLICE, "-l", "127.0.0.1:1", "-b", "127.0.0.1:2", "--socket-buffer", arg],
                             capture_output=True, text=True, timeout=10)
        check(bad.returncode == 2 and "socket-buffer" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1,
              f"{arg}: one line, exit 2 ({bad.returncode}: {bad.stderr.strip()})")


def main():
    if not shutil.which("ss"):
        print("SKIP: ss not found: install the Debian package iproute2", flush=True)
        raise SystemExit(77)
    test_keepalive_and_congestion()
    test_socket_buffer()
    test_source()
    test_failover()
    test_mptcp()


if __name__ == "__main__":
    run(main)
