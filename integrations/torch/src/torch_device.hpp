// What the kernels need of keel's side of a privateuseone tensor: its device,
// the stream a c10::Stream names, the keel buffer behind a DataPtr, and the
// pinned host memory that copies may use without staging. c10 headers only.
#pragma once

#include "devices.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <cstddef>
#include <memory>

namespace keel_torch {

// privateuseone:index (-1: the current device), or a c10::Error.
[[nodiscard]] const TorchDevice& torch_device(c10::DeviceIndex index);
// The keel stream a c10::Stream of privateuseone names.
[[nodiscard]] const keel::Stream& keel_stream(const c10::Stream& stream);
// The calling thread's current stream on privateuseone:index.
[[nodiscard]] const keel::Stream& current_keel_stream(c10::DeviceIndex index);
[[nodiscard]] c10::Stream current_c10_stream(c10::DeviceIndex index);

// Device memory for privateuseone:index from keel's stream-ordered cache,
// on the current stream (a zero-byte request gets a null pointer).
[[nodiscard]] c10::DataPtr allocate_device(c10::DeviceIndex index, std::size_t bytes);
// The allocator registered for privateuseone (allocates on the current device).
[[nodiscard]] c10::Allocator* device_allocator();

// Page-locked host memory of privateuseone:index's keel device, for CPU
// tensors that copies read or write without staging.
[[nodiscard]] c10::DataPtr allocate_pinned(c10::DeviceIndex index, std::size_t bytes);
// The pinned buffer behind a CPU DataPtr from allocate_pinned, else null.
[[nodiscard]] std::shared_ptr<keel::PinnedBuffer> pinned_buffer_of(const c10::DataPtr& data);

// Declares that the work enqueued on `stream` so far uses `data` (keel's
// record_stream); a no-op for memory that is not from device_allocator().
void record_data_on_stream(const c10::DataPtr& data, const c10::Stream& stream);

}  // namespace keel_torch
