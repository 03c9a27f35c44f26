"""The module users expect, in torch.cuda's shape: availability that tells
the truth, the current device, a bounded stream pool, events with timing,
torch.cuda's memory functions and keys, pinned memory through PyTorch's own
entry points."""
import os

import pytest
import torch

import keel_torch
from conftest import run_script


def test_availability_and_device_count_tell_the_truth(dev):
    assert keel_torch.is_available()
    assert keel_torch.device_count() == len(os.environ.get("KEEL_TORCH_DEVICES", "cpu:0").split(","))
    status, out = run_script("""
import torch, keel_torch
print("available:", keel_torch.is_available(), "count:", keel_torch.device_count())
""", KEEL_TORCH_DEVICES="nosuchdevice:0", KEEL_LOG_LEVEL="off")
    assert status == 0, out
    assert "available: False count: 0" in out


def test_current_device_and_set_device(dev):
    assert keel_torch.current_device() == 0
    count = keel_torch.device_count()
    try:
        keel_torch.set_device(count - 1)
        assert keel_torch.current_device() == count - 1
        assert torch.empty(3, device=keel_torch.BACKEND).device.index == count - 1
    finally:
        keel_torch.set_device(0)
    with pytest.raises(RuntimeError, match="does not exist"):
        keel_torch.set_device(count)


def threads():
    return len(os.listdir("/proc/self/task"))


def test_streams_come_from_a_bounded_pool(dev):
    before = threads()
    streams = [keel_torch.Stream() for _ in range(200)]
    x = torch.zeros(16, device=dev)
    one = torch.ones(16, device=dev)
    for s in streams:
        s.wait_stream(keel_torch.current_stream())
        with keel_torch.stream(s):
            x.add_(one)
        keel_torch.current_stream().wait_stream(s)
    assert len({s.id for s in streams}) <= 8
    assert threads() - before <= 8
    assert torch.equal(x.cpu(), torch.full((16,), 200.0))


def test_events_record_query_synchronize_and_time(dev):
    start, end = keel_torch.Event(enable_timing=True), keel_torch.Event(enable_timing=True)
    start.record()
    x = torch.ones(1 << 16, device=dev)
    for _ in range(10):
        x.add_(x)
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0
    side = keel_torch.Stream()
    event = keel_torch.current_stream().record_event()
    side.wait_event(event)
    with keel_torch.stream(side):
        y = x.clone()
    keel_torch.current_stream().wait_stream(side)
    assert torch.equal(y.cpu(), x.cpu())


def test_memory_functions_with_torch_cuda_keys(dev):
    keel_torch.synchronize()
    keel_torch.reset_peak_memory_stats()
    base = keel_torch.memory_allocated()
    assert keel_torch.max_memory_allocated() == base
    x = torch.empty(1 << 20, device=dev)
    assert keel_torch.memory_allocated() >= base + (4 << 20)
    assert keel_torch.max_memory_allocated() >= base + (4 << 20)
    assert keel_torch.memory_reserved() >= keel_torch.memory_allocated()
    del x
    keel_torch.synchronize()
    assert keel_torch.memory_allocated() == base
    assert keel_torch.max_memory_allocated() >= base + (4 << 20)
    keel_torch.reset_peak_memory_stats()
    assert keel_torch.max_memory_allocated() < base + (4 << 20)
    stats = keel_torch.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
                "reserved_bytes.all.peak", "num_ooms", "num_alloc_retries", "allocation.all.current"):
        assert key in stats, key
    keel_torch.empty_cache()


def test_pin_memory_through_pytorchs_entry_points(dev):
    t = torch.randn(100)
    pinned = t.pin_memory(keel_torch.BACKEND)
    assert pinned.is_pinned(keel_torch.BACKEND)
    assert keel_torch.is_pinned(pinned)
    assert not t.is_pinned(keel_torch.BACKEND)
    assert torch.equal(pinned, t)
    k = pinned.to(dev, non_blocking=True)
    assert torch.equal(k.cpu(), t)


def test_a_dataloader_pins_with_pin_memory_device(dev):
    data = torch.utils.data.TensorDataset(torch.randn(8, 3), torch.arange(8))
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True, pin_memory_device=keel_torch.BACKEND)
    for x, y in loader:
        assert keel_torch.is_pinned(x) and keel_torch.is_pinned(y)


def test_a_dataloader_that_cannot_pin_says_why(dev):
    data = torch.utils.data.TensorDataset(torch.randn(8, 3))
    if torch.cuda.is_available():
        pytest.skip("CUDA is available: PyTorch pins for CUDA")
    with pytest.warns(UserWarning, match="pin_memory_device"):
        torch.utils.data.DataLoader(data, pin_memory=True)


def test_pinning_with_workers_is_impossible_on_1_13(dev):
    # 1.13's multi-worker DataLoader asks torch.cuda.current_device() for its
    # pinning thread whatever pin_memory_device says (2.x does not): an
    # error, never a silent copy that is not pinned.
    if not torch.__version__.startswith("1.13") or torch.cuda.is_available():
        pytest.skip("only PyTorch 1.13 without CUDA has this limit")
    status, out = run_script("""
import torch, keel_torch
data = torch.utils.data.TensorDataset(torch.randn(8, 3))
loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=1, pin_memory=True,
                                     pin_memory_device=keel_torch.BACKEND)
try:
    next(iter(loader))
    print("no error")
except (AssertionError, RuntimeError) as e:
    print("error:", e)
""", KEEL_LOG_LEVEL="off")
    assert "error:" in out and "CUDA" in out, out
