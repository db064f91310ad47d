"""The heap census shim (contrib/bench/heapcensus.c) counts what it says.

bench.py's quicfield part tells whose heap an idle QUIC session is from
two censuses that heapcensus.so writes on SIGRTMIN+3, read by
quicfield.census_read(). This runs a small program of known
allocations under the shim and checks:

- the bytes it attributes to the program are exactly what the program
  holds live: malloc() and calloc() counted, free() forgotten, a
  realloc() counted at its new size and not twice;
- a second census after the program frees more shows the difference,
  as quicfield divides it;
- the file is the owner's alone (0600).
"""
import os
import signal
import stat
import subprocess
import sys

from harness import SRCDIR, TMPDIR, check, run, wait_for

sys.path.insert(0, os.path.join(SRCDIR, "contrib", "bench"))
import quicfield  # noqa: E402

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *keep[3], *some[5], *z, line[16];

	for (int i = 0; i < 3; i++)
		keep[i] = malloc(1000);
	for (int i = 0; i < 5; i++)
		some[i] = malloc(200);
	free(some[0]);
	free(some[1]);
	z = calloc(4, 1024);
	keep[0] = realloc(keep[0], 3000);
	memset(keep[0], 1, 3000);
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	free(z);
	free(keep[1]);
	printf("freed\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	return 0;
}
"""


def main():
    cc = os.environ.get("CC", "cc")
    so = os.path.join(TMPDIR, "heapcensus.so")
    subprocess.run([cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", so,
                    os.path.join(SRCDIR, "contrib", "bench", "heapcensus.c"), "-ldl", "-lpthread"], check=True)
    src = os.path.join(TMPDIR, "allocs.c")
    prog = os.path.join(TMPDIR, "allocs")
    with open(src, "w") as f:
        f.write(PROG)
    subprocess.run([cc, "-O0", "-o", prog, src], check=True)
    out = os.path.join(TMPDIR, "census.txt")
    p = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, LD_PRELOAD=so, HEAPCENSUS_OUT=out))
    try:
        check(p.stdout.readline().strip() == "ready", "the program made its allocations")
        first = quicfield.census_read(p.pid, out)
        held = 3000 + 1000 + 1000 + 3 * 200 + 4 * 1024
        check(first.get("allocs") == held,
              f"the program's live bytes: {first.get('allocs')} counted, {held} held ({dict(first)})")
        p.stdin.write("go\n")
        p.stdin.flush()
        check(p.stdout.readline().strip() == "freed", "the program freed two blocks")
        os.kill(p.pid, signal.SIGRTMIN + 3)
        wait_for("the census", lambda: os.path.exists(out))
        mode = stat.S_IMODE(os.stat(out).st_mode)
        check(mode == 0o600, f"the census file is the owner's alone: {oct(mode)}")
        second = quicfield.census_read(p.pid, out)
        check(first["allocs"] - second.get("allocs", 0) == 4 * 1024 + 1000,
              f"the difference of two censuses is what was freed: {first['allocs']} - {second.get('allocs')}")
        p.stdin.write("end\n")
        p.stdin.flush()
        check(p.wait(timeout=10) == 0, "the program ran to its end under the shim")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


if __name__ == "__main__":
    run(main)
