// Pinned host memory (host_alloc/host_free): page-aligned host blocks the
// plugin tracks, so it can validate frees, report leaks and, in checker
// mode, poison and quarantine freed blocks (inaccessible while there: see
// checker/guarded_pages.hpp) and tell which block a copy's host pointer
// belongs to.
//
// "Pinned" here means aligned and tracked; the plugin cannot page-lock
// without privileges. With KEEL_CPU_MLOCK=1 it tries mlock() and logs once
// when that fails (RLIMIT_MEMLOCK), keeping the memory usable.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include "config.hpp"
#include "host_block.hpp"

#include <keel/result.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <vector>

namespace keel::cpu {

struct PinnedInfo {
    std::uint64_t id = 0;
    const std::byte* base = nullptr;
    std::uint64_t size = 0;
};

class PinnedMemory {
public:
    PinnedMemory(bool try_mlock, const CheckerConfig& check) : mlock_(try_mlock), check_(check) {}
    PinnedMemory(const PinnedMemory&) = delete;
    PinnedMemory& operator=(const PinnedMemory&) = delete;
    PinnedMemory(PinnedMemory&&) = delete;
    PinnedMemory& operator=(PinnedMemory&&) = delete;
    ~PinnedMemory();

    [[nodiscard]] Result<void*> allocate(std::uint64_t size, std::uint64_t id);
    // The live block `ptr` is the base of (validation before a free).
    [[nodiscard]] Result<PinnedInfo> find_base(const void* ptr) const;
    [[nodiscard]] Result<PinnedInfo> free(void* ptr);
    // The live block containing [ptr, ptr + size), if any.
    [[nodiscard]] std::optional<PinnedInfo> find_containing(const void* ptr, std::uint64_t size) const;

    enum class State : std::uint8_t { live, quarantined, released };
    // Where block `id` is now (checker: a copy about to touch it asks; the
    // mutex also orders the copy after a free's poisoning).
    [[nodiscard]] State state(std::uint64_t id) const;

    [[nodiscard]] std::uint64_t live_count() const;
    [[nodiscard]] std::vector<PinnedInfo> live_blocks() const;

private:
    struct Block {
        HostBlock memory;
        std::uint64_t id = 0;
        bool locked = false;
        bool guarded = false;  // quarantined and inaccessible
    };
    void release_from_quarantine(Block& block) noexcept;
    const bool mlock_;
    const CheckerConfig check_;
    mutable std::mutex mutex_;
    std::map<const std::byte*, Block> live_;
    std::unordered_set<std::uint64_t> live_ids_;
    std::unordered_set<std::uint64_t> quarantined_ids_;
    std::deque<Block> quarantine_;  // freed, poisoned, oldest first
    std::uint64_t quarantine_bytes_ = 0;
    bool mlock_warned_ = false;
};

}  // namespace keel::cpu
