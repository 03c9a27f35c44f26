// A keel stream on Level Zero: one immediate command list, made in order by
// the plugin.
//
// Why immediate command lists: keel submits operation by operation and may
// synchronise at any point; an immediate list submits each append at once,
// with no close/execute/fence round trip and no batching decision, which is
// what Intel recommends for this usage (SYCL and PyTorch's XPU backend use
// them). Why ordered by events: the Level Zero API these headers speak
// (1.4) has no in-order command list flag, and commands of one list may run
// concurrently unless events or barriers order them. So every operation
// signals a slot event when it completes, and the next one waits for it
// (the chain). A slot known complete is not waited for, so a stream that
// drains between operations adds no waits.
//
// The chain also tracks completion: an operation is "in flight" until its
// slot is seen signalled; then whatever it kept alive (staging buffers, the
// slots it waited for) is released. stream_query is "nothing in flight",
// stream_synchronize waits for the last slot on the host.
#pragma once

#include "device.hpp"
#include "event_slots.hpp"
#include "host_worker.hpp"
#include "slot_wait.hpp"
#include "stream_health.hpp"
#include "ze_error.hpp"

#include <keel/result.hpp>

#include <level_zero/ze_api.h>

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace keel::level_zero {

// Objects an operation keeps alive until it completed (staging buffers).
using Keep = std::vector<std::shared_ptr<const void>>;

// One kernel argument as zeKernelSetArgumentValue takes it (copied then).
struct KernelArgValue {
    std::size_t size;
    const void* value;
};

// A point of a stream, as an event records it: the last operation in
// flight (null: everything enqueued so far completed), and how many
// operations came before it, to judge the stream's sticky error by.
struct StreamPoint {
    SlotRef slot;
    std::shared_ptr<const StreamHealth> health;
    std::uint64_t ops = 0;
};

// A launch of one of the plugin's 1-D grid-stride kernels.
struct KernelLaunch {
    const char* kernel;         // the entry point's name in `module`
    ze_module_handle_t module;
    std::uint64_t items;        // work-items wanted; fewer may run (each loops)
    std::span<const KernelArgValue> args;
};

// Shared by the threads that enqueue on it (keel streams may be fed from
// several threads): every member function is thread-safe. Appends are
// serialised by a mutex, because a Level Zero command list must not be used
// from two threads at once; the order in which enqueue calls return is the
// order of execution.
class Stream {
    struct Key {
        explicit Key() = default;
    };

public:
    [[nodiscard]] static Result<std::unique_ptr<Stream>> create(Device& device);
    Stream(Key, Device& device, ze_command_list_handle_t list) noexcept : device_(device), list_(list) {}
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&&) = delete;
    Stream& operator=(Stream&&) = delete;
    ~Stream();  // close() if it was not called

    [[nodiscard]] Device& device() const noexcept { return device_; }

    // The immediate command list (null once closed), for a framework's own
    // appends. Commands it appends are not chained into keel's event order.
    [[nodiscard]] ze_command_list_handle_t native_list() {
        std::lock_guard lock(mutex_);
        return list_;
    }

    // Appends one command: append(list, signal, wait_count, waits) makes the
    // Level Zero call on `list`, signalling `signal.event` when the command
    // completes and waiting for `waits`; it returns KEEL_ZE(...). The command also waits
    // for `also_wait`, and `keep` lives until it completed. Returns the
    // command's slot. Nothing is enqueued when it fails.
    template <class Append>
    Result<SlotRef> enqueue(Append&& append, std::initializer_list<SlotRef> also_wait = {}, Keep keep = {}) {
        std::lock_guard lock(mutex_);
        KEEL_TRY_ASSIGN(PendingOp op, begin_locked(also_wait, device_.slots()));
        const ZeCall call = append(list_, *op.signal, static_cast<uint32_t>(op.waits.size()), op.waits.data());
        return commit_locked(std::move(op), call, std::move(keep));
    }

    // Runs `task` on the stream's host worker when the stream gets there;
    // later work waits for it. `keep` lives until it ran.
    [[nodiscard]] Result<void> enqueue_host(HostWorker::Task task, Keep keep = {});

    // Launches a kernel (a kernel object per stream and name, so that
    // argument setting never races with another stream's).
    [[nodiscard]] Result<void> launch(const KernelLaunch& launch);

    // Appends a barrier behind everything enqueued so far whose slot has
    // kernel timestamps: the device's time when the stream got there, for
    // timing events. Returns its point.
    [[nodiscard]] Result<StreamPoint> mark_time();

    // Its sticky error, for work that outlives a call (host tasks).
    [[nodiscard]] std::shared_ptr<const StreamHealth> health() const noexcept { return health_; }

    // The point an event recorded now captures.
    [[nodiscard]] Result<StreamPoint> point();

    // Later work waits for `point` (an event's, maybe of another stream):
    // a barrier when it has not passed yet. A failure of that stream which
    // taints the point becomes this stream's from here on.
    [[nodiscard]] Result<void> wait(const StreamPoint& point);

    [[nodiscard]] Result<void> synchronize();
    [[nodiscard]] Result<bool> query();

    // Both return only once the work enqueued before them is over (or the
    // device is lost), also on a failed stream, whose error they then return.
    // Waits for everything enqueued (host tasks included), then destroys the
    // command list and kernel objects. Returns the sticky error, if any.
    // Idempotent.
    [[nodiscard]] Result<void> close();

private:
    struct PendingOp {
        SlotRef signal;
        std::vector<SlotRef> waited;          // kept until the op completed
        std::vector<ze_event_handle_t> waits; // their events
    };
    struct InFlight {
        SlotRef done;
        std::uint64_t op;
        std::vector<SlotRef> waited;
        Keep keep;
    };

    // Checks health, drops completed ops, takes a slot from `signals`, and
    // builds the wait list (the chain's tail, if pending, and `also_wait`).
    // Caller holds mutex_.
    [[nodiscard]] Result<PendingOp> begin_locked(std::initializer_list<SlotRef> also_wait, EventSlotPool& signals);
    // Records a successful append as the new tail; on failure returns the
    // error (a device-fatal one also makes the stream sticky). Caller holds mutex_.
    [[nodiscard]] Result<SlotRef> commit_locked(PendingOp op, const ZeCall& call, Keep keep);
    // Pops ops whose slot is signalled, in order. A device-fatal answer
    // fails the stream; another failed query is only a query that failed.
    // Caller holds mutex_.
    void reap_locked();
    // Waits for the slot of operation `op` (the tail at some point), taking
    // a device-fatal answer as the stream's failure from `op` on.
    [[nodiscard]] SlotWait wait_for(const SlotRef& slot, std::uint64_t op);
    // The stream's kernel object for `name`, created on first use. Caller holds mutex_.
    [[nodiscard]] Result<ze_kernel_handle_t> kernel_locked(const char* name, ze_module_handle_t module);

    Device& device_;
    const std::shared_ptr<StreamHealth> health_ = std::make_shared<StreamHealth>();
    std::mutex mutex_;
    ze_command_list_handle_t list_;                    // guarded by mutex_; null once closed
    SlotRef tail_;                                     // guarded by mutex_
    std::uint64_t ops_ = 0;                            // guarded by mutex_; operations numbered so far
    std::deque<InFlight> in_flight_;                   // guarded by mutex_
    std::vector<std::pair<std::string_view, ze_kernel_handle_t>> kernels_;  // guarded by mutex_
    std::unique_ptr<HostWorker> worker_;               // guarded by mutex_; created on first host task
};

}  // namespace keel::level_zero
