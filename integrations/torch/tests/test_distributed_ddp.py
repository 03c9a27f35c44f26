"""DistributedDataParallel over the keel backend, on two processes started
by PyTorch's own launcher, trains to the parameters of one process on the
combined batch (within 1e-5)."""
import os
import subprocess
import sys

import pytest
import torch

import keel_torch
from test_distributed import free_port

HERE = os.path.dirname(os.path.abspath(__file__))


def launch(*models, timeout=240):
    # Debian 12's Python 3.11 crashes in the launcher's default of no
    # redirects (0): --redirects 1 --tee 1 send the ranks' output to files
    # and the console.
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--redirects", "1",
               "--tee", "1", "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
               os.path.join(HERE, "distributed_ddp_train.py"), *models]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def convolution_works():
    try:
        conv = torch.nn.Conv2d(1, 1, 3).to(keel_torch.device(0))
        conv(torch.ones(1, 1, 4, 4).to(keel_torch.device(0))).sum().backward()
        keel_torch.synchronize()
        return None
    except (RuntimeError, NotImplementedError) as e:
        return str(e).splitlines()[0]


def check(status, out, model):
    assert status == 0, out
    for rank in range(2):
        assert f"rank {rank} {model}: largest difference" in out, out
        assert f"rank {rank} done" in out, out


def test_ddp_trains_an_mlp_on_two_processes_as_one_process_on_the_whole_batch():
    status, out = launch("mlp")
    check(status, out, "mlp")


def test_ddp_trains_a_cnn_on_two_processes_as_one_process_on_the_whole_batch():
    why = convolution_works()
    if why is not None:
        pytest.skip(f"convolutions do not run on keel in this build: {why}")
    status, out = launch("cnn")
    check(status, out, "cnn")


def test_the_ddp_benchmark_runs_as_the_readme_says():
    bench = os.path.join(HERE, "..", "..", "..", "bench", "torch", "keel_torch_ddp_bench.py")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--redirects", "1", "--tee",
               "1", "--master_addr", "127.0.0.1", "--master_port", str(free_port()), bench, "--width", "16",
               "--steps", "1", "--slices", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "| DDP train step |" in out and "| all_reduce of the gradients" in out, out
