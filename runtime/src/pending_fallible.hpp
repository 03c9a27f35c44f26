// The host functions that can fail one stream (Stream::enqueue_host_func with
// a callable returning Result<void>, and the runtime's own on a plugin with
// stream_enqueue_fallible_host_func), numbered in enqueue order, that the
// stream has not finished yet, and the first failure one of them returned or
// saw. A plugin whose device cannot skip work already submitted behind such a
// host function (keel.h [host-func.fallible]) runs that work over unspecified
// data: an extension handing the plugin work that others receive (a
// collective) waits for them first, on its stream and on every stream it
// waits for (fallible_reach.hpp, settle_fallible_host_funcs in
// <keel/plugin_table.hpp>).
#pragma once

#include <keel/host_func.hpp>
#include <keel/result.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace keel::detail {

// Threads: Send and Sync (host functions finish on plugin threads while an
// enqueuing thread waits).
class PendingFallible {
public:
    // Numbers the next one, counted as pending from now on.
    [[nodiscard]] std::uint64_t added() {
        std::lock_guard lock(mutex_);
        const std::uint64_t n = next_++;
        pending_.insert(n);
        return n;
    }
    // The failure is noted before it stops being pending: a waiter that sees
    // none pending sees every failure of those that finished.
    void finished(std::uint64_t n, std::optional<Error> failure) noexcept {
        {
            std::lock_guard lock(mutex_);
            if (failure && (!failure_ || n < failure_at_)) {
                failure_ = std::move(failure);
                failure_at_ = n;
            }
            pending_.erase(n);
        }
        cv_.notify_all();
    }
    // The number the next one will get: a point of the stream's enqueues.
    [[nodiscard]] std::uint64_t next() const {
        std::lock_guard lock(mutex_);
        return next_;
    }
    // True once none numbered below `limit` is pending or one of them failed
    // (`failure` then says what); false when some still were at `deadline`.
    [[nodiscard]] bool settled_below(std::uint64_t limit, std::chrono::steady_clock::time_point deadline,
                                     std::optional<Error>& failure) {
        std::unique_lock lock(mutex_);
        const bool done = cv_.wait_until(lock, deadline, [&] { return quiet_or_failed(limit); });
        if (failure_ && failure_at_ < limit) failure = failure_;
        return done;
    }
    // Nothing numbered below `limit` is pending and none of them failed: a
    // point that can never fail what waits for it.
    [[nodiscard]] bool clean_below(std::uint64_t limit) const {
        std::lock_guard lock(mutex_);
        return (pending_.empty() || *pending_.begin() >= limit) && !(failure_ && failure_at_ < limit);
    }
    // How many numbered below `limit` are still pending.
    [[nodiscard]] std::uint64_t pending_below(std::uint64_t limit) const {
        std::lock_guard lock(mutex_);
        std::uint64_t n = 0;
        for (auto it = pending_.begin(); it != pending_.end() && *it < limit; ++it) ++n;
        return n;
    }

private:
    bool quiet_or_failed(std::uint64_t limit) const {
        return pending_.empty() || *pending_.begin() >= limit || (failure_ && failure_at_ < limit);
    }

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::uint64_t next_ = 0;
    std::set<std::uint64_t> pending_;
    std::optional<Error> failure_;
    std::uint64_t failure_at_ = 0;  // the number of the one that failed
};

// The failure a fallible host function that ran with `status` and returned
// `returned` leaves on its stream's count.
inline std::optional<Error> fallible_outcome(Status status, const Result<void>& returned) {
    if (status != KEEL_STATUS_OK)
        return Error(status, "[Stream] a host function that can fail its stream ran on a stream that had "
                             "failed before it (" + std::string(status_name(status)) + ")");
    if (!returned.ok()) return returned.error();
    return std::nullopt;
}

// Wraps a fallible host function: counted from construction (before its
// enqueue) until it was destroyed, whether it ran or its enqueue failed.
class CountedHostFunc final : public HostFuncBase {
public:
    CountedHostFunc(std::unique_ptr<HostFuncBase> inner, std::shared_ptr<PendingFallible> pending)
        : inner_(std::move(inner)), pending_(std::move(pending)), number_(pending_->added()) {}
    CountedHostFunc(const CountedHostFunc&) = delete;
    CountedHostFunc& operator=(const CountedHostFunc&) = delete;
    CountedHostFunc(CountedHostFunc&&) = delete;
    CountedHostFunc& operator=(CountedHostFunc&&) = delete;
    ~CountedHostFunc() override {
        inner_.reset();  // its captures go first: they are part of its run
        pending_->finished(number_, std::move(failure_));
    }

    Result<void> invoke(Status status) override {
        Result<void> r = inner_->invoke(status);
        failure_ = fallible_outcome(status, r);
        return r;
    }
    [[nodiscard]] bool fallible() const noexcept override { return inner_->fallible(); }

private:
    std::unique_ptr<HostFuncBase> inner_;
    std::shared_ptr<PendingFallible> pending_;
    std::uint64_t number_;
    std::optional<Error> failure_;
};

}  // namespace keel::detail
