#!/usr/bin/python3
"""Eager-mode overhead of keel as a PyTorch device, printed as a table.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch/keel_torch_bench.py

Per small op (16 floats): microseconds per op on privateuseone and on CPU
tensors, wall and process CPU time (which counts the plugin's stream
threads too), the op run REPEAT times and the device synchronised once at
the end. Then allocation-heavy loops (allocate and free one tensor per
iteration) against PyTorch's own CPU allocator. Slices of keel and CPU
alternate, and each row reports the median of its slices, so that a
machine shared with other work disturbs both sides alike.
"""
import argparse
import statistics
import time

import torch

import keel_torch


def measure(fn, repeat, sync):
    fn()  # warm: caches, kernels found
    sync()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        fn()
    sync()
    return (time.perf_counter() - wall) / repeat * 1e6, (time.process_time() - cpu) / repeat * 1e6


def compare(name, make, repeat, slices):
    """make(device) -> a callable running one op on tensors of that device."""
    keel_fn, cpu_fn = make(keel_torch.device(0)), make(torch.device("cpu"))
    keel_rows, cpu_rows = [], []
    for _ in range(slices):
        keel_rows.append(measure(keel_fn, repeat, keel_torch.synchronize))
        cpu_rows.append(measure(cpu_fn, repeat, lambda: None))
    kw = statistics.median(r[0] for r in keel_rows)
    kc = statistics.median(r[1] for r in keel_rows)
    cw = statistics.median(r[0] for r in cpu_rows)
    cc = statistics.median(r[1] for r in cpu_rows)
    print(f"| {name} | {kw:.1f} | {kc:.1f} | {cw:.1f} | {cc:.1f} | {kw / cw:.1f}x |", flush=True)


def small_ops(n):
    def binary(op):
        def make(device):
            x, y = torch.randn(n).to(device), torch.randn(n).to(device)
            return lambda: op(x, y)
        return make

    return [
        ("x.add_(y) (keel: axpy kernel)", binary(lambda x, y: x.add_(y))),
        ("x + y (keel: alloc + d2d copy + axpy)", binary(lambda x, y: x + y)),
        ("x.fill_(1.0) (keel: fill kernel)", binary(lambda x, y: x.fill_(1.0))),
        ("x.zero_() (keel: memset)", binary(lambda x, y: x.zero_())),
        ("torch.lerp(x, y, 0.5) (keel: lerp kernel)", binary(lambda x, y: torch.lerp(x, y, 0.5))),
        ("x[2:10] (view, no device work)", binary(lambda x, y: x[2:10])),
        ("x * y (keel: CPU fallback)", binary(lambda x, y: x * y)),
        ("torch.relu(x) (keel: CPU fallback)", binary(lambda x, y: torch.relu(x))),
        ("x.cpu() (d2h, waits)", binary(lambda x, y: x.cpu())),
        ("cpu_tensor.to(device) (h2d, staged)", lambda device: (lambda t: lambda: t.to(device))(torch.randn(n))),
    ]


def alloc_loops():
    rows = []
    for label, numel in (("4 KiB", 1 << 10), ("256 KiB", 1 << 16), ("4 MiB", 1 << 20), ("64 MiB", 1 << 24)):
        def make(device, numel=numel):
            return lambda: torch.empty(numel, device=device)
        rows.append((f"torch.empty({label}) + free", make))

    def temporaries(device):
        x = torch.randn(1 << 12).to(device)
        return lambda: x + x  # a new 16 KiB result per op, freed at once
    rows.append(("x + x, 16 KiB temporaries (keel: axpy)", temporaries))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--slices", type=int, default=5)
    args = parser.parse_args()
    print(f"device privateuseone:0 = keel {keel_torch.device_name(0)}; torch {torch.__version__}; "
          f"{torch.get_num_threads()} CPU threads; {args.slices} slices of {args.repeat} ops, medians")
    header = "| op | keel wall µs/op | keel CPU µs/op | CPU wall µs/op | CPU CPU µs/op | keel / CPU (wall) |"
    print("\nSmall ops (16 floats):\n\n" + header + "\n|---|---|---|---|---|---|")
    for name, make in small_ops(16):
        compare(name, make, args.repeat, args.slices)
    before = keel_torch.memory_stats()
    print("\nAllocation-heavy loops (PyTorch's CPU allocator on the CPU side):\n\n" + header +
          "\n|---|---|---|---|---|---|")
    for name, make in alloc_loops():
        compare(name, make, args.repeat, args.slices)
    after = keel_torch.memory_stats()
    allocations = after["allocations"] - before["allocations"]
    hits = after["cache_hits"] - before["cache_hits"]
    print(f"\nkeel allocator over the loops: {allocations} allocations, {hits} cache hits, "
          f"{after['raw_allocations'] - before['raw_allocations']} device allocations")


if __name__ == "__main__":
    main()
