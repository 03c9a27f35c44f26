#include "memory/transfer.hpp"

#include "access.hpp"
#include "diagnose/host_waits.hpp"
#include "logging.hpp"
#include "memory/event_wait.hpp"
#include "memory/hold.hpp"
#include "memory/staged_upload.hpp"
#include "memory/stream_registry.hpp"
#include "trace/hooks.hpp"

#include <chrono>
#include <thread>

namespace keel {

namespace memory {

namespace {

// Scalars and shapes: the plugin captures up to KEEL_INLINE_COPY_MAX bytes at
// the call, so nothing has to outlive it. true when the copy was enqueued that
// way; false when it does not apply (too large, disabled, or the plugin lacks
// the entry).
Result<bool> try_inline_copy(MemoryCore& core, keel_stream stream, keel_device_addr dst,
                             std::span<const std::byte> src) {
    DeviceOps& ops = core.ops();
    if (src.size() > KEEL_INLINE_COPY_MAX || !core.staging().config().inline_small_copies ||
        !ops.has_inline_copy())
        return false;
    auto r = ops.memcpy_h2d_inline(stream, dst, src.data(), src.size());
    if (r.ok()) {
        core.staging().count_inline_copy();
        return true;
    }
    if (r.error().code() == KEEL_STATUS_UNIMPLEMENTED) return false;  // absent after all
    return std::move(r).error().context("Stream::copy");
}

}  // namespace

Result<void> enqueue_pageable_copy(MemoryCore& core, keel_stream stream,
                                   const std::function<Result<void>()>& enqueue) {
    auto copied = enqueue();
    if (copied.ok() || copied.error().code() != KEEL_STATUS_OUT_OF_MEMORY) return copied;
    core.staging().count_plugin_staging_wait();
    KEEL_TRY(core.ops().stream_synchronize(stream));
    core.tracker().sweep();
    return enqueue();
}

Result<void> copy_to_device(MemoryCore& core, keel_stream stream, keel_device_addr dst,
                            std::span<const std::byte> src) {
    if (src.empty()) return ok();
    if (stream == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] stream is null");
    KEEL_TRY_ASSIGN(const bool inlined, try_inline_copy(core, stream, dst, src));
    if (inlined) return ok();
    return StagedUpload(core, stream).run(dst, src);
}

Result<void> copy_to_device_owned(MemoryCore& core, keel_stream stream, keel_device_addr dst,
                                  std::span<const std::byte> src, HostFunc keep_alive) {
    if (src.empty()) return ok();
    if (stream == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] stream is null");
    KEEL_TRY_ASSIGN(const bool inlined, try_inline_copy(core, stream, dst, src));
    if (inlined) return ok();  // captured: keep_alive may go now
    auto copied = enqueue_pageable_copy(
        core, stream, [&] { return core.ops().pageable_h2d(stream, dst, src.data(), src.size()); });
    if (!copied.ok()) return std::move(copied).error().context("Stream::copy");
    return hold_task(core, stream, std::move(keep_alive));
}

Result<HostCopy> copy_from_device(const std::shared_ptr<MemoryCore>& core_ptr, keel_stream stream,
                                  std::span<std::byte> dst, keel_device_addr src) {
    HostCopy copy;
    if (dst.empty()) return copy;
    if (stream == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] stream is null");
    MemoryCore& core = *core_ptr;
    DeviceOps& ops = core.ops();
    // The event first: failing to get one then enqueues nothing.
    auto event = core.events().acquire();
    if (!event.ok()) return std::move(event).error().context("Stream::copy");
    // Pageable: written when the copy executes (the ABI's promise), staged by
    // the plugin, or by the runtime for a device that takes only pinned memory.
    auto copied = enqueue_pageable_copy(
        core, stream, [&] { return ops.pageable_d2h(stream, dst.data(), src, dst.size()); });
    if (copied.ok()) copied = ops.event_record(*event, stream);
    if (!copied.ok()) {
        core.events().release(*event);
        // The copy may have been enqueued without its event, and the caller
        // may free `dst` as soon as this returns: wait for it.
        (void)ops.stream_synchronize(stream);
        return std::move(copied).error().context("Stream::copy");
    }
    detail::Access::memory(copy) = core_ptr;
    detail::Access::stream(copy) = stream;
    detail::Access::event(copy) = *event;
    detail::Access::seq(copy) = core.tracker().next_seq(stream);
    return copy;
}

}  // namespace memory

HostCopy::HostCopy() noexcept = default;

HostCopy::HostCopy(HostCopy&& other) noexcept
    : memory_(std::move(other.memory_)),
      stream_(std::exchange(other.stream_, nullptr)),
      event_(std::exchange(other.event_, nullptr)),
      seq_(std::exchange(other.seq_, 0)),
      site_(std::exchange(other.site_, 0)) {}

HostCopy& HostCopy::operator=(HostCopy&& other) noexcept {
    if (this != &other) {
        finish();
        memory_ = std::move(other.memory_);
        stream_ = std::exchange(other.stream_, nullptr);
        event_ = std::exchange(other.event_, nullptr);
        seq_ = std::exchange(other.seq_, 0);
        site_ = std::exchange(other.site_, 0);
    }
    return *this;
}

HostCopy::~HostCopy() { finish(); }

Result<bool> HostCopy::ready() {
    if (event_ == nullptr) return true;
    auto done = memory_->ops().event_query(event_);
    if (!done.ok()) return std::move(done).error().context("HostCopy::ready");
    return *done;
}

Result<void> HostCopy::wait() {
    if (event_ == nullptr) {
        memory_.reset();
        return ok();
    }
    Result<void> waited = [&] {
        trace::WaitScope waiting("HostCopy::wait", trace::on() ? memory::stream_generation(stream_) : 0);
        const doctor::HostWait host_wait("HostCopy::wait", site_);
        return memory::wait_for_event(memory_->ops(), event_);
    }();
    memory_->events().release(event_);
    event_ = nullptr;
    stream_ = nullptr;
    memory_.reset();
    if (!waited.ok()) return std::move(waited).error().context("HostCopy::wait");
    return ok();
}

void HostCopy::finish() noexcept {
    auto waited = wait();
    if (!waited.ok()) detail::log_debug("[HostCopy] dropped: " + waited.error().message());
}

void HostCopy::release_after_copy(HostFunc keep_alive) noexcept {
    if (event_ == nullptr) {
        memory_.reset();
        return;  // nothing in flight: keep_alive goes now
    }
    memory::MemoryCore& core = *memory_;
    // Shared with the tracked task only so that a track() that throws (out
    // of memory) cannot destroy it before the copy ran: then we wait here.
    std::shared_ptr<HostFunc> held;
    try {
        held = std::make_shared<HostFunc>(std::move(keep_alive));
        core.tracker().track(stream_, seq_, event_, /*owns_event=*/true, memory::WorkKind::hold,
                             HostFunc([held] { held->run(); }));
    } catch (...) {
        (void)memory::wait_for_event(core.ops(), event_);
        core.events().release(event_);
    }
    event_ = nullptr;
    stream_ = nullptr;
    memory_.reset();
}

}  // namespace keel
