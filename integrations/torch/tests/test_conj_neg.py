"""Conjugate and negative views (bits, not values) are resolved in every copy
in and out of keel and in the fallback's inputs, as CUDA's copy does."""
import torch

from conftest import assert_same


def test_copies_of_conjugate_views(dev):
    c = torch.randn(6, dtype=torch.cfloat)
    k = c.to(dev)
    assert torch.equal(k.conj().cpu(), c.conj())
    assert_same(k.conj().resolve_conj(), c.conj())
    assert torch.equal(c.conj().to(dev).cpu(), c.conj())
    target = torch.zeros(6, dtype=torch.cfloat).to(dev)
    target.copy_(c.conj())
    assert_same(target, c.conj())
    target.conj().copy_(c)  # a conj destination stores conj(values)
    assert_same(target, c.conj())
    host = torch.zeros(6, dtype=torch.cfloat)
    host.copy_(k.conj())
    assert torch.equal(host, c.conj())


def test_copies_of_negative_views(dev):
    c = torch.randn(6, dtype=torch.cfloat)
    k = c.to(dev)
    n = k.conj().imag  # imag of a conj view is a neg view
    assert n.is_neg()
    assert torch.equal(n.cpu(), c.conj().imag)
    assert_same(torch._neg_view(k).resolve_neg(), -c)


def test_complex_ffts_match_the_cpu(dev):
    c = torch.randn(8, 6, dtype=torch.cfloat)
    k = c.to(dev)
    assert_same(torch.fft.ifft(k), torch.fft.ifft(c), rtol=1e-5, atol=1e-5)
    assert_same(torch.fft.hfft2(k), torch.fft.hfft2(c), rtol=1e-4, atol=1e-4)
    assert_same(torch.fft.ihfft(k.real.contiguous()), torch.fft.ihfft(c.real), rtol=1e-5, atol=1e-5)
    assert_same(torch.fft.irfft(k), torch.fft.irfft(c), rtol=1e-5, atol=1e-5)


def test_matmul_of_a_conjugate_view(dev):
    a = torch.randn(3, 4, dtype=torch.cfloat)
    b = torch.randn(4, 2, dtype=torch.cfloat)
    assert_same(a.to(dev).conj() @ b.to(dev), a.conj() @ b, rtol=1e-5, atol=1e-5)
    assert_same(a.to(dev).mH, a.mH)


def test_the_gradient_of_polar(dev):
    abs_, angle = torch.rand(5) + 0.5, torch.randn(5)
    ka, kb = abs_.to(dev).requires_grad_(), angle.to(dev).requires_grad_()
    ca, cb = abs_.clone().requires_grad_(), angle.clone().requires_grad_()
    (torch.polar(ka, kb) * torch.tensor(1 + 2j).to(dev)).abs().sum().backward()
    (torch.polar(ca, cb) * torch.tensor(1 + 2j)).abs().sum().backward()
    z = torch.polar(ka, kb)
    torch.view_as_real(z).sum().backward()
    zc = torch.polar(ca, cb)
    torch.view_as_real(zc).sum().backward()
    assert_same(ka.grad, ca.grad, rtol=1e-5, atol=1e-5)
    assert_same(kb.grad, cb.grad, rtol=1e-5, atol=1e-5)
