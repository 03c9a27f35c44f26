"""Streams, events and copies: side streams with record_stream (checked by
keel's checker), staged uploads whose source changes or goes at once,
non_blocking copies from pinned memory, device errors as exceptions."""
import ctypes
import gc
import os

import pytest
import torch

import keel_torch
from conftest import assert_same, run_script


def test_a_staged_upload_does_not_see_its_source_change_or_go(dev):
    src = torch.arange(1 << 16, dtype=torch.float32)
    expected = src.clone()
    k = src.to(dev)
    src.fill_(-1.0)  # at once, before the device could have read it
    small = torch.arange(10, dtype=torch.float32)
    k_small = small.to(dev)
    del small
    gc.collect()
    chunks = [torch.full((1 << 14,), float(i)) for i in range(8)]
    k_chunks = [c.to(dev) for c in chunks]
    del chunks
    gc.collect()
    assert torch.equal(k.cpu(), expected)
    assert torch.equal(k_small.cpu(), torch.arange(10, dtype=torch.float32))
    for i, c in enumerate(k_chunks):
        assert torch.equal(c.cpu(), torch.full((1 << 14,), float(i)))


def test_non_blocking_copies_from_and_to_pinned_memory(dev):
    host = keel_torch.pin_memory(torch.randn(1000))
    assert keel_torch.is_pinned(host)
    k = host.to(dev, non_blocking=True)
    back = keel_torch.pin_memory(torch.zeros(1000))
    back.copy_(k, non_blocking=True)
    keel_torch.synchronize()
    assert torch.equal(back, host)
    assert torch.equal(k.cpu(), host)


def test_work_on_a_side_stream_and_events(dev):
    side = keel_torch.Stream()
    assert side != keel_torch.default_stream()
    x = torch.randn(1000).to(dev)
    side.wait_stream(keel_torch.current_stream())
    with keel_torch.stream(side):
        assert keel_torch.current_stream() == side
        y = torch.empty_like(x)
        y.copy_(x)
        y.add_(x)
    assert keel_torch.current_stream() == keel_torch.default_stream()
    keel_torch.current_stream().wait_stream(side)
    assert_same(y, x.cpu() * 2)
    side.synchronize()
    assert side.query()


SIDE_STREAM_SCRIPT = """
import torch, keel_torch
dev = keel_torch.device(0)
main, side = keel_torch.current_stream(), keel_torch.Stream()
def use_on_side(record):
    x = torch.ones(1 << 16, device=dev)
    y = torch.empty(1 << 16, device=dev)
    side.wait_stream(main)
    with keel_torch.stream(side):
        y.copy_(x)          # side reads x, which main allocated
    if record:
        keel_torch.record_stream(x, side)
    del x                   # freed on main: poisoned and reused in main's order
    keel_torch.synchronize()
    return y
use_on_side(record=True)
print("recorded: ok", flush=True)
try:
    use_on_side(record=False)
    print("unrecorded: no error")
except RuntimeError as e:
    print("unrecorded: RuntimeError:", str(e).splitlines()[0])
"""


def test_a_side_stream_needs_record_stream_under_the_checker(keel_name):
    if not keel_name.startswith("cpu:"):
        pytest.skip("the happens-before checker that sees the race is the CPU plugin's "
                    f"(KEEL_CHECK=1 on {keel_name} adds checked memory only)")
    status, out = run_script(SIDE_STREAM_SCRIPT, KEEL_CHECK=1, KEEL_LOG_LEVEL="off")
    assert status == 0, out
    assert "recorded: ok" in out
    assert "unrecorded: RuntimeError:" in out, out


def test_a_device_error_is_a_python_exception(keel_name):
    if keel_name.startswith("cpu:"):
        env, setup = {"KEEL_CPU_FAIL_OP_AFTER": 3}, ""
    elif keel_name.startswith("level_zero:") and "ZE_ENABLE_ALT_DRIVERS" in os.environ:
        env = {}
        setup = ("import ctypes, os\n"
                 "ctypes.CDLL(os.environ['ZE_ENABLE_ALT_DRIVERS']).fake_ze_lose_device(0, 2)\n")
    else:
        pytest.skip(f"no way to inject a device error on {keel_name}")
    script = setup + """
import torch, keel_torch
dev = keel_torch.device(0)
try:
    for i in range(20):
        x = torch.full((1000,), float(i), device=dev)
        x.add_(x)
    keel_torch.synchronize()
    print("no error")
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0])
print("interpreter alive")
"""
    status, out = run_script(script, KEEL_LOG_LEVEL="off", **env)
    assert status == 0, out
    assert "RuntimeError:" in out and "DEVICE_ERROR" in out, out
    assert "interpreter alive" in out
