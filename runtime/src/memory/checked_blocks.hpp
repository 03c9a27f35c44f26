// Checked memory (AllocatorConfig::checked, KEEL_CHECK=1): what the caching
// allocator adds so that lifetime bugs inside its cache are found instead of
// corrupting a neighbour or a new owner.
//
//  - Every live block is known with its requested size, and every view a
//    copy, memset or kernel argument names is checked against it
//    (check_view): a range running past its buffer (into the rounding slack
//    or the next block) is OUT_OF_RANGE, a range in a freed block is a use
//    after free, both refused at the call.
//  - Every block gets at least kGuardBytes past its requested size, filled
//    with kGuardByte when handed out; at free a copy of them is taken in
//    stream order and compared when the block leaves quarantine. A
//    difference (a kernel that wrote past its buffer) is a finding.
//  - A freed block is poisoned (kPoisonByte) in stream order, announced to
//    the device's checker as released (a later access through a stale view
//    is a use after free there too), and quarantined: it is reused only
//    after quarantine_bytes of later frees, so that stale views keep
//    pointing at poisoned, released memory rather than at a new owner.
//  - A reused block is announced as acquired, so that a device checker
//    sees a new owner on its stream that is not ordered after the old
//    owner's last use on another stream (a missing record_stream).
//
// A finding fails the program: check_view returns it to the offending call;
// a guard found overwritten is logged at ERROR and every later allocation
// of the instance fails with it (sticky, as a failed stream).
//
// Threads: Sync (one mutex; checked mode trades speed for clarity).
#pragma once

#include "memory/device_ops.hpp"
#include "memory/event_pool.hpp"

#include <keel/result.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace keel::memory {

struct Block;

class CheckedBlocks {
public:
    static constexpr std::uint64_t kGuardBytes = 64;
    static constexpr std::uint8_t kGuardByte = 0xA5;
    static constexpr std::uint8_t kPoisonByte = 0xFB;

    CheckedBlocks(DeviceOps& ops, EventPool& events, std::uint64_t quarantine_bytes);
    CheckedBlocks(const CheckedBlocks&) = delete;
    CheckedBlocks& operator=(const CheckedBlocks&) = delete;
    CheckedBlocks(CheckedBlocks&&) = delete;
    CheckedBlocks& operator=(CheckedBlocks&&) = delete;
    ~CheckedBlocks();

    // Raw segments of the allocator (a range in one but in no live block is freed).
    void add_segment(keel_device_addr addr, std::uint64_t size);
    void remove_segment(keel_device_addr addr) noexcept;
    // Without caching: the block at `addr` and its segment are gone.
    void forget(keel_device_addr addr) noexcept;

    // `block` [addr, addr + capacity) was handed out on `stream` for
    // `requested` bytes: fills its guard, and tells the device's checker it
    // was acquired (a no-op there for memory never released).
    void on_allocate(keel_stream stream, keel_device_addr addr, std::uint64_t requested,
                     std::uint64_t capacity);
    // `block` was freed by its owner `stream` (other streams' uses already
    // ordered before `stream` on the device). Takes its guard, poisons it,
    // tells the device's checker and quarantines it. Returns the blocks that
    // leave quarantine, for the caller to return to their pools. A null
    // `stream` (the owner was closed, its work done) quarantines the block
    // without guard check and poison.
    [[nodiscard]] std::vector<Block*> retire(Block* block, keel_stream stream, keel_device_addr addr,
                                             std::uint64_t requested, std::uint64_t capacity) noexcept;
    // Empties the quarantine (out of memory, release_cached, shutdown).
    [[nodiscard]] std::vector<Block*> drain() noexcept;

    // OK unless [addr, addr + size) touches memory of this allocator
    // outside one live block's requested range.
    [[nodiscard]] Result<void> check_view(const char* where, const char* role, keel_device_addr addr,
                                          std::uint64_t size) const;
    // The first guard found overwritten, if any (sticky).
    [[nodiscard]] std::optional<Error> finding() const;

private:
    struct Live {
        std::uint64_t requested = 0;
        std::uint64_t capacity = 0;
        keel_stream stream = nullptr;
    };
    struct Quarantined {
        Block* block = nullptr;
        keel_device_addr addr = 0;
        std::uint64_t capacity = 0;
        std::uint64_t requested = 0;
        keel_stream stream = nullptr;
        keel_event done = nullptr;               // recorded after the guard copy
        std::unique_ptr<std::uint8_t[]> guard;  // null when the device cannot copy it
        std::uint64_t guard_size = 0;
    };
    void verify(Quarantined& q) noexcept;
    std::vector<Block*> evict_locked(std::uint64_t keep_bytes) noexcept;

    DeviceOps& ops_;
    EventPool& events_;
    const std::uint64_t quarantine_limit_;
    bool can_memset_ = true;  // cleared when the device answers UNIMPLEMENTED

    mutable std::mutex mu_;
    std::map<keel_device_addr, Live> live_;
    std::map<keel_device_addr, std::uint64_t> segments_;
    std::deque<Quarantined> quarantine_;
    std::uint64_t quarantined_bytes_ = 0;
    std::optional<Error> finding_;
};

}  // namespace keel::memory
