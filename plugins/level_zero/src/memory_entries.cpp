// Device memory (zeMemAllocDevice) and pinned host memory (zeMemAllocHost).
#include "device_memory.hpp"
#include "entries.hpp"
#include "handles.hpp"
#include "usm.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/copy_args.hpp>

#include <cstdint>

namespace keel::level_zero {

Result<keel_device_addr> allocate_device_memory(const Device& d, std::uint64_t size, const void* next) {
    if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
    // Decided here: drivers answer sizes beyond maxMemAllocSize with
    // UNSUPPORTED_SIZE, which is not what keel calls it.
    if (size > d.properties().max_allocation)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, std::to_string(size) + " bytes do not fit " + d.label() +
                                                    ", whose largest allocation is " +
                                                    std::to_string(d.properties().max_allocation) + " bytes");
    ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, next, 0, 0};
    void* ptr = nullptr;
    KEEL_TRY(KEEL_ZE(zeMemAllocDevice, d.context(), &desc, size, d.properties().alloc_alignment, d.handle(), &ptr)
                 .check(std::to_string(size) + " bytes on " + d.label()));
    // keel_device_addr is the USM pointer's value.
    return static_cast<keel_device_addr>(reinterpret_cast<std::uintptr_t>(ptr));
}

}  // namespace keel::level_zero

namespace keel::level_zero::api {

keel_error* device_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr) noexcept {
    return plugin::entry("level_zero device_alloc", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_addr, "out_addr"));
        KEEL_TRY_ASSIGN(*out_addr, allocate_device_memory(*d, size, nullptr));
        return ok();
    });
}

keel_error* device_free(keel_device device, keel_device_addr addr) noexcept {
    return plugin::entry("level_zero device_free", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        if (d->ipc().imported(addr))
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         plugin::hex_addr(addr) + " is imported memory: close it with ipc_memory_close");
        KEEL_TRY(check_device_allocation(*d, addr));
        KEEL_TRY(KEEL_ZE(zeMemFree, d->context(), device_pointer(addr)).check());
        d->ipc().forget_exportable(addr);
        return ok();
    });
}

keel_error* host_alloc(keel_device device, uint64_t size, void** out_ptr) noexcept {
    return plugin::entry("level_zero host_alloc", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_ptr, "out_ptr"));
        if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
        // Host memory of the device's context: every device of its driver
        // copies to and from it directly.
        ze_host_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
        void* ptr = nullptr;
        KEEL_TRY(KEEL_ZE(zeMemAllocHost, d->context(), &desc, size, 0, &ptr)
                     .check(std::to_string(size) + " pinned bytes"));
        *out_ptr = ptr;
        return ok();
    });
}

keel_error* host_free(keel_device device, void* ptr) noexcept {
    return plugin::entry("level_zero host_free", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(ptr, "ptr"));
        KEEL_TRY(check_host_allocation(*d, ptr));
        return KEEL_ZE(zeMemFree, d->context(), ptr).check();
    });
}

}  // namespace keel::level_zero::api
