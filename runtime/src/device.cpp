#include <keel/device.hpp>

#include "access.hpp"
#include "plugin.hpp"

namespace keel {

const std::string& Device::name() const noexcept { return slot_->name; }
const std::string& Device::type() const noexcept { return slot_->plugin->type(); }
std::uint32_t Device::index() const noexcept { return slot_->index; }
const DeviceProperties& Device::properties() const noexcept { return slot_->properties; }

keel_device detail::Access::handle(const Device& device) noexcept { return device.slot_->handle; }

Result<NativeHandle> Device::native_handle() const {
    keel_native_handle handle{};
    handle.struct_size = sizeof handle;
    KEEL_TRY(slot_->api().device_native_handle(slot_->handle, &handle));
    return NativeHandle{handle.kind, handle.value};
}

Result<PageableStagingStats> Device::pageable_staging_stats() const {
    keel_pageable_staging_stats abi{};
    abi.struct_size = sizeof abi;
    KEEL_TRY(slot_->api().device_pageable_staging_stats(slot_->handle, &abi));
    PageableStagingStats s;
    s.copies = abi.copies;
    s.short_copies = abi.short_copies;
    s.refused_copies = abi.refused_copies;
    s.pinned_allocations = abi.pinned_allocations;
    s.pinned_frees = abi.pinned_frees;
    s.block_reuses = abi.block_reuses;
    s.held_bytes = abi.held_bytes;
    s.lent_bytes = abi.lent_bytes;
    s.capacity_bytes = abi.capacity_bytes;
    s.host_copy_threads = abi.host_copy_threads;
    return s;
}

Result<MemoryInfo> Device::memory_info() const {
    MemoryInfo info;
    KEEL_TRY(slot_->api().device_memory_info(slot_->handle, &info.free_bytes, &info.total_bytes));
    return info;
}

}  // namespace keel
