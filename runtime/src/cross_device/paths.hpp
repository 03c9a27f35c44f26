// Which path work between two devices takes (keel/device.hpp: copy_path,
// waits_natively), decided from the ABI alone.
#pragma once

#include "../plugin.hpp"

namespace keel::cross_device {

// Whether memory of `src` copies to memory of `dst` through the plugin's
// memcpy_peer: two devices of one plugin declaring 1.6, both with
// KEEL_DEVICE_CAP_PEER_COPY, that device_can_copy_peer accepts.
[[nodiscard]] bool peer_copy(const detail::DeviceSlot& src, const detail::DeviceSlot& dst) noexcept;

}  // namespace keel::cross_device
