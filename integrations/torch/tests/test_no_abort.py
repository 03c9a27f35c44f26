"""No operator kills the interpreter where the same operator on CPU tensors
does not: operators with a CPU kernel of their own run that kernel (through
the fallback), never a generic decomposition the CPU never runs."""
import torch

import keel_torch
from conftest import assert_same, run_script


def test_group_norm_on_an_empty_batch_returns_as_on_the_cpu():
    # In a child: before the fix this killed the interpreter with SIGFPE.
    status, out = run_script("""
import torch, keel_torch
dev = keel_torch.device(0)
x = torch.randn(0, 4, 3)
k = torch.nn.functional.group_norm(x.to(dev), 2)
c = torch.nn.functional.group_norm(x, 2)
assert k.device == dev and k.shape == c.shape, (k.shape, c.shape)
print("alive")
""")
    assert status == 0, out
    assert "alive" in out


def test_operators_with_a_cpu_kernel_run_it(dev):
    routed = set(keel_torch.routed_to_cpu_kernels())
    assert "aten::native_group_norm" in routed
    for name in routed:
        base, _, overload = name.partition(".")
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"), name
    x = torch.randn(2, 4, 3)
    assert_same(torch.nn.functional.group_norm(x.to(dev), 2), torch.nn.functional.group_norm(x, 2),
                rtol=1e-5, atol=1e-5)
