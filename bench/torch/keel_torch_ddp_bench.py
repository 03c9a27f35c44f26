#!/usr/bin/python3
"""DistributedDataParallel through torch.distributed's keel backend against
gloo, 2 processes, same model, printed as a table (by rank 0).

    PYTHONPATH=build/python /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 \\
        --redirects 1 --tee 1 --master_addr 127.0.0.1 --master_port 29533 \\
        bench/torch/keel_torch_ddp_bench.py

Both groups live in the same two processes: gloo (the default group) with
the model on CPU tensors, keel (a second group) with the model on keel
device 0. Slices of steps alternate between them, and each row reports the
median of its slices (ms per step), so that a machine shared with other
work disturbs both sides alike. Rows: a training step without DDP (the
compute alone), the DDP step, what DDP adds, and one all-reduce of the
model's gradient size through each group; wall time, and the process's
CPU time (keel's stream workers and Gloo's threads included) per step,
rank 0's. "gloo/keel" is the ratio of times: above 1, keel is faster.
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import keel_torch


def model(width, depth):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))


def step_fn(net, device, batch, width, sync):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, width, generator=g).to(device)
    y = torch.randn(batch, 10, generator=g).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-3)

    def step():
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        optimizer.step()

    return step, sync


def all_reduce_fn(group, device, numel, sync):
    t = torch.ones(numel).to(device)
    return (lambda: dist.all_reduce(t, group=group)), sync


def measure(fn_sync, steps):
    fn, sync = fn_sync
    fn()
    sync()
    dist.barrier()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        fn()
    sync()
    return (time.perf_counter() - start) / steps * 1e3, (time.process_time() - cpu) / steps * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=256, help="hidden width of the MLP")
    parser.add_argument("--depth", type=int, default=3, help="hidden layers of the MLP")
    parser.add_argument("--batch", type=int, default=32, help="batch per rank")
    parser.add_argument("--steps", type=int, default=20, help="steps per slice")
    parser.add_argument("--slices", type=int, default=5, help="alternating slices per row")
    args = parser.parse_args()

    dist.init_process_group(backend="gloo")
    keel_group = dist.new_group(backend="keel")
    rank = dist.get_rank()
    dev = keel_torch.device(0)
    no_sync = lambda: None  # noqa: E731
    keel_sync = keel_torch.synchronize

    torch.manual_seed(0)
    cpu_net = model(args.width, args.depth)
    keel_net = model(args.width, args.depth).to(dev)
    keel_net.load_state_dict(cpu_net.state_dict())
    numel = sum(p.numel() for p in cpu_net.parameters())
    rows = {
        "train step, no DDP (compute)": (step_fn(cpu_net, "cpu", args.batch, args.width, no_sync),
                                         step_fn(keel_net, dev, args.batch, args.width, keel_sync)),
        "DDP train step": (step_fn(DistributedDataParallel(cpu_net), "cpu", args.batch, args.width, no_sync),
                           step_fn(DistributedDataParallel(keel_net, process_group=keel_group), dev, args.batch,
                                   args.width, keel_sync)),
        f"all_reduce of the gradients ({numel * 4 / 2**20:.2f} MiB)":
            (all_reduce_fn(None, "cpu", numel, no_sync), all_reduce_fn(keel_group, dev, numel, keel_sync)),
    }
    results = {}
    for name, (gloo_side, keel_side) in rows.items():
        g, k = [], []
        for _ in range(args.slices):
            g.append(measure(gloo_side, args.steps))
            k.append(measure(keel_side, args.steps))
        results[name] = tuple(statistics.median(side[i] for side in sides) for sides in (g, k) for i in (0, 1))
    base, ddp = results["train step, no DDP (compute)"], results["DDP train step"]
    results["what DDP adds (DDP step - compute)"] = tuple(d - b for d, b in zip(ddp, base))
    # What the keel DDP step runs on the CPU fallback beyond the plain step.
    keel_torch.reset_fallback_ops()
    rows["train step, no DDP (compute)"][1][0]()
    plain = set(keel_torch.fallback_ops())
    keel_torch.reset_fallback_ops()
    rows["DDP train step"][1][0]()
    keel_torch.synchronize()
    added = sorted(set(keel_torch.fallback_ops()) - plain)
    if rank == 0:
        print(f"MLP {args.depth}x{args.width}, {numel} parameters, batch {args.batch} per rank, 2 ranks, "
              f"keel device {keel_torch.device_name(0)}, torch {torch.__version__}, "
              f"{args.slices} slices of {args.steps} steps")
        print("| row | gloo wall ms | keel wall ms | gloo/keel wall | gloo CPU ms | keel CPU ms | gloo/keel CPU |")
        print("|---|---|---|---|---|---|---|")
        for name, (gw, gc, kw, kc) in results.items():
            ratio = lambda a, b: f"{a / b:.2f}" if a > 0 and b > 0 else "-"  # noqa: E731
            print(f"| {name} | {gw:.3f} | {kw:.3f} | {ratio(gw, kw)} | {gc:.3f} | {kc:.3f} | {ratio(gc, kc)} |")
        print("operators DDP adds on keel's CPU fallback:", ", ".join(added) or "none")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
