#!/usr/bin/env python3
"""Checks the facts the docs repeat against their one source:

- the ABI version a doc says keel (or an in-tree plugin) implements is
  keel.h's KEEL_ABI_VERSION_MAJOR.MINOR, and a table size shown with it is
  KEEL_PLUGIN_API_STRUCT_SIZE on LP64;
- an "(ABI 1.N)" that dates a feature names a minor api/CHANGELOG.md has;
- a README that says how many lines its plugin has is within 20 % of it.

Usage: check_docs.py <source root>. Prints each mismatch; exit status 1 if any.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
problems = []


def say(where, what):
    problems.append(f"{where}: {what}")


header = (root / "api/include/keel/keel.h").read_text()
major = int(re.search(r"#define KEEL_ABI_VERSION_MAJOR (\d+)u", header).group(1))
minor = int(re.search(r"#define KEEL_ABI_VERSION_MINOR (\d+)u", header).group(1))
current = f"{major}.{minor}"
table = header[header.index("typedef struct keel_plugin_api {"):header.index("} keel_plugin_api;")]
# struct_size, abi_major + abi_minor (8 bytes), then one pointer per entry.
table_bytes = 8 + 8 + 8 * len(re.findall(r"\(\*\w+\)\(", table))
changelog_minors = set(re.findall(r"^## (\d+\.\d+)", (root / "api/CHANGELOG.md").read_text(), re.M))
if current not in changelog_minors:
    say("api/CHANGELOG.md", f"has no '## {current}' section for keel.h's ABI {current}")

docs = [p for p in root.rglob("*.md") if not any(part.startswith(("build", ".")) for part in p.relative_to(root).parts)]
implements = re.compile(r"(?:implements[^.\n]*?C ABI v|stable C ABI \(version |C ABI v)(\d+\.\d+)")
shown = re.compile(r"ABI (\d+\.\d+) \(table of (\d+) bytes\)")
dated = re.compile(r"\((?:optional, |the optional )?ABI (\d+\.\d+)\)|optional ABI (\d+\.\d+) entry")
for doc in docs:
    rel = doc.relative_to(root)
    if rel.as_posix() == "api/CHANGELOG.md" or rel.parts[0] == "tests":
        continue
    text = doc.read_text()
    for m in implements.finditer(text):
        if m.group(1) != current:
            say(rel, f"says ABI {m.group(1)} ('{m.group(0)}'); keel.h is {current}")
    for m in shown.finditer(text):
        if m.group(1) != current or int(m.group(2)) != table_bytes:
            say(rel, f"shows 'ABI {m.group(1)} (table of {m.group(2)} bytes)'; keel.h is {current}, "
                     f"{table_bytes} bytes on LP64")
    for m in dated.finditer(text):
        version = m.group(1) or m.group(2)
        if version not in changelog_minors:
            say(rel, f"dates something ABI {version}, a minor api/CHANGELOG.md does not have")
    for m in re.finditer(r"about ([\d,]+) lines", text):
        claimed = int(m.group(1).replace(",", ""))
        src = doc.parent / "src"
        if not src.is_dir():
            continue
        counted = sum(len(p.read_text(errors="replace").splitlines()) for p in src.rglob("*")
                      if p.is_file() and p.suffix in {".cpp", ".hpp", ".cu", ".cuh", ".inc", ".c", ".h"})
        if abs(claimed - counted) > 0.2 * counted:
            say(rel, f"says about {claimed} lines; {src.relative_to(root)} has {counted}")

for p in problems:
    print(p)
print(f"docs against keel.h {current} ({table_bytes}-byte table): {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
