// The host functions that can fail a stream (Stream::enqueue_host_func with a
// callable returning Result<void>, on a plugin with
// stream_enqueue_fallible_host_func) that the stream has not finished yet,
// and the first failure one of them returned or saw. A plugin whose device
// cannot skip work already submitted behind such a host function (keel.h
// [host-func.fallible]) runs that work over unspecified data: an extension
// handing the plugin work that others receive (a collective) waits for them
// first (settle_fallible_host_funcs, <keel/plugin_table.hpp>).
#pragma once

#include <keel/host_func.hpp>
#include <keel/result.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace keel::detail {

// Threads: Send and Sync (host functions finish on plugin threads while an
// enqueuing thread waits).
class PendingFallible {
public:
    // The failure is noted before the count drops: a waiter that sees none
    // pending sees every failure of those that finished.
    void finished(std::optional<Error> failure) noexcept {
        {
            std::lock_guard lock(mutex_);
            if (failure && !failure_) failure_ = std::move(failure);
            --pending_;
        }
        cv_.notify_all();
    }
    void added() noexcept {
        std::lock_guard lock(mutex_);
        ++pending_;
    }
    // True once none is pending or one failed (`failure` then says what);
    // false when some still were after `timeout`.
    [[nodiscard]] bool settled(std::chrono::milliseconds timeout, std::optional<Error>& failure) {
        std::unique_lock lock(mutex_);
        const bool none = cv_.wait_for(lock, timeout, [&] { return pending_ == 0 || failure_.has_value(); });
        failure = failure_;
        return none;
    }
    [[nodiscard]] std::uint64_t pending() const {
        std::lock_guard lock(mutex_);
        return pending_;
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::uint64_t pending_ = 0;
    std::optional<Error> failure_;
};

// Wraps a fallible host function: counted from construction (before its
// enqueue) until it was destroyed, whether it ran or its enqueue failed.
class CountedHostFunc final : public HostFuncBase {
public:
    CountedHostFunc(std::unique_ptr<HostFuncBase> inner, std::shared_ptr<PendingFallible> pending) noexcept
        : inner_(std::move(inner)), pending_(std::move(pending)) {
        pending_->added();
    }
    CountedHostFunc(const CountedHostFunc&) = delete;
    CountedHostFunc& operator=(const CountedHostFunc&) = delete;
    CountedHostFunc(CountedHostFunc&&) = delete;
    CountedHostFunc& operator=(CountedHostFunc&&) = delete;
    ~CountedHostFunc() override {
        inner_.reset();  // its captures go first: they are part of its run
        pending_->finished(std::move(failure_));
    }

    Result<void> invoke(Status status) override {
        Result<void> r = inner_->invoke(status);
        if (status != KEEL_STATUS_OK)
            failure_ = Error(status, "[Stream] a host function that can fail its stream ran on a stream that had "
                                     "failed before it (" + std::string(status_name(status)) + ")");
        else if (!r.ok())
            failure_ = r.error();
        return r;
    }
    [[nodiscard]] bool fallible() const noexcept override { return inner_->fallible(); }

private:
    std::unique_ptr<HostFuncBase> inner_;
    std::shared_ptr<PendingFallible> pending_;
    std::optional<Error> failure_;
};

}  // namespace keel::detail
