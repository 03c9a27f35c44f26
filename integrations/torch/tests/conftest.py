"""Shared fixtures of the keel_torch suite: the device under test (the first
name in KEEL_TORCH_DEVICES) and a helper that runs a script in a fresh
interpreter (for what leaves a stream failed, or needs other settings)."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import keel_torch


@pytest.fixture(scope="session")
def dev():
    return keel_torch.device(0)


@pytest.fixture(scope="session")
def keel_name():
    return keel_torch.device_name(0)


def run_script(code, **env):
    """Runs `code` in a new interpreter with keel_torch importable and `env`
    added; returns (exit status, stdout + stderr)."""
    merged = dict(os.environ)
    merged.update({k: str(v) for k, v in env.items()})
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=merged,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def assert_same(keel_tensor, cpu_tensor, **tol):
    assert keel_tensor.device.type in ("privateuseone", "keel")
    torch.testing.assert_close(keel_tensor.cpu(), cpu_tensor, **tol)
