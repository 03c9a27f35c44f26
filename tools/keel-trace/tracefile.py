"""Loading keel traces: events grouped by track, with names and times."""
import json
from dataclasses import dataclass, field


@dataclass
class Slice:
    name: str
    start_us: float
    dur_us: float
    args: dict

    @property
    def end_us(self):
        return self.start_us + self.dur_us


@dataclass
class Track:
    pid: int
    tid: int
    name: str
    process: str
    slices: list = field(default_factory=list)    # complete events ("X")
    instants: list = field(default_factory=list)  # instant events ("i")

    @property
    def is_stream(self):
        return " stream " in self.name

    @property
    def label(self):
        return f"{self.process}: {self.name}" if self.process else self.name


@dataclass
class Trace:
    tracks: dict  # (pid, tid) -> Track
    counters: dict  # (pid, name) -> [(ts_us, {series: value})]
    other: list  # otherData of each file merged in
    events: list

    def streams(self):
        return [t for t in self.tracks.values() if t.is_stream]

    def host_threads(self):
        return [t for t in self.tracks.values() if not t.is_stream]

    def span(self):
        times = [s.start_us for t in self.tracks.values() for s in t.slices + t.instants]
        ends = [s.end_us for t in self.tracks.values() for s in t.slices + t.instants]
        for series in self.counters.values():
            times += [ts for ts, _ in series]
            ends += [ts for ts, _ in series]
        if not times:
            return 0.0, 0.0
        return min(times), max(ends)


def read_json(path):
    with open(path, "r", encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"{path}: no traceEvents list (not a Chrome trace event file)")
    return data


# Operation kinds; an operation's name starts with its kind.
KINDS = sorted(["copy h2d", "copy d2h", "copy d2d", "memset", "kernel", "host function", "hold", "wait event",
                "wait fence", "record event", "fence"], key=len, reverse=True)


def kind_of(name):
    for k in KINDS:
        if name == k or name.startswith(k + " "):
            return k
    return "range"


def slice_args(e, names):
    """A complete event's args with its kind (from the name of an operation:
    "memset", "kernel"; "range" for a named range; "wait" for a host wait)
    and, for a wait, what it waited for and the waited stream's name."""
    args = dict(e.get("args", {}))
    cat = e.get("cat", "")
    if "kind" not in args:
        args["kind"] = "wait" if cat == "wait" else kind_of(e.get("name", ""))
    if cat == "wait":
        args.setdefault("what", e.get("name", "?"))
        stream = args.get("stream")
        if isinstance(stream, int):
            args["stream"] = names.get((e["pid"], stream), f"stream {stream}")
    return args


def build(data):
    events = data["traceEvents"]
    names = {}
    processes = {}
    for e in events:
        if e.get("ph") != "M":
            continue
        if e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("name") == "process_name":
            processes[e["pid"]] = e["args"]["name"]
    tracks = {}
    counters = {}

    def track(pid, tid):
        key = (pid, tid)
        if key not in tracks:
            tracks[key] = Track(pid, tid, names.get(key, f"thread {tid}"), processes.get(pid, ""))
        return tracks[key]

    for key in names:
        track(*key)
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            track(e["pid"], e["tid"]).slices.append(
                Slice(e.get("name", "?"), float(e["ts"]), float(e.get("dur", 0)), slice_args(e, names)))
        elif ph == "i" or ph == "I":
            track(e["pid"], e["tid"]).instants.append(
                Slice(e.get("name", "?"), float(e["ts"]), 0.0, e.get("args", {})))
        elif ph == "C":
            counters.setdefault((e["pid"], e.get("name", "?")), []).append((float(e["ts"]), e.get("args", {})))
    for t in tracks.values():
        t.slices.sort(key=lambda s: s.start_us)
        t.instants.sort(key=lambda s: s.start_us)
    for key, series in counters.items():
        series.sort(key=lambda p: p[0])
        # A counter event carries only the series that changed: each sample
        # gets every series' value at its time.
        last = {}
        full = []
        for ts, values in series:
            last = dict(last, **values)
            full.append((ts, last))
        counters[key] = full
    other = data.get("otherData", {})
    return Trace(tracks, counters, other if isinstance(other, list) else [other], events)


def load(path):
    return build(read_json(path))
