#include "usm.hpp"

#include "plugin_state.hpp"
#include "ze_error.hpp"

#include <keel/plugin/copy_args.hpp>


namespace keel::level_zero {

using plugin::hex_addr;

namespace {

// What the driver knows about one address of the device's context.
struct Allocation {
    ze_memory_type_t type = ZE_MEMORY_TYPE_UNKNOWN;
    ze_device_handle_t device = nullptr;  // null for host allocations
    std::uintptr_t base = 0;
    std::size_t size = 0;
};

Result<Allocation> look_up(const Device& device, const void* ptr) {
    Allocation a;
    auto props = ze_struct<ze_memory_allocation_properties_t>(ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES);
    KEEL_TRY(KEEL_ZE(zeMemGetAllocProperties, device.context(), ptr, &props, &a.device).check());
    a.type = props.type;
    if (a.type == ZE_MEMORY_TYPE_UNKNOWN) return a;
    void* base = nullptr;
    KEEL_TRY(KEEL_ZE(zeMemGetAddressRange, device.context(), ptr, &base, &a.size).check());
    a.base = reinterpret_cast<std::uintptr_t>(base);
    return a;
}

std::string owner_name(ze_device_handle_t handle) {
    const Device* owner = state().find(handle);
    return owner ? owner->label() : "another Level Zero device";
}

Result<Allocation> device_allocation_holding(const Device& device, keel_device_addr addr, const char* role) {
    // Said plainly: the driver would answer "null pointer" about its own call.
    if (addr == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " is the null device address (0)");
    KEEL_TRY_ASSIGN(Allocation a, look_up(device, device_pointer(addr)));
    if (a.type == ZE_MEMORY_TYPE_DEVICE && a.device == device.handle()) return a;
    std::string what = std::string(role) + " " + hex_addr(addr) + " is not a device allocation of " + device.label();
    if (a.type == ZE_MEMORY_TYPE_DEVICE) what += ": it is memory of " + owner_name(a.device);
    return Error(KEEL_STATUS_INVALID_ARGUMENT, std::move(what));
}

}  // namespace

Result<void> check_device_range(const Device& device, keel_device_addr addr, std::uint64_t size, const char* role) {
    KEEL_TRY_ASSIGN(const Allocation a, device_allocation_holding(device, addr, role));
    const std::uint64_t offset = addr - a.base;
    if (size <= a.size - offset) return ok();
    return Error(KEEL_STATUS_OUT_OF_RANGE, std::string(role) + " " + hex_addr(addr) + " + " + std::to_string(size) +
                                               " bytes runs past the end of its allocation (" + hex_addr(a.base) +
                                               ", " + std::to_string(a.size) + " bytes)");
}

Result<void> check_device_allocation(const Device& device, keel_device_addr addr) {
    KEEL_TRY_ASSIGN(const Allocation a, device_allocation_holding(device, addr, "address"));
    if (a.base == addr) return ok();
    return Error(KEEL_STATUS_INVALID_ARGUMENT, hex_addr(addr) + " is inside the allocation at " + hex_addr(a.base) +
                                                   ", not its start");
}

Result<void> check_host_allocation(const Device& device, const void* ptr) {
    KEEL_TRY_ASSIGN(const Allocation a, look_up(device, ptr));
    const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
    if (a.type == ZE_MEMORY_TYPE_HOST && a.base == addr) return ok();
    return Error(KEEL_STATUS_INVALID_ARGUMENT,
                 hex_addr(addr) + " is not the start of pinned host memory from host_alloc of " + device.label());
}

Result<HostAccess> host_access(const Device& device, const void* ptr, std::uint64_t size, const char* role) {
    KEEL_TRY_ASSIGN(const Allocation a, look_up(device, ptr));
    if (a.type == ZE_MEMORY_TYPE_DEVICE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " " +
                                                       hex_addr(reinterpret_cast<std::uintptr_t>(ptr)) +
                                                       " is device memory, not host memory");
    if (a.type != ZE_MEMORY_TYPE_HOST && a.type != ZE_MEMORY_TYPE_SHARED) return HostAccess::staged;
    const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(ptr) - a.base;
    return size <= a.size - offset ? HostAccess::direct : HostAccess::staged;
}

}  // namespace keel::level_zero
