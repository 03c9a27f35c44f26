"""The CPU fallback never drops a write: whatever an operator's schema
declares, every keel argument the CPU kernel changed is written back (tensor
lists and optional tensors included), and every output is made on the keel
device the operator runs on."""
import pytest
import torch

import keel_torch
from conftest import assert_same


def params_after_steps(device, optimizer_class, foreach, steps=3, **kwargs):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(5, 3).to(device)), torch.nn.Parameter(torch.randn(3).to(device))]
    optimizer = optimizer_class(params, foreach=foreach, **kwargs)
    for step in range(steps):
        optimizer.zero_grad(set_to_none=False) if step else None
        loss = sum((p * (i + 1.5)).square().sum() for i, p in enumerate(params))
        loss.backward()
        optimizer.step()
    return [p.detach().cpu() for p in params], [p.grad.cpu() for p in params]


@pytest.mark.parametrize("foreach", [True, False])
@pytest.mark.parametrize("optimizer_class,kwargs", [
    (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
    (torch.optim.Adam, {"lr": 0.1}),
], ids=["sgd", "adam"])
def test_optimizers_update_parameters_as_on_the_cpu(dev, optimizer_class, kwargs, foreach):
    keel_params, keel_grads = params_after_steps(dev, optimizer_class, foreach, **kwargs)
    cpu_params, cpu_grads = params_after_steps(torch.device("cpu"), optimizer_class, foreach, **kwargs)
    for k, c in zip(keel_params, cpu_params):
        torch.testing.assert_close(k, c, rtol=1e-6, atol=1e-6)
    for k, c in zip(keel_grads, cpu_grads):
        torch.testing.assert_close(k, c, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("foreach", [True, False])
def test_zero_grad_zeroes_every_gradient(dev, foreach):
    p = torch.nn.Parameter(torch.randn(4).to(dev))
    p.grad = torch.ones(4).to(dev)
    torch.optim.SGD([p], lr=0.1, foreach=foreach).zero_grad(set_to_none=False)
    assert torch.equal(p.grad.cpu(), torch.zeros(4))


def test_foreach_in_place_operators_write_every_tensor_of_the_list(dev):
    xs = [torch.randn(3), torch.randn(7), torch.randn(1)]
    ks = [x.to(dev) for x in xs]
    torch._foreach_add_(ks, 2.0)
    torch._foreach_mul_(ks, [torch.full((3,), 3.0).to(dev), torch.full((7,), 3.0).to(dev), torch.full((1,), 3.0).to(dev)])
    for k, x in zip(ks, xs):
        assert_same(k, (x + 2.0) * 3.0)
    outs = torch._foreach_sqrt([k.abs() for k in ks])
    for o, x in zip(outs, xs):
        assert o.device == dev
        assert_same(o, ((x + 2.0) * 3.0).abs().sqrt())


@pytest.mark.parametrize("norm", [torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.InstanceNorm2d])
def test_normalisation_running_statistics_update_in_training(dev, norm):
    torch.manual_seed(0)
    kwargs = {"track_running_stats": True} if norm is torch.nn.InstanceNorm2d else {}
    cpu_module = norm(4, **kwargs)
    keel_module = norm(4, **kwargs).to(dev)
    shape = (8, 4) if norm is torch.nn.BatchNorm1d else (8, 4, 5, 5)
    for _ in range(3):
        x = torch.randn(*shape) * 3 + 1
        cpu_out = cpu_module(x)
        keel_out = keel_module(x.to(dev))
        assert_same(keel_out, cpu_out, rtol=1e-5, atol=1e-5)
    assert_same(keel_module.running_mean, cpu_module.running_mean, rtol=1e-6, atol=1e-6)
    assert_same(keel_module.running_var, cpu_module.running_var, rtol=1e-6, atol=1e-6)
    assert keel_module.num_batches_tracked.item() == cpu_module.num_batches_tracked.item()
    keel_module.eval()
    cpu_module.eval()
    x = torch.randn(*shape)
    assert_same(keel_module(x.to(dev)), cpu_module(x), rtol=1e-5, atol=1e-5)


def test_a_write_the_schema_does_not_declare_is_written_back(dev):
    # native_batch_norm's schema (1.13) declares running_mean/var read-only.
    mean, var = torch.zeros(3), torch.ones(3)
    k_mean, k_var = mean.to(dev), var.to(dev)
    x = torch.randn(6, 3)
    torch.native_batch_norm(x, None, None, mean, var, True, 0.5, 1e-5)
    torch.native_batch_norm(x.to(dev), None, None, k_mean, k_var, True, 0.5, 1e-5)
    assert not torch.equal(mean, torch.zeros(3))
    assert_same(k_mean, mean)
    assert_same(k_var, var)


def test_outputs_of_factories_with_a_keel_device_are_on_it(dev):
    t = torch.tril_indices(4, 3, device=dev)
    assert t.device == dev
    assert_same(t, torch.tril_indices(4, 3))
    t = torch.triu_indices(3, 3, 1, device=dev)
    assert t.device == dev


def test_tensor_list_outputs_are_on_the_device(dev):
    x = torch.rand(50, 2)
    hist, edges = torch.histogramdd(x.to(dev), bins=[3, 4])
    cpu_hist, cpu_edges = torch.histogramdd(x, bins=[3, 4])
    assert hist.device == dev
    assert_same(hist, cpu_hist)
    for k, c in zip(edges, cpu_edges):
        assert k.device == dev
        assert_same(k, c)
    parts = torch.unbind(torch.randn(3, 2).to(dev))
    assert all(p.device == dev for p in parts)


def test_indexing_with_keel_and_host_index_tensors(dev):
    x = torch.randn(6, 4)
    k = x.to(dev)
    assert_same(k[k > 0], x[x > 0])
    idx = torch.tensor([0, 2, 5])
    assert_same(k[idx.to(dev)], x[idx])
    assert_same(k[idx], x[idx])  # host indices, as CUDA accepts
    assert_same(k[idx.to(dev), 1:3], x[idx, 1:3])
    k2, x2 = k.clone(), x.clone()
    k2[idx.to(dev)] = torch.ones(3, 4).to(dev)
    x2[idx] = torch.ones(3, 4)
    assert_same(k2, x2)
    k2.index_put_((idx.to(dev),), torch.full((3, 4), 2.0).to(dev), accumulate=True)
    x2.index_put_((idx,), torch.full((3, 4), 2.0), accumulate=True)
    assert_same(k2, x2)


def test_the_gradient_of_indexing_runs_index_put(dev):
    x = torch.randn(5, 3)
    k = x.to(dev).requires_grad_()
    c = x.clone().requires_grad_()
    idx = torch.tensor([1, 1, 4])
    (k[idx.to(dev)] * 2).sum().backward()
    (c[idx] * 2).sum().backward()
    assert_same(k.grad, c.grad)
    k.grad = None
    c.grad = None
    (k[k > 0] ** 2).sum().backward()
    (c[c > 0] ** 2).sum().backward()
    assert_same(k.grad, c.grad)


def test_out_arguments_are_resized_and_written(dev):
    x = torch.randn(4, 5)
    out = torch.empty(0).to(dev)
    torch.mul(x.to(dev), 3.0, out=out)
    assert out.shape == (4, 5)
    assert_same(out, x * 3.0)
    values, indices = torch.empty(0).to(dev), torch.empty(0, dtype=torch.long).to(dev)
    torch.max(x.to(dev), 1, out=(values, indices))
    cpu_values, cpu_indices = torch.max(x, 1)
    assert_same(values, cpu_values)
    assert_same(indices, cpu_indices)


def test_an_out_argument_shrunk_by_its_kernel_leaves_the_rest_of_its_storage(dev):
    # keel does not download an out= argument that only the kernel writes;
    # a kernel that resizes it must not write the rest of its storage.
    for device in ("cpu", dev):
        whole = torch.arange(10.0).to(device)
        tail = whole[5:]
        with torch.no_grad():
            torch.add(torch.ones(5).to(device), torch.ones(5).to(device), out=whole)
        if device == "cpu":
            expected_whole, expected_tail = whole.clone(), tail.clone()
        else:
            assert_same(whole, expected_whole)
            assert_same(tail, expected_tail)


def test_an_argument_and_its_view_share_one_mirror(dev):
    x = torch.arange(10.0)
    k = x.to(dev)
    k[2:6].copy_(k[0:4].clone())
    x[2:6].copy_(x[0:4].clone())
    assert_same(k, x)
    # An in-place operator through the fallback whose argument is a view
    # of another: the CPU kernel sees the overlap, as for CPU tensors.
    k = x.to(dev)
    k[::2].mul_(k[1::2])
    y = x.clone()
    y[::2].mul_(y[1::2])
    assert_same(k, y)
    with pytest.raises(RuntimeError, match="single memory location"):
        k[1:].mul_(k[:-1])


def test_a_view_returned_by_the_fallback_aliases_the_keel_tensor(dev):
    c = torch.randn(3, dtype=torch.cfloat)
    k = c.to(dev)
    r = torch.view_as_real(k)
    assert r.device == dev
    r.mul_(2.0)
    assert_same(k, c * 2)
