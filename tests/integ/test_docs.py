"""README.md and docs/ keep their links and their shape.

README.md is the front door and docs/ holds one subject per page, so the
pages point at each other everywhere; this keeps those pointers true:

- Every relative link and image in README.md and docs/*.md, outside code,
  names a file that exists, and its #anchor, if any, names a heading of
  that page, slugged as GitHub slugs them (lowercase, punctuation dropped,
  spaces to hyphens, a repeated heading getting -1, -2, ...).
- Every page in docs/ is linked from README.md, and listed in Makefile.am's
  DOCS, so that `make dist` (and with it check-sanitizers) carries it.
- README.md stays a front door: under 450 lines.
- No table row with figures stands in two places: a data row (three cells
  or more, not a header) found twice, in one page or two, is a table
  copied instead of linked.
- Each page is Markdown still, not text a code formatter went over (as
  one did over docs/operations.md in fcd5318): it starts with a '# '
  title, no line outside code starts with a tab, and a table row is one
  line (a line right after a row is a row, or blank).
- docs/operations.md's options table is what contrib/options-table.py
  writes from proxy/conf/options_table.c (every option, in the table's
  order, with the config-file section it belongs in), and the options
  that script reads from the C source are those `smbsplice --help` lists.
- README.md says what it holds: its recipes heading counts the recipes
  under it (a paragraph each that starts in bold), the memory of an idle
  connection is the same figure in its prose and in its table, and the
  guest tests it says `make check` and `make check-guests` run are as
  many as Makefile.am lists.
"""
import difflib
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile

from harness import SMBSPLICE, SRCDIR, TMPDIR, check, run
from test_manpages import key_scope

README = os.path.join(SRCDIR, "README.md")
DOCS = sorted(glob.glob(os.path.join(SRCDIR, "docs", "*.md")))
README_MAX_LINES = 450


def read(path):
    """The text of a page."""
    with open(path, encoding="utf-8") as f:
        return f.read()


def unfenced(text):
    """text with fenced code blocks blanked out (a `# comment` in a shell
    block is no heading); newlines are kept, so line numbers stay."""
    return re.sub(r"^```.*?^```[^\n]*$", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.M | re.S)


def prose(text):
    """text with code blocks and inline code spans blanked out, so that
    brackets in code (`[::1]:445`, `[global]`) are not taken for links."""
    return re.sub(r"`[^`\n]*(?:\n[^`\n]+)*`", lambda m: "\n" * m.group(0).count("\n"), unfenced(text))


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    """The set of #anchors the headings of a Markdown page define."""
    seen, out = {}, set()
    for m in re.finditer(r"^#{1,6} +(.+?) *#*$", unfenced(read(path)), re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path):
    """[(line, target)] of every relative link and image of a page."""
    text = prose(read(path))
    out = []
    for m in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)(?: \"[^\"]*\")?\)", text):
        target = m.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        out.append((text.count("\n", 0, m.start()) + 1, target))
    return out


def check_links(pages):
    """Every relative link of pages names a file there is, and a heading
    there is when it has an #anchor."""
    bad, count, cache = [], 0, {}
    for page in pages:
        here = os.path.dirname(page)
        name = os.path.relpath(page, SRCDIR)
        for line, target in links(page):
            count += 1
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(here, path)) if path else page
            if not os.path.exists(dest):
                bad.append(f"{name}:{line}: {target}: no {os.path.relpath(dest, SRCDIR)}")
                continue
            if anchor:
                if not dest.endswith(".md"):
                    bad.append(f"{name}:{line}: {target}: an anchor into a file that is not Markdown")
                    continue
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    bad.append(f"{name}:{line}: {target}: {os.path.relpath(dest, SRCDIR)} has no heading "
                               f"whose anchor is #{anchor}")
    check(count >= 50, f"README.md and docs/ hold {count} relative links")
    check(not bad, f"every relative link resolves, and every #anchor names a heading"
          + ("".join("\n  " + b for b in bad)))


def check_reachable():
    """Every page of docs/ is one link from README.md, and in the dist."""
    linked = {os.path.normpath(os.path.join(SRCDIR, t.partition("#")[0])) for _, t in links(README)}
    missing = [os.path.relpath(d, SRCDIR) for d in DOCS if d not in linked]
    check(not missing, f"README.md links to every page of docs/ ({len(DOCS)})"
          + (": not to " + ", ".join(missing) if missing else ""))
    am = read(os.path.join(SRCDIR, "Makefile.am"))
    m = re.search(r"^DOCS *=((?:.*\\\n)*.*)$", am, re.M)
    listed = set(m.group(1).replace("\\\n", " ").split()) if m else set()
    unlisted = [os.path.relpath(d, SRCDIR) for d in DOCS if os.path.relpath(d, SRCDIR) not in listed]
    check(m and not unlisted, "Makefile.am's DOCS lists every page of docs/"
          + (": not " + ", ".join(unlisted) if unlisted else ""))


def check_tables(pages):
    """No data row of a table appears twice over pages."""
    where, dup = {}, []
    for page in pages:
        name = os.path.relpath(page, SRCDIR)
        lines = prose(read(page)).split("\n")
        for i, line in enumerate(lines):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not line.startswith("|") or len(cells) < 3 or re.fullmatch(r"[|:\- ]+", line):
                continue
            if i + 1 < len(lines) and re.fullmatch(r"\|[|:\- ]+", lines[i + 1].strip()):
                continue  # a header row: tables of one kind share it
            if not any(re.search(r"\d", c) for c in cells):
                continue
            key = tuple(cells)
            if key in where:
                dup.append(f"{name}:{i + 1} repeats {where[key]}: {line.strip()[:100]}")
            else:
                where[key] = f"{name}:{i + 1}"
    check(not dup, f"no table row with figures stands in two places ({len(where)} rows)"
          + ("".join("\n  " + d for d in dup)))


def check_markdown(pages):
    """Every page still Markdown: see the module's docstring."""
    bad = []
    for path in pages:
        text = read(path)
        name = os.path.relpath(path, SRCDIR)
        if not text.startswith("# "):
            bad.append(f"{name}:1: no '# ' title")
        lines = unfenced(text).split("\n")
        for i, line in enumerate(lines):
            if line.startswith("\t"):
                bad.append(f"{name}:{i + 1}: a line outside code starts with a tab")
            elif i and lines[i - 1].startswith("|") and line and not line.startswith("|"):
                bad.append(f"{name}:{i + 1}: a table row broken over lines")
    check(not bad, f"every page is Markdown: a title, no tab-led line, one line per table row ({len(pages)} pages)"
          + "".join("\n  " + b for b in bad[:20]))


def options_table_script():
    """contrib/options-table.py as a module (its name has a dash)."""
    spec = importlib.util.spec_from_file_location("options_table", os.path.join(SRCDIR, "contrib/options-table.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_options_table():
    """docs/operations.md's options table against the program's."""
    gen = options_table_script()
    opts = gen.read_options(SRCDIR)
    r = subprocess.run([SMBSPLICE, "--help"], capture_output=True, text=True, timeout=10)
    listed = re.findall(r"^  (?:-\w, |    )--([a-z0-9-]+)", r.stdout, re.M)
    names = [o["name"] for o in opts]
    check(r.returncode == 0 and sorted(names) == sorted(listed),
          f"contrib/options-table.py reads the {len(names)} options `smbsplice --help` lists"
          + ("" if sorted(names) == sorted(listed) else
             f": only in the C source {sorted(set(names) - set(listed))}, only in --help {sorted(set(listed) - set(names))}"))
    # The section the script reads from the C source, against where the
    # running program takes each key (test_manpages.py's probe).
    os.makedirs(TMPDIR, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="docs-", dir=TMPDIR)
    said = {"command line only": "cli", "a listener's section": "listener"}
    wrong = []
    try:
        for o in opts:
            got = key_scope(o["name"], scratch)
            if got != said.get(gen.where_cell(o), "global"):
                wrong.append(f"{o['name']}: {gen.where_cell(o)}, the program: {got}")
    finally:
        shutil.rmtree(scratch)
    check(not wrong, "each option's section, as the script reads it, is where the program takes it"
          + "".join("\n  " + w for w in wrong))
    page = read(os.path.join(SRCDIR, gen.PAGE))
    want = gen.rewrite(page, opts)
    diff = "".join(difflib.unified_diff(page.splitlines(True), want.splitlines(True), gen.PAGE, "generated", n=0))
    check(want == page, f"docs/operations.md's options table is what contrib/options-table.py writes "
          f"({len(opts)} options)" + ("" if want == page else
                                      ": run contrib/options-table.py and review the rows it added\n" + diff[:3000]))


NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def check_readme_says():
    """README's count of recipes and its idle connection's figure."""
    text = unfenced(read(README))
    m = re.search(r"^## (\w+) recipes\n(.*?)(?=^## )", text, re.M | re.S)
    check(m is not None, "README.md has a section '## N recipes'")
    said = m.group(1).lower()
    n = len(re.findall(r"^\*\*[^*\n]+\*\*", m.group(2), re.M))
    check(said in NUMBERS and NUMBERS.index(said) + 1 == n,
          f"README.md's '{m.group(1)} recipes' heading counts the {n} recipes under it")
    prose_kib = re.findall(r"idle\s+connection\s+costs\s+it\s+about\s+([\d.]+)\s+KiB", text)
    table_kib = re.findall(r"^\| memory per idle connection[^|]*\| ([\d.]+) KiB", text, re.M)
    with open(os.path.join(SRCDIR, "Makefile.am"), encoding="utf-8") as f:
        mk = f.read()
    lists = {}
    for var in ("GUEST_CHECK_TESTS", "GUEST_TESTS"):
        lm = re.search(rf"^{var} =((?:.*\\\n)*.*)$", mk, re.M)
        lists[var] = re.findall(r"test_guest_\w+\.py", lm.group(1)) if lm else []
    lists["GUEST_TESTS"] += lists["GUEST_CHECK_TESTS"] if "$(GUEST_CHECK_TESTS)" in mk else []
    gm = re.search(r"`make\s+check`\s+runs\s+(\w+)\s+of\s+those\s+tests;\s+`make\s+check-guests`\s+runs\s+all\s+(\w+)[.,]",
                   text)
    said = [NUMBERS.index(w) + 1 if w in NUMBERS else None for w in gm.groups()] if gm else None
    have = [len(lists["GUEST_CHECK_TESTS"]), len(set(lists["GUEST_TESTS"]))]
    check(said == have, f"README.md's guest test counts ({said}) are Makefile.am's ({have})")
    check(len(prose_kib) == 1 and prose_kib == table_kib,
          f"README.md's idle connection costs the same in its prose and its table ({prose_kib}, {table_kib} KiB)")


def main():
    check(len(DOCS) >= 6, f"docs/ holds {len(DOCS)} pages")
    pages = [README] + DOCS
    check_links(pages)
    check_reachable()
    n = read(README).count("\n")
    check(n < README_MAX_LINES, f"README.md is {n} lines, under {README_MAX_LINES}: the rest belongs in docs/")
    check_tables(pages)
    check_markdown(pages)
    check_options_table()
    check_readme_says()


if __name__ == "__main__":
    run(main, alarm=60)
