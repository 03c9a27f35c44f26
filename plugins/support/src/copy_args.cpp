#include <keel/plugin/copy_args.hpp>

#include <cstdio>

namespace keel::plugin {

std::string hex_addr(std::uint64_t addr) {
    char text[2 + 16 + 1];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(addr));
    return text;
}

Result<void> check_no_overlap(keel_device_addr dst, keel_device_addr src, std::uint64_t size) {
    if (dst < src + size && src < dst + size)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "source " + hex_addr(src) + " and destination " + hex_addr(dst) +
                                                       " overlap over " + std::to_string(size) + " bytes");
    return ok();
}

Result<void> check_inline_copy_size(std::uint64_t size) {
    if (size <= KEEL_INLINE_COPY_MAX) return ok();
    return Error(KEEL_STATUS_INVALID_ARGUMENT, "size " + std::to_string(size) + " exceeds " +
                                                   std::to_string(KEEL_INLINE_COPY_MAX) + " (KEEL_INLINE_COPY_MAX)");
}

}  // namespace keel::plugin
