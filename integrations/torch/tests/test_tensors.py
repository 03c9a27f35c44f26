"""Elementwise operators, views and in-place operators on a keel device give
what the same operators give on the CPU."""
import pytest
import torch

import keel_torch
from conftest import assert_same


def test_a_tensor_goes_to_the_device_and_back_unchanged(dev):
    x = torch.randn(3, 5)
    k = x.to(dev)
    assert k.device == dev
    assert torch.equal(k.cpu(), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_every_dtype_round_trips(dev, dtype):
    x = (torch.randn(7, 3) * 10).to(dtype)
    assert torch.equal(x.to(dev).cpu(), x)


def test_factories_on_the_device_match_the_cpu(dev):
    assert_same(torch.zeros(4, 3, device=dev), torch.zeros(4, 3))
    assert_same(torch.ones(2, 2, device=dev), torch.ones(2, 2))
    assert_same(torch.full((5,), 2.5, device=dev), torch.full((5,), 2.5))
    assert_same(torch.arange(6, device=dev), torch.arange(6))
    assert torch.empty(0, device=dev).numel() == 0


def test_elementwise_operators_match_the_cpu(dev):
    a, b = torch.randn(4, 6), torch.randn(4, 6)
    ka, kb = a.to(dev), b.to(dev)
    assert_same(ka + kb, a + b)
    assert_same(ka - kb, a - b)
    assert_same(torch.add(ka, kb, alpha=0.5), torch.add(a, b, alpha=0.5))
    assert_same(ka * kb, a * b)
    assert_same(ka / (kb.abs() + 1), a / (b.abs() + 1))
    assert_same(torch.relu(ka), torch.relu(a))
    assert_same(torch.exp(ka), torch.exp(a))
    assert_same(ka + 1.5, a + 1.5)
    assert_same(ka.sum(dim=1), a.sum(dim=1))
    assert_same(ka @ kb.t(), a @ b.t())
    assert_same(ka.to(torch.float64), a.to(torch.float64))
    assert (ka > 0).cpu().equal(a > 0)
    assert ka.sum().item() == pytest.approx(a.sum().item(), rel=1e-5)


def test_broadcasting_add_matches_the_cpu(dev):
    a, b = torch.randn(4, 6), torch.randn(6)
    assert_same(a.to(dev) + b.to(dev), a + b)


def test_views_share_the_device_memory(dev):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    k = base.to(dev)
    v = k.view(6, 4)
    t = k.t()
    s = k[1:3, ::2]
    assert_same(v, base.view(6, 4))
    assert_same(t, base.t())
    assert_same(s, base[1:3, ::2])
    assert_same(k.unfold(1, 2, 2), base.unfold(1, 2, 2))
    assert_same(t.contiguous(), base.t().contiguous())
    s.fill_(-1.0)  # writes through the strided view into k
    base[1:3, ::2] = -1.0
    assert_same(k, base)
    assert v.data_ptr() == k.data_ptr()


def test_in_place_operators_match_the_cpu(dev):
    a, b = torch.randn(5, 5), torch.randn(5, 5)
    ka, kb = a.to(dev), b.to(dev)
    ka.add_(kb, alpha=2.0)
    a.add_(b, alpha=2.0)
    assert_same(ka, a)
    ka.sub_(kb)
    a.sub_(b)
    assert_same(ka, a)
    ka.mul_(3.0)
    a.mul_(3.0)
    assert_same(ka, a)
    ka.zero_()
    assert_same(ka, torch.zeros(5, 5))
    ka.fill_(7.0)
    assert_same(ka, torch.full((5, 5), 7.0))
    ka[:, 1].copy_(kb[:, 2])
    expected = torch.full((5, 5), 7.0)
    expected[:, 1] = b[:, 2]
    assert_same(ka, expected)


def test_copies_between_views_and_dtypes_on_the_device(dev):
    a = torch.randn(6, 4)
    ka = a.to(dev)
    out = torch.empty(4, 6, dtype=torch.float64, device=dev)
    out.copy_(ka.t())
    assert_same(out, a.t().to(torch.float64))
    row = torch.randn(6)
    out.copy_(row.to(dev))  # broadcast over rows
    assert_same(out, row.to(torch.float64).expand(4, 6))


def test_a_resized_tensor_keeps_its_values(dev):
    k = torch.arange(4, dtype=torch.float32).to(dev)
    k.resize_(10)
    assert_same(k[:4], torch.arange(4, dtype=torch.float32))
    assert k.shape == (10,)


def test_an_index_outside_the_devices_is_a_python_error():
    with pytest.raises(RuntimeError, match="does not exist"):
        torch.zeros(2, device=keel_torch.device(keel_torch.device_count() + 3))


def test_copies_between_two_keel_devices():
    if keel_torch.device_count() < 2:
        pytest.skip("KEEL_TORCH_DEVICES names one device")
    x = torch.randn(5, 7)
    on_first = x.to(keel_torch.device(0))
    on_second = on_first.to(keel_torch.device(1))
    assert on_second.device == keel_torch.device(1)
    assert torch.equal(on_second.cpu(), x)
    back = torch.empty(7, 5, device=keel_torch.device(0))
    back.copy_(on_second.t())
    assert torch.equal(back.cpu(), x.t())


def test_a_stream_that_does_not_exist_is_a_python_error():
    with pytest.raises(RuntimeError, match="no stream 12345"):
        keel_torch.set_stream(keel_torch.Stream(0, _id=12345))
