"""Every recipe in README.md and docs/deployment.md runs as written.

A recipe is a fenced block with a marker line before it:

    <!-- recipe: NAME [NAME...] [file=PATH] -->

A block without file= is shell, run with `sh -ex` exactly as it stands
(-x, so that the log shows which command failed); a block with file=PATH
is a file's contents, written to PATH before the recipe's shell runs. A
block may belong to several recipes (the smbd configuration the namespace
recipe gives is also the one the gateway pair runs), and a recipe may
have several blocks, in page order, README.md first. A recipe that is only a file of smbsplice's is run the way the
pages say a service runs it: `smbsplice --check -c PATH`, then
`smbsplice -c PATH`.

Each recipe runs in a sandbox of its own, made by `unshare --net --mount
--pid`: a new network namespace plays the host (its lo up, nothing else),
/run and /tmp are empty tmpfs mounts (so `ip netns add` names are the
sandbox's own), and /etc, /var, /srv and /usr/local are overlays whose
writes land in a tmpfs, so that a recipe writes /etc/samba/files.conf
and starts smbd with the host's paths without touching the host. When
the sandbox's first process is killed, the kernel kills everything the
recipe started. Nothing in a recipe is substituted; PATH starts with the
build's proxy/ and wanem/, so `smbsplice` and `smbsplice-wanem` are this
build's.

What the recipe does not make, the world around it does (WORLDS below):
the Samba server a recipe points at, a client network, a name in
/etc/hosts; then a check of what the page promises for it, with smbclient
(a 1 MiB file put and fetched through smbsplice, byte-exact) and, where
the page says so, who is refused. The test also checks that every fenced
block of README.md's recipes and of docs/deployment.md's deployment
sections is a recipe or says why not (`<!-- not a recipe: why -->`), and
that every recipe named has a world here and every world a recipe.
"""
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from harness import SRCDIR, TMPDIR, TestFailure, check, need, run, wait_for

BUILDDIR = os.environ.get("BUILDDIR", SRCDIR)
THROWAWAY = os.path.join(SRCDIR, "contrib/throwaway-smbd.sh")
PASS = "smbsplice"  # throwaway-smbd.sh's password for root
PAGES = ("README.md", "docs/deployment.md")
MARK = re.compile(r"^<!-- (recipe|not a recipe): *(.*?) *-->\n(?:\n)?```(\w*)\n(.*?)^```$", re.M | re.S)
FENCE = re.compile(r"^```\w*\n.*?^```$", re.M | re.S)


def read(rel):
    with open(os.path.join(SRCDIR, rel), encoding="utf-8") as f:
        return f.read()


def recipes():
    """{name: [(page, file or None, text)]} in page order, and the problems
    found: unmarked blocks in recipe sections, empty reasons."""
    out, bad = {}, []
    for page in PAGES:
        text = read(page)
        marked = set()
        for m in MARK.finditer(text):
            marked.add(m.start(3) - 3)
            kind, arg, body = m.group(1), m.group(2), m.group(4)
            if kind == "not a recipe":
                if len(arg) < 10:
                    bad.append(f"{page}: a block not a recipe says too little why ({arg!r})")
                continue
            words = arg.split()
            path = next((w[5:] for w in words if w.startswith("file=")), None)
            for name in (w for w in words if "=" not in w):
                out.setdefault(name, []).append((page, path, body))
        for m in FENCE.finditer(text):
            if m.start() in marked or not in_recipe_section(page, text, m.start()):
                continue
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{page}:{line}: a block in a recipe section with no recipe marker")
    return out, bad


def in_recipe_section(page, text, pos):
    """README.md: its recipes section; deployment.md: every section but
    the installation and systemd ones, which give no deployment."""
    heads = [(m.start(), m.group(1)) for m in re.finditer(r"^## (.+)$", text, re.M)]
    title = ""
    for start, t in heads:
        if start < pos:
            title = t
    if page == "README.md":
        return title.endswith("recipes")
    return title not in ("Installing", "Under systemd", "")


class Sandbox:
    """A host of the recipe's own: see the module's docstring."""

    def __init__(self, name):
        self.dir = tempfile.mkdtemp(prefix=f"recipe-{name}-", dir=TMPDIR)
        self.log = os.path.join(self.dir, "recipe.log")
        setup = ["ip link set lo up", "mount -t tmpfs sandbox /run", "mount -t tmpfs sandbox /tmp",
                 "mkdir /run/ov"]
        for d in ("/etc", "/var", "/srv", "/usr/local"):
            if not os.path.isdir(d):
                continue
            o = "/run/ov" + d.replace("/", "_")
            setup += [f"mkdir -p {o}/u {o}/w",
                      f"mount -t overlay overlay -o lowerdir={d},upperdir={o}/u,workdir={o}/w {d}"]
        # Longer than the test's alarm: the sandbox never outlives a run.
        setup.append("echo ready; exec sleep 600")
        self.proc = subprocess.Popen(["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
                                      "--propagation", "private", "sh", "-ec", " && ".join(setup)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise TestFailure(f"sandbox for {name}: {self.proc.stderr.read().strip()}")
        self.pid = wait_for("the sandbox's first process", self._child, timeout=5)
        self.env = dict(os.environ)
        self.env["PATH"] = f"{BUILDDIR}/proxy:{BUILDDIR}/wanem:/usr/sbin:/usr/bin:/sbin:/bin"
        self.bg = []

    def _child(self):
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                kids = f.read().split()
        except OSError:
            return None
        return int(kids[0]) if kids else None

    def argv(self, cmd):
        return ["nsenter", "-t", str(self.pid), "-n", "-m", "-p", "--", "sh", "-ec", cmd]

    def sh(self, cmd, ok=True, timeout=60):
        """Run shell `cmd` in the sandbox; return its output."""
        r = subprocess.run(self.argv(cmd), capture_output=True, text=True, timeout=timeout, env=self.env)
        if ok and r.returncode:
            raise TestFailure(f"in the sandbox: {cmd}: exit {r.returncode}: {(r.stdout + r.stderr).strip()}")
        return r

    def start(self, cmd):
        """Start `cmd` in the sandbox in the background, its output to the
        recipe's log."""
        with open(self.log, "a") as out:
            self.bg.append(subprocess.Popen(self.argv(cmd), stdout=out, stderr=subprocess.STDOUT,
                                            env=self.env))

    def text(self):
        with open(self.log) as f:
            return f.read()

    def alive(self):
        """None while every background job runs; else what one said."""
        for p in self.bg:
            if p.poll() is not None and p.returncode != 0:
                return f"a recipe command exited {p.returncode}: {self.text().strip()[-2000:]}"
        return None

    def write(self, path, body):
        """Write a file inside the sandbox (its overlays), as an editor would."""
        r = subprocess.run(self.argv(f"mkdir -p \"$(dirname {path})\" && cat > {path}"), input=body,
                           capture_output=True, text=True, timeout=10, env=self.env)
        if r.returncode:
            raise TestFailure(f"writing {path} in the sandbox: {r.stderr.strip()}")

    def close(self):
        """Kill the sandbox's pid 1: the kernel kills every process of its
        pid namespace, and the mounts and network namespaces go with them."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # --kill-child: its child goes too
            self.proc.wait()
        for p in self.bg:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


# --- the worlds around the recipes ---------------------------------------------


def veth(sb, ns, host_addr, ns_addr, dev, route=None):
    """A namespace `ns` joined to the sandbox's host by a veth pair."""
    sb.sh(f"ip netns add {ns} 2>/dev/null || true; ip -n {ns} link set lo up; "
          f"ip link add {dev} type veth peer name eth0 netns {ns}; "
          f"ip addr add {host_addr} dev {dev}; ip link set {dev} up; "
          f"ip -n {ns} addr add {ns_addr} dev eth0; ip -n {ns} link set eth0 up"
          + (f"; ip -n {ns} route add default via {route}" if route else ""))


def samba(sb, port, interfaces, ns=None):
    """contrib/throwaway-smbd.sh in the sandbox (in namespace `ns`): share
    "share", root's password PASS."""
    wrap = f"ip netns exec {ns} " if ns else ""
    sb.sh(f"SMB_INTERFACES='{interfaces}' {wrap}{THROWAWAY} start /tmp/smbd-{ns or 'host'} {port}")


def smbclient(sb, where, ns=None, share="share", ok=True):
    """A 1 MiB file put through //where and fetched back, byte-exact.
    Returns None, or with ok=False smbclient's complaint."""
    wrap = f"ip netns exec {ns} " if ns else ""
    data = os.urandom(1 << 20)
    with open(os.path.join(sb.dir, "up"), "wb") as f:
        f.write(data)
    up = os.path.join(sb.dir, "up")
    down = os.path.join(sb.dir, "down")
    if os.path.exists(down):
        os.unlink(down)
    host, _, port = where.partition(":")
    r = sb.sh(f"{wrap}timeout 60 smbclient //{host}/{share} -p {port or 445} -U root%{PASS} "
              f"-c 'put {up} recipe.bin; get recipe.bin {down}'", ok=False, timeout=90)
    if not ok:
        return (r.stdout + r.stderr).strip() if r.returncode else None
    if r.returncode:
        raise TestFailure(f"smbclient //{host}/{share} from {ns or 'the host'}: {(r.stdout + r.stderr).strip()}")
    with open(down, "rb") as f:
        same = hashlib.sha256(f.read()).digest() == hashlib.sha256(data).digest()
    check(same, f"  smbclient from {ns or 'the host'}: 1 MiB put and fetched through //{where}/{share}, byte-exact")


def wait_port(sb, addr, ns=None):
    """Wait until something listens on addr (HOST:PORT) in the sandbox."""
    wrap = f"ip netns exec {ns} " if ns else ""
    host, port = addr.rsplit(":", 1)
    cmd = f"{wrap}ss -tlnH 'sport = :{port}'"

    def up():
        why = sb.alive()
        if why:
            raise TestFailure(why)
        return sb.sh(cmd, ok=False).stdout.strip()
    wait_for(f"a listener on {addr}", up, timeout=20)


def refused(sb, where, ns=None):
    why = smbclient(sb, where, ns=ns, ok=False)
    check(why is not None, f"  smbclient from {ns or 'the host'} through //{where} is refused: "
          f"{(why or 'it was not').splitlines()[-1][:100]}")


def client_net(sb):
    """Clients on 192.0.2.0/24, the host their 192.0.2.1."""
    veth(sb, "client", "192.0.2.1/24", "192.0.2.100/24", "vc", route="192.0.2.1")


def world_front(sb):
    """Samba on the same host, moved to 127.0.0.1:1445; clients in
    192.0.2.0/24, which --allow admits; the host's own 127.0.0.1 is not."""
    samba(sb, 1445, "127.0.0.1")
    client_net(sb)
    return lambda: (wait_port(sb, "0.0.0.0:445"), smbclient(sb, "192.0.2.1", ns="client"),
                    refused(sb, "127.0.0.1"))


def world_another_host(sb):
    """fileserver.example (in /etc/hosts) at 10.1.0.10, behind the host;
    metrics on 127.0.0.1:9445."""
    veth(sb, "fileserver", "10.1.0.1/24", "10.1.0.10/24", "vs", route="10.1.0.1")
    samba(sb, 445, "10.1.0.10", ns="fileserver")
    sb.sh("echo '10.1.0.10 fileserver.example' >> /etc/hosts")
    client_net(sb)

    def promise():
        wait_port(sb, "0.0.0.0:445")
        smbclient(sb, "192.0.2.1", ns="client")
        page = sb.sh("wget -qO- http://127.0.0.1:9445/metrics 2>/dev/null || "
                     "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:9445/metrics\").read().decode())'").stdout
        check("smbsplice_" in page, "  /metrics answers on 127.0.0.1:9445")
    return promise


def world_netns(sb):
    """Nothing: the recipe makes the namespace and starts its smbd; root
    is given a Samba password, as the page says to add users."""
    def promise():
        wait_port(sb, "0.0.0.0:445")
        wait_port(sb, "127.0.0.1:445", ns="files")
        sb.sh(f"printf '{PASS}\\n{PASS}\\n' | smbpasswd -c /etc/samba/files.conf -s -a root")
        smbclient(sb, "127.0.0.1", share="files")
    return promise


def world_netns_out(sb):
    """A container's namespace `files` (lo up), Samba on the host's
    127.0.0.1:1445; the client inside the namespace."""
    sb.sh("ip netns add files && ip -n files link set lo up")
    samba(sb, 1445, "127.0.0.1")
    return lambda: (wait_port(sb, "127.0.0.1:445", ns="files"), smbclient(sb, "127.0.0.1", ns="files"))


def world_wan(sb):
    """Two servers' addresses at HQ, 10.1.0.10 (Samba) and 10.1.0.11 (no
    one), behind the host, whose side towards the clients is 10.2.0.1."""
    veth(sb, "hq", "10.1.0.1/24", "10.1.0.10/24", "vs", route="10.1.0.1")
    sb.sh("ip -n hq addr add 10.1.0.11/24 dev eth0")
    samba(sb, 445, "10.1.0.10", ns="hq")
    veth(sb, "client", "10.2.0.1/24", "10.2.0.100/24", "vc", route="10.2.0.1")

    def promise():
        wait_port(sb, "0.0.0.0:445")
        smbclient(sb, "10.2.0.1", ns="client")
        seen_from(sb, "hq", "10.2.0.1", "10.1.0.10:445", "--source")
    return promise


def seen_from(sb, ns, source, server, why):
    """The connection to `server` came from `source`: its socket, closed
    or not yet, on either side (ss -tan in the sandbox's host and in the
    server's namespace `ns`)."""
    s = re.escape(source) + r":\d+"
    d = re.escape(server)
    text = sb.sh("ss -tanH; echo ---; " + (f"ip netns exec {ns} ss -tanH" if ns else "true")).stdout
    host, _, srv = text.partition("---")
    found = re.search(s + r"\s+" + d, host) or re.search(d + r"\s+" + s, srv)
    check(found, f"  the server saw the connection come from {source} ({why})"
          + ("" if found else f": sockets\n{text}"))


def world_transparent(sb):
    """Clients at 192.0.2.0/24 (the host 192.0.2.1), Samba at
    198.51.100.10, routed back to the clients through the host."""
    client_net(sb)
    veth(sb, "server", "198.51.100.1/24", "198.51.100.10/24", "vs", route="198.51.100.1")
    samba(sb, 445, "198.51.100.10", ns="server")

    def promise():
        wait_port(sb, "192.0.2.1:445")
        smbclient(sb, "192.0.2.1", ns="client")
        seen_from(sb, "server", "192.0.2.100", "198.51.100.10:445", "--transparent")
    return promise


def world_transparent_local(sb):
    """Samba on the host's own 192.0.2.10:1445; clients at 192.0.2.0/24."""
    veth(sb, "client", "192.0.2.10/24", "192.0.2.100/24", "vc", route="192.0.2.10")
    samba(sb, 1445, "192.0.2.10")

    def promise():
        wait_port(sb, "192.0.2.10:445")
        smbclient(sb, "192.0.2.10", ns="client")
        seen_from(sb, None, "192.0.2.100", "192.0.2.10:1445", "--transparent")
    return promise


def world_pair(sb):
    """Nothing: the recipe makes every namespace, smbsplice-wanem and both
    gateways. root gets a Samba password; the branch's client fetches
    through the branch gateway, and HQ's log names the client by its own
    address."""
    def promise():
        wait_port(sb, "10.2.0.1:445", ns="branch")
        wait_port(sb, "0.0.0.0:445", ns="hq")
        sb.sh(f"printf '{PASS}\\n{PASS}\\n' | smbpasswd -c /etc/samba/files.conf -s -a root")
        smbclient(sb, "10.2.0.1", ns="client", share="files")
        wait_for("HQ's end line for the branch client",
                 lambda: re.search(r"conn 10\.2\.0\.100:\d+ -> 10\.1\.0\.10:445 listener=hq", sb.text()), timeout=10)
        check(True, "  HQ's gateway took the branch client's address from the PROXY header")
    return promise


WORLDS = {
    "front": world_front,
    "same-host": world_front,
    "same-host-conf": world_front,
    "another-host": world_another_host,
    "another-host-conf": world_another_host,
    "netns": world_netns,
    "netns-readme": world_netns,
    "netns-conf": world_netns,
    "netns-out": world_netns_out,
    "wan": world_wan,
    "wan-gateway": world_wan,
    "wan-gateway-conf": world_wan,
    "pair": world_pair,
    "transparent": world_transparent,
    "transparent-local": world_transparent_local,
}


STARTS_SMBSPLICE = re.compile(r"^(?:ip netns exec \S+ )?smbsplice ", re.M)


def run_recipe(name, blocks):
    """Run one recipe in a sandbox of its own, then check its promise."""
    sb = Sandbox(name)
    try:
        promise = WORLDS[name](sb)
        for _, path, body in blocks:
            if path:
                sb.write(path, body)
        shell = "".join(body for _, path, body in blocks if path is None)
        if not STARTS_SMBSPLICE.search(shell):
            # The pages' way for a service's file: check it, then run it.
            conf = [path for _, path, _ in blocks if path and path.startswith("/etc/smbsplice/")]
            check(len(conf) == 1, f"{name}: one smbsplice file to run ({conf})")
            shell += f"smbsplice --check -c {conf[0]}\nsmbsplice -c {conf[0]}\n"
        script = os.path.join(sb.dir, "recipe.sh")
        with open(script, "w") as f:
            f.write(shell)
        print(f"recipe {name} ({', '.join(sorted({p for p, _, _ in blocks}))}):", flush=True)
        sb.start(f"sh -ex {script}")
        promise()
        why = sb.alive()
        check(why is None, f"  every command of the recipe ran, and what it started still runs"
              + (f": {why}" if why else ""))
    except Exception:
        print(f"--- {name}'s output:\n{sb.text() if os.path.exists(sb.log) else ''}", flush=True)
        raise
    finally:
        sb.close()
    shutil.rmtree(sb.dir)


def main():
    for tool, pkg in (("unshare", "util-linux"), ("nsenter", "util-linux"), ("smbd", "samba"),
                      ("smbclient", "smbclient"), ("smbpasswd", "samba-common-bin"), ("ss", "iproute2"),
                      ("ip", "iproute2"), ("nft", "nftables")):
        need(tool, pkg)
    found, bad = recipes()
    check(not bad, "every block in README.md's recipes and docs/deployment.md's deployments is a recipe, "
          "or says why not" + "".join("\n  " + b for b in bad))
    check(set(found) == set(WORLDS), f"the recipes named ({len(found)}) are the ones this test runs"
          + (f": no world for {sorted(set(found) - set(WORLDS))}" if set(found) - set(WORLDS) else "")
          + (f": no recipe for {sorted(set(WORLDS) - set(found))}" if set(WORLDS) - set(found) else ""))
    only = os.environ.get("RECIPES")
    for name in sorted(found):
        if only and name not in only.split(","):
            continue
        t = time.monotonic()
        run_recipe(name, found[name])
        print(f"recipe {name}: {time.monotonic() - t:.1f} s", flush=True)


if __name__ == "__main__":
    run(main, alarm=300)
