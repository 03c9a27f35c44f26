"""The allocator under privateuseone is keel's stream-ordered cache: its
statistics balance after a run, freed memory is reused without a device
allocation, and running out of memory is a Python exception."""
import gc

import pytest
import torch

import keel_torch


def settled_stats():
    gc.collect()
    keel_torch.synchronize()
    return keel_torch.memory_stats()


def test_statistics_balance_after_a_run(dev):
    before = settled_stats()
    tensors = [torch.ones(1000, device=dev) * i for i in range(10)]
    during = keel_torch.memory_stats()
    assert during["allocated_bytes"] >= before["allocated_bytes"] + 10 * 4000
    del tensors
    after = settled_stats()
    assert after["allocated_bytes"] == before["allocated_bytes"]
    assert after["allocated_count"] == before["allocated_count"]
    assert after["allocations"] > before["allocations"]
    assert after["reserved_bytes"] == after["allocated_bytes"] + after["cached_bytes"] + after["pending_free_bytes"]


def test_freed_memory_is_reused_from_the_cache(dev):
    torch.empty(256, 1024, device=dev)  # a segment exists and is cached
    before = settled_stats()
    for _ in range(50):
        x = torch.empty(256, 1024, device=dev)
        x.fill_(1.0)
        del x
    after = settled_stats()
    assert after["raw_allocations"] == before["raw_allocations"]
    assert after["cache_hits"] - before["cache_hits"] >= 50


def test_empty_cache_returns_memory_to_the_device(dev):
    x = torch.empty(4 << 20, device=dev)
    del x
    keel_torch.empty_cache()
    assert keel_torch.memory_stats()["cached_bytes"] == 0


def test_out_of_memory_is_a_python_error_and_the_device_stays_usable(dev):
    with pytest.raises(RuntimeError, match="OUT_OF_MEMORY") as caught:
        torch.empty(1 << 40, dtype=torch.uint8, device=dev)
    assert "keel" in str(caught.value)
    assert keel_torch.memory_stats()["ooms"] >= 1
    assert torch.ones(3, device=dev).sum().item() == 3.0
