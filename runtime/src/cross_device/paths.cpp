#include "paths.hpp"

#include "../access.hpp"
#include "bridge.hpp"

namespace keel {

namespace cross_device {

bool peer_copy(const detail::DeviceSlot& src, const detail::DeviceSlot& dst) noexcept {
    if (&src == &dst || src.plugin != dst.plugin || !src.api().has_peer_copy()) return false;
    if (!src.properties.has(DeviceCapability::peer_copy) || !dst.properties.has(DeviceCapability::peer_copy))
        return false;
    std::int32_t can = 0;
    return src.api().device_can_copy_peer(src.handle, dst.handle, &can).ok() && can != 0;
}

}  // namespace cross_device

CopyPath copy_path(const Device& src, const Device& dst) {
    const detail::DeviceSlot& a = detail::Access::slot(src);
    const detail::DeviceSlot& b = detail::Access::slot(dst);
    if (&a == &b) return CopyPath::same_device;
    return cross_device::peer_copy(a, b) ? CopyPath::peer : CopyPath::staged;
}

bool waits_natively(const Device& waiter, const Device& source) {
    return cross_device::native_wait(detail::Access::slot(waiter), detail::Access::slot(source));
}

}  // namespace keel
