"""keel-trace draw: a timeline PNG (one lane per stream and rank, host
waits on their threads' lanes) with each device's memory over time below.

Several traces are drawn one above the other on the same time scale (for
example the same program in two modes), each titled.
"""
import sys

import tracefile

# Colour per operation kind (args.kind), so that a lane reads at a glance.
COLOURS = {
    "copy h2d": "#4e79a7",
    "copy d2h": "#59a14f",
    "copy d2d": "#76b7b2",
    "memset": "#bab0ac",
    "kernel": "#f28e2b",
    "host function": "#b07aa1",
    "hold": "#9c755f",
    "wait event": "#e15759",
    "wait fence": "#e15759",
    "record event": "#edc948",
    "fence": "#edc948",
    "range": "#ff9da7",
    "wait": "#e15759",
}


def add_arguments(p):
    p.add_argument("traces", nargs="+", help="trace files (several: drawn one above the other)")
    p.add_argument("-o", "--output", required=True, help="the PNG to write")
    p.add_argument("--titles", nargs="*", default=None, help="a title per trace (default: the file names)")
    p.add_argument("--width", type=float, default=12.0, help="figure width in inches")
    p.add_argument("--no-memory", action="store_true", help="leave out the memory-over-time plot")
    p.add_argument("--dpi", type=int, default=100, help="resolution of the PNG")


def lanes(trace):
    """Stream lanes by process, then host-thread lanes that waited."""
    streams = sorted(trace.streams(), key=lambda t: (t.pid, t.tid))
    hosts = sorted((t for t in trace.host_threads() if t.slices), key=lambda t: (t.pid, t.tid))
    return streams + hosts


def draw_timeline(ax, trace, t0, title):
    rows = lanes(trace)
    labels = []
    for y, t in enumerate(rows):
        bars = [((s.start_us - t0) / 1000.0, max(s.dur_us / 1000.0, 1e-4)) for s in t.slices]
        colours = [COLOURS.get(s.args.get("kind", "wait" if not t.is_stream else "range"), "#888888")
                   for s in t.slices]
        if bars:
            ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=colours, edgecolor="none")
        frees = [(s.start_us - t0) / 1000.0 for s in t.instants if s.name == "free"]
        if frees:
            ax.plot(frees, [y + 0.45] * len(frees), linestyle="none", marker="v", markersize=3, color="#333333")
        labels.append(t.label if len(t.label) < 48 else "..." + t.label[-45:])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_title(title, fontsize=9, loc="left")
    ax.grid(axis="x", linewidth=0.3)


def draw_memory(ax, trace, t0):
    for (pid, name), series in sorted(trace.counters.items()):
        xs = [(ts - t0) / 1000.0 for ts, _ in series]
        label = name if len({p for p, _ in trace.counters}) == 1 else f"{name} (pid {pid})"
        for key, style in (("allocated", "-"), ("reserved", "--")):
            ys = [v.get(key, 0) / 2**20 for _, v in series]
            ax.step(xs, ys, where="post", linestyle=style, linewidth=1, label=f"{label} {key}")
    ax.set_ylabel("MiB", fontsize=8)
    if trace.counters:
        ax.legend(fontsize=6, loc="upper left")
    ax.grid(linewidth=0.3)


def legend_handles(kinds):
    from matplotlib.patches import Patch
    return [Patch(color=COLOURS[k], label=k) for k in kinds if k in COLOURS]


def run(args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("keel-trace draw: matplotlib is not installed (Debian: apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 2
    traces = [tracefile.load(p) for p in args.traces]
    titles = args.titles or args.traces
    if len(titles) != len(traces):
        raise ValueError(f"--titles has {len(titles)} entries for {len(traces)} traces")
    memory = not args.no_memory and any(t.counters for t in traces)
    heights = []
    for t in traces:
        heights.append(max(1.2, 0.28 * len(lanes(t)) + 0.6))
        if memory:
            heights.append(1.4)
    fig, axes = plt.subplots(len(heights), 1, figsize=(args.width, sum(heights) + 0.8),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    axes = [a[0] for a in axes]
    longest = max((t.span()[1] - t.span()[0]) / 1000.0 for t in traces) or 1.0
    kinds = set()
    i = 0
    for trace, title in zip(traces, titles):
        t0 = trace.span()[0]
        draw_timeline(axes[i], trace, t0, title)
        axes[i].set_xlim(0, longest)
        kinds |= {s.args.get("kind") for t in trace.streams() for s in t.slices}
        i += 1
        if memory:
            draw_memory(axes[i], trace, t0)
            axes[i].set_xlim(0, longest)
            i += 1
    axes[-1].set_xlabel("ms from the start of each trace", fontsize=8)
    handles = legend_handles(sorted(k for k in kinds if k) + ["wait"])
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 8), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(args.output, dpi=args.dpi)
    print(f"{args.output}: {len(traces)} trace(s), {sum(len(lanes(t)) for t in traces)} lane(s)")
    return 0
