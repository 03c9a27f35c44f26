"""keel as a PyTorch device.

Importing this package registers keel's devices with PyTorch's
``privateuseone`` backend: ``privateuseone:N`` is the N-th keel device named in
``KEEL_TORCH_DEVICES`` (comma-separated keel names, default ``cpu:0``). Where
PyTorch has ``torch.utils.rename_privateuse1_backend`` (2.x), the device is also
called ``keel``. Tensors live in keel's stream-ordered caching allocator;
copies go through keel streams; operators keel has no kernel for run on the
CPU (``fallback_ops()`` lists them).
"""
import collections as _collections
import contextlib as _contextlib
import os as _os
import sys as _sys
import weakref as _weakref

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
    """How many keel devices there are: the names in KEEL_TORCH_DEVICES, or
    0 when one of them does not exist (the error says which)."""
    return _ops.available_count()


def device_name(device=None):
    """The keel name behind a device ("cpu:0", "level_zero:0")."""
    return _ops.device_name(_index(device))


def is_available():
    """True when every device KEEL_TORCH_DEVICES names exists."""
    return device_count() > 0


def current_device():
    """This thread's current keel device index (tensors made with
    ``device="privateuseone"`` go there)."""
    return _ops.current_device()


def set_device(device):
    """Makes ``device`` this thread's current keel device."""
    _ops.set_device(_index(device))


def synchronize(device=None):
    """Waits for every stream of the device; raises the first stream's error."""
    _ops.synchronize(_index(device))


def recover(device=None):
    """The way on after a device fault, without a new process.

    Waits for every stream of the device; each stream that failed is
    replaced by a fresh one under the same id (the default stream, side
    streams and ``Stream`` objects keep working), and the faults are returned
    as strings (an empty list when no stream had failed: then nothing
    changes). The data of every keel tensor of the device that existed at
    the call is unknown from then on (work that failed or was skipped may
    have been meant to write it): reading it, or writing part of it, raises
    ``RuntimeError`` until it is written whole (``copy_``, ``fill_``,
    ``zero_``, ``load_state_dict``). Tensors made afterwards are fresh. A
    process group of the keel backend that saw the fault stays failed: on
    every rank, ``recover()``, then ``dist.destroy_process_group()`` and
    ``dist.init_process_group(...)`` again. Other threads may use the device
    meanwhile: it waits for their operations in flight and holds new ones
    back until the streams are replaced::

        try:
            train_step()
        except RuntimeError:
            keel_torch.recover()
            model.load_state_dict(checkpoint["model"])        # host copies
            optimizer.load_state_dict(checkpoint["optimizer"])
            optimizer.zero_grad(set_to_none=True)
    """
    return list(_ops.recover(_index(device)))


def fail_current_stream(device=None, message="fail_current_stream()"):
    """Fails the current stream of the device as an asynchronous device
    fault does: the work enqueued so far runs, the stream fails when it
    reaches this point (``DEVICE_ERROR``, sticky), and what observes it
    raises until ``recover()``. For testing a program's way on after a fault;
    raises where the plugin cannot fail a stream from the host."""
    _ops.fail_current_stream(_index(device), message)


def data_known(tensor):
    """False for a keel tensor whose data recover() made unknown (reading
    it raises); True otherwise."""
    return _ops.data_known(tensor)


class Stream:
    """A keel stream of one device. ``Stream()`` takes a side stream from the
    device's pool (8 streams, made on first use and handed out round-robin,
    as torch.cuda.Stream() does): any number of Stream objects share them.
    Use it with ``with keel_torch.stream(s):`` to make it current."""

    def __init__(self, device=None, _id=None):
        self.device_index = _index(device)
        self.id = _ops.new_stream(self.device_index) if _id is None else _id

    @property
    def device(self):
        return torch.device(BACKEND, self.device_index)

    def record_event(self, event=None):
        """Records ``event`` (a new timing Event if None) on this stream."""
        event = Event(enable_timing=True) if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        """Work enqueued on this stream from now on runs after ``event``."""
        _ops.event_wait(event._id, self.device_index, self.id)

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


class Event:
    """A keel event, as torch.cuda.Event: ``record(stream)``, ``query()``,
    ``synchronize()``, ``wait(stream)``, ``elapsed_time(end)`` (ms, both
    recorded with ``enable_timing=True``)."""

    def __init__(self, enable_timing=False, device=None):
        self.device_index = _index(device)
        self._id = _ops.event_create(self.device_index, bool(enable_timing))

    def record(self, stream=None):
        stream = current_stream(self.device_index) if stream is None else stream
        _ops.event_record(self._id, stream.device_index, stream.id)

    def wait(self, stream=None):
        stream = current_stream(self.device_index) if stream is None else stream
        stream.wait_event(self)

    def query(self):
        return _ops.event_query(self._id)

    def synchronize(self):
        _ops.event_synchronize(self._id)

    def elapsed_time(self, end_event):
        return _ops.event_elapsed_ms(self._id, end_event._id)

    def __del__(self):
        if getattr(self, "_id", None) is not None and _ops is not None:
            _ops.event_destroy(self._id)


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


# torch.cuda.memory_stats()'s keys for keel's statistics.
_CUDA_STAT_KEYS = {
    "allocated_bytes.all.current": "allocated_bytes",
    "allocated_bytes.all.peak": "peak_allocated_bytes",
    "reserved_bytes.all.current": "reserved_bytes",
    "reserved_bytes.all.peak": "peak_reserved_bytes",
    "requested_bytes.all.current": "requested_bytes",
    "active_bytes.all.current": "allocated_bytes",
    "allocation.all.current": "allocated_count",
    "allocation.all.allocated": "allocations",
    "segment.all.current": "segment_count",
    "segment.all.allocated": "raw_allocations",
    "segment.all.freed": "raw_frees",
    "inactive_split_bytes.all.current": "cached_bytes",
    "num_alloc_retries": "oom_retries",
    "num_ooms": "ooms",
}


def memory_stats(device=None):
    """The allocator's statistics for the device: keel's own keys
    (``allocated_bytes``, ``cache_hits``, ...) and torch.cuda's
    (``allocated_bytes.all.current``, ``num_ooms``, ...)."""
    stats = dict(_ops.memory_stats(_index(device)))
    stats.update({cuda: stats[keel] for cuda, keel in _CUDA_STAT_KEYS.items()})
    return stats


def memory_allocated(device=None):
    """Bytes of tensors alive on the device (keel's allocated bytes)."""
    return memory_stats(device)["allocated_bytes"]


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since the start or reset_peak_memory_stats()."""
    return memory_stats(device)["peak_allocated_bytes"]


def memory_reserved(device=None):
    """Bytes the allocator holds from the device (allocated, cached, pending frees)."""
    return memory_stats(device)["reserved_bytes"]


def max_memory_reserved(device=None):
    return memory_stats(device)["peak_reserved_bytes"]


def reset_peak_memory_stats(device=None):
    _ops.reset_peak_memory_stats(_index(device))


def memory_summary(device=None):
    return _ops.memory_summary(_index(device))


def empty_cache(device=None):
    """Returns cached memory to the device (after the pending frees ran)."""
    _ops.empty_cache(_index(device))


def routed_to_cpu_kernels():
    """The aten operators that run their CPU kernel through the fallback
    where PyTorch would otherwise run a generic decomposition on keel."""
    return list(_ops.route_cpu_kernels())


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
    _ops.reset_fallback_costs()


def fallback_costs():
    """Since the last reset_fallback_ops(): fallback calls, bytes copied to
    the host and back, and ns spent mirroring (copies and the host wait),
    in the CPU kernels, and writing back (comparing and uploading)."""
    return dict(_ops.fallback_costs())


routed_to_cpu_kernels()


# Checkpoints and pickle. 1.13's Python cannot hold a privateuseone storage
# (its argument parser refuses them), so a keel tensor is saved as a CPU
# copy of its storage tagged with the keel device ("privateuseone:N"):
# torch.load brings it back to that device, or where map_location says, and
# tensors that shared a storage in the checkpoint share one on keel.
#
# Tensors that share a keel storage share its host copy within one save:
# the copy is found by the storage's device and address while the save
# holds it (torch.save and pickle keep the storages they wrote until they
# return), so each save copies a storage once, with the values it has then.
_host_copies_being_saved = _weakref.WeakValueDictionary()


def _reduce_ex_internal_keel(self, proto):
    whole = _ops.storage_bytes(self)
    key = (self.device.index, whole.data_ptr(), whole.numel())
    untyped = _host_copies_being_saved.get(key) if whole.numel() > 0 else None
    if untyped is None:
        untyped = whole.cpu().storage().untyped()
        untyped._keel_location = f"{BACKEND}:{self.device.index}"
        if whole.numel() > 0:
            _host_copies_being_saved[key] = untyped
    typed = torch.storage.TypedStorage(wrap_storage=untyped, dtype=self.dtype)
    return (torch._utils._rebuild_tensor_v2,
            (typed, self.storage_offset(), tuple(self.size()), self.stride(), self.requires_grad,
             _collections.OrderedDict()))


def _wrap_tensor_reduce():
    original = torch.Tensor._reduce_ex_internal

    def _reduce_ex_internal(self, proto):
        if self.device.type in (BACKEND, "privateuseone"):
            return _reduce_ex_internal_keel(self, proto)
        return original(self, proto)

    torch.Tensor._reduce_ex_internal = _reduce_ex_internal

    original_deepcopy = torch.Tensor.__deepcopy__

    def __deepcopy__(self, memo):
        if type(self) is not torch.Tensor or self.device.type not in (BACKEND, "privateuseone"):
            return original_deepcopy(self, memo)
        if id(self) in memo:
            return memo[id(self)]
        with torch.no_grad():
            new = self.clone()
        new.requires_grad_(self.requires_grad)
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new

    torch.Tensor.__deepcopy__ = __deepcopy__


def _serialization_tag(storage):
    return getattr(storage, "_keel_location", None)


def _serialization_restore(storage, location):
    if location.startswith(BACKEND) or location.startswith("privateuseone"):
        target = torch.device(location)
        _index(target)  # a device that exists
        storage._keel_location = str(target)  # _rebuild_tensor moves it
        return storage
    return None


def _wrap_rebuild_tensor():
    original = torch._utils._rebuild_tensor

    def _rebuild_tensor(storage, storage_offset, size, stride):
        untyped = storage.untyped() if isinstance(storage, torch.storage.TypedStorage) else storage
        location = getattr(untyped, "_keel_location", None)
        if location is None:
            return original(storage, storage_offset, size, stride)
        base = getattr(untyped, "_keel_bytes", None)
        if base is None:  # the storage's bytes on the device, once per storage
            base = torch.empty(0, dtype=torch.uint8).set_(untyped).to(location)
            untyped._keel_bytes = base
        return _ops.alias_bytes(base, storage.dtype, storage_offset, list(size), list(stride))

    torch._utils._rebuild_tensor = _rebuild_tensor


_wrap_tensor_reduce()
_wrap_rebuild_tensor()
# Before the CPU's tagger (priority 10): the host copies are CPU storages.
torch.serialization.register_package(5, _serialization_tag, _serialization_restore)


# 1.13's DataLoader(pin_memory=True) pins only where torch.cuda is available
# (its own check) and says nothing otherwise: say why, and how to pin here.
def _wrap_dataloader():
    import warnings
    loader = torch.utils.data.DataLoader
    original = loader.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if self.pin_memory and not self.pin_memory_device and not torch.cuda.is_available():
            warnings.warn("DataLoader(pin_memory=True) does not pin: this PyTorch pins only for CUDA when no "
                          f"pin_memory_device is given; pass pin_memory_device={BACKEND!r} to pin in keel's "
                          "memory (with num_workers=0: 1.13's worker path asks torch.cuda for a device)",
                          stacklevel=2)

    loader.__init__ = __init__


_wrap_dataloader()


# torch.distributed's backend "keel" (keel_torch.distributed), where this
# build has it: init_process_group(backend="keel").
if _os.path.exists(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "distributed.py")):
    from . import distributed  # noqa: E402,F401

# keel's trace and memory snapshot (keel_torch.trace, keel_torch.memory_snapshot).
from .tracing import trace, trace_start, trace_stop, memory_snapshot, set_memory_history  # noqa: E402,F401
