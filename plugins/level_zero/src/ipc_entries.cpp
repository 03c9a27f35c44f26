// ipc_memory_* (keel.h 1.6) over zeMemGetIpcHandle / zeMemOpenIpcHandle /
// zeMemCloseIpcHandle. On Linux a Level Zero IPC handle carries a file
// descriptor (the allocation's dma-buf) in the first four bytes of its
// opaque data, valid only in the exporting process: the exporter hands a
// duplicate of it to the caller in keel_ipc_handle::fd (sent with
// SCM_RIGHTS), and the importer writes its own descriptor number back into
// those bytes before opening the handle. Memory is exportable when it comes
// from ipc_memory_alloc, which asks for dma-buf export
// (ze_external_memory_export_desc_t). Events: ipc_event_entries.cpp.
#include "device_memory.hpp"
#include "entries.hpp"
#include "handles.hpp"
#include "usm.hpp"
#include "ze_error.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/copy_args.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace keel::level_zero::api {

namespace {

using plugin::hex_addr;

static_assert(ZE_MAX_IPC_HANDLE_SIZE <= KEEL_IPC_HANDLE_MAX_BYTES);

// Where the descriptor lives in ze_ipc_mem_handle_t::data on Linux.
std::int32_t descriptor_in(const ze_ipc_mem_handle_t& h) {
    std::int32_t fd = -1;
    std::memcpy(&fd, h.data, sizeof fd);
    return fd;
}
void put_descriptor(ze_ipc_mem_handle_t& h, std::int32_t fd) { std::memcpy(h.data, &fd, sizeof fd); }

Result<void> check_struct(const keel_ipc_handle* h, const char* role) {
    KEEL_TRY(plugin::require_non_null(h, role));
    if (h->struct_size < KEEL_IPC_HANDLE_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + "->struct_size " +
                                                       std::to_string(h->struct_size) +
                                                       " is smaller than keel_ipc_handle of 1.6");
    return ok();
}

// One descriptor shares the allocation only when the driver made it of one
// memory object. A multi-tile GPU opened as one device (implicit scaling,
// ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE) may split an allocation over its
// tiles, one descriptor each (zexMemGetIpcHandles): keel's handle carries
// one, so such memory is refused, never half shared.
Result<void> require_one_memory_object(const Device& d, keel_device_addr addr) {
    const IpcHandlesFunction count_handles = d.driver().ipc_handles();
    if (count_handles == nullptr) return ok();
    uint32_t handles = 0;
    const ze_result_t counted = count_handles(d.context(), device_pointer(addr), &handles, nullptr);
    if (counted != ZE_RESULT_SUCCESS || handles <= 1) return ok();
    return Error(KEEL_STATUS_UNIMPLEMENTED,
                 "the driver made " + hex_addr(addr) + " of " + std::to_string(handles) +
                     " memory objects (zexMemGetIpcHandles; a multi-tile GPU opened as one device): keel shares "
                     "memory of one object only; with ZE_FLAT_DEVICE_HIERARCHY=FLAT each tile is a device of its "
                     "own (" + d.label() + ")");
}

}  // namespace

keel_error* ipc_memory_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr) noexcept {
    return plugin::entry("level_zero ipc_memory_alloc", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_addr, "out_addr"));
        ze_external_memory_export_desc_t exported{ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC, nullptr,
                                                  ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF};
        KEEL_TRY_ASSIGN(const keel_device_addr addr, allocate_device_memory(*d, size, &exported));
        d->ipc().add_exportable(addr, size);
        *out_addr = addr;
        return ok();
    });
}

keel_error* ipc_memory_export(keel_device device, keel_device_addr addr, keel_ipc_handle* out) noexcept {
    return plugin::entry("level_zero ipc_memory_export", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(check_struct(out, "out"));
        if (d->ipc().imported(addr))
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         hex_addr(addr) + " is imported memory: only its exporter exports it");
        const std::optional<std::uint64_t> size = d->ipc().exportable_size(addr);
        if (!size)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, hex_addr(addr) +
                                                           " is not the base of a live allocation of ipc_memory_alloc of " +
                                                           d->label());
        KEEL_TRY(require_one_memory_object(*d, addr));
        ze_ipc_mem_handle_t h{};
        KEEL_TRY(KEEL_ZE(zeMemGetIpcHandle, d->context(), device_pointer(addr), &h).check(d->label()));
        const std::int32_t driver_fd = descriptor_in(h);
        if (driver_fd < 0)
            return Error(KEEL_STATUS_UNIMPLEMENTED,
                         "zeMemGetIpcHandle gave a handle without a file descriptor in its first bytes (" + d->label() +
                             "): this driver's handles are not shared the Linux way");
        // A new descriptor for the caller; the driver's stays the driver's.
        const int fd = ::fcntl(driver_fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return Error(KEEL_STATUS_UNAVAILABLE,
                         "duplicating the handle's descriptor " + std::to_string(driver_fd) + ": " + std::strerror(errno));
        put_descriptor(h, -1);  // its number means nothing in another process
        out->kind = KEEL_IPC_HANDLE_MEMORY;
        out->fd = fd;
        out->size = *size;
        out->byte_count = ZE_MAX_IPC_HANDLE_SIZE;
        out->reserved = 0;
        std::memset(out->bytes, 0, sizeof out->bytes);
        std::memcpy(out->bytes, h.data, ZE_MAX_IPC_HANDLE_SIZE);
        return ok();
    });
}

keel_error* ipc_memory_import(keel_device device, const keel_ipc_handle* handle, keel_device_addr* out_addr) noexcept {
    return plugin::entry("level_zero ipc_memory_import", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_addr, "out_addr"));
        KEEL_TRY(check_struct(handle, "handle"));
        if (handle->kind != KEEL_IPC_HANDLE_MEMORY || handle->byte_count != ZE_MAX_IPC_HANDLE_SIZE)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a Level Zero memory handle (kind " +
                                                           std::to_string(handle->kind) + ", " +
                                                           std::to_string(handle->byte_count) + " bytes)");
        if (handle->fd < 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         "the handle has no file descriptor: a Level Zero handle is opened with its descriptor");
        if (handle->size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle names 0 bytes");
        ze_ipc_mem_handle_t h{};
        std::memcpy(h.data, handle->bytes, ZE_MAX_IPC_HANDLE_SIZE);
        // The driver reads the caller's descriptor during the call and keeps none of it.
        put_descriptor(h, handle->fd);
        void* ptr = nullptr;
        KEEL_TRY(KEEL_ZE(zeMemOpenIpcHandle, d->context(), d->handle(), h, 0, &ptr)
                     .check("a handle of " + std::to_string(handle->size) + " bytes on " + d->label()));
        const auto addr = static_cast<keel_device_addr>(reinterpret_cast<std::uintptr_t>(ptr));
        // The bytes say how large the memory is; the driver knows how large it is.
        void* base = nullptr;
        std::size_t opened = 0;
        Result<void> ranged = KEEL_ZE(zeMemGetAddressRange, d->context(), ptr, &base, &opened).check();
        if (ranged.ok() && (base != ptr || opened < handle->size))
            ranged = Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle names " + std::to_string(handle->size) +
                                                             " bytes, the driver opened " + std::to_string(opened));
        if (!ranged.ok()) {
            (void)ze().zeMemCloseIpcHandle(d->context(), ptr);
            return ranged;
        }
        d->ipc().add_imported(addr);
        *out_addr = addr;
        return ok();
    });
}

keel_error* ipc_memory_close(keel_device device, keel_device_addr addr) noexcept {
    return plugin::entry("level_zero ipc_memory_close", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        if (!d->ipc().remove_imported(addr))
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         hex_addr(addr) + " is not an address from ipc_memory_import of " + d->label());
        return KEEL_ZE(zeMemCloseIpcHandle, d->context(), device_pointer(addr)).check(d->label());
    });
}

}  // namespace keel::level_zero::api
