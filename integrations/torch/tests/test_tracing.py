"""keel's trace and memory snapshot from PyTorch: a step on a keel device is
a timeline with the device's streams, and the snapshot names the blocks of
live tensors."""
import json

import torch

import keel_torch


def test_a_traced_step_has_a_track_per_keel_stream_with_its_operations(dev, tmp_path):
    path = tmp_path / "step.json"
    model = torch.nn.Linear(8, 4).to(dev)
    x = torch.randn(16, 8).to(dev)
    with keel_torch.trace(str(path)):
        model(x).sum().backward()
        keel_torch.synchronize()
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    tracks = [e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"]
    assert any(" stream " in t for t in tracks), tracks
    # An operation's category is its kind; host waits are "wait".
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") != "wait"]
    assert ops, "no operation traced"
    assert all(e["dur"] >= 0 for e in ops)


def test_memory_snapshot_shows_a_live_tensors_block_with_its_tag(dev):
    keel_torch.set_memory_history(True)
    try:
        t = torch.empty(1 << 16, device=dev)
        snap = keel_torch.memory_snapshot()
    finally:
        keel_torch.set_memory_history(False)
    assert snap["device"]
    blocks = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "allocated"]
    assert any(b["size"] >= t.numel() * 4 and b.get("tag") for b in blocks), blocks
    assert all(s["stream"] is None or " stream " in s["stream"] for s in snap["segments"])
