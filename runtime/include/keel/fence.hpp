// Fence: a point in one stream's work that other streams can be ordered
// after on the device (Stream::fence, Stream::wait).
//
// Choosing between a fence and an event:
//   - A Fence orders one stream after a point of another ON THE DEVICE: the
//     host never blocks, nothing can be queried. Use it whenever the
//     consumer of the work is another stream (a producer/consumer pipeline,
//     a reduction on a side stream). Stream::order_after is the one-shot form.
//   - An Event (or the HostCopy/HostFuture of a copy) is host-visible
//     completion: wait on it, query it, time it. Use it only when the host
//     itself needs the result or must know the work is done.
// A host wait where a fence would do stalls the host and drains the
// device's queue; a fence never does either.
//
// Errors of asynchronous work travel with the fence on plugins that keep
// the ABI 1.3 error-propagation rule (keel.h): a stream
// that waits on a fence taken after a failure fails too, with the original
// error, and reports it at its own events and synchronisation.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>

#include <cstdint>
#include <memory>

namespace keel {

namespace memory {
class MemoryCore;
struct StreamPool;
}  // namespace memory

// Its event comes from the memory instance of the stream it was taken on,
// and goes back there once the point is reached (the fence keeps that
// instance alive; dropping the fence never waits).
//
// Move-only. An empty fence (default, moved-from) orders nothing. Send and
// Sync: several streams may wait on one fence at once.
class KEEL_API Fence {
public:
    Fence() noexcept;
    Fence(const Fence&) = delete;
    Fence& operator=(const Fence&) = delete;
    Fence(Fence&& other) noexcept;
    Fence& operator=(Fence&& other) noexcept;
    ~Fence();

    [[nodiscard]] bool empty() const noexcept { return event_ == nullptr; }

private:
    friend struct detail::Access;
    KEEL_LOCAL void reset() noexcept;

    // The memory instance, kept alive by a share counted in one of its pools
    // (as a buffer's block is): no counter that other threads write.
    memory::MemoryCore* memory_ = nullptr;
    memory::StreamPool* share_ = nullptr;
    const detail::DeviceSlot* device_ = nullptr;
    keel_stream from_ = nullptr;
    keel_event event_ = nullptr;
    std::uint64_t seq_ = 0;
    std::uint64_t site_ = 0;  // its point in its stream's work, for the hang doctor
};

}  // namespace keel
