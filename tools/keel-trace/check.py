"""keel-trace check: a trace is valid JSON with one named track per stream."""
import sys

import tracefile


def add_arguments(p):
    p.add_argument("trace", help="a trace file")
    p.add_argument("--expect-streams", type=int, default=None,
                   help="fail unless the trace has exactly this many stream tracks")


def problems(trace):
    found = []
    names = {}
    for (pid, tid), t in trace.tracks.items():
        if t.is_stream:
            if t.name in names.get(pid, set()):
                found.append(f"two tracks named {t.name!r} in process {pid}")
            names.setdefault(pid, set()).add(t.name)
        for s in t.slices:
            if s.dur_us < 0:
                found.append(f"{t.label}: {s.name} has a negative duration")
    return found


def run(args):
    trace = tracefile.load(args.trace)
    found = problems(trace)
    streams = trace.streams()
    if args.expect_streams is not None and len(streams) != args.expect_streams:
        found.append(f"{len(streams)} stream tracks, expected {args.expect_streams}")
    for p in found:
        print(f"keel-trace check: {p}", file=sys.stderr)
    if not found:
        print(f"{args.trace}: ok, {len(streams)} stream track(s), "
              f"{sum(len(t.slices) for t in streams)} operation(s)")
    return 1 if found else 0
