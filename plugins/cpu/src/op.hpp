// One queued operation of a stream. Nodes are recycled by their stream
// (op_queue.hpp), so an enqueue allocates nothing on the fast path; the
// fields are plain (not a variant) and reset() drops what an op owned.
//
// Sent across threads: filled by the enqueuing host thread under the queue
// lock, then owned by the worker until recycled.
#pragma once

#include "timeline.hpp"

#include <keel/keel.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace keel::cpu {

class KernelWork;
struct CheckedOp;

enum class OpKind : std::uint8_t {
    copy_h2d,
    copy_d2h,
    copy_d2d,
    copy_peer,  // memcpy_peer: the addresses name their devices
    memset_d8,
    copy_h2d_inline,
    kernel,
    host_func,
    timestamp,  // record of a KEEL_EVENT_TIMING event
    wait,       // stream_wait_event
    stop,       // internal: the worker exits after this
};

[[nodiscard]] const char* op_name(OpKind kind) noexcept;

// Where a KEEL_EVENT_TIMING record writes its completion time.
struct TimingSlot {
    std::atomic<std::int64_t> steady_ns{0};
};

struct Op {
    Op();  // out of line: KernelWork and CheckedOp are incomplete here
    Op(const Op&) = delete;
    Op& operator=(const Op&) = delete;
    Op(Op&&) = delete;
    Op& operator=(Op&&) = delete;
    ~Op();

    std::atomic<Op*> next{nullptr};  // queue link (op_queue.hpp)
    Op* pool_next = nullptr;         // free-list link (op_queue.hpp)
    std::uint64_t position = 0;
    OpKind kind = OpKind::stop;
    std::uint8_t value = 0;  // memset byte
    std::uint64_t size = 0;
    keel_device_addr dst_addr = 0;
    keel_device_addr src_addr = 0;
    const void* src_host = nullptr;
    void* dst_host = nullptr;
    keel_host_fn fn = nullptr;
    keel_fallible_host_fn fallible_fn = nullptr;  // kind == host_func, instead of fn
    void* user_data = nullptr;
    TimelinePoint wait_for;              // kind == wait
    std::shared_ptr<TimingSlot> timing;  // kind == timestamp
    std::unique_ptr<KernelWork> kernel;  // kind == kernel; kept for the node's next launch
    std::unique_ptr<CheckedOp> check;    // checker mode only
    alignas(16) std::array<std::byte, KEEL_INLINE_COPY_MAX> inline_bytes;

    // Releases what the op owned (called on the worker after it ran).
    void reset() noexcept;
    // Takes over every field of `from` but the queue links and the
    // position (checker mode: an op is filled and checked before queued).
    void take(Op& from) noexcept;
};

// An enqueue that needs no storage made ready first (OpQueue::push).
struct NoPrepare {
    void operator()(Op&) const noexcept {}
};

}  // namespace keel::cpu
