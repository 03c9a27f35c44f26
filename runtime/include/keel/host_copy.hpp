// HostCopy and HostFuture: a device -> host copy in flight, staged through
// pinned memory, delivered to its destination when the host waits for it.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace keel {

namespace memory {
class MemoryCore;
struct CopyChunk;  // one staged chunk in flight (internal)
}  // namespace memory

// Returned by Stream::copy(host span, device view). wait() blocks until the
// device wrote the staging and copies it into the destination, chunk by
// chunk; the destination is touched by nothing else, so it only has to stay
// valid until wait() returns. Dropping a HostCopy without waiting cancels
// delivery: the destination is never touched, and the staging goes back to
// the pool once the device is done with it (never blocks). Only when pinned
// memory had run out does the device write the destination itself; then
// dropping waits for it. wait() copies out of staging with the memory
// instance's host copy threads, chunk by chunk as the device completes them.
//
// Keeps its memory instance alive. Move-only; Send, not Sync.
class KEEL_API HostCopy {
public:
    HostCopy() noexcept;  // already complete, copies nothing
    HostCopy(const HostCopy&) = delete;
    HostCopy& operator=(const HostCopy&) = delete;
    HostCopy(HostCopy&& other) noexcept;
    HostCopy& operator=(HostCopy&& other) noexcept;
    ~HostCopy();

    // Blocks until the copy completed and the data is in the destination.
    // Returns the stream's asynchronous error if its work failed. Later calls
    // return ok at once.
    [[nodiscard]] Result<void> wait();
    // Non-blocking: whether wait() would return at once.
    [[nodiscard]] Result<bool> ready();

private:
    friend struct detail::Access;
    KEEL_LOCAL void abandon() noexcept;

    std::shared_ptr<memory::MemoryCore> memory_;
    keel_stream stream_ = nullptr;
    std::byte* dst_ = nullptr;
    std::vector<memory::CopyChunk> chunks_;
};

// A device -> host copy that owns its destination (Stream::copy_to_vector):
// get() waits and hands the vector over.
//
// Move-only (moving keeps the vector's heap storage, which the copy writes
// into); Send, not Sync.
template <class T>
class HostFuture {
public:
    HostFuture(std::vector<T> data, HostCopy copy) noexcept
        : data_(std::move(data)), copy_(std::move(copy)) {}
    HostFuture(const HostFuture&) = delete;
    HostFuture& operator=(const HostFuture&) = delete;
    HostFuture(HostFuture&&) noexcept = default;
    HostFuture& operator=(HostFuture&&) noexcept = default;
    ~HostFuture() = default;

    // Non-blocking: whether get() would return at once.
    [[nodiscard]] Result<bool> ready() { return copy_.ready(); }
    // Waits and hands over the data (or the stream's error).
    [[nodiscard]] Result<std::vector<T>> get() && {
        KEEL_TRY(copy_.wait());
        return std::move(data_);
    }

private:
    std::vector<T> data_;
    HostCopy copy_;
};

}  // namespace keel
