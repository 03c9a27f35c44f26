#include <keel/memory/device_memory.hpp>
#include <keel/memory/plugin_device_ops.hpp>

#include "log.hpp"
#include "logging.hpp"

#include <mutex>
#include <unordered_map>

namespace keel {

struct DeviceMemory::Impl {
    // Everything buffers, fences and copies point at: the Device (for their
    // views) and the core. Kept together so that it can be leaked as a whole.
    struct State {
        State(const Device& d, const memory::MemoryConfig& config)
            : device(d), core(std::make_unique<memory::PluginDeviceOps>(d), config) {}
        const Device device;
        memory::MemoryCore core;
    };

    Impl(const Device& d, const memory::MemoryConfig& config)
        : state(std::make_unique<State>(d, config)) {}
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    Impl(Impl&&) = delete;
    Impl& operator=(Impl&&) = delete;
    ~Impl() {
        // Deferred releases first (held buffers come back), then check that
        // nothing still points at the state.
        state->core.tracker().shutdown();
        const std::uint64_t buffers = state->core.allocator().stats().allocated_count;
        const std::uint64_t staging = state->core.staging().stats().in_flight_bytes;
        if (buffers == 0 && staging == 0) return;
        // Destroying it now would leave those handles dangling: leak it (and
        // with it the device's plugin, which stays loaded) instead.
        memory::detail::log_warn("[DeviceMemory] the last handle of " + state->device.name() +
                                 "'s memory went while " + std::to_string(buffers) +
                                 " CachedBuffer(s) and " + std::to_string(staging) +
                                 " bytes of pending host copies still use it; its memory is leaked");
        (void)state.release();  // intentional leak, see above
    }

    std::unique_ptr<State> state;
};

namespace {

// The shared instances, by device. Weak: an instance lives while a handle
// does, so none outlives its users into static destruction.
struct Registry {
    std::mutex mu;
    std::unordered_map<const void*, std::weak_ptr<void>> instances;
};
Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

Result<DeviceMemory> DeviceMemory::create(const Device& device, const memory::MemoryConfig& config) {
    // The memory machinery logs through the runtime's logger.
    static const bool routed = (memory::detail::use_logger(detail::logger()), true);
    (void)routed;
    try {
        return DeviceMemory(std::make_shared<Impl>(device, config));
    } catch (const std::bad_alloc&) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[DeviceMemory::create] host allocation failed");
    } catch (const std::system_error& e) {
        return Error(KEEL_STATUS_INTERNAL,
                     std::string("[DeviceMemory::create] cannot start the reclaimer: ") + e.what());
    }
}

Result<DeviceMemory> DeviceMemory::for_device(const Device& device,
                                              const memory::MemoryConfig& config) {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    std::weak_ptr<void>& slot = r.instances[&device.slot()];
    if (auto existing = std::static_pointer_cast<Impl>(slot.lock())) return DeviceMemory(existing);
    KEEL_TRY_ASSIGN(DeviceMemory created, create(device, config));
    slot = created.impl_;
    return created;
}

const Device& DeviceMemory::device() const noexcept { return impl_->state->device; }
memory::MemoryCore& DeviceMemory::core() const noexcept { return impl_->state->core; }

Result<void> DeviceMemory::check_stream(const Stream& stream, const char* where) const {
    if (stream.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string("[") + where + "] the stream is empty");
    if (!(stream.device() == impl_->state->device))
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string("[") + where + "] the stream is on " + stream.device().name() +
                         ", this memory is " + impl_->state->device.name() + "'s");
    return ok();
}

Result<CachedBuffer> DeviceMemory::allocate(const Stream& stream, std::uint64_t size) const {
    KEEL_TRY(check_stream(stream, "DeviceMemory::allocate"));
    KEEL_TRY_ASSIGN(memory::CachedBuffer buffer,
                    memory::CachedBuffer::allocate(impl_->state->core, stream.native(), size));
    return CachedBuffer(&impl_->state->device, std::move(buffer));
}

Result<void> CachedBuffer::record_stream(const Stream& stream) {
    if (stream.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[CachedBuffer::record_stream] the stream is empty");
    if (device_ != nullptr && !(stream.device() == *device_))
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[CachedBuffer::record_stream] the stream is on " + stream.device().name() +
                         ", the buffer on " + device_->name());
    return buffer_.record_stream(stream.native());
}

Result<Fence> DeviceMemory::fence(const Stream& from) const {
    KEEL_TRY(check_stream(from, "DeviceMemory::fence"));
    KEEL_TRY_ASSIGN(memory::Fence fence, memory::Fence::record(impl_->state->core, from.native()));
    return Fence(&impl_->state->device, std::move(fence));
}

Result<void> Fence::enqueue_wait(const Stream& stream) const {
    if (device_ == nullptr) return ok();  // an empty fence orders nothing
    if (stream.empty() || !(stream.device() == *device_))
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Fence::enqueue_wait] the stream is empty or on another device");
    return fence_.enqueue_wait(stream.native());
}

Result<void> DeviceMemory::order_after(const Stream& to, const Stream& from) const {
    KEEL_TRY(check_stream(to, "DeviceMemory::order_after"));
    KEEL_TRY(check_stream(from, "DeviceMemory::order_after"));
    return memory::order_after(impl_->state->core, to.native(), from.native());
}

void DeviceMemory::sweep() const noexcept { impl_->state->core.tracker().sweep_and_settle(); }
void DeviceMemory::synchronize() const noexcept { impl_->state->core.tracker().drain(); }
Result<void> DeviceMemory::release_cached() const { return impl_->state->core.allocator().release_cached(); }
memory::AllocatorStats DeviceMemory::stats() const { return impl_->state->core.allocator().stats(); }
memory::MemorySnapshot DeviceMemory::snapshot() const { return impl_->state->core.allocator().snapshot(); }
memory::StagingStats DeviceMemory::staging_stats() const { return impl_->state->core.staging().stats(); }
memory::TrackerStats DeviceMemory::tracker_stats() const { return impl_->state->core.tracker().stats(); }
void DeviceMemory::reset_peaks() const noexcept { impl_->state->core.allocator().reset_peaks(); }

}  // namespace keel
