"""smbtorture's smb2.read, smb2.rw and smb2.compound suites give the same
per-test results through smbsplice as against Samba directly. (Some tests
fail against Samba itself; what matters is that the proxy changes none.)"""
import re
import subprocess

from harness import Proxy, Samba, check, need, run

SUITES = ("smb2.read", "smb2.rw", "smb2.compound")
RESULT = re.compile(r"^(success|failure|error|skip|xfail|uxsuccess): (\S+)", re.M)


def torture(password, port, suite, timeout=300):
    """{test: result} of smbtorture's `suite` (a name, or a list of them)
    against //127.0.0.1/share on `port`, as root with `password`."""
    names = [suite] if isinstance(suite, str) else list(suite)
    argv = ["smbtorture", f"//127.0.0.1/share", "-p", str(port), "-U", f"root%{password}", *names]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    results = {name: res for res, name in RESULT.findall(r.stdout)}
    if not results:
        raise AssertionError(f"no results from {' '.join(argv)}:\n{r.stdout}{r.stderr}")
    return results


def main():
    need("smbtorture", "samba-testsuite")
    smb = Samba()
    px = Proxy(smb.addr)
    for suite in SUITES:
        direct = torture(smb.password, smb.port, suite)
        proxied = torture(smb.password, px.port, suite)
        diff = {t: (direct.get(t), proxied.get(t)) for t in set(direct) | set(proxied)
                if direct.get(t) != proxied.get(t)}
        summary = ", ".join(f"{n} {r}" for r, n in sorted(
            {r: sum(1 for v in direct.values() if v == r) for r in set(direct.values())}.items()))
        check(not diff, f"{suite}: {len(direct)} tests, same results through smbsplice ({summary}); differences: {diff}")
    check(" end=error" not in px.log(), "no connection ended in error")
    px.stop()
    smb.stop()


if __name__ == "__main__":
    run(main)
