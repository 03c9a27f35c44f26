// The objects behind keel's opaque stream and event handles, and the checked
// conversions between handles and objects. A keel_device is a Device*, a
// keel_stream a Stream*, a keel_event an Event*, a keel_kernel a
// const KernelDef* (see kernel_registry.hpp).
#pragma once

#include "device.hpp"
#include "host_failure.hpp"
#include "kernel_scratch.hpp"

#include <keel/keel.h>
#include <keel/plugin/handles.hpp>
#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <string>

namespace keel::cuda {

// A keel_device_addr of this plugin is the CUDA device pointer itself.
inline void* device_ptr(keel_device_addr addr) noexcept {
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr));
}

// A keel stream: a non-blocking CUDA stream (it never synchronises with the
// legacy default stream) on one device. Owned by the caller through its
// handle; may be used from any thread (CUDA streams are thread-safe).
class Stream {
public:
    Stream(Device& device, cudaStream_t stream) : device_(device), stream_(stream) {}
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&&) = delete;
    Stream& operator=(Stream&&) = delete;
    ~Stream() = default;  // the CUDA stream is destroyed or pooled by stream_destroy

    [[nodiscard]] Device& device() const noexcept { return device_; }
    [[nodiscard]] cudaStream_t cuda() const noexcept { return stream_; }
    // Memory this stream's kernels reuse between launches (released by stream_destroy).
    [[nodiscard]] KernelScratch& scratch() noexcept { return scratch_; }
    // A failing host function's error (host_failure.hpp).
    [[nodiscard]] HostFailure& host_failure() const noexcept { return *failure_; }
    [[nodiscard]] const std::shared_ptr<HostFailure>& host_failure_ptr() const noexcept { return failure_; }

private:
    Device& device_;
    const cudaStream_t stream_;
    KernelScratch scratch_;
    const std::shared_ptr<HostFailure> failure_ = std::make_shared<HostFailure>();
};

// A keel event: a CUDA event created with cudaEventDisableTiming unless
// timing was asked for. `recorded` lets event_elapsed_time refuse an event
// never recorded (a pooled CUDA event may carry an old record). Shared by
// threads through its handle; `recorded` is atomic for that reason.
class Event {
public:
    // Shared with other processes (keel.h 1.6): never pooled.
    enum class Sharing : std::uint8_t { none, exported, imported };

    Event(Device& device, cudaEvent_t event, bool timing, Sharing sharing = Sharing::none)
        : device_(device), event_(event), timing_(timing), sharing_(sharing) {}
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&&) = delete;
    Event& operator=(Event&&) = delete;
    ~Event() = default;  // the CUDA event is destroyed or pooled by event_destroy

    [[nodiscard]] Device& device() const noexcept { return device_; }
    [[nodiscard]] cudaEvent_t cuda() const noexcept { return event_; }
    [[nodiscard]] bool timing() const noexcept { return timing_; }
    [[nodiscard]] Sharing sharing() const noexcept { return sharing_; }
    [[nodiscard]] bool recorded() const noexcept { return recorded_.load(std::memory_order_acquire); }
    void mark_recorded() noexcept { recorded_.store(true, std::memory_order_release); }

    // The stream's host failure and the point of the latest record: a
    // failure before that point is the event's error.
    void capture(std::shared_ptr<const HostFailure> failure, std::uint64_t point) {
        std::lock_guard lock(mutex_);
        failure_ = std::move(failure);
        point_ = point;
    }
    [[nodiscard]] std::pair<std::shared_ptr<const HostFailure>, std::uint64_t> captured() const {
        std::lock_guard lock(mutex_);
        return {failure_, point_};
    }
    // ok(), or the error of a host function that failed before the latest record.
    [[nodiscard]] Result<void> host_failure() const {
        auto [failure, point] = captured();
        return failure ? failure->check_before(point) : ok();
    }

private:
    Device& device_;
    const cudaEvent_t event_;
    const bool timing_;
    const Sharing sharing_;
    std::atomic<bool> recorded_{false};
    mutable std::mutex mutex_;
    std::shared_ptr<const HostFailure> failure_;  // guarded by mutex_
    std::uint64_t point_ = 0;                     // guarded by mutex_
};

// These six one-line conversions have the same shape in every plugin on
// purpose: the logic is plugins/support's handle_of/object_from, written
// once; what each plugin adds is only the names bound to its own Device,
// Stream and Event types, which a shared template could not spell shorter
// than these lines.
[[nodiscard]] inline keel_device to_handle(Device* d) noexcept { return plugin::handle_of<keel_device>(d); }
[[nodiscard]] inline keel_stream to_handle(Stream* s) noexcept { return plugin::handle_of<keel_stream>(s); }
[[nodiscard]] inline keel_event to_handle(Event* e) noexcept { return plugin::handle_of<keel_event>(e); }

// The object behind a handle; INVALID_ARGUMENT naming `role` when it is null.
[[nodiscard]] inline Result<Device*> device_from(keel_device h, const char* role = "device") {
    return plugin::object_from<Device>(h, role);
}
[[nodiscard]] inline Result<Stream*> stream_from(keel_stream h, const char* role = "stream") {
    return plugin::object_from<Stream>(h, role);
}
// The same for an entry that enqueues: a stream a host function failed
// refuses more work with that error.
[[nodiscard]] inline Result<Stream*> enqueue_stream_from(keel_stream h) {
    KEEL_TRY_ASSIGN(Stream * s, stream_from(h));
    KEEL_TRY(s->host_failure().check());
    return s;
}
[[nodiscard]] inline Result<Event*> event_from(keel_event h, const char* role = "event") {
    return plugin::object_from<Event>(h, role);
}

}  // namespace keel::cuda
