"""Device rules as on CUDA: a CPU 0-dim tensor combines with keel tensors and
the result is on keel; any other mix is PyTorch's same-device error."""
import pytest
import torch

from conftest import assert_same

SAME_DEVICE = "Expected all tensors to be on the same device"


def test_a_host_scalar_tensor_combines_and_the_result_is_on_keel(dev):
    x = torch.randn(5)
    k = x.to(dev)
    for keel_result, cpu_result in [
        (1 - k, 1 - x),
        (torch.add(torch.tensor(2.0), k), torch.add(torch.tensor(2.0), x)),
        (k * torch.tensor(3.0), x * torch.tensor(3.0)),
        (torch.tensor(3.0) / k, torch.tensor(3.0) / x),
        (torch.where(k > 0, k, torch.tensor(0.0)), torch.where(x > 0, x, torch.tensor(0.0))),
    ]:
        assert keel_result.device == dev
        assert_same(keel_result, cpu_result)


def test_any_other_mix_is_the_same_device_error(dev):
    k = torch.randn(4, 3).to(dev)
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        torch.mm(k, torch.randn(3, 2))
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        k + torch.randn(4, 3)
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        k * torch.randn(3)
    model = torch.nn.Linear(3, 2).to(dev)
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        model(torch.randn(4, 3))
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        torch.cat([k, torch.randn(1, 3)])
