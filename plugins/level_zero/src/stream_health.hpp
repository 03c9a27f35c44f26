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
//
// Errors travel along waits (keel.h 1.3): a wait on another stream's point
// is a dependency from the wait's position on. Whoever asks about a
// position after it also asks the other stream about that point, and a
// failure there becomes this stream's, quoted. A dependency is dropped once
// the wait completed (settle): the other stream's answer for a point it
// passed no longer changes. Asking goes only to points recorded earlier in
// time, so it never comes back around.
#pragma once

#include <keel/result.hpp>

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace keel::level_zero {

// Thread-safe: the entries, the stream's host worker and the events
// recorded on it use it (events share it, and may outlive the stream). Its
// mutex is a leaf: nothing else is locked while it is held.
class StreamHealth {
public:
    static constexpr std::uint64_t kEverything = 0;

    // Keeps the first error; later ones are dropped. `from`: the first
    // operation it taints (its earliest position is kept).
    void fail(Error error, std::uint64_t from = kEverything) const {
        std::lock_guard lock(mutex_);
        fail_locked(std::move(error), from);
    }
    // Operations from `from` on come after `upstream`'s point after its
    // first `upstream_ops` operations (a wait on an event of that stream).
    void depend(std::shared_ptr<const StreamHealth> upstream, std::uint64_t upstream_ops, std::uint64_t from) {
        std::lock_guard lock(mutex_);
        links_.push_back(Link{std::move(upstream), upstream_ops, from});
        linked_.store(true, std::memory_order_release);
    }
    // The operations up to `op` completed: their waits passed their points.
    void settle(std::uint64_t op) const {
        resolve(op + 1);
        std::lock_guard lock(mutex_);
        std::erase_if(links_, [op](const Link& l) { return l.from <= op; });
        linked_.store(!links_.empty(), std::memory_order_release);
    }
    // ok(), or the first error as "the stream failed earlier: <error>".
    [[nodiscard]] Result<void> check() const {
        resolve(kAll);
        std::lock_guard lock(mutex_);
        return checked_locked();
    }
    // The same, for a point after the first `ops` operations (an event):
    // ok() if the failure taints none of them.
    [[nodiscard]] Result<void> check_first(std::uint64_t ops) const {
        std::optional<Error> error = error_for(ops);
        if (!error) return ok();
        return Error(error->code(), "the stream failed earlier: " + error->message());
    }
    // The status operation `op` runs with: OK unless a failure taints it.
    [[nodiscard]] Status status_of(std::uint64_t op) const {
        resolve(op + 1);
        std::lock_guard lock(mutex_);
        return error_ && from_ <= op ? error_->code() : KEEL_STATUS_OK;
    }
    // The first error as it was, without "the stream failed earlier"; none
    // while the stream is healthy.
    [[nodiscard]] std::optional<Error> first_error() const {
        resolve(kAll);
        std::lock_guard lock(mutex_);
        return error_;
    }
    [[nodiscard]] bool failed() const {
        resolve(kAll);
        std::lock_guard lock(mutex_);
        return error_.has_value();
    }

private:
    static constexpr std::uint64_t kAll = std::numeric_limits<std::uint64_t>::max();
    struct Link {
        std::shared_ptr<const StreamHealth> upstream;
        std::uint64_t upstream_ops;
        std::uint64_t from;
    };

    void fail_locked(Error error, std::uint64_t from) const {
        if (!error_) error_.emplace(std::move(error));
        if (from < from_) from_ = from;
        failed_.store(true, std::memory_order_release);
    }
    // Takes on the failures of the points that the first `ops` operations
    // wait for. The other streams are asked without this mutex held.
    void resolve(std::uint64_t ops) const {
        std::vector<Link> asked;
        {
            std::lock_guard lock(mutex_);
            if (links_.empty()) return;
            // Only streams that failed, or wait on others themselves, can
            // answer with an error (read without their locks: a failure
            // recorded later is found by a later question).
            for (const Link& l : links_)
                if (l.from < ops && (l.upstream->failed_.load(std::memory_order_acquire) ||
                                     l.upstream->linked_.load(std::memory_order_acquire)))
                    asked.push_back(l);
            if (asked.empty()) return;
        }
        for (const Link& l : asked)
            if (std::optional<Error> there = l.upstream->error_for(l.upstream_ops))
                fail(Error(there->code(), "waited for an event recorded after a failure of another stream: " +
                                              there->message()),
                     l.from);
    }
    // The error that taints one of the first `ops` operations, as it was.
    [[nodiscard]] std::optional<Error> error_for(std::uint64_t ops) const {
        resolve(ops);
        std::lock_guard lock(mutex_);
        if (error_ && from_ < ops) return error_;
        return std::nullopt;
    }
    [[nodiscard]] Result<void> checked_locked() const {
        if (!error_) return ok();
        return Error(error_->code(), "the stream failed earlier: " + error_->message());
    }

    mutable std::mutex mutex_;
    mutable std::optional<Error> error_;
    mutable std::uint64_t from_ = std::numeric_limits<std::uint64_t>::max();
    mutable std::vector<Link> links_;  // waits not yet known to have passed
    mutable std::atomic<bool> failed_{false};  // error_ is set
    mutable std::atomic<bool> linked_{false};  // links_ is not empty
};

}  // namespace keel::level_zero
