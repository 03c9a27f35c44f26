"""DistributedDataParallel over the keel backend, one rank of a run started
by torch.distributed.run: ``python3 distributed_ddp_train.py MODEL...``
(mlp, cnn). Each rank trains its half of a batch; the parameters must end
within 1e-5 of one process training on the whole batch (CPU tensors, same
initial weights). Exits 0 when they do; prints the largest difference."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import keel_torch

STEPS = 5
BATCH = 16  # the combined batch; each rank takes BATCH / WORLD_SIZE


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.Tanh(),
                               torch.nn.Linear(32, 3))


def cnn():
    return torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3),
                               torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 3))


MODELS = {"mlp": (mlp, (12,)), "cnn": (cnn, (2, 8, 8))}


def data(shape):
    g = torch.Generator().manual_seed(7)
    return torch.randn(BATCH, *shape, generator=g), torch.randn(BATCH, 3, generator=g)


def train(model, device, x, y):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()


def main():
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group(backend="keel")
    dev = keel_torch.device(0)
    worst = 0.0
    for name in sys.argv[1:]:
        make, shape = MODELS[name]
        torch.manual_seed(0)
        reference = make()
        model = make()
        model.load_state_dict(reference.state_dict())
        x, y = data(shape)
        train(reference, torch.device("cpu"), x, y)
        ddp = DistributedDataParallel(model.to(dev))
        part = BATCH // size
        train(ddp, dev, x[rank * part:(rank + 1) * part], y[rank * part:(rank + 1) * part])
        diff = max((p.detach().cpu() - r.detach()).abs().max().item()
                   for p, r in zip(model.parameters(), reference.parameters()))
        moved = max((p.detach().cpu() - q.detach()).abs().max().item()
                    for p, q in zip(model.parameters(), make().parameters()))
        print(f"rank {rank} {name}: largest difference to one process on the whole batch {diff:.3g}")
        assert moved > 1e-3, "the parameters did not train"
        worst = max(worst, diff)
    dist.destroy_process_group()
    if worst > 1e-5:
        print(f"rank {rank}: FAILED, {worst:.3g} > 1e-5")
        sys.exit(1)
    print(f"rank {rank} done")


if __name__ == "__main__":
    main()
