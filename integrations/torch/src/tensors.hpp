// privateuseone tensors as keel sees them: the device, the view of their
// bytes, their dtype; and the copies between them and the host.
#pragma once

#include "torch_device.hpp"

#include <ATen/Tensor.h>

#include <optional>

namespace keel_torch {

[[nodiscard]] inline bool is_keel(const at::Tensor& t) {
    return t.device().type() == c10::DeviceType::PrivateUse1;
}
[[nodiscard]] inline const TorchDevice& keel_device_of(const at::Tensor& t) { return torch_device(t.device().index()); }

// The bytes of a contiguous keel tensor, [data_ptr, data_ptr + nbytes);
// c10::Error when its data is unknown (check_data_known).
[[nodiscard]] keel::DeviceView view_of(const at::Tensor& t);
// Whether t's elements are every byte of its storage (a write of t leaves
// none of the storage's old bytes).
[[nodiscard]] bool writes_whole_storage(const at::Tensor& t);
// keel's dtype for a PyTorch one, if keel kernels have it.
[[nodiscard]] std::optional<keel_dtype> keel_dtype_of(at::ScalarType type);

// A new contiguous tensor on privateuseone:index.
[[nodiscard]] at::Tensor empty_keel(at::IntArrayRef sizes, at::ScalarType type, c10::DeviceIndex index);

// dst <- src for any pair of devices among CPU and keel, dtypes and
// strides (src broadcast to dst's shape), on the current stream of the keel
// side. Host memory is read before it returns (staged) unless it is a whole
// pinned buffer and non_blocking is set; a copy to the host returns once the
// data is there unless dst is a whole pinned buffer and non_blocking is set.
void copy_between(const at::Tensor& dst, const at::Tensor& src, bool non_blocking);

}  // namespace keel_torch
