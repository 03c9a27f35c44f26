// What the CPU plugin places in memory shared between processes: the header
// page of an exportable allocation and the state of an interprocess event,
// and the plugin-defined bytes of its keel_ipc_handle. Only lock-free
// atomics and plain data: every process maps the same bytes.
#pragma once

#include <atomic>
#include <cstdint>

namespace keel::cpu::ipc {

inline constexpr std::uint32_t kMaxImporters = 64;  // open imports of one allocation at a time
inline constexpr std::uint32_t kMaxCovered = 64;    // exported allocations one event record describes

// The first page of an exportable allocation's shared file; the bytes
// follow from the next page on.
struct AllocationHeader {
    static constexpr std::uint64_t kMagic = 0x314D4350'4C45454Bull;  // "KEELPCM1"
    std::uint64_t magic = 0;
    std::uint64_t uid = 0;   // names the allocation in every process
    std::uint64_t size = 0;  // bytes of the allocation
    std::int32_t exporter_pid = 0;
    std::atomic<std::uint32_t> exporter_freed{0};
    // One slot per open import: the importer's pid, 0 when free.
    std::atomic<std::int32_t> importers[kMaxImporters];
    // Checker (keel.h [ipc.memory-ordering]): writes the exporter enqueued
    // so far, and how many of them its host knew complete when it last
    // exported the allocation.
    std::atomic<std::uint64_t> writes{0};
    std::atomic<std::uint64_t> host_ordered{0};
};

// The state of an interprocess event, in a shared file of its own.
struct EventState {
    static constexpr std::uint64_t kMagic = 0x31455643'4C45454Bull;  // "KEELCVE1"
    static constexpr std::uint64_t kNone = UINT64_MAX;
    std::uint64_t magic = 0;
    std::uint64_t uid = 0;
    std::int32_t exporter_pid = 0;
    std::atomic<std::uint32_t> wake{0};          // futex word: bumped at every completion
    std::atomic<std::uint64_t> recorded{0};      // number of the most recent record (0: never)
    std::atomic<std::uint64_t> completed{0};     // every record up to this one completed
    std::atomic<std::uint64_t> failed_from{kNone};  // first record made after a failure
    std::int32_t error_code = 0;                 // written before failed_from
    char error_message[448] = {};
    // Checker: what the most recent record orders, per exported allocation
    // (uid, writes of it ordered before the record). A sequence lock: odd
    // while the exporter rewrites it.
    std::atomic<std::uint32_t> cover_version{0};
    std::atomic<std::uint32_t> cover_count{0};
    std::atomic<std::uint64_t> cover_record{0};
    struct Covered {
        std::atomic<std::uint64_t> uid{0};
        std::atomic<std::uint64_t> writes{0};
    } cover[kMaxCovered];
};

// The plugin-defined `bytes` of a keel_ipc_handle made by the CPU plugin.
struct HandleBytes {
    static constexpr std::uint64_t kTag = 0x31435049'5550434Bull;  // "KCPUIPC1"
    std::uint64_t tag = kTag;
    std::uint32_t kind = 0;  // keel_ipc_handle_kind
    std::int32_t exporter_pid = 0;
    std::uint64_t uid = 0;
    std::uint64_t size = 0;  // memory: bytes of the allocation
};

}  // namespace keel::cpu::ipc
