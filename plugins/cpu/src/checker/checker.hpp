// Checker mode: the bookkeeping that turns asynchronous lifetime
// bugs into reports. Exists only when some KEEL_CPU_* checker variable is
// set: with the checker off, Device::checker() is null and the hot paths
// test one flag (Config::checker_active, read once at init) and skip all of
// this.
//
// Thread-safety: every member may be called from any thread (one mutex;
// the checker trades speed for clarity).
#pragma once

#include "../config.hpp"
#include "../op.hpp"

#include <keel/result.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace keel::cpu {

// A queued operation that uses an allocation, as the late-free detector
// names it: "memcpy_d2h #3 on stream 2" (formatted only when reported).
struct PendingUse {
    const char* kind = "";    // "kernel " for kernels, "" otherwise
    const char* name = "";    // op or kernel name (static storage)
    std::uint64_t position = 0;
    std::uint64_t stream = 0;
    [[nodiscard]] std::string describe() const {
        return std::string(kind) + name + " #" + std::to_string(position) + " on stream " + std::to_string(stream);
    }
};

// Checker state carried by one queued op (Op::check); reused with its node.
struct CheckedOp {
    PendingUse use;
    std::vector<std::uint64_t> allocation_ids;  // device or pinned allocations it uses
    std::uintptr_t host_write_begin = 0;        // d2h destination, registered while pending
    std::uintptr_t host_write_end = 0;
    std::optional<std::uint64_t> source_fingerprint;  // h2d: bytes of the source at enqueue
    std::uint64_t use_key = 0;                         // key in Checker::uses_, 0 = not registered
    std::uint64_t pinned_id = 0;                       // pinned block of the host side, 0 if none
};

class Checker {
public:
    explicit Checker(const CheckerConfig& config) : config_(config), alloc_rng_(config.seed) {}
    Checker(const Checker&) = delete;
    Checker& operator=(const Checker&) = delete;
    Checker(Checker&&) = delete;
    Checker& operator=(Checker&&) = delete;

    [[nodiscard]] const CheckerConfig& config() const noexcept { return config_; }

    // Fault injection on allocation; `kind` is "device" or "pinned".
    [[nodiscard]] Result<void> before_alloc(const char* kind);

    // Enqueue side: registers op.check (its allocations and host write
    // range) until on_complete.
    void on_enqueue(Op& op);
    // Worker side, after the op ran or was skipped.
    void on_complete(Op& op);

    // Late-free detection: the first pending op using allocation `id`.
    [[nodiscard]] std::optional<std::string> pending_user(std::uint64_t id) const;
    // True when a pending d2h writes into [begin, end) (an h2d reading it
    // then legitimately sees different bytes than at its enqueue).
    [[nodiscard]] bool host_range_pending_write(std::uintptr_t begin, std::uintptr_t end) const;

    static std::uint64_t fingerprint(const void* data, std::uint64_t size) noexcept;

    // Worker-side per-op knobs; `rng` is the worker's own (seeded per stream).
    [[nodiscard]] std::uint64_t delay_us(std::mt19937_64& rng) const;
    [[nodiscard]] bool inject_op_failure(std::mt19937_64& rng);

private:
    const CheckerConfig config_;
    mutable std::mutex mutex_;
    std::mt19937_64 alloc_rng_;
    std::int64_t allocs_[2] = {0, 0};  // device, pinned
    std::atomic<std::int64_t> ops_{0};
    std::uint64_t next_key_ = 1;
    // allocation id -> its pending ops by key (oldest first); O(log n) add/remove
    // even when thousands of queued ops use one allocation.
    std::unordered_map<std::uint64_t, std::map<std::uint64_t, PendingUse>> users_;
    // pending host writes: begin -> end (multimap: ranges may repeat)
    std::multimap<std::uintptr_t, std::uintptr_t> host_writes_;
    std::uintptr_t longest_host_write_ = 0;  // never shrinks: an upper bound is enough
};

}  // namespace keel::cpu
