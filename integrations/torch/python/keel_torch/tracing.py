"""keel's trace and memory snapshot for a PyTorch program on keel devices.

    with keel_torch.trace("step.json"):      # Chrome trace / Perfetto JSON
        model(x).sum().backward()
    snap = keel_torch.memory_snapshot()      # segments, blocks, streams, tags

The trace is keel's own (docs/tracing.md): one track per keel stream, host
waits, allocations and frees, memory counters; tools/keel-trace summarises
and draws it. KEEL_TRACE=<file> traces the whole process instead.
"""
import contextlib
import json

import torch

_ops = torch.ops.keel


def _index(device):
    from . import _index as index  # the package's device parsing
    return index(device)


def trace_start(path, device_times=True):
    """Starts keel's trace into `path` ("%p": process id, "%r": rank)."""
    return _ops.trace_start(str(path), bool(device_times))


def trace_stop():
    """Stops the trace and writes it; returns (path, number of events)."""
    return tuple(_ops.trace_stop())


@contextlib.contextmanager
def trace(path, device_times=True):
    """Traces what keel does inside the block into `path` (written at the end)."""
    trace_start(path, device_times)
    try:
        yield path
    finally:
        trace_stop()


def memory_snapshot(device=None):
    """The device's caching allocator as a dict: {"device", "segments": [{"addr",
    "size", "stream", "pool", "blocks": [{"addr", "size", "requested", "state",
    "tag"}]}]} ("tag" with the memory history on)."""
    return json.loads(_ops.memory_snapshot_json(_index(device)))


def set_memory_history(enabled):
    """While on, each allocation remembers its tag (the caller's site), shown by memory_snapshot()."""
    _ops.set_memory_history(bool(enabled))
