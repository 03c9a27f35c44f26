#include <keel/device.hpp>

#include "plugin.hpp"

namespace keel {

const std::string& Device::name() const noexcept { return slot_->name; }
const std::string& Device::type() const noexcept { return slot_->plugin->type(); }
std::uint32_t Device::index() const noexcept { return slot_->index; }
const DeviceProperties& Device::properties() const noexcept { return slot_->properties; }
keel_device Device::native() const noexcept { return slot_->handle; }

Result<NativeHandle> Device::native_handle() const {
    keel_native_handle handle{};
    handle.struct_size = sizeof handle;
    KEEL_TRY(slot_->api().device_native_handle(slot_->handle, &handle));
    return NativeHandle{handle.kind, handle.value};
}

Result<MemoryInfo> Device::memory_info() const {
    MemoryInfo info;
    KEEL_TRY(slot_->api().device_memory_info(slot_->handle, &info.free_bytes, &info.total_bytes));
    return info;
}

}  // namespace keel
