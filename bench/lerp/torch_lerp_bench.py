#!/usr/bin/env python3
"""torch.lerp forward and backward on the shapes of lerp_bench, printed in
lerp_bench's table format, so keel and PyTorch can be compared on the same
GPU in the same session.

    python3 bench/lerp/torch_lerp_bench.py [--device cuda:0] [--reps 50]

Bandwidth counts the bytes that must move (every input read once, every
output written once: x, y, w and out for lerp; dout, w, dx and dy for the
backward, which computes only the x and y gradients), as lerp_bench does.
The copy baseline is a device-to-device copy (dst.copy_(src)) of 1 GiB.
"""
import argparse
import math

import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}

# (label, x shape, y shape, w shape or None for a scalar weight, dtype) - the
# cases of lerp_bench.
CASES = [
    ("x,y,w [16,102400]", [16, 102400], [16, 102400], [16, 102400], "f32"),
    ("x,y,w [16,204800]", [16, 204800], [16, 204800], [16, 204800], "f64"),
    ("x [16,1,1,1] y [16,3,244,244] w [3,1,244]", [16, 1, 1, 1], [16, 3, 244, 244], [3, 1, 244], "f32"),
    ("x,y [67108864] w scalar", [67108864], [67108864], None, "f32"),
]


def numel(shape):
    return math.prod(shape) if shape else 1


def time_us(fn, reps, device):
    """Median time of fn() in microseconds (CUDA events on a GPU)."""
    for _ in range(3):
        fn()
    times = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
    else:
        import time
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    return times[len(times) // 2]


def row(label, op, dtype, us, nbytes, copy_gbs):
    gbs = nbytes / us / 1e3
    print(f"{label:<44} {op:<10} {dtype:<5} {us:>10.2f} {gbs:>9.1f} {100 * gbs / copy_gbs:>6.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    device = torch.device(args.device)

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "host CPU"
    print(f"torch_lerp_bench  device: {device} ({name})  torch {torch.__version__}")
    copy_bytes = 1 << 30
    src = torch.empty(copy_bytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy_gbs = 2 * copy_bytes / time_us(lambda: dst.copy_(src), args.reps, device) / 1e3
    del src, dst
    print(f"copy baseline: {copy_gbs:.1f} GB/s (device-to-device copy of 1024 MiB, same run)")
    print(f"{'case':<44} {'op':<10} {'dtype':<5} {'time_us':>10} {'GB/s':>9} {'%copy':>6}")

    for label, xs, ys, ws, dt in CASES:
        dtype = DTYPES[dt]
        es = torch.empty((), dtype=dtype).element_size()
        x = torch.rand(xs, dtype=dtype, device=device, requires_grad=True)
        y = torch.rand(ys, dtype=dtype, device=device, requires_grad=True)
        w = torch.rand(ws, dtype=dtype, device=device) if ws is not None else 0.3
        out = torch.lerp(x, y, w)
        out_shape = list(out.shape)
        nw = numel(ws) if ws is not None else 0
        with torch.no_grad():
            fwd = time_us(lambda: torch.lerp(x, y, w), args.reps, device)
        row(label, "lerp", dt, fwd, (numel(xs) + numel(ys) + nw + numel(out_shape)) * es, copy_gbs)
        dout = torch.rand_like(out)
        bwd = time_us(lambda: torch.autograd.grad(out, (x, y), dout, retain_graph=True), args.reps, device)
        row(label, "lerp_grad", dt, bwd, (numel(out_shape) + nw + numel(xs) + numel(ys)) * es, copy_gbs)
        del x, y, w, out, dout
        if device.type == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
