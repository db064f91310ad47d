#!/usr/bin/env python3
"""Write docs/operations.md's options table from the program's own table.

    contrib/options-table.py            rewrite the table in docs/operations.md
    contrib/options-table.py --check    exit 1, with a diff, if it differs

proxy/conf/options_table.c holds every option as one row of opt_table
(its name, short letter, metavar, scope, whether a reload can change it,
whether it is a command-line option only, its --help text). The command
line, the config file, --help and the man pages' test all read that
table; this script makes docs/operations.md's options table read it too,
so that an option added there gets a row here, in the same order, with
the config-file section it belongs in.

The table stands between two markers in docs/operations.md:

    <!-- options-table: ... -->

    | Option | In a config file | Default | Meaning |
    ...

    <!-- end options-table -->

Of each row, the script writes the Option cell (from name, short letter
and metavar) and the "In a config file" cell (from scope, restart_only
and cli_only). Default and Meaning are prose written in docs/operations.md
and kept as they stand, found by the option's long name: the script reads
them back from the rows already there, in the table's form or in an older
one of three cells (Option, Default, Meaning), so that a row another
branch added by hand keeps its words after a merge. An option with no row
yet gets its --help text as its Meaning, and as its Default what that
text says in "(default X)": improve the words in place, then run this
again, and they stay. A row whose option is no longer in opt_table goes.

It reads the C source, not the binary, so that it runs without a build:
the rows are designated initializers ({ .name = "x", .scope = L, ... }),
each field a string literal (adjacent ones joined, C escapes read), a
character literal, an identifier or a number. tests/integ/test_docs.py
checks that the table in the page is what this writes, and that the
options read here are the ones `smbsplice --help` lists.
"""
import argparse
import difflib
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE_C = "proxy/conf/options_table.c"
PAGE = "docs/operations.md"
BEGIN = re.compile(r"^<!-- options-table:.*-->$", re.M)
END = re.compile(r"^<!-- end options-table -->$", re.M)
HEADER = "| Option | In a config file | Default | Meaning |\n|---|---|---|---|\n"
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}


def c_string(body):
    """The value of one C string literal's body (between its quotes)."""
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), body)


def field_value(text):
    """A field's initializer as Python: str (string literals joined, or a
    character literal), True/False, or the token as written."""
    text = text.strip()
    if text.startswith('"'):
        return "".join(c_string(s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', text))
    m = re.fullmatch(r"'((?:[^'\\]|\\.))'", text)
    if m:
        return c_string(m.group(1))
    return {"true": True, "false": False}.get(text, text)


def split_top(text, sep):
    """Split text at `sep` outside string literals and brackets."""
    out, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            m = re.compile(r"%s(?:[^%s\\]|\\.)*%s" % (c, c, c)).match(text, i)
            if not m:
                raise ValueError(f"an unterminated literal in {TABLE_C}: {text[i:i + 40]!r}")
            cur.append(m.group(0))
            i = m.end()
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


def strip_comments(src):
    """C source with its comments blanked, string literals left alone."""
    return re.sub(r'"(?:[^"\\\n]|\\.)*"|/\*.*?\*/|//[^\n]*',
                  lambda m: m.group(0) if m.group(0).startswith('"') else " ", src, flags=re.S)


def read_options(top=TOP):
    """[{name, shortc, metavar, help, scope, repeat, cli_only,
    restart_only}] in opt_table's order."""
    with open(os.path.join(top, TABLE_C), encoding="utf-8") as f:
        src = strip_comments(f.read())
    m = re.search(r"\bopt_table\[\]\s*=\s*\{", src)
    if not m:
        raise ValueError(f"{TABLE_C}: no 'opt_table[] = {{'")
    # The table's body: up to the brace that closes it.
    depth, i = 1, m.end()
    while depth and i < len(src):
        lit = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'').match(src, i)
        if lit:
            i = lit.end()
            continue
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        i += 1
    body = src[m.end():i - 1]
    opts = []
    for row in split_top(body, ","):
        row = row.strip()
        if not row:
            continue
        if not (row.startswith("{") and row.endswith("}")):
            raise ValueError(f"{TABLE_C}: a row that is not {{ ... }}: {row[:60]!r}")
        fields = {}
        for item in split_top(row[1:-1], ","):
            fm = re.match(r"\s*\.(\w+)\s*=(.*)$", item, re.S)
            if fm:
                fields[fm.group(1)] = field_value(fm.group(2))
            # Anything else is a macro such as LFIELD(m): where the value lives.
        if "name" not in fields:
            raise ValueError(f"{TABLE_C}: a row without .name: {row[:60]!r}")
        opts.append({"name": fields["name"], "shortc": fields.get("shortc"),
                     "metavar": fields.get("metavar"), "help": fields.get("help", ""),
                     "scope": fields.get("scope"), "repeat": fields.get("repeat") is True,
                     "cli_only": fields.get("cli_only") is True,
                     "restart_only": fields.get("restart_only") is True})
    if len(opts) < 10:
        raise ValueError(f"{TABLE_C}: only {len(opts)} rows read from opt_table")
    return opts


def md(text):
    """text for a table cell: a pipe escaped."""
    return text.replace("|", "\\|")


def option_cell(o):
    """`-l, --listen HOST:PORT`, as --help writes it."""
    s = (f"-{o['shortc']}, " if o["shortc"] else "") + "--" + o["name"]
    if o["metavar"]:
        s += " " + o["metavar"]
    return f"`{md(s)}`"


def where_cell(o):
    """Which section of a config file takes the option as a key."""
    if o["cli_only"]:
        return "command line only"
    if o["scope"] in ("P", "SCOPE_PROCESS"):
        return "`[global]`, restart to change" if o["restart_only"] else "`[global]`"
    if o["scope"] in ("L", "SCOPE_LISTENER"):
        return "a listener's section"
    raise ValueError(f"{TABLE_C}: option {o['name']}: scope {o['scope']!r}")


def from_help(o):
    """Default and Meaning for an option with no row yet, from --help."""
    text = " ".join(line.strip() for line in o["help"].split("\n")).strip()
    default = ""
    m = re.search(r"\s*\(default:? ([^;)]*)\)", text)
    if m:
        default = m.group(1).strip()
        text = (text[:m.start()] + text[m.end():]).strip()
    if text:
        text = text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
    return (f"`{md(default)}`" if default and " " not in default else md(default)), md(text)


ROW_NAME = re.compile(r"^\|\s*`(?:-\w, )?--([a-z0-9-]+)")


def split_row(line):
    """The cells of a table row; a pipe escaped as \\| stays in its cell."""
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in cells[1:-1]]


def kept_prose(table):
    """{long name: (Default, Meaning)} from the rows there now, of four
    cells or of the older three."""
    out = {}
    for line in table.splitlines():
        m = ROW_NAME.match(line)
        if not m:
            continue
        cells = split_row(line)
        if len(cells) >= 3:
            out[m.group(1)] = (cells[-2], cells[-1])
    return out


def render(opts, prose):
    """The table, header included."""
    rows = []
    for o in opts:
        default, meaning = prose.get(o["name"]) or from_help(o)
        cells = (option_cell(o), where_cell(o), default, meaning)
        rows.append("|" + "|".join(f" {c} " if c else " " for c in cells) + "|\n")
    return HEADER + "".join(rows)


def rewrite(page_text, opts):
    """The page with its table as opt_table makes it."""
    b = BEGIN.search(page_text)
    e = END.search(page_text)
    if not b or not e or e.start() < b.end():
        raise ValueError(f"{PAGE}: no '<!-- options-table: ... -->' ... '<!-- end options-table -->'")
    old = page_text[b.end():e.start()]
    # Blank lines around the table: a row right before a marker would
    # read as a row broken over two lines.
    return page_text[:b.end()] + "\n\n" + render(opts, kept_prose(old)) + "\n" + page_text[e.start():]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only say whether the page is up to date")
    ap.add_argument("--top", default=TOP, help="the source tree (default: this script's)")
    args = ap.parse_args()
    path = os.path.join(args.top, PAGE)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    new = rewrite(text, read_options(args.top))
    if args.check:
        if new != text:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                       PAGE, PAGE + " (generated)"))
            print(f"{PAGE}'s options table differs from {TABLE_C}: run contrib/options-table.py",
                  file=sys.stderr)
            return 1
        return 0
    if new != text:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
