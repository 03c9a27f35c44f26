"""Convolutions (1d/2d/3d, transposed, grouped, and their backward) run on
keel as on the CPU, and a CNN with BatchNorm trains to the CPU's parameters
with SGD and Adam, foreach both ways."""
import pytest
import torch

from conftest import assert_same


@pytest.mark.parametrize("module,shape", [
    (lambda: torch.nn.Conv1d(3, 4, 3, padding=1), (2, 3, 9)),
    (lambda: torch.nn.Conv2d(3, 4, 3, stride=2, bias=False), (2, 3, 9, 9)),
    (lambda: torch.nn.Conv2d(4, 4, 3, groups=2, dilation=2), (2, 4, 9, 9)),
    (lambda: torch.nn.Conv3d(2, 3, 2), (1, 2, 5, 5, 5)),
    (lambda: torch.nn.ConvTranspose1d(3, 2, 3, stride=2, output_padding=1), (2, 3, 6)),
    (lambda: torch.nn.ConvTranspose2d(4, 2, 3, stride=2, groups=2), (2, 4, 5, 5)),
    (lambda: torch.nn.ConvTranspose3d(2, 2, 2), (1, 2, 3, 3, 3)),
], ids=["conv1d", "conv2d", "conv2d_groups", "conv3d", "convt1d", "convt2d", "convt3d"])
def test_convolution_and_its_gradients_match_the_cpu(dev, module, shape):
    torch.manual_seed(0)
    cpu_conv = module()
    keel_conv = module().to(dev)
    keel_conv.load_state_dict({k: v.to(dev) for k, v in cpu_conv.state_dict().items()})
    x = torch.randn(*shape)
    xc, xk = x.clone().requires_grad_(), x.to(dev).requires_grad_()
    yc, yk = cpu_conv(xc), keel_conv(xk)
    assert yk.device == dev
    assert_same(yk, yc, rtol=1e-5, atol=1e-5)
    g = torch.randn_like(yc)
    yc.backward(g)
    yk.backward(g.to(dev))
    assert_same(xk.grad, xc.grad, rtol=1e-5, atol=1e-5)
    for (name, pk), pc in zip(keel_conv.named_parameters(), cpu_conv.parameters()):
        assert_same(pk.grad, pc.grad, rtol=1e-5, atol=1e-5)


# Convolutions before BatchNorm without a bias, as usual: BatchNorm takes out
# the mean, so a bias's gradient is rounding noise (1e-8) that Adam divides
# by its own square root, and one ulp of difference in any kernel becomes a
# step of lr (measured: 0.02 after 4 steps, keel's axpy against CPU's add).
def cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))


def train_cnn(device, optimizer_class, foreach, steps=4):
    torch.manual_seed(0)
    model = cnn().to(device)
    optimizer = optimizer_class(model.parameters(), lr=0.05, foreach=foreach)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(6, 3, 12, 12, generator=generator)
        y = torch.randint(0, 4, (6,), generator=generator)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
    model.eval()
    evaluation = model(torch.randn(2, 3, 12, 12, generator=generator).to(device))
    return [t.detach().cpu() for t in model.state_dict().values()], evaluation.detach().cpu()


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "for_loop"])
@pytest.mark.parametrize("optimizer_class", [torch.optim.SGD, torch.optim.Adam], ids=["sgd", "adam"])
def test_a_cnn_with_batchnorm_trains_to_the_cpu_parameters(dev, optimizer_class, foreach):
    keel_state, keel_eval = train_cnn(dev, optimizer_class, foreach)
    cpu_state, cpu_eval = train_cnn(torch.device("cpu"), optimizer_class, foreach)
    for k, c in zip(keel_state, cpu_state):
        torch.testing.assert_close(k, c, rtol=0, atol=1e-5)
    torch.testing.assert_close(keel_eval, cpu_eval, rtol=0, atol=1e-5)
