// What the kernels need of keel's side of a privateuseone tensor: its device,
// the stream a c10::Stream names, the keel buffer behind a DataPtr, and the
// pinned host memory that copies may use without staging. c10 headers only.
#pragma once

#include "devices.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Storage.h>
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

// Whether the bytes of a keel storage are known: false when it was
// allocated before its device's last recover() from a fault (work of the
// failed stream, skipped, may have been meant to write it).
[[nodiscard]] bool data_known(const c10::Storage& storage);
// Throws c10::Error, saying why and what to do, unless data_known(storage).
// Every path that reads keel memory, or writes part of it, checks this.
void check_data_known(const c10::Storage& storage);
// A write of every byte of a storage: its data counts as known from the
// constructor on (so the write may use it), and goes back to what it was
// unless commit() is called once the write is enqueued (a write that could
// not be enqueued leaves the old bytes). Neither copyable nor movable.
class WholeWrite {
public:
    explicit WholeWrite(const c10::Storage& storage);
    WholeWrite(const WholeWrite&) = delete;
    WholeWrite& operator=(const WholeWrite&) = delete;
    ~WholeWrite();
    void commit() noexcept { committed_ = true; }

private:
    void* allocation_ = nullptr;
    std::uint64_t before_ = 0;
    bool committed_ = false;
};
// A storage's new memory (resize_ grows it) inherits the old one's state.
void inherit_data_state(const c10::DataPtr& fresh, const c10::DataPtr& old);

}  // namespace keel_torch
