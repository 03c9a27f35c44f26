// A stream's sticky error: set by the first failure seen while the stream's
// work executes (a lost device), then returned by every later call on the
// stream and passed to later host functions as their status.
#pragma once

#include <keel/result.hpp>

#include <mutex>
#include <optional>

namespace keel::level_zero {

// Thread-safe: the entries and the stream's host worker both use it. Its
// mutex is a leaf: nothing else is locked while it is held.
class StreamHealth {
public:
    // Keeps the first error; later ones are dropped.
    void fail(Error error) {
        std::lock_guard lock(mutex_);
        if (!error_) error_.emplace(std::move(error));
    }
    // ok(), or the first error as "the stream failed earlier: <error>".
    [[nodiscard]] Result<void> check() const {
        std::lock_guard lock(mutex_);
        if (!error_) return ok();
        return Error(error_->code(), "the stream failed earlier: " + error_->message());
    }
    [[nodiscard]] Status status() const {
        std::lock_guard lock(mutex_);
        return error_ ? error_->code() : KEEL_STATUS_OK;
    }

private:
    mutable std::mutex mutex_;
    std::optional<Error> error_;
};

}  // namespace keel::level_zero
