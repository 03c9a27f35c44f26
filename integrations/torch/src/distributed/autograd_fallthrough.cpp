// PyTorch 1.13 routes torch.distributed's collectives through c10d
// operators whose kernel serves every backend, but registers the autograd
// fallthrough they need for CPU and CUDA only: on a privateuseone tensor
// they stop at AutogradPrivateUse1 ("Could not run 'c10d::allreduce_'").
// Collectives are not differentiated, so fall through there as on CPU.
#include <torch/library.h>

TORCH_LIBRARY_IMPL(c10d, AutogradPrivateUse1, m) {
    for (const char* op : {"broadcast_", "allreduce_", "allgather_", "reduce_scatter_", "reduce_", "gather_",
                           "scatter_", "alltoall_", "barrier", "send", "recv_"})
        m.impl(op, torch::CppFunction::makeFallthrough());
}
