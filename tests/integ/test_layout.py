"""The house rules on the shape of the source, as a test.

- No file in proxy/ is over FILE_MAX_LINES lines (FILE_LIMITS names the
  files held to another figure, and why).
- No top-level C function in proxy/, smb/ or advise/ is over FUNC_MAX_LINES
  lines, counted from the line its definition starts on to its closing
  brace at column 0.
- No #include cycle among proxy/'s files (the graph of #include "..."
  lines), and none among its modules either: x.c and x.h are one module,
  and a module that includes another's header depends on it. Calling a
  function takes its header, so a cycle of modules is the mechanical trace
  of a call cycle, or of a lower module calling up into a higher one.
- smb/ knows nothing of sockets: it includes no socket header.
- proxy/ holds no SMB byte offsets. That cannot be checked exactly; the
  heuristic: no SMB protocol magic ("\\xfeSMB", 0xFE 'S' 'M' 'B') and no
  #define of an offset (a name ending in _OFF or _OFFSET) in proxy/.
"""
import glob
import os
import re

from harness import SRCDIR, TestFailure, check, run

FILE_MAX_LINES = 800
FUNC_MAX_LINES = 70
# Files held to a figure of their own: conn.c keeps only the life of a
# connection (issue 17 carved the rest into rooms of their own).
FILE_LIMITS = {
    "proxy/conn.c": 600,
}
FUNC_DIRS = ("proxy", "smb", "advise")
SOCKET_HEADERS = re.compile(r"#\s*include\s*<(sys/socket\.h|netinet/[^>]*|arpa/inet\.h|netdb\.h|sys/un\.h)>")
# A line that starts a function definition: at column 0, a name and "(",
# no "=" before it (an initialised table is no function), no ";" at its end.
DEF_START = re.compile(r"^(?![#\s/*}])[^=;(]*?\b([A-Za-z_]\w*)\s*\(")


def rel(path):
    return os.path.relpath(path, SRCDIR)


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")


def sources(*dirs, exts=(".c", ".h")):
    out = []
    for d in dirs:
        for ext in exts:
            out += glob.glob(os.path.join(SRCDIR, d, "*" + ext))
    return sorted(out)


def functions(path):
    """[(name, first line, length in lines)] of a C file's functions."""
    return functions_in(lines_of(path))


def functions_in(text):
    """[(name, first line, length in lines)] of the top-level function
    definitions in the lines of a C file: from the line a definition starts
    on to the "}" at column 0 that closes it."""
    out, i = [], 0
    while i < len(text):
        m = DEF_START.match(text[i])
        if not m or text[i].rstrip().endswith(";"):
            i += 1
            continue
        j = i
        # The signature runs on until the "{" at column 0, unless a ";"
        # at the end of a line shows it was a prototype.
        while j < len(text) and text[j] != "{" and not text[j].rstrip().endswith(";"):
            j += 1
            if j < len(text) and DEF_START.match(text[j]):
                break
        if j >= len(text) or text[j] != "{":
            i = max(j, i + 1)
            continue
        k = j + 1
        while k < len(text) and not text[k].startswith("}"):
            k += 1
        out.append((m.group(1), i + 1, k - i + 1))
        i = k + 1
    return out


def includes(path):
    """The proxy/ files that a file includes with #include "..."."""
    out = []
    for line in lines_of(path):
        m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
        if m and os.path.exists(os.path.join(SRCDIR, "proxy", m.group(1))):
            out.append(os.path.join("proxy", m.group(1)))
    return out


def tangles(graph):
    """The strongly connected components of a directed graph {node:
    set(nodes)} with more than one node: each is a set of nodes that all
    reach one another, the union of the cycles through them (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def module(path, stems):
    """The module a file belongs to: x.c and x.h are module x, and so are
    x_part.c and x_part.h when x is a module (options_table.c belongs to
    options); a types-only header x-t.h is a module of its own."""
    stem = os.path.splitext(path)[0]
    head = stem.split("_")[0]
    return head if head != stem and head in stems else stem


def check_file_sizes():
    over = []
    for path in sources("proxy"):
        name = rel(path)
        n = len(lines_of(path)) - 1
        limit = FILE_LIMITS.get(name, FILE_MAX_LINES)
        if n > limit:
            over.append(f"{name}: {n} lines, over {limit}")
    check(not over, f"no file in proxy/ over {FILE_MAX_LINES} lines (held to their own: "
          + ", ".join(f"{k} {v}" for k, v in FILE_LIMITS.items()) + ")"
          + "".join("\n  " + o for o in over))


def check_function_sizes():
    over, seen = [], 0
    for path in sources(*FUNC_DIRS, exts=(".c",)):
        for name, line, n in functions(path):
            seen += 1
            if n <= FUNC_MAX_LINES:
                continue
            over.append(f"{rel(path)}:{line}: {name}() is {n} lines")
    check(seen > 500, f"the scanner finds the functions ({seen})")
    check(not over, f"no function in {', '.join(FUNC_DIRS)} over {FUNC_MAX_LINES} lines"
          + "".join("\n  " + o for o in over))


def check_include_cycles():
    files = {rel(p): set(includes(p)) for p in sources("proxy")}
    loops = tangles(files)
    check(not loops, f"no #include cycle among proxy/'s {len(files)} files"
          + "".join("\n  " + ", ".join(c) for c in loops))
    stems = {os.path.splitext(f)[0] for f in files}
    mods = {}
    for f, incs in files.items():
        m = module(f, stems)
        mods.setdefault(m, set()).update(module(i, stems) for i in incs if module(i, stems) != m)
    loops = tangles(mods)
    check(not loops, f"no cycle among proxy/'s {len(mods)} modules (x.c with x.h)"
          + "".join("\n  modules that all reach one another: " + ", ".join(c) for c in loops))


def check_smb_knows_no_sockets():
    bad = []
    for path in sources("smb"):
        for i, line in enumerate(lines_of(path)):
            if SOCKET_HEADERS.search(line):
                bad.append(f"{rel(path)}:{i + 1}: {line.strip()}")
    check(not bad, "smb/ includes no socket header" + "".join("\n  " + b for b in bad))


def check_proxy_holds_no_smb_offsets():
    magic = re.compile(r"\\x[fF][eEfF]SMB|0x[fF][eEfF]\s*,\s*'S'|#\s*define\s+\w+_OFF(SET)?\b")
    bad = []
    for path in sources("proxy"):
        for i, line in enumerate(lines_of(path)):
            if magic.search(line):
                bad.append(f"{rel(path)}:{i + 1}: {line.strip()}")
    check(not bad, "proxy/ holds no SMB magic or offset constants (a heuristic)"
          + "".join("\n  " + b for b in bad))


SAMPLE = """static const struct row table[] = {
\t{ .name = "a", .apply = f },
};

static int twice(int x);

/**
 * twice() - a sample
 */
static int twice(int x)
{
\treturn 2 * x;
}

enum opt_result long_one(const struct opt_def *d, struct options *o,
\t\t\t struct listen_opts *l)
{
\tif (x) {
\t\treturn 1;
\t}
\treturn 0;
}
""".split("\n")


def check_scanner():
    """The function scanner on a sample: it must see what the rules rely on."""
    found = functions_in(SAMPLE)
    check(found == [("twice", 10, 4), ("long_one", 15, 8)],
          f"the scanner finds definitions, signature to closing brace, and takes no table or prototype for one: {found}")


def main():
    failed = []
    for rule in (check_scanner, check_file_sizes, check_function_sizes, check_include_cycles,
                 check_smb_knows_no_sockets, check_proxy_holds_no_smb_offsets):
        try:
            rule()
        except TestFailure as e:  # every rule is told, not only the first
            print(f"not ok: {e}", flush=True)
            failed.append(rule.__name__)
    check(not failed, "every layout rule holds" + (f" (broken: {', '.join(failed)})" if failed else ""))


if __name__ == "__main__":
    run(main)
