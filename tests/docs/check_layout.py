#!/usr/bin/env python3
"""Checks that the docs describe the tree as it is:

- README.md's layout table: every path a row names exists, every top-level
  folder has a row, and a row of a folder that holds one thing per
  subfolder (tests/, bench/, tools/, samples/, testing/, plugins/) names
  each subfolder, as scripts/ and docs/ name each file;
- runtime/README.md's header table names exactly runtime/include/keel/*.hpp;
- no README states a count of tests or a measured figure (those live on the
  dated pages of docs/measurements/, with machine, commit and command);
- no page outside docs/measurements/ and the changelogs tells how, when or
  by whom the work was done;
- the list of required plugin entries (base/.../required_entries.hpp) is
  what keel.h marks [required].

Usage: check_layout.py <source root>. Prints each problem; exit status 1 if any.
"""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
problems = []


def say(where, what):
    problems.append(f"{where}: {what}")


try:
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.splitlines()
except (OSError, subprocess.CalledProcessError):
    tracked = [p.relative_to(root).as_posix() for p in root.rglob("*")
               if p.is_file() and not any(part.startswith(("build", ".")) for part in p.relative_to(root).parts)]
tracked = [t for t in tracked if (root / t).exists()]


def children(folder, dirs):
    """The tracked subfolders (dirs) or files (not dirs) directly in `folder`."""
    prefix = folder.rstrip("/") + "/"
    out = set()
    for t in tracked:
        if not t.startswith(prefix):
            continue
        rest = t[len(prefix):].split("/")
        if dirs and len(rest) > 1:
            out.add(rest[0])
        elif not dirs and len(rest) == 1:
            out.add(rest[0])
    return out


def table_rows(text, heading):
    """The rows of the first table after `heading`: lists of cells."""
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    section = text[start:end if end != -1 else len(text)]
    rows = []
    for line in section.splitlines():
        if line.startswith("|") and not re.match(r"^\|\s*-", line):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows[1:]  # the header row


def ticked(cell):
    return re.findall(r"`([^`]+)`", cell)


# --- README.md's layout table against the tree -------------------------------
readme = (root / "README.md").read_text()
# Folders that hold one thing per subfolder: their row names every subfolder.
COLLECTIONS = {"tests", "bench", "tools", "samples", "testing", "plugins"}
# Folders whose row names every file in them.
FILE_LISTS = {"scripts", "docs"}
listed_top = set()
rows = table_rows(readme, "## Layout")
for cells in rows:
    if len(cells) < 2:
        continue
    firsts = ticked(cells[0])
    if not firsts:
        say("README.md", f"a layout row names no folder: {cells[0]}")
        continue
    folder = firsts[0].rstrip("/")
    listed_top.add(folder.split("/")[0])
    if not (root / folder).exists():
        say("README.md", f"the layout table names {folder}, which does not exist")
        continue
    names = set(ticked(cells[1]))
    for name in names:
        # A path in the row: relative to the root, or to the row's folder.
        if "/" in name and re.fullmatch(r"[\w.+-]+(/[\w.+-]+)*/?", name):
            if not (root / name).exists() and not (root / folder / name).exists():
                say("README.md", f"the layout row of {folder}/ names {name}, which does not exist")
    bare = {n.rstrip("/") for n in names}
    if folder in COLLECTIONS:
        for sub in sorted(children(folder, dirs=True)):
            if sub not in bare and f"{folder}/{sub}" not in bare:
                say("README.md", f"the layout row of {folder}/ does not name its folder {sub}/")
    if folder in FILE_LISTS:
        for f in sorted(children(folder, dirs=False)):
            if f not in bare and f"{folder}/{f}" not in bare:
                say("README.md", f"the layout row of {folder}/ does not name its file {f}")
        for sub in sorted(children(folder, dirs=True)):
            if sub not in bare and f"{folder}/{sub}" not in bare:
                say("README.md", f"the layout row of {folder}/ does not name its folder {sub}/")
top = {t.split("/")[0] for t in tracked if "/" in t}
for folder in sorted(top - listed_top):
    if not folder.startswith("."):
        say("README.md", f"the layout table does not name the top-level folder {folder}/")

# --- runtime/README.md's header table against runtime/include/keel ----------
runtime_readme = (root / "runtime/README.md").read_text()
headers = {p.name for p in (root / "runtime/include/keel").glob("*.hpp")}
named = set()
for cells in table_rows(runtime_readme, "## Public headers"):
    for name in ticked(cells[0]):
        named.add(name)
        if name not in headers:
            say("runtime/README.md", f"the header table names {name}, which runtime/include/keel does not have")
for name in sorted(headers - named):
    say("runtime/README.md", f"the header table has no row for runtime/include/keel/{name}")

# --- figures and counts in READMEs -------------------------------------------
# A measured figure: a number with a unit of time per operation or of rate.
figure = re.compile(r"\d[\d.,]*\s?(?:–\s?\d[\d.,]*\s?)?(?:GB/s|MB/s|M ops/s|ops/s|M/s|ns\b|µs\b|us\b)")
# What a line may say with such a unit: a goal, a bound or a setting, not a result.
bound = re.compile(r"goal|≤|≥|<=|>=|at most|at least|default|KEEL_\w+")
tests_count = re.compile(r"\b\d[\d,]* tests\b")
readmes = [root / t for t in tracked if t.endswith("README.md")]
for doc in readmes:
    rel = doc.relative_to(root)
    if rel.parts[0] == "tests":
        continue
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        if tests_count.search(line):
            say(f"{rel}:{n}", "states a count of tests, which changes with every test added: drop it")
        if figure.search(line) and not bound.search(line):
            say(f"{rel}:{n}", "states a measured figure; figures go to a dated page in docs/measurements/ "
                              f"(machine, commit, command): {line.strip()[:100]}")

# --- text about how the project was made -------------------------------------
diary = re.compile(r"this session|next session|one later session|in one session|next round|"
                   r"other engineers|was lent to|the next run of|the issue's measurements|"
                   r"this work\b|the lead\b|the session\b|not measured yet", re.I)
for t in tracked:
    if not t.endswith(".md") or t.startswith(("docs/measurements/", "tests/")) or t.endswith("CHANGELOG.md"):
        continue
    for n, line in enumerate((root / t).read_text().splitlines(), 1):
        m = diary.search(line)
        if m:
            say(f"{t}:{n}", f"tells how the work was done ('{m.group(0)}'); the docs describe the project")

# --- the list of required entries against keel.h's [required] marks --------
header = (root / "api/include/keel/keel.h").read_text()
table = header[header.index("typedef struct keel_plugin_api {"):header.index("} keel_plugin_api;")]
marked, previous = [], 0
for m in re.finditer(r"\(\*(\w+)\)\(", table):
    # The text since the previous entry holds this entry's comment.
    if "[required]" in table[previous:m.start()]:
        marked.append(m.group(1))
    previous = m.end()
required_list = (root / "base/include/keel/base/required_entries.hpp").read_text()
listed_required = re.findall(r"X\((\w+)\)", required_list[required_list.index("#define"):])
if listed_required != marked:
    say("base/include/keel/base/required_entries.hpp",
        f"lists {listed_required}; keel.h marks [required], in table order: {marked}")

for p in problems:
    print(p)
print(f"layout, header table, figures and history of the docs: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
