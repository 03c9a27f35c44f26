#!/usr/bin/env python3
"""The table of keel's goals, parsed from the logs scripts/gpu-check.sh wrote.

    python3 scripts/gpu_goals.py .gpu-check

Each part's outcome is in <dir>/<part>.status (ok | exit N | timed out after
Ns | skipped: why) and its output in <dir>/<part>.log. A goal whose part did
not run, or whose figure is not in the output, reads "not measured: <why>".
Rows without a goal are figures to read, marked "(figure)".
"""
import re
import sys
from pathlib import Path

ROWS = []  # (device, goal, figure, verdict)


def add(device, goal, figure, verdict):
    ROWS.append((device, goal, figure, verdict))


def verdict(ok):
    return "met" if ok else "MISSED"


class Part:
    """One part's log and status; `why` is set when it gives no figures."""

    def __init__(self, root, name):
        self.name = name
        status_file, log_file = root / f"{name}.status", root / f"{name}.log"
        self.status = status_file.read_text().strip() if status_file.exists() else "not run"
        self.log = log_file.read_text(errors="replace") if log_file.exists() else ""
        self.why = None
        if self.status.startswith("skipped: "):
            self.why = self.status[len("skipped: "):]
            if self.why.startswith("no GPU"):
                self.why = "no GPU"
        elif self.status == "not run":
            self.why = "not run"

    def missing(self, device, goals):
        """Rows for `goals` that this part could not measure."""
        why = self.why or f"no figure in the output ({self.status})"
        for g in goals:
            add(device, g, "-", f"not measured: {why}")

    def note(self):
        return "" if self.status == "ok" else f" [{self.status}]"


def lines_after(log, header_start):
    """The indented lines under the first line that starts with header_start."""
    out, inside = [], False
    for line in log.splitlines():
        if not inside:
            inside = line.startswith(header_start)
        elif line and not line[0].isspace():
            break
        else:
            out.append(line)
    return out


# ---- ctest and memcheck ----------------------------------------------------

def ctest(p):
    goal = "ctest: every test passes"
    m = re.search(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)", p.log)
    if p.why or not m:
        return p.missing("all", [goal])
    failed, total = int(m.group(2)), int(m.group(3))
    skipped = len(re.findall(r"^\s*\d+ - .*\(Skipped\)\s*$", p.log, re.M))
    fails = re.findall(r"^\s*\d+ - (\S+) \((?:Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)", p.log, re.M)
    figure = (f"{total - failed - skipped} passed, {failed} failed, {skipped} skipped (of {total}; "
              "the kit test runs in CI only)")
    if fails:
        figure += "; failed: " + ", ".join(fails[:4]) + (" ..." if len(fails) > 4 else "")
    add("all", goal, figure + p.note(), verdict(failed == 0 and p.status == "ok"))


def cts(p, device):
    goal = "keel-cts passes on the plugin"
    if p.why:
        return p.missing(device, [goal])
    summary = next((l.strip() for l in reversed(p.log.splitlines()) if "keel-cts:" in l), "no summary line")
    add(device, goal, summary[:160] + p.note(), verdict("keel-cts: PASSED" in p.log and p.status == "ok"))


def memcheck(p):
    goal = "compute-sanitizer memcheck over the CUDA tests: no error"
    summaries = [int(n) for n in re.findall(r"ERROR SUMMARY: (\d+) error", p.log)]
    if p.why or not summaries:
        return p.missing("cuda:0", [goal])
    failed_tests = len(re.findall(r"^\[  FAILED  \] \S+\.\S+", p.log, re.M))
    figure = f"{sum(summaries)} errors in {len(summaries)} runs, {failed_tests} failed tests"
    add("cuda:0", goal, figure + p.note(), verdict(sum(summaries) == 0 and failed_tests == 0 and p.status == "ok"))


# ---- keel-cuda-bench -------------------------------------------------------

def cuda_bench(p):
    goals = ["pinned h2d copy: keel >= 95% of cudaMemcpyAsync from 64 MiB",
             "pinned d2h copy: keel >= 95% of cudaMemcpyAsync from 64 MiB",
             "memcpy_h2d enqueue (64 B pinned): adds <= 150 ns",
             "event_record: adds <= 150 ns",
             "kernel_launch (empty kernel): adds <= 150 ns"]
    if p.why:
        return p.missing("cuda:0", goals)
    for direction, goal in (("host -> device", goals[0]), ("device -> host", goals[1])):
        rows = []
        for line in lines_after(p.log, f"pinned {direction} bandwidth"):
            m = re.match(r"^\s+(\d+ [KM]iB)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+(met|MISSED)\s*$", line)
            if m:
                rows.append((m.group(1), float(m.group(4)), m.group(5)))
        if not rows:
            p.missing("cuda:0", [goal])
            continue
        worst = min(rows, key=lambda r: r[1])
        add("cuda:0", goal, f"lowest {worst[1]:.1f}% (at {worst[0]}){p.note()}",
            verdict(all(r[2] == "met" for r in rows)))
    for label, goal in (("memcpy_h2d enqueue, 64 B pinned", goals[2]), ("event_record (no timing)", goals[3]),
                        ("kernel_launch, empty kernel", goals[4])):
        m = re.search(re.escape(label) + r"\s+([\d.]+)\s+([\d.]+)\s+(-?[\d.]+)\s+[\d.]+x\s+(met|MISSED)", p.log)
        if not m:
            p.missing("cuda:0", [goal])
            continue
        add("cuda:0", goal, f"+{float(m.group(3)):.0f} ns ({m.group(1)} vs {m.group(2)} ns){p.note()}",
            verdict(m.group(4) == "met"))
    m = re.search(r"^\s+round trip\s+([\d.]+)\s+([\d.]+)\s+(-?[\d.]+)\s+([\d.]+)x", p.log, re.M)
    if m:
        add("cuda:0", "cross-stream fence round trip vs raw CUDA", f"{m.group(1)} vs {m.group(2)} us "
            f"({m.group(4)}x)", "(figure)")


# ---- lerp_bench and torch --------------------------------------------------

ROW = re.compile(r"^(.{44}) (\S+)\s+(f16|bf16|f32|f64)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(.*)$")


def lerp_rows(log):
    rows, reduce_ratio = [], {}
    for line in log.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        label = m.group(1).strip()
        if label.startswith("elementwise pass"):
            r = re.search(r"broadcast-reduce / this: ([\d.]+)x", m.group(7))
            if r and rows:
                reduce_ratio[rows[-1][0]] = float(r.group(1))
            continue
        rows.append((label, m.group(2), m.group(3), float(m.group(4)), float(m.group(6))))
    return rows, reduce_ratio


def lerp(p, torch_p):
    goal_names = ["lerp: >= 85% of a device-to-device copy, every case",
                  "lerp_grad: >= 80% of a device-to-device copy, every case without a reduction",
                  "lerp_grad broadcast-reduce: <= 1.5x an elementwise pass over the same bytes",
                  "lerp / lerp_grad: >= 1.0x torch in every row"]
    if p.why:
        return p.missing("cuda:0", goal_names)
    rows, reduce_ratio = lerp_rows(p.log)
    if not rows:
        return p.missing("cuda:0", goal_names)
    for label, op, dtype, us, pct in rows:
        if op == "lerp_grad" and label in reduce_ratio:
            ratio = reduce_ratio[label]
            add("cuda:0", f"lerp_grad {label} {dtype}: <= 1.5x an elementwise pass",
                f"{ratio:.2f}x ({us:.1f} us){p.note()}", verdict(ratio <= 1.5))
            continue
        want = 85.0 if op == "lerp" else 80.0
        add("cuda:0", f"{op} {label} {dtype}: >= {want:.0f}% of a d2d copy", f"{pct:.1f}% ({us:.1f} us){p.note()}",
            verdict(pct >= want))
    if torch_p.why:
        return torch_p.missing("cuda:0", [goal_names[3]])
    torch_rows = {(label, op, dtype): us for label, op, dtype, us, _ in lerp_rows(torch_p.log)[0]}
    if not torch_rows:
        return torch_p.missing("cuda:0", [goal_names[3]])
    for label, op, dtype, us, _ in rows:
        t = torch_rows.get((label, op, dtype))
        if t is None:
            continue
        add("cuda:0", f"{op} {label} {dtype}: >= 1.0x torch", f"{t / us:.2f}x ({us:.1f} vs torch {t:.1f} us)",
            verdict(t / us >= 1.0))


# ---- keel-memory-bench ------------------------------------------------------

def memory_bench(p, device):
    goals = ["cached alloc+free pair, one thread: <= 100 ns",
             "64 KiB pairs from 2 and 4 threads on one stream: aggregate >= the 1-thread rate",
             "pageable h2d, staged container and moved-in vector: >= 70% of the pinned copy (64, 256 MiB)",
             "pageable d2h, into a caller's vector and into a new one: >= 70% of the pinned copy (64, 256 MiB)",
             "pinned allocations in steady state: 0",
             "deferred frees, bytes not reusable: <= 1.05x the oracle",
             "deferred frees: >= 1.5x the throughput of synchronising before every free"]
    if p.why:
        return p.missing(device, goals)
    note = p.note()
    sizes = [m for m in (re.match(r"^\s+([\d.]+ (?:B|KiB|MiB|GiB))\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x\s*$", l)
                         for l in lines_after(p.log, "1. Allocation, one thread")) if m]
    if sizes:
        worst = max(sizes, key=lambda m: float(m.group(2)))
        add(device, goals[0], f"at most {float(worst.group(2)):.1f} ns wall (at {worst.group(1)}; raw pair "
            f"{float(worst.group(4)):.0f} ns){note}", verdict(all(float(m.group(2)) <= 100 for m in sizes)))
    else:
        p.missing(device, goals[:1])
    threads = {int(m.group(1)): (float(m.group(2)), float(m.group(3)), float(m.group(5)))
               for m in (re.match(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", l)
                         for l in lines_after(p.log, "2. Allocation throughput")) if m}
    if 1 in threads and len(threads) > 1:
        one = threads[1][1]
        shared = " / ".join(f"{threads[t][1]:.2f}" for t in sorted(threads))
        own = " / ".join(f"{threads[t][0]:.2f}" for t in sorted(threads))
        cpu = " / ".join(f"{threads[t][2]:.0f}" for t in sorted(threads))
        add(device, goals[1], f"{'/'.join(map(str, sorted(threads)))} threads: {shared} M pairs/s, {cpu} CPU ns "
            f"per pair (own stream each: {own} M/s){note}",
            verdict(all(threads[t][1] >= one for t in threads if t > 1)))
    else:
        p.missing(device, goals[1:2])
    # size dir pinned staged ratio% owned ratio% threads allocs give-ups [p-thr p-allocs p-refused]
    # (the plugin's columns read '-' where it copies pageable memory directly)
    copies = [m for m in (re.match(r"^\s+([\d.]+ [KMG]iB)\s+(h2d|d2h)\s+([\d.]+)\s+([\d.]+)\s+(\d+)%\s+([\d.]+)\s+(\d+)%"
                                   r"\s+(\d+)\s+(\d+)\s+(\d+)(?:\s+(\d+|-)\s+(\d+|-)\s+(\d+|-))?\s*$", l)
                          for l in lines_after(p.log, "3. Copies between pageable")) if m]
    big = [m for m in copies if m.group(1) in ("64.0 MiB", "256.0 MiB")]
    fresh = re.search(r"a new vector alone .*?: (.*)$", p.log, re.M)
    for index, direction in ((2, "h2d"), (3, "d2h")):
        rows = [m for m in big if m.group(2) == direction]
        if rows:
            ceiling = f"; a new vector alone: {fresh.group(1)}" if fresh and direction == "d2h" else ""
            add(device, goals[index], ", ".join(f"{m.group(1)}: {m.group(5)}% / {m.group(7)}% ({m.group(4)} / "
                                                f"{m.group(6)} vs {m.group(3)} GB/s, {m.group(8)} threads)"
                                                for m in rows) + ceiling + note,
                verdict(all(int(m.group(5)) >= 70 and int(m.group(7)) >= 70 for m in rows)))
        else:
            p.missing(device, goals[index:index + 1])
    if copies:
        allocs = sum(int(m.group(9)) for m in big)
        plugin = [int(m.group(12)) for m in big if m.group(12) not in (None, "-")]
        refused = [int(m.group(13)) for m in big if m.group(13) not in (None, "-")]
        plugin_text = (f"; the plugin's staging: {sum(plugin)} pinned allocations, {sum(refused)} refused copies"
                       if plugin else "; the plugin does not stage")
        add(device, goals[4], f"the runtime's: {allocs}{plugin_text} (64, 256 MiB){note}",
            verdict(allocs == 0 and sum(plugin) == 0))
    else:
        p.missing(device, goals[4:5])
    deferred = [m for m in (re.match(r"^\s+(\d+-\d+K)\s+(ahead|sync/32)\s+.*?([\d.]+)x\s+\S+ \S+\s+(\d+)\s+(\d+)\s+([\d.]+)x\s*$", l)
                            for l in lines_after(p.log, "4. Deferred cross-stream frees")) if m]
    if deferred:
        add(device, goals[5], ", ".join(f"{m.group(1)} {m.group(2)}: {m.group(3)}x" for m in deferred) + note,
            verdict(all(float(m.group(3)) <= 1.05 for m in deferred)))
        add(device, goals[6], ", ".join(f"{m.group(1)} {m.group(2)}: {m.group(6)}x" for m in deferred) + note,
            verdict(all(float(m.group(6)) >= 1.5 for m in deferred)))
    else:
        p.missing(device, goals[5:7])


# ---- sync_latency ------------------------------------------------------------

def sync_rows(log):
    rows = {}
    for line in log.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] and not cells[0].startswith("-") and cells[0] != "measurement":
            rows[cells[0]] = cells
    return rows


def sync_latency(p, device, with_goals):
    goals = ["enqueue one op, one thread: <= 100 ns",
             "stream ping-pong by fences, active: <= 2x a spinning ping-pong",
             "stream ping-pong by fences, parked: <= 1.2x a condvar ping-pong",
             "CPU of 8 idle streams: ~0 (<= 0.5% of a core)"]
    if p.why:
        return p.missing(device, goals if with_goals else ["stream ping-pong by fences, active"])
    rows = sync_rows(p.log)
    enqueue = next((c for k, c in rows.items() if k.startswith("enqueue one op")), None)
    fences = rows.get("stream ping-pong A <-> B, fences only, active")
    parked = rows.get("stream ping-pong A <-> B by fences, parked")
    idle = re.search(r"idle CPU of 8 idle streams after the spin window: ([\d.]+)%", p.log)
    note = p.note()
    if not with_goals:
        hand_off = rows.get("fence hand-off A -> B (device side), active")
        for name, cells in (("fence hand-off A -> B on the device (ns)", hand_off),
                            ("stream ping-pong by fences, active (ns per round trip)", fences)):
            if cells:
                why = re.search(re.escape(cells[0]) + r": (n/a.*)", p.log)
                add(device, name, (cells[1] if cells[1] != "n/a" else (why.group(1) if why else "n/a")) + note,
                    "(figure)")
        return
    if enqueue:
        add(device, goals[0], f"{enqueue[1]} ns{note}", verdict(float(enqueue[1]) <= 100))
    else:
        p.missing(device, goals[:1])
    for cells, goal, limit in ((fences, goals[1], 2.0), (parked, goals[2], 1.2)):
        if cells and cells[1] != "n/a" and cells[4] != "-":
            add(device, goal, f"{cells[4]}x ({cells[1]} vs {cells[3]} ns){note}", verdict(float(cells[4]) <= limit))
        else:
            p.missing(device, [goal])
    if idle:
        add(device, goals[3], f"{idle.group(1)}% of a core{note}", verdict(float(idle.group(1)) <= 0.5))
    else:
        p.missing(device, goals[3:])


def staging_bench(p):
    """The plugins' pageable staging against a simulated link (host side)."""
    goal = ("plugins' pageable staging on a simulated 55 GB/s link, 3 blocks: >= 70% of min(host copy, link) "
            "(64, 256 MiB, both directions)")
    if p.why:
        return p.missing("host", [goal])
    rows = [m for m in (re.match(r"^\s*(\d+) MiB\s+(h2d|d2h)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+\d+%\s+([\d.]+)"
                                 r"\s+([\d.]+)\s+([\d.]+)\s+(\d+)%", line)
                         for line in p.log.splitlines()) if m]
    picked = [m for m in rows if m.group(1) in ("64", "256") and m.group(4) == "3"]
    if not picked:
        return p.missing("host", [goal])
    figure = ", ".join(f"{m.group(1)} MiB {m.group(2)}: {m.group(5)} GB/s = {m.group(9)}% "
                       f"(host {m.group(6)}, 1 block {next((r.group(5) for r in rows if r.group(1) == m.group(1) and r.group(2) == m.group(2) and r.group(4) == '1'), '?')})"
                       for m in picked)
    add("host", goal, figure + p.note(), verdict(all(int(m.group(9)) >= 70 for m in picked)))


# ---- soak and communication ---------------------------------------------------

def soak(p, device):
    goal = "keel-soak: read-backs verified, no hang, no growth (exit 0 in its time bound)"
    if p.why:
        return p.missing(device, [goal])
    last = next((l.strip() for l in reversed(p.log.splitlines()) if l.strip()), "no output")
    add(device, goal, last[:160] + p.note(), verdict(p.status == "ok"))


def comm_bench(p, device):
    """keel-comm-bench's closing lines, against raw Gloo in the same run."""
    goals = {"large": "comm busbw >= 0.9x raw Gloo from 1 MiB up (2 ranks)",
             "small": "comm time <= 1.2x raw Gloo below 64 KiB (2 ranks)"}
    if p.why:
        return p.missing(device, goals.values())
    for key, pattern, ok in (("large", r"from 1 MiB up \(goal >= 0.9x\), smallest: ([\d.]+)x", lambda r: r >= 0.9),
                             ("small", r"below 64 KiB: largest keel/raw time ratio ([\d.]+)x", lambda r: r <= 1.2)):
        m = re.search(pattern, p.log)
        if m:
            add(device, goals[key], f"{m.group(1)}x" + p.note(), verdict(ok(float(m.group(1))) and p.status == "ok"))
        elif key == "large":  # the small sizes are optional (-b)
            add(device, goals[key], "-", f"not measured: no figure in the output ({p.status})")


def nccl_two_ranks(p, device):
    goal = "NCCL, two ranks on two GPUs: collectives, send/recv, a failed stream and abort() named on both ranks"
    if p.why:
        return p.missing(device, [goal])
    failed = re.findall(r"^--- (\S+) FAILED$", p.log, re.M)
    figure = f"failed: {', '.join(failed)}" if failed else "every scenario passed"
    add(device, goal, figure + p.note(), verdict(not failed and p.status == "ok"))


def pipeline(p, device):
    goal = "pipeline: sync and hold give one checksum; hold never blocks the host after a send"
    if p.why:
        return p.missing(device, [goal])
    sums = re.findall(r"^checksum: (\S+)", p.log, re.M)
    blocked = [float(x) for x in re.findall(r"^host blocked after sends: ([\d.]+) ms", p.log, re.M)]
    if len(sums) < 2 or len(blocked) < 2:
        return p.missing(device, [goal])
    steps = re.findall(r"^step time: ([\d.]+) ms", p.log, re.M)
    figure = (f"checksums {sums[0]} / {sums[-1]}; host blocked after sends {blocked[0]:.1f} ms (sync) vs "
              f"{blocked[-1]:.1f} ms (hold); step time {' vs '.join(steps)} ms")
    add(device, goal, figure + p.note(), verdict(sums[0] == sums[-1] and blocked[-1] == 0 and p.status == "ok"))


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".gpu-check")
    part = lambda name: Part(root, name)  # noqa: E731
    ctest(part("ctest"))
    cts(part("cts-cuda"), "cuda:0")
    memcheck(part("memcheck"))
    cuda_bench(part("cuda-bench"))
    lerp(part("lerp-bench-cuda"), part("torch-lerp-bench"))
    memory_bench(part("memory-bench-cuda"), "cuda:0")
    sync_latency(part("sync-latency-cuda"), "cuda:0", with_goals=False)
    memory_bench(part("memory-bench-cpu"), "cpu:0")
    sync_latency(part("sync-latency-cpu"), "cpu:0", with_goals=True)
    staging_bench(part("staging-bench-host"))
    soak(part("soak-cuda"), "cuda:0")
    comm_bench(part("comm-bench-cuda"), "cuda:0")
    pipeline(part("pipeline-cuda"), "cuda:0")
    nccl_two_ranks(part("comm-nccl-2ranks"), "cuda:0,1")
    comm_bench(part("comm-bench-cpu"), "cpu:0")

    info = (root / "keel-info.log").read_text(errors="replace") if (root / "keel-info.log").exists() else ""
    gpu = re.search(r"^\s*cuda:0\s+(.*)$", info, re.M)
    print(f"## keel goals on {gpu.group(1).strip() if gpu else 'a machine without a usable GPU'}\n")
    print("| device | goal | figure | verdict |")
    print("| --- | --- | --- | --- |")
    for device, goal, figure, v in ROWS:
        print(f"| {device} | {goal} | {figure} | {v} |")
    counts = {k: sum(1 for r in ROWS if r[3].startswith(k)) for k in ("met", "MISSED", "not measured")}
    print(f"\n{counts['met']} met, {counts['MISSED']} missed, {counts['not measured']} not measured")


if __name__ == "__main__":
    main()
