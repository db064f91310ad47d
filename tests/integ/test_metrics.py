"""--stats serves Prometheus text at /metrics: live counters that move with
the traffic, connection gauges, and plain HTTP errors for anything else.
Idle sockets cannot take the page away (two scrapes per address, a second
for the request line), and only --stats-allow networks, loopback by
default, are served. A listener named with quotes, a comma and a
backslash leaves the page parseable, its label read back as written.
smbsplice_connections_active is per listener; a name with a unit ends
with it. smbsplice_build_info and the process_* family agree with
config.h and /proc."""
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import harness
from harness import Proxy, Server, check, in_netns, metric, recv_exact, run, scrape


def echo(c):
    while (b := c.recv(65536)):
        c.sendall(b)


def idle(host, port):
    """A client of /metrics that connects from @host and sends nothing."""
    s = socket.socket()
    s.bind((host, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def get(port, host="127.0.0.1", to="127.0.0.1"):
    """GET /metrics from @host; (seconds taken, status line)."""
    t0 = time.monotonic()
    s = socket.socket()
    s.bind((host, 0))
    s.settimeout(10)
    s.connect((to, port))
    s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    head = s.recv(100).split(b"\r\n")[0].decode()
    s.close()
    return time.monotonic() - t0, head


def closed_after(s):
    """Seconds until smbsplice closes a client that sent nothing."""
    t0 = time.monotonic()
    try:
        s.recv(1)
    except ConnectionResetError:
        pass
    took = time.monotonic() - t0
    s.close()
    return took


def idle_scrapers(px):
    """Idle sockets do not take /metrics away: one address holds two
    scrapes at most, a new one closing its oldest idle one; a silent
    client is closed after a second; and the total, 16, needs 16
    addresses, each of whose idle scrapes ends within the second."""
    port = px.stats_port
    t0 = time.monotonic()
    held = [idle("127.0.0.1", port) for _ in range(6)] + [idle("127.0.0.2", port) for _ in range(6)]
    time.sleep(0.2)
    took, head = get(port)
    check(head == "HTTP/1.0 200 OK" and took < 0.5,
          f"12 idle scrapes from two addresses: a scrape from one of them is served in {took:.3f} s ({head})")
    took, head = get(port, "127.0.0.3")
    check(head == "HTTP/1.0 200 OK" and took < 0.5, f"... and one from a third address in {took:.3f} s")
    time.sleep(0.1)
    closed = len(select.select(held, [], [], 0)[0])  # EOF (or reset) is readable
    # The kept ones time out a second after they came: count before then.
    early = time.monotonic() - t0 < 0.9
    check(closed == 9 if early else closed >= 9,
          f"two idle scrapes per address are kept, the rest closed at once: {closed} of 12 closed "
          f"(9: 4 + 4 beyond two per address, and the one that made room for the scrape)")
    for s in held:
        s.close()
    took = closed_after(idle("127.0.0.1", port))
    check(0.8 <= took <= 2.0, f"a client that sends no request line is closed after {took:.2f} s (about 1)")

    held = [idle(f"127.0.1.{i}", port) for i in range(1, 17)]
    time.sleep(0.2)
    took, head = get(port, "127.0.2.1")
    check(head == "HTTP/1.0 200 OK" and 0.5 < took < 2.0,
          f"16 idle scrapes from 16 addresses fill the total; a 17th is served once they time out, "
          f"in {took:.2f} s")
    for s in held:
        s.close()


def allow_list(srv):
    """--stats-allow: only those networks may scrape; by default, only
    loopback. The default is checked in a namespace of the test's own,
    where a non-loopback address is on lo."""
    px = Proxy(srv.addr, "--stats-allow", "127.0.0.1", "--stats-allow", "2001:db8::/32", stats=True)
    took, head = get(px.stats_port, "127.0.0.1")
    check(head == "HTTP/1.0 200 OK", f"--stats-allow 127.0.0.1: 127.0.0.1 is served ({head})")
    took, head = get(px.stats_port, "127.0.0.2")
    check(head == "HTTP/1.0 403 Forbidden", f"... 127.0.0.2 is refused ({head})")
    px.wait_log(r"stats: 127\.0\.0\.2:\d+ refused: not in --stats-allow")
    px.stop()

    netns = f"smbs-metrics-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    try:
        for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", "192.0.2.1/24", "dev", "lo"]):
            subprocess.run(in_netns(netns, cmd), check=True)
        port = 9445
        px = Proxy(srv.addr, "--stats", f"0.0.0.0:{port}", port=4450,
                   wrap=in_netns(netns, []))
        probe = ("import socket,sys\n"
                 "s=socket.socket(); s.bind((sys.argv[1],0)); s.settimeout(5)\n"
                 "s.connect(('192.0.2.1', %d)); s.sendall(b'GET /metrics HTTP/1.0\\r\\n\\r\\n')\n"
                 "print(s.recv(100).split(b'\\r\\n')[0].decode())\n" % port)
        heads = [subprocess.run(in_netns(netns, ["python3", "-c", probe, h]), capture_output=True, text=True,
                                timeout=10).stdout.strip() for h in ("192.0.2.1", "127.0.0.1")]
        check(heads == ["HTTP/1.0 403 Forbidden", "HTTP/1.0 200 OK"],
              f"no --stats-allow, --stats 0.0.0.0: 192.0.2.1 is refused, loopback served ({heads})")
        px.stop()
    finally:
        subprocess.run(["ip", "netns", "del", netns])


def odd_name(srv):
    """A listener's name is the user's text: one with a double quote, a
    comma and a backslash (which --check accepts) goes out escaped, so the
    page passes `promtool check metrics` and prometheus_client's parser, and
    the label reads back as written."""
    name = 'my "files", east\\x'
    port = harness.free_port()
    conf = os.path.join(harness.TMPDIR, "odd-name.conf")
    with open(conf, "w") as f:
        f.write(f"[{name}]\nlisten = 127.0.0.1:{port}\nbackend = {srv.addr}\nmode = tcp\n")
    px = Proxy(None, "-c", conf, listen=False, stats=True)
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(b"odd")
    recv_exact(c, 3)
    c.close()
    px.wait_log(r" end=fin ")
    m = scrape(px.stats_port)
    got = {v for (n, ls), _ in m.items() for k, v in ls if k == "listener"}
    check(got == {name}, f"the listener label reads back as the section name: {got}")
    check(metric(m, "smbsplice_listener_connections_total", listener=name) == 1, "its connection is counted under it")
    check(metric(m, "smbsplice_backend_failures_total", listener=name, backend=srv.addr) == 0,
          "a backend label too")
    px.stop()


def active_per_listener(srv):
    """smbsplice_connections_active counts connections, so it carries the
    listener label as every such series does: two connections open on one
    listener and one on another read as 2 and 1, and a close takes one
    off its own listener's."""
    ports = harness.free_ports(2)
    conf = os.path.join(harness.TMPDIR, "two.conf")
    with open(conf, "w") as f:
        for name, port in zip(("east", "west"), ports):
            f.write(f"[{name}]\nlisten = 127.0.0.1:{port}\nbackend = {srv.addr}\nmode = tcp\n")
    px = Proxy(None, "-c", conf, listen=False, stats=True)
    conns = []
    for port in (ports[0], ports[0], ports[1]):
        c = socket.create_connection(("127.0.0.1", port), timeout=10)
        c.sendall(b"a")
        recv_exact(c, 1)
        conns.append(c)
    m = scrape(px.stats_port)
    series = {ls: v for (n, ls), v in m.items() if n == "smbsplice_connections_active"}
    check(series == {(("listener", "east"),): 2, (("listener", "west"),): 1},
          f"smbsplice_connections_active by listener: {series}")
    conns.pop(0).close()
    check(harness.wait_metric(px.stats_port, "smbsplice_connections_active", 1, listener="east")
          and metric(scrape(px.stats_port), "smbsplice_connections_active", listener="west") == 1,
          "a close takes one off its own listener's")
    for c in conns:
        c.close()
    check(harness.wait_metric(px.stats_port, "smbsplice_connections_active", 0), "none open once all closed")
    px.stop()


def config_h():
    """{macro: value} of the build's config.h: what configure decided."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(harness.SMBSPLICE))), "config.h")
    with open(path) as f:
        return dict(re.findall(r'^#define (\w+) (.*)$', f.read(), re.M))


def proc_cpu(pid):
    """utime + stime of @pid, in seconds, as /proc gives them."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid, key):
    """A "kB" line of /proc/PID/status, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(rf"^{key}:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024


def process_family(srv):
    """smbsplice_build_info says what configure built, and the process_*
    family (as the Prometheus client libraries define it) agrees with what
    /proc and the limits say of the daemon."""
    t0 = time.time()
    px = Proxy(srv.addr, "--mode", "tcp", stats=True, rlimit_nofile=3000)
    c = px.connect()
    c.sendall(b"p" * 2000000)
    recv_exact(c, 2000000)
    pid = px.proc.pid
    cpu0 = proc_cpu(pid)
    m = scrape(px.stats_port)
    cpu1 = proc_cpu(pid)
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss, vsz = proc_status(pid, "VmRSS"), proc_status(pid, "VmSize")
    t1 = time.time()
    conf = config_h()
    built = [dict(ls) for (n, ls), v in m.items() if n == "smbsplice_build_info" and v == 1]
    want = {"version": conf["PACKAGE_VERSION"].strip('"'),
            "jemalloc": "yes" if "HAVE_JEMALLOC" in conf else "no",
            "sanitizers": "yes" if "HAVE_SANITIZERS" in conf else "no",
            "libsystemd": conf["LIBSYSTEMD_VERSION"].strip('"')}
    check(built == [want], f"smbsplice_build_info 1 {built}, as config.h has it")
    got = {n: v for (n, ls), v in m.items() if n.startswith("process_")}
    check(got.get("process_max_fds") == 3000, f"process_max_fds {got.get('process_max_fds')}: the limit it was given")
    check(abs(got.get("process_open_fds", -9) - fds) <= 1,
          f"process_open_fds {got.get('process_open_fds')}, /proc/{pid}/fd holds {fds} (and the scrape's socket)")
    check(0.5 * rss <= got.get("process_resident_memory_bytes", 0) <= 2 * rss,
          f"process_resident_memory_bytes {got.get('process_resident_memory_bytes'):.0f}, VmRSS {rss}")
    check(0.5 * vsz <= got.get("process_virtual_memory_bytes", 0) <= 2 * vsz,
          f"process_virtual_memory_bytes {got.get('process_virtual_memory_bytes'):.0f}, VmSize {vsz}")
    check(t0 - 1 <= got.get("process_start_time_seconds", 0) <= t1,
          f"process_start_time_seconds {got.get('process_start_time_seconds'):.2f}: started within [{t0:.2f}, {t1:.2f}]")
    check(cpu0 - 0.01 <= got.get("process_cpu_seconds_total", -1) <= cpu1 + 0.01,
          f"process_cpu_seconds_total {got.get('process_cpu_seconds_total')}: between {cpu0} and {cpu1}, read around it")
    c.close()
    px.wait_log(r" end=fin ")
    px.stop()


UNITS = ("bytes", "seconds")


def unit_suffixes(body):
    """A name that carries a unit ends with it (before _total), as the
    Prometheus naming conventions ask, so that a reader and the tools
    (Grafana's unit guessing, promtool) can tell bytes from counts:
    smbsplice_buffer_lent_bytes, not smbsplice_buffer_bytes_lent."""
    names = re.findall(r"^# TYPE (\S+) ", body, re.M)
    wrong = []
    for name in names:
        words = re.sub(r"_total$", "", name).split("_")
        if any(u in words[:-1] for u in UNITS) and words[-1] not in UNITS:
            wrong.append(name)
    check(names and not wrong, f"{len(names)} metric names end with their unit, if any"
          + (f": not {', '.join(wrong)}" if wrong else ""))


def main():
    srv = Server(echo)
    px = Proxy(srv.addr, "--mode", "tcp", stats=True)
    with urllib.request.urlopen(f"http://127.0.0.1:{px.stats_port}/metrics", timeout=10) as r:
        check(r.status == 200, "GET /metrics: 200")
        check(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), "Prometheus text content type")
        body = r.read().decode()
    harness.note_scrape(px.stats_port)
    harness.check_page(body)
    unit_suffixes(body)
    for name in ("smbsplice_bytes_total", "smbsplice_messages_total", "smbsplice_splice_calls_total",
                 "smbsplice_copy_calls_total", "smbsplice_cork_writes_total", "smbsplice_uncork_calls_total",
                 "smbsplice_connections_active", "smbsplice_connections_total",
                 "smbsplice_opaque_fallbacks_total", "smbsplice_payloads_total"):
        check(f"# TYPE {name} " in body, f"{name} is documented in the page")

    c = px.connect()
    c.sendall(b"x" * 100000)
    recv_exact(c, 100000)
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_connections_active") == 1, "one connection active")
    moved = sum(metric(m, "smbsplice_bytes_total", direction="to_server", path=p) for p in ("splice", "copy"))
    check(moved == 100000, f"live connection's bytes counted: {moved:.0f}")
    c.close()
    px.wait_log(r" end=fin ")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_connections_active") == 0, "no connection active after close")
    check(metric(m, "smbsplice_connections_total") == 1, "one connection in total")
    moved = sum(metric(m, "smbsplice_bytes_total", direction="to_client", path=p) for p in ("splice", "copy"))
    check(moved == 100000, f"closed connection's bytes kept: {moved:.0f}")

    # A page is cached for a second from when it was rendered, not from
    # when it was asked for: after a scrape the daemon was slow to answer
    # (stopped for 0.4 s here; a loaded machine, the sanitizers), the next
    # scrape() still gets a page newer than what happened in between.
    harness.wait_fresh(px.stats_port)
    os.kill(px.proc.pid, signal.SIGSTOP)
    resume = threading.Timer(0.4, os.kill, (px.proc.pid, signal.SIGCONT))
    resume.start()
    try:
        m0 = scrape(px.stats_port)
    finally:
        resume.join()
        os.kill(px.proc.pid, signal.SIGCONT)
    c = px.connect()
    c.sendall(b"z" * 5000)
    recv_exact(c, 5000)
    c.close()
    px.wait_log(r" end=fin ", count=2)
    m1 = scrape(px.stats_port)
    n0, n1 = (metric(m, "smbsplice_connections_total") for m in (m0, m1))
    check(n1 == n0 + 1, f"after a slow scrape, the next page is fresh: connections {n0:.0f} -> {n1:.0f}")

    try:
        urllib.request.urlopen(f"http://127.0.0.1:{px.stats_port}/nope", timeout=10)
        check(False, "GET /nope fails")
    except urllib.error.HTTPError as e:
        check(e.code == 404, "GET /nope: 404")
    s = socket.create_connection(("127.0.0.1", px.stats_port), timeout=10)
    s.sendall(b"POST /metrics HTTP/1.0\r\n\r\n")
    check(s.recv(100).startswith(b"HTTP/1.0 405"), "POST: 405")
    s.close()
    s = socket.create_connection(("127.0.0.1", px.stats_port), timeout=10)  # silent client: times out
    check(scrape(px.stats_port) is not None, "a silent client does not block other scrapes")
    s.close()

    # The page is rendered at most once a second: a flood of scrapes gets
    # the same page, and a fresh one after the second is over.
    raw = lambda: urllib.request.urlopen(f"http://127.0.0.1:{px.stats_port}/metrics", timeout=10).read()
    time.sleep(1.1)
    # Only the scrapes answered within the second of the first one's
    # request are sure to get its page: on a loaded machine 20 can take
    # longer than that, and one past it gets a fresh page, as it should.
    t0 = time.monotonic()
    first = raw()
    harness.check_page(first.decode())
    c = px.connect()
    c.sendall(b"y" * 1000)
    recv_exact(c, 1000)
    pages = []
    while len(pages) < 20:
        p = raw()
        if time.monotonic() > t0 + 0.95:
            break
        pages.append(p)
    check(pages and all(p == first for p in pages),
          f"{len(pages)} scrapes within the second (of 20 tried): one page, rendered once")
    time.sleep(1.1)
    check(raw() != first, "the next second renders a fresh page")
    c.close()

    idle_scrapers(px)
    px.stop()
    allow_list(srv)
    odd_name(srv)
    active_per_listener(srv)
    process_family(srv)
    srv.close()


if __name__ == "__main__":
    run(main)
