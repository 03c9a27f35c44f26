"""keel as a PyTorch device.

Importing this package registers keel's devices with PyTorch's
``privateuseone`` backend: ``privateuseone:N`` is the N-th keel device named in
``KEEL_TORCH_DEVICES`` (comma-separated keel names, default ``cpu:0``). Where
PyTorch has ``torch.utils.rename_privateuse1_backend`` (2.x), the device is also
called ``keel``. Tensors live in keel's stream-ordered caching allocator;
copies go through keel streams; operators keel has no kernel for run on the
CPU (``fallback_ops()`` lists them).
"""
import contextlib as _contextlib
import os as _os
import sys as _sys

import torch

torch.ops.load_library(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "libkeel_torch.so"))
_ops = torch.ops.keel

#: The device type string to use with torch.device: "keel" where PyTorch can
#: rename its privateuseone backend, else "privateuseone".
BACKEND = "privateuseone"
if hasattr(torch.utils, "rename_privateuse1_backend"):
    torch.utils.rename_privateuse1_backend("keel")
    BACKEND = "keel"
    if hasattr(torch, "_register_device_module"):
        torch._register_device_module("keel", _sys.modules[__name__])
    if hasattr(torch.utils, "generate_methods_for_privateuse1_backend"):
        torch.utils.generate_methods_for_privateuse1_backend()


def _index(device):
    if device is None:
        return _ops.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != BACKEND and device.type != "privateuseone":
        raise ValueError(f"not a keel device: {device}")
    return _ops.current_device() if device.index is None else device.index


def device(index=0):
    """The torch.device of the index-th keel device."""
    return torch.device(BACKEND, index)


def device_count():
    return _ops.device_count()


def device_name(device=None):
    """The keel name behind a device ("cpu:0", "level_zero:0")."""
    return _ops.device_name(_index(device))


def is_available():
    return device_count() > 0


def current_device():
    return _ops.current_device()


def synchronize(device=None):
    """Waits for every stream of the device; raises the first stream's error."""
    _ops.synchronize(_index(device))


class Stream:
    """A keel stream of one device. ``Stream()`` creates a new one; use it
    with ``with keel_torch.stream(s):`` to make it current."""

    def __init__(self, device=None, _id=None):
        self.device_index = _index(device)
        self.id = _ops.new_stream(self.device_index) if _id is None else _id

    def synchronize(self):
        _ops.synchronize_stream(self.device_index, self.id)

    def query(self):
        return _ops.query_stream(self.device_index, self.id)

    def wait_stream(self, other):
        """Work enqueued on this stream from now on runs after all that
        ``other`` enqueued so far (on the device; the host does not wait)."""
        _ops.wait_stream(self.device_index, self.id, other.id)

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.device_index, self.id) == (other.device_index, other.id)

    def __hash__(self):
        return hash((self.device_index, self.id))

    def __repr__(self):
        return f"keel_torch.Stream(device={self.device_index}, id={self.id})"


def current_stream(device=None):
    index = _index(device)
    return Stream(index, _ops.current_stream(index))


def default_stream(device=None):
    return Stream(_index(device), 0)


def set_stream(stream):
    _ops.set_stream(stream.device_index, stream.id)


@_contextlib.contextmanager
def stream(s):
    """Makes ``s`` the current stream of its device on this thread."""
    previous = current_stream(s.device_index)
    set_stream(s)
    try:
        yield s
    finally:
        set_stream(previous)


def record_stream(tensor, stream):
    """keel's record_stream: the tensor's memory is not reused before the
    work ``stream`` enqueued up to its free has run."""
    _ops.record_stream(tensor, stream.id)


def memory_stats(device=None):
    """The allocator's statistics (bytes and counts) for the device."""
    return dict(_ops.memory_stats(_index(device)))


def memory_summary(device=None):
    return _ops.memory_summary(_index(device))


def empty_cache(device=None):
    """Returns cached memory to the device (after the pending frees ran)."""
    _ops.empty_cache(_index(device))


def pin_memory(tensor, device=None):
    """A copy of a CPU tensor in page-locked memory of the keel device:
    ``to(keel, non_blocking=True)`` from it does not wait or stage."""
    return _ops.pin_memory(tensor, _index(device))


def is_pinned(tensor):
    return _ops.is_pinned(tensor)


def fallback_ops():
    """The operators that ran on the CPU fallback since the last reset."""
    return list(_ops.fallback_ops())


def reset_fallback_ops():
    _ops.reset_fallback_ops()


# torch.distributed's backend "keel" (keel_torch.distributed), where this
# build has it: init_process_group(backend="keel").
if _os.path.exists(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "distributed.py")):
    from . import distributed  # noqa: E402,F401
