"""A small MLP trained for a few steps on a keel device follows the CPU run."""
import torch

import keel_torch


def train(device, steps=5):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(32, 8, generator=generator)
    y = torch.randn(32, 1, generator=generator)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


def test_a_small_mlp_trains_as_on_the_cpu(dev):
    keel_losses, keel_params = train(dev)
    cpu_losses, cpu_params = train(torch.device("cpu"))
    torch.testing.assert_close(torch.tensor(keel_losses), torch.tensor(cpu_losses))
    for k, c in zip(keel_params, cpu_params):
        torch.testing.assert_close(k, c)
    assert keel_losses[-1] < keel_losses[0]
    keel_torch.synchronize()
