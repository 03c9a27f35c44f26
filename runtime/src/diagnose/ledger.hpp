// The hang doctor's per-stream ledger: how many operations a Stream has
// enqueued, which of them can block it (waits, host functions, holds,
// records), and how far it is known to have got. Written on the enqueue path
// (one relaxed fetch_add and a byte per operation; a ring slot for the
// operations that can block), read only when diagnosing.
//
// "Known to have got": a stream's progress is a lower bound, advanced where
// the runtime sees the stream move (a host function it starts or finishes)
// and, when diagnosing, by the plugin's stream_query. Operation indices are
// in the order the enqueue calls returned; two threads enqueueing on one
// stream at once may see their two operations numbered the other way round.
//
// Threads: Sync (atomics only; the ring is read seqlock-style).
#pragma once

#include <keel/keel.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace keel::detail {
struct DeviceSlot;
}

namespace keel::doctor {

enum class OpKind : std::uint8_t {
    none = 0,
    copy,
    memset,
    launch,
    host_func,
    hold,
    record,      // an Event recorded
    fence,       // a Fence taken
    wait_event,  // waits for an Event's record
    wait_fence,  // waits for a Fence
    order_after, // waits for another stream's work so far
};

[[nodiscard]] const char* describe(OpKind kind) noexcept;

// A point in a stream's work, packed in 64 bits: the ledger's id (24 bits)
// and the operation's index + 1 (40 bits); 0 is "nowhere" (an event never
// recorded, a stream the runtime did not open).
using Site = std::uint64_t;
[[nodiscard]] constexpr Site make_site(std::uint32_t stream_id, std::uint64_t op) noexcept {
    return (static_cast<std::uint64_t>(stream_id) << 40) | ((op + 1) & ((std::uint64_t{1} << 40) - 1));
}
[[nodiscard]] constexpr std::uint32_t site_stream(Site s) noexcept { return static_cast<std::uint32_t>(s >> 40); }
[[nodiscard]] constexpr std::uint64_t site_op(Site s) noexcept {
    return (s & ((std::uint64_t{1} << 40) - 1)) - 1;
}

enum class HostFuncState : std::uint8_t { queued = 0, running = 1, done = 2 };

// One operation that can block its stream, as a diagnosis reads it.
struct OpRecord {
    std::uint64_t index = 0;
    OpKind kind = OpKind::none;
    Site target = 0;  // what it waits for (waits), or 0
    HostFuncState state = HostFuncState::queued;
    std::int64_t started_ns = 0;  // host functions: when it started running
};

class StreamLedger {
public:
    StreamLedger(std::uint32_t id, std::string name, const detail::DeviceSlot* device, keel_stream handle,
                 std::uint64_t generation);
    StreamLedger(const StreamLedger&) = delete;
    StreamLedger& operator=(const StreamLedger&) = delete;
    StreamLedger(StreamLedger&&) = delete;
    StreamLedger& operator=(StreamLedger&&) = delete;
    ~StreamLedger() = default;

    [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] const detail::DeviceSlot* device() const noexcept { return device_; }
    [[nodiscard]] keel_stream handle() const noexcept { return handle_; }
    [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }

    // An operation that cannot block the stream (copy, memset, launch).
    std::uint64_t note(OpKind kind) noexcept {
        const std::uint64_t i = enqueued_.fetch_add(1, std::memory_order_relaxed);
        kinds_[i % kKinds].store(kind, std::memory_order_relaxed);
        return i;
    }
    // One that can (or that a diagnosis names: holds, records, fences).
    // `target`: what it waits for. Returns its index and ring slot.
    struct Noted {
        std::uint64_t index;
        std::uint64_t slot;
    };
    Noted note_blocking(OpKind kind, Site target = 0) noexcept;
    // Where the next operation will be.
    [[nodiscard]] Site here() const noexcept {
        return make_site(id_, enqueued_.load(std::memory_order_relaxed));
    }
    // The site of the last operation enqueued so far (0 when none).
    [[nodiscard]] Site last() const noexcept {
        const std::uint64_t n = enqueued_.load(std::memory_order_relaxed);
        return n == 0 ? 0 : make_site(id_, n - 1);
    }

    // The host function at `index` (ring slot `slot`) starts or ends.
    void host_func_started(std::uint64_t index, std::uint64_t slot) noexcept;
    void host_func_finished(std::uint64_t index, std::uint64_t slot) noexcept;
    // The operation in ring slot `slot` was not enqueued after all.
    void abandoned(std::uint64_t slot) noexcept;
    // Every operation before `index` has run.
    void passed(std::uint64_t index) noexcept;

    // ---- read when diagnosing --------------------------------------------
    [[nodiscard]] std::uint64_t enqueued() const noexcept { return enqueued_.load(std::memory_order_acquire); }
    [[nodiscard]] std::uint64_t progress() const noexcept { return passed_.load(std::memory_order_acquire); }
    [[nodiscard]] OpKind kind_at(std::uint64_t index) const noexcept;  // none once overwritten
    // The blocking operations still in the ring with index >= `from`, oldest first.
    [[nodiscard]] std::vector<OpRecord> blocking_ops(std::uint64_t from) const;
    // The stream was closed (its work is done).
    void close() noexcept { closed_.store(true, std::memory_order_release); }
    [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

    static constexpr std::size_t kKinds = 64;
    static constexpr std::size_t kSlots = 256;

private:
    struct Slot {
        std::atomic<std::uint64_t> stamp{0};  // slot counter + 1 once written; 0 while writing
        std::atomic<std::uint64_t> index{0};
        std::atomic<Site> target{0};
        std::atomic<std::int64_t> started_ns{0};
        std::atomic<OpKind> kind{OpKind::none};
        std::atomic<HostFuncState> state{HostFuncState::queued};
    };

    const std::uint32_t id_;
    const std::string name_;
    const detail::DeviceSlot* const device_;
    const keel_stream handle_;
    const std::uint64_t generation_;
    std::atomic<std::uint64_t> enqueued_{0};
    std::atomic<std::uint64_t> passed_{0};
    std::atomic<std::uint64_t> slots_taken_{0};
    std::atomic<bool> closed_{false};
    std::array<std::atomic<OpKind>, kKinds> kinds_{};
    std::array<Slot, kSlots> slots_{};
};

// Monotonic nanoseconds (steady clock).
[[nodiscard]] std::int64_t now_ns() noexcept;

// The process's open streams, by id. Threads: Sync.
[[nodiscard]] std::shared_ptr<StreamLedger> open_ledger(const detail::DeviceSlot* device, const std::string& device_name,
                                                        keel_stream handle, std::uint64_t generation);
void close_ledger(const std::shared_ptr<StreamLedger>& ledger) noexcept;
[[nodiscard]] std::vector<std::shared_ptr<StreamLedger>> open_ledgers();
[[nodiscard]] std::shared_ptr<StreamLedger> find_ledger(std::uint32_t id);

}  // namespace keel::doctor
