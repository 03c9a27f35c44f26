"""view_as_real and view_as_complex of keel tensors are views: a write
through them reaches the tensor (the CPU fallback made them copies)."""
import torch

from conftest import assert_same


def test_a_write_through_view_as_real_reaches_the_complex_tensor(dev):
    c = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64).to(dev)
    r = torch.view_as_real(c)
    assert r.data_ptr() == c.data_ptr()
    r.mul_(2)
    assert_same(c, torch.tensor([2 + 4j, 6 - 8j], dtype=torch.complex64))


def test_a_write_through_view_as_complex_reaches_the_real_tensor(dev):
    r = torch.tensor([[1.0, 2.0], [3.0, -4.0]]).to(dev)
    c = torch.view_as_complex(r)
    assert c.data_ptr() == r.data_ptr()
    c.zero_()
    assert_same(r, torch.zeros(2, 2))
