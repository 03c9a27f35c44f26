// Device memory of the CPU device: host storage behind integer addresses
// that are NOT host pointers.
//
// An address is  (0x4B + device) << 56 | slot << 36 | offset : the top byte
// (0x4B for cpu:0, 0x4C for cpu:1, ... at most 16 devices) makes it
// non-canonical on x86-64 (4- and 5-level paging alike), so a host
// dereference of a device address faults (SIGSEGV) instead of silently
// working, and names the device: an address of another device is refused
// by translate(), never read from this device's storage. `slot` (20 bits) names the allocation, `offset` (36 bits) the
// byte inside it, so one allocation is at most 64 GiB.
//
// translate() is the ONE place device addresses become host pointers. It
// runs on the stream worker when an operation executes (never at enqueue),
// once per buffer per operation, and checks the whole range: an address
// that is not allocated, freed, or a range past the end of its allocation is
// an error naming the address and the allocation. It takes no lock: slots
// are read under a per-slot sequence lock, so workers never contend with
// each other or with alloc/free of other allocations.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include "config.hpp"
#include "host_block.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace keel::cpu {

inline constexpr std::uint64_t kDeviceAddrTag = 0x4Bull << 56;
inline constexpr unsigned kSlotShift = 36;
inline constexpr std::uint64_t kOffsetMask = (1ull << kSlotShift) - 1;
inline constexpr std::uint64_t kMaxAllocation = 1ull << kSlotShift;  // 64 GiB
inline constexpr std::uint64_t kAllocAlignment = 256;
// Devices whose tag bytes (0x4B ... 0x5A) stay non-canonical.
inline constexpr std::uint32_t kMaxDevices = 16;

// The CPU device whose tag `addr` carries, if it carries one.
[[nodiscard]] std::optional<std::uint32_t> device_of_address(keel_device_addr addr) noexcept;

// What the address space knows about one allocation.
struct AllocationInfo {
    std::uint64_t id = 0;  // allocation number, for messages ("allocation #7")
    keel_device_addr base = 0;
    std::uint64_t size = 0;
};

class AddressSpace {
public:
    AddressSpace(std::uint64_t total_bytes, const CheckerConfig& check, std::uint32_t device_index);
    AddressSpace(const AddressSpace&) = delete;
    AddressSpace& operator=(const AddressSpace&) = delete;
    AddressSpace(AddressSpace&&) = delete;
    AddressSpace& operator=(AddressSpace&&) = delete;
    ~AddressSpace();

    [[nodiscard]] Result<AllocationInfo> allocate(std::uint64_t size, std::uint64_t id);
    // An allocation whose storage other processes share (ipc/ipc_memory.hpp):
    // never poisoned or quarantined when freed, since importers still read it.
    [[nodiscard]] Result<AllocationInfo> adopt_shared(HostBlock storage, std::uint64_t size, std::uint64_t id);
    // Frees the allocation whose BASE is `addr`.
    [[nodiscard]] Result<AllocationInfo> free(keel_device_addr addr);
    // The live allocation `addr` points into, if any (checker bookkeeping).
    [[nodiscard]] std::optional<AllocationInfo> find_live(keel_device_addr addr) const noexcept;

    // The choke point: host storage of [addr, addr + size).
    [[nodiscard]] Result<std::byte*> translate(keel_device_addr addr, std::uint64_t size) const;
    // The checks translate() makes, for the checker at enqueue: the live
    // allocation holding [addr, addr + size), or translate()'s error (a
    // freed allocation is always "use after free" here, even quarantined).
    [[nodiscard]] Result<AllocationInfo> locate(keel_device_addr addr, std::uint64_t size) const;

    [[nodiscard]] std::uint64_t total_bytes() const noexcept { return total_; }
    [[nodiscard]] std::uint32_t device_index() const noexcept {
        return static_cast<std::uint32_t>((tag_ - kDeviceAddrTag) >> 56);
    }
    // Whether `addr` carries this device's tag (it may still be unallocated).
    [[nodiscard]] bool tagged_here(keel_device_addr addr) const noexcept { return (addr >> 56) == (tag_ >> 56); }
    [[nodiscard]] std::uint64_t used_bytes() const noexcept { return used_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t live_count() const noexcept { return live_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::vector<AllocationInfo> live_allocations() const;

private:
    static constexpr std::uint32_t kChunkSlots = 1024;
    static constexpr std::uint32_t kChunks = 1024;  // 2^20 slots
    enum class SlotState : std::uint8_t { empty, live, freed };
    struct Slot {
        std::atomic<std::uint32_t> seq{0};  // odd while being changed
        std::atomic<SlotState> state{SlotState::empty};
        std::atomic<std::byte*> host{nullptr};
        std::atomic<std::uint64_t> size{0};
        std::atomic<std::uint64_t> id{0};
    };
    struct SlotView {
        SlotState state;
        std::byte* host;
        std::uint64_t size;
        std::uint64_t id;
    };
    using Chunk = std::array<Slot, kChunkSlots>;

    struct Resolved {
        std::byte* host;
        AllocationInfo info;
    };
    // translate() and locate(); `late_host` lets an unguarded late use reach
    // the poisoned storage of a freed allocation.
    [[nodiscard]] Result<Resolved> resolve(keel_device_addr addr, std::uint64_t size, bool late_host) const;
    [[nodiscard]] const Slot* slot_at(std::uint32_t index) const noexcept;
    [[nodiscard]] SlotView read(const Slot& s) const noexcept;
    void write(std::uint32_t index, SlotState state, std::byte* host, std::uint64_t size,
               std::uint64_t id);  // under mutex_
    [[nodiscard]] Result<std::uint32_t> take_slot();  // under mutex_
    void evict_quarantine(std::uint64_t keep_bytes);  // under mutex_

    const std::uint64_t tag_;  // the top byte of this device's addresses, in place
    const std::uint64_t total_;
    const CheckerConfig check_;
    std::atomic<std::uint64_t> used_{0};
    std::atomic<std::uint64_t> live_{0};
    std::array<std::atomic<Chunk*>, kChunks> chunks_{};

    mutable std::mutex mutex_;  // alloc/free only; translate never takes it
    std::vector<std::unique_ptr<Chunk>> owned_chunks_;
    std::vector<HostBlock> storage_;        // by slot index
    std::vector<std::uint8_t> shared_;      // by slot index: 1 when storage_ is shared with other processes
    std::vector<std::uint32_t> free_slots_;  // reusable slot indices (LIFO)
    std::uint32_t next_slot_ = 1;            // slot 0 is never used
    std::deque<std::uint32_t> quarantine_;   // freed slots whose storage is kept, oldest first
    std::uint64_t quarantine_bytes_ = 0;
};

[[nodiscard]] std::string hex(std::uint64_t v);

}  // namespace keel::cpu
