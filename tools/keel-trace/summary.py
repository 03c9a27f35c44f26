"""keel-trace summary: where the time went, per stream and host thread."""
import tracefile


def add_arguments(p):
    p.add_argument("trace", help="a trace file (KEEL_TRACE's output or keel-trace merge's)")
    p.add_argument("--top", type=int, default=5, help="how many entries each list shows")


def busy_us(slices):
    """Time covered by at least one slice (nested ranges count once)."""
    total = 0.0
    end = None
    for s in sorted(slices, key=lambda s: s.start_us):
        if end is None or s.start_us > end:
            total += s.dur_us
            end = s.end_us
        elif s.end_us > end:
            total += s.end_us - end
            end = s.end_us
    return total


def gaps(slices):
    """Idle intervals between the slices of a track: (start, length)."""
    out = []
    end = None
    for s in sorted(slices, key=lambda s: s.start_us):
        if end is not None and s.start_us > end + 1.0:  # idle for more than 1 us
            out.append((end, s.start_us - end))
        end = s.end_us if end is None else max(end, s.end_us)
    return out


def size_text(n):
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def summarise(trace, top=5):
    lines = []
    t0, t1 = trace.span()
    wall = max(t1 - t0, 1e-9)
    streams = trace.streams()
    hosts = trace.host_threads()
    ops = sum(len(t.slices) for t in streams)
    lines.append(f"trace: {wall / 1000:.3f} ms, {len(streams)} stream(s), {ops} operation(s), "
                 f"{len(hosts)} host thread(s) with waits")
    rows = []
    for t in streams:
        b = busy_us(t.slices)
        rows.append((b / wall, b, len(t.slices), t))
    rows.sort(key=lambda r: -r[0])
    lines.append("busiest streams:")
    for share, b, n, t in rows[:top]:
        lines.append(f"  {t.label}: busy {share * 100:.1f}% ({b / 1000:.3f} ms, {n} ops)")
    lines.append("idlest streams:")
    for share, b, n, t in list(reversed(rows))[:top]:
        lines.append(f"  {t.label}: busy {share * 100:.1f}% ({b / 1000:.3f} ms, {n} ops)")
    waits = [(s.dur_us, s, t) for t in hosts for s in t.slices]
    waits.sort(key=lambda w: -w[0])
    total_wait = sum(w[0] for w in waits)
    lines.append(f"host waits: {len(waits)}, {total_wait / 1000:.3f} ms in all; longest:")
    for dur, s, t in waits[:top]:
        what = s.args.get("stream", "")
        lines.append(f"  {dur / 1000:.3f} ms {s.name}{' on ' + what if what else ''} ({t.label}, at "
                     f"{(s.start_us - t0) / 1000:.3f} ms)")
    all_gaps = [(g[1], g[0], t) for t in streams for g in gaps(t.slices)]
    all_gaps.sort(key=lambda g: -g[0])
    lines.append("longest gaps on a stream:")
    for length, start, t in all_gaps[:top]:
        lines.append(f"  {length / 1000:.3f} ms idle on {t.label} from {(start - t0) / 1000:.3f} ms")
    for (pid, name), series in sorted(trace.counters.items()):
        peak_a = max((v.get("allocated", 0) for _, v in series), default=0)
        peak_r = max((v.get("reserved", 0) for _, v in series), default=0)
        lines.append(f"{name} (pid {pid}): peak allocated {size_text(peak_a)}, "
                     f"peak reserved {size_text(peak_r)}, {len(series)} samples")
    return lines


def run(args):
    trace = tracefile.load(args.trace)
    for line in summarise(trace, args.top):
        print(line)
    return 0
