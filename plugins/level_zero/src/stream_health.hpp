// A stream's sticky error: set by the first failure seen while the stream's
// work executes (a lost device, a failed host wait or signal) or by an
// append answering a device-fatal result, then returned by every later call
// on the stream, by every event recorded after the failing point and passed
// to later host functions as their status.
//
// Operations of a stream are numbered in enqueue order. A failure has a
// position, the first operation it taints: work accepted before it is not
// its victim (a failed enqueue leaves earlier work intact), work and events
// after it report it.
#pragma once

#include <keel/result.hpp>

#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>

namespace keel::level_zero {

// Thread-safe: the entries, the stream's host worker and the events
// recorded on it use it (events share it, and may outlive the stream). Its
// mutex is a leaf: nothing else is locked while it is held.
class StreamHealth {
public:
    static constexpr std::uint64_t kEverything = 0;

    // Keeps the first error; later ones are dropped. `from`: the first
    // operation it taints (its earliest position is kept).
    void fail(Error error, std::uint64_t from = kEverything) {
        std::lock_guard lock(mutex_);
        if (!error_) error_.emplace(std::move(error));
        if (from < from_) from_ = from;
    }
    // ok(), or the first error as "the stream failed earlier: <error>".
    [[nodiscard]] Result<void> check() const {
        std::lock_guard lock(mutex_);
        return checked_locked();
    }
    // The same, for a point after the first `ops` operations (an event):
    // ok() if the failure taints none of them.
    [[nodiscard]] Result<void> check_first(std::uint64_t ops) const {
        std::lock_guard lock(mutex_);
        if (error_ && from_ >= ops) return ok();
        return checked_locked();
    }
    // The status operation `op` runs with: OK unless a failure taints it.
    [[nodiscard]] Status status_of(std::uint64_t op) const {
        std::lock_guard lock(mutex_);
        return error_ && from_ <= op ? error_->code() : KEEL_STATUS_OK;
    }
    [[nodiscard]] bool failed() const {
        std::lock_guard lock(mutex_);
        return error_.has_value();
    }

private:
    [[nodiscard]] Result<void> checked_locked() const {
        if (!error_) return ok();
        return Error(error_->code(), "the stream failed earlier: " + error_->message());
    }

    mutable std::mutex mutex_;
    std::optional<Error> error_;
    std::uint64_t from_ = std::numeric_limits<std::uint64_t>::max();
};

}  // namespace keel::level_zero
