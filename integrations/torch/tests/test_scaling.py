"""Scaling by a host scalar and the optimizers' foreach loops run on keel's
own kernels (fill, axpy), not the CPU fallback, with the CPU's f32 results
to the bit; the cases keel cannot take still fall back and agree."""
import torch

import keel_torch


def special_values():
    # Signed zeros, infinities, NaN, subnormals and ordinary values.
    return torch.tensor([0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf"), float("nan"), 1e-40, -3e38, 7.0])


def same_bits(keel_tensor, cpu_tensor):
    got = keel_tensor.cpu()
    assert got.dtype == cpu_tensor.dtype and got.shape == cpu_tensor.shape
    assert torch.equal(got.view(torch.int32), cpu_tensor.view(torch.int32)), (got, cpu_tensor)


def ran_natively(fn):
    keel_torch.reset_fallback_ops()
    fn()
    keel_torch.synchronize()
    return keel_torch.fallback_ops()


def test_multiplying_by_a_host_scalar_runs_on_keel_with_the_cpus_bits(dev):
    x = special_values()
    k = x.to(dev)
    for factor in (0.5, -1.0, 0.1, 3, -0.0, 1e30):
        same_bits(k * factor, x * factor)
        same_bits(factor * k, factor * x)
        wrapped = torch.tensor(factor, dtype=torch.float64)
        same_bits(torch.mul(k, wrapped), torch.mul(x, wrapped))
    fallbacks = ran_natively(lambda: [k * 0.25, k.mul(torch.tensor(3.0)), k.clone().mul_(0.1), k.clone().div_(4)])
    assert "aten::mul.out" not in fallbacks and "aten::div.out" not in fallbacks, fallbacks
    assert not any(op.startswith("aten::mul") or op.startswith("aten::div") for op in fallbacks), fallbacks


def test_in_place_scaling_and_division_by_powers_of_two_match_the_cpu(dev):
    x = special_values()
    for op in (lambda t: t.mul_(0.3), lambda t: t.mul_(-4), lambda t: t.div_(2), lambda t: t.div_(0.125),
               lambda t: t.div_(3.0), lambda t: t.div_(torch.tensor(8.0))):
        k = x.to(dev)
        c = x.clone()
        op(k)
        op(c)
        same_bits(k, c)


def test_ddps_bucket_division_writes_into_a_view_of_the_bucket_on_keel(dev):
    # DDP (no comm hook) copies each gradient into its bucket view times 1/world_size.
    grad = torch.randn(300)
    bucket = torch.full((1000,), 9.0)
    kb = bucket.to(dev)
    wrapped = torch.tensor(1.0 / 3.0, dtype=torch.float64)
    fallbacks = ran_natively(lambda: torch.mul(grad.to(dev), wrapped, out=kb[100:400]))
    torch.mul(grad, wrapped, out=bucket[100:400])
    same_bits(kb, bucket)
    assert "aten::mul.out" not in fallbacks, fallbacks


def test_what_keel_cannot_scale_still_falls_back_and_agrees(dev):
    x = torch.randn(4, 6)
    k = x.to(dev)
    cases = [
        lambda t: t * t,                                   # a tensor, not a scalar
        lambda t: t.t() * 2.0,                             # not contiguous
        lambda t: t.double() * 2.0,                        # not f32
        lambda t: t * torch.tensor([2.0]),                 # a host tensor of one dim: a device error on CUDA too
        lambda t: t / 3.0,                                 # not a power of two
        lambda t: t * (1 + 2j),                            # complex
    ]
    for case in cases:
        try:
            expected = case(x)
        except RuntimeError:
            continue
        try:
            got = case(k)
        except RuntimeError as e:
            assert "same device" in str(e), e
            continue
        torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)


def test_foreach_zero_add_and_mul_loop_over_keel_kernels(dev):
    xs = [torch.randn(5), torch.randn(3, 2)]
    ys = [torch.randn(5), torch.randn(3, 2)]
    ks, ls = [x.to(dev) for x in xs], [y.to(dev) for y in ys]
    fallbacks = ran_natively(lambda: (torch._foreach_add_(ks, ls, alpha=-0.5), torch._foreach_mul_(ks, 0.9)))
    torch._foreach_add_(xs, ys, alpha=-0.5)
    torch._foreach_mul_(xs, 0.9)
    assert not any(op.startswith("aten::_foreach") for op in fallbacks), fallbacks
    for k, x in zip(ks, xs):
        torch.testing.assert_close(k.cpu(), x, rtol=0, atol=0)
    assert not any(op.startswith("aten::_foreach") for op in ran_natively(lambda: torch._foreach_zero_(ks)))
    assert all(bool((k.cpu() == 0).all()) for k in ks)
    # A list keel cannot loop over (an f64 element) falls back as one call, and agrees.
    mixed = [torch.randn(4).to(dev), torch.randn(4, dtype=torch.float64).to(dev)]
    host = [m.cpu() for m in mixed]
    torch._foreach_mul_(mixed, 3.0)
    torch._foreach_mul_(host, 3.0)
    for m, h in zip(mixed, host):
        torch.testing.assert_close(m.cpu(), h, rtol=0, atol=0)
