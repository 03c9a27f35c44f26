// Exportable allocations, their handles, and imported memory.
#include <keel/ipc.hpp>

#include "../access.hpp"
#include "../logging.hpp"
#include "../view_range.hpp"
#include "entry_call.hpp"

#include <keel/format.hpp>

#include <utility>

namespace keel::ipc {

using keel::detail::Access;

Result<RawBuffer> allocate_exportable(const Device& device, std::uint64_t size) {
    if (size == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[ipc::allocate_exportable] size must be > 0 (on " + device.name() + ")");
    const auto& slot = Access::slot(device);
    keel_device_addr address = 0;
    KEEL_TRY(detail::call_entry(slot, slot.api().table().ipc_memory_alloc, "ipc_memory_alloc", slot.handle, size,
                                &address));
    if (address == 0)
        return Error(KEEL_STATUS_INTERNAL, "[ipc::allocate_exportable] " + device.name() +
                                               " returned device address 0 for a successful allocation");
    return RawBuffer::adopt(device, address, size);
}

Result<Handle> export_memory(const RawBuffer& buffer) {
    if (buffer.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[ipc::export_memory] the buffer is empty (moved-from or freed)");
    const auto& slot = Access::slot(buffer.device());
    keel_ipc_handle out = Handle().c_handle();
    KEEL_TRY(detail::call_entry(slot, slot.api().table().ipc_memory_export, "ipc_memory_export", slot.handle,
                                buffer.address(), &out));
    Handle h = Handle::adopt(out);
    if (h.kind() != KEEL_IPC_HANDLE_MEMORY)
        return Error(KEEL_STATUS_INTERNAL, "[ipc::export_memory] " + buffer.device().name() +
                                               " made a handle of kind " + std::to_string(h.kind()) +
                                               ", not MEMORY");
    return h;
}

Result<ImportedBuffer> import_memory(const Device& device, const Handle& handle) {
    if (handle.kind() != KEEL_IPC_HANDLE_MEMORY)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[ipc::import_memory] the handle is not of exported memory (kind " +
                                                       std::to_string(handle.kind()) + ")");
    const auto& slot = Access::slot(device);
    keel_device_addr address = 0;
    KEEL_TRY(detail::call_entry(slot, slot.api().table().ipc_memory_import, "ipc_memory_import", slot.handle,
                                &handle.c_handle(), &address));
    if (address == 0)
        return Error(KEEL_STATUS_INTERNAL,
                     "[ipc::import_memory] " + device.name() + " returned device address 0 for a successful import");
    return ImportedBuffer(device, address, handle.size());
}

ImportedBuffer::ImportedBuffer(ImportedBuffer&& other) noexcept
    : device_(other.device_), address_(std::exchange(other.address_, 0)), size_(std::exchange(other.size_, 0)) {}

ImportedBuffer& ImportedBuffer::operator=(ImportedBuffer&& other) noexcept {
    if (this != &other) {
        if (auto r = close(); !r) keel::detail::log_warn(r.error().message());
        device_ = other.device_;
        address_ = std::exchange(other.address_, 0);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

ImportedBuffer::~ImportedBuffer() {
    if (auto r = close(); !r) keel::detail::log_error("[ipc::ImportedBuffer] " + r.error().message());
}

DeviceView ImportedBuffer::view() const noexcept {
    if (empty()) return {};
    return DeviceView(device_, address_, size_);
}

Result<DeviceView> ImportedBuffer::view(std::uint64_t offset, std::uint64_t size) const {
    if (empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[ipc::ImportedBuffer::view] the buffer is closed (or moved-from)");
    KEEL_TRY(keel::detail::check_range("ipc::ImportedBuffer::view", offset, size, size_));
    return DeviceView(device_, address_ + offset, size);
}

Result<void> ImportedBuffer::close() {
    if (empty()) return ok();
    const keel_device_addr address = std::exchange(address_, 0);
    size_ = 0;
    const auto& slot = Access::slot(device_);
    return detail::call_entry(slot, slot.api().table().ipc_memory_close, "ipc_memory_close", slot.handle, address);
}

}  // namespace keel::ipc
