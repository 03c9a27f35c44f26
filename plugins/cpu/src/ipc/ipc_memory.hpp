// Device memory shared between processes (keel.h 1.6, ipc_memory_*): an
// exportable allocation lives in a memfd whose first page is its
// AllocationHeader and whose following pages are the bytes; the device
// address space maps those bytes like any allocation's storage. Exporting
// hands out a new descriptor of the file; importing maps it again (in any
// process) as an allocation of the importer's address space. The file's
// pages live while any process maps or holds it, so an importer's bytes
// stay valid after the exporter freed them or exited ([ipc.memory-lifetime]).
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include "shared_layouts.hpp"
#include "shared_segment.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace keel::cpu {

class AddressSpace;
class Checker;

namespace ipc {

class IpcMemory {
public:
    IpcMemory(AddressSpace& memory, Checker* checker) noexcept : memory_(memory), checker_(checker) {}
    // The plugin's checker, set once before any entry runs (null: off).
    void attach_checker(Checker* checker) noexcept { checker_ = checker; }
    IpcMemory(const IpcMemory&) = delete;
    IpcMemory& operator=(const IpcMemory&) = delete;
    IpcMemory(IpcMemory&&) = delete;
    IpcMemory& operator=(IpcMemory&&) = delete;
    ~IpcMemory();

    [[nodiscard]] Result<keel_device_addr> allocate(std::uint64_t size, std::uint64_t id);
    [[nodiscard]] Result<void> export_handle(keel_device_addr addr, keel_ipc_handle* out);
    [[nodiscard]] Result<keel_device_addr> import(const keel_ipc_handle& handle, std::uint64_t id);
    [[nodiscard]] Result<void> close(keel_device_addr addr);
    // Before device_free of `addr`: nullopt when it is not shared memory;
    // an error for imported memory, and (checker) for exported memory an
    // importer still has open; ok for exported memory that may go.
    [[nodiscard]] std::optional<Result<void>> check_free(keel_device_addr addr);
    // After device_free of `addr` succeeded: forgets it if it was shared.
    void forget_freed(keel_device_addr addr);

private:
    enum class Role : std::uint8_t { exported, imported };
    struct Entry {
        Role role = Role::exported;
        Fd file;
        Mapping header_page;
        std::uint64_t id = 0;
        std::uint64_t size = 0;
        std::int32_t importer_slot = -1;  // imported: its slot in the header
        [[nodiscard]] AllocationHeader& header() const noexcept {
            return *reinterpret_cast<AllocationHeader*>(header_page.get());
        }
    };
    [[nodiscard]] Result<keel_device_addr> adopt(Entry entry, std::uint64_t data_offset);

    AddressSpace& memory_;
    Checker* checker_;
    std::atomic<std::uint64_t> live_{0};  // entries_.size(): device_free's fast path reads only this
    std::mutex mutex_;
    std::unordered_map<keel_device_addr, Entry> entries_;
};

// Importer slots of `h` whose process still exists, and one of their pids.
[[nodiscard]] std::pair<std::uint32_t, std::int32_t> open_imports(const AllocationHeader& h) noexcept;

}  // namespace ipc
}  // namespace keel::cpu
