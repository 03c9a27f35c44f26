// Fences: device-side ordering between streams.
//
// Choosing between a fence and an event:
//   - A Fence orders one stream after a point of another ON THE DEVICE: the
//     host never blocks, nothing can be queried. Use it whenever the
//     consumer of the work is another stream (a producer/consumer pipeline,
//     a reduction on a side stream).
//   - An event (keel::Event, or the HostCopy/HostFuture of a copy) is
//     host-visible completion: wait on it, query it, time it. Use it only
//     when the host itself needs the result or must know the work is done.
// A host wait where a fence would do stalls the host and drains the
// device's queue; a fence never does either.
//
// Errors of asynchronous work are not reported by a fence: they surface at
// the event or synchronisation point that observes them (the ABI's sticky
// stream errors).
#pragma once

#include <keel/memory/memory_core.hpp>

#include <cstdint>
#include <utility>

namespace keel::memory {

// A point in a stream's work that other streams can be ordered after.
// Move-only; Send and Sync for enqueue_wait (it only reads).
class Fence {
public:
    Fence() = default;  // orders nothing
    Fence(const Fence&) = delete;
    Fence& operator=(const Fence&) = delete;
    Fence(Fence&& other) noexcept { swap(other); }
    Fence& operator=(Fence&& other) noexcept {
        if (this != &other) {
            reset();
            swap(other);
        }
        return *this;
    }
    // The event goes back to the pool once the point is reached (no wait).
    ~Fence() { reset(); }

    // Captures the work enqueued on `from` so far.
    [[nodiscard]] static Result<Fence> record(MemoryCore& core, keel_stream from);

    // Work enqueued on `to` after this call runs after the fence's point.
    // The host does not block. May be called for several streams.
    [[nodiscard]] Result<void> enqueue_wait(keel_stream to) const;

    [[nodiscard]] keel_stream stream() const noexcept { return from_; }
    void reset() noexcept;

private:
    void swap(Fence& other) noexcept {
        std::swap(core_, other.core_);
        std::swap(from_, other.from_);
        std::swap(event_, other.event_);
        std::swap(seq_, other.seq_);
    }
    MemoryCore* core_ = nullptr;
    keel_stream from_ = nullptr;
    keel_event event_ = nullptr;
    std::uint64_t seq_ = 0;
};

// One-shot fence: work enqueued on `to` from now on runs after everything
// enqueued on `from` so far. The host does not block.
[[nodiscard]] Result<void> order_after(MemoryCore& core, keel_stream to, keel_stream from);

}  // namespace keel::memory
