#!/usr/bin/env python3
"""Checks that keel.h is the one contract keel-cts and the conformance suite cite:

- every rule keel.h states is written `[area.rule-name] since 1.N:`, each
  identifier once, with a minor no newer than KEEL_ABI_VERSION_MINOR and one
  api/CHANGELOG.md has;
- every `[area.rule-name]` that keel.h mentions without "since" names a rule
  it states;
- every citation of a rule in the sources (KEEL_RULE, KEEL_RULE_WHERE_IT_CAN_TELL,
  keel-cts's table checks: KEEL_CTS_RULE) names an identifier keel.h states,
  with the minor keel.h gives it, and a check of a rule that holds "where the
  plugin can tell" cites a rule whose text says so.

Usage: check_rules.py <source root>. Prints each problem; exit status 1 if any.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
problems = []


def say(where, what):
    problems.append(f"{where}: {what}")


header_path = root / "api/include/keel/keel.h"
header = header_path.read_text()
current = int(re.search(r"#define KEEL_ABI_VERSION_MINOR (\d+)u", header).group(1))
changelog_minors = {int(m) for m in re.findall(r"^## 1\.(\d+)", (root / "api/CHANGELOG.md").read_text(), re.M)}

IDENT = r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)+"
# A rule's text: from its identifier to the next identifier or the end of its comment.
flat = re.sub(r"\n\s*(?:/?\*+/?|//)?", " ", header)
definition = re.compile(r"\[(" + IDENT + r")\] since 1\.(\d+):")
rules = {}
for m in definition.finditer(flat):
    ident, minor = m.group(1), int(m.group(2))
    end = flat.find("*/", m.end())
    nxt = definition.search(flat, m.end())
    stop = min(x for x in (end if end >= 0 else len(flat), nxt.start() if nxt else len(flat)))
    text = flat[m.end():stop]
    if ident in rules:
        say("keel.h", f"rule [{ident}] is defined twice")
        continue
    rules[ident] = (minor, text)
    if minor > current:
        say("keel.h", f"rule [{ident}] since 1.{minor} is newer than KEEL_ABI_VERSION_MINOR 1.{current}")
    if minor not in changelog_minors:
        say("keel.h", f"rule [{ident}] since 1.{minor}: api/CHANGELOG.md has no '## 1.{minor}'")
if len(rules) < 20:
    say("keel.h", f"only {len(rules)} rules found: is the `[area.rule-name] since 1.N:` format still used?")
for m in re.finditer(r"\[(" + IDENT + r")\](?! since)", flat):
    if m.group(1) not in rules:
        say("keel.h", f"mentions [{m.group(1)}], a rule it does not state")

citation = re.compile(r"\b(KEEL_RULE_WHERE_IT_CAN_TELL|KEEL_RULE|KEEL_CTS_RULE)\(\s*([^,()]+?)\s*,\s*\"([^\"]*)\"\s*\)")
cited = 0
skip_parts = ("build", ".git")
for src in sorted(root.rglob("*")):
    rel = src.relative_to(root)
    if not src.is_file() or src.suffix not in {".cpp", ".hpp", ".h", ".c"}:
        continue
    if any(part.startswith(skip_parts) for part in rel.parts):
        continue
    text = src.read_text(errors="replace")
    if "KEEL_RULE" not in text and "KEEL_CTS_RULE" not in text:
        continue
    matched = {m.start() for m in citation.finditer(text)}
    for m in re.finditer(r"\b(?:KEEL_RULE_WHERE_IT_CAN_TELL|KEEL_RULE|KEEL_CTS_RULE)\(\s*\d", text):
        if m.start() not in matched:
            line = text.count("\n", 0, m.start()) + 1
            say(f"{rel}:{line}", "a rule citation not of the form KEEL_RULE(<minor>, \"<area.rule-name>\")")
    for m in citation.finditer(text):
        kind, minor_text, ident = m.groups()
        line = text.count("\n", 0, m.start()) + 1
        where = f"{rel}:{line}"
        if not minor_text.isdigit():
            continue  # the macro's own definition
        cited += 1
        minor = int(minor_text)
        if not re.fullmatch(IDENT, ident):
            say(where, f"{kind}({minor}, \"{ident[:60]}\") cites text, not a rule identifier of keel.h")
            continue
        if ident not in rules:
            say(where, f"cites [{ident}], which keel.h does not state")
            continue
        if rules[ident][0] != minor:
            say(where, f"cites [{ident}] as a rule of 1.{minor}; keel.h says since 1.{rules[ident][0]}")
        if kind == "KEEL_RULE_WHERE_IT_CAN_TELL" and "where" not in rules[ident][1]:
            say(where, f"checks [{ident}] as a rule that holds where the plugin can tell; keel.h's text does not say so")
if cited < 50:
    say("sources", f"only {cited} rule citations found (KEEL_RULE ...): did the suite move?")

for p in problems:
    print(p)
print(f"keel.h states {len(rules)} rules (ABI 1.{current}); {cited} citations checked: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
