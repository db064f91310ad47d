"""What a connection carries across a live handover, as a test.

Every top-level member of struct conn (proxy/conn/conn-t.h) must have
exactly one row in CONN_CARRIED, the table beside it from which the
handover's record, its save and its adopt are made: a member with no row
would be silently dropped by a handover (and the image's layout check,
which compares sizes, would not notice), a row with no member would not
compile. The check runs first on a synthetic struct with a member the
table lacks, to show that it fails when it should.
"""
import os
import re

from harness import SRCDIR, check, run

HEADER = os.path.join(SRCDIR, "proxy/conn/conn-t.h")
ROW = re.compile(r"^\s*X\((\w+),\s*(\w+)")


def struct_members(text, name):
    """The member names of `struct name { ... };` in C text, in order: one
    declaration a line or several (int a, *b, c[4];), comments dropped."""
    m = re.search(r"^struct " + name + r" \{\n(.*?)^\};", text, re.S | re.M)
    if not m:
        return None
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    out = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        # The type is what comes before the first declarator; every
        # declarator after a comma is a name, maybe a pointer or an array.
        first, *rest = decl.split(",")
        names = [first.split()[-1]] + rest
        out += [re.sub(r"\[.*\]", "", n).strip().lstrip("*").strip() for n in names]
    return out


def table_rows(text):
    """[(member, how)] of the CONN_CARRIED table's rows."""
    m = re.search(r"^#define CONN_CARRIED\(X\)(.*?)(?<!\\)\n(?!\t)", text, re.S | re.M)
    if not m:
        return None
    return [r.groups() for r in (ROW.match(line) for line in m.group(1).split("\n")) if r]


def mismatch(text):
    """What is wrong between struct conn and CONN_CARRIED in `text`: a list
    of lines, empty when every member has exactly one row."""
    members, rows = struct_members(text, "conn"), table_rows(text)
    if members is None or rows is None:
        return ["struct conn or CONN_CARRIED not found"]
    named = [r[0] for r in rows]
    out = [f"member {m} has no row in CONN_CARRIED" for m in members if m not in named]
    out += [f"row {n} names no member of struct conn" for n in named if n not in members]
    out += [f"member {n} has {named.count(n)} rows" for n in sorted(set(named)) if named.count(n) > 1]
    hows = {"COPY", "BYTES", "SOCK", "PAIR", "OPEN", "REBUILT"}
    out += [f"row {n}: {h} is no way to carry a member" for n, h in rows if h not in hows]
    return out


SYNTHETIC = """struct conn {
\tuint64_t id;
\tstruct conn *prev, *next; /* links */
\tchar cli_text[64];
\tbool unauth, forgotten;
};

#define CONN_CARRIED(X)                    \\
\tX(id, COPY, U64, uint64_t)         \\
\tX(prev, REBUILT, "a link")         \\
\tX(next, REBUILT, "a link")         \\
\tX(cli_text, BYTES, char, 64)       \\
\tX(unauth, COPY, FLAG, uint8_t)

"""


def main():
    bad = mismatch(SYNTHETIC)
    check(bad == ["member forgotten has no row in CONN_CARRIED"],
          f"the check finds a member the table lacks in a synthetic struct: {bad}")
    bad = mismatch(SYNTHETIC.replace("\tX(next,", "\tX(next, REBUILT, \"x\") \\\n\tX(next,"))
    check("member next has 2 rows" in bad, f"and a member with two rows: {bad}")
    with open(HEADER, encoding="utf-8") as f:
        text = f.read()
    members = struct_members(text, "conn")
    check(members and len(members) > 20, f"struct conn's members are found ({members})")
    bad = mismatch(text)
    check(not bad, f"every member of struct conn has exactly one row in CONN_CARRIED ({len(members)})"
          + "".join("\n  " + b for b in bad))


if __name__ == "__main__":
    run(main)
