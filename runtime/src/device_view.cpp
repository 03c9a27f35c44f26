#include <keel/buffer.hpp>

#include "view_range.hpp"

namespace keel {

Result<DeviceView> DeviceView::sub(std::uint64_t offset, std::uint64_t size) const {
    if (empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[DeviceView::sub] the view is empty");
    KEEL_TRY(detail::check_range("DeviceView::sub", offset, size, size_));
    DeviceView v = *this;
    v.address_ += offset;
    v.size_ = size;
    return v;
}

}  // namespace keel
