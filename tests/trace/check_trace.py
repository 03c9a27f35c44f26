#!/usr/bin/env python3
"""Runs keel_trace_workload and checks its trace against what it enqueued:
valid JSON, one named track per stream, the operations of each stream by
kind, device times in each stream's order (cpu:0 runs a stream in order),
host waits on the host thread's track, memory counters. Then keel-trace
summary and draw on it (draw skipped, with the reason, without matplotlib).

    check_trace.py <keel_trace_workload> <keel_trace.py> <work dir>
"""
import collections
import json
import os
import shutil
import subprocess
import sys

SKIP = 77


def fail(message):
    print(f"check_trace: {message}", file=sys.stderr)
    sys.exit(1)


def stream_tracks(events):
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            if (e["pid"], e["tid"]) in names:
                fail(f"track {e['tid']} is named twice")
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    return {k: v for k, v in names.items() if " stream " in v}, names


KINDS = sorted(["copy h2d", "copy d2h", "copy d2d", "memset", "kernel", "host function", "hold", "wait event",
                "wait fence", "record event", "fence"], key=len, reverse=True)


def kind_of(e):
    """An operation's kind: a named range says it, other names start with it."""
    if "kind" in e["args"]:
        return e["args"]["kind"]
    return next((k for k in KINDS if e["name"] == k or e["name"].startswith(k + " ")), "?")


def check_run(workload, work, device_times):
    path = os.path.join(work, "workload.json" if device_times else "workload-nodt.json")
    args = [workload, path] + ([] if device_times else ["--no-device-times"])
    run = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        fail(f"{' '.join(args)} failed: {run.stderr}")
    expected = json.loads(run.stdout)
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"]
    streams, names = stream_tracks(events)
    if len(streams) != 2:
        fail(f"{len(streams)} stream tracks ({sorted(streams.values())}), expected 2")
    for name in streams.values():
        if not name.startswith("cpu:0 stream "):
            fail(f"stream track named {name!r}, expected 'cpu:0 stream <id>'")
    # Stream a was created first: the lower id.
    (pa, ta), (pb, tb) = sorted(streams)
    tids = {"a": ta, "b": tb}
    for which, kinds in expected["streams"].items():
        tid = tids[which]
        ops = [e for e in events if e.get("tid") == tid and e.get("ph") == "X"]
        instants = [e for e in events if e.get("tid") == tid and e.get("ph") == "i"]
        got = collections.Counter(kind_of(e) for e in ops)
        got_instants = collections.Counter(e["name"] for e in instants)
        for kind, count in kinds.items():
            if kind in ("alloc", "free", "record_stream", "free settled", "hold released"):
                if got_instants[kind] < count:
                    fail(f"stream {which}: {got_instants[kind]} {kind} instants, expected at least {count}")
            elif got[kind] != count:
                fail(f"stream {which}: {got[kind]} '{kind}' operations, expected {count} (got {dict(got)})")
        # A settled free follows the pending free of the same block.
        for settled in (e for e in instants if e["name"] == "free settled"):
            frees = [e for e in instants if e["name"] == "free" and e["args"]["addr"] == settled["args"]["addr"]
                     and e["args"].get("pending") and e["ts"] <= settled["ts"]]
            if not frees:
                fail(f"stream {which}: {settled} follows no pending free of its block")
        for e in (e for e in instants if e["name"] == "hold released"):
            if not e["args"].get("held", -1) >= 0:
                fail(f"stream {which}: a hold's release says not how long it held: {e}")
        for kind in got:
            if kind not in kinds:
                fail(f"stream {which}: unexpected operations of kind {kind!r}: {got[kind]}")
        if device_times:
            untimed = [e for e in ops if "untimed" in e["args"] or "enq" not in e["args"]]
            if untimed:
                fail(f"stream {which}: {len(untimed)} operations without device times, e.g. {untimed[0]}")
            # In order: each operation starts after the one enqueued before it ended.
            plain = sorted((e for e in ops if kind_of(e) != "range"), key=lambda e: e["args"]["enq"])
            for before, after in zip(plain, plain[1:]):
                if after["ts"] + 1e-3 < before["ts"] + before["dur"]:
                    fail(f"stream {which}: {after['name']} starts at {after['ts']} before {before['name']} "
                         f"ended at {before['ts'] + before['dur']}")
            # Every operation, a named range too: no start before its enqueue.
            for e in ops:
                if e["ts"] + 1e-3 < e["args"]["enq"]:
                    fail(f"stream {which}: {e['name']} starts at {e['ts']}, before it was enqueued at "
                         f"{e['args']['enq']}")
            rng = [e for e in ops if kind_of(e) == "range"]
            if rng and (rng[0]["args"].get("rank") != 0 or rng[0]["args"].get("peer") != 1
                        or rng[0]["name"] != "my range" or rng[0]["cat"] != "user"):
                fail(f"the range lost its name, category, rank or peer: {rng[0]}")
        else:
            if data["otherData"].get("device_times") is not False or any(
                    "enq" in e["args"] or "untimed" in e["args"] for e in ops):
                fail("device times present although switched off")
    kernels = [e for e in events if e.get("ph") == "X" and kind_of(e) == "kernel"]
    if not kernels or kernels[0]["name"] != "kernel fill":
        fail(f"the kernel is not named: {kernels[:1]}")
    waits = [e for e in events if e.get("ph") == "X" and e.get("cat") == "wait"]
    what = collections.Counter(e["name"] for e in waits)
    for w in ("HostCopy::wait", "Stream::synchronize"):
        if what[w] == 0:
            fail(f"no host wait '{w}' in the trace (waits: {dict(what)})")
    for e in waits:
        if names.get((e["pid"], e["tid"]), "").find("host thread") != 0:
            fail(f"a wait is not on a host thread's track: {e}")
    # A counter event carries the series that changed; the first carries both.
    counters = sorted((e for e in events if e.get("ph") == "C"), key=lambda e: e["ts"])
    last = {}
    for e in counters:
        last = dict(last, **e["args"])
        if "allocated" not in last or "reserved" not in last or last["allocated"] < 0 \
                or last["reserved"] < last["allocated"]:
            fail(f"memory counters inconsistent at {e}: {last}")
    if not counters:
        fail("no memory counters")
    if len(events) != expected["events"]:
        fail(f"the file has {len(events)} events, Trace::stop reported {expected['events']}")
    return path


def main():
    workload, keel_trace, work = sys.argv[1:4]
    # A folder of this run's own: copies of the test may run at once.
    work = os.path.join(work, str(os.getpid()))
    os.makedirs(work, exist_ok=True)
    path = check_run(workload, work, True)
    check_run(workload, work, False)
    summary = subprocess.run([sys.executable, keel_trace, "summary", path], capture_output=True, text=True)
    if summary.returncode != 0 or "busiest streams" not in summary.stdout or "host waits" not in summary.stdout:
        fail(f"keel-trace summary: {summary.returncode} {summary.stdout} {summary.stderr}")
    print(summary.stdout)
    png = os.path.join(work, "workload.png")
    draw = subprocess.run([sys.executable, keel_trace, "draw", path, "-o", png], capture_output=True, text=True)
    if draw.returncode == 2 and "matplotlib" in draw.stderr:
        print(f"keel-trace draw skipped: {draw.stderr.strip()}")
        return SKIP
    if draw.returncode != 0 or not os.path.exists(png) or os.path.getsize(png) < 1000:
        fail(f"keel-trace draw: {draw.returncode} {draw.stderr}")
    with open(png, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            fail("keel-trace draw did not write a PNG")
    print(f"ok: {path}, {png}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
