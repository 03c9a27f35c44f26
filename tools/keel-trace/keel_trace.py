#!/usr/bin/env python3
"""keel-trace: look inside a keel program (subcommands, one module each)."""

import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# name -> module (in this folder) whose main(argv) runs it.
SUBCOMMANDS = {
    "diagnose": "diagnose",
}


def usage():
    names = ", ".join(sorted(SUBCOMMANDS))
    return f"usage: keel-trace <subcommand> [args...]  (subcommands: {names}; --diagnose is diagnose)"


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print(usage())
        return 0 if argv else 1
    name = "diagnose" if argv[0] == "--diagnose" else argv[0]
    if name not in SUBCOMMANDS:
        print(f"keel-trace: unknown subcommand '{argv[0]}'", file=sys.stderr)
        print(usage(), file=sys.stderr)
        return 1
    return importlib.import_module(SUBCOMMANDS[name]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
