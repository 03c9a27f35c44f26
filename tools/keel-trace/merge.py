"""keel-trace merge: the per-process files of a job on one timeline.

Each process keeps its own pid; the files' clocks are aligned: files from
one host share the steady clock as they are; files from other hosts are
shifted by the difference of their wall clocks (unix_minus_steady_ns).
"""
import json

import tracefile


def add_arguments(p):
    p.add_argument("traces", nargs="+", help="the files of the ranks (one per process)")
    p.add_argument("-o", "--output", required=True, help="the merged trace")


def merge(datas):
    out = []
    others = []
    base = None
    for data in datas:
        other = data.get("otherData", {})
        host = other.get("host")
        offset_ns = other.get("unix_minus_steady_ns")
        # Times in a file count from its steady_origin_ns (0: the steady clock's own origin).
        origin_ns = other.get("steady_origin_ns", 0)
        if base is None:
            base = (host, offset_ns, origin_ns)
        shift_ns = origin_ns - base[2]
        if host != base[0] and offset_ns is not None and base[1] is not None:
            shift_ns += offset_ns - base[1]
        shift_us = shift_ns / 1000.0
        for e in data["traceEvents"]:
            if shift_us and "ts" in e:
                e = dict(e)
                e["ts"] = e["ts"] + shift_us
                if isinstance(e.get("args"), dict) and "enq" in e["args"]:
                    e["args"] = dict(e["args"], enq=e["args"]["enq"] + shift_us)
            out.append(e)
        others.append(other)
    return {"displayTimeUnit": "ns", "traceEvents": out, "otherData": {"merged": others}}


def run(args):
    merged = merge([tracefile.read_json(p) for p in args.traces])
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(merged, f)
    pids = {e.get("pid") for e in merged["traceEvents"]}
    print(f"{args.output}: {len(args.traces)} file(s), {len(pids)} process(es), "
          f"{len(merged['traceEvents'])} events")
    return 0
