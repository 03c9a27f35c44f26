#include "stream.hpp"

#include "device.hpp"
#include "handle.hpp"
#include "execute.hpp"
#include "kernel_registry.hpp"
#include "checker/checker.hpp"
#include "checker/guarded_pages.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/host_log.hpp>

#include <chrono>
#include <cstring>
#include <optional>
#include <pthread.h>

namespace keel::cpu {

const char* op_name(OpKind kind) noexcept {
    switch (kind) {
        case OpKind::copy_h2d: return "memcpy_h2d";
        case OpKind::copy_d2h: return "memcpy_d2h";
        case OpKind::copy_d2d: return "memcpy_d2d";
        case OpKind::copy_peer: return "memcpy_peer";
        case OpKind::memset_d8: return "memset_d8";
        case OpKind::copy_h2d_inline: return "memcpy_h2d_inline";
        case OpKind::kernel: return "kernel_launch";
        case OpKind::host_func: return "host function";
        case OpKind::timestamp: return "event_record";
        case OpKind::wait: return "stream_wait_event";
        case OpKind::stop: return "stream_destroy";
    }
    return "op";
}

bool lazy_in_checker_mode(const Config& config) noexcept {
    return config.checker_active && config.check.races;
}

Op::Op() = default;
Op::~Op() = default;

void Op::reset() noexcept {
    wait_for = TimelinePoint{};
    timing.reset();
    // `kernel` and `check` keep their storage for the node's next op.
    if (kernel) kernel->clear();
}

void Op::take(Op& from) noexcept {
    kind = from.kind;
    value = from.value;
    size = from.size;
    dst_addr = from.dst_addr;
    src_addr = from.src_addr;
    src_host = from.src_host;
    dst_host = from.dst_host;
    fn = from.fn;
    fallible_fn = from.fallible_fn;
    user_data = from.user_data;
    wait_for = std::move(from.wait_for);
    timing = std::move(from.timing);
    kernel.swap(from.kernel);  // the node's old storage goes back to `from`
    check.swap(from.check);
    if (kind == OpKind::copy_h2d_inline) std::memcpy(inline_bytes.data(), from.inline_bytes.data(), size);
}

Stream::Stream(Device& device, std::uint64_t id)
    : device_(device),
      checker_active_(device.config().checker_active),
      timeline_(std::make_shared<Timeline>(id, device.spin(), lazy_in_checker_mode(device.config()))),
      rng_(device.config().check.seed * 0x9E3779B97F4A7C15ull + id) {
    worker_ = std::thread([this] { run(); });
}

Stream::~Stream() {
    // The stop op is the last one: the worker runs everything before it.
    timeline_->demand(Timeline::kEverything);
    queue_.push([](Op& op) { op.kind = OpKind::stop; });
    wake_worker();
    worker_.join();
    magic_ = 0;
}

Result<Stream*> Stream::from(keel_stream s) {
    auto* stream = reinterpret_cast<Stream*>(s);
    if (stream == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "stream is null");
    if (!looks_like<Stream>(stream, kMagic)) return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a cpu stream handle");
    return stream;
}

Result<void> Stream::check_usable() const {
    if (!timeline_->failed()) [[likely]] return ok();
    const Error& e = timeline_->error();
    return Error(e.code(), "stream " + std::to_string(id()) + " is in an error state: " + e.message());
}

void Stream::throttle(std::uint64_t queued) {
    // Wait (spin, then park) until half the queue drained; queued >= kMaxDepth.
    timeline_->wait_for(queued - kMaxDepth / 2);
}

void Stream::wake_worker() noexcept {
    if (worker_parked_.exchange(0, std::memory_order_seq_cst) != 0) {
        wake_epoch_.fetch_add(1, std::memory_order_seq_cst);
        futex_wake_all(wake_epoch_);
    }
}

// Spin for the window, then park. No lost wake-up: the worker stores
// worker_parked_ = 1 and then re-reads the queue (both seq_cst); a producer
// links its op (seq_cst RMW) and then reads worker_parked_. In the single
// total order of these operations one of the two sees the other: either the
// worker sees the new op and does not sleep, or the producer sees the flag
// and bumps wake_epoch_, which the worker read BEFORE setting the flag, so
// its futex_wait returns at once or is woken.
void Stream::idle_wait() noexcept {
    if (spin_until([&] { return queue_.has_work(); }, device_.spin())) return;
    const std::uint32_t epoch = wake_epoch_.load(std::memory_order_seq_cst);
    worker_parked_.store(1, std::memory_order_seq_cst);
    if (!queue_.has_work()) futex_wait(wake_epoch_, epoch);
    worker_parked_.store(0, std::memory_order_relaxed);
}

void Stream::run() noexcept {
    {
        std::string name = "keel-cpu-s" + std::to_string(id());
        pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    }
    for (;;) {
        Op* op = queue_.pop();
        if (op == nullptr) {
            idle_wait();
            continue;
        }
        // The host wrote the next node: fetch its line while this op runs.
        if (Op* next = op->next.load(std::memory_order_relaxed)) __builtin_prefetch(next);
        // Out of patience: everything queued by now runs, so that no op waits
        // more than about twice the patience (forward progress).
        if (checker_active_) [[unlikely]]
            if (!timeline_->wait_until_demanded(op->position)) timeline_->demand(queue_.enqueued());
        if (op->kind == OpKind::stop) {
            timeline_->advance_to(op->position);
            return;
        }
        process(*op);
    }
}

void Stream::process(Op& op) noexcept {
    bool injected = false;
    // Names this stream if the host function touches freed pinned memory.
    std::optional<guarded_pages::RunningHostFunction> host_function;
    if (checker_active_) [[unlikely]] {
        if (op.kind == OpKind::host_func) host_function.emplace(id(), op.position);
        Checker* checker = device_.checker();
        if (std::uint64_t us = checker->delay_us(rng_))
            std::this_thread::sleep_for(std::chrono::microseconds(us));
        if (!timeline_->failed_at(op.position) && checker->inject_op_failure(rng_)) {
            injected = true;
            timeline_->fail(op.position,
                            Error(KEEL_STATUS_DEVICE_ERROR,
                                  std::string("[cpu ") + op_name(op.kind) + "] stream " + std::to_string(id()) +
                                      ": injected operation failure (KEEL_CPU_FAIL_OP_AFTER/_PROB)"));
        }
        // A host function may tell the host what preceded it (as on CUDA):
        // from its start, that is host knowledge.
        if (op.kind == OpKind::host_func) checker->host_function_starts(op);
    }
    if (!timeline_->failed_at(op.position)) [[likely]] {
        Result<void> r;
        try {
            r = execute(op);
        } catch (const std::exception& ex) {
            r = Error(KEEL_STATUS_INTERNAL, std::string("unexpected exception: ") + ex.what());
        }
        if (!r.ok()) {
            const char* what = op.kind == OpKind::kernel && op.kernel ? op.kernel->name : op_name(op.kind);
            std::string message =
                std::string("[cpu ") + what + "] stream " + std::to_string(id()) + ": " + r.error().message();
            if (checker_active_) [[unlikely]] device_.checker()->on_execution_error(message, injected);
            timeline_->fail(op.position, Error(r.error().code(), std::move(message)));
        }
    } else if (op.kind == OpKind::host_func) {
        // Runs even after a failure, so what it releases is never leaked;
        // the stream keeps its first error.
        if (op.fallible_fn)
            keel_error_destroy(op.fallible_fn(op.user_data, timeline_->error().code()));
        else
            op.fn(op.user_data, timeline_->error().code());
    } else if (op.kind == OpKind::wait) {
        // Kept after a failure too: what is ordered after this point (a
        // hold's release, a free) must still come after the other stream.
        op.wait_for.timeline->wait_for(op.wait_for.position);
    }
    if (checker_active_) [[unlikely]] device_.checker()->on_complete(op);
    // Publish first: whoever waits on this op (another stream's worker, a
    // host thread) should not also wait for its captures to be released
    // (dropping a shared timeline is an atomic on a line other threads use).
    timeline_->advance_to(op.position);
    op.reset();
}

Result<void> Stream::execute(Op& op) {
    switch (op.kind) {
        case OpKind::copy_h2d:
        case OpKind::copy_d2h:
        case OpKind::copy_d2d:
        case OpKind::copy_peer:
        case OpKind::memset_d8:
        case OpKind::copy_h2d_inline: return execute_copy(device_, op);
        case OpKind::kernel: return execute_kernel(device_, op);
        case OpKind::host_func:
            if (op.fallible_fn) return take_c_error(op.fallible_fn(op.user_data, KEEL_STATUS_OK));
            op.fn(op.user_data, KEEL_STATUS_OK);
            return ok();
        case OpKind::timestamp:
            op.timing->steady_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now().time_since_epoch())
                                           .count(),
                                       std::memory_order_release);
            return ok();
        case OpKind::wait:
            // Blocks this worker only: spins, then parks on the other timeline.
            op.wait_for.timeline->wait_for(op.wait_for.position);
            // The error travels with the work that depends on it: what
            // follows would compute over data that was never produced.
            if (const Error* failed = op.wait_for.error())
                return Error(failed->code(), "waited for an event recorded after a failure: " + failed->message());
            return ok();
        case OpKind::stop: return ok();
    }
    return ok();
}

Result<void> Stream::synchronize() {
    if (checker_active_) [[unlikely]] return device_.checker()->synchronize(*this);
    const std::uint64_t target = queue_.enqueued();
    timeline_->wait_for(target);
    return check_usable();
}

Result<bool> Stream::query() {
    if (checker_active_) [[unlikely]] return device_.checker()->query(*this);
    const bool done = timeline_->reached(queue_.enqueued());
    KEEL_TRY(check_usable());
    return done;
}

Result<std::uint64_t> Stream::enqueue_checked(Op& scratch) {
    return device_.checker()->enqueue(*this, scratch);
}

std::uint64_t Stream::push_checked(Op& scratch) {
    const std::uint64_t position = queue_.push([&](Op& op) { op.take(scratch); });
    if (worker_parked_.load(std::memory_order_seq_cst) != 0) [[unlikely]] wake_worker();
    return position;
}

}  // namespace keel::cpu
