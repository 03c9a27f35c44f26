#!/usr/bin/env python3
"""keel-trace: read, merge, summarise and draw keel's trace files.

A trace is the Chrome trace event / Perfetto JSON that keel writes with
KEEL_TRACE=<file> or keel::Trace. Subcommands live in modules of their own
beside this file; each registers itself in SUBCOMMANDS below (name ->
module with add_arguments(parser) and run(args) -> exit status).
"""
import argparse
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# name -> (module, one-line help). Add a subcommand with one line here.
SUBCOMMANDS = {
    "summary": ("summary", "busiest and idlest streams, longest host waits, gaps"),
    "draw": ("draw", "a timeline PNG (one lane per stream and rank) and a memory-over-time plot"),
    "merge": ("merge", "the trace files of a multi-rank job on one timeline"),
    "check": ("check", "validate a trace: JSON, one track per stream, well-formed events"),
}
# Subcommands that parse their own arguments: name -> (module whose
# main(argv) runs it, one-line help).
OWN_PARSERS = {
    "diagnose": ("diagnose", "the hang doctor's diagnosis from one or more reports (also --diagnose)"),
}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        name = "diagnose" if argv[0] == "--diagnose" else argv[0]
        if name in OWN_PARSERS:
            return importlib.import_module(OWN_PARSERS[name][0]).main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="keel-trace",
        description=__doc__.splitlines()[0],
        epilog="also: " + "; ".join(f"{n}: {h}" for n, (_, h) in OWN_PARSERS.items()),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = {}
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        module.add_arguments(p)
        modules[name] = module
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 1
    try:
        return modules[args.command].run(args)
    except (OSError, ValueError) as e:
        print(f"keel-trace {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
