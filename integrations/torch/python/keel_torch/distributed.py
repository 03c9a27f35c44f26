"""torch.distributed's backend ``keel``: collectives on keel devices.

Importing ``keel_torch`` registers it, so that::

    torch.distributed.init_process_group(backend="keel")   # env://, torch's TCPStore

creates a process group over ``keel::Communicator`` for tensors on keel
devices (``privateuseone``). As with NCCL, an operation runs on the group's
communication stream after the work the current stream enqueued so far, and
``Work.wait()`` (or ``get_future().wait()``) orders the current stream after
it without blocking the host; ``barrier()`` blocks the host. The ranks must
issue the same operations in the same order. ``DistributedDataParallel``
works with a keel module and the default process group.

Operations: ``all_reduce`` (SUM, AVG, PRODUCT, MIN, MAX; the bitwise ops
and PREMUL_SUM raise), ``broadcast``, ``all_gather``, ``_all_gather_base``
(``all_gather_into_tensor``), ``reduce_scatter``, ``_reduce_scatter_base``
(``reduce_scatter_tensor``), ``reduce`` (in place on the root), ``gather``,
``scatter``, ``all_to_all_single``, ``all_to_all``, ``send``/``recv`` (tags
are not matched: messages between two ranks match in order), ``barrier``.
``recv`` from any source raises. Errors
are ``RuntimeError``; a collective that fails while it runs (a peer gone,
the timeout) fails the streams that wait for it and every later operation.
"""
import torch.distributed as _dist

from . import _c10d

BACKEND_NAME = "keel"


def _create(store, rank, world_size, timeout):
    return _c10d.create_process_group(store, rank, world_size, timeout)


if _dist.is_available() and not hasattr(_dist.Backend, BACKEND_NAME.upper()):
    _dist.Backend.register_backend(BACKEND_NAME, _create)
