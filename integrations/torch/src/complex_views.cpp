// view_as_real and view_as_complex on keel tensors: views, as on CPU. 1.13
// gives them kernels for CPU, CUDA, MPS and Meta only, so they reached the
// CPU fallback, which returned a copy: whatever was written through the
// "view" (torch.distributed's all_reduce of a complex tensor) never reached
// the tensor. PyTorch's own kernels only restride (as_strided, which keel has).
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <torch/library.h>

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
    m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
}
