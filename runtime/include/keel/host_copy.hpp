// HostCopy and HostFuture: a device -> host copy in flight, written by the
// device straight into its destination when the copy executes.
//
// The runtime stages only what it must read before a call returns (a host
// container copied to the device). A device -> host copy hands the caller's
// memory to the plugin, whose memcpy_d2h writes pageable memory when the
// copy executes without making the enqueue wait (the C ABI's promise); a
// plugin whose device cannot reach pageable memory stages it itself, at that
// point. So no pinned memory is held per copy, however large.
#pragma once

#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/host_func.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace keel {

namespace memory {
class MemoryCore;
}  // namespace memory

template <class T>
class HostFuture;

// Returned by Stream::copy(host span, device view). The device writes the
// destination when the copy executes: keep it valid, and do not read or
// write it, until wait() returned. Dropping a HostCopy without waiting
// waits for the copy (like dropping the std::future of std::async): the
// device would otherwise write the destination after the caller freed it.
//
// Keeps its memory instance alive. Move-only; Send, not Sync.
class KEEL_API HostCopy {
public:
    HostCopy() noexcept;  // already complete, copies nothing
    HostCopy(const HostCopy&) = delete;
    HostCopy& operator=(const HostCopy&) = delete;
    HostCopy(HostCopy&& other) noexcept;
    // Waits for the copy this one held, then takes `other`'s.
    HostCopy& operator=(HostCopy&& other) noexcept;
    ~HostCopy();  // waits for the copy (see above)

    // Blocks until the copy ran and the data is in the destination.
    // Returns the stream's asynchronous error if its work failed. Later calls
    // return ok at once.
    [[nodiscard]] Result<void> wait();
    // Non-blocking: whether wait() would return at once.
    [[nodiscard]] Result<bool> ready();

private:
    friend struct detail::Access;
    template <class T>
    friend class HostFuture;

    // wait(), its error logged: what dropping does.
    KEEL_LOCAL void finish() noexcept;
    // Never blocks: `keep_alive` (what owns the destination) is destroyed
    // once the stream has run the copy, by the memory instance's holds.
    void release_after_copy(HostFunc keep_alive) noexcept;

    std::shared_ptr<memory::MemoryCore> memory_;
    keel_stream stream_ = nullptr;
    keel_event event_ = nullptr;  // recorded after the copy; null once waited for
    std::uint64_t seq_ = 0;       // the record's place among the stream's tracked work
    std::uint64_t site_ = 0;      // the copy's point in its stream's work, for the hang doctor
};

// A device -> host copy that owns its destination (Stream::copy_to_vector):
// get() waits and hands the vector over. Dropping it without get() never
// blocks: the vector is freed once the copy ran.
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
    HostFuture& operator=(HostFuture&& other) noexcept {
        if (this != &other) {
            abandon();
            data_ = std::move(other.data_);
            copy_ = std::move(other.copy_);
        }
        return *this;
    }
    ~HostFuture() { abandon(); }

    // Non-blocking: whether get() would return at once.
    [[nodiscard]] Result<bool> ready() { return copy_.ready(); }
    // Waits and hands over the data (or the stream's error).
    [[nodiscard]] Result<std::vector<T>> get() && {
        KEEL_TRY(copy_.wait());
        return std::move(data_);
    }

private:
    // The copy may still be writing into data_: its storage goes with the
    // copy's completion, not with this object. (The vector is moved into the
    // hold before the hold's few bytes are allocated, so running out of
    // memory here cannot fall back to waiting: it terminates, as Rust
    // aborts on allocation failure.)
    void abandon() noexcept {
        if (copy_.event_ == nullptr) return;  // done, or never started: data_ goes as usual
        copy_.release_after_copy(detail::owning(std::move(data_)));
    }

    std::vector<T> data_;
    HostCopy copy_;
};

}  // namespace keel
