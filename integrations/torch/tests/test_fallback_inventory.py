"""Which operators fall back to the CPU: a fixed workload (the MLP step of
test_training and the operators of test_tensors) and the exact list of the
operators keel ran no kernel of its own for. A change to this list is a
change of coverage: update it on purpose."""
import torch

import keel_torch

# Everything else in the workload (factories, copies, views, contiguous
# fill_, zero_, add/sub of same-shape f32 tensors as axpy, lerp and its
# gradient) runs on keel.
EXPECTED_FALLBACKS = sorted([
    "aten::_local_scalar_dense",      # loss.item()
    "aten::addmm.out",                # Linear with bias
    "aten::exp.out",
    "aten::fill_.Scalar",             # a strided view: keel's fill wants contiguous f32
    "aten::lerp.Scalar",              # a non-contiguous operand
    "aten::mm.out",                   # Linear's backward
    "aten::mse_loss.out",
    "aten::mse_loss_backward",
    "aten::mul.out",
    "aten::relu",
    "aten::sum.IntList_out",
    "aten::threshold_backward.grad_input",  # ReLU's backward
])


def workload(dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(32, 8).to(dev), torch.randn(32, 1).to(dev)
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    loss.item()
    a = torch.randn(4, 6).to(dev)
    (a * a).exp().sum(dim=1)
    a[1:3, ::2].fill_(1.0)
    torch.lerp(a, a.t().contiguous().t(), 0.5)


def test_the_fallback_inventory_is_exactly_the_known_list(dev):
    keel_torch.reset_fallback_ops()
    workload(dev)
    found = keel_torch.fallback_ops()
    print("operators that fell back to the CPU:", found)
    assert found == EXPECTED_FALLBACKS
