#!/usr/bin/python3
"""Training steps and fallback ops on keel against CPU tensors, in one run.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch/keel_torch_training_bench.py

Table 1: ms per training step (forward, backward, optimizer step, loss.item())
of an MLP, a CNN (Conv2d + BatchNorm), a transformer encoder layer and an
LSTM with SGD and Adam, foreach on and off, on privateuseone:0 and on CPU
tensors, keel and CPU alternating (median of slices), and where keel's step
goes: the fallback's calls per step and its time mirroring arguments on the
host (copies and the wait), in CPU kernels, and writing back.

Table 2: one fallback op (x * y) at 16 floats and at 1 MiB against one
device round trip of the same tensor (copy to the host, its wait, a copy
back), measured side by side.
"""
import argparse
import statistics
import time

import torch

import keel_torch


def models():
    return {
        "MLP": (lambda: torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)),
                lambda g: torch.randn(32, 64, generator=g), 10),
        "CNN": (lambda: torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1, bias=False), torch.nn.BatchNorm2d(16),
                                            torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                            torch.nn.Linear(16 * 8 * 8, 10)),
                lambda g: torch.randn(16, 3, 16, 16, generator=g), 10),
        "Transformer": (lambda: torch.nn.Sequential(torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True),
                                                    torch.nn.Flatten(), torch.nn.Linear(16 * 64, 10)),
                        lambda g: torch.randn(8, 16, 64, generator=g), 10),
        "LSTM": (lambda: LSTMHead(), lambda g: torch.randn(8, 16, 32, generator=g), 10),
    }


class LSTMHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(32, 64, batch_first=True)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


def make_step(name, optimizer, foreach, device):
    build, data, classes = models()[name]
    torch.manual_seed(0)
    model = build().to(device)
    opt = (torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=foreach) if optimizer == "SGD"
           else torch.optim.Adam(model.parameters(), lr=1e-3, foreach=foreach))
    g = torch.Generator().manual_seed(1)
    x, y = data(g).to(device), torch.randint(0, classes, (x_len(data),), generator=g).to(device)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def x_len(data):
    return data(torch.Generator().manual_seed(0)).shape[0]


def timed(fn, repeat):
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def training_table(repeat, slices):
    print("| model | optimizer | foreach | keel ms/step | CPU ms/step | ratio | fallback calls/step "
          "| mirror ms | CPU-kernel ms | write-back ms | MiB down/up per step |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in models():
        for optimizer in ("SGD", "Adam"):
            for foreach in (False, True):
                k = make_step(name, optimizer, foreach, keel_torch.device(0))
                c = make_step(name, optimizer, foreach, torch.device("cpu"))
                kt, ct = [], []
                costs = None
                for _ in range(slices):
                    keel_torch.reset_fallback_ops()
                    kt.append(timed(k, repeat))
                    costs = keel_torch.fallback_costs()
                    ct.append(timed(c, repeat))
                steps = repeat + 1
                km, cm = statistics.median(kt) * 1e3, statistics.median(ct) * 1e3
                print(f"| {name} | {optimizer} | {foreach} | {km:.2f} | {cm:.2f} | {km / cm:.1f}x "
                      f"| {costs['calls'] / steps:.0f} | {costs['download_ns'] / steps / 1e6:.2f} "
                      f"| {costs['kernel_ns'] / steps / 1e6:.2f} | {costs['write_back_ns'] / steps / 1e6:.2f} "
                      f"| {costs['bytes_down'] / steps / 2**20:.2f} / {costs['bytes_up'] / steps / 2**20:.2f} |",
                      flush=True)


def fallback_table(repeat, slices):
    dev = keel_torch.device(0)
    print("| size | fallback `x * y` µs | round trip µs (k.cpu(), then .to(device)) | ratio | CPU tensors `x * y` µs |")
    print("|---|---|---|---|---|")
    for label, n in (("16 floats", 16), ("1 MiB", 1 << 18)):
        x, y = torch.randn(n).to(dev), torch.randn(n).to(dev)
        hx, hy = x.cpu(), y.cpu()
        ops, trips, cpus = [], [], []
        for _ in range(slices):
            ops.append(timed(lambda: (x * y, keel_torch.synchronize()), repeat))
            trips.append(timed(lambda: (x.cpu().to(dev), keel_torch.synchronize()), repeat))
            cpus.append(timed(lambda: hx * hy, repeat))
        o, t, c = (statistics.median(v) * 1e6 for v in (ops, trips, cpus))
        print(f"| {label} | {o:.1f} | {t:.1f} | {o / t:.2f}x | {c:.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="steps per slice (default: %(default)s)")
    parser.add_argument("--slices", type=int, default=3, help="alternating slices (default: %(default)s)")
    parser.add_argument("--op-repeat", type=int, default=200, help="ops per slice in table 2 (default: %(default)s)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"keel device: {keel_torch.device_name(0)}, torch {torch.__version__}, 1 intra-op thread\n")
    fallback_table(args.op_repeat, args.slices)
    print()
    training_table(args.repeat, args.slices)


if __name__ == "__main__":
    main()
