#include "memory/plugin_device_ops.hpp"

#include "access.hpp"

#include "plugin.hpp"
#include "plugin_api.hpp"

namespace keel::memory {

namespace {

using detail::api_of;

}  // namespace

PluginDeviceOps::PluginDeviceOps(Device device, const StagingConfig& staging)
    : device_(std::move(device)), handle_(detail::Access::handle(device_)) {
    const DeviceProperties& props = device_.properties();
    if (props.alloc_alignment != 0) alignment_ = props.alloc_alignment;
    total_memory_ = props.total_memory;
    has_host_alloc_ = api_of(device_).has_host_alloc();
    has_inline_ = api_of(device_).has_memcpy_h2d_inline();
    staging_ = PluginStaging::for_device(device_, staging);
}

PluginDeviceOps::~PluginDeviceOps() = default;

Result<keel_device_addr> PluginDeviceOps::device_alloc(std::uint64_t size) {
    keel_device_addr addr = 0;
    KEEL_TRY(api_of(device_).device_alloc(handle_, size, &addr));
    return addr;
}

Result<void> PluginDeviceOps::device_free(keel_device_addr addr) {
    return api_of(device_).device_free(handle_, addr);
}

Result<void*> PluginDeviceOps::host_alloc(std::uint64_t size) {
    if (has_host_alloc_) {
        void* ptr = nullptr;
        KEEL_TRY(api_of(device_).host_alloc(handle_, size, &ptr));
        return ptr;
    }
    auto block = std::make_unique<std::byte[]>(size);
    void* ptr = block.get();
    std::lock_guard lock(host_mu_);
    host_blocks_.emplace(ptr, std::move(block));
    return ptr;
}

Result<void> PluginDeviceOps::host_free(void* ptr) {
    if (has_host_alloc_) return api_of(device_).host_free(handle_, ptr);
    std::lock_guard lock(host_mu_);
    if (host_blocks_.erase(ptr) == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[memory host_free] unknown pointer");
    return ok();
}

Result<keel_event> PluginDeviceOps::event_create() {
    keel_event event = nullptr;
    KEEL_TRY(api_of(device_).event_create(handle_, KEEL_EVENT_DEFAULT, &event));
    return event;
}

Result<void> PluginDeviceOps::event_destroy(keel_event event) {
    return api_of(device_).event_destroy(event);
}

Result<void> PluginDeviceOps::event_record(keel_event event, keel_stream stream) {
    return api_of(device_).event_record(event, stream);
}

Result<bool> PluginDeviceOps::event_query(keel_event event) {
    std::int32_t done = 0;
    KEEL_TRY(api_of(device_).event_query(event, &done));
    return done != 0;
}

Result<void> PluginDeviceOps::event_synchronize(keel_event event) {
    return api_of(device_).event_synchronize(event);
}

Result<void> PluginDeviceOps::stream_wait_event(keel_stream stream, keel_event event) {
    return api_of(device_).stream_wait_event(stream, event);
}

Result<void> PluginDeviceOps::stream_synchronize(keel_stream stream) {
    return api_of(device_).stream_synchronize(stream);
}

Result<bool> PluginDeviceOps::stream_query(keel_stream stream) {
    std::int32_t done = 0;
    KEEL_TRY(api_of(device_).stream_query(stream, &done));
    return done != 0;
}

Result<void> PluginDeviceOps::memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src,
                                         std::uint64_t size) {
    return api_of(device_).memcpy_h2d(stream, dst, src, size);
}

Result<void> PluginDeviceOps::memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src,
                                         std::uint64_t size) {
    return api_of(device_).memcpy_d2h(stream, dst, src, size);
}

Result<void> PluginDeviceOps::pageable_h2d(keel_stream stream, keel_device_addr dst, const void* src,
                                           std::uint64_t size) {
    if (staging_) return staging_->to_device(stream, dst, src, size);
    return memcpy_h2d(stream, dst, src, size);
}

Result<void> PluginDeviceOps::pageable_d2h(keel_stream stream, void* dst, keel_device_addr src,
                                           std::uint64_t size) {
    if (staging_) return staging_->to_host(stream, dst, src, size);
    return memcpy_d2h(stream, dst, src, size);
}

Result<void> PluginDeviceOps::memcpy_h2d_inline(keel_stream stream, keel_device_addr dst,
                                                const void* src, std::uint64_t size) {
    return api_of(device_).memcpy_h2d_inline(stream, dst, src, size);
}

Result<void> PluginDeviceOps::memset_d8(keel_stream stream, keel_device_addr dst, std::uint8_t value,
                                        std::uint64_t size) {
    return api_of(device_).memset_d8(stream, dst, value, size);
}

Result<void> PluginDeviceOps::annotate(BlockEvent what, keel_stream stream, keel_device_addr addr,
                                       std::uint64_t size) {
    const detail::PluginApi& api = api_of(device_);
    if (!api.has_stream_annotate_range()) return ok();
    return api.stream_annotate_range(stream, what == BlockEvent::released ? KEEL_RANGE_RELEASED : KEEL_RANGE_ACQUIRED,
                                     addr, size);
}

}  // namespace keel::memory
