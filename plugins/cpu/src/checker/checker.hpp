// Checker mode: the bookkeeping that turns asynchronous lifetime and
// ordering bugs into failures. Exists only when some KEEL_CPU_* checker
// variable is set: with the checker off, Device::checker() is null and the
// hot paths test one flag (Config::checker_active, read once at init) and
// skip all of this.
//
// A FINDING (race, late free, out-of-range or use-after-free access, host
// memory gone before its copy ran, a host source changed before its copy
// ran) fails the program, never only a log line: the call that commits it
// returns an error naming the bug, both accesses and the streams, and
// queues nothing; the streams involved turn sticky-failed from their next
// operation on, so a later synchronize reports it too; it is logged at
// ERROR; and with KEEL_CPU_CHECK=abort the process prints it and aborts.
//
// The host side of device-to-host copies (pending_destinations.cpp): the
// destination's whole pages are inaccessible from the enqueue until the
// host observed the copy (a host touch stops the program: guarded_pages),
// and every byte is fingerprinted at the enqueue and checked by the copy.
//
// Thread-safety: every member may be called from any thread. One mutex
// guards the whole model (the checker trades speed for clarity); checked
// enqueues take it, and with it the stream's queue lock (in that order).
#pragma once

#include "../config.hpp"
#include "../op.hpp"
#include "happens_before.hpp"
#include "op_accesses.hpp"
#include "ipc_order.hpp"
#include "op_ref.hpp"

#include <keel/result.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace keel::cpu {

class DeviceMemories;
struct AllocationInfo;
class PinnedMemory;
class Stream;
class Timeline;

// Checker state carried by one queued op (Op::check).
struct CheckedOp {
    OpRef use;
    std::uint64_t tick = 0;                    // the op's entry in its stream's vector clock
    std::shared_ptr<const VectorClock> clock;  // host functions: their clock (joins the host's when they start)
    std::vector<std::uint64_t> allocation_ids;  // device or pinned allocations it uses (timing-based late free)
    std::uintptr_t host_write_begin = 0;        // d2h destination, registered while pending
    std::uintptr_t host_write_end = 0;
    std::optional<std::uint64_t> source_fingerprint;  // h2d: bytes of the source at enqueue
    std::uint64_t use_key = 0;                         // key in Checker::users_, 0 = not registered
    std::uint64_t pinned_id = 0;                       // pinned block of the host side, 0 if none
    // d2h: the guarded whole pages of the destination (guarded_pages
    // handle, 0 if none) and the bytes of the whole destination at enqueue,
    // checked when the copy runs (pending_destinations.cpp).
    std::uint64_t host_guard = 0;
    std::optional<std::uint64_t> destination_fingerprint;
};

class Checker {
public:
    using Lock = std::unique_lock<std::mutex>;
    using ClockRef = std::shared_ptr<const VectorClock>;

    // One checker per plugin: `memory` resolves the memory of every device.
    Checker(const CheckerConfig& config, const DeviceMemories& memory, const PinnedMemory& pinned);
    Checker(const Checker&) = delete;
    Checker& operator=(const Checker&) = delete;
    Checker(Checker&&) = delete;
    Checker& operator=(Checker&&) = delete;
    ~Checker();

    [[nodiscard]] const CheckerConfig& config() const noexcept { return config_; }

    // Fault injection on allocation; `kind` is "device" or "pinned".
    [[nodiscard]] Result<void> before_alloc(const char* kind);

    // ---- enqueue ----------------------------------------------------------
    // What can be done before taking the lock: the host source of an h2d
    // fingerprinted, read safely (an unmapped one is a finding).
    [[nodiscard]] Result<void> prepare(Stream& stream, Op& scratch);
    [[nodiscard]] Lock lock() const { return Lock(mutex_); }
    // Checks `scratch` (filled, not queued) against everything enqueued
    // before; on a finding returns it and queues nothing, else queues it on
    // `stream` and remembers what it touches. Returns its position.
    [[nodiscard]] Result<std::uint64_t> admit(const Lock& lock, Stream& stream, Op& scratch);
    // prepare + lock + admit: Stream::enqueue in checker mode.
    [[nodiscard]] Result<std::uint64_t> enqueue(Stream& stream, Op& scratch);

    // ---- ordering (no-ops without KEEL_CPU_CHECK_RACES) -----------------
    // What an event recorded on `stream` now captures (null without races).
    [[nodiscard]] ClockRef clock_of(const Lock& lock, const Stream& stream);
    void wait(const Lock& lock, const Stream& stream, const ClockRef& event_clock);
    // The host learned that what `known` names completed.
    void host_learns(const ClockRef& known);
    // stream_synchronize / stream_query in checker mode.
    [[nodiscard]] Result<void> synchronize(Stream& stream);
    [[nodiscard]] Result<bool> query(Stream& stream);
    // Worker side: a host function starts; what precedes it becomes host knowledge.
    void host_function_starts(const Op& op);
    void stream_destroyed(std::uint64_t stream);

    // ---- frees ------------------------------------------------------------
    // Late-free detection around `free` (which really frees): a free not
    // ordered after every use is refused (the memory stays allocated).
    [[nodiscard]] Result<void> free_device(keel_device_addr addr, const std::function<Result<void>()>& free);
    [[nodiscard]] Result<void> free_pinned(void* ptr, const std::function<Result<void>()>& free);

    // ---- caching-allocator annotations (annotations.hpp) ----------------
    [[nodiscard]] Result<void> release_range(Stream& stream, keel_device_addr addr, std::uint64_t size);
    [[nodiscard]] Result<void> acquire_range(Stream& stream, keel_device_addr addr, std::uint64_t size);

    // ---- memory shared between processes (ipc_order.hpp) -----------------
    void ipc_exported(std::uint64_t id, ipc::AllocationHeader* header);
    void ipc_imported(std::uint64_t id, keel_device_addr base, ipc::AllocationHeader* header);
    void ipc_forget(std::uint64_t id, keel_device_addr base, bool closed_import);
    void ipc_before_export(std::uint64_t id);
    void ipc_cover(const ClockRef& clock, ipc::EventState& state, std::uint64_t record);
    void ipc_learn(const ipc::EventState& state, std::uint64_t record);
    // The exporter frees memory `open_imports` importers still have open:
    // a finding (late-free mode error), a log line (log) or nothing (off).
    [[nodiscard]] Result<void> ipc_free_exported(std::uint64_t id, keel_device_addr base, std::uint64_t size,
                                                 std::uint32_t open_imports, std::int32_t importer_pid);

    // ---- worker side ------------------------------------------------------
    void on_complete(Op& op);
    // An op failed on its worker; in abort mode a failure that is not an
    // injected fault is a finding and aborts.
    void on_execution_error(const std::string& message, bool injected) const;
    [[nodiscard]] std::uint64_t delay_us(std::mt19937_64& rng) const;
    [[nodiscard]] bool inject_op_failure(std::mt19937_64& rng);

    // Segments of remembered accesses (tests of the model's size).
    [[nodiscard]] std::size_t remembered_segments() const;

private:
    struct Finding {
        Status code;
        std::string message;
        std::vector<std::uint64_t> streams;  // made sticky-failed
    };
    // A resolved access: which allocation, which bytes of it.
    struct Target {
        std::uint64_t id = 0;
        std::uint64_t base = 0;  // device address or host pointer value of the allocation
        std::uint64_t size = 0;
        bool pinned = false;
        OpAccess access;
    };
    // A block released to an allocator's cache: [key, end) of an allocation.
    struct Released {
        std::uint64_t end = 0;
        std::uint64_t stream = 0;  // the stream the release was issued on
    };
    using ReleasedRanges = std::map<std::uint64_t, Released>;
    struct TrackedStream {
        std::shared_ptr<Timeline> timeline;
        std::uint64_t last_position = 0;
        std::uint64_t last_host_function = 0;  // position of the last host function enqueued
        std::uint64_t last_fallible_host_function = 0;  // ... of the last fallible one (keel.h 1.4)
    };
    // A guarded destination of a d2h copy, released once the host clock reaches `tick` of `stream`.
    struct GuardedDestination {
        std::uint64_t stream = 0;
        std::uint64_t tick = 0;
        std::uintptr_t begin = 0;  // the copy's destination
        std::uintptr_t end = 0;
    };

    // Fails the finding's streams (sticky), logs it, aborts in abort mode.
    [[nodiscard]] Error report(const Lock& lock, Finding finding);
    TrackedStream& track(const Lock& lock, const Stream& stream);
    // The last position enqueued on `stream` and the clock it completes.
    [[nodiscard]] std::pair<std::uint64_t, ClockRef> enqueued_so_far(Stream& stream);
    [[nodiscard]] std::optional<Finding> resolve(const OpRef& op, const OpAccess& a, std::vector<Target>& out) const;
    [[nodiscard]] std::string describe_target(const Target& t, std::uint64_t begin, std::uint64_t end) const;
    [[nodiscard]] std::string describe_access(const AccessRecord& r, const Target& t) const;
    [[nodiscard]] Finding race(const OpRef& op, const Target& t, const AccessRecord& earlier) const;
    // An access to a block its allocator released (annotations.hpp).
    [[nodiscard]] std::optional<Finding> stale_view(const OpRef& op, const Target& t) const;
    // The released block [begin, end) of allocation `id` overlaps, if any.
    [[nodiscard]] const std::pair<const std::uint64_t, Released>* released_overlap(std::uint64_t id, std::uint64_t begin,
                                                                                   std::uint64_t end) const;
    [[nodiscard]] Result<AllocationInfo> locate_block(const Lock& lock, Stream& stream, std::string_view what,
                                                      keel_device_addr addr, std::uint64_t size);
    [[nodiscard]] Result<void> late_free(const Lock& lock, const char* what, std::uint64_t id, std::uint64_t base,
                                         std::uint64_t size, bool pinned);
    // ---- destinations of pending d2h copies (pending_destinations.cpp) ----
    // Under the lock, for an admitted d2h: fingerprints its destination and
    // guards its whole pages until the host observed the copy.
    void guard_destination(const Lock& lock, Stream& stream, const Op& scratch, CheckedOp& c);
    // Releases the guards of copies the host now knows complete.
    void release_observed_destinations(const Lock& lock);
    // Releases the guards inside [begin, end) (pinned memory being freed), or all.
    void release_destinations(const Lock& lock, std::uintptr_t begin, std::uintptr_t end);
    // ... of the copies of `stream` (it went: the host knows all its work).
    void release_destinations_of(const Lock& lock, std::uint64_t stream);
    [[nodiscard]] bool host_range_guarded(std::uintptr_t begin, std::uintptr_t end) const;  // under the lock

    void register_pending(CheckedOp& c);  // under the lock
    [[nodiscard]] std::optional<OpRef> pending_user(std::uint64_t id) const;  // under the lock
    [[nodiscard]] bool host_range_pending_write(std::uintptr_t begin, std::uintptr_t end) const;  // under the lock

    const CheckerConfig config_;
    const DeviceMemories& memory_;
    const PinnedMemory& pinned_;
    mutable std::mutex mutex_;
    std::mt19937_64 alloc_rng_;
    std::int64_t allocs_[2] = {0, 0};  // device, pinned
    std::atomic<std::int64_t> ops_{0};

    HappensBefore order_;
    std::unordered_map<std::uint64_t, TrackedStream> streams_;
    std::unordered_map<std::uint64_t, ReleasedRanges> released_;  // by allocation id
    std::vector<OpAccess> scratch_accesses_;  // reused by admit
    std::vector<Target> scratch_targets_;

    // Timing-based bookkeeping (pending ops), for late frees without races
    // and for host ranges a pending d2h writes.
    std::uint64_t next_key_ = 1;
    std::unordered_map<std::uint64_t, std::map<std::uint64_t, OpRef>> users_;
    std::multimap<std::uintptr_t, std::uintptr_t> host_writes_;
    std::map<std::uint64_t, GuardedDestination> guarded_;  // by guarded_pages handle
    std::uintptr_t longest_host_write_ = 0;  // never shrinks: an upper bound is enough

    IpcOrder ipc_order_;
};

}  // namespace keel::cpu
