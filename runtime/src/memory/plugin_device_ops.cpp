#include <keel/memory/plugin_device_ops.hpp>

#include <cstring>
#include <string>

namespace keel::memory {

namespace {

// Takes ownership of a C error and turns it into an Error (null: success).
Result<void> take(keel_error* error) {
    if (error == nullptr) return ok();
    Error out(error->code, error->message != nullptr ? error->message : "(no message)");
    keel_error_destroy(error);
    return out;
}

template <class Entry>
bool present(const keel_plugin_api* api, std::size_t entry_end, Entry entry) {
    return api->struct_size >= entry_end && entry != nullptr;
}

#define KEEL_MEMORY_HAS(api, entry) present((api), KEEL_API_ENTRY_END(entry), (api)->entry)

Error missing(const char* entry) {
    return Error(KEEL_STATUS_UNIMPLEMENTED,
                 std::string("[memory] the plugin has no ") + entry + " entry");
}

}  // namespace

Result<std::unique_ptr<PluginDeviceOps>> PluginDeviceOps::create(const keel_plugin_api* api,
                                                                 keel_device device) {
    if (api == nullptr || device == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[memory] null plugin table or device");
    auto ops = std::make_unique<PluginDeviceOps>(CreateTag{}, api, device);
    keel_device_properties props{};
    props.struct_size = sizeof props;
    KEEL_TRY(take(api->device_properties(device, &props)));
    if (props.alloc_alignment != 0) ops->alignment_ = props.alloc_alignment;
    ops->total_memory_ = props.total_memory;
    ops->has_host_alloc_ = KEEL_MEMORY_HAS(api, host_alloc) && KEEL_MEMORY_HAS(api, host_free);
    ops->has_inline_ = KEEL_MEMORY_HAS(api, memcpy_h2d_inline);
    return ops;
}

PluginDeviceOps::~PluginDeviceOps() = default;

Result<keel_device_addr> PluginDeviceOps::device_alloc(std::uint64_t size) {
    keel_device_addr addr = 0;
    KEEL_TRY(take(api_->device_alloc(device_, size, &addr)));
    return addr;
}

Result<void> PluginDeviceOps::device_free(keel_device_addr addr) {
    return take(api_->device_free(device_, addr));
}

Result<void*> PluginDeviceOps::host_alloc(std::uint64_t size) {
    if (has_host_alloc_) {
        void* ptr = nullptr;
        KEEL_TRY(take(api_->host_alloc(device_, size, &ptr)));
        return ptr;
    }
    auto block = std::make_unique<std::byte[]>(size);
    void* ptr = block.get();
    std::lock_guard lock(host_mu_);
    host_blocks_.emplace(ptr, std::move(block));
    return ptr;
}

Result<void> PluginDeviceOps::host_free(void* ptr) {
    if (has_host_alloc_) return take(api_->host_free(device_, ptr));
    std::lock_guard lock(host_mu_);
    if (host_blocks_.erase(ptr) == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[memory host_free] unknown pointer");
    return ok();
}

Result<keel_event> PluginDeviceOps::event_create() {
    keel_event event = nullptr;
    KEEL_TRY(take(api_->event_create(device_, KEEL_EVENT_DEFAULT, &event)));
    return event;
}

Result<void> PluginDeviceOps::event_destroy(keel_event event) { return take(api_->event_destroy(event)); }

Result<void> PluginDeviceOps::event_record(keel_event event, keel_stream stream) {
    return take(api_->event_record(event, stream));
}

Result<bool> PluginDeviceOps::event_query(keel_event event) {
    std::int32_t done = 0;
    KEEL_TRY(take(api_->event_query(event, &done)));
    return done != 0;
}

Result<void> PluginDeviceOps::event_synchronize(keel_event event) {
    return take(api_->event_synchronize(event));
}

Result<void> PluginDeviceOps::stream_wait_event(keel_stream stream, keel_event event) {
    return take(api_->stream_wait_event(stream, event));
}

Result<void> PluginDeviceOps::stream_synchronize(keel_stream stream) {
    return take(api_->stream_synchronize(stream));
}

Result<void> PluginDeviceOps::memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src,
                                         std::uint64_t size) {
    return take(api_->memcpy_h2d(stream, dst, src, size));
}

Result<void> PluginDeviceOps::memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src,
                                         std::uint64_t size) {
    return take(api_->memcpy_d2h(stream, dst, src, size));
}

Result<void> PluginDeviceOps::memcpy_h2d_inline(keel_stream stream, keel_device_addr dst,
                                                const void* src, std::uint64_t size) {
    if (!has_inline_) return missing("memcpy_h2d_inline");
    return take(api_->memcpy_h2d_inline(stream, dst, src, size));
}

}  // namespace keel::memory
