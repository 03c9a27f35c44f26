// What a failing host function did to a stream (keel.h 1.4,
// stream_enqueue_fallible_host_func). CUDA has no way for a callback to put
// its stream in error, so the plugin keeps that failure beside the stream and
// reports it where CUDA would report a device error: synchronisation, query,
// destroy, later enqueues, and events recorded after the failing point.
//
// The communicator's NCCL operations fail their streams the same way
// (nccl_comm.hpp): a timeout or an NCCL error is the stream's error at the
// operation's point.
//
// Points number the stream's host functions, event records and NCCL
// operations in enqueue order (taken under the stream's enqueue lock
// together with the CUDA call, so the numbering is the stream's order). A failure at point p taints the
// events recorded at a later point. Work CUDA already queued behind the host
// function still runs (keel.h allows it for a device that cannot skip it).
//
// Thread-safe; shared by the stream, its callbacks and the events recorded
// on it (which may outlive the stream).
#pragma once

#include <keel/result.hpp>

#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>

namespace keel::cuda {

class HostFailure {
public:
    // Serialises a point's numbering with its CUDA call.
    [[nodiscard]] std::unique_lock<std::mutex> enqueue_lock() { return std::unique_lock(enqueue_mutex_); }
    // The next point; call under enqueue_lock().
    [[nodiscard]] std::uint64_t next_point() noexcept { return ++points_; }
    // Whether a host function could ever have failed the stream.
    [[nodiscard]] bool armed() const noexcept {
        std::lock_guard lock(mutex_);
        return armed_;
    }
    void arm() noexcept {
        std::lock_guard lock(mutex_);
        armed_ = true;
    }

    // Keeps the first failure.
    void fail(Error error, std::uint64_t at) {
        std::lock_guard lock(mutex_);
        if (error_) return;
        error_.emplace(std::move(error));
        at_ = at;
    }
    // The failure, as a later call on the stream reports it.
    [[nodiscard]] Result<void> check() const {
        std::lock_guard lock(mutex_);
        if (!error_) return ok();
        return Error(error_->code(), "the stream failed earlier: " + error_->message());
    }
    // The same for an event recorded at `point`: ok() unless the failure came before it.
    [[nodiscard]] Result<void> check_before(std::uint64_t point) const {
        {
            std::lock_guard lock(mutex_);
            if (!error_ || at_ >= point) return ok();
        }
        return check();
    }
    [[nodiscard]] Status status() const {
        std::lock_guard lock(mutex_);
        return error_ ? error_->code() : KEEL_STATUS_OK;
    }

private:
    std::mutex enqueue_mutex_;
    std::uint64_t points_ = 0;  // guarded by enqueue_mutex_
    mutable std::mutex mutex_;  // a leaf
    bool armed_ = false;
    std::optional<Error> error_;
    std::uint64_t at_ = std::numeric_limits<std::uint64_t>::max();
};

}  // namespace keel::cuda
