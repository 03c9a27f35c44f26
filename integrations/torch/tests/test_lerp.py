"""torch.lerp on keel (its lerp kernel forward, lerp_grad backward) with
broadcast tensor weights, against the CPU: values and gradients."""
import pytest
import torch

import keel_torch
from conftest import assert_same

SHAPES = [  # x, y, w
    ((4, 5), (4, 5), (4, 5)),
    ((4, 5), (4, 5), (5,)),
    ((4, 1), (1, 5), (4, 5)),
    ((3, 1, 5), (2, 5), (3, 2, 1)),
    ((6,), (6,), ()),
]


@pytest.mark.parametrize("x_shape,y_shape,w_shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lerp_and_its_gradients_match_the_cpu(dev, x_shape, y_shape, w_shape, dtype):
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(x_shape, generator=g, dtype=dtype), torch.randn(y_shape, generator=g, dtype=dtype)
    w = torch.rand(w_shape, generator=g, dtype=dtype)
    leaves_cpu = [t.clone().requires_grad_() for t in (x, y, w)]
    leaves_keel = [t.to(dev).requires_grad_() for t in (x, y, w)]
    out_cpu = torch.lerp(*leaves_cpu)
    out_keel = torch.lerp(*leaves_keel)
    assert_same(out_keel.detach(), out_cpu.detach())
    dout = torch.randn(out_cpu.shape, generator=g, dtype=dtype)
    out_cpu.backward(dout)
    out_keel.backward(dout.to(dev))
    for k, c in zip(leaves_keel, leaves_cpu):
        assert k.grad.shape == c.shape
        assert_same(k.grad, c.grad)


def test_lerp_with_a_scalar_weight_and_in_place(dev):
    x, y = torch.randn(3, 4), torch.randn(4)
    kx = x.to(dev).requires_grad_()
    ky = y.to(dev).requires_grad_()
    out = torch.lerp(kx, ky, 0.3)
    assert_same(out.detach(), torch.lerp(x, y, 0.3))
    out.sum().backward()
    assert_same(kx.grad, torch.full((3, 4), 0.7))
    assert_same(ky.grad, torch.full((4,), 0.9))
    k = x.to(dev)
    k.lerp_(y.to(dev), 0.25)
    assert_same(k, torch.lerp(x, y, 0.25))


def test_lerp_runs_no_fallback(dev):
    x, y, w = (torch.randn(4, 5).to(dev) for _ in range(3))
    x.requires_grad_()
    y.requires_grad_()
    out = torch.lerp(x, y, w)  # warm up: factories and copies
    keel_torch.reset_fallback_ops()
    out = torch.lerp(x, y, w)
    torch.autograd.grad(out, (x, y), torch.ones(4, 5, device=dev))
    assert keel_torch.fallback_ops() == []
