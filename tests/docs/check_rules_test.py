#!/usr/bin/env python3
"""check_rules.py catches each kind of drift: a citation of an identifier
keel.h lacks, of a rule with another minor, of quoted text instead of an
identifier, a "where it can tell" check of a rule that does not say so, and
an identifier keel.h defines twice. Runs it on a copy of the tree's keel.h
and CHANGELOG with planted citations.

Usage: check_rules_test.py <source root>. Exit status 1 if a plant is missed.
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

root = pathlib.Path(sys.argv[1]).resolve()
checker = pathlib.Path(__file__).with_name("check_rules.py")
failures = []

GOOD = "\n".join(f'    KEEL_RULE(0, "stream.in-order");' for _ in range(60))
PLANTS = {
    'KEEL_RULE(0, "stream.no-such-rule");': "cites [stream.no-such-rule], which keel.h does not state",
    'KEEL_RULE(3, "stream.in-order");': "cites [stream.in-order] as a rule of 1.3; keel.h says since 1.0",
    'KEEL_RULE(0, "Threads: every entry may be called");': "cites text, not a rule identifier",
    'KEEL_RULE_WHERE_IT_CAN_TELL(0, "stream.in-order");': "keel.h's text does not say so",
}

with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    (tmp / "api/include/keel").mkdir(parents=True)
    shutil.copy(root / "api/CHANGELOG.md", tmp / "api/CHANGELOG.md")
    header = (root / "api/include/keel/keel.h").read_text()
    (tmp / "conformance").mkdir()
    (tmp / "conformance/good_test.cpp").write_text(GOOD + "\n")

    def run(header_text, plant=None):
        (tmp / "api/include/keel/keel.h").write_text(header_text)
        planted = tmp / "conformance/planted_test.cpp"
        planted.write_text(plant + "\n" if plant else "")
        return subprocess.run([sys.executable, str(checker), str(tmp)], capture_output=True, text=True)

    clean = run(header)
    if clean.returncode != 0:
        failures.append(f"the tree's keel.h with good citations fails:\n{clean.stdout}")
    for plant, expected in PLANTS.items():
        r = run(header, plant)
        if r.returncode == 0 or expected not in r.stdout:
            failures.append(f"planted {plant!r}: expected a problem containing {expected!r}, got:\n{r.stdout}")
    twice = header.replace("[stream.query] since 1.0:", "[stream.in-order] since 1.0:", 1)
    r = run(twice)
    if r.returncode == 0 or "rule [stream.in-order] is defined twice" not in r.stdout:
        failures.append(f"an identifier defined twice was not reported:\n{r.stdout}")

for f in failures:
    print(f)
print(f"check_rules.py against {len(PLANTS) + 2} cases: {len(failures)} missed")
sys.exit(1 if failures else 0)
