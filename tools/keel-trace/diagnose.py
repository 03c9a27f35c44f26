"""keel-trace diagnose: the hang doctor's report of one or more processes.

A keel process writes its report as JSON to the file KEEL_HANG_REPORT names
when one of its host waits passes KEEL_HANG_TIMEOUT, when it receives
SIGUSR1 (`kill -USR1 <pid>`), and on every keel::diagnose() call. This
command prints each report's diagnosis as the process logged it, and, given
the reports of several ranks, which ranks have not arrived at which
communication operation, from all of them together.
"""

import argparse
import json
import re
import sys

# One line per communicator in each report (comm/src/diagnose_section.cpp).
PROGRESS = re.compile(
    r"\[comm-progress\] name=(?P<name>\S+) rank=(?P<rank>\d+) size=(?P<size>\d+) "
    r"enqueued=(?P<enqueued>\d+) waiting=(?P<waiting>-?\d+) op=(?P<op>\S+)"
)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise SystemExit(f"keel-trace diagnose: cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise SystemExit(f"keel-trace diagnose: {path} is not a keel hang report (not JSON: {e})")
    if not isinstance(report, dict) or report.get("format") != "keel-hang-report":
        raise SystemExit(f"keel-trace diagnose: {path} is not a keel hang report (no format 'keel-hang-report')")
    return report


def progress_of(report):
    """The [comm-progress] lines of a report, as dicts."""
    out = []
    for section in report.get("sections", []):
        for line in section.splitlines():
            m = PROGRESS.search(line)
            if m:
                d = m.groupdict()
                for k in ("rank", "size", "enqueued", "waiting"):
                    d[k] = int(d[k])
                out.append(d)
    return out


def arrivals(reports):
    """Lines saying, per communicator, which ranks have not arrived where the others wait."""
    by_comm = {}
    for report in reports:
        for p in progress_of(report):
            by_comm.setdefault(p["name"], {})[p["rank"]] = p
    lines = []
    for name, ranks in sorted(by_comm.items()):
        size = max(p["size"] for p in ranks.values())
        waiting = {r: p for r, p in ranks.items() if p["waiting"] >= 0}
        if not waiting:
            lines.append(f"communicator '{name}': no rank of these reports waits in an operation")
            continue
        index = max(p["waiting"] for p in waiting.values())
        op = next(p["op"] for p in waiting.values() if p["waiting"] == index)
        at = sorted(r for r, p in waiting.items() if p["waiting"] == index)
        missing = []
        for r in range(size):
            p = ranks.get(r)
            if p is None:
                missing.append(f"rank {r} (no report)")
            elif p["enqueued"] <= index:
                missing.append(f"rank {r} (enqueued {p['enqueued']} operations: its last is #{p['enqueued'] - 1})")
        ranks_text = ", ".join(str(r) for r in at)
        if missing:
            lines.append(
                f"communicator '{name}': ranks {ranks_text} wait in {op} #{index}; "
                f"not arrived: {'; '.join(missing)}"
            )
        else:
            lines.append(f"communicator '{name}': ranks {ranks_text} wait in {op} #{index}; every rank has enqueued it")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(
        prog="keel-trace diagnose",
        description="Print the hang doctor's diagnosis from KEEL_HANG_REPORT files (one per process or rank): "
        "what each stream waits for, the chains to their roots, cycles, and which ranks have not arrived "
        "at which communication operation.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="a JSON report written by a keel process")
    parser.add_argument("--summary-only", action="store_true", default=False,
                        help="print only the cross-rank summary and whether any report found a cycle")
    args = parser.parse_args(argv)

    reports = [load(p) for p in args.reports]
    if not args.summary_only:
        for path, report in zip(args.reports, reports):
            print(f"== {path} (pid {report.get('pid')}) ==")
            print(report.get("text", ""))
            print()
    cycle = any(r.get("cycle") for r in reports)
    blocked = any(r.get("blocked") for r in reports)
    summary = arrivals(reports)
    if summary:
        print("across the reports:")
        for line in summary:
            print("  " + line)
    print("cycle: yes" if cycle else ("blocked, no cycle" if blocked else "no hang"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
