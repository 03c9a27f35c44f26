// Every CPU device's memory, found by the device tag an address carries:
// what resolves an address when the device is not known in advance (the
// plugin-wide checker, a copy between two devices).
//
// Thread-safety: immutable after construction; every member may be called
// from any thread (AddressSpace is).
#pragma once

#include "address_space.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace keel::cpu {

class DeviceMemories {
public:
    DeviceMemories() = default;
    explicit DeviceMemories(std::vector<AddressSpace*> spaces) : spaces_(std::move(spaces)) {}

    // The address space of the device `addr` names, or null.
    [[nodiscard]] AddressSpace* owner(keel_device_addr addr) const noexcept {
        const std::optional<std::uint32_t> device = device_of_address(addr);
        return device && *device < spaces_.size() ? spaces_[*device] : nullptr;
    }
    // AddressSpace::translate / locate / find_live on the owning device.
    [[nodiscard]] Result<std::byte*> translate(keel_device_addr addr, std::uint64_t size) const {
        if (AddressSpace* s = owner(addr)) [[likely]] return s->translate(addr, size);
        return not_a_device_address(addr);
    }
    [[nodiscard]] Result<AllocationInfo> locate(keel_device_addr addr, std::uint64_t size) const {
        if (AddressSpace* s = owner(addr)) [[likely]] return s->locate(addr, size);
        return not_a_device_address(addr);
    }
    [[nodiscard]] std::optional<AllocationInfo> find_live(keel_device_addr addr) const noexcept {
        AddressSpace* s = owner(addr);
        return s ? s->find_live(addr) : std::nullopt;
    }

private:
    [[nodiscard]] static Error not_a_device_address(keel_device_addr addr) {
        return Error(KEEL_STATUS_OUT_OF_RANGE, hex(addr) + " is not a device address (a host pointer?)");
    }
    std::vector<AddressSpace*> spaces_;
};

}  // namespace keel::cpu
