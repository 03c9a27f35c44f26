// Checks of addresses against what Level Zero itself knows about them
// (zeMemGetAllocProperties, zeMemGetAddressRange), so that a wrong address
// is an error at the call instead of a page fault on the GPU, which loses
// the device. The driver keeps the allocation table; the plugin keeps none.
#pragma once

#include "device.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <string>

namespace keel::level_zero {

// Ok when [addr, addr + size) lies inside one device allocation of `device`.
// INVALID_ARGUMENT when `addr` is in none of its allocations (or in one of
// another device: the message names it), OUT_OF_RANGE when the range runs
// past the end of the allocation. `role` names the operand ("destination").
[[nodiscard]] Result<void> check_device_range(const Device& device, keel_device_addr addr, std::uint64_t size,
                                              const char* role);

// Ok when `addr` is the start of a device allocation of `device` (device_free).
[[nodiscard]] Result<void> check_device_allocation(const Device& device, keel_device_addr addr);
// Ok when `ptr` is the start of host memory from zeMemAllocHost in the
// device's context (host_free).
[[nodiscard]] Result<void> check_host_allocation(const Device& device, const void* ptr);

// How a copy may reach host memory: directly (it lies inside one host or
// shared allocation of the device's context) or through a staging buffer.
enum class HostAccess { direct, staged };
// INVALID_ARGUMENT when the "host" range is device memory.
[[nodiscard]] Result<HostAccess> host_access(const Device& device, const void* ptr, std::uint64_t size,
                                             const char* role);

// The USM pointer a keel_device_addr is the value of.
[[nodiscard]] inline void* device_pointer(keel_device_addr addr) noexcept {
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr));
}

}  // namespace keel::level_zero
