"""tensor.to() between two keel devices uses keel's copies between devices:
a peer copy between cpu:0 and cpu:1 (KEEL_CPU_DEVICES=2), and a staged copy
between two plugins where the fake Level Zero driver is built. Each case
runs in a fresh interpreter with its own KEEL_TORCH_DEVICES."""
import os

import pytest

from conftest import run_script

SCRIPT = """
import torch, keel_torch
a = torch.arange(1 << 16, dtype=torch.float32).reshape(256, 256)
x = a.to('privateuseone:0')
y = x.to('privateuseone:1')                     # between the two keel devices
assert y.device == torch.device('privateuseone:1'), y.device
assert torch.equal(y.cpu(), a)
x.add_(1)                                       # the source changes after the copy
z = x.to('privateuseone:1')
assert torch.equal(z.cpu(), a + 1)
assert torch.equal(y.cpu(), a), "the first copy saw a later write"
back = z.to('privateuseone:0') * 2              # and back
assert torch.equal(back.cpu(), (a + 1) * 2)
t = x.t().to('privateuseone:1')                 # a strided view goes the generic way
assert torch.equal(t.cpu(), (a + 1).t())
for dtype in (torch.float16, torch.int64, torch.uint8):
    s = torch.arange(1000).to(dtype)
    assert torch.equal(s.to('privateuseone:0').to('privateuseone:1').cpu(), s), dtype
print('multidevice ok')
"""


def test_to_between_two_cpu_devices_is_right():
    status, out = run_script(SCRIPT, KEEL_CPU_DEVICES=2, KEEL_TORCH_DEVICES="cpu:0,cpu:1")
    assert status == 0, out
    assert "multidevice ok" in out


def test_to_between_two_plugins_is_right():
    if "ZE_ENABLE_ALT_DRIVERS" not in os.environ:
        pytest.skip("the fake Level Zero driver is not in this run")
    status, out = run_script(SCRIPT, KEEL_CPU_DEVICES=2, KEEL_TORCH_DEVICES="cpu:1,level_zero:0")
    assert status == 0, out
    assert "multidevice ok" in out
