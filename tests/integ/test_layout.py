"""The house rules on the shape of the source, as a test.

The daemon's folders are layers (proxy/README.md has the map). Each rule
below is checked on the tree, and then on the tree with one violation
planted, to show that the rule fails when it is broken:

- folders: no .c file directly in proxy/; every file under proxy/ is in
  one of LAYERS' folders.
- layers: a file in a layer includes headers of its own layer or of those
  below it, never above (LAYERS is the order); so there is no cycle
  between folders either, which is also checked on the folder graph.
- io/ never includes <ev.h>: the pumps know nothing of the event loop.
- priv/ includes nothing of conn/: what holds privilege never sees a
  connection.
- only handover/ includes the handover image (handover/image.h).
- common/ includes only common/: smbsplice-wanem (wanem/) links it alone
  (libcommon.a).
- smb/ knows nothing of sockets (no socket header) and includes only
  smb/ and common/.
- proxy/ holds no SMB byte offsets. That cannot be checked exactly; the
  heuristic: no SMB protocol magic ("\\xfeSMB", 0xFE 'S' 'M' 'B') and no
  #define of an offset (a name ending in _OFF or _OFFSET) in proxy/.
- modules: no #include cycle among files, nor among modules (x.c with
  x.h): calling a function takes its header, so a cycle of modules is
  the trace of a call cycle.
- names: no two C files of the same name anywhere in the tree.
- descriptor passing is written once: SCM_RIGHTS appears in
  common/fdpass.c and in no other file of the daemon.
- sizes: no function over FUNC_MAX_LINES lines, counted from the line its
  definition starts on to its closing brace at column 0; a cohesive file
  of the daemon may grow, but not past FILE_MAX_LINES.
- map: every folder of proxy/ and common/ has a README.md that names
  each of its files, README.md's layout table names every folder, and
  its rows for smb/, advise/ and wanem/ name each of their files.
"""
import os
import re

from harness import SRCDIR, TestFailure, check, run

# The daemon's layers, lowest first: a file includes headers of its own
# folder or of a folder before it. Paths are from the top of the tree.
LAYERS = [
    "common",
    "smb",
    "proxy/conf",
    "proxy/io",
    "proxy/observe",
    "proxy/priv",
    "proxy/core",
    "proxy/net",
    "proxy/pp2",
    "proxy/quic",
    "proxy/conn",
    "proxy/worker",
    "proxy/control",
    "proxy/handover",
    "proxy/daemon",
]
# Folders whose files README.md's layout row names, one by one.
ROW_MAPPED = ("smb", "advise", "wanem")
FUNC_MAX_LINES = 70
FILE_MAX_LINES = 1000
FUNC_DIRS = ("common", "proxy", "smb", "advise", "wanem")
# The daemon's files; smb/framer.c, one parser, is longer.
FILE_DIRS = ("common/", "proxy/")
NAME_DIRS = ("common", "proxy", "smb", "advise", "wanem")
SOCKET_HEADERS = re.compile(r"#\s*include\s*<(sys/socket\.h|netinet/[^>]*|arpa/inet\.h|netdb\.h|sys/un\.h)>")
INCLUDE = re.compile(r'\s*#\s*include\s*"([^"]+)"')
# A line that starts a function definition: at column 0, a name and "(",
# no "=" before it (an initialised table is no function), no ";" at its end.
DEF_START = re.compile(r"^(?![#\s/*}])[^=;(]*?\b([A-Za-z_]\w*)\s*\(")


def load_tree():
    """{path from the top: [lines]} of every C file and folder README in
    the folders the rules read, and README.md."""
    tree = {}
    for top in NAME_DIRS:
        for d, _, files in os.walk(os.path.join(SRCDIR, top)):
            for f in files:
                if f.endswith((".c", ".h")) or f == "README.md":
                    p = os.path.join(d, f)
                    with open(p, encoding="utf-8") as fh:
                        tree[os.path.relpath(p, SRCDIR)] = fh.read().split("\n")
    with open(os.path.join(SRCDIR, "README.md"), encoding="utf-8") as fh:
        tree["README.md"] = fh.read().split("\n")
    return tree


def c_files(tree, *tops):
    return sorted(p for p in tree if p.endswith((".c", ".h")) and p.split("/")[0] in tops)


def layer_of(path):
    """The layer a file is in, or None."""
    for layer in LAYERS:
        if path.startswith(layer + "/"):
            return layer
    return None


def include_target(tree, name):
    """The file an #include "name" means: names are written from the top
    (common/, smb/) or from proxy/ (conn/conn.h)."""
    for cand in (name, "proxy/" + name):
        if cand in tree:
            return cand
    return None


def includes(tree, path):
    out = []
    for line in tree[path]:
        m = INCLUDE.match(line)
        if m:
            t = include_target(tree, m.group(1))
            if t:
                out.append(t)
    return out


def system_includes(tree, path, header):
    pat = re.compile(r"\s*#\s*include\s*<" + re.escape(header) + ">")
    return [i + 1 for i, line in enumerate(tree[path]) if pat.match(line)]


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


def module(path, stems):
    """The module a file belongs to: x.c and x.h are module x, and so are
    x_part.c and x_part.h when x is a module of the same folder
    (options_table.c belongs to options); a types-only header x-t.h is a
    module of its own."""
    stem = os.path.splitext(path)[0]
    head = stem.rsplit("/", 1)[0] + "/" + stem.rsplit("/", 1)[1].split("_")[0]
    return head if head != stem and head in stems else stem


# --- the rules: each returns the list of what breaks it --------------------


def rule_folders(tree):
    bad = [p for p in c_files(tree, "proxy") if p.count("/") == 1]
    bad += [f"{p}: in no layer" for p in c_files(tree, "proxy") if p.count("/") > 1 and not layer_of(p)]
    return bad


def rule_layers(tree):
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    bad = []
    for p in c_files(tree, "common", "smb", "proxy"):
        here = layer_of(p)
        for t in includes(tree, p):
            there = layer_of(t)
            if here and there and rank[there] > rank[here]:
                bad.append(f"{p} includes {t}: {there}/ is above {here}/")
    return bad


def rule_no_folder_cycle(tree):
    graph = {}
    for p in c_files(tree, "common", "smb", "proxy"):
        here = layer_of(p)
        for t in includes(tree, p):
            there = layer_of(t)
            if here and there and there != here:
                graph.setdefault(here, set()).add(there)
    return [", ".join(c) for c in tangles(graph)]


def rule_io_no_loop(tree):
    return [f"{p}:{n}: <ev.h>" for p in c_files(tree, "proxy") if p.startswith("proxy/io/")
            for n in system_includes(tree, p, "ev.h")]


def rule_priv_no_conn(tree):
    return [f"{p} includes {t}" for p in c_files(tree, "proxy") if p.startswith("proxy/priv/")
            for t in includes(tree, p) if t.startswith("proxy/conn/")]


def rule_image_in_handover(tree):
    return [f"{p} includes {t}" for p in c_files(tree, "common", "smb", "proxy")
            if not p.startswith("proxy/handover/")
            for t in includes(tree, p) if t == "proxy/handover/image.h"]


def rule_common_alone(tree):
    return [f"{p} includes {t}" for p in c_files(tree, "common")
            for t in includes(tree, p) if not t.startswith("common/")]


def rule_smb_no_sockets(tree):
    bad = []
    for p in c_files(tree, "smb"):
        for i, line in enumerate(tree[p]):
            if SOCKET_HEADERS.search(line):
                bad.append(f"{p}:{i + 1}: {line.strip()}")
        bad += [f"{p} includes {t}" for t in includes(tree, p) if not t.startswith(("smb/", "common/"))]
    return bad


def rule_no_smb_offsets(tree):
    magic = re.compile(r"\\x[fF][eEfF]SMB|0x[fF][eEfF]\s*,\s*'S'|#\s*define\s+\w+_OFF(SET)?\b")
    return [f"{p}:{i + 1}: {line.strip()}" for p in c_files(tree, "proxy")
            for i, line in enumerate(tree[p]) if magic.search(line)]


def rule_no_include_cycle(tree):
    files = {p: set(includes(tree, p)) for p in c_files(tree, "common", "smb", "proxy")}
    bad = ["files: " + ", ".join(c) for c in tangles(files)]
    stems = {os.path.splitext(f)[0] for f in files}
    mods = {}
    for f, incs in files.items():
        m = module(f, stems)
        mods.setdefault(m, set()).update(module(i, stems) for i in incs if module(i, stems) != m)
    bad += ["modules: " + ", ".join(c) for c in tangles(mods)]
    return bad


def rule_fdpass_once(tree):
    return [p for p in c_files(tree, "common", "proxy")
            if p != "common/fdpass.c" and any("SCM_RIGHTS" in line for line in tree[p])]


def rule_unique_names(tree):
    seen, bad = {}, []
    for p in c_files(tree, *NAME_DIRS):
        base = os.path.basename(p)
        if base == "main.c":  # each program's own, one per folder
            continue
        if base in seen:
            bad.append(f"{seen[base]} and {p}")
        seen.setdefault(base, p)
    return bad


def rule_sizes(tree):
    bad, seen = [], 0
    for p in c_files(tree, *FUNC_DIRS):
        if p.startswith(FILE_DIRS) and len(tree[p]) - 1 > FILE_MAX_LINES:
            bad.append(f"{p}: {len(tree[p]) - 1} lines, over {FILE_MAX_LINES}")
        if not p.endswith(".c"):
            continue
        for name, line, n in functions_in(tree[p]):
            seen += 1
            if n > FUNC_MAX_LINES:
                bad.append(f"{p}:{line}: {name}() is {n} lines")
    if seen < 500:
        bad.append(f"the scanner found only {seen} functions")
    return bad


def rule_map(tree):
    bad = []
    folders = [layer for layer in LAYERS if layer not in ROW_MAPPED]
    for layer in folders:
        readme = layer + "/README.md"
        if readme not in tree:
            bad.append(f"{readme} is missing")
            continue
        text = "\n".join(tree[readme])
        for p in tree:
            if layer_of(p) == layer and p.endswith((".c", ".h")):
                if f"`{os.path.basename(p)}`" not in text:
                    bad.append(f"{readme} does not name `{os.path.basename(p)}`")
    table = "\n".join(line for line in tree["README.md"] if line.startswith("|"))
    for layer in LAYERS:
        if f"`{layer}/`" not in table:
            bad.append(f"README.md's layout table does not name `{layer}/`")
    # Folders without a README of their own: their row names each file
    # (a header alone where it has no .c).
    for top in ROW_MAPPED:
        row = "\n".join(line for line in tree["README.md"] if line.startswith(f"| `{top}/`"))
        for p in c_files(tree, top):
            base = os.path.basename(p)
            if p.endswith(".h") and p[:-2] + ".c" in tree:
                continue
            if f"`{base}`" not in row:
                bad.append(f"README.md's row for `{top}/` does not name `{base}`")
    return bad


RULES = [
    ("no .c file directly in proxy/, and every file in a layer", rule_folders),
    ("a file includes only its own or lower layers (" + " < ".join(l.split("/")[-1] for l in LAYERS) + ")",
     rule_layers),
    ("no cycle between folders", rule_no_folder_cycle),
    ("io/ does not include <ev.h>", rule_io_no_loop),
    ("priv/ includes nothing of conn/", rule_priv_no_conn),
    ("only handover/ includes the handover image", rule_image_in_handover),
    ("common/ includes only common/", rule_common_alone),
    ("smb/ includes no socket header, and only smb/ and common/", rule_smb_no_sockets),
    ("proxy/ holds no SMB magic or offset constants (a heuristic)", rule_no_smb_offsets),
    ("no #include cycle among files or modules", rule_no_include_cycle),
    ("descriptors are passed in common/fdpass.c alone (SCM_RIGHTS nowhere else in the daemon)",
     rule_fdpass_once),
    ("no two C files of the same name", rule_unique_names),
    (f"no function over {FUNC_MAX_LINES} lines, no file of the daemon over {FILE_MAX_LINES}", rule_sizes),
    ("each folder's README.md names its files; README.md names each folder", rule_map),
]


def planted(tree, path, lines=None, add=None):
    """A copy of the tree with a file added, or lines added to one."""
    t = dict(tree)
    if lines is not None:
        t[path] = lines
    if add is not None:
        t[path] = add + t[path]
    return t


def breakers(tree):
    """For each rule, the tree with one violation of it planted."""
    long_fn = ["int f(void)", "{"] + ["\tx++;"] * FUNC_MAX_LINES + ["}", ""]
    return {
        rule_folders: planted(tree, "proxy/stray.c", ["int stray;", ""]),
        rule_layers: planted(tree, "proxy/io/pump.c", add=['#include "daemon/reload.h"']),
        rule_no_folder_cycle: planted(tree, "proxy/io/pump.c", add=['#include "conn/conn.h"']),
        rule_io_no_loop: planted(tree, "proxy/io/pump.c", add=["#include <ev.h>"]),
        rule_priv_no_conn: planted(tree, "proxy/priv/privs.c", add=['#include "conn/conn.h"']),
        rule_image_in_handover: planted(tree, "proxy/daemon/main.c", add=['#include "handover/image.h"']),
        rule_common_alone: planted(tree, "common/log.c", add=['#include "smb/framer.h"']),
        rule_smb_no_sockets: planted(tree, "smb/framer.c", add=["#include <sys/socket.h>"]),
        rule_no_smb_offsets: planted(tree, "proxy/io/pump.c", add=["#define HDR_OFF 4"]),
        rule_no_include_cycle: planted(planted(tree, "proxy/io/a.h", ['#include "io/b.h"']),
                                       "proxy/io/b.h", ['#include "io/a.h"']),
        rule_fdpass_once: planted(tree, "proxy/handover/howire.c", add=["int x = SCM_RIGHTS;"]),
        rule_unique_names: planted(tree, "proxy/io/log.h", ["", ""]),
        rule_sizes: planted(tree, "proxy/io/pump.c", add=long_fn),
        rule_map: planted(tree, "proxy/io/unmapped.c", ["int unmapped;", ""]),
    }


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


def main():
    found = functions_in(SAMPLE)
    check(found == [("twice", 10, 4), ("long_one", 15, 8)],
          f"the scanner finds definitions, signature to closing brace, and takes no table or prototype for one: {found}")
    tree = load_tree()
    check(len(c_files(tree, "proxy")) > 100, f"the tree is read ({len(c_files(tree, 'proxy'))} files in proxy/)")
    broken = breakers(tree)
    failed = []
    for what, rule in RULES:
        bad = rule(tree)
        caught = rule(broken[rule])
        if bad:
            print(f"not ok: {what}" + "".join("\n  " + b for b in bad), flush=True)
            failed.append(rule.__name__)
        elif not caught:
            print(f"not ok: {what}: holds, but a planted violation is not caught", flush=True)
            failed.append(rule.__name__)
        else:
            print(f"ok: {what} (a planted violation is caught: {caught[0]})", flush=True)
    check(not failed, "every layout rule holds and fails when broken"
          + (f" (broken: {', '.join(failed)})" if failed else ""))


if __name__ == "__main__":
    run(main)
